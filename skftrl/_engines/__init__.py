"""The engine layer: how a model learns from rows and computes its weights.

Nothing here knows about estimators or scikit-learn. An estimator talks to an
engine through three calls, all taking a state record and a
:class:`Parameters` record, never an argument order:

``engine = get_engine(name, batch_size)``
    ``name`` is ``"auto"``, ``"numpy"`` or ``"numba"``. Raises the estimators'
    ``ValueError`` for ``"numba"`` with ``batch_size > 1`` and ``ImportError``
    for ``"numba"`` without numba (:func:`check_engine` raises the same,
    for parameter validation).
``engine.learn(state, parameters, X, targets, sample_weight, rows, undo=None)``
    One pass over ``rows`` of the canonical CSR ``X`` (sorted, summed
    indices), in the order given, updating ``state`` in place (its arrays
    must be writable); returns each row's margins *before* it was learned
    from, shape ``(len(rows), K)`` (progressive validation). ``targets`` are
    0/1 for ``log_loss``, class indices for ``multinomial``, reals otherwise;
    ``sample_weight`` multiplies each row's loss derivative. With an
    :class:`UndoLog` as ``undo``, the pass records in it the old values of
    every coordinate before changing it.
``engine.weights(state, parameters)``
    The closed-form weights of the whole state, float64 of shape ``(K, F)``.
``engine.margins(X, state, parameters, coef=None)``
    ``X @ coef.T + intercepts``, shape ``(n_rows, K)``; without ``coef``, from
    only the weights the non-zeros of a CSR ``X`` read (for a few rows of a
    wide model, far fewer than all), with identical results.

The state of a linear model with ``K`` outputs over ``F`` features is a
:class:`LinearState`: ``z``, ``n`` of shape ``(K, F)`` (float64 or float32,
computed on in float64; fastest as :func:`new_state` lays them out) and the
intercepts' ``z_intercept``, ``n_intercept`` of shape ``(K,)`` (float64).
:func:`undo_record` makes what puts a state back if the call fails after a
pass: a :class:`StateCopy`, or an :class:`UndoLog` that the pass records in.

Where things are (each formula once):

- :mod:`._math`: the state layout, the closed-form weight, the
  sigma/z/n step, the rate's root and every numeric guard; each formula as a
  scalar function on floats (numba compiles the same function) and as an
  array function, proven identical by tests/test_math.py;
- :mod:`._losses`: one record per loss (derivative, value, inverse link,
  derivative bound) and the losses' scalar forms;
- :mod:`._numpy_exact`: the exact per-row pass in numpy, any number of
  outputs: the readable reference engine;
- :mod:`._numpy_batch`: the mini-batch pass (``batch_size > 1``);
- :mod:`._numba_exact`: the exact per-row pass compiled with numba (optional);
- :mod:`._prediction`: the cache of the weights between predictions.

Another model family (factorization machines) plugs in the same way: a state
record of its own that adds arrays (e.g. ``z_factors``, ``n_factors`` of shape
``(K, F, k)``, with an undo log of its own),
a parameters record extending :class:`Parameters` (its own rate, no l1/l2 for
the factors: pass ``l1 = l2 = 0`` to the formulas), and passes that reuse
:func:`._math.weight` / :func:`._math.step` (scalar, numba-compilable: call
them with ``compiled_power(learning_rate_power)``), :func:`._math.weights` /
:func:`._math.update_coordinates` (arrays, with a :func:`._math.constants`
record made from a :class:`Parameters` holding the factors' rate),
:func:`._math.intercept_weights` / :func:`._math.step_intercepts`, the guards,
and the loss records (``loss.derivative`` on arrays, :func:`._losses.scalar_derivative`
with ``loss.code`` and :func:`._losses.softmax_derivative` on floats). An
engine is any object with ``learn``, ``weights`` and ``margins`` as above.
"""

import functools
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import _numpy_batch, _numpy_exact
from ._losses import Loss, get_loss
from ._math import PAPER_LEARNING_RATE_POWER, intercept_weights, new_state, weights_from_state

__all__ = [
    "NumpyEngine",
    "LinearState",
    "Loss",
    "Parameters",
    "UndoLog",
    "check_engine",
    "get_engine",
    "get_loss",
    "new_state",
]


