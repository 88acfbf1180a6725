"""Vowpal Wabbit text read and hashed by numba (optional).

:func:`read_block` reads a block of whole lines as :func:`._vw.full_rows`
reads it (and :func:`._vw.plain_rows`, for a block without ``:``): each
feature named ``namespace=token`` (``token`` in the default namespace), its
value that of its ``:value`` (1 without one) times its namespace's
``:weight``; and hashes each name as :func:`._hashing.hash_names` does, in
one pass over the bytes that releases the GIL. It reads ASCII text only
(Python's ``str.split`` also splits on spaces beyond ASCII; each byte is
checked as it is read), and numbers in
the forms the compiled LIBSVM parser reads exactly (``_decimal``, as
Python's ``float()`` reads them). A block holding anything else (another
byte, another number, a feature without a name, a line that is neither
blank nor has a ``|``) is left to Python, which reads or explains it. The
heads of the rows (label, importance weight, tag) are read in Python, each
distinct one once: :func:`read_block` numbers them.
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


@njit(cache=cache, nogil=True)
def _read_block(data, found, heads, features, values, letters):
    """Fill ``heads`` (a row's line in the block, its head's start and end),
    ``features`` (a feature's row and hash), ``values`` and ``letters`` (the
    first byte of a feature's namespace, a space for the default one);
    ``found``: the rows and features read, or ``found[0] = -1`` for a block
    left to Python. One pass over the bytes: each token's name is copied
    behind its namespace's (``namespace=``) as it is scanned, then hashed."""
    size = len(data)
    name = np.empty(size + 1, dtype=np.uint8)  # namespace "=" token, to hash
    n_rows = n_features = 0
    line = 0
    start = 0
    while start <= size:
        bar = start
        while bar < size and data[bar] != BAR and data[bar] != NEWLINE:
            if data[bar] >= 128:  # not ASCII
                found[0] = -1
                return
            bar += 1
        if bar == size or data[bar] == NEWLINE:  # no "|": a blank line, or an error
            for position in range(start, bar):
                if not _is_space(data[position]):
                    found[0] = -1
                    return
            line += 1
            start = bar + 1
            continue
        heads[n_rows, 0], heads[n_rows, 1], heads[n_rows, 2] = line, start, bar
        position = bar
        while position < size and data[position] == BAR:  # a segment
            position += 1
            # A segment whose first byte is not a space or a tab names its
            # namespace (and its weight) by its first token, if it has one.
            first = data[position] if position < size else NEWLINE
            opens = first != SPACE and first != TAB and first != BAR and first != NEWLINE
            prefix = 0  # the bytes of "namespace=" in name
            letter = SPACE
            scale = 1.0
            while True:
                while position < size and data[position] != NEWLINE and _is_space(data[position]):
                    position += 1
                if position == size or data[position] == NEWLINE or data[position] == BAR:
                    break
                token = position
                colon = -1
                length = prefix
                while position < size and data[position] != BAR and not _is_space(data[position]):
                    if data[position] >= 128:  # not ASCII
                        found[0] = -1
                        return
                    if colon < 0:
                        if data[position] == COLON:
                            colon = position
                        else:
                            name[length] = data[position]
                            length += 1
                    position += 1
                if colon < 0:
                    colon = position
                # _decimal behind a branch: a token without a ":value" (the
                # common one) then takes a short path.
                ok, number = True, 1.0
                if colon < position:
                    ok, number = _decimal(data, colon + 1, position)
                if not ok or (colon == token and not opens):  # a feature without a name
                    found[0] = -1
                    return
                if opens:  # the namespace's name and weight
                    opens = False
                    scale = number
                    if colon > token:
                        prefix = length + 1
                        name[prefix - 1] = EQUALS
                        letter = data[token]
                    continue
                features[n_features, 0] = n_rows
                features[n_features, 1] = murmurhash3(name, 0, length)
                values[n_features] = scale * number
                letters[n_features] = letter
                n_features += 1
        n_rows += 1
        line += 1
        start = position + 1
    found[0], found[1] = n_rows, n_features


@njit(cache=cache, nogil=True)
def _same_bytes(data, first, second):
    """Whether the spans ``(start, stop)`` of ``data`` hold the same bytes."""
    length = first[1] - first[0]
    if second[1] - second[0] != length:
        return False
    for i in range(length):
        if data[first[0] + i] != data[second[0] + i]:
            return False
    return True


@njit(cache=cache, nogil=True)
def _head_codes(data, spans):
    """``(codes, first_rows)``: each row's head (its bytes, ``spans[i]``)
    numbered in the order of first appearance, and each number's first row;
    a hash table of the distinct heads, compared byte by byte."""
    n_rows = len(spans)
    size = 2
    while size < 2 * n_rows:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)  # a slot's head number
    codes = np.empty(n_rows, dtype=np.int64)
    first_rows = np.empty(n_rows, dtype=np.int64)
    n_codes = 0
    for i in range(n_rows):
        slot = murmurhash3(data, spans[i, 0], spans[i, 1]) & (size - 1)
        while table[slot] >= 0 and not _same_bytes(data, spans[i], spans[first_rows[table[slot]]]):
            slot = (slot + 1) & (size - 1)
        if table[slot] < 0:
            table[slot] = n_codes
            first_rows[n_codes] = i
            n_codes += 1
        codes[i] = table[slot]
    return codes, first_rows[:n_codes]


def read_block(block):
    """``(lines, heads, codes, rows, hashes, values, letters)`` of a block of
    whole lines (bytes): each row's line in the block (from 0); the span
    ``(start, stop)`` of each distinct head (the bytes before a row's first
    ``|``), in the order of first appearance, with its first row, as
    ``heads``, an array of 3 columns; each row's head, its number in
    ``heads``; each feature's row, hash, value and namespace's first byte.
    None for a block left to Python (see the module)."""
    data = np.frombuffer(block, dtype=np.uint8)
    # At most one row, or feature, for every two bytes ("|" and a line end, a
    # byte and a space); the memory past those read is never touched.
    heads = np.empty((len(block) // 2 + 1, 3), dtype=np.int64)
    features = np.empty((len(block) // 2 + 1, 2), dtype=np.int64)
    values = np.empty(len(block) // 2 + 1, dtype=np.float64)
    letters = np.empty(len(block) // 2 + 1, dtype=np.uint8)
    found = np.zeros(2, dtype=np.int64)
    _read_block(data, found, heads, features, values, letters)
    if found[0] < 0:
        return None
    n_rows, n_features = found
    codes, first_rows = _head_codes(data, heads[:n_rows, 1:])
    return (
        heads[:n_rows, 0],
        np.column_stack([heads[first_rows, 1:], first_rows]),
        codes,
        features[:n_features, 0],
        features[:n_features, 1],
        values[:n_features],
        letters[:n_features],
    )
