"""The factorization machine's numeric kernel: the exact per-row pass on numpy,
the initial factors, and the margins of many rows (docs/fm_math.rst).

The state of an FM with ``K`` outputs, ``F`` features and ``k`` components is
the linear model's (``z``, ``n`` of shape (K, F) and the intercept's, see
:mod:`skftrl._kernel`) plus the factors' ``z`` and ``n`` of shape (K, F, k).
Every formula of the update is the linear kernel's: the closed-form weight
(:func:`~skftrl._kernel._weights`; for the factors with ``l1 = l2 = 0`` at
the rate scale ``factor_learning_rate``), the sigma/z/n step
(:func:`~skftrl._kernel._update_coordinates`) and the loss derivative
(:func:`~skftrl._kernel.loss_derivative`). Only the model's own parts are
written here: the pairwise term of the margin and the factors' gradient.
"""

import numpy as np
import scipy.sparse as sp

from ._kernel import (
    _clip_gradient,
    _constants,
    _gather,
    _intercept_weights,
    _update_coordinates,
    _update_intercepts,
    _weights,
    loss_derivative,
    margins_from_weights,
    max_abs_gradient,
    rate_root,
    smallest_stored_n,
    weights_from_state,
)

# A term v_{i,f} x_i is clipped to this magnitude before it is summed and
# squared, so that the pairwise term of any finite row stays far inside
# float64 (its squares are at most 1e100 times the row's non-zeros squared),
# and so do the margin and the squared-error loss of the row.
MAX_ABS_FACTOR_TERM = 1e50


def factor_constants(factor_learning_rate, beta, learning_rate_power):
    """The closed form's constants of the factors: no l1, no l2, their own rate."""
    return _constants(factor_learning_rate, beta, 0.0, 0.0, learning_rate_power)


def empty_factor_state(shape, dtype):
    """Uninitialized ``(z, n)`` of ``shape``, as views of one buffer.

    A view, like the linear state's (:func:`skftrl._kernel.new_state`), so
    that the estimator can keep the arrays read-only and still hand a
    writable view to a pass.
    """
    buffer = np.empty((2, *shape), dtype=dtype)
    return buffer[0], buffer[1]


def new_factor_state(
    n_outputs,
    n_features,
    n_components,
    dtype,
    *,
    init_stdev,
    random_state,
    factor_learning_rate,
    beta,
    initial_n=0.0,
    learning_rate_power=-0.5,
):
    """The factors' fresh ``(z, n)``, each of shape (K, F, k) (docs: "Initial factors").

    ``v0 = init_stdev * N(0, 1)``, drawn as
    ``np.random.default_rng(random_state).standard_normal((K, F, k))`` for an
    int or None ``random_state`` (a ``RandomState`` instance draws with its
    own ``standard_normal``), is stored as
    ``z0 = -v0 * (beta + rate_root(n0)) / factor_learning_rate`` with
    ``n0 = initial_n``, so that the closed form gives ``v0``.
    """
    shape = (n_outputs, n_features, n_components)
    if isinstance(random_state, np.random.RandomState):
        draws = random_state.standard_normal(shape)
    else:
        draws = np.random.default_rng(random_state).standard_normal(shape)
    denominator = (beta + float(rate_root(np.float64(initial_n), learning_rate_power))) / (
        factor_learning_rate
    )
    z, n = empty_factor_state(shape, dtype)
    np.multiply(-(init_stdev * draws), denominator, out=z, casting="same_kind")
    n[...] = initial_n
    return z, n


def factors_from_state(factor_z, factor_n, factor_learning_rate, beta, learning_rate_power):
    """The factors ``v`` of shape (K, F, k) from their state, in closed form."""
    return weights_from_state(
        factor_z, factor_n, factor_learning_rate, beta, 0.0, 0.0, learning_rate_power
    )


def pairwise_margins(X, factors):
    """The pairwise term of each row of ``X`` for each output: shape (n_samples, K).

    ``1/2 sum_f ((X V)_f^2 - ((X * X) (V * V))_f)`` per output, from two
    matrix products over all the rows at once (Rendle 2010, lemma 3.1).
    """
    squared_X = X.multiply(X).tocsr() if sp.issparse(X) else X * X
    pairwise = np.empty((X.shape[0], factors.shape[0]), dtype=np.float64)
    for output, V in enumerate(factors):
        sums = np.asarray(X @ V)
        pairwise[:, output] = 0.5 * (sums * sums - np.asarray(squared_X @ (V * V))).sum(axis=1)
    return pairwise


def fm_margins(X, coef, intercept, factors):
    """The FM's margins of the rows of ``X``, shape (n_samples, K)."""
    margins = margins_from_weights(X, coef) + intercept
    margins += pairwise_margins(X, factors)
    return margins


