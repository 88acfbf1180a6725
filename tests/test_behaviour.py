"""Behaviour users rely on: input formats, numerics, determinism, fit semantics."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, PoissonRegressor
from sklearn.metrics import log_loss, mean_poisson_deviance

from conftest import HAS_NUMBA, with_int64_indices
from skftrl import FTRLClassifier, FTRLRegressor

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]


def make_data(n_rows=200, n_features=12, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n_rows, n_features, density=0.3, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz)
    w = rng.normal(size=n_features)
    y = (X @ w + 0.3 * rng.normal(size=n_rows) > 0).astype(int)
    return X, y


def assert_same_state(a, b):
    for name in STATE:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize(
    "convert",
    [
        lambda X: X.toarray(),
        lambda X: X.tocsc(),
        lambda X: X.tocoo(),
        lambda X: sp.csr_array(X),
        lambda X: pd.DataFrame(X.toarray(), columns=[f"c{i}" for i in range(X.shape[1])]),
        lambda X: X.astype(np.float32),
        lambda X: X.toarray().astype(np.float32),
        with_int64_indices,
    ],
    ids=[
        "dense",
        "csc",
        "coo",
        "csr_array",
        "dataframe",
        "float32-csr",
        "float32-dense",
        "int64-indices",
    ],
)
def test_every_input_format_learns_the_same_model(convert):
    X, y = make_data()
    X = X.astype(np.float32).astype(np.float64)  # values exact in float32 too
    expected = FTRLClassifier().partial_fit(X, y, classes=[0, 1])
    X_other = convert(X)
    got = FTRLClassifier().partial_fit(X_other, y, classes=[0, 1])
    for name in STATE:
        assert_allclose(getattr(got, name), getattr(expected, name), rtol=1e-12, atol=1e-15)
    assert_allclose(got.predict_proba(X_other), expected.predict_proba(X), rtol=1e-12)


def test_caller_data_is_not_modified():
    X, y = make_data()
    X_dense = X.toarray()
    kept = (X.data.copy(), X.indices.copy(), X.indptr.copy(), X_dense.copy())
    FTRLClassifier().fit(X, y).predict_proba(X)
    FTRLRegressor().fit(X_dense, y.astype(float)).predict(X_dense)
    for before, after in zip(kept, (X.data, X.indices, X.indptr, X_dense)):
        assert np.array_equal(before, after)


def test_dataframe_feature_names_are_kept():
    X, y = make_data()
    frame = pd.DataFrame(X.toarray(), columns=[f"c{i}" for i in range(X.shape[1])])
    clf = FTRLClassifier().fit(frame, y)
    assert list(clf.feature_names_in_) == list(frame.columns)
    assert clf.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("scale", [1e6, 1e100, 1e-300])
@pytest.mark.parametrize(
    "make",
    [
        lambda: FTRLClassifier(beta=0.0, l2=0.0),
        lambda: FTRLClassifier(learning_rate=10.0),
        lambda: FTRLRegressor(beta=0.0),
        lambda: FTRLRegressor(loss="huber", learning_rate=5.0),
        lambda: FTRLRegressor(loss="poisson", learning_rate=5.0),
    ],
)
@pytest.mark.parametrize(
    "engine_params",
    [
        {"engine": "numpy"},
        pytest.param(
            {"engine": "numba"}, marks=pytest.mark.skipif(not HAS_NUMBA, reason="no numba")
        ),
        {"batch_size": 8},
        {"dtype": np.float32},
    ],
    ids=["numpy", "numba", "batch_size=8", "float32"],
)
def test_extreme_finite_values_give_finite_state_and_predictions(make, scale, engine_params):
    X, y = make_data(n_rows=100)
    X = X * scale
    model = make().set_params(**engine_params)
    if isinstance(model, FTRLClassifier):
        y = np.where(np.arange(100) % 3 == 0, 2, y)  # three classes: multinomial
    else:
        y = y * 1e3
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or 0/0 inside
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
        model.partial_fit(X, y)
        predictions = (
            model.predict_proba(X) if hasattr(model, "predict_proba") else model.predict(X)
        )
    for name in STATE:
        assert np.all(np.isfinite(getattr(model, name))), name
    assert np.all(np.isfinite(model.coef_))
    assert np.all(np.isfinite(predictions))


def test_probabilities_sum_to_one_and_classes_are_sorted():
    X, y = make_data()
    labels = np.array(["zebra", "apple", "mango"])[(np.arange(200) + y) % 3]
    clf = FTRLClassifier(random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["apple", "mango", "zebra"]
    proba = clf.predict_proba(X)
    assert proba.shape == (200, 3)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_allclose(np.exp(clf.predict_log_proba(X)), proba)
    assert np.array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])


def test_log_proba_does_not_underflow():
    X = sp.csr_matrix(np.array([[1.0], [-1.0]]) * 1e3)
    clf = FTRLClassifier(learning_rate=5.0, max_iter=20, tol=None).fit(X, [1, 0])
    log_proba = clf.predict_log_proba(X * 100)
    assert np.all(np.isfinite(log_proba))
    assert log_proba[0, 0] < -1e3  # far beyond log(float64 tiny)


def test_random_state_makes_fit_deterministic_and_shuffle_matters():
    X, y = make_data()
    a = FTRLClassifier(random_state=42, max_iter=3, tol=None).fit(X, y)
    b = FTRLClassifier(random_state=42, max_iter=3, tol=None).fit(X, y)
    c = FTRLClassifier(random_state=7, max_iter=3, tol=None).fit(X, y)
    assert_same_state(a, b)
    assert not np.array_equal(a.z_, c.z_)


def test_fit_restarts_and_warm_start_continues():
    X, y = make_data()
    params = dict(shuffle=False, tol=None)
    once = FTRLClassifier(max_iter=2, **params).fit(X, y)
    twice = FTRLClassifier(max_iter=2, **params).fit(X, y).fit(X, y)
    assert_same_state(once, twice)  # fit starts afresh

    warm = FTRLClassifier(max_iter=2, warm_start=True, **params).fit(X, y).fit(X, y)
    four = FTRLClassifier(max_iter=4, **params).fit(X, y)
    assert_same_state(warm, four)
    assert warm.n_samples_seen_ == 4 * X.shape[0]

    stream = FTRLClassifier(**params)
    for _ in range(4):
        stream.partial_fit(X, y, classes=[0, 1])
    assert_same_state(stream, four)


def test_tol_stops_fit_and_max_iter_warns():
    X, y = make_data(n_rows=400)
    clf = FTRLClassifier(max_iter=200, tol=1e-3, random_state=0).fit(X, y)
    assert 1 < clf.n_iter_ < 200
    with pytest.warns(ConvergenceWarning, match="Maximum number of passes"):
        FTRLClassifier(max_iter=2, tol=1e-12, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        FTRLClassifier(max_iter=1, tol=1e-12).fit(X, y)  # a single pass is a choice
        FTRLClassifier(max_iter=3, tol=None).fit(X, y)


def test_l1_gives_exact_zeros_and_more_l1_gives_more():
    rng = np.random.RandomState(0)
    X = sp.random(500, 40, density=0.3, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz)
    y = rng.rand(500) < expit(X @ rng.normal(size=40))
    counts = [
        np.count_nonzero(FTRLClassifier(l1=l1, random_state=0).fit(X, y).coef_)
        for l1 in [0.0, 50.0, 200.0]
    ]
    assert counts[0] == 40
    assert counts[0] > counts[1] > counts[2]


def test_intercept_is_not_regularized_and_can_be_disabled():
    # All rows empty: only the intercept can learn the base rate of 0.9.
    X = sp.csr_matrix((1000, 3))
    y = (np.arange(1000) % 10 != 0).astype(int)
    clf = FTRLClassifier(learning_rate=1.0, l1=50.0, l2=50.0).partial_fit(X, y, classes=[0, 1])
    assert_allclose(clf.predict_proba(X[:1])[0, 1], 0.9, atol=0.02)
    assert np.all(clf.coef_ == 0)

    no_intercept = FTRLClassifier(fit_intercept=False).partial_fit(X, y, classes=[0, 1])
    assert np.all(no_intercept.intercept_ == 0)
    assert np.all(no_intercept.z_intercept_ == 0)


def test_fit_without_early_stopping_reaches_the_logistic_regression_optimum():
    # The default (early_stopping="refit") minimizes the held-out loss, not
    # the training loss; passes over all the rows reach the batch optimum.
    rng = np.random.RandomState(3)
    X = sp.random(1000, 8, density=0.5, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz)
    y = (rng.rand(1000) < expit(X @ rng.normal(size=8))).astype(int)
    ftrl = FTRLClassifier(early_stopping=False, random_state=0).fit(X, y)
    batch = LogisticRegression(C=1e4).fit(X, y)  # the unregularized optimum
    optimum = log_loss(y, batch.predict_proba(X))
    assert log_loss(y, ftrl.predict_proba(X)) <= 1.005 * optimum


def test_default_poisson_fit_reaches_the_poisson_regression_optimum():
    rng = np.random.RandomState(0)
    X = rng.uniform(0, 1, size=(2000, 2))
    y = rng.poisson(np.exp(X @ np.array([1.0, -1.0]) + 0.5))
    reg = FTRLRegressor(loss="poisson", learning_rate=0.3, early_stopping=False, random_state=0)
    reg.fit(X, y)
    batch = PoissonRegressor(alpha=0.0).fit(X, y)
    optimum = mean_poisson_deviance(y, batch.predict(X))
    assert mean_poisson_deviance(y, reg.predict(X)) <= 1.005 * optimum
    assert_allclose(reg.coef_[0], batch.coef_, atol=0.1)


def test_regressor_recovers_a_linear_function():
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, size=(2000, 4))
    coef = np.array([1.5, -2.0, 0.0, 0.7])
    y = X @ coef + 4.0
    reg = FTRLRegressor(learning_rate=0.5, max_iter=30, random_state=0).fit(X, y)
    assert_allclose(reg.coef_[0], coef, atol=0.02)
    assert_allclose(reg.intercept_, [4.0], atol=0.02)
    assert reg.coef_.shape == (1, 4) and reg.intercept_.shape == (1,)


def test_prediction_leaves_the_state_untouched():
    X, y = make_data()
    clf = FTRLClassifier().fit(X, y)
    before = [getattr(clf, name).copy() for name in STATE]
    clf.predict(X), clf.predict_proba(X), clf.decision_function(X), clf.score(X, y)
    for name, kept in zip(STATE, before):
        assert np.array_equal(getattr(clf, name), kept)


def test_binary_probabilities_are_accurate_when_tiny():
    """Each side of predict_proba is expit of its own margin, so a probability
    of 1e-20 is not rounded to 0 by computing it as 1 - 0.99999..."""
    X, y = make_data()
    clf = FTRLClassifier(learning_rate=0.5).fit(X, y)
    X_far = X * 40.0  # margins of several tens
    margins = clf.decision_function(X_far)
    assert np.abs(margins).max() > 40
    proba = clf.predict_proba(X_far)
    assert_allclose(proba[:, 0], expit(-margins), rtol=1e-15, atol=0)
    assert_allclose(proba[:, 1], expit(margins), rtol=1e-15, atol=0)


@pytest.mark.parametrize("make", [FTRLClassifier, FTRLRegressor])
def test_partial_fit_checks_the_parameters_once_until_they_change(make, monkeypatch):
    # scikit-learn's _fit_context checks them on a first call; partial_fit
    # checks them again only after set_params changed one.
    from sklearn.base import BaseEstimator

    checks = []
    check = BaseEstimator._validate_params
    monkeypatch.setattr(
        BaseEstimator, "_validate_params", lambda self: checks.append(1) or check(self)
    )
    X, y = make_data()
    kwargs = {"classes": [0, 1]} if make is FTRLClassifier else {}
    model = make()
    model.partial_fit(X, y, **kwargs)
    assert len(checks) == 1
    model.partial_fit(X, y, **kwargs)
    assert len(checks) == 1
    model.set_params(l2=0.5).partial_fit(X, y, **kwargs)
    assert len(checks) == 2
    model.set_params(l2=-1.0)
    with pytest.raises(ValueError, match="'l2' parameter"):
        model.partial_fit(X, y, **kwargs)
    assert len(checks) == 3
    # A fit checks them (in _fit_context); the partial_fit after it does not.
    model.set_params(l2=0.0, max_iter=2, tol=None).fit(X, y)
    model.partial_fit(X, y, **kwargs)
    assert len(checks) == 4
