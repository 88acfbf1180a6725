"""The exact per-row FTRL-Proximal pass in numpy: the reference engine.

Rows are learned one at a time in the order given: each row's margin comes
from the weights left by the previous row, and only the row's non-zero
coordinates (and the intercepts) are read and written. The formulas are
:mod:`._math`'s and :mod:`._losses`'; this module only moves the state.
"""

import math

import numpy as np
import scipy.sparse as sp

from ._losses import scalar_derivative
from ._math import (
    FLOAT64,
    LARGEST,
    clip,
    clip_gradient,
    compiled_power,
    constants,
    gather,
    intercept_weights,
    max_abs_gradient,
    rate_root,
    rate_root_scalar,
    rescaled_margin,
    smallest_stored_n,
    step,
    step_intercepts_by_derivatives,
    update_coordinates,
    weight,
    weights,
    weights_from_state,
)


def learn(state, parameters, X, targets, sample_weight, rows, undo=None):
    """One exact pass over ``rows`` of ``X``, updating ``state``; see :mod:`skftrl._engines`.

    Generic in the number of outputs K. With one output the state is taken
    as 1-d arrays, and the row's margin, loss derivative (the loss's scalar
    form) and intercept as Python floats: about half the numpy calls per row,
    and no lists, which is what a per-row pass spends its time on.
    """
    z, n, z_intercept, n_intercept = state
    n_outputs = z.shape[0]
    single_output = n_outputs == 1
    # Rows of the transposes are features: gathering and scattering a row's
    # coordinates then indexes the first axis, which numpy does fastest.
    z_by_feature, n_by_feature = (z[0], n[0]) if single_output else (z.T, n.T)
    data = X.data
    # A Python float times float64 values is float64; a float32 X needs a
    # numpy float64 factor (NEP 50).
    float_factor = data.dtype == FLOAT64
    absolute_values = np.abs(data)
    largest_value = float(absolute_values.max()) if data.size else 0.0
    # The update's denominator needs its guard against 0 only when some
    # gradient of the row is tiny: when |derivative| * min|x| is below this.
    smallest_value = float(absolute_values.min()) if data.size else 0.0
    unguarded_gradient = max(1e-150, 1e-300 / parameters.learning_rate)
    # Python lists: indexing them per row is faster than indexing arrays.
    targets_list, weights_list = targets.tolist(), sample_weight.tolist()
    loss, code, epsilon = parameters.loss, parameters.loss.code, parameters.loss.epsilon
    bound = max_abs_gradient(z.dtype)
    rates = constants(parameters)
    learning_rate, beta = parameters.learning_rate, parameters.beta
    power = compiled_power(parameters.learning_rate_power)  # None: the paper's sqrt
    float64_state = z.dtype == FLOAT64
    smallest_n = smallest_stored_n(z.dtype)
    margins = np.empty((len(rows), n_outputs), dtype=np.float64)
    single_margins = []  # one output: a list, which takes a float faster than an array
    # A bounded loss derivative (classification, Huber) times the largest
    # sample weight below the clipping bound needs neither clamping nor clipping.
    largest_weight = float(sample_weight.max()) if len(sample_weight) else 0.0
    bounded = loss.derivative_bound * largest_weight <= bound
    fit_intercept = parameters.fit_intercept
    intercept_z, intercept_n = z_intercept.tolist(), n_intercept.tolist()
    block_size = rows_per_block(X)
    # A gradient d * x beyond float64 becomes inf and is then clipped to
    # the bound, and a margin whose sum overflows (to inf, or inf - inf = NaN)
    # is recomputed: those are expected, so they do not warn.
    with np.errstate(over="ignore", invalid="ignore"):
        for block_start in range(0, len(rows), block_size):
            block_rows = rows[block_start : block_start + block_size]
            block_columns, block_values, row_lengths = nonzeros_of_rows(X, block_rows)
            if undo is not None:
                # Every coordinate the block may change, recorded before it
                # starts: one gather costs far less than a record call per row.
                undo.record(
                    block_columns, z_by_feature[block_columns], n_by_feature[block_columns]
                )
            row_bounds = [0, *np.cumsum(row_lengths).tolist()]
            for i, row in enumerate(block_rows.tolist()):
                position = block_start + i
                start, end = row_bounds[i], row_bounds[i + 1]
                columns, values = block_columns[start:end], block_values[start:end]
                if float64_state:  # gather(), without its call and check
                    z_row, n_row = z_by_feature[columns], n_by_feature[columns]
                else:
                    z_row, n_row = gather(z_by_feature, columns), gather(n_by_feature, columns)
                root_n_row = np.sqrt(n_row) if power is None else rate_root(n_row, power)
                w_row = weights(z_row, root_n_row, rates)

                if single_output:
                    root_n_intercept = rate_root_scalar(intercept_n[0], power)
                    w_intercept = weight(
                        intercept_z[0], root_n_intercept, learning_rate, beta, 0.0, 0.0
                    )
                    # np.dot costs less than the @ operator on a few values.
                    margin = float(np.dot(values, w_row)) + w_intercept
                    if not math.isfinite(margin):
                        margin = rescaled_margin(values, w_row, w_intercept)
                    single_margins.append(margin)
                    derivative = weights_list[row] * scalar_derivative(
                        code, margin, targets_list[row], epsilon
                    )
                    if not bounded and abs(derivative) > LARGEST:
                        derivative = math.copysign(LARGEST, derivative)
                    gradient = values * (derivative if float_factor else np.float64(derivative))
                    largest_derivative = smallest_derivative = abs(derivative)
                else:
                    w_intercept, root_n_intercept = intercept_weights(
                        intercept_z, intercept_n, parameters
                    )
                    margin = margins[position : position + 1]  # a view, shape (1, K)
                    np.add(values @ w_row, w_intercept, out=margin[0])
                    if not np.isfinite(margin).all():
                        margin[0] = [
                            rescaled_margin(values, w_row[:, k], w_intercept[k])
                            for k in range(n_outputs)
                        ]
                    derivative = (
                        sample_weight[row] * loss.derivative(margin, targets[row : row + 1])[0]
                    )
                    derivatives = derivative.tolist()
                    gradient = values[:, None] * derivative
                    largest_derivative = max(map(abs, derivatives))
                    smallest_derivative = min(map(abs, derivatives))
                # Clipping only when some |value * derivative| may exceed the bound.
                if largest_derivative * largest_value > bound:
                    clip_gradient(gradient, bound)
                z_by_feature[columns], n_by_feature[columns] = update_coordinates(
                    z_row,
                    n_row,
                    root_n_row,
                    w_row,
                    gradient,
                    gradient * gradient,
                    rates,
                    smallest_n,
                    guard=not smallest_derivative * smallest_value > unguarded_gradient,
                )
                if not fit_intercept:
                    continue
                if single_output:
                    clipped = derivative if bounded else clip(derivative, bound)
                    intercept_z[0], intercept_n[0] = step(
                        intercept_z[0],
                        intercept_n[0],
                        root_n_intercept,
                        w_intercept,
                        clipped,
                        clipped * clipped,
                        learning_rate,
                        power,
                        0.0,  # the intercept's state is float64
                    )
                else:
                    step_intercepts_by_derivatives(
                        intercept_z,
                        intercept_n,
                        root_n_intercept,
                        w_intercept,
                        derivatives,
                        bound,
                        parameters,
                    )
    z_intercept[:], n_intercept[:] = intercept_z, intercept_n
    if single_output:
        margins[:, 0] = single_margins
    return margins


