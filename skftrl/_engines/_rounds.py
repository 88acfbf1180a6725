"""Parallel passes: a pass's rows learned in rounds, each round's shards by threads.

A pass with ``n_jobs`` threads splits its rows into rounds (:func:`rounds`),
and each round's rows into ``n_jobs`` contiguous shards. Each thread learns
its shard with the engine's compiled pass, which releases the GIL, on a state
of its own: the state of the columns its rows use, as it was when the round
began (a wide model's shard copies a few thousand columns, not the width of
the model). The shards' changes are then merged into the state in the order
of the shards (:func:`._math.merged`: the changes of ``z`` and of ``n`` add
up, a coordinate one shard changed alone takes its value), each thread
merging one range of the columns. The result depends on the rows, their
order and ``n_jobs`` only, never on the threads' timing.

The rounds' size is the trade-off (docs: :doc:`parallel`): a shard learns
from the state as it was when the round began, blind to the other shards'
rows, and the changes of a coordinate that several shards moved the same way
add up. A round therefore holds ``GROWTH * sqrt(seen)`` rows, ``seen`` being
the rows the model has learned: the learning rates shrink as ``1 / sqrt(n)``,
and so does what a round of that many rows can change. Two shards can at
most double a change; more could overshoot and oscillate, so they take
rounds four times smaller. A round that would give its threads fewer than
:data:`SMALLEST_SHARD` rows each is not worth their synchronization: those
first rows of a model, learned while its rates are largest, are learned one
after the other, exactly as with one thread.

Only the compiled engines take part (``learns_without_gil``); a failure in a
round leaves the undo record able to restore the state, since each shard's
columns are recorded before any is merged.
"""

import concurrent.futures
import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._math import merged_values

# The rows of a round: GROWTH[n_jobs] * sqrt(rows learned); for more threads
# than listed, the last.
GROWTH = {2: 16.0, 3: 4.0}
# A round of fewer rows per thread than this is learned in order, by one thread.
SMALLEST_SHARD = 1024
# And no shard learns more rows than this: it bounds the memory of a round
# (a shard of hashed rows of 20 non-zeros takes about 10 MB).
LARGEST_SHARD = 2**14


def growth(n_jobs):
    """The rows of a round per square root of the rows learned."""
    return GROWTH.get(n_jobs, GROWTH[max(GROWTH)])


def rounds(n_rows, n_jobs, seen):
    """The rounds of a pass over ``n_rows`` rows with ``n_jobs`` threads, the
    model having learned ``seen`` rows before it: ``(start, stop, parallel)``
    of each, in order. A round that is not ``parallel`` is learned in order
    by one thread; only the first can be."""
    b = growth(n_jobs)
    smallest = n_jobs * SMALLEST_SHARD
    # The rows learned when b * sqrt(rows) first reaches the smallest round.
    threshold = math.ceil((smallest / b) ** 2)
    start = min(n_rows, max(0, threshold - seen))
    if start:
        yield 0, start, False
    while start < n_rows:
        size = min(int(b * math.sqrt(seen + start)), n_jobs * LARGEST_SHARD)
        stop = min(n_rows, start + size)
        yield start, stop, True
        start = stop


