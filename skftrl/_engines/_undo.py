"""What puts a state back: undo logs, state copies and column copies, for every family.

A state record (:mod:`._records`) holds learned arrays (floats): per-feature
arrays, features on axis 1, and per-output arrays of one dimension; nothing
here knows more of it than that, so that a family needs no log of its own. An
integer array of a state is a constant of it (a field-aware FM's field of
each feature), which no pass changes: the logs and copies leave it out.

- :func:`undo_record` makes what puts a state back if a training call fails
  after a pass (the estimators' ``unchanged_on_error``): an :class:`UndoLog`
  that the pass records in as it goes, or a :class:`StateCopy` made before it.
- :class:`ColumnCopy` keeps the state of some features, copied into as often
  as needed (early stopping's checkpoint of the best pass).
"""

import numpy as np

from ._rows import nonzeros_of_rows


def learned(state):
    """The state's learned arrays (floats), in its order."""
    return [array for array in state if array.dtype.kind == "f"]


def per_feature(state):
    """The state's learned per-feature arrays (features on axis 1), in its order."""
    return [array for array in learned(state) if array.ndim > 1]


def per_output(state):
    """The state's learned per-output arrays (one dimension), in its order."""
    return [array for array in learned(state) if array.ndim == 1]


def writable(array):
    """A writable view of ``array`` (the estimators keep their state read-only)."""
    view = array.view()
    view.flags.writeable = True
    return view


class UndoLog:
    """The values a pass overwrites, recorded as it goes, to put back on failure.

    A pass given a log records, before it changes the coordinates of some
    features, their old values in every per-feature array (:meth:`record`),
    in the order of the changes, or earlier (the numpy passes record a block
    of rows, or a batch, before learning it); the first record of a feature
    holds its value before the pass. ``old`` holds the records: for each
    per-feature array of shape ``(K, F, ...)``, one of shape ``(K, size, ...)``
    and the same dtype. A pass that records the non-zeros of ``rows`` one
    after the other, in order, writing into ``old`` itself, need not write
    their features: it says so with :meth:`recorded_in_row_order`, and the
    log finds them in ``X`` when it restores (the compiled passes, for which a
    record is a store beside the step's own); records with their features may
    follow (a parallel pass's rounds, after its first rows learned in order).
    The per-output arrays (K values) are copied whole when the log is made.

    ``size``, the number of non-zeros of ``rows`` of ``X``, bounds the number of records;
    :meth:`covers` tells whether a later pass over the same rows changes only
    coordinates this log restores (fit's passes shuffle one array of rows in
    place).
    """

    def __init__(self, state, X, rows, size):
        self.state, self.X, self.rows = state, X, rows
        # Allocated whole by the first record: the compiled passes make none.
        self.columns = np.empty(0, dtype=np.intp)
        self.arrays = per_feature(state)
        self.old = tuple(
            np.empty((array.shape[0], size, *array.shape[2:]), dtype=array.dtype)
            for array in self.arrays
        )
        self.used = 0
        # The number of first records made in row order (recorded_in_row_order).
        self.in_row_order = 0
        self.rows_in_record_order = None
        self.outputs = [array.copy() for array in per_output(state)]

    def covers(self, X, rows):
        return X is self.X and rows is self.rows

    def record(self, columns, gathered=None):
        """Record the current values of the features ``columns`` (m,), before a change.

        ``gathered``, when the pass has read them already, holds them: one
        array per per-feature array, the features first (``(m, K, ...)``, or
        ``(m,)`` with one output); otherwise they are read from the state.
        """
        end = self.used + len(columns)
        if len(self.columns) < end:
            self.columns = np.empty(self.old[0].shape[1], dtype=np.intp)
        self.columns[self.used : end] = columns
        # A mini-batch pass records each batch: a few numpy calls, no more.
        for i, (old, array) in enumerate(zip(self.old, self.arrays)):
            records = old[:, self.used : end]
            if gathered is None:
                records[...] = array[:, columns]
            elif gathered[i].ndim == 1:  # one output's
                records[0] = gathered[i]
            else:
                records[...] = gathered[i].swapaxes(0, 1)
        self.used = end

    def recorded_in_row_order(self, count):
        """The pass recorded the old values of the first ``count`` non-zeros of
        ``rows`` (row by row, each row's in the order of ``X``), and not their
        features. The rows' order is copied: fit shuffles them in place
        between passes."""
        self.used = self.in_row_order = count
        self.rows_in_record_order = self.rows.copy()

    def recorded_columns(self):
        """The feature of each record."""
        rows = self.rows_in_record_order
        if rows is None:
            return self.columns[: self.used]
        columns, _, _ = nonzeros_of_rows(self.X, rows)
        in_order = columns[: self.in_row_order]
        if self.used == self.in_row_order:
            return in_order
        return np.concatenate([in_order, self.columns[self.in_row_order : self.used]])

    def restore(self):
        """Write the recorded values back: the state is as before the pass."""
        columns = self.recorded_columns()
        _, first = np.unique(columns, return_index=True)
        for array, old in zip(self.arrays, self.old):
            writable(array)[:, columns[first]] = old[:, first]
        for array, copy in zip(per_output(self.state), self.outputs):
            writable(array)[...] = copy


class StateCopy:
    """A copy of every learned array of a state, made before a pass, to put back on
    failure: the record :func:`undo_record` makes instead of an
    :class:`UndoLog` when it is no larger. The pass then records nothing."""

    def __init__(self, state, X, rows):
        self.state, self.X, self.rows = state, X, rows
        self.copies = [array.copy() for array in learned(state)]

    def covers(self, X, rows):
        return X is self.X and rows is self.rows

    def restore(self):
        for array, copy in zip(learned(self.state), self.copies):
            writable(array)[...] = copy


def undo_record(state, X, rows, whole_state=None):
    """What puts ``state`` back if a call fails after a pass over ``rows`` of
    ``X``: ``(record, log)``, where ``log`` is what the pass records in as it
    goes (its ``undo``), or None.

    A :class:`StateCopy` (and no log) when the state has no more features
    than the rows have non-zeros: the copy is then no larger than an
    :class:`UndoLog`, and it is made once before the pass rather than at each
    step of it. ``whole_state`` True or False chooses instead (tests run both
    ways).
    """
    size = int(np.diff(X.indptr)[rows].sum())
    if whole_state is None:
        whole_state = per_feature(state)[0].shape[1] <= size
    if whole_state:
        return StateCopy(state, X, rows), None
    log = UndoLog(state, X, rows, size)
    return log, log


class ColumnCopy:
    """A copy of a state's features ``columns`` (every per-feature array's) and
    of its per-output arrays, made once and copied into in place: its size is
    the columns', not the whole width of a hashed model. Putting it back is
    right when only those columns were learned from since it was taken."""

    def __init__(self, state, columns):
        self.columns = columns
        self.arrays = [
            array[:, columns] if array.ndim > 1 else array.copy() for array in learned(state)
        ]

    def keep(self, state):
        """Copy ``state`` into the copy."""
        for kept, array in zip(self.arrays, learned(state)):
            # Not np.take(..., out=): on strided state views it copies the
            # whole array first.
            kept[...] = array[:, self.columns] if array.ndim > 1 else array

    def restore(self, state):
        """Write the copy back into ``state`` (writable arrays)."""
        for kept, array in zip(self.arrays, learned(state)):
            if array.ndim > 1:
                array[:, self.columns] = kept
            else:
                array[...] = kept
