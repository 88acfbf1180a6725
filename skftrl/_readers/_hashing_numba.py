"""The hashing of :mod:`._hashing` compiled with numba (optional).

:func:`murmurhash3` hashes bytes as :func:`._hashing.hash_names` hashes a
name's UTF-8 text (the one other copy of MurmurHash3: the compiled VW reader
and :func:`hash_prefixed`, for pyarrow's strings, use it); its parts,
:func:`murmur_bytes` and :func:`murmur_end`, hash a name in pieces (the VW
reader hashes a namespace's ``namespace=`` once for all its features).
:func:`hash_integers` hashes integers as the names of their decimal text
(``field=1005``), which :func:`._value_text.value_text` gives them, without
Python strings.

:func:`canonical_rows` (and :func:`hashed_rows`, which takes the column of
each hash as it gathers a row's entries, with no pass of its own): one pass
over the rows, each row's entries sorted and added up by :func:`add_row`
(which the compiled VW reader's rows use too), instead of numpy's sort of
the whole batch; it gives the same arrays, and releases the GIL. A row of
up to 64 entries is sorted by the ranks of its keys, counted by comparing
every pair without a branch (vector instructions); a longer row by a radix
sort.

Importing this module needs numba (``pip install "skftrl[fast]"``).
"""

import numpy as np
from numba import njit


def _cache_probe():
    """Never run: numba's search for a cache location for this file uses it."""


try:
    njit(cache=True)(_cache_probe)
    cache = True
except RuntimeError:  # no writable cache location (see skftrl._engines._compile)
    cache = False


# Rows of up to SHORT_ROW entries are sorted by the ranks of their keys (a
# column and a place: PLACE_BITS), longer ones by a radix sort.
SHORT_ROW = 64
PLACE_BITS = 6  # of a short row's entry, below its column in its sort key


@njit(cache=cache, nogil=True, inline="always")
def add_row(columns, values, n_row, order, scratch, counts, indices, data, n_entries):
    """Add a row of ``n_row`` entries (``columns``, ``values``) to
    ``indices`` and ``data`` from ``n_entries``, its columns sorted, the
    values of a column added up in the order of the entries; the new
    ``n_entries``. ``order``, ``scratch`` (room for the row's places) and
    ``counts`` (257) are working space."""
    if n_row <= SHORT_ROW:
        # A key's place (its low bits) keeps the order of a column's values
        # and makes the keys distinct: a key's rank, the number of keys
        # below it, is its place in the sorted row. Counting the ranks
        # compares every pair without a branch, in vector instructions.
        for a in range(n_row):
            scratch[a] = (columns[a] << PLACE_BITS) | a
        for a in range(n_row):
            key, rank = scratch[a], 0
            for b in range(n_row):
                rank += scratch[b] < key
            order[rank] = a
    else:
        # A least significant digit first radix sort (stable), a byte a pass.
        for a in range(n_row):
            order[a] = a
        highest = 0
        for a in range(n_row):
            highest = max(highest, columns[a])
        shift = 0
        while (highest >> shift) > 0:
            counts[:] = 0
            for a in range(n_row):
                counts[((columns[order[a]] >> shift) & 255) + 1] += 1
            for digit in range(256):
                counts[digit + 1] += counts[digit]
            for a in range(n_row):
                digit = (columns[order[a]] >> shift) & 255
                scratch[counts[digit]] = order[a]
                counts[digit] += 1
            order[:n_row] = scratch[:n_row]
            shift += 8
    last = -1  # the column of the row's last entry (columns are not negative)
    for a in range(n_row):
        column, value = columns[order[a]], values[order[a]]
        if column == last:
            data[n_entries - 1] += value
        else:
            indices[n_entries], data[n_entries] = column, value
            n_entries += 1
            last = column
    return n_entries


@njit(cache=cache, nogil=True)
def canonical_rows(columns, values):
    """See :func:`._hashing.canonical_rows`."""
    return _assembled(columns, values, np.int64(-1))  # every bit: the columns as they are


@njit(cache=cache, nogil=True)
def hashed_rows(hashes, values, hash_bits):
    """See :func:`._hashing.hashed_rows`."""
    return _assembled(hashes, values, np.int64(2**hash_bits - 1))


