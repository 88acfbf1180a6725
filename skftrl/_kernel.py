"""The FTRL-Proximal numeric kernel: pure functions over numpy arrays.

Nothing here knows about estimators or scikit-learn. The state of a model with
``K`` outputs over ``F`` features is four arrays:

- ``z``, ``n`` of shape ``(K, F)``: the paper's per-coordinate accumulators
  (McMahan et al., KDD 2013, Algorithm 1);
- ``z_intercept``, ``n_intercept`` of shape ``(K,)``: the same for the
  intercept, a coordinate whose input is always 1 and which is never
  regularized.

The weights are never stored: :func:`weights_from_state` computes them in
closed form. :func:`ftrl_pass` runs the exact per-row algorithm and updates the
state in place, touching only the non-zero coordinates of each row.
"""

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax

# exp() of a margin above this overflows float64 (exp(709.78) is the limit).
# The Poisson mean exp(margin) is capped here so that gradients stay finite.
MAX_EXP_MARGIN = 700.0

# A per-coordinate gradient is clipped to this magnitude, so that its square
# (1e200) and the sum of many squares stay finite. Only inputs near 1e100 or
# beyond ever reach it; for any realistic data it never takes effect.
MAX_ABS_GRADIENT = 1e100

# The smallest positive normal float64.
TINY = np.finfo(np.float64).tiny

LOSSES = ("log_loss", "multinomial", "squared_error", "huber", "poisson")


def weights_from_state(z, n, learning_rate, beta, l1, l2):
    """Closed-form FTRL-Proximal weights from the state ``(z, n)``.

    ``w = 0`` where ``|z| <= l1``, else
    ``w = -(z - sign(z) l1) / ((beta + sqrt(n)) / learning_rate + l2)``.

    Works elementwise on arrays of any shape. A finite state gives finite
    weights, including where the denominator is 0 (``beta = l2 = 0``,
    ``n = 0``), unless ``sqrt(n) / learning_rate`` underflows below 1e-308.
    """
    return _weights(np.asarray(z, dtype=np.float64), np.sqrt(n), learning_rate, beta, l1, l2)


def _weights(z, sqrt_n, learning_rate, beta, l1, l2):
    """:func:`weights_from_state` given ``sqrt(n)``, which the update reuses."""
    # z - clip(z, -l1, l1) is exactly sign(z) * max(|z| - l1, 0), in fewer steps.
    shrunk = z - np.minimum(np.maximum(z, -l1), l1)
    denominator = sqrt_n / learning_rate
    denominator += beta / learning_rate + l2
    if beta == 0 and l2 == 0:
        # The denominator is 0 only where n = 0, and there z is 0 too (or a
        # gradient so small that its square underflowed): divide by 1.
        denominator += denominator == 0
    shrunk /= denominator
    return np.negative(shrunk, out=shrunk)


def loss_derivative(loss, margins, targets, epsilon=0.1):
    """Derivative of the loss with respect to the margins, ``dloss/dm``.

    Parameters
    ----------
    loss : str
        One of :data:`LOSSES`.
    margins : ndarray of shape (n_rows, K)
        ``K`` is 1 for every loss but ``"multinomial"``.
    targets : ndarray of shape (n_rows,)
        0/1 for ``"log_loss"``, class indices for ``"multinomial"``, real
        values for the regression losses.
    epsilon : float
        The Huber threshold.

    Returns
    -------
    ndarray of shape (n_rows, K), always finite for finite input.
    """
    if loss == "log_loss":
        return expit(margins) - targets[:, None]
    if loss == "multinomial":
        derivative = softmax(margins, axis=1)
        derivative[np.arange(len(targets)), targets] -= 1.0
        return derivative
    if loss == "squared_error":
        return margins - targets[:, None]
    if loss == "huber":
        return np.clip(margins - targets[:, None], -epsilon, epsilon)
    if loss == "poisson":
        return np.exp(np.minimum(margins, MAX_EXP_MARGIN)) - targets[:, None]
    raise ValueError(f"Unknown loss {loss!r}; expected one of {LOSSES}.")


def loss_value(loss, margins, targets, epsilon=0.1):
    """Per-row loss for margins of shape (n_rows, K); returns shape (n_rows,).

    Log losses are computed from the margins without forming probabilities,
    so they stay finite for any finite margin. The Poisson loss is the
    negative log-likelihood without its constant ``log(y!)``.
    """
    if loss == "log_loss":
        m = margins[:, 0]
        return -(targets * log_expit(m) + (1.0 - targets) * log_expit(-m))
    if loss == "multinomial":
        return logsumexp(margins, axis=1) - margins[np.arange(len(targets)), targets]
    residual = margins[:, 0] - targets
    if loss == "squared_error":
        return 0.5 * residual**2
    if loss == "huber":
        absolute = np.abs(residual)
        return np.where(
            absolute <= epsilon,
            0.5 * residual**2,
            epsilon * absolute - 0.5 * epsilon**2,
        )
    if loss == "poisson":
        m = np.minimum(margins[:, 0], MAX_EXP_MARGIN)
        return np.exp(m) - targets * m
    raise ValueError(f"Unknown loss {loss!r}; expected one of {LOSSES}.")


