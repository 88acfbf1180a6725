"""Vowpal Wabbit text read and hashed by numba (optional).

:func:`read_block` reads a block of whole lines as :func:`._vw.full_rows`
reads it (and :func:`._vw.plain_rows`, for a block without ``:``): each
feature named ``namespace=token`` (``token`` in the default namespace), its
value that of its ``:value`` (1 without one) times its namespace's
``:weight``; and hashes each name as :func:`._hashing.hash_names` does, in
one pass over the bytes that releases the GIL. It reads ASCII text only
(Python's ``str.split`` also splits on spaces beyond ASCII), and numbers in
the forms the compiled LIBSVM parser reads exactly (``_decimal``, as
Python's ``float()`` reads them). A block holding anything else (another
byte, another number, a feature without a name, a line that is neither
blank nor has a ``|``) is left to Python, which reads or explains it. The
heads of the rows (label, importance weight, tag) are read in Python.
Importing this module needs numba (``pip install "skftrl[fast]"``).
"""

import numpy as np
from numba import njit

from ._hashing_numba import cache, murmurhash3
from ._libsvm_numba import _decimal

NEWLINE, BAR, SPACE, TAB, COLON, EQUALS = 10, 124, 32, 9, 58, 61


@njit(cache=cache, nogil=True, inline="always")
def _is_space(byte):
    """Whether an ASCII byte is whitespace to Python's ``str.split()``."""
    return byte == SPACE or 9 <= byte <= 13 or 28 <= byte <= 31


@njit(cache=cache, nogil=True, inline="always")
def _colon(data, start, stop):
    """The position of the first ``:`` in ``data[start:stop]``, else ``stop``."""
    while start < stop and data[start] != COLON:
        start += 1
    return start


@njit(cache=cache, nogil=True, inline="always")
def _number_after(data, colon, stop):
    """``(ok, number)`` of a token's text after its ``:`` at ``colon`` (1
    without one): a namespace's weight or a feature's value."""
    if colon == stop:
        return True, 1.0
    return _decimal(data, colon + 1, stop)


@njit(cache=cache, nogil=True)
def _read_block(data, found, heads, features, values, letters):
    """Fill ``heads`` (a row's line in the block, its head's start and end),
    ``features`` (a feature's row and hash), ``values`` and ``letters`` (the
    first byte of a feature's namespace, a space for the default one);
    ``found``: the rows and features read, or ``found[0] = -1`` for a block
    left to Python."""
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
                # namespace (and its weight) by its first token, if it has one.
                opens = end > segment and data[segment] != SPACE and data[segment] != TAB
                prefix = 0  # the bytes of "namespace=" in name
                letter = SPACE
                scale = 1.0
                position = segment
                while position < end:
                    while position < end and _is_space(data[position]):
                        position += 1
                    if position == end:
                        break
                    token = position
                    while position < end and not _is_space(data[position]):
                        position += 1
                    colon = _colon(data, token, position)
                    ok, number = _number_after(data, colon, position)
                    if not ok or (colon == token and not opens):  # a feature without a name
                        found[0] = -1
                        return
                    if opens:  # the namespace's name and weight
                        opens = False
                        scale = number
                        if colon > token:
                            for i in range(token, colon):
                                name[i - token] = data[i]
                            prefix = colon - token + 1
                            name[prefix - 1] = EQUALS
                            letter = data[token]
                        continue
                    for i in range(token, colon):
                        name[prefix + i - token] = data[i]
                    features[n_features, 0] = n_rows
                    features[n_features, 1] = murmurhash3(name, 0, prefix + colon - token)
                    values[n_features] = scale * number
                    letters[n_features] = letter
                    n_features += 1
                segment = end + 1
            n_rows += 1
        line += 1
        start = stop + 1
    found[0], found[1] = n_rows, n_features


def read_block(block):
    """``(heads, rows, hashes, values, letters)`` of a block of whole lines
    (bytes): each row's line in the block (from 0) and the span of its head
    (the bytes before its first ``|``) as ``heads``, an array of 3 columns;
    each feature's row, hash, value and namespace's first byte. None for a
    block left to Python (see the module)."""
    data = np.frombuffer(block, dtype=np.uint8)
    if data.size and data.max() >= 128:
        return None
    n_lines = block.count(b"\n") + 1
    # At most one feature for every two bytes (a byte and a space).
    heads = np.empty((n_lines, 3), dtype=np.int64)
    features = np.empty((len(block) // 2 + 1, 2), dtype=np.int64)
    values = np.empty(len(block) // 2 + 1, dtype=np.float64)
    letters = np.empty(len(block) // 2 + 1, dtype=np.uint8)
    found = np.zeros(2, dtype=np.int64)
    _read_block(data, found, heads, features, values, letters)
    if found[0] < 0:
        return None
    n_rows, n_features = found
    return (
        heads[:n_rows],
        features[:n_features, 0],
        features[:n_features, 1],
        values[:n_features],
        letters[:n_features],
    )