class CSR(NamedTuple):
    """The arrays of a CSR matrix, as the compiled passes read it."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


class Shard(NamedTuple):
    """A shard learned: its columns; each learned per-feature array of the model
    with the shard's state of those columns at the round's start and learned,
    as three-dimensional views ``(array, start, learned)``, in pairs (``z``
    and ``n``); the same of each per-output array (one-dimensional); its
    rows' margins; and its columns' positions by part of the state
    (``order``, ``bounds``, see by_part)."""

    columns: np.ndarray
    features: tuple
    outputs: list
    margins: np.ndarray
    order: np.ndarray
    bounds: np.ndarray


def as_3d(array):
    """A view ``(K, F, r)`` of a per-feature array: ``(K, F, 1)`` of a linear one."""
    return array[:, :, None] if array.ndim == 2 else array


def new_table(nonzeros):
    """An empty hash table of :func:`._rounds_numba.compact_rows` for rows of
    ``nonzeros`` non-zeros: a power of two of slots, at least twice as many,
    of two int64 each."""
    slots = 2 ** max(1, math.ceil(math.log2(max(2 * nonzeros, 2))))
    return np.full(2 * slots, -1, dtype=np.int64)


class ShardLearner:
    """One thread's learning of its shards, with its buffers kept from round to round."""

    def __init__(self, parallel_pass):
        self.run = parallel_pass
        self.table = new_table(0)
        self.buffers = {}
        # The learned per-feature arrays of the shard's state, laid out as the
        # model's, and their starts: flat buffers for ``capacity`` columns, whose
        # first values a shard's arrays are (see _shard_arrays).
        self.capacity = 0
        self.locals = self.starts = None

    def _buffer(self, name, size, dtype):
        """A buffer of ``size`` elements, kept from round to round."""
        buffer = self.buffers.get(name)
        if buffer is None or len(buffer) < size:
            buffer = self.buffers[name] = np.empty(size, dtype=dtype)
        return buffer[:size]

    def _state_of(self, columns):
        """The state of ``columns`` as the round began, for the shard to learn:
        a state record laid out as the model's (``layouts``, one per pair of
        learned per-feature arrays), and the :class:`Shard`'s ``features``
        and ``outputs``."""
        run, size = self.run, len(columns)
        # The first shard's buffers are made even for no columns (an empty shard).
        if self.locals is None or size > self.capacity:
            self.capacity = max(size, 2 * self.capacity)
            self.locals, self.starts = [], []
            for array, layout in zip(run.feature_arrays[::2], run.layouts):
                shape = (1, array.shape[0] * self.capacity, *array.shape[2:])
                self.locals.extend(buffer[0] for buffer in layout(shape, array.dtype))
            self.starts = [np.empty_like(buffer) for buffer in self.locals]
        arrays, features, outputs = [], [], []
        locals_ = self._shard_arrays(self.locals, size)
        starts = map(as_3d, self._shard_arrays(self.starts, size))
        for array in run.state:
            if array.dtype.kind != "f":  # a constant of the state
                arrays.append(array[:, columns])
            elif array.ndim == 1:
                local = array.copy()
                arrays.append(local)
                outputs.append((array, array.copy(), local))
            else:
                local = next(locals_)
                arrays.append(local)
                features.append((as_3d(array), next(starts), as_3d(local)))
        features = tuple(zip(features[::2], features[1::2]))
        for pair in features:
            run.compiled.gather(*pair[0], *pair[1], columns)
        return run.state._make(arrays), features, outputs

    def _shard_arrays(self, buffers, size):
        """The per-feature arrays of a shard of ``size`` columns, each of the
        model's array's shape but for its columns, C-contiguous at the start of
        its buffer. (Slices of ``(K, capacity, ...)`` arrays would not be
        contiguous for K > 1. The state that changed from run to run with
        such views under numba 0.59 and 0.60 was numba's typing of tuples of
        arrays, which the compiled steps no longer take: see
        :mod:`._rounds_numba`.)"""
        for buffer, array in zip(buffers, self.run.feature_arrays):
            n_values = array.shape[0] * size * math.prod(array.shape[2:])
            yield buffer.reshape(-1)[:n_values].reshape(array.shape[0], size, *array.shape[2:])

    def _compact(self, rows):
        """The shard's rows over its own columns renumbered (compact_rows): the
        columns, and the rows as a CSR matrix."""
        X = self.run.X
        nonzeros = int((X.indptr[rows + 1] - X.indptr[rows]).sum())
        shard_X = CSR(
            self._buffer("indptr", len(rows) + 1, X.indptr.dtype),
            self._buffer("indices", nonzeros, X.indices.dtype),
            self._buffer("data", nonzeros, X.data.dtype),
        )
        columns = self._buffer("columns", nonzeros, np.intp)
        if len(self.table) < len(new_table(nonzeros)):
            self.table = new_table(nonzeros)
        count = self.run.compiled.compact_rows(
            X.indptr, X.indices, X.data, rows, self.table, columns, *shard_X
        )
        return columns[:count], shard_X

    def learn(self, rows, narrow):
        """Learn ``rows`` (a shard) from the round's start: a :class:`Shard`.

        ``narrow``: the state is copied whole and ``X`` read as it is; else the
        rows' columns are renumbered and only theirs copied.
        """
        run = self.run
        targets, sample_weight = run.targets, run.sample_weight
        if narrow:
            columns, shard_X, shard_rows = run.all_columns, run.X, rows
        else:
            columns, shard_X = self._compact(rows)
            shard_rows = np.arange(len(rows))
            targets, sample_weight = targets[rows], sample_weight[rows]
        state, features, outputs = self._state_of(columns)
        margins = run.engine.learn(
            state, run.parameters, shard_X, targets, sample_weight, shard_rows
        )
        order = np.empty(len(columns), dtype=np.intp)
        bounds = np.empty(run.n_jobs + 1, dtype=np.intp)
        run.compiled.by_part(columns, run.n_jobs, run.n_features, order, bounds)
        return Shard(columns, features, outputs, margins, order, bounds)