@njit(cache=cache, nogil=True)
def _assembled(hashes, values, mask):
    """:func:`canonical_rows` of the columns ``abs(hashes) & mask``: the
    columns of the hashes taken as the rows are gathered, with no pass of
    their own."""
    n_fields, n_rows = hashes.shape
    row_columns = np.empty(n_fields, dtype=np.int64)  # a row's entries, by field
    row_values = np.empty(n_fields, dtype=np.float64)
    order = np.empty(n_fields, dtype=np.int64)
    scratch = np.empty(n_fields, dtype=np.int64)
    counts = np.empty(257, dtype=np.int64)
    indptr = np.empty(n_rows + 1, dtype=np.int64)
    indices = np.empty(n_rows * n_fields, dtype=np.int32)
    data = np.empty(n_rows * n_fields, dtype=np.float64)
    indptr[0] = n_entries = 0
    for i in range(n_rows):
        n_row = 0
        for f in range(n_fields):
            if values[f, i] == values[f, i]:  # NaN: no entry
                row_columns[n_row], row_values[n_row] = abs(hashes[f, i]) & mask, values[f, i]
                n_row += 1
        n_entries = add_row(
            row_columns, row_values, n_row, order, scratch, counts, indices, data, n_entries
        )
        indptr[i + 1] = n_entries
    return indptr, indices[:n_entries], data[:n_entries]


@njit(cache=cache, nogil=True, inline="always")
def _mix(k):
    """A 4-byte block ``k`` of MurmurHash3_x86_32, scrambled (32 bits in a uint64)."""
    k = (k * np.uint64(0xCC9E2D51)) & np.uint64(0xFFFFFFFF)
    k = ((k << np.uint64(15)) | (k >> np.uint64(17))) & np.uint64(0xFFFFFFFF)
    return (k * np.uint64(0x1B873593)) & np.uint64(0xFFFFFFFF)


@njit(cache=cache, nogil=True, inline="always")
def murmur_block(h, k):
    """The state ``h`` of MurmurHash3_x86_32 after the 4-byte block ``k``."""
    h ^= _mix(k)
    h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & np.uint64(0xFFFFFFFF)
    return (h * np.uint64(5) + np.uint64(0xE6546B64)) & np.uint64(0xFFFFFFFF)


@njit(cache=cache, nogil=True, inline="always")
def murmur_end(h, tail, length):
    """The signed hash of ``length`` bytes from the state ``h`` after their
    whole 4-byte blocks and ``tail``, the last 0 to 3 bytes (0 without)."""
    h ^= _mix(tail)  # a tail of no bytes (0) mixes to 0: no change
    h ^= np.uint64(length)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    return np.int64(h) - np.int64(2**32) if h >= np.uint64(2**31) else np.int64(h)


@njit(cache=cache, nogil=True, inline="always")
def murmur_bytes(buffer, start, stop, h, tail, shift):
    """``(h, tail, shift)``: the state of MurmurHash3_x86_32 after the bytes
    ``buffer[start:stop]`` from the state ``h`` after whole 4-byte blocks
    and ``tail``, ``shift // 8`` bytes past them (0 to 3): a name hashed in
    parts, as its bytes are read."""
    while shift and start < stop:  # complete the block begun
        tail |= np.uint64(buffer[np.uint64(start)]) << np.uint64(shift)
        start += 1
        shift += 8
        if shift == 32:
            h, tail, shift = murmur_block(h, tail), np.uint64(0), 0
    end = stop - (stop - start) % 4
    for b in range(start, end, 4):
        k = (
            np.uint64(buffer[np.uint64(b)])
            | (np.uint64(buffer[np.uint64(b + 1)]) << np.uint64(8))
            | (np.uint64(buffer[np.uint64(b + 2)]) << np.uint64(16))
            | (np.uint64(buffer[np.uint64(b + 3)]) << np.uint64(24))
        )
        h = murmur_block(h, k)
    for b in range(end, stop):
        tail |= np.uint64(buffer[np.uint64(b)]) << np.uint64(shift)
        shift += 8
    return h, tail, shift


