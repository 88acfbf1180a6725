"""Vowpal Wabbit text read and hashed by numba (optional).

:func:`read_block` reads a block of whole lines as :func:`._vw.full_rows`
reads it (and :func:`._vw.plain_rows`, for a block without ``:``): each
feature named ``namespace=token`` (``token`` in the default namespace), its
value that of its ``:value`` (1 without one) times its namespace's
``:weight``; hashes each name as :func:`._hashing.hash_names` does; and
makes the block's CSR rows, the crosses of ``-q`` and ``--cubic``
included, as :meth:`._vw.VwParser.hashed` makes them in numpy: all in one
pass over the bytes (:func:`_scan`) that releases the GIL. A name is hashed
as it is read, from the hash's state after its namespace's ``namespace=``
(a namespace's name is hashed once, and where the row before had the same
name at the same place, not again: the two are compared); a row's entries
are made, sorted (by :func:`._hashing_numba.add_row`) and added up
at its line's end. Tokens are separated by spaces, tabs and CRs, as in
:mod:`._vw` (other ASCII whitespace is part of its token). It reads ASCII text only (Python
checks that the bytes of other text are UTF-8; each byte is checked as it
is read), and numbers in the forms the compiled LIBSVM parser reads
exactly (``_decimal``, as Python's ``float()`` reads them). A block holding
anything else (another byte, another number, a feature without a name, a
line that is neither blank nor has a ``|``) is left to Python, which reads
or explains it. The heads of the rows (label, importance weight, tag) are
read in Python, each distinct one once: :func:`read_block` numbers them.

:func:`rows_matrix` makes the CSR rows of features already read (and their
crosses) with the same code (:func:`_row_entries`); it is tested against
numpy's assembly (``_hashing.crosses`` and ``hashed_matrix``), and
:func:`read_block` against Python's reader (``tests/test_vw_rows.py``).

Importing this module needs numba (``pip install "skftrl[fast]"``).
"""

import numpy as np
from numba import njit

from ._hashing import FNV_PRIME, MASK_32
from ._hashing_numba import add_row, cache, murmur_bytes, murmur_end, murmurhash3
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
EQUALS_BYTE = np.array([EQUALS], dtype=np.uint8)  # after a namespace's name, in a feature's


