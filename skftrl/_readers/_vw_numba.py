"""Vowpal Wabbit text read and hashed by numba (optional).

:func:`read_block` reads a block of whole lines as :func:`._vw.full_rows`
reads it (and :func:`._vw.plain_rows`, for a block without ``:``): each
feature named ``namespace=token`` (``token`` in the default namespace), its
value that of its ``:value`` (1 without one) times its namespace's
``:weight``; and hashes each name as :func:`._hashing.hash_names` does, in
one pass over the bytes that releases the GIL. Tokens are separated by
spaces, tabs and CRs, as in :mod:`._vw` (other ASCII whitespace is part of
its token). It reads ASCII text only (Python checks that the bytes of other
text are UTF-8; each byte is checked as it is read), and numbers in
the forms the compiled LIBSVM parser reads exactly (``_decimal``, as
Python's ``float()`` reads them). A block holding anything else (another
byte, another number, a feature without a name, a line that is neither
blank nor has a ``|``) is left to Python, which reads or explains it. The
heads of the rows (label, importance weight, tag) are read in Python, each
distinct one once: :func:`read_block` numbers them.

:func:`rows_matrix` makes a block's CSR rows, the crosses of ``-q`` and
``--cubic`` included, as :meth:`._vw.VwParser.hashed` makes them in numpy
(``_hashing.crosses`` and ``hashed_matrix``, the reference it is tested
against): a row at a time, its entries sorted by rank or, in long rows, by a
radix sort.

Importing this module needs numba (``pip install "skftrl[fast]"``).
"""

import numpy as np
from numba import njit

from ._hashing import FNV_PRIME, MASK_32
from ._hashing_numba import add_row, cache, murmurhash3
from ._libsvm_numba import _decimal

NEWLINE, BAR, SPACE, TAB, CR, COLON, EQUALS = 10, 124, 32, 9, 13, 58, 61
# What a byte is to the reader (one look-up, not a chain of comparisons):
# most bytes are part of a token; spaces are those that separate tokens
# (_vw.SEPARATORS).
IN_TOKEN, IS_SPACE, IS_NEWLINE, IS_BAR, IS_COLON, NOT_ASCII = 0, 1, 2, 3, 4, 5
KINDS = np.zeros(256, dtype=np.uint8)
KINDS[[SPACE, TAB, CR]] = IS_SPACE
KINDS[NEWLINE], KINDS[BAR], KINDS[COLON] = IS_NEWLINE, IS_BAR, IS_COLON
KINDS[128:] = NOT_ASCII


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
        while bar < size and KINDS[data[bar]] != IS_BAR and KINDS[data[bar]] != IS_NEWLINE:
            if KINDS[data[bar]] == NOT_ASCII:
                found[0] = -1
                return
            bar += 1
        if bar == size or data[bar] == NEWLINE:  # no "|": a blank line, or an error
            for position in range(start, bar):
                if KINDS[data[position]] != IS_SPACE:
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
                while position < size and KINDS[data[position]] == IS_SPACE:
                    position += 1
                if position == size or data[position] == NEWLINE or data[position] == BAR:
                    break
                token = position
                colon = -1
                length = prefix
                while position < size:
                    byte = data[position]
                    kind = KINDS[byte]
                    if kind == IN_TOKEN:
                        if colon < 0:
                            name[length] = byte
                            length += 1
                    elif kind == IS_COLON:
                        if colon < 0:
                            colon = position
                    elif kind == NOT_ASCII:
                        found[0] = -1
                        return
                    else:
                        break
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


@njit(cache=cache, nogil=True, inline="always")
def _crossed_hash(first, second):
    """:func:`._hashing.crossed_hashes` of two hashes."""
    combined = ((first & MASK_32) * FNV_PRIME ^ (second & MASK_32)) & MASK_32
    return combined - 2**32 if combined >= 2**31 else combined


