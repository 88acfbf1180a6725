"""The exact per-row FTRL-Proximal pass compiled with numba (``engine="numba"``).

The same algorithm as :func:`skftrl._kernel.ftrl_pass`, operation for
operation, written as loops over a row's non-zeros so that numba compiles it to
machine code. It is optional: importing this module needs numba
(``pip install "skftrl[fast]"``). Compiled code is cached on disk
(``cache=True``), so only the first process on a machine pays the compile time.
"""

import math

import numpy as np
from numba import njit

from ._kernel import LOSSES, MAX_EXP_MARGIN, TINY, max_abs_gradient, smallest_stored_n

# error_model="numpy": a division by zero gives inf or nan as in numpy, with no
# per-division check (the denominators are guarded anyway). Without it, numba
# adds a branch raising ZeroDivisionError to every division.

# The kernel receives the loss as its position in LOSSES.
LOG_LOSS, MULTINOMIAL, SQUARED_ERROR, HUBER, POISSON = range(len(LOSSES))


@njit(cache=True, error_model="numpy")
def _weight(z, sqrt_n, learning_rate, beta, l1, l2):
    """One coordinate of skftrl._kernel._weights, in the same operations."""
    denominator = sqrt_n / learning_rate
    denominator += beta / learning_rate + l2
    # As in the numpy engine: 0 only where n = 0 and beta / learning_rate + l2
    # is 0 (beta = l2 = 0, or a tiny beta over the rate underflowed).
    if denominator == 0:
        denominator = 1.0
    if l1 > 0:
        z = z - min(max(z, -l1), l1)
    return -(z / denominator)


@njit(cache=True, error_model="numpy")
def _update(z, n, sqrt_n, weight, gradient, learning_rate, smallest_n):
    """One coordinate of skftrl._kernel._update_coordinates; returns (z, n)."""
    squared = gradient * gradient
    new_n = n + squared
    denominator = (math.sqrt(new_n) + sqrt_n) * learning_rate
    denominator = max(denominator, TINY)
    new_z = z + gradient - squared / denominator * weight
    if squared > 0 and new_n < smallest_n:
        new_n = smallest_n
    return new_z, new_n


@njit(cache=True, error_model="numpy")
def _clip(value, bound):
    return max(min(value, bound), -bound)


@njit(cache=True, error_model="numpy")
def _loss_derivative(loss, margins, target, epsilon, derivative):
    """skftrl._kernel.loss_derivative for one row, written into ``derivative``."""
    if loss == LOG_LOSS:
        derivative[0] = 1.0 / (1.0 + math.exp(-margins[0])) - target
    elif loss == MULTINOMIAL:
        top = margins.max()
        total = 0.0
        for k in range(margins.shape[0]):
            derivative[k] = math.exp(margins[k] - top)
            total += derivative[k]
        for k in range(margins.shape[0]):
            derivative[k] /= total
        derivative[int(target)] -= 1.0
    elif loss == SQUARED_ERROR:
        derivative[0] = margins[0] - target
    elif loss == HUBER:
        derivative[0] = min(max(margins[0] - target, -epsilon), epsilon)
    else:  # POISSON
        derivative[0] = math.exp(min(margins[0], MAX_EXP_MARGIN)) - target


@njit(cache=True, error_model="numpy")
def _pass(
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
    loss,
    learning_rate,
    beta,
    l1,
    l2,
    fit_intercept,
    epsilon,
    bound,
    smallest_n,
    margins,
):
    n_outputs = z_by_feature.shape[1]
    longest_row = 0
    for row in rows:
        longest_row = max(longest_row, indptr[row + 1] - indptr[row])
    # The weights and sqrt(n) of the current row, kept to be reused by its update.
    row_weights = np.empty((longest_row, n_outputs))
    row_sqrt_n = np.empty((longest_row, n_outputs))
    intercept_weights = np.empty(n_outputs)
    derivative = np.empty(n_outputs)
    for position in range(rows.shape[0]):
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]
        margin = margins[position]
        for k in range(n_outputs):
            intercept_weights[k] = _weight(
                z_intercept[k], math.sqrt(n_intercept[k]), learning_rate, beta, 0.0, 0.0
            )
            margin[k] = 0.0
        for j in range(start, end):
            column = indices[j]
            for k in range(n_outputs):
                # A float32 state is computed on in float64, as in the numpy engine.
                sqrt_n = math.sqrt(np.float64(n_by_feature[column, k]))
                weight = _weight(
                    np.float64(z_by_feature[column, k]), sqrt_n, learning_rate, beta, l1, l2
                )
                row_sqrt_n[j - start, k] = sqrt_n
                row_weights[j - start, k] = weight
                margin[k] += data[j] * weight
        for k in range(n_outputs):
            margin[k] += intercept_weights[k]

        _loss_derivative(loss, margin, targets[row], epsilon, derivative)
        for k in range(n_outputs):
            derivative[k] *= sample_weight[row]
        for j in range(start, end):
            column = indices[j]
            for k in range(n_outputs):
                z_by_feature[column, k], n_by_feature[column, k] = _update(
                    np.float64(z_by_feature[column, k]),
                    np.float64(n_by_feature[column, k]),
                    row_sqrt_n[j - start, k],
                    row_weights[j - start, k],
                    _clip(data[j] * derivative[k], bound),
                    learning_rate,
                    smallest_n,
                )
        if fit_intercept:
            for k in range(n_outputs):
                z_intercept[k], n_intercept[k] = _update(
                    z_intercept[k],
                    n_intercept[k],
                    math.sqrt(n_intercept[k]),
                    intercept_weights[k],
                    _clip(derivative[k], bound),
                    learning_rate,
                    0.0,  # the intercept's state is float64
                )


def ftrl_pass(
    X,
    targets,
    sample_weight,
    rows,
    state,
    *,
    loss,
    learning_rate,
    beta,
    l1,
    l2,
    fit_intercept,
    epsilon=0.1,
):
    """:func:`skftrl._kernel.ftrl_pass`, compiled; same parameters and result."""
    z, n, z_intercept, n_intercept = state
    margins = np.empty((len(rows), z.shape[0]), dtype=np.float64)
    _pass(
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
        LOSSES.index(loss),
        float(learning_rate),
        float(beta),
        float(l1),
        float(l2),
        bool(fit_intercept),
        float(epsilon),
        max_abs_gradient(z.dtype),
        smallest_stored_n(z.dtype),
        margins,
    )
    return margins
