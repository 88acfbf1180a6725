"""The exact per-row pass of the linear model compiled with numba (``engine="numba"``).

The numpy per-row pass (:mod:`._linear_numpy`) written as loops over a row's
non-zeros, so that numba compiles it to machine code; its formulas are
:mod:`._math`'s and :mod:`._losses`' scalar functions, compiled unchanged
(:mod:`._compile`). Each row is three phases: its coordinates are gathered
into contiguous row buffers, computed on by loops over the row padded to
whole vectors (which compile to vector instructions with each element's
operations those of the scalar code, so the bits are the same), and
scattered back. A family that adds interaction terms to the linear model
(the factorization machine, :mod:`._fm_numba`) learns with the same pass
through its hooks. Importing this module needs numba.
"""

import math
import types

import numpy as np

from . import _compile, _math
from ._compile import (
    clip,
    compile,
    compiled_rates,
    longest_row,
    padded,
    prefetch_row,
    rate_root,
    rescaled_margin,
    scalar_derivative,
    softmax_derivative,
    step,
    weight,
)
from ._linear_numpy import LinearNumpyEngine
from ._math import new_state
from ._undo import writable

# ------------------------------------------------ the interactions' hooks
# A family whose model is the linear model plus terms of interacting features
# (the factorization machine) has a compiled pass of its own made from this
# one by pass_with_interactions: the same function, in which the three hooks
# below are the family's functions (compiled with inline="always", so that
# numba inlines them), given the family's ``interactions`` record (a
# NamedTuple of its state, rates and row buffers). The linear model's pass
# gets None, for which its calls to the hooks compile to nothing. The linear
# model's per-row steps are written in the pass itself rather than as inlined
# functions of their own: numba would take a reference to each of their
# arrays at every row, a cost as large as the arithmetic of a short row.


def add_interactions(interactions, K, start, end, indices, data, margin, undo, recorded):
    """Add the row's interaction terms (its non-zeros ``start:end`` of
    ``indices`` and ``data``) to its ``margin`` (K,), from the coordinates
    before the row, keeping what the step needs in ``interactions``. ``undo``
    is None for no record, else an UndoLog's ``old``: the coordinates read are
    recorded there as they are read (once, where they are already loaded), at
    index ``recorded`` on, in its arrays that follow the linear model's two."""
    raise NotImplementedError("a hook of the compiled pass (see pass_with_interactions)")


def step_interactions(
    interactions, K, start, end, indices, data, derivative, bound, smallest_n, largest
):
    """The step of the row's interaction coordinates from its loss
    ``derivative`` (K,) times its weight."""
    raise NotImplementedError("a hook of the compiled pass (see pass_with_interactions)")


def prefetch_interactions(interactions, indptr, indices, rows, position, rows_ahead):
    """Prefetch the interaction coordinates of the row ``rows_ahead`` after
    ``position`` (see _compile.prefetch_row)."""
    raise NotImplementedError("a hook of the compiled pass (see pass_with_interactions)")


