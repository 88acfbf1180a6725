"""The exact per-row FTRL-Proximal pass in numpy, and the linear engine.

Rows are learned one at a time in the order given: each row's margin comes
from the weights left by the previous row, and only the row's non-zero
coordinates (and the intercepts) are read and written. The formulas are
:mod:`._math`'s and :mod:`._losses`'; this module only moves the state.

A family whose model is the linear model plus pairwise interactions (the
factorization machine) learns with this pass and its ``interactions``: see
:func:`learn`.
"""

import math

import numpy as np
import scipy.sparse as sp

from ._math import (
    FLOAT64,
    LARGEST,
    clip,
    clip_gradient,
    compiled_power,
    constants,
    gather,
    intercept_weights,
    largest_stored,
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
from ._rows import nonzeros_of_rows, rows_per_block


def learn(state, parameters, X, targets, sample_weight, rows, undo=None, interactions=None):
    """One exact pass over ``rows`` of ``X``, updating ``state``; see :mod:`skftrl._engines`.

    Generic in the number of outputs K. With one output the state is taken
    as 1-d arrays, and the row's margin, loss derivative (the loss's scalar
    form) and intercept as Python floats: about half the numpy calls per row,
    and no lists, which is what a per-row pass spends its time on.

    ``interactions``, for a family that adds terms to the linear model's
    margin, is an object made for the pass over its state with two methods,
    called for each row in turn: ``row_margins(columns, values)``, the
    terms of the row's margins (shape (K,)) from its coordinates before the
    row; then ``step(gradient)``, the step of those coordinates from each
    non-zero's clipped gradient ``d x_i`` (shape (m, K)). ``state`` then
    begins with the linear model's four arrays (the undo log records the
    others too), and the pass runs as for several outputs, with the loss
    record's array derivative.
    """
    z, n, z_intercept, n_intercept = state[:4]
    n_outputs = z.shape[0]
    single_output = n_outputs == 1 and interactions is None
    # Rows of the transposes are features: gathering and scattering a row's
    # coordinates then indexes the first axis, which numpy does fastest.
    z_by_feature, n_by_feature = (z[0], n[0]) if single_output else (z.T, n.T)
    data = X.data
    # A Python float times float64 values is float64; float32 values are
    # multiplied in float64 explicitly (numpy < 2 keeps float32 for a float64
    # scalar factor, numpy >= 2 does not: NEP 50).
    float_factor = data.dtype == FLOAT64
    absolute_values = np.abs(data)
    largest_value = float(absolute_values.max()) if data.size else 0.0
    # The update's denominator needs its guard against 0 only when some
    # gradient of the row is tiny: when |derivative| * min|x| is below this.
    smallest_value = float(absolute_values.min()) if data.size else 0.0
    unguarded_gradient = max(1e-150, 1e-300 / parameters.learning_rate)
    # Python lists: indexing them per row is faster than indexing arrays.
    targets_list, weights_list = targets.tolist(), sample_weight.tolist()
    loss, epsilon = parameters.loss, parameters.loss.epsilon
    scalar_derivative = loss.scalar_derivative
    bound = max_abs_gradient(z.dtype)
    rates = constants(parameters)
    learning_rate, beta = parameters.learning_rate, parameters.beta
    power = compiled_power(parameters.learning_rate_power)  # None: the paper's sqrt
    float64_state = z.dtype == FLOAT64
    smallest_n, largest = smallest_stored_n(z.dtype), largest_stored(z.dtype)
    margins = np.empty((len(rows), n_outputs), dtype=np.float64)
    single_margins = []  # one output: a list, which takes a float faster than an array
    # A bounded loss derivative (classification, Huber) times the largest
    # sample weight below the clipping bound needs neither clamping nor clipping.
    largest_weight = float(sample_weight.max()) if len(sample_weight) else 0.0
    bounded = loss.derivative_bound * largest_weight <= bound
    fit_intercept = parameters.fit_intercept
    intercept_z, intercept_n = z_intercept.tolist(), n_intercept.tolist()
    block_size = rows_per_block(X)
    # The linear model's float64 state: its blocks of rows are learned first
    # without the clips, checked, and learned again with them if needed.
    unclipped = float64_state and interactions is None
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
                undo.record(block_columns)
            row_bounds = [0, *np.cumsum(row_lengths).tolist()]
            # A float64 state's steps first without their clips to the largest
            # float; the rows again with them where a new z is not finite, which
            # only a clip acting makes (see update_coordinates).
            saturate = not unclipped
            if unclipped:
                saved = (
                    z_by_feature[block_columns],
                    n_by_feature[block_columns],
                    list(intercept_z),
                    list(intercept_n),
                )
            while True:
                for i, row in enumerate(block_rows.tolist()):
                    position = block_start + i
                    start, end = row_bounds[i], row_bounds[i + 1]
                    columns, values = block_columns[start:end], block_values[start:end]
                    if float64_state:  # gather(), without its call and check
                        z_row, n_row = z_by_feature[columns], n_by_feature[columns]
                    else:
                        z_row, n_row = gather(z_by_feature, columns), gather(n_by_feature, columns)
                    root_n_row = np.sqrt(n_row) if power is None else rate_root(n_row, power)
                    w_row = weights(z_row, root_n_row, rates, saturate)

                    if single_output:
                        root_n_intercept = rate_root_scalar(intercept_n[0], power)
                        w_intercept = weight(
                            intercept_z[0],
                            root_n_intercept,
                            learning_rate,
                            beta,
                            0.0,
                            0.0,
                            saturate,
                        )
                        # np.dot costs less than the @ operator on a few values.
                        margin = float(np.dot(values, w_row)) + w_intercept
                        if not math.isfinite(margin):
                            margin = rescaled_margin(values, w_row, w_intercept)
                        single_margins.append(margin)
                        derivative = weights_list[row] * scalar_derivative(
                            margin, targets_list[row], epsilon
                        )
                        if not bounded and abs(derivative) > LARGEST:
                            derivative = math.copysign(LARGEST, derivative)
                        if float_factor:
                            gradient = values * derivative
                        else:
                            gradient = np.multiply(values, derivative, dtype=FLOAT64)
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
                        if interactions is not None:
                            margin[0] += interactions.row_margins(columns, values)
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
                    if interactions is not None:
                        interactions.step(gradient)
                    z_by_feature[columns], n_by_feature[columns] = update_coordinates(
                        z_row,
                        n_row,
                        root_n_row,
                        w_row,
                        gradient,
                        gradient * gradient,
                        rates,
                        smallest_n,
                        largest,
                        guard=not smallest_derivative * smallest_value > unguarded_gradient,
                        saturate=saturate,
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
                            LARGEST,
                            saturate,
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
                if saturate or (
                    np.isfinite(z_by_feature[block_columns]).all()
                    and all(map(math.isfinite, intercept_z))
                ):
                    break
                z_by_feature[block_columns], n_by_feature[block_columns] = saved[:2]
                intercept_z[:], intercept_n[:] = saved[2:]
                del single_margins[block_start:]
                saturate = True
    z_intercept[:], n_intercept[:] = intercept_z, intercept_n
    if single_output:
        margins[:, 0] = single_margins
    return margins


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


class LinearNumpyEngine:
    """The exact per-row pass and the weights in numpy: the reference engine.

    Every engine has its interface (see :mod:`skftrl._engines`); the other
    linear engines subclass it and replace ``learn`` or ``weights``.
    """

    name = "numpy"
    # Whether ``learn`` releases the GIL, so that threads learn shards of a
    # parallel pass at once (see _rounds): the compiled passes only.
    learns_without_gil = False
    # The prediction cache's rule (see _prediction.py): the cost of computing
    # one weight of the whole state, relative to reading one non-zero's weight.
    whole_weights_cost = 1 / 4

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        return learn(state, parameters, X, targets, sample_weight, rows, undo)

    def weights(self, state, parameters):
        return weights_from_state(state.z, state.n, parameters)

    def margins(self, X, state, parameters, coef=None):
        # A dense X as CSR: each row's products are then summed in the order
        # of its non-zeros, as in a pass, whatever X's memory layout (a BLAS
        # product sums in an order of its own, which differs with it).
        X = sp.csr_matrix(X)
        intercepts = intercept_weights(
            state.z_intercept.tolist(), state.n_intercept.tolist(), parameters
        )[0]
        if coef is None:
            margins = margins_of_read_weights(X, state, parameters)
        else:
            margins = margins_from_weights(X, coef)
        margins += intercepts  # a new array, added to in place
        if np.isfinite(margins).all():
            return margins
        # A sum of products overflowed: recomputed from rescaled products.
        coef = self.weights(state, parameters) if coef is None else coef
        return finite_margins(margins, X, coef, intercepts)


ENGINE = LinearNumpyEngine()
