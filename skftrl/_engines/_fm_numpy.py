"""Factorization machines on the engine layer: their state and parameters
records, the initial factors, the exact per-row pass in numpy, and the
margins of many rows (docs: :doc:`fm_math`).

An FM is the linear model plus, per output, a vector of ``k`` factors per
feature. Its state (:class:`FMState`) is the linear model's four arrays plus
the factors' ``z_factors`` and ``n_factors`` of shape (K, F, k), features on
axis 1 (so that :class:`~skftrl._engines.StateCheckpoint` covers them). Every
formula of the update is :mod:`._math`'s and :mod:`._losses`': the closed-form
weight (for the factors with ``l1 = l2 = 0`` at the rate scale
``factor_learning_rate``), the sigma/z/n step, the loss derivative. Only the
model's own parts are written here: the pairwise term of the margin and the
factors' gradient.

The FM engines have the linear engines' interface (``learn``, ``weights``,
``margins``) plus ``factors``; :func:`get_fm_engine` chooses one. The
mini-batch pass is in :mod:`._fm_batch`.
"""

import functools
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from . import NumpyEngine, Parameters, UndoLog, check_engine
from ._math import (
    clip_gradient,
    compiled_power,
    constants,
    gather,
    intercept_weights,
    max_abs_gradient,
    rate_root,
    rate_root_scalar,
    smallest_stored_n,
    step_intercepts_by_derivatives,
    update_coordinates,
    weights,
    weights_from_state,
)

# A term v_{i,f} x_i is clipped to this magnitude before it is summed and
# squared, so that the pairwise term of any finite row stays far inside
# float64 (its squares are at most 1e100 times the row's non-zeros squared),
# and so do the margin and the squared-error loss of the row.
MAX_ABS_FACTOR_TERM = 1e50


class FMState(NamedTuple):
    """The learned state of a factorization machine (see the module's docstring)."""

    z: np.ndarray
    n: np.ndarray
    z_intercept: np.ndarray
    n_intercept: np.ndarray
    z_factors: np.ndarray
    n_factors: np.ndarray


@dataclass(frozen=True)
class FMParameters(Parameters):
    """:class:`~skftrl._engines.Parameters` plus the factors' rate scale and penalty."""

    factor_learning_rate: float = 0.1
    factor_l2: float = 0.0

    def of_factors(self):
        """The parameters of the factors' closed form: their rate, no l1 or l2."""
        return replace(self, learning_rate=self.factor_learning_rate, l1=0.0, l2=0.0)


# ---------------------------------------------------------------- the state
class FMUndoLog(UndoLog):
    """:class:`~skftrl._engines.UndoLog` plus the factors: each record also
    holds the old ``z`` and ``n`` of the column's factors, shape (K, k)."""

    def __init__(self, state, X, rows, size):
        super().__init__(state, X, rows, size)
        shape = (size, state.z_factors.shape[0], state.z_factors.shape[2])
        self.z_factors = np.empty(shape, dtype=np.float64)
        self.n_factors = np.empty(shape, dtype=np.float64)

    def record(self, columns, z, n, z_factors, n_factors):
        """Record the old ``z``, ``n`` (m, K) and the factors' (m, K, k) of ``columns``."""
        start = self.used
        super().record(columns, z, n)
        self.z_factors[start : self.used] = z_factors
        self.n_factors[start : self.used] = n_factors

    def restore(self):
        super().restore()
        columns = self.recorded_columns()
        _, first = np.unique(columns, return_index=True)
        for array, old in (
            (self.state.z_factors, self.z_factors),
            (self.state.n_factors, self.n_factors),
        ):
            writable = array.view()
            writable.flags.writeable = True
            writable.transpose(1, 0, 2)[columns[first]] = old[first]


def empty_factor_state(shape, dtype):
    """Uninitialized ``(z, n)`` of ``shape``, as views of one buffer.

    Views, as the linear state's (:func:`~skftrl._engines.new_state`), so that
    the estimator can keep the arrays read-only and still hand a writable
    view to a pass.
    """
    buffer = np.empty((2, *shape), dtype=dtype)
    return buffer[0], buffer[1]