@njit(cache=cache, nogil=True, inline="always")
def _grown(array, needed):
    """``array``, or a copy with room for ``needed`` items."""
    if needed <= len(array):
        return array
    bigger = np.empty(max(needed, 2 * len(array)), dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


@njit(cache=cache, nogil=True)
def _scan(
    data,
    state,
    interactions,
    lengths,
    mask,
    heads,
    indptr,
    indices,
    values,
    hashes,
    feature_values,
    letters,
    positions,
    counts,
    digits,
    columns,
    entry_values,
    order,
    scratch,
    counts_of_digits,
    named,
):
    """Read the rows of a block from ``state`` (the start of a line, its
    number in the block, the rows and entries read) into ``heads``,
    ``indptr``, ``indices`` and ``values`` (see :func:`_read_rows`); 0 at the
    end, -1 for a block left to Python, or the entries of a row that
    ``columns`` or ``indices`` has no room for (``state`` then at its line).
    Its arrays are never replaced: arrays assigned in the loop would make
    numba count their references at every byte. Its positions are indices
    as ``np.uint64``: numba then spares them the check for a negative index
    (none is), which it makes at every byte otherwise, and the loops run
    about a fifth faster. ``named``: the namespaces' names remembered (see
    :data:`NAMED_SEGMENTS`), each a row of its start and length in
    ``data`` and the hash's state after its ``namespace=``."""
    size = len(data)
    start, line, n_rows, n_entries = state[0], state[1], state[2], state[3]
    while start <= size:
        bar = start
        while (
            bar < size
            and KINDS[data[np.uint64(bar)]] != IS_BAR
            and KINDS[data[np.uint64(bar)]] != IS_NEWLINE
        ):
            if KINDS[data[np.uint64(bar)]] == NOT_ASCII:
                return -1
            bar += 1
        if bar == size or data[np.uint64(bar)] == NEWLINE:  # no "|": a blank line, or an error
            for position in range(start, bar):
                if KINDS[data[np.uint64(position)]] != IS_SPACE:
                    return -1
            line += 1
            start = bar + 1
            continue
        heads[n_rows, 0], heads[n_rows, 1], heads[n_rows, 2] = line, start, bar
        n_features = 0
        position = bar
        place = -1
        while position < size and data[np.uint64(position)] == BAR:  # a segment
            position += 1
            place = min(place + 1, len(named) - 1)
            # A segment whose first byte is not a space or a tab names its
            # namespace (and its weight) by its first token, if it has one.
            first = data[np.uint64(position)] if position < size else NEWLINE
            opens = first != SPACE and first != TAB and first != BAR and first != NEWLINE
            # The hash's state after "namespace=": its whole 4-byte blocks,
            # the bytes after them (``prefix_tail``, ``prefix_shift`` bits) and
            # its length.
            prefix_h = prefix_tail = np.uint64(0)
            prefix_shift = prefix_length = 0
            letter = SPACE
            scale = 1.0
            while True:
                while position < size and KINDS[data[np.uint64(position)]] == IS_SPACE:
                    position += 1
                if (
                    position == size
                    or data[np.uint64(position)] == NEWLINE
                    or data[np.uint64(position)] == BAR
                ):
                    break
                # The name (to a ":" or the token's end), then its ":value". A
                # namespace's name is most often that of the segment in the
                # row before: compared with it, neither read byte by byte
                # nor hashed again.
                token = position
                known = False
                if opens and named[place, 1]:
                    earlier, end = named[place, 0], token + named[place, 1]
                    if end < size and KINDS[data[np.uint64(end)]] != IN_TOKEN:
                        known = True
                        for i in range(end - token):
                            if data[np.uint64(token + i)] != data[np.uint64(earlier + i)]:
                                known = False
                                break
                        if known:
                            position = end
                while position < size and KINDS[data[np.uint64(position)]] == IN_TOKEN:
                    position += 1
                colon = position
                if position < size and data[np.uint64(position)] == COLON:
                    position += 1
                    while position < size and (
                        KINDS[data[np.uint64(position)]] == IN_TOKEN
                        or data[np.uint64(position)] == COLON
                    ):
                        position += 1
                if position < size and KINDS[data[np.uint64(position)]] == NOT_ASCII:
                    return -1
                # _decimal behind a branch: a token without a ":value" (the
                # common one) then takes a short path.
                ok, number = True, 1.0
                if colon < position:
                    ok, number = _decimal(data, colon + 1, position)
                if not ok or (colon == token and not opens):  # a feature without a name
                    return -1
                if opens:  # the namespace's name and weight
                    opens = False
                    scale = number
                    if colon > token:
                        if known:
                            prefix_h, prefix_tail = (
                                np.uint64(named[place, 2]),
                                np.uint64(named[place, 3]),
                            )
                            prefix_shift, prefix_length = named[place, 4], named[place, 5]
                        else:
                            h, tail, shift = murmur_bytes(
                                data, token, colon, np.uint64(0), np.uint64(0), 0
                            )
                            prefix_h, prefix_tail, prefix_shift = murmur_bytes(
                                EQUALS_BYTE, 0, 1, h, tail, shift
                            )
                            prefix_length = colon - token + 1
                            named[place, 0], named[place, 1] = token, colon - token
                            named[place, 2], named[place, 3] = prefix_h, prefix_tail
                            named[place, 4], named[place, 5] = prefix_shift, prefix_length
                        letter = data[np.uint64(token)]
                    continue
                h, tail, shift = murmur_bytes(
                    data, token, colon, prefix_h, prefix_tail, prefix_shift
                )
                length = prefix_length + colon - token
                value = scale * number
                if value != 0:  # no entry, nor crosses
                    hash_ = murmur_end(h, tail, length)
                    k = np.uint64(n_features)
                    columns[k] = abs(hash_) & mask
                    hashes[k], entry_values[k] = hash_, value
                    feature_values[k], letters[k] = value, letter
                    n_features += 1
        # A row's entries: its features (``columns``), then their crosses (by
        # calls that rows without crosses, the most, are spared).
        n_row = n_features
        if len(lengths):
            n_row = _n_entries(letters, 0, n_features, interactions, lengths, positions, counts)
        if n_row > len(columns) or n_entries + n_row > len(indices):  # read again, with room
            state[0], state[1], state[2], state[3] = start, line, n_rows, n_entries
            return n_row
        if len(lengths):
            _row_entries(
                hashes,
                feature_values,
                letters,
                0,
                n_features,
                interactions,
                lengths,
                positions,
                counts,
                digits,
                mask,
                columns,
                entry_values,
            )
        n_entries = add_row(
            columns,
            entry_values,
            n_row,
            order,
            scratch,
            counts_of_digits,
            indices,
            values,
            n_entries,
        )
        n_rows += 1
        indptr[n_rows] = n_entries
        line += 1
        start = position + 1
    state[0], state[1], state[2], state[3] = start, line, n_rows, n_entries
    return 0


# Namespaces' names remembered, by their segment's place in a row (the
# segments past the last share it): the rows of most files name the same
# namespaces in the same order.
NAMED_SEGMENTS = 256


@njit(cache=cache, nogil=True)
def _read_rows(data, interactions, lengths, hash_bits):
    """``(newlines, heads, indptr, indices, values)`` of a block (``newlines``
    -1 for a block left to Python): ``heads``, a row's line in the block,
    its head's start and end; the CSR arrays of its rows, as
    :func:`rows_matrix` makes them of the features :func:`._vw.full_rows`
    reads. One pass over the bytes (:func:`_scan`): each name
    (``namespace=token``) hashed as its bytes are read, from the hash's
    state after its namespace's ``namespace=``; each row's entries made and
    added up at its end."""
    # At most one row, or feature, for every two bytes ("|" and a line end, a
    # byte and a space); the memory past those used is never touched.
    most = len(data) // 2 + 1
    heads = np.empty((most, 3), dtype=np.int64)
    indptr = np.empty(most + 1, dtype=np.int64)
    indices = np.empty(most, dtype=np.int32)  # crosses make them grow
    values = np.empty(most, dtype=np.float64)
    # A row's features (nonzero), and its entries: features, then crosses.
    hashes = np.empty(most, dtype=np.int64)
    feature_values = np.empty(most, dtype=np.float64)
    letters = np.empty(most, dtype=np.uint8)
    longest_interaction = max(1, lengths.max()) if len(lengths) else 1
    positions = np.empty((longest_interaction, most if len(lengths) else 1), dtype=np.int64)
    counts = np.empty(longest_interaction, dtype=np.int64)
    digits = np.empty(longest_interaction, dtype=np.int64)
    columns = np.empty(most, dtype=np.int64)
    entry_values = np.empty(most, dtype=np.float64)
    order = np.empty(most, dtype=np.int64)
    scratch = np.empty(most, dtype=np.int64)
    counts_of_digits = np.empty(257, dtype=np.int64)
    state = np.zeros(4, dtype=np.int64)
    named = np.zeros((NAMED_SEGMENTS, 6), dtype=np.int64)
    indptr[0] = 0
    while True:
        needed = _scan(
            data,
            state,
            interactions,
            lengths,
            (1 << hash_bits) - 1,
            heads,
            indptr,
            indices,
            values,
            hashes,
            feature_values,
            letters,
            positions,
            counts,
            digits,
            columns,
            entry_values,
            order,
            scratch,
            counts_of_digits,
            named,
        )
        if needed <= 0:
            break
        if needed > len(columns):
            columns, entry_values = np.empty(2 * needed, np.int64), np.empty(2 * needed)
            order, scratch = np.empty(2 * needed, np.int64), np.empty(2 * needed, np.int64)
        indices = _grown(indices, state[3] + needed)
        values = _grown(values, state[3] + needed)
    if needed < 0:
        return -1, heads[:0], indptr[:1], indices[:0], values[:0]
    line, n_rows, n_entries = state[1], state[2], state[3]
    # Copies of the parts used: the chunks of the block keep them, not the
    # room allocated (which memory freed before may have made resident).
    return (
        line - 1,
        heads[:n_rows].copy(),
        indptr[: n_rows + 1].copy(),
        indices[:n_entries].copy(),
        values[:n_entries].copy(),
    )


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
        if i and _same_bytes(data, spans[i], spans[i - 1]):  # runs of one label: no hash
            codes[i] = codes[i - 1]
            continue
        slot = murmurhash3(data, spans[i, 0], spans[i, 1]) & (size - 1)
        while table[slot] >= 0 and not _same_bytes(data, spans[i], spans[first_rows[table[slot]]]):
            slot = (slot + 1) & (size - 1)
        if table[slot] < 0:
            table[slot] = n_codes
            first_rows[n_codes] = i
            n_codes += 1
        codes[i] = table[slot]
    return codes, first_rows[:n_codes]


def read_block(block, interactions, lengths, hash_bits):
    """``(newlines, lines, heads, codes, indptr, indices, values)`` of a
    block of whole lines (bytes), or None for a block left to Python (see
    the module): its number of newlines; each row's line in the block (from
    0); the span ``(start, stop)`` of each distinct head (the bytes before a
    row's first ``|``), in the order of first appearance, with its first
    row, as ``heads``, an array of 3 columns; each row's head, its number in
    ``heads``; the CSR arrays of the rows, and of the crosses of
    ``interactions`` (:func:`rows_matrix`)."""
    data = np.frombuffer(block, dtype=np.uint8)
    newlines, heads, indptr, indices, values = _read_rows(data, interactions, lengths, hash_bits)
    if newlines < 0:
        return None
    codes, first_rows = _head_codes(data, heads[:, 1:])
    distinct = np.column_stack([heads[first_rows, 1:], first_rows])
    return newlines, heads[:, 0], distinct, codes, indptr, indices, values


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
def _n_entries(letters, start, stop, interactions, lengths, positions, counts):
    """The entries of a row's features (``start`` to ``stop``) and of their crosses."""
    n_row = stop - start
    for t in range(len(lengths)):
        if _letter_positions(letters, start, stop, interactions[t], lengths[t], positions, counts):
            n_row += np.prod(counts[: lengths[t]])
    return n_row


@njit(cache=cache, nogil=True)
def _row_entries(
    hashes,
    values,
    letters,
    start,
    stop,
    interactions,
    lengths,
    positions,
    counts,
    digits,
    mask,
    columns,
    entry_values,
):
    """A row's entries (``columns``, ``entry_values``): its features
    (``start`` to ``stop``), then each interaction's crosses
    (``interactions[t, :lengths[t]]``, letters), every tuple of a feature of
    each letter in order (the first letter's slowest), hashed by
    :func:`._hashing.crossed_hashes` one after the other, its value the
    product of theirs. ``positions``, ``counts``, ``digits``: working space."""
    n_row = 0
    for k in range(start, stop):
        columns[n_row], entry_values[n_row] = abs(hashes[k]) & mask, values[k]
        n_row += 1
    for t in range(len(lengths)):
        length = lengths[t]
        if not _letter_positions(letters, start, stop, interactions[t], length, positions, counts):
            continue
        digits[:length] = 0
        while True:  # every tuple, the last letter's feature fastest
            hash_, value = hashes[positions[0, digits[0]]], values[positions[0, digits[0]]]
            for d in range(1, length):
                k = positions[d, digits[d]]
                hash_ = _crossed_hash(hash_, hashes[k])
                value = value * values[k]
            columns[n_row], entry_values[n_row] = abs(hash_) & mask, value
            n_row += 1
            d = length - 1
            digits[d] += 1
            while d > 0 and digits[d] == counts[d]:
                digits[d] = 0
                d -= 1
                digits[d] += 1
            if digits[0] == counts[0]:
                break


@njit(cache=cache, nogil=True)
def rows_matrix(rows, hashes, values, letters, interactions, lengths, n_rows, hash_bits):
    """``(indptr, indices, data)`` of the CSR matrix of features (``rows``
    ascending, each with its namespace's letter) and of their crosses, as
    :meth:`._vw.VwParser.hashed` makes it in numpy: a row's entries
    (:func:`_row_entries`), its columns sorted, a column's values added up
    in that order."""
    mask = (1 << hash_bits) - 1
    starts = np.searchsorted(rows, np.arange(n_rows + 1))
    longest_interaction = max(1, lengths.max()) if len(lengths) else 1
    longest_row = 0
    for i in range(n_rows):
        longest_row = max(longest_row, starts[i + 1] - starts[i])
    positions = np.empty((longest_interaction, longest_row), dtype=np.int64)
    counts = np.empty(longest_interaction, dtype=np.int64)
    # The entries of each row, crosses included: the sizes of the buffers.
    n_values, longest = 0, 0
    for i in range(n_rows):
        n_row = _n_entries(
            letters, starts[i], starts[i + 1], interactions, lengths, positions, counts
        )
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
        n_row = _n_entries(letters, start, stop, interactions, lengths, positions, counts)
        _row_entries(
            hashes,
            values,
            letters,
            start,
            stop,
            interactions,
            lengths,
            positions,
            counts,
            digits,
            mask,
            row_columns,
            row_values,
        )
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
