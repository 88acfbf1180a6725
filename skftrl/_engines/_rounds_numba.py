"""The compiled steps of a parallel pass's shards (:mod:`._rounds`).

Each runs without the GIL, in the thread of its shard: renumbering the
columns of a shard's rows (a hash table, so that a shard of a wide model costs
memory for its own columns only), copying the state of those columns, sorting
them by the part of the state each merging thread writes, and merging a
shard's changes (:func:`._math.merged`). The state arrays are taken as
three-dimensional views ``(K, F, r)``: a linear model's ``(K, F)`` arrays as
``(K, F, 1)``, a factorization machine's factors as they are. Importing this
module needs numba.

Each array is an argument of its own, never an item of a tuple: numba 0.59
and 0.60 type a tuple argument by a fingerprint of its items, and lose the
first 40 bytes of a longer one (a pair of three arrays each takes 54), so
they could run a tuple of strided views with the code compiled for a tuple
of contiguous arrays, which reads and writes other columns. An array
argument is typed by its own flags.
"""

import numpy as np

from . import _math
from ._compile import _prefetch, compile, compile_inline

merged = compile(_math.merged)

# Fibonacci hashing: the top bits of a column times 2**64 / golden ratio.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# The state of a column (or its slot of the hash table) is asked of the CPU
# this many columns ahead (see _compile.prefetch_row): most are not in cache.
AHEAD = 16


@compile
def _table_bits(table):
    """log2 of the slots of a hash table (a power of two, at least 2; two
    entries a slot)."""
    bits = 1
    while (1 << bits) < table.shape[0] // 2:
        bits += 1
    return bits


@compile
def compact_rows(
    indptr, indices, data, rows, table, columns, local_indptr, local_indices, local_data
):
    """Renumber the columns of ``rows`` of a CSR matrix ``0, 1, ...`` in the order
    they first appear; returns their number ``U``.

    ``columns[:U]`` receives each new column's original; ``local_indptr``,
    ``local_indices`` and ``local_data`` (a CSR matrix's arrays, of the
    shard's rows and non-zeros) the rows over the new columns, in order.
    ``table`` is a hash table of linear probing, of a power-of-two number of
    slots at least twice the rows' non-zeros: int64 pairs, a slot ``s``'s
    column at ``2 s`` (-1 in an empty slot, as all are left) and its number
    at ``2 s + 1``. (A column and its number packed into one int64 would
    limit the columns to 2**31.)
    """
    shift = np.uint64(64 - _table_bits(table))
    mask = table.shape[0] // 2 - 1
    count = 0
    position = 0
    local_indptr[0] = 0
    for r in range(rows.shape[0]):
        row = rows[r]
        if r + 1 < rows.shape[0]:
            ahead = rows[r + 1]
            for j in range(indptr[ahead], indptr[ahead + 1]):
                _prefetch(table, 2 * np.intp((np.uint64(indices[j]) * GOLDEN) >> shift))
        for j in range(indptr[row], indptr[row + 1]):
            column = np.int64(indices[j])
            slot = np.intp((np.uint64(column) * GOLDEN) >> shift)
            while True:
                entry = table[2 * slot]
                if entry == -1:
                    table[2 * slot] = column
                    table[2 * slot + 1] = count
                    columns[count] = column
                    number = count
                    count += 1
                    break
                if entry == column:
                    number = table[2 * slot + 1]
                    break
                slot = (slot + 1) & mask
            local_indices[position] = number
            local_data[position] = data[j]
            position += 1
        local_indptr[r + 1] = position
    # The table emptied: each column found again (an emptied slot does not end
    # the search of one still there, which is further along).
    for i in range(count):
        column = np.int64(columns[i])
        slot = np.intp((np.uint64(column) * GOLDEN) >> shift)
        while table[2 * slot] != column:
            slot = (slot + 1) & mask
        table[2 * slot] = -1
    return count


@compile_inline
def _copy_column(array, start, local, column, i):
    """``start[:, i]`` and ``local[:, i]`` take ``array[:, column]``."""
    for k in range(array.shape[0]):
        for f in range(array.shape[2]):
            start[k, i, f] = local[k, i, f] = array[k, column, f]


@compile
def gather(z, z_start, z_local, n, n_start, n_local, columns):
    """``start[:, i]`` and ``local[:, i]`` take ``array[:, columns[i]]`` for each
    ``(array, start, local)`` of ``z`` and ``n``, column by column: a pair of
    arrays whose columns may share cache lines."""
    first = z[0, :, 0]
    for i in range(columns.shape[0]):
        if i + AHEAD < columns.shape[0]:
            _prefetch(first, columns[i + AHEAD])
        column = columns[i]
        _copy_column(z, z_start, z_local, column, i)
        _copy_column(n, n_start, n_local, column, i)


@compile
def by_part(columns, n_parts, n_features, order, bounds):
    """Sort the positions of ``columns`` by the part of the state their column
    is in (``n_parts`` equal ranges of ``n_features``), keeping their order
    within a part: ``order[bounds[p]:bounds[p + 1]]`` are those of part ``p``."""
    # A multiplication rather than an integer division, several times faster.
    scale = n_parts / n_features
    bounds[:] = 0
    for i in range(columns.shape[0]):
        bounds[min(int(columns[i] * scale), n_parts - 1) + 1] += 1
    for p in range(n_parts):
        bounds[p + 1] += bounds[p]
    for i in range(columns.shape[0]):
        part = min(int(columns[i] * scale), n_parts - 1)
        order[bounds[part]] = i
        bounds[part] += 1
    for p in range(n_parts, 0, -1):
        bounds[p] = bounds[p - 1]
    bounds[0] = 0


@compile_inline
def _merge_column(array, start, local, column, position):
    """``array[:, column]`` takes the shard's changes at ``position`` (:func:`._math.merged`)."""
    for k in range(array.shape[0]):
        for f in range(array.shape[2]):
            array[k, column, f] = merged(
                np.float64(array[k, column, f]),
                np.float64(start[k, position, f]),
                np.float64(local[k, position, f]),
            )


@compile
def merge(z, z_start, z_local, n, n_start, n_local, columns, positions):
    """Merge a shard's changes (:func:`._math.merged`) into ``z`` and ``n`` (each
    with its ``start`` and ``local``, as :func:`gather`'s), for its columns at
    ``positions`` (indices into ``columns``)."""
    first = z[0, :, 0]
    for p in range(positions.shape[0]):
        if p + AHEAD < positions.shape[0]:
            _prefetch(first, columns[positions[p + AHEAD]])
        position = positions[p]
        column = columns[position]
        _merge_column(z, z_start, z_local, column, position)
        _merge_column(n, n_start, n_local, column, position)
