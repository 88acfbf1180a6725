"""The exact per-row pass of the linear model compiled with numba (``engine="numba"``).

The numpy per-row pass (:mod:`._linear_numpy`) written as loops over a row's
non-zeros, so that numba compiles it to machine code; its formulas are
:mod:`._math`'s and :mod:`._losses`' scalar functions, compiled unchanged
(:mod:`._compile`). Each row is three phases: its coordinates are gathered
into contiguous row buffers, computed on by loops over the row padded to
whole vectors (which compile to vector instructions with each element's
operations those of the scalar code, so the bits are the same), and
scattered back. The per-row steps (:func:`margin_of_row`,
:func:`derivative_of_row`, :func:`step_row`) are the factorization
machine's pass's too (:mod:`._fm_numba`). Importing this module needs numba.
"""

import math

import numpy as np

from . import _compile, _math
from ._compile import (
    clip,
    compile,
    compile_inline,
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


@compile
def row_buffers(K, longest):
    """The buffers of a row's coordinates, for rows of at most ``longest`` non-zeros.

    A tuple: the row's values; each output's old z and n (in float64), rate
    roots and weights, kept for the step; their new z and n, scattered back
    after it; the intercepts' rate roots and weights; the row's margins and
    loss derivatives. Each output's row is contiguous. The loops over the row
    padded to whole vectors (see VECTOR_LANES) compute on finite values: zeros
    and ones at first, then the rows before's.
    """
    size = padded(longest)
    return (
        np.zeros(size),
        np.zeros((K, size)),
        np.ones((K, size)),
        np.empty((K, size)),
        np.empty((K, size)),
        np.empty((K, size)),
        np.empty((K, size)),
        np.empty(K),
        np.empty(K),
        np.empty(K),
        np.empty(K),
    )


@compile_inline
def margin_of_row(K, start, end, indices, data, state, rates, buffers, undo, recorded):
    """Gather the row's coordinates into ``buffers`` and compute its margins
    ``x . w + b`` (summed in the order of the row; a sum that overflows is
    recomputed by _math.rescaled_margin).

    ``state`` is the tuple (z_by_feature, n_by_feature, z_intercept,
    n_intercept), the first two of shape (F, K); ``undo`` None for no record,
    else an UndoLog's ``old``, into whose first two arrays (K, size) the old z
    and n of each non-zero are recorded, from index ``recorded`` on.
    """
    learning_rate, beta, l1, l2, power = rates
    z_by_feature, n_by_feature, z_intercept, n_intercept = state
    row_x, row_z, row_n, row_root_n, row_weights, _, _ = buffers[:7]
    intercept_root_n, intercept_weights, margin = buffers[7:10]
    count = end - start
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
        for i in range(padded(count)):
            row_root_n[k, i] = rate_root(row_n[k, i], power)
            row_weights[k, i] = weight(row_z[k, i], row_root_n[k, i], learning_rate, beta, l1, l2)
        intercept_root_n[k] = rate_root(n_intercept[k], power)
        intercept_weights[k] = weight(
            z_intercept[k], intercept_root_n[k], learning_rate, beta, 0.0, 0.0
        )
        total = 0.0
        for i in range(count):
            total += row_x[i] * row_weights[k, i]
        total += intercept_weights[k]
        if not math.isfinite(total):
            total = rescaled_margin(row_x[:count], row_weights[k, :count], intercept_weights[k])
        margin[k] = total


@compile_inline
def derivative_of_row(K, loss_code, epsilon, target, sample_weight, buffers):
    """The loss derivative in each of the row's margins, times its weight,
    into the buffers' derivatives."""
    margin, derivative = buffers[9], buffers[10]
    if K == 1:
        derivative[0] = scalar_derivative(loss_code, margin[0], target, epsilon)
    else:
        softmax_derivative(margin, target, derivative)
    for k in range(K):
        derivative[k] = clip(derivative[k] * sample_weight, _math.LARGEST)


@compile_inline
def step_row(K, start, end, indices, state, rates, fit_intercept, bound, smallest_n, buffers):
    """The step of each of the row's coordinates and of the intercepts, from
    the buffers :func:`margin_of_row` and :func:`derivative_of_row` filled.

    A row's coordinates are distinct (canonical CSR): each one's step reads
    only its own state, in any order of outputs and columns.
    """
    learning_rate, _, _, _, power = rates
    z_by_feature, n_by_feature, z_intercept, n_intercept = state
    row_x, row_z, row_n, row_root_n, row_weights, new_z, new_n = buffers[:7]
    intercept_root_n, intercept_weights, _, derivative = buffers[7:]
    count = end - start
    for k in range(K):
        row_derivative = derivative[k]
        for i in range(padded(count)):
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
            )
        for i in range(count):
            column = indices[start + i]
            z_by_feature[column, k] = new_z[k, i]
            n_by_feature[column, k] = new_n[k, i]
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
            )


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
    margins,
    several_outputs,
    rows_ahead,
    undo,
):
    """The pass over ``rows``: each row's margins into ``margins`` (len(rows), K),
    then its step. Returns the number of records in ``undo``.

    ``state`` and ``undo`` are :func:`margin_of_row`'s; ``rates`` the tuple
    (learning_rate, beta, l1, l2, learning_rate_power). ``several_outputs``
    is None for one output: numba then compiles a version in which K is the
    constant 1, and its loops over outputs disappear. ``rows_ahead`` is None
    for no prefetching (pruned when compiled, too).
    """
    K = 1 if several_outputs is None else state[0].shape[1]
    buffers = row_buffers(K, longest_row(indptr, rows))
    # One address per feature prefetched: the first output's z (the others
    # and n share or neighbour its cache line).
    first_z = state[0][:, 0]
    recorded = 0
    for position in range(rows.shape[0]):
        if rows_ahead is not None:
            prefetch_row(indptr, indices, rows, position, first_z, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]
        margin_of_row(K, start, end, indices, data, state, rates, buffers, undo, recorded)
        for k in range(K):
            margins[position, k] = buffers[9][k]
        derivative_of_row(K, loss_code, epsilon, targets[row], sample_weight[row], buffers)
        step_row(K, start, end, indices, state, rates, fit_intercept, bound, smallest_n, buffers)
        if undo is not None:
            recorded += end - start
    return recorded


def pass_arguments(state, parameters, X, targets, sample_weight, rows, undo):
    """The compiled passes' arguments shared by every family, in their order,
    and the margins array they write into."""
    z, n = state.z, state.n
    margins = np.empty((len(rows), z.shape[0]), dtype=np.float64)
    arguments = (
        X.indptr,
        X.indices,
        X.data,
        np.asarray(targets, dtype=np.float64),
        sample_weight,
        np.asarray(rows, dtype=np.intp),
        (z.T, n.T, state.z_intercept, state.n_intercept),
        parameters.loss.code,
        compiled_rates(parameters),
        bool(parameters.fit_intercept),
        float(parameters.loss.epsilon),
        _math.max_abs_gradient(z.dtype),
        _math.smallest_stored_n(z.dtype),
        margins,
        None if z.shape[0] == 1 else True,
        _compile.rows_ahead(state),
        None if undo is None else undo.old,
    )
    return arguments, margins


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
    # One pass over the state costs less compiled (see LinearNumpyEngine).
    whole_weights_cost = 1 / 16

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        arguments, margins = pass_arguments(
            state, parameters, X, targets, sample_weight, rows, undo
        )
        recorded = _pass(*arguments)
        if undo is not None:
            undo.recorded_in_row_order(recorded)
        return margins

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