def new_factor_state(
    n_outputs,
    n_features,
    n_components,
    dtype,
    parameters,
    *,
    init_stdev,
    random_state,
    initial_n=0.0,
):
    """The factors' fresh ``(z, n)``, each of shape (K, F, k) (docs: "Initial factors"),
    and the record from which :func:`initial_factor_state` makes them again.

    ``v0 = init_stdev * N(0, 1)``, drawn as
    ``np.random.default_rng(random_state).standard_normal((K, F, k))`` for an
    int or None ``random_state`` (a ``RandomState`` instance draws with its
    own ``standard_normal``), is stored as
    ``z0 = -v0 * (beta + rate_root(n0)) / factor_learning_rate`` with
    ``n0 = initial_n``, so that the closed form gives ``v0``.

    The record (a dict of arrays, or None for a generator other than
    ``RandomState``'s and ``default_rng``'s) holds the generator's state before
    the draw and the scale: a saved model stores only the factors training has
    changed, and the others are drawn again when it is loaded.
    """
    shape = (n_outputs, n_features, n_components)
    if isinstance(random_state, np.random.RandomState):
        generator = random_state
    else:
        generator = np.random.default_rng(random_state)
    root_n = rate_root_scalar(float(initial_n), compiled_power(parameters.learning_rate_power))
    denominator = (parameters.beta + root_n) / parameters.factor_learning_rate
    record = _generator_record(generator)
    if record is not None:
        record["scale"] = np.array([init_stdev, denominator, initial_n], dtype=np.float64)
    z, n = _scaled_factor_state(
        generator.standard_normal(shape), init_stdev, denominator, initial_n, dtype
    )
    return z, n, record


def initial_factor_state(record, shape, dtype):
    """The ``(z, n)`` that :func:`new_factor_state` made with ``record``, bit for bit."""
    if "key" in record:  # a RandomState's Mersenne twister
        position, has_gauss = (int(value) for value in record["position"])
        generator = np.random.RandomState()
        generator.set_state(
            ("MT19937", record["key"], position, has_gauss, float(record["gauss"][0]))
        )
    else:  # PCG64, default_rng's
        state_high, state_low, inc_high, inc_low, has_uint32, uinteger = (
            int(word) for word in record["words"]
        )
        bit_generator = np.random.PCG64()
        bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": state_high << 64 | state_low, "inc": inc_high << 64 | inc_low},
            "has_uint32": has_uint32,
            "uinteger": uinteger,
        }
        generator = np.random.Generator(bit_generator)
    init_stdev, denominator, initial_n = (float(value) for value in record["scale"])
    return _scaled_factor_state(
        generator.standard_normal(shape), init_stdev, denominator, initial_n, dtype
    )


def _scaled_factor_state(draws, init_stdev, denominator, initial_n, dtype):
    """``z0`` and ``n0`` from the standard normal ``draws`` (see new_factor_state)."""
    z, n = empty_factor_state(draws.shape, dtype)
    np.multiply(-(init_stdev * draws), denominator, out=z, casting="same_kind")
    n[...] = initial_n
    return z, n


def _generator_record(generator):
    """The state of ``generator`` as a dict of integer arrays, or None when it
    is neither a ``RandomState`` nor a ``Generator`` of ``PCG64``."""
    if isinstance(generator, np.random.RandomState):
        name, key, position, has_gauss, gauss = generator.get_state()
        if name != "MT19937":
            return None
        return {
            "key": np.array(key, dtype=np.uint32),
            "position": np.array([position, has_gauss], dtype=np.int64),
            "gauss": np.array([gauss], dtype=np.float64),
        }
    if not isinstance(generator.bit_generator, np.random.PCG64):
        return None
    state = generator.bit_generator.state
    words = (
        state["state"]["state"] >> 64,
        state["state"]["state"] & (2**64 - 1),
        state["state"]["inc"] >> 64,
        state["state"]["inc"] & (2**64 - 1),
        state["has_uint32"],
        state["uinteger"],
    )
    return {"words": np.array(words, dtype=np.uint64)}


def factors_from_state(state, parameters):
    """The factors ``v`` of shape (K, F, k) from the state, in closed form."""
    return weights_from_state(state.z_factors, state.n_factors, parameters.of_factors())


# ------------------------------------------------- the model's formulas
def pairwise_term(sums, squares):
    """``1/2 sum_f (s_f^2 - sum_i v_{i,f}^2 x_i^2)``, in this order (Rendle 2010,
    lemma 3.1), from ``sums`` ``s_f`` and ``squares`` ``sum_i v_{i,f}^2 x_i^2``
    of the same shape (..., k): the last axis is the components'."""
    return 0.5 * (sums * sums - squares).sum(axis=-1)