@compile
def _pass(
    indptr,
    indices,
    data,
    targets,
    sample_weight,
    rows,
    state,
    loss_code,
    rates,
    fit_intercept,
    epsilon,
    bound,
    smallest_n,
    largest,
    margins,
    several_outputs,
    rows_ahead,
    undo,
    interactions,
):
    """The pass over ``rows``: each row's margins into ``margins`` (len(rows), K),
    then its step. Returns the number of records in ``undo``.

    ``state`` is the tuple (z_by_feature, n_by_feature, z_intercept,
    n_intercept), the first two of shape (F, K); ``rates`` the tuple
    (learning_rate, beta, l1, l2, learning_rate_power). ``several_outputs``
    is None for one output: numba then compiles a version in which K is the
    constant 1, and its loops over outputs disappear. ``rows_ahead`` is None
    for no prefetching (pruned when compiled, too). ``undo`` is None for no
    record, else an UndoLog's ``old``, into whose first two arrays (K, size)
    the old z and n of each non-zero are recorded before its step, in the
    order of the rows (UndoLog.recorded_in_row_order). ``interactions`` is
    None for the linear model, else a family's record (see the hooks above).
    """
    if several_outputs is None:
        K = 1
    else:
        K = state[0].shape[1]
    learning_rate, beta, l1, l2, power = rates
    z_by_feature, n_by_feature, z_intercept, n_intercept = state
    # The row's coordinates, gathered: their values and old z and n (in
    # float64), the rate roots and weights of the margin, kept for the step,
    # and their new z and n, scattered back after it. Each output's row is
    # contiguous, so that the loops computing them, having no sum and no
    # indirect access, compile to vector instructions (each element's
    # operations are those of the scalar code, so the bits are the same).
    # Those loops run over the row padded to whole vectors (see VECTOR_LANES),
    # on finite values: zeros and ones at first, then the rows before's.
    padded_longest = padded(longest_row(indptr, rows))
    row_z = np.zeros((K, padded_longest))
    row_n = np.ones((K, padded_longest))
    row_x = np.zeros(padded_longest)
    row_root_n = np.empty((K, padded_longest))
    row_weights = np.empty((K, padded_longest))
    new_z = np.empty((K, padded_longest))
    new_n = np.empty((K, padded_longest))
    intercept_root_n = np.empty(K)
    intercept_weights = np.empty(K)
    margin = np.empty(K)
    derivative = np.empty(K)
    # One address per feature prefetched: the first output's z (the others
    # and n share or neighbour its cache line, see _math.new_state).
    first_z = z_by_feature[:, 0]
    recorded = 0
    for position in range(rows.shape[0]):
        if rows_ahead is not None:
            prefetch_row(indptr, indices, rows, position, first_z, rows_ahead)
            if interactions is not None:
                prefetch_interactions(interactions, indptr, indices, rows, position, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]

        # The margin x . w + b, summed in the order of the row; a sum that
        # overflows is recomputed by _math.rescaled_margin.
        count = end - start
        padded_count = padded(count)
        for i in range(count):
            row_x[i] = data[start + i]
        for k in range(K):
            for i in range(count):
                column = indices[start + i]
                # A float32 state is computed on in float64, as in the numpy engine.
                row_z[k, i] = z_by_feature[column, k]
                row_n[k, i] = n_by_feature[column, k]
            if undo is not None:
                for i in range(count):
                    undo[0][k, recorded + i] = row_z[k, i]
                    undo[1][k, recorded + i] = row_n[k, i]
            for i in range(padded_count):
                row_root_n[k, i] = rate_root(row_n[k, i], power)
                row_weights[k, i] = weight(
                    row_z[k, i], row_root_n[k, i], learning_rate, beta, l1, l2
                )
            intercept_root_n[k] = rate_root(n_intercept[k], power)
            intercept_weights[k] = weight(
                z_intercept[k], intercept_root_n[k], learning_rate, beta, 0.0, 0.0
            )
            total = 0.0
            for i in range(count):
                total += row_x[i] * row_weights[k, i]
            total += intercept_weights[k]
            if not math.isfinite(total):
                total = rescaled_margin(
                    row_x[:count], row_weights[k, :count], intercept_weights[k]
                )
            margin[k] = total
        if interactions is not None:
            add_interactions(interactions, K, start, end, indices, data, margin, undo, recorded)
        for k in range(K):
            margins[position, k] = margin[k]

        # The loss derivative in each margin, times the row's weight.
        if K == 1:
            derivative[0] = scalar_derivative(loss_code, margin[0], targets[row], epsilon)
        else:
            softmax_derivative(margin, targets[row], derivative)
        for k in range(K):
            derivative[k] = clip(derivative[k] * sample_weight[row], _math.LARGEST)

        # The steps.
        if interactions is not None:
            step_interactions(
                interactions,
                K,
                start,
                end,
                indices,
                data,
                derivative,
                bound,
                smallest_n,
                largest,
            )
        # A row's coordinates are distinct (canonical CSR): each one's step
        # reads only its own state, in any order of outputs and columns.
        for k in range(K):
            row_derivative = derivative[k]
            for i in range(padded_count):
                gradient = clip(row_x[i] * row_derivative, bound)
                new_z[k, i], new_n[k, i] = step(
                    row_z[k, i],
                    row_n[k, i],
                    row_root_n[k, i],
                    row_weights[k, i],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    power,
                    smallest_n,
                    largest,
                )
            for i in range(count):
                column = indices[start + i]
                z_by_feature[column, k] = new_z[k, i]
                n_by_feature[column, k] = new_n[k, i]
        if undo is not None:
            recorded += count
        if fit_intercept:
            for k in range(K):
                gradient = clip(derivative[k], bound)
                z_intercept[k], n_intercept[k] = step(
                    z_intercept[k],
                    n_intercept[k],
                    intercept_root_n[k],
                    intercept_weights[k],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    power,
                    0.0,  # the intercept's state is float64
                    _math.LARGEST,
                )
    return recorded