def _update_coordinates(z, n, sqrt_n, weights, gradient, learning_rate):
    """The FTRL-Proximal update of a set of coordinates, given their gradient.

    ``z``, ``n``, ``sqrt_n = sqrt(n)`` and ``weights`` are the coordinates'
    state and current weights, of the same shape as ``gradient``; returns the
    new ``(z, n)``. ``sigma = (sqrt(n + g^2) - sqrt(n)) / alpha`` is computed
    as ``g^2 / (alpha (sqrt(n + g^2) + sqrt(n)))``, free of cancellation.
    """
    squared = gradient * gradient
    new_n = n + squared
    denominator = np.sqrt(new_n)
    denominator += sqrt_n
    denominator *= learning_rate
    # The denominator is 0 only where n = 0 and g^2 is 0 (or underflowed), and
    # sigma must be 0 there: raising it to the smallest normal float gives
    # 0 / tiny = 0. Elsewhere it is already above tiny unless
    # learning_rate * |g| < 1e-308.
    np.maximum(denominator, TINY, out=denominator)
    sigma_times_weights = np.divide(squared, denominator, out=squared)
    sigma_times_weights *= weights
    new_z = z + gradient
    new_z -= sigma_times_weights
    return new_z, new_n


def _clip_gradient(gradient):
    """Clip to +-MAX_ABS_GRADIENT in place (np.clip's wrapper is slow on tiny arrays)."""
    np.minimum(gradient, MAX_ABS_GRADIENT, out=gradient)
    return np.maximum(gradient, -MAX_ABS_GRADIENT, out=gradient)


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
    """One exact FTRL-Proximal pass over ``rows`` of ``X``, updating ``state``.

    Rows are processed one at a time in the order given: each row's margin is
    computed from the weights left by the previous row. Only the row's
    non-zero coordinates (and the intercept) are read and written.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Canonical CSR (sorted indices, no duplicates).
    targets : ndarray of shape (n_samples,)
        As in :func:`loss_derivative`.
    sample_weight : ndarray of shape (n_samples,)
        Multiplies each row's loss derivative.
    rows : ndarray of int
        The row indices to process, in order.
    state : tuple of ndarray
        ``(z, n, z_intercept, n_intercept)``, updated in place.
    loss, learning_rate, beta, l1, l2, fit_intercept, epsilon
        The loss and the hyper-parameters.

    Returns
    -------
    margins : ndarray of shape (len(rows), K)
        The margin of each processed row *before* it was learned from
        (progressive validation).
    """
    z, n, z_intercept, n_intercept = state
    # Rows of the transposes are features: gathering and scattering a row's
    # coordinates then indexes the first axis, which numpy does fastest. The
    # estimators allocate z and n in Fortran order so these are C-contiguous.
    z_by_feature, n_by_feature = z.T, n.T
    indptr, indices, data = X.indptr, X.indices, X.data
    n_outputs = z.shape[0]
    margins = np.empty((len(rows), n_outputs), dtype=np.float64)
    # A gradient d * x beyond float64 becomes inf and is then clipped to
    # MAX_ABS_GRADIENT: that overflow is expected, so it does not warn.
    with np.errstate(over="ignore"):
        for position, row in enumerate(rows):
            start, end = indptr[row], indptr[row + 1]
            columns = indices[start:end]
            values = data[start:end]
            z_row = z_by_feature[columns]
            n_row = n_by_feature[columns]
            sqrt_n_row = np.sqrt(n_row)
            w_row = _weights(z_row, sqrt_n_row, learning_rate, beta, l1, l2)
            # The intercept is the same closed form with l1 = l2 = 0.
            sqrt_n_intercept = np.sqrt(n_intercept)
            w_intercept = _weights(z_intercept, sqrt_n_intercept, learning_rate, beta, 0.0, 0.0)
            margin = margins[position : position + 1]  # a view, shape (1, K)
            np.add(values @ w_row, w_intercept, out=margin[0])

            derivative = sample_weight[row] * loss_derivative(
                loss, margin, targets[row : row + 1], epsilon
            )[0]
            gradient = _clip_gradient(values[:, None] * derivative)
            z_by_feature[columns], n_by_feature[columns] = _update_coordinates(
                z_row, n_row, sqrt_n_row, w_row, gradient, learning_rate
            )
            if fit_intercept:
                derivative = _clip_gradient(derivative)
                z_intercept[:], n_intercept[:] = _update_coordinates(
                    z_intercept, n_intercept, sqrt_n_intercept, w_intercept, derivative, learning_rate
                )
    return margins
