"""The numpy engine's per-row pass learns a float64 state without the steps'
clips to the largest float, and repeats a block of rows with them where a clip
acts: its states must be those of the always-clipped steps, bit for bit."""

import numpy as np
import pytest
import scipy.sparse as sp

from skftrl import FTRLRegressor
from skftrl._engines import _math

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]


def always_clipped(X, y, learning_rate, beta):
    """The squared-error pass of one output written with _math's scalar
    formulas (which always clip), row by row: the independent reference."""
    n_features = X.shape[1]
    z, n = np.zeros(n_features), np.zeros(n_features)
    z_b, n_b = 0.0, 0.0
    for row in range(X.shape[0]):
        start, end = X.indptr[row], X.indptr[row + 1]
        columns, values = X.indices[start:end], X.data[start:end]
        roots = [_math.rate_root_scalar(n[c], None) for c in columns]
        weights = [
            _math.weight(z[c], r, learning_rate, beta, 0.0, 0.0) for c, r in zip(columns, roots)
        ]
        root_b = _math.rate_root_scalar(n_b, None)
        w_b = _math.weight(z_b, root_b, learning_rate, beta, 0.0, 0.0)
        margin = float(np.dot(values, weights)) + w_b
        if not np.isfinite(margin):
            margin = _math.rescaled_margin(values, np.array(weights), w_b)
        derivative = _math.clip(margin - y[row], _math.LARGEST)
        for c, x, r, w in zip(columns, values, roots, weights):
            g = _math.clip(x * derivative, _math.MAX_ABS_GRADIENT)
            z[c], n[c] = _math.step(
                z[c], n[c], r, w, g, g * g, learning_rate, None, 0.0, _math.LARGEST
            )
        g = _math.clip(derivative, _math.MAX_ABS_GRADIENT)
        z_b, n_b = _math.step(
            z_b, n_b, root_b, w_b, g, g * g, learning_rate, None, 0.0, _math.LARGEST
        )
    return z, n, z_b, n_b


@pytest.mark.parametrize(
    "learning_rate, beta, scale",
    [(1e-300, 1.0, 1e60), (1e300, 0.0, 1e-100), (0.1, 1.0, 1.0)],
    ids=["sigma-overflows", "weights-overflow", "no-clip-acts"],
)
def test_the_unclipped_pass_gives_the_clipped_steps_bits(learning_rate, beta, scale):
    """A sigma beyond the float range (a learning rate near 0 with large
    gradients) and weights beyond it (a rate near the largest float) make the
    clips act: the state is the always-clipped formula's, bit for bit."""
    rng = np.random.RandomState(0)
    X = sp.random(40, 6, density=0.7, format="csr", random_state=rng)
    X.data = rng.uniform(-1.0, 1.0, size=X.nnz) * scale
    y = rng.uniform(-1.0, 1.0, size=40) * scale
    with np.errstate(all="ignore"):
        model = FTRLRegressor(
            engine="numpy", learning_rate=learning_rate, beta=beta, l1=0.0, l2=0.0
        ).partial_fit(X, y)
        expected = always_clipped(X, y, learning_rate, beta)
    got = (model.z_[0], model.n_[0], model.z_intercept_[0], model.n_intercept_[0])
    for name, a, b in zip(STATE, got, expected):
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert all(np.all(np.isfinite(a)) for a in got)
