"""The factorization machine's exact per-row pass compiled with numba.

Each row is the linear model's compiled steps (:mod:`._linear_numba`:
:func:`margin_of_row`, :func:`derivative_of_row`, :func:`step_row`) with the
factors' between them: the pairwise term added to the row's margins, and
each factor's step from the same loss derivatives. The formulas are
:mod:`._math`'s, compiled (:mod:`._compile`). Importing this module needs
numba.
"""

import numpy as np

from ._compile import (
    clip,
    compile,
    compile_inline,
    compiled_rates,
    factor_gradient,
    factor_term,
    longest_row,
    pairwise_term_of_sums,
    prefetch_row,
    rate_root,
    step,
    weight,
)
from ._fm_numpy import FactorizationEngine
from ._linear_numba import (
    LinearNumbaEngine,
    derivative_of_row,
    margin_of_row,
    pass_arguments,
    row_buffers,
    step_row,
)

# The factors' per-row steps. Their arguments, beside those of the pass: ``K``
# the number of outputs (the constant 1 for one output, so that the loops over
# outputs compile away); ``start`` and ``end`` the bounds of the row's
# non-zeros in ``indices`` and ``data``; ``factor_rates`` the factors'
# ``rates`` tuple (their learning rate, beta, no l1 or l2,
# learning_rate_power); ``factors`` the tuple (z_factors, n_factors), shape (K,
# F, k) each; ``kept`` the tuple (root_n, factors) of the row's factors, shape
# (longest row, K, k); ``sums`` the tuple of the row's sums s_f = sum_i v_{i,f}
# x_i and of their squared terms, shape (K, k) each.


@compile_inline
def add_pairwise_margin(K, factor_rates, factors, start, end, indices, data, kept, sums, margin):
    """Add the row's pairwise term to each of its ``margin``, in O(k * nnz),
    keeping the factors, their rate roots and the sums ``s_f`` for the step."""
    learning_rate, beta, _, _, power = factor_rates
    z_factors, n_factors = factors
    row_root_n, row_factors = kept
    total, squares = sums
    total[:] = 0.0
    squares[:] = 0.0
    for j in range(start, end):
        column = indices[j]
        for k in range(K):
            for f in range(z_factors.shape[2]):
                root_n = rate_root(np.float64(n_factors[k, column, f]), power)
                factor = weight(
                    np.float64(z_factors[k, column, f]), root_n, learning_rate, beta, 0.0, 0.0
                )
                row_root_n[j - start, k, f] = root_n
                row_factors[j - start, k, f] = factor
                term = factor_term(data[j], factor)
                total[k, f] += term
                squares[k, f] += term * term
    for k in range(K):
        margin[k] += pairwise_term_of_sums(total[k], squares[k])


@compile_inline
def step_factors(
    K,
    factor_rates,
    factors,
    start,
    end,
    indices,
    data,
    kept,
    sums,
    derivative,
    factor_l2,
    bound,
    smallest_n,
    undo,
    recorded,
):
    """The z/n step of each factor of the row. ``undo`` is None for no record,
    else an UndoLog's ``old``, into whose last two arrays (K, size, k) each
    column's old factors are recorded first, from index ``recorded`` on, as
    the linear steps record theirs."""
    learning_rate, _, _, _, power = factor_rates
    z_factors, n_factors = factors
    row_root_n, row_factors = kept
    for j in range(start, end):
        column = indices[j]
        value = data[j]
        for k in range(K):
            gradient = clip(value * derivative[k], bound)
            for f in range(z_factors.shape[2]):
                if undo is not None:
                    undo[2][k, recorded + j - start, f] = z_factors[k, column, f]
                    undo[3][k, recorded + j - start, f] = n_factors[k, column, f]
                factor = row_factors[j - start, k, f]
                factor_step = factor_gradient(
                    gradient,
                    sums[0][k, f],
                    factor_term(value, factor),
                    factor,
                    factor_l2,
                    bound,
                )
                z_factors[k, column, f], n_factors[k, column, f] = step(
                    np.float64(z_factors[k, column, f]),
                    np.float64(n_factors[k, column, f]),
                    row_root_n[j - start, k, f],
                    factor,
                    factor_step,
                    factor_step * factor_step,
                    learning_rate,
                    power,
                    smallest_n,
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
    factors,
    factor_rates,
    factor_l2,
):
    """The linear model's compiled pass (:func:`._linear_numba._pass`, whose
    arguments come first) with the factors: ``factors`` the tuple (z_factors,
    n_factors), ``factor_rates`` their ``rates`` tuple, ``factor_l2`` their
    penalty. Returns the number of records in ``undo``."""
    K = 1 if several_outputs is None else state[0].shape[1]
    longest = longest_row(indptr, rows)
    buffers = row_buffers(K, longest)
    shape = (longest, K, factors[0].shape[2])
    kept = (np.empty(shape), np.empty(shape))
    sums = (np.empty(shape[1:]), np.empty(shape[1:]))
    # One address per feature in each array prefetched: the first output's
    # weight and first factor (the others share or neighbour its cache line).
    first_z = state[0][:, 0]
    first_z_factors = factors[0][0, :, 0]
    first_n_factors = factors[1][0, :, 0]
    recorded = 0
    for position in range(rows.shape[0]):
        if rows_ahead is not None:
            prefetch_row(indptr, indices, rows, position, first_z, rows_ahead)
            prefetch_row(indptr, indices, rows, position, first_z_factors, rows_ahead)
            prefetch_row(indptr, indices, rows, position, first_n_factors, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]
        margin_of_row(K, start, end, indices, data, state, rates, buffers, undo, recorded)
        margin = buffers[9]
        add_pairwise_margin(
            K, factor_rates, factors, start, end, indices, data, kept, sums, margin
        )
        for k in range(K):
            margins[position, k] = margin[k]
        derivative_of_row(K, loss_code, epsilon, targets[row], sample_weight[row], buffers)
        step_factors(
            K,
            factor_rates,
            factors,
            start,
            end,
            indices,
            data,
            kept,
            sums,
            buffers[10],
            factor_l2,
            bound,
            smallest_n,
            undo,
            recorded,
        )
        step_row(K, start, end, indices, state, rates, fit_intercept, bound, smallest_n, buffers)
        if undo is not None:
            recorded += end - start
    return recorded


class FMNumbaEngine(FactorizationEngine, LinearNumbaEngine):
    """The factorization machine's exact per-row pass, compiled; the linear
    weights as the linear numba engine computes them."""

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        arguments, margins = pass_arguments(
            state, parameters, X, targets, sample_weight, rows, undo
        )
        recorded = _pass(
            *arguments,
            (state.z_factors, state.n_factors),
            compiled_rates(parameters.of_factors()),
            float(parameters.factor_l2),
        )
        if undo is not None:
            undo.recorded_in_row_order(recorded)
        return margins


ENGINE = FMNumbaEngine()