def fm_pass(
    X,
    targets,
    sample_weight,
    rows,
    state,
    factor_state,
    *,
    loss,
    learning_rate,
    beta,
    l1,
    l2,
    fit_intercept,
    epsilon,
    learning_rate_power,
    factor_learning_rate,
    factor_l2,
):
    """One exact pass of the FM over ``rows`` of ``X``, updating the state in place.

    Rows are processed one at a time in the order given (docs/fm_math.rst,
    "Learning from one row"); only the row's non-zero features (their
    weights and factors) and the intercept are read and written.

    Parameters are those of :func:`skftrl._kernel.ftrl_pass`, plus
    ``factor_state = (factor_z, factor_n)`` of shape (K, F, k), updated in
    place, ``factor_learning_rate`` and ``factor_l2``.

    Returns
    -------
    margins : ndarray of shape (len(rows), K)
        The margin of each row *before* it was learned from.
    """
    z, n, z_intercept, n_intercept = state
    factor_z, factor_n = factor_state
    n_outputs = z.shape[0]
    # Feature-major views: a row's coordinates are then rows of these.
    z_by_feature, n_by_feature = z.T, n.T
    factor_z_by_feature = factor_z.transpose(1, 0, 2)
    factor_n_by_feature = factor_n.transpose(1, 0, 2)
    indptr, indices, data = X.indptr, X.indices, X.data
    bound = max_abs_gradient(z.dtype)
    constants = _constants(learning_rate, beta, l1, l2, learning_rate_power)
    v_constants = factor_constants(factor_learning_rate, beta, learning_rate_power)
    smallest_n = smallest_stored_n(z.dtype)
    largest_value = float(np.abs(data).max()) if data.size else 0.0
    margins = np.empty((len(rows), n_outputs), dtype=np.float64)
    intercept_z, intercept_n = z_intercept.tolist(), n_intercept.tolist()
    # Overflow to inf is expected on unscaled input and is clipped.
    with np.errstate(over="ignore"):
        for position, row in enumerate(rows):
            start, end = indptr[row], indptr[row + 1]
            columns = indices[start:end].astype(np.intp, copy=False)
            values = data[start:end].astype(np.float64, copy=False)
            # Step 1: the weights of the row's coordinates, before the row.
            z_row, n_row = _gather(z_by_feature, columns), _gather(n_by_feature, columns)
            root_n_row = rate_root(n_row, learning_rate_power)
            w_row = _weights(z_row, root_n_row, constants)  # (m, K)
            v_z_row = _gather(factor_z_by_feature, columns)
            v_n_row = _gather(factor_n_by_feature, columns)
            root_v_n_row = rate_root(v_n_row, learning_rate_power)
            v_row = _weights(v_z_row, root_v_n_row, v_constants)  # (m, K, k)
            w_intercept = _intercept_weights(
                intercept_z, intercept_n, learning_rate, beta, learning_rate_power
            )
            # The margin: s_f = sum_i v_{i,f} x_i, and the pairwise term
            # 1/2 sum_f (s_f^2 - sum_i v_{i,f}^2 x_i^2), in this order.
            terms = values[:, None, None] * v_row
            _clip_gradient(terms, MAX_ABS_FACTOR_TERM)
            sums = terms.sum(axis=0)  # (K, k)
            pairwise = 0.5 * (sums * sums - (terms * terms).sum(axis=0)).sum(axis=1)
            margin = margins[position]
            np.add(values @ w_row, w_intercept, out=margin)
            margin += pairwise

            # Step 2: the loss derivative, weighted.
            derivative = (
                sample_weight[row]
                * loss_derivative(loss, margins[position : position + 1], targets[row : row + 1], epsilon)[0]
            )
            derivative_list = derivative.tolist()
            # Step 3: the gradients, from the weights of step 1.
            gradient = values[:, None] * derivative  # d x_i, (m, K)
            if max(map(abs, derivative_list)) * largest_value > bound:
                _clip_gradient(gradient, bound)
            # d x_i (s_f - v_{i,f} x_i) + factor_l2 v_{i,f}
            factor_gradient = gradient[:, :, None] * (sums - terms)
            if factor_l2:
                factor_gradient += factor_l2 * v_row
            _clip_gradient(factor_gradient, bound)
            # Step 4: the FTRL-Proximal step of every touched coordinate.
            z_by_feature[columns], n_by_feature[columns] = _update_coordinates(
                z_row, n_row, root_n_row, w_row, gradient, gradient * gradient, constants, smallest_n
            )
            factor_z_by_feature[columns], factor_n_by_feature[columns] = _update_coordinates(
                v_z_row,
                v_n_row,
                root_v_n_row,
                v_row,
                factor_gradient,
                factor_gradient * factor_gradient,
                v_constants,
                smallest_n,
            )
            if fit_intercept:
                clipped = [min(max(d_k, -bound), bound) for d_k in derivative_list]
                _update_intercepts(
                    intercept_z,
                    intercept_n,
                    w_intercept,
                    clipped,
                    [d_k * d_k for d_k in clipped],
                    learning_rate,
                    learning_rate_power,
                )
    z_intercept[:], n_intercept[:] = intercept_z, intercept_n
    return margins