class ParallelPass:
    """A pass's rounds: the shards learned by threads, their changes merged."""

    def __init__(self, engine, state, parameters, X, targets, sample_weight, n_jobs, layouts):
        from . import _rounds_numba

        self.compiled = _rounds_numba
        self.engine, self.state, self.parameters = engine, state, parameters
        self.X, self.targets, self.sample_weight = X, targets, sample_weight
        self.n_jobs, self.layouts = n_jobs, layouts
        self.feature_arrays = [
            array for array in state if array.dtype.kind == "f" and array.ndim > 1
        ]
        self.n_features = X.shape[1]
        self.all_columns = None  # of a narrow round (made at its first)
        self.learners = [ShardLearner(self) for _ in range(n_jobs)]

    def learn_round(self, pool, rows, undo):
        """Learn the round's ``rows`` in shards and merge them; returns their margins."""
        bounds = [len(rows) * t // self.n_jobs for t in range(self.n_jobs + 1)]
        shards = [rows[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        indptr = self.X.indptr
        # A whole copy of the state costs no more than renumbering the columns.
        narrow = self.n_features <= min(int((indptr[s + 1] - indptr[s]).sum()) for s in shards)
        if narrow and self.all_columns is None:
            self.all_columns = np.arange(self.n_features, dtype=np.intp)
        learned = run_all(
            pool,
            [
                (lambda learner=learner, shard=shard: learner.learn(shard, narrow))
                for learner, shard in zip(self.learners, shards)
            ],
        )
        if undo is not None:
            # Every shard's columns as the round began, before any is merged.
            for shard in learned:
                starts = [start for pair in shard.features for _, start, _ in pair]
                undo.record(shard.columns, list(map(features_first, self.feature_arrays, starts)))
        run_all(
            pool,
            [(lambda part=part: self.merge_part(learned, part)) for part in range(self.n_jobs)],
        )
        for shard in learned:
            for array, start, local in shard.outputs:
                array[...] = merged_values(array, start, local)
        return np.concatenate([shard.margins for shard in learned])

    def merge_part(self, shards, part):
        """Merge each shard's changes of the columns of ``part``, shard after shard."""
        for shard in shards:
            positions = shard.order[shard.bounds[part] : shard.bounds[part + 1]]
            for pair in shard.features:
                self.compiled.merge(*pair[0], *pair[1], shard.columns, positions)


def features_first(array, view):
    """A shard's ``view`` ``(K, U, r)`` of the per-feature ``array``, features
    first, as :meth:`~._undo.UndoLog.record` takes what a pass has read."""
    return (view[:, :, 0] if array.ndim == 2 else view).swapaxes(0, 1)


def run_all(pool, calls):
    """Run ``calls`` at once, the first in this thread, the others in ``pool``;
    their results, once all have ended (the first exception raised again)."""
    futures = [pool.submit(call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:
        concurrent.futures.wait(futures)
    return [first, *(future.result() for future in futures)]


def learn_in_rounds(
    engine, state, parameters, X, targets, sample_weight, rows, undo, *, n_jobs, seen, layouts
):
    """A pass over ``rows`` in parallel rounds (see the module); as ``engine.learn``,
    returns each row's margins before it was learned from."""
    rows = np.asarray(rows, dtype=np.intp)
    margins = np.empty((len(rows), state[0].shape[0]), dtype=np.float64)
    run = ParallelPass(engine, state, parameters, X, targets, sample_weight, n_jobs, layouts)
    with concurrent.futures.ThreadPoolExecutor(n_jobs - 1, thread_name_prefix="skftrl") as pool:
        for start, stop, parallel in rounds(len(rows), n_jobs, seen):
            if parallel:
                margins[start:stop] = run.learn_round(pool, rows[start:stop], undo)
            else:
                margins[start:stop] = engine.learn(
                    state, parameters, X, targets, sample_weight, rows[start:stop], undo
                )
    return margins


# ------------------------------------------------ shards learned elsewhere
# A round's shards learned in other processes (skftrl.dask's workers): each
# gets the state of its own columns as the round began (``start``, as
# :func:`state_of_columns` takes it) and returns a :class:`ShardChanges`;
# the shards' changes are merged in their order, in a tree
# (:func:`merge_changes`), into the changes of the round.


class ShardChanges(NamedTuple):
    """The columns a shard (or several, merged) learned, sorted, and each
    learned array's values there at the round's start and after: ``features``
    a list of ``(start, value)`` of shape ``(K, U, ...)`` per learned
    per-feature array, ``outputs`` the same of shape ``(K,)`` per per-output
    array, in the state's order."""

    columns: np.ndarray
    features: list
    outputs: list


def state_of_columns(state, columns):
    """The state of ``columns``: every per-feature array's (its constants'
    too) and a copy of every per-output array, in the state's order."""
    return [array[:, columns] if array.ndim > 1 else array.copy() for array in state]


def compact_block(X):
    """The columns of a CSR ``X``, sorted, and ``X`` over them renumbered (a
    ``csr_matrix`` of as many columns, which every engine's pass takes):
    compiled when numba can be imported."""
    try:
        from . import _rounds_numba
    except ImportError:
        columns, renumbered = np.unique(X.indices, return_inverse=True)
        return columns, over_columns(X.indptr, renumbered.astype(X.indices.dtype), X.data, columns)
    rows = np.arange(X.shape[0])
    compact = CSR(np.empty_like(X.indptr), np.empty_like(X.indices), np.empty_like(X.data))
    columns = np.empty(X.nnz, dtype=np.intp)
    table = new_table(X.nnz)
    count = _rounds_numba.compact_rows(X.indptr, X.indices, X.data, rows, table, columns, *compact)
    order = np.argsort(columns[:count])
    rank = np.empty(count, dtype=compact.indices.dtype)
    rank[order] = np.arange(count, dtype=compact.indices.dtype)
    return columns[:count][order], over_columns(
        compact.indptr, rank[compact.indices], compact.data, order
    )


def over_columns(indptr, indices, data, columns):
    """The CSR arrays of rows over ``columns`` renumbered, as a ``csr_matrix``."""
    return sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, len(columns)))


def learn_shard(engine, state_record, parameters, X, targets, sample_weight, start, layouts):
    """Learn the rows of ``X`` (its columns renumbered 0, 1, ...) from the
    state ``start`` of their columns (:func:`state_of_columns`'s, ``U``
    columns): returns the state learned (a ``state_record``, laid out by
    ``layouts`` as :meth:`ShardLearner._state_of`) and the rows' margins."""
    arrays, pair = [], []
    layouts = iter(layouts)
    for array in start:
        if array.dtype.kind != "f" or array.ndim == 1:
            arrays.append(array.copy())
            continue
        if not pair:
            pair = list(next(layouts)(array.shape, array.dtype))
        local = pair.pop(0)
        local[...] = array
        arrays.append(local)
    state = state_record._make(arrays)
    rows = np.arange(len(targets))
    return state, engine.learn(state, parameters, X, targets, sample_weight, rows)


def shard_changes(columns, start, learned_state):
    """A shard's :class:`ShardChanges` from its ``start`` and its learned state."""
    features, outputs = [], []
    for before, after in zip(start, learned_state):
        if after.dtype.kind == "f":
            (features if after.ndim > 1 else outputs).append((before, after))
    return ShardChanges(columns, features, outputs)


def merge_changes(first, then):
    """The :class:`ShardChanges` of the shards of ``first`` and then of ``then``,
    their changes added up (:func:`._math.merged`)."""
    # Both sorted: their union is their sorted concatenation without repeats
    # (np.union1d's hash table is many times slower on millions of columns).
    columns = np.sort(np.concatenate([first.columns, then.columns]))
    columns = columns[np.concatenate([[True], columns[1:] != columns[:-1]])]
    at_first = np.searchsorted(columns, first.columns)
    at_then = np.searchsorted(columns, then.columns)
    features = []
    for (start_a, value_a), (start_b, value_b) in zip(first.features, then.features):
        shape = (start_a.shape[0], len(columns), *start_a.shape[2:])
        start, value = np.empty(shape, start_a.dtype), np.empty(shape, value_a.dtype)
        start[:, at_first] = start_a
        start[:, at_then] = value[:, at_then] = start_b
        value[:, at_first] = value_a
        value[:, at_then] = merged_values(value[:, at_then], start_b, value_b)
        features.append((start, value))
    outputs = [
        (start, merged_values(value_a, start, value_b))
        for (start, value_a), (_, value_b) in zip(first.outputs, then.outputs)
    ]
    return ShardChanges(columns, features, outputs)


def apply_changes(state, changes):
    """Write the values of merged :class:`ShardChanges` into ``state`` (writable)."""
    features = [array for array in state if array.dtype.kind == "f" and array.ndim > 1]
    outputs = [array for array in state if array.dtype.kind == "f" and array.ndim == 1]
    for array, (_, value) in zip(features, changes.features):
        array[:, changes.columns] = value
    for array, (_, value) in zip(outputs, changes.outputs):
        array[...] = value
