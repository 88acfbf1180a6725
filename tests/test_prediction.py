"""Prediction's weights: kept between calls while the model is unchanged, and
computed only where X reads them when X has few non-zeros for a wide model.

Every way must give exactly (``==``) the scores of the weights computed from
the whole state, and those agree with the paper's closed form, coordinate by
coordinate (tests/reference.py), at 1e-12.
"""

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from reference import _weight

from skftrl import FTRLClassifier, FTRLRegressor
from skftrl._engines._linear_numpy import LinearNumpyEngine as NumpyEngine

HYPER = {"learning_rate": 0.3, "beta": 0.5, "l1": 0.05, "l2": 0.01}


def wide_data(n_rows, n_features=2048, n_classes=2, seed=0):
    """Sparse rows of about 8 non-zeros over many columns, with labels."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_features, density=8 / n_features, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz)
    y = rng.integers(0, n_classes, size=n_rows)
    return X, y


def with_repeated_columns(X):
    """X (CSR) with each row's first non-zero split into two entries of the
    same column: non-canonical, as validate_data lets it through to predict."""
    rows = []
    for i in range(X.shape[0]):
        start, end = X.indptr[i], X.indptr[i + 1]
        data, columns = X.data[start:end].tolist(), X.indices[start:end].tolist()
        if data:
            data = [data[0] / 2, data[0] / 2, *data[1:]]
            columns = [columns[0], *columns]
        rows.append((data, columns))
    indptr = np.cumsum([0] + [len(d) for d, _ in rows])
    data = np.concatenate([d for d, _ in rows])
    indices = np.concatenate([c for _, c in rows]).astype(np.int32)
    repeated = sp.csr_matrix((data, indices, indptr), shape=X.shape)
    assert not repeated.has_canonical_format
    return repeated


def reference_scores(model, X):
    """X @ w.T + b, with w from the paper's closed form, one coordinate at a time."""
    z, n = model.z_.astype(np.float64), model.n_.astype(np.float64)
    coef = np.array(
        [
            [
                _weight(z[k, i], n[k, i], model.learning_rate, model.beta, model.l1, model.l2)
                for i in range(z.shape[1])
            ]
            for k in range(z.shape[0])
        ]
    )
    return X.toarray() @ coef.T + model.intercept_


def scores(model, X):
    """The margins, shape (n_samples, n_outputs): a classifier's
    decision_function, or a squared-error regressor's prediction."""
    if isinstance(model, FTRLRegressor):
        assert model.loss == "squared_error"
        return model.predict(X).reshape(-1, 1)
    return model.decision_function(X).reshape(X.shape[0], -1)


def forget_kept_weights(model):
    model._prediction_cache.clear()


def kept(model):
    """Whether the model's predictions have kept every weight."""
    return model._prediction_cache.kept


def set_whole_weights_cost(monkeypatch, cost):
    """The cache's rule with this cost for every engine (the numba engine subclasses numpy's)."""
    monkeypatch.setattr(NumpyEngine, "whole_weights_cost", cost)
    try:
        from skftrl._engines._linear_numba import LinearNumbaEngine as NumbaEngine
    except ImportError:
        return
    monkeypatch.setattr(NumbaEngine, "whole_weights_cost", cost)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "make, n_classes",
    [(FTRLClassifier, 2), (FTRLClassifier, 3), (FTRLRegressor, 2)],
    ids=["binary", "multiclass", "regressor"],
)
def test_read_weights_kept_weights_and_all_weights_give_identical_scores(
    make, n_classes, dtype, engine, monkeypatch
):
    model = make(engine=engine, dtype=dtype, **HYPER)
    X, y = wide_data(400, n_classes=n_classes)
    model.fit(X, y)
    X_new = with_repeated_columns(wide_data(60, n_classes=n_classes, seed=1)[0])

    forget_kept_weights(model)
    always, never = np.inf, 0
    set_whole_weights_cost(monkeypatch, always)
    read = scores(model, X_new)
    assert not kept(model)  # nothing kept from a read
    set_whole_weights_cost(monkeypatch, never)
    computed = scores(model, X_new)
    assert kept(model)
    again = scores(model, X_new)  # from the weights the last call kept

    assert np.array_equal(read, computed) and np.array_equal(again, computed)
    assert_allclose(computed, reference_scores(model, X_new), rtol=1e-12, atol=1e-12)
    if isinstance(model, FTRLClassifier):
        set_whole_weights_cost(monkeypatch, always)
        forget_kept_weights(model)
        read_proba = model.predict_proba(X_new)
        set_whole_weights_cost(monkeypatch, never)
        assert np.array_equal(read_proba, model.predict_proba(X_new))