def factor_terms(values, factors):
    """The terms ``v_{i,f} x_i`` of non-zeros ``values`` (m,) with their
    factors (m, K, k), clipped to :data:`MAX_ABS_FACTOR_TERM`: shape (m, K, k)."""
    terms = values[:, None, None] * factors
    return clip_gradient(terms, MAX_ABS_FACTOR_TERM)


def factor_gradients(gradient, sums, terms, factors, factor_l2, bound):
    """``g_{v_{i,f}} = d x_i (s_f - v_{i,f} x_i) + factor_l2 v_{i,f}`` of each
    non-zero, clipped to ``bound``, shape (m, K, k).

    ``gradient`` is each non-zero's clipped ``d x_i`` (m, K); ``sums`` the
    ``s_f`` of its row (broadcast to (m, K, k)); ``terms`` and ``factors``
    its :func:`factor_terms` and ``v`` (m, K, k).
    """
    factor_gradient = gradient[:, :, None] * (sums - terms)
    if factor_l2:
        factor_gradient += factor_l2 * factors
    return clip_gradient(factor_gradient, bound)


def pairwise_margins(X, factors):
    """The pairwise term of each row of ``X`` for each output: shape (n_samples, K).

    :func:`pairwise_term` per output, with ``s = X V`` and the squares
    ``(X * X) (V * V)``: two matrix products over all the rows at once.
    """
    squared_X = X.multiply(X).tocsr() if sp.issparse(X) else X * X
    pairwise = np.empty((X.shape[0], factors.shape[0]), dtype=np.float64)
    for output, V in enumerate(factors):
        sums = np.asarray(X @ V)
        pairwise[:, output] = pairwise_term(sums, np.asarray(squared_X @ (V * V)))
    return pairwise


# ------------------------------------------------------------- the pass
def learn(state, parameters, X, targets, sample_weight, rows, undo=None):
    """One exact pass of the FM over ``rows`` of ``X``, updating ``state`` in place.

    Rows are learned one at a time in the order given (docs: "Learning from one
    row"); only the row's non-zero features (their weights and factors) and
    the intercepts are read and written. Generic in the number of outputs K;
    returns the margins of the rows before each was learned, (len(rows), K).
    With an :class:`FMUndoLog` as ``undo``, the old values of every
    coordinate are recorded in it before they change.
    """
    z, n, z_intercept, n_intercept, z_factors, n_factors = state
    n_outputs = z.shape[0]
    # Feature-major views: a row's coordinates are then rows of these.
    z_by_feature, n_by_feature = z.T, n.T
    z_factors_by_feature = z_factors.transpose(1, 0, 2)
    n_factors_by_feature = n_factors.transpose(1, 0, 2)
    indptr, indices, data = X.indptr, X.indices, X.data
    loss, factor_l2 = parameters.loss, parameters.factor_l2
    power = parameters.learning_rate_power
    rates, factor_rates = constants(parameters), constants(parameters.of_factors())
    bound = max_abs_gradient(z.dtype)
    smallest_n = smallest_stored_n(z.dtype)
    largest_value = float(np.abs(data).max()) if data.size else 0.0
    margins = np.empty((len(rows), n_outputs), dtype=np.float64)
    # The intercepts' z and n, as lists of K floats (see _math.step_intercepts).
    intercepts = z_intercept.tolist(), n_intercept.tolist()
    # Overflow to inf is expected on unscaled input, and is clipped.
    with np.errstate(over="ignore"):
        for position, row in enumerate(rows):
            start, end = indptr[row], indptr[row + 1]
            columns = indices[start:end].astype(np.intp, copy=False)
            values = data[start:end].astype(np.float64, copy=False)
            # Step 1: the weights and factors of the row, before the row.
            z_row, n_row = gather(z_by_feature, columns), gather(n_by_feature, columns)
            root_n_row = rate_root(n_row, power)
            w_row = weights(z_row, root_n_row, rates)  # (m, K)
            v_z_row = gather(z_factors_by_feature, columns)
            v_n_row = gather(n_factors_by_feature, columns)
            root_v_n_row = rate_root(v_n_row, power)
            v_row = weights(v_z_row, root_v_n_row, factor_rates)  # (m, K, k)
            w_intercept, root_n_intercept = intercept_weights(*intercepts, parameters)
            # The margin: s_f = sum_i v_{i,f} x_i, then the pairwise term.
            terms = factor_terms(values, v_row)
            sums = terms.sum(axis=0)  # (K, k)
            margin = margins[position : position + 1]  # a view, shape (1, K)
            np.add(values @ w_row, w_intercept, out=margin[0])
            margin[0] += pairwise_term(sums, (terms * terms).sum(axis=0))

            # Step 2: the loss derivative, weighted.
            derivative = sample_weight[row] * loss.derivative(margin, targets[row : row + 1])[0]
            derivatives = derivative.tolist()
            # Step 3: the gradients, all from the weights of step 1.
            gradient = values[:, None] * derivative  # d x_i, (m, K)
            if max(map(abs, derivatives)) * largest_value > bound:
                clip_gradient(gradient, bound)
            factor_gradient = factor_gradients(gradient, sums, terms, v_row, factor_l2, bound)
            # Step 4: the FTRL-Proximal step of every coordinate the row touches.
            if undo is not None:
                undo.record(columns, z_row, n_row, v_z_row, v_n_row)
            z_by_feature[columns], n_by_feature[columns] = update_coordinates(
                z_row, n_row, root_n_row, w_row, gradient, gradient * gradient, rates, smallest_n
            )
            z_factors_by_feature[columns], n_factors_by_feature[columns] = update_coordinates(
                v_z_row,
                v_n_row,
                root_v_n_row,
                v_row,
                factor_gradient,
                factor_gradient * factor_gradient,
                factor_rates,
                smallest_n,
            )
            if parameters.fit_intercept:
                step_intercepts_by_derivatives(
                    *intercepts, root_n_intercept, w_intercept, derivatives, bound, parameters
                )
    z_intercept[:], n_intercept[:] = intercepts
    return margins