@dataclass(frozen=True)
class Parameters:
    """The hyper-parameters of a pass and of the weights, one frozen record.

    Compared by value: the prediction cache keeps weights while it is equal.
    """

    loss: Loss
    learning_rate: float
    beta: float
    l1: float
    l2: float
    learning_rate_power: float = PAPER_LEARNING_RATE_POWER
    fit_intercept: bool = True


class LinearState(NamedTuple):
    """The learned state of a linear model (see the module's docstring)."""

    z: np.ndarray
    n: np.ndarray
    z_intercept: np.ndarray
    n_intercept: np.ndarray


class UndoLog:
    """The values a pass overwrites, recorded as it goes, to put back on failure.

    A pass given a log records, before it changes a coordinate of ``z`` and
    ``n``, the coordinate's old values (``old[:, :, 0]`` and ``old[:, :, 1]``,
    side by side) and its feature, in the order of the changes, or earlier
    (the numpy per-row pass records a block of rows at once, before learning
    them); the first record of a feature holds its value before the pass. A
    pass that records the non-zeros of ``rows`` one after the other, in
    order, need not write their features: it says so with
    :meth:`recorded_in_row_order`, and the log finds them in ``X`` when it
    restores (the compiled pass, for which a record is two stores beside the
    step's own). The intercepts' arrays (K values)
    are copied whole when the log is made.

    ``size``, the number of non-zeros of ``rows`` of ``X``, bounds the number of records;
    :meth:`covers` tells whether a later pass over the same rows changes only
    coordinates this log restores (fit's passes shuffle one array of rows in
    place).
    """

    def __init__(self, state, X, rows, size):
        self.state, self.X, self.rows = state, X, rows
        n_outputs = state.z.shape[0]
        # Allocated whole by the first record: the compiled pass makes none.
        self.columns = np.empty(0, dtype=np.intp)
        self.old = np.empty((size, n_outputs, 2), dtype=np.float64)
        self.used = 0
        self.rows_in_record_order = None
        self.intercepts = (state.z_intercept.copy(), state.n_intercept.copy())

    def covers(self, X, rows):
        return X is self.X and rows is self.rows

    def record(self, columns, z, n):
        """Record the old ``z``, ``n`` (shape (m,) or (m, K)) of ``columns`` (m,)."""
        end = self.used + len(columns)
        if len(self.columns) < end:
            self.columns = np.empty(len(self.old), dtype=np.intp)
        self.columns[self.used : end] = columns
        old = self.old[self.used : end]
        old[:, :, 0] = z.reshape(old.shape[:2])
        old[:, :, 1] = n.reshape(old.shape[:2])
        self.used = end

    def recorded_in_row_order(self, count):
        """The pass recorded the old values of the first ``count`` non-zeros of
        ``rows`` (row by row, each row's in the order of ``X``), and not their
        features. The rows' order is copied: fit shuffles them in place
        between passes."""
        self.used = count
        self.rows_in_record_order = self.rows.copy()

    def recorded_columns(self):
        """The feature of each record."""
        rows = self.rows_in_record_order
        if rows is None:
            return self.columns[: self.used]
        columns, _, _ = _numpy_exact.nonzeros_of_rows(self.X, rows)
        return columns[: self.used]

    def restore(self):
        """Write the recorded values back: the state is as before the pass."""
        columns = self.recorded_columns()
        _, first = np.unique(columns, return_index=True)
        for array, index in ((self.state.z, 0), (self.state.n, 1)):
            writable = array.view()
            writable.flags.writeable = True
            writable.T[columns[first]] = self.old[first, :, index]
        self.state.z_intercept[...], self.state.n_intercept[...] = self.intercepts


class StateCopy:
    """A copy of every array of a state, made before a pass, to put back on
    failure: the record :func:`undo_record` makes instead of an
    :class:`UndoLog` when it is no larger. The pass then records nothing."""

    def __init__(self, state, X, rows):
        self.state, self.X, self.rows = state, X, rows
        self.copies = [array.copy() for array in state]

    def covers(self, X, rows):
        return X is self.X and rows is self.rows

    def restore(self):
        for array, copy in zip(self.state, self.copies):
            writable = array.view()
            writable.flags.writeable = True
            writable[...] = copy


