"""The factorization machine's exact per-row pass compiled with numba.

The numpy pass (:mod:`._fm_numpy`) written as loops over a row's non-zeros,
outputs and components, so that numba compiles it; its formulas are
:mod:`._math`'s and :mod:`._losses`' scalar functions, compiled once in
:mod:`._numba_exact` and reused here. Importing this module needs numba.
"""

import numpy as np

from ._fm_numpy import MAX_ABS_FACTOR_TERM, FactorizationEngine
from ._math import compiled_power, max_abs_gradient, smallest_stored_n
from ._numba_exact import (
    PREFETCH_ROWS_AHEAD,
    PREFETCH_STATE_BYTES,
    NumbaEngine,
    _clip,
    _prefetch_row,
    _rate_root,
    _scalar_derivative,
    _softmax_derivative,
    _step,
    _weight,
    compile,
)


@compile
def _fm_pass(
    indptr,
    indices,
    data,
    targets,
    sample_weight,
    rows,
    z_by_feature,
    n_by_feature,
    z_intercept,
    n_intercept,
    z_factors,
    n_factors,
    loss_code,
    learning_rate,
    beta,
    l1,
    l2,
    fit_intercept,
    epsilon,
    learning_rate_power,
    factor_learning_rate,
    factor_l2,
    bound,
    smallest_n,
    margins,
    several_outputs,
    rows_ahead,
    undo_columns,
    undo_z,
    undo_n,
    undo_z_factors,
    undo_n_factors,
):
    """The pass over ``rows``: the linear state by feature (F, K), the factors'
    (K, F, k); margins (len(rows), K). ``several_outputs`` is None for one
    output, which numba compiles with K the constant 1. ``rows_ahead`` is
    None for no prefetching, as in the linear engine. ``undo_columns`` (None:
    no record) and the other ``undo_`` arrays receive the old values of each
    coordinate before its change (see FMUndoLog); returns the number of records."""
    if several_outputs is None:
        n_outputs = 1
    else:
        n_outputs = z_by_feature.shape[1]
    n_components = z_factors.shape[2]
    longest_row = 0
    for row in rows:
        longest_row = max(longest_row, indptr[row + 1] - indptr[row])
    # The row's weights, factors and their rate roots, reused by its update.
    row_weights = np.empty((longest_row, n_outputs))
    row_root_n = np.empty((longest_row, n_outputs))
    row_factors = np.empty((longest_row, n_outputs, n_components))
    row_factor_root_n = np.empty((longest_row, n_outputs, n_components))
    sums = np.empty((n_outputs, n_components))
    squares = np.empty((n_outputs, n_components))
    intercept_weights = np.empty(n_outputs)
    intercept_root_n = np.empty(n_outputs)
    derivative = np.empty(n_outputs)
    # One address per feature in each array: the first output's weight and
    # first factor (its other outputs and factors share or neighbour its line).
    first_z = z_by_feature[:, 0]
    first_z_factors = z_factors[0, :, 0]
    first_n_factors = n_factors[0, :, 0]
    recorded = 0
    for position in range(rows.shape[0]):
        if rows_ahead is not None:
            _prefetch_row(indptr, indices, rows, position, first_z, rows_ahead)
            _prefetch_row(indptr, indices, rows, position, first_z_factors, rows_ahead)
            _prefetch_row(indptr, indices, rows, position, first_n_factors, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]
        margin = margins[position]
        for k in range(n_outputs):
            intercept_root_n[k] = _rate_root(n_intercept[k], learning_rate_power)
            intercept_weights[k] = _weight(
                z_intercept[k], intercept_root_n[k], learning_rate, beta, 0.0, 0.0
            )
            margin[k] = 0.0
            for f in range(n_components):
                sums[k, f] = 0.0
                squares[k, f] = 0.0
        for j in range(start, end):
            column = indices[j]
            value = data[j]
            for k in range(n_outputs):
                root_n = _rate_root(np.float64(n_by_feature[column, k]), learning_rate_power)
                weight = _weight(
                    np.float64(z_by_feature[column, k]), root_n, learning_rate, beta, l1, l2
                )
                row_root_n[j - start, k] = root_n
                row_weights[j - start, k] = weight
                margin[k] += value * weight
                for f in range(n_components):
                    root_n = _rate_root(np.float64(n_factors[k, column, f]), learning_rate_power)
                    factor = _weight(
                        np.float64(z_factors[k, column, f]),
                        root_n,
                        factor_learning_rate,
                        beta,
                        0.0,
                        0.0,
                    )
                    row_factor_root_n[j - start, k, f] = root_n
                    row_factors[j - start, k, f] = factor
                    term = _clip(value * factor, MAX_ABS_FACTOR_TERM)
                    sums[k, f] += term
                    squares[k, f] += term * term
        for k in range(n_outputs):
            margin[k] += intercept_weights[k]
            pairwise = 0.0
            for f in range(n_components):
                pairwise += sums[k, f] * sums[k, f] - squares[k, f]
            margin[k] += 0.5 * pairwise

        if several_outputs is None:
            derivative[0] = _scalar_derivative(loss_code, margin[0], targets[row], epsilon)
        else:
            _softmax_derivative(margin, targets[row], derivative)
        for k in range(n_outputs):
            derivative[k] *= sample_weight[row]
        for j in range(start, end):
            column = indices[j]
            value = data[j]
            if undo_columns is not None:
                undo_columns[recorded] = column
                for k in range(n_outputs):
                    undo_z[recorded, k] = z_by_feature[column, k]
                    undo_n[recorded, k] = n_by_feature[column, k]
                    for f in range(n_components):
                        undo_z_factors[recorded, k, f] = z_factors[k, column, f]
                        undo_n_factors[recorded, k, f] = n_factors[k, column, f]
                recorded += 1
            for k in range(n_outputs):
                gradient = _clip(value * derivative[k], bound)
                z_by_feature[column, k], n_by_feature[column, k] = _step(
                    np.float64(z_by_feature[column, k]),
                    np.float64(n_by_feature[column, k]),
                    row_root_n[j - start, k],
                    row_weights[j - start, k],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    learning_rate_power,
                    smallest_n,
                )
                for f in range(n_components):
                    # d x_i (s_f - v_{i,f} x_i) + factor_l2 v_{i,f}
                    factor = row_factors[j - start, k, f]
                    term = _clip(value * factor, MAX_ABS_FACTOR_TERM)
                    factor_gradient = _clip(
                        gradient * (sums[k, f] - term) + factor_l2 * factor, bound
                    )
                    z_factors[k, column, f], n_factors[k, column, f] = _step(
                        np.float64(z_factors[k, column, f]),
                        np.float64(n_factors[k, column, f]),
                        row_factor_root_n[j - start, k, f],
                        factor,
                        factor_gradient,
                        factor_gradient * factor_gradient,
                        factor_learning_rate,
                        learning_rate_power,
                        smallest_n,
                    )
        if fit_intercept:
            for k in range(n_outputs):
                gradient = _clip(derivative[k], bound)
                z_intercept[k], n_intercept[k] = _step(
                    z_intercept[k],
                    n_intercept[k],
                    intercept_root_n[k],
                    intercept_weights[k],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    learning_rate_power,
                    0.0,  # the intercept's state is float64
                )
    return recorded


