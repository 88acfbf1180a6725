"""Vowpal Wabbit text without ``:`` read and hashed by numba (optional).

:func:`plain_block` reads a block of whole lines as :func:`._vw.plain_rows`
reads it (features of the value 1, named ``namespace=token``, or ``token``
in the default namespace) and hashes each feature's name as
:func:`._hashing.hash_names` does, in one pass over the bytes that releases
the GIL. Only ASCII text is read here: Python's ``str.split`` also splits on
spaces beyond ASCII, and a block holding any other byte, or a line that is
neither blank nor has a ``|`` (an error), is left to :func:`._vw.plain_rows`,
which reads or explains it. Importing this module needs numba
(``pip install "skftrl[fast]"``).
"""

import numpy as np
from numba import njit

from ._hashing_numba import cache, murmurhash3

NEWLINE, BAR, SPACE, TAB = 10, 124, 32, 9


@njit(cache=cache, nogil=True, inline="always")
def _is_space(byte):
    """Whether an ASCII byte is whitespace to Python's ``str.split()``."""
    return byte == SPACE or 9 <= byte <= 13 or 28 <= byte <= 31


@njit(cache=cache, nogil=True)
def _plain_block(data, found, heads, features, letters):
    """Fill ``heads`` (a row's line in the block, its head's start and end),
    ``features`` (a feature's row and hash) and ``letters`` (the first byte
    of a feature's namespace, a space for the default one); ``found``: the
    rows and features read, or ``found[0] = -1`` for a block left to Python."""
    size = len(data)
    name = np.empty(size + 1, dtype=np.uint8)  # namespace "=" token, to hash
    n_rows = n_features = 0
    line = 0
    start = 0
    while start <= size:
        stop = start
        while stop < size and data[stop] != NEWLINE:
            stop += 1
        bar = start
        while bar < stop and data[bar] != BAR:
            bar += 1
        if bar == stop:  # no "|": a blank line, or an error Python explains
            for position in range(start, stop):
                if not _is_space(data[position]):
                    found[0] = -1
                    return
        else:
            heads[n_rows, 0], heads[n_rows, 1], heads[n_rows, 2] = line, start, bar
            segment = bar + 1
            while segment <= stop:
                end = segment
                while end < stop and data[end] != BAR:
                    end += 1
                # A segment whose first byte is not a space or a tab names its
                # namespace by its first token (if it has one).
                named = end > segment and data[segment] != SPACE and data[segment] != TAB
                prefix = 0  # the bytes of "namespace=" in name
                letter = SPACE
                position = segment
                while position < end:
                    while position < end and _is_space(data[position]):
                        position += 1
                    if position == end:
                        break
                    token = position
                    while position < end and not _is_space(data[position]):
                        position += 1
                    if named and prefix == 0:
                        for i in range(token, position):
                            name[i - token] = data[i]
                        prefix = position - token + 1
                        name[prefix - 1] = 61  # "="
                        letter = data[token]
                        continue
                    for i in range(token, position):
                        name[prefix + i - token] = data[i]
                    features[n_features, 0] = n_rows
                    features[n_features, 1] = murmurhash3(name, 0, prefix + position - token)
                    letters[n_features] = letter
                    n_features += 1
                segment = end + 1
            n_rows += 1
        line += 1
        start = stop + 1
    found[0], found[1] = n_rows, n_features


def plain_block(block):
    """``(heads, rows, hashes, letters)`` of a block of whole lines (bytes)
    without a ``:``: each row's line in the block (from 0) and the span of
    its head (the bytes before its first ``|``) as ``heads``, an array of 3
    columns; each feature's row, hash and namespace's first byte. None for a
    block left to :func:`._vw.plain_rows` (see the module)."""
    data = np.frombuffer(block, dtype=np.uint8)
    if data.size and data.max() >= 128:
        return None
    n_lines = block.count(b"\n") + 1
    # At most one feature for every two bytes (a byte and a space).
    heads = np.empty((n_lines, 3), dtype=np.int64)
    features = np.empty((len(block) // 2 + 1, 2), dtype=np.int64)
    letters = np.empty(len(block) // 2 + 1, dtype=np.uint8)
    found = np.zeros(2, dtype=np.int64)
    _plain_block(data, found, heads, features, letters)
    if found[0] < 0:
        return None
    n_rows, n_features = found
    return heads[:n_rows], features[:n_features, 0], features[:n_features, 1], letters[:n_features]