def pass_with_interactions(family, **hooks):
    """The pass compiled with a family's ``hooks`` (its functions for
    :func:`add_interactions`, :func:`step_interactions` and
    :func:`prefetch_interactions`, compiled with inline="always"): the same
    function, its hooks' names bound to the family's, numba inlining them as
    it compiles. Named ``_pass_<family>``, it has a cache of its own. (numba
    caches no function that takes another as an argument, and inlines none.)
    Its cache is checked against this file only: after changing a family's
    hooks, clear the cache (``__pycache__``, or ``NUMBA_CACHE_DIR``)."""
    function = _pass.py_func
    name = f"_pass_{family}"
    hooked = types.FunctionType(
        function.__code__, {**function.__globals__, **hooks}, name, function.__defaults__
    )
    hooked.__qualname__ = name
    return compile(hooked)


# numba compiles a form of the pass for each combination of its arguments'
# types, a few seconds each, and a read-only array or a contiguous one is
# another type than a writable or a strided one. learn() gives every call on
# the same kind of model and input the same types, so that they share one form
# (the values computed are the same, only their types' flags differ).


def _writable(array):
    """``array``, or a writable view of it (or, where its memory is read-only,
    as a read-only memory map's, a copy): the pass only reads it, and a
    read-only array would make numba compile another form of it."""
    if array.flags.writeable:
        return array
    try:
        return writable(array)
    except ValueError:
        return array.copy()


def learn(
    state,
    parameters,
    X,
    targets,
    sample_weight,
    rows,
    undo=None,
    interactions=None,
    compiled_pass=_pass,
):
    """One exact pass over ``rows`` of ``X``, compiled, updating ``state`` (see
    :mod:`skftrl._engines`); ``interactions`` is a family's record for the
    hooks, or None."""
    z, n = state.z, state.n
    # The estimators' (z, n) are strided views (new_state), but for a state of
    # at most one feature (a model's, or a parallel pass's shard's), which is
    # contiguous, as is a state made otherwise: that one learns in a copy laid
    # out as new_state's, of at least two features (so that it is strided too;
    # no row reads the ones added), written back after.
    n_features = z.shape[1]
    contiguous = z.flags.forc or n.flags.forc  # C or F order
    if contiguous:
        z, n = new_state(z.shape[0], max(n_features, 2), z.dtype)
        z[:, :n_features], n[:, :n_features] = state.z, state.n
    margins = np.empty((len(rows), z.shape[0]), dtype=np.float64)
    recorded = compiled_pass(
        _writable(X.indptr),
        _writable(X.indices),
        _writable(X.data),
        _writable(np.asarray(targets, dtype=np.float64)),
        _writable(sample_weight),
        _writable(np.asarray(rows, dtype=np.intp)),
        (z.T, n.T, state.z_intercept, state.n_intercept),
        parameters.loss.code,
        compiled_rates(parameters),
        bool(parameters.fit_intercept),
        float(parameters.loss.epsilon),
        _math.max_abs_gradient(z.dtype),
        _math.smallest_stored_n(z.dtype),
        _math.largest_stored(z.dtype),
        margins,
        None if z.shape[0] == 1 else True,
        _compile.rows_ahead(state),
        None if undo is None else undo.old,
        interactions,
    )
    if contiguous:
        state.z[...], state.n[...] = z[:, :n_features], n[:, :n_features]
    if undo is not None:
        undo.recorded_in_row_order(recorded)
    return margins


@compile
def _flat_weights(z, n, learning_rate, beta, l1, l2, learning_rate_power, weights):
    """weight() of every coordinate with |z| > l1, written into ``weights`` (all 1-d)."""
    for i in range(z.shape[0]):
        if abs(z[i]) > l1:
            root_n = rate_root(np.float64(n[i]), learning_rate_power)
            weights[i] = weight(np.float64(z[i]), root_n, learning_rate, beta, l1, l2)


class LinearNumbaEngine(LinearNumpyEngine):
    """The exact per-row pass and the whole state's weights, compiled."""

    name = "numba"
    learns_without_gil = True
    # One pass over the state costs less compiled (see LinearNumpyEngine).
    whole_weights_cost = 1 / 16

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        return learn(state, parameters, X, targets, sample_weight, rows, undo)

    def weights(self, state, parameters):
        """One compiled pass over the state: numpy needs several (a mask,
        gathers, arithmetic, a scatter)."""
        return flat_weights(state.z, state.n, parameters)


def flat_weights(z, n, parameters):
    """The closed-form weights of a whole ``(z, n)`` (any shape), compiled."""
    flat_z, flat_n, coef, flat_coef = _math.flat_state_and_weights(z, n)
    learning_rate, beta, l1, l2, power = compiled_rates(parameters)
    _flat_weights(flat_z, flat_n, learning_rate, beta, l1, l2, power, flat_coef)
    return coef


ENGINE = LinearNumbaEngine()
