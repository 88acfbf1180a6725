"""The seed papers' relations between FTRL-Proximal and other online learners."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy.special import expit

from skftrl import FTRLClassifier, FTRLRegressor


def online_gradient_descent(X, y, step, gradient_of_margin):
    """OGD, w <- w - step * g, one row at a time; the intercept is one more
    weight whose input is always 1. Returns the weights and the intercept."""
    w, b = np.zeros(X.shape[1]), 0.0
    for i in range(X.shape[0]):
        row = X[i]
        d = gradient_of_margin(row.indices, row.data, w, b, y[i])
        w[row.indices] -= step * d * row.data
        b -= step * d
    return w, b


def squared_error_gradient(columns, values, w, b, target):
    return values @ w[columns] + b - target


def log_loss_gradient(columns, values, w, b, target):
    return expit(values @ w[columns] + b) - target


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_ftrl_without_regularization_and_with_one_global_rate_is_ogd(task, engine):
    # McMahan (AISTATS 2011): with l1 = l2 = 0 and a global learning rate,
    # FTRL-Proximal produces the iterates of online gradient descent.
    # learning_rate_power=0 gives every coordinate the constant rate
    # learning_rate / (beta + 1).
    rng = np.random.RandomState(0)
    X = sp.random(300, 20, density=0.2, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz)
    if task == "regression":
        y = X @ rng.normal(size=20) + 0.5 + 0.1 * rng.normal(size=300)
        model, gradient = FTRLRegressor, squared_error_gradient
    else:
        y = (rng.rand(300) < expit(X @ rng.normal(size=20))).astype(float)
        model, gradient = FTRLClassifier, log_loss_gradient
    ftrl = model(learning_rate=0.3, beta=0.5, learning_rate_power=0.0, engine=engine)
    ftrl.partial_fit(X, y, **({"classes": [0.0, 1.0]} if task == "classification" else {}))
    w, b = online_gradient_descent(X, y, step=0.3 / (0.5 + 1.0), gradient_of_margin=gradient)
    assert_allclose(ftrl.coef_[0], w, rtol=1e-10, atol=1e-12)
    assert_allclose(ftrl.intercept_[0], b, rtol=1e-10)
    # With the paper's per-coordinate rates, the iterates differ.
    adaptive = model(learning_rate=0.3, beta=0.5, engine=engine)
    adaptive.partial_fit(X, y, **({"classes": [0.0, 1.0]} if task == "classification" else {}))
    assert not np.allclose(adaptive.coef_[0], w, rtol=1e-3)