def test_few_rows_of_a_wide_model_read_their_weights_and_many_rows_keep_all(engine):
    model = FTRLClassifier(engine=engine, **HYPER).fit(*wide_data(400, n_features=2**16))
    forget_kept_weights(model)
    model.predict(wide_data(5, n_features=2**16, seed=1)[0])  # 40 non-zeros, 65,536 columns
    assert not kept(model)
    model.predict(wide_data(5000, n_features=2**16, seed=1)[0])  # 40,000
    assert kept(model)


def test_predictions_read_weights_until_they_have_read_a_quarter_then_keep_all(
    engine, monkeypatch
):
    set_whole_weights_cost(monkeypatch, 0.25)
    n_features = 2**12
    X, y = wide_data(400, n_features=n_features)
    model = FTRLClassifier(engine=engine, **HYPER).fit(X, y)
    X_new = wide_data(30, n_features=n_features, seed=1)[0]
    expected = reference_scores(model, X_new)[:, 0]
    assert 0 < X_new.nnz < n_features / 8
    read = 0
    while read + X_new.nnz < n_features / 4:
        assert_allclose(model.decision_function(X_new), expected, rtol=1e-12, atol=1e-12)
        read += X_new.nnz
        assert not kept(model) and model._prediction_cache.nonzeros_read == read
    # This call would pass a quarter of the features: it computes them all.
    assert_allclose(model.decision_function(X_new), expected, rtol=1e-12, atol=1e-12)
    assert kept(model)
    # Learning starts a new count; a dense X always computes every weight.
    model.partial_fit(X_new, y[:30])
    model.decision_function(X_new)
    assert not kept(model) and model._prediction_cache.nonzeros_read == X_new.nnz
    model.decision_function(X_new.toarray())
    assert kept(model)


def test_kept_weights_follow_every_change_of_the_model(engine):
    X, y = wide_data(600)
    X_test = wide_data(300, seed=1)[0]  # 2,400 non-zeros: weights are kept
    first, second = slice(0, 300), slice(300, 600)
    predicted = FTRLClassifier(engine=engine, random_state=0, **HYPER)
    untouched = FTRLClassifier(engine=engine, random_state=0, **HYPER)

    def assert_same_scores():
        expected = untouched.decision_function(X_test)
        assert np.array_equal(predicted.decision_function(X_test), expected)
        assert_allclose(expected, reference_scores(untouched, X_test)[:, 0], rtol=1e-12)

    predicted.partial_fit(X[first], y[first], classes=[0, 1])
    predicted.decision_function(X_test)
    assert kept(predicted)
    # Learning more: the kept weights are stale.
    predicted.partial_fit(X[second], y[second])
    untouched.partial_fit(X[first], y[first], classes=[0, 1]).partial_fit(X[second], y[second])
    assert_same_scores()
    # Changed hyper-parameters (both models now have kept weights).
    for model in (predicted, untouched):
        model.set_params(l1=0.2, learning_rate=0.5)
    assert_same_scores()
    # A refit from scratch.
    predicted.fit(X[second], y[second])
    untouched.fit(X[second], y[second])
    assert_same_scores()
    # Copies: a pickled or copied model predicts as the original.
    for copied in (pickle.loads(pickle.dumps(predicted)), copy.deepcopy(predicted)):
        assert np.array_equal(
            copied.decision_function(X_test), predicted.decision_function(X_test)
        )
    # A state assigned by the user, then edited in place.
    for model in (predicted, untouched):
        model.z_ = model.z_ * 2.0
    assert_same_scores()
    for model in (predicted, untouched):
        model.z_[0, X_test.indices[0]] += 5.0
    assert_same_scores()


def test_the_state_is_read_only_and_coef_is_a_copy():
    X, y = wide_data(300)
    X_test = wide_data(300, seed=1)[0]
    model = FTRLClassifier(**HYPER).fit(X, y)
    before = model.decision_function(X_test)
    for name in ("z_", "n_"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(model, name)[0, 0] = 1.0
    coef = model.coef_
    coef[...] = 0.0  # changes the caller's copy only
    assert np.array_equal(model.decision_function(X_test), before)
    # Still read-only after more learning, a refit, and a round trip.
    model.partial_fit(X, y)
    for copied in (model, model.fit(X, y), pickle.loads(pickle.dumps(model))):
        assert not (copied.z_.flags.writeable or copied.n_.flags.writeable)