class FMNumbaEngine(FactorizationEngine, NumbaEngine):
    """The factorization machine's exact per-row pass, compiled; the linear
    weights as the linear numba engine computes them."""

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        z, n, z_intercept, n_intercept, z_factors, n_factors = state
        margins = np.empty((len(rows), z.shape[0]), dtype=np.float64)
        if undo is None:
            undo_arrays = (None, None, None, None, None)
        else:
            undo_arrays = (undo.columns, undo.z, undo.n, undo.z_factors, undo.n_factors)
        recorded = _fm_pass(
            X.indptr,
            X.indices,
            X.data,
            np.asarray(targets, dtype=np.float64),
            sample_weight,
            np.asarray(rows, dtype=np.intp),
            z.T,
            n.T,
            z_intercept,
            n_intercept,
            z_factors,
            n_factors,
            parameters.loss.code,
            float(parameters.learning_rate),
            float(parameters.beta),
            float(parameters.l1),
            float(parameters.l2),
            bool(parameters.fit_intercept),
            float(parameters.loss.epsilon),
            compiled_power(parameters.learning_rate_power),
            float(parameters.factor_learning_rate),
            float(parameters.factor_l2),
            max_abs_gradient(z.dtype),
            smallest_stored_n(z.dtype),
            margins,
            None if z.shape[0] == 1 else True,
            PREFETCH_ROWS_AHEAD if 2 * z_factors.nbytes > PREFETCH_STATE_BYTES else None,
            *undo_arrays,
        )
        if undo is not None:
            undo.used = recorded
        return margins