@njit(cache=cache, nogil=True)
def murmurhash3(buffer, start, stop):
    """The signed 32-bit MurmurHash3_x86_32 (seed 0) of the bytes
    ``buffer[start:stop]``, as :func:`._hashing.hash_names` hashes a name's
    UTF-8 bytes (scikit-learn's ``murmurhash3_32``, tested against it)."""
    h, tail, _ = murmur_bytes(buffer, start, stop, np.uint64(0), np.uint64(0), 0)
    return murmur_end(h, tail, stop - start)


@njit(cache=cache, nogil=True)
def hash_prefixed(prefix, data, offsets):
    """The :func:`murmurhash3` of ``prefix`` followed by each value's bytes
    ``data[offsets[i]:offsets[i + 1]]`` (the UTF-8 text of a pyarrow string
    array): :func:`._hashing.hash_names` of ``prefix + value``, as int64."""
    n_values = len(offsets) - 1
    longest = 0
    for i in range(n_values):
        longest = max(longest, offsets[i + 1] - offsets[i])
    name = np.empty(len(prefix) + longest, dtype=np.uint8)
    name[: len(prefix)] = prefix
    hashes = np.empty(n_values, dtype=np.int64)
    for i in range(n_values):
        start, length = offsets[i], offsets[i + 1] - offsets[i]
        for j in range(length):
            name[len(prefix) + j] = data[start + j]
        hashes[i] = murmurhash3(name, 0, len(prefix) + length)
    return hashes


@njit(cache=cache, nogil=True, inline="always")
def _decimal(name, start, value):
    """Write the decimal text of the integer ``value`` (as ``str(int(value))``
    writes it) into ``name`` from ``start``; the end of the text."""
    if value < 0:
        name[start] = 45  # "-"
        start += 1
        # -(value + 1) never overflows, even at the smallest int64.
        magnitude = np.uint64(-(value + 1)) + np.uint64(1)
    else:
        magnitude = np.uint64(value)
    end = start + 1
    rest = magnitude // np.uint64(10)
    while rest:
        end += 1
        rest //= np.uint64(10)
    for j in range(end - 1, start - 1, -1):
        name[j] = np.uint8(np.uint64(48) + magnitude % np.uint64(10))
        magnitude //= np.uint64(10)
    return end


@njit(cache=cache, nogil=True)
def hash_integers(prefix, values):
    """The :func:`murmurhash3` of ``prefix`` followed by the decimal text of
    each integer of ``values`` (int64): :func:`._hashing.hash_names` of
    ``prefix + str(value)``, as int64."""
    n_prefix = len(prefix)
    name = np.empty(n_prefix + 20, dtype=np.uint8)  # "-" and 19 digits at most
    name[:n_prefix] = prefix
    hashes = np.empty(len(values), dtype=np.int64)
    for i in range(len(values)):
        hashes[i] = murmurhash3(name, 0, _decimal(name, n_prefix, values[i]))
    return hashes


@njit(cache=cache, nogil=True)
def factorize_integers(values, present):
    """``(distinct, codes)`` of the int64 ``values`` where ``present``: each
    distinct value once, in the order rows first hold it, and each row's
    index among them (-1 where not present). A hash table of open
    addressing: one pass, no sort."""
    n_values = len(values)
    bits = 1
    while (1 << bits) < 2 * n_values:  # at most half full
        bits += 1
    size = 1 << bits
    slots = np.full(size, -1, dtype=np.int64)  # an index into distinct, -1: empty
    distinct = np.empty(n_values, dtype=np.int64)
    codes = np.empty(n_values, dtype=np.intp)
    n_distinct = 0
    for i in range(n_values):
        if not present[i]:
            codes[i] = -1
            continue
        value = values[i]
        # Fibonacci hashing: the high bits of the product spread close values.
        slot = np.int64((np.uint64(value) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))
        while slots[slot] >= 0 and distinct[slots[slot]] != value:
            slot = (slot + 1) & (size - 1)
        if slots[slot] < 0:
            slots[slot] = n_distinct
            distinct[n_distinct] = value
            n_distinct += 1
        codes[i] = slots[slot]
    return distinct[:n_distinct].copy(), codes