# ----------------------------------------------------------- the engines
class FactorizationEngine:
    """What an FM engine adds to a linear engine (a mixin): the factors, and
    the pairwise term in the margins."""

    def factors(self, state, parameters):
        """The whole state's factors, float64 of shape (K, F, k)."""
        return factors_from_state(state, parameters)

    def margins(self, X, state, parameters, coef=None):
        margins = super().margins(X, state, parameters, coef)
        if sp.issparse(X) and X.nnz < X.shape[1]:
            # Only the factors of the columns X reads: a few rows of a wide
            # model need far fewer than all K * F * k. X is renumbered to
            # those columns; each row's products are summed in the same order.
            columns, renumbered = np.unique(X.indices, return_inverse=True)
            X = sp.csr_matrix((X.data, renumbered, X.indptr), shape=(X.shape[0], len(columns)))
            factors = weights_from_state(
                state.z_factors[:, columns], state.n_factors[:, columns], parameters.of_factors()
            )
        else:
            factors = self.factors(state, parameters)
        margins += pairwise_margins(X, factors)
        return margins


class FMNumpyEngine(FactorizationEngine, NumpyEngine):
    """The FM's exact per-row pass in numpy: the reference FM engine."""

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        return learn(state, parameters, X, targets, sample_weight, rows, undo)


FM_NUMPY = FMNumpyEngine()


@functools.cache
def _fm_numba_engine():
    """The compiled FM engine, or None when numba cannot be imported."""
    try:
        from ._fm_numba import FMNumbaEngine
    except ImportError:
        return None
    return FMNumbaEngine()


def get_fm_engine(name, batch_size=1):
    """The FM engine for ``engine=name`` and ``batch_size``, chosen as
    :func:`~skftrl._engines.get_engine` chooses the linear one, with its
    errors: the exact per-row pass compiled with numba or in numpy, and for
    ``batch_size > 1`` the mini-batch pass in numpy (:mod:`._fm_batch`), with
    the weights computed as the per-row engine computes them."""
    check_engine(name, batch_size)  # numba with mini-batches, or without numba
    compiled = None if name == "numpy" else _fm_numba_engine()
    exact = compiled or FM_NUMPY
    if batch_size > 1:
        from ._fm_batch import FMNumpyBatchEngine  # it imports this module

        return FMNumpyBatchEngine(batch_size, exact)
    return exact


def fm_prediction_engine(name):
    """The FM engine whose weights and factors predictions use (never raises)."""
    return get_fm_engine("numpy" if name == "numpy" else "auto")