# The non-zeros a pass prepares at a time (their columns as intp, values,
# rows): this bounds the memory it takes, to about 16 MiB.
BLOCK_NONZEROS = 2**20


def rows_per_block(X, batch_size=1):
    """The rows of a block of about :data:`BLOCK_NONZEROS` non-zeros of ``X``,
    a multiple of ``batch_size``."""
    nonzeros_per_batch = max(1, round(X.nnz / max(X.shape[0], 1) * batch_size))
    return batch_size * max(1, BLOCK_NONZEROS // nonzeros_per_batch)


def nonzeros_of_rows(X, rows, consecutive=False):
    """The non-zeros of ``rows`` (an array) of a CSR ``X``, in their order:
    their columns (intp), their values, and each row's number of them.

    The columns are converted to intp here, at once: numpy converts an int32
    index array on every gather and scatter, which costs more than the
    gather itself. ``consecutive`` promises that ``rows`` are a run (``r,
    r + 1, ...``): their values are then a view of X's, without gathering.
    """
    indptr = X.indptr
    if consecutive:
        bounds = indptr[rows[0] : rows[-1] + 2]
        positions, row_lengths = slice(bounds[0], bounds[-1]), np.diff(bounds)
    else:
        starts = indptr[rows]
        row_lengths = indptr[rows + 1] - starts
        # Each row's first position, less the number of non-zeros before it.
        positions = np.repeat(starts - (np.cumsum(row_lengths) - row_lengths), row_lengths)
        positions += np.arange(len(positions))
    return X.indices[positions].astype(np.intp), X.data[positions], row_lengths


def finite_margins(margins, X, coef, intercepts):
    """``margins = X @ coef.T + intercepts`` (shape (n_rows, K)), with each one
    whose sum overflowed recomputed by :func:`._math.rescaled_margin`."""
    X = sp.csr_matrix(X)
    for row, k in zip(*np.nonzero(~np.isfinite(margins))):
        start, end = X.indptr[row], X.indptr[row + 1]
        margins[row, k] = rescaled_margin(
            X.data[start:end], coef[k, X.indices[start:end]], float(intercepts[k])
        )
    return margins


def margins_from_weights(X, coef):
    """``X @ coef.T`` as an array of shape (n_samples, n_outputs)."""
    if coef.shape[0] == 1:
        # A sparse matrix times a vector: faster than times an (n_features, 1)
        # matrix, with the same sums.
        return np.asarray(X @ coef[0]).reshape(-1, 1)
    return np.asarray(X @ coef.T)


def margins_of_read_weights(X, state, parameters):
    """:func:`margins_from_weights` of a CSR ``X`` with the whole state's weights,
    computing only the weights X reads: for a few rows of a wide model, far fewer.

    Each non-zero's weight is computed where it is read (a column read twice
    is computed twice), and each row's products are summed in the same order
    as by :func:`margins_from_weights`, so the result is identical.
    """
    # One output at a time, with the indices converted once: numpy's gather is
    # then faster (np.take would copy the whole strided state).
    columns = X.indices.astype(np.intp)
    read_weights = weights_from_state(
        np.array([row[columns] for row in state.z]),
        np.array([row[columns] for row in state.n]),
        parameters,
    )
    # X with each non-zero in a column of its own, the one read_weights holds.
    each_nonzero_apart = sp.csr_matrix(
        (X.data, np.arange(X.nnz, dtype=X.indices.dtype), X.indptr),
        shape=(X.shape[0], X.nnz),
    )
    return margins_from_weights(each_nonzero_apart, read_weights)