def undo_record(state, X, rows, log_type=UndoLog, whole_state=None):
    """What puts ``state`` back if a call fails after a pass over ``rows`` of
    ``X``: ``(record, log)``, where ``log`` is what the pass records in as it
    goes (its ``undo``), or None.

    A :class:`StateCopy` (and no log) when the state has no more features
    than the rows have non-zeros: the copy is then no larger than a log of
    ``log_type`` (an :class:`UndoLog` or a subclass), and it is made once
    before the pass rather than at each step of it. ``whole_state`` True or
    False chooses instead (tests run both ways).
    """
    size = int(np.diff(X.indptr)[rows].sum())
    if whole_state is None:
        whole_state = state.z.shape[1] <= size
    if whole_state:
        return StateCopy(state, X, rows), None
    log = log_type(state, X, rows, size)
    return log, log


class NumpyEngine:
    """The exact per-row pass and the weights in numpy: the reference engine.

    Other engines subclass it and replace ``learn`` or ``weights``.
    """

    name = "numpy"
    # The prediction cache's rule (see _prediction.py): the cost of computing
    # one weight of the whole state, relative to reading one non-zero's weight.
    whole_weights_cost = 1 / 4

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        return _numpy_exact.learn(state, parameters, X, targets, sample_weight, rows, undo)

    def weights(self, state, parameters):
        return weights_from_state(state.z, state.n, parameters)

    def margins(self, X, state, parameters, coef=None):
        intercepts = intercept_weights(
            state.z_intercept.tolist(), state.n_intercept.tolist(), parameters
        )[0]
        if coef is None:
            margins = _numpy_exact.margins_of_read_weights(X, state, parameters)
        else:
            margins = _numpy_exact.margins_from_weights(X, coef)
        margins += intercepts  # a new array, added to in place
        if np.isfinite(margins).all():
            return margins
        # A sum of products overflowed: recomputed from rescaled products.
        coef = self.weights(state, parameters) if coef is None else coef
        return _numpy_exact.finite_margins(margins, X, coef, intercepts)


class NumpyBatchEngine(NumpyEngine):
    """The mini-batch pass; weights as ``weights_engine`` computes them."""

    def __init__(self, batch_size, weights_engine):
        self.batch_size = batch_size
        self.weights_engine = weights_engine
        self.name = weights_engine.name
        self.whole_weights_cost = weights_engine.whole_weights_cost

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        return _numpy_batch.learn(
            state, parameters, X, targets, sample_weight, rows, self.batch_size, undo
        )

    def weights(self, state, parameters):
        return self.weights_engine.weights(state, parameters)


NUMPY = NumpyEngine()


@functools.cache
def _numba_engine():
    """The numba engine, or None when numba cannot be imported.

    Cached: a failing import is slow, and prediction asks on every call.
    numba installed but failing in another way (an incompatible version, a
    broken install) warns once, and the numpy engine is used.
    """
    try:
        from ._numba_exact import NumbaEngine
    except ImportError:
        return None
    except Exception as error:
        warnings.warn(
            f"numba is installed, but skftrl's numba engine failed to load "
            f"({error!r}); the numpy engine is used instead.",
            stacklevel=2,
        )
        return None
    return NumbaEngine()


def check_engine(name, batch_size):
    """Raise as :func:`get_engine` would for this engine and batch size."""
    get_engine(name, batch_size)


def get_engine(name, batch_size=1):
    """The engine for ``engine=name`` and ``batch_size``.

    ``"auto"`` runs the exact per-row algorithm compiled with numba when numba
    can be imported, and numpy otherwise; a mini-batch (``batch_size > 1``)
    always runs on numpy, with the weights computed by numba unless
    ``name="numpy"``.
    """
    if name == "numba" and batch_size > 1:
        raise ValueError(
            "engine='numba' runs the exact per-row algorithm and needs "
            f"batch_size=1; got batch_size={batch_size}. Use "
            "engine='numpy' (or 'auto') for mini-batches."
        )
    compiled = None if name == "numpy" else _numba_engine()
    if name == "numba" and compiled is None:
        raise ImportError(
            "engine='numba' needs numba, which is not installed or failed "
            "to import; install it with: pip install 'skftrl[fast]'"
        )
    exact = compiled or NUMPY
    if batch_size > 1:
        return NumpyBatchEngine(batch_size, exact)
    return exact


def prediction_engine(name):
    """The engine whose weights predictions use: numba's when it can be
    imported, unless ``name="numpy"``. Never raises: a model trained with
    numba predicts where numba is not installed."""
    return get_engine("numpy" if name == "numpy" else "auto")
