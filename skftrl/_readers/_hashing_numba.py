"""The hashing of :mod:`._hashing` compiled with numba (optional).

:func:`murmurhash3` hashes bytes as :func:`._hashing.hash_names` hashes a
name's UTF-8 text (the one other copy of MurmurHash3: the compiled VW reader
and :func:`hash_prefixed`, for pyarrow's strings, use it).

:func:`canonical_rows`: one pass over the rows, each row's few entries
sorted by rank (a key's place is the number of the row's keys below it),
instead of numpy's sort of the whole batch; it gives the same arrays, and
releases the GIL. Counting ranks compares every pair of keys but has no
branch to mispredict: on random columns it is faster than an insertion
sort, from 5 fields to 200.

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


@njit(cache=cache, nogil=True)
def canonical_rows(columns, values):
    """See :func:`._hashing.canonical_rows`."""
    n_fields, n_rows = columns.shape
    shift = 1
    while (1 << shift) < n_fields:
        shift += 1
    low = (1 << shift) - 1
    absent = np.iinfo(np.int64).max  # the key of no entry: above every other
    keys = np.empty(n_fields, dtype=np.int64)  # a row's (column, field)
    ordered = np.empty(n_fields, dtype=np.int64)  # the row's keys, sorted
    indptr = np.empty(n_rows + 1, dtype=np.int64)
    indices = np.empty(n_rows * n_fields, dtype=np.int32)
    data = np.empty(n_rows * n_fields, dtype=np.float64)
    indptr[0] = 0
    n_entries = 0
    for i in range(n_rows):
        n_keys = 0
        for f in range(n_fields):
            present = values[f, i] == values[f, i]  # NaN: no entry
            keys[f] = ((columns[f, i] << shift) | f) if present else absent
            n_keys += present
        # The keys of entries differ (by their field); those of no entry all
        # rank n_keys, past the ones read below.
        for a in range(n_fields):
            rank = 0
            for b in range(n_fields):
                rank += keys[b] < keys[a]
            ordered[rank] = keys[a]
        last = -1
        for k in range(n_keys):
            column = ordered[k] >> shift
            value = values[ordered[k] & low, i]
            if column == last:
                data[n_entries - 1] += value
            else:
                indices[n_entries] = column
                data[n_entries] = value
                n_entries += 1
                last = column
        indptr[i + 1] = n_entries
    return indptr, indices[:n_entries], data[:n_entries]


@njit(cache=cache, nogil=True, inline="always")
def _mix(k):
    """A 4-byte block ``k`` of MurmurHash3_x86_32, scrambled (32 bits in a uint64)."""
    k = (k * np.uint64(0xCC9E2D51)) & np.uint64(0xFFFFFFFF)
    k = ((k << np.uint64(15)) | (k >> np.uint64(17))) & np.uint64(0xFFFFFFFF)
    return (k * np.uint64(0x1B873593)) & np.uint64(0xFFFFFFFF)


@njit(cache=cache, nogil=True)
def murmurhash3(buffer, start, stop):
    """The signed 32-bit MurmurHash3_x86_32 (seed 0) of the bytes
    ``buffer[start:stop]``, as :func:`._hashing.hash_names` hashes a name's
    UTF-8 bytes (scikit-learn's ``murmurhash3_32``, tested against it)."""
    h = np.uint64(0)
    end = stop - (stop - start) % 4
    for b in range(start, end, 4):
        k = (
            np.uint64(buffer[b])
            | (np.uint64(buffer[b + 1]) << np.uint64(8))
            | (np.uint64(buffer[b + 2]) << np.uint64(16))
            | (np.uint64(buffer[b + 3]) << np.uint64(24))
        )
        h ^= _mix(k)
        h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & np.uint64(0xFFFFFFFF)
        h = (h * np.uint64(5) + np.uint64(0xE6546B64)) & np.uint64(0xFFFFFFFF)
    rest = stop - end
    if rest:
        k = np.uint64(buffer[end])
        if rest >= 2:
            k |= np.uint64(buffer[end + 1]) << np.uint64(8)
        if rest == 3:
            k |= np.uint64(buffer[end + 2]) << np.uint64(16)
        h ^= _mix(k)
    h ^= np.uint64(stop - start)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    return np.int64(h) - np.int64(2**32) if h >= np.uint64(2**31) else np.int64(h)


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