@njit(cache=cache, nogil=True)
def _letter_positions(letters, start, stop, interaction, length, positions, counts):
    """Each letter ``interaction[d]``'s features in a row (``start`` to
    ``stop``), in order, into ``positions[d]`` (``counts[d]`` of them);
    whether every letter has one."""
    for d in range(length):
        counts[d] = 0
        for k in range(start, stop):
            if letters[k] == interaction[d]:
                positions[d, counts[d]] = k
                counts[d] += 1
        if counts[d] == 0:
            return False
    return True


@njit(cache=cache, nogil=True)
def rows_matrix(rows, hashes, values, letters, interactions, lengths, n_rows, hash_bits):
    """``(indptr, indices, data)`` of the CSR matrix of features (``rows``
    ascending, each with its namespace's letter) and of their crosses, as
    :meth:`._vw.VwParser.hashed` makes it in numpy: a row's features, then
    each interaction's crosses (``interactions[t, :lengths[t]]``, letters),
    every tuple of a feature of each letter in order (the first letter's
    slowest), hashed by :func:`._hashing.crossed_hashes` one after the
    other, its value the product of theirs; each row's columns sorted, a
    column's values added up in that order."""
    mask = (1 << hash_bits) - 1
    n_interactions = len(lengths)
    starts = np.searchsorted(rows, np.arange(n_rows + 1))
    longest_interaction = max(1, lengths.max()) if n_interactions else 1
    longest_row = 0
    for i in range(n_rows):
        longest_row = max(longest_row, starts[i + 1] - starts[i])
    positions = np.empty((longest_interaction, longest_row), dtype=np.int64)
    counts = np.empty(longest_interaction, dtype=np.int64)
    # The entries of each row, crosses included: the sizes of the buffers.
    n_values, longest = 0, 0
    for i in range(n_rows):
        n_row = starts[i + 1] - starts[i]
        for t in range(n_interactions):
            if _letter_positions(
                letters, starts[i], starts[i + 1], interactions[t], lengths[t], positions, counts
            ):
                n_row += np.prod(counts[: lengths[t]])
        n_values += n_row
        longest = max(longest, n_row)
    row_columns = np.empty(longest, dtype=np.int64)
    row_values = np.empty(longest, dtype=np.float64)
    order = np.empty(longest, dtype=np.int64)
    scratch = np.empty(longest, dtype=np.int64)
    counts_of_digits = np.empty(257, dtype=np.int64)
    digits = np.empty(longest_interaction, dtype=np.int64)  # a tuple, by place
    indptr = np.empty(n_rows + 1, dtype=np.int64)
    indices = np.empty(n_values, dtype=np.int32)
    data = np.empty(n_values, dtype=np.float64)
    indptr[0] = n_entries = 0
    for i in range(n_rows):
        start, stop = starts[i], starts[i + 1]
        n_row = 0
        for k in range(start, stop):
            row_columns[n_row], row_values[n_row] = abs(hashes[k]) & mask, values[k]
            n_row += 1
        for t in range(n_interactions):
            length = lengths[t]
            if not _letter_positions(
                letters, start, stop, interactions[t], length, positions, counts
            ):
                continue
            digits[:length] = 0
            while True:  # every tuple, the last letter's feature fastest
                hash_, value = hashes[positions[0, digits[0]]], values[positions[0, digits[0]]]
                for d in range(1, length):
                    k = positions[d, digits[d]]
                    hash_ = _crossed_hash(hash_, hashes[k])
                    value = value * values[k]
                row_columns[n_row], row_values[n_row] = abs(hash_) & mask, value
                n_row += 1
                d = length - 1
                digits[d] += 1
                while d > 0 and digits[d] == counts[d]:
                    digits[d] = 0
                    d -= 1
                    digits[d] += 1
                if digits[0] == counts[0]:
                    break
        n_entries = add_row(
            row_columns,
            row_values,
            n_row,
            order,
            scratch,
            counts_of_digits,
            indices,
            data,
            n_entries,
        )
        indptr[i + 1] = n_entries
    return indptr, indices[:n_entries], data[:n_entries]
