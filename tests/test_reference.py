"""The estimators against the slow reference written from docs/algorithm.rst."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from reference import ReferenceFTRL, rows_as_dicts

from skftrl import FTRLClassifier, FTRLRegressor
from skftrl._engines import LinearState, Parameters, get_loss
from skftrl._engines._linear_batch import LinearBatchEngine as NumpyBatchEngine
from skftrl._engines._linear_numpy import ENGINE as NUMPY

TOLERANCE = dict(rtol=1e-12, atol=1e-12)
N_FEATURES = 15


def random_sparse(rng, n_rows, n_features=N_FEATURES, density=0.3):
    X = sp.random(n_rows, n_features, density=density, format="csr", random_state=rng)
    X.data = rng.normal(scale=2.0, size=X.nnz)
    keep = np.ones(n_rows)
    keep[3] = 0.0  # an empty row
    X = sp.csr_matrix(sp.diags(keep) @ X)
    X.eliminate_zeros()
    assert X[3].nnz == 0
    return X


def chunks(n_rows):
    """Several partial_fit calls of uneven sizes, one of a single row."""
    return [slice(0, 1), slice(1, 17), slice(17, 40), slice(40, n_rows)]


def run_reference(X, targets, weights, n_outputs, params, passes=1):
    ref = ReferenceFTRL(
        n_outputs,
        loss=params["loss"],
        alpha=params["learning_rate"],
        beta=params["beta"],
        l1=params["l1"],
        l2=params["l2"],
        fit_intercept=params["fit_intercept"],
        epsilon=params.get("epsilon", 0.1),
    )
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    for _ in range(passes):
        for x, y, s in zip(rows, targets, weights):
            ref.learn_one(x, y, s)
    return ref, rows


def assert_matches_reference(est, ref, rows, n_features):
    z, n, coef = ref.state(n_features)
    assert_allclose(est.z_, z, **TOLERANCE)
    assert_allclose(est.n_, n, **TOLERANCE)
    assert_allclose(est.coef_, coef, **TOLERANCE)
    assert_allclose(est.intercept_, [ref.bias(k) for k in range(ref.n_outputs)], **TOLERANCE)
    assert_allclose(est.z_intercept_, ref.z_bias, **TOLERANCE)
    assert_allclose(est.n_intercept_, ref.n_bias, **TOLERANCE)
    return np.array([ref.margins(x) for x in rows])


HYPER = [
    dict(learning_rate=0.1, beta=1.0, l1=0.0, l2=0.0, fit_intercept=True),
    dict(learning_rate=0.5, beta=0.5, l1=0.3, l2=0.2, fit_intercept=True),
    dict(learning_rate=0.2, beta=0.0, l1=0.1, l2=0.0, fit_intercept=False),
]


@pytest.mark.parametrize("hyper", HYPER)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_classifier_matches_reference(hyper, weighted, engine):
    rng = np.random.RandomState(0)
    X = random_sparse(rng, 60)
    y = np.where(rng.rand(60) < 0.4, "yes", "no")
    sw = rng.uniform(0, 3, size=60) if weighted else np.ones(60)

    clf = FTRLClassifier(engine=engine, **hyper)
    for part in chunks(60):
        clf.partial_fit(X[part], y[part], classes=["no", "yes"], sample_weight=sw[part])

    targets = (y == "yes").astype(float)
    ref, rows = run_reference(X, targets, sw, 1, dict(hyper, loss="log_loss"))
    margins = assert_matches_reference(clf, ref, rows, N_FEATURES)
    assert_allclose(clf.decision_function(X), margins[:, 0], **TOLERANCE)
    p = np.array([1.0 / (1.0 + math.exp(-m)) for m in margins[:, 0]])
    assert_allclose(clf.predict_proba(X), np.column_stack([1 - p, p]), **TOLERANCE)
    assert list(clf.predict(X)) == ["yes" if m > 0 else "no" for m in margins[:, 0]]


@pytest.mark.parametrize("hyper", HYPER)
@pytest.mark.parametrize("n_classes", [3, 4])
def test_multinomial_classifier_matches_reference(hyper, n_classes, engine):
    rng = np.random.RandomState(1)
    X = random_sparse(rng, 70)
    y = rng.randint(n_classes, size=70) * 10  # labels 0, 10, 20, ...
    sw = rng.uniform(0, 2, size=70)

    clf = FTRLClassifier(engine=engine, **hyper)
    classes = np.arange(n_classes) * 10
    for part in chunks(70):
        clf.partial_fit(X[part], y[part], classes=classes, sample_weight=sw[part])

    ref, rows = run_reference(X, y // 10, sw, n_classes, dict(hyper, loss="multinomial"))
    margins = assert_matches_reference(clf, ref, rows, N_FEATURES)
    assert_allclose(clf.decision_function(X), margins, **TOLERANCE)
    exps = np.exp(margins - margins.max(axis=1, keepdims=True))
    assert_allclose(clf.predict_proba(X), exps / exps.sum(axis=1, keepdims=True), **TOLERANCE)
    assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0, **TOLERANCE)


@pytest.mark.parametrize("hyper", HYPER)
@pytest.mark.parametrize(
    "loss, extra",
    [("squared_error", {}), ("huber", {"epsilon": 0.5}), ("poisson", {})],
)
def test_regressor_matches_reference(hyper, loss, extra, engine):
    rng = np.random.RandomState(2)
    X = random_sparse(rng, 60)
    X.data *= 0.3
    if loss == "poisson":
        y = rng.poisson(2.0, size=60).astype(float)
    else:
        y = rng.normal(3.0, 2.0, size=60)
    sw = rng.uniform(0, 2, size=60)

    reg = FTRLRegressor(loss=loss, engine=engine, **extra, **hyper)
    for part in chunks(60):
        reg.partial_fit(X[part], y[part], sample_weight=sw[part])

    ref, rows = run_reference(X, y, sw, 1, dict(hyper, loss=loss, **extra))
    margins = assert_matches_reference(reg, ref, rows, N_FEATURES)[:, 0]
    expected = np.exp(margins) if loss == "poisson" else margins
    assert_allclose(reg.predict(X), expected, **TOLERANCE)


def make_problem(loss, n_rows, seed):
    """Sparse X, labels for the estimator, kernel targets and weights for ``loss``."""
    rng = np.random.RandomState(seed)
    X = random_sparse(rng, n_rows)
    sw = rng.uniform(0, 2, size=n_rows)
    if loss == "log_loss":
        y = rng.randint(2, size=n_rows)
        return X, y, y.astype(float), sw
    if loss == "multinomial":
        y = rng.randint(3, size=n_rows)
        return X, y, y, sw
    X.data *= 0.3
    y = (
        rng.poisson(2.0, size=n_rows).astype(float)
        if loss == "poisson"
        else rng.normal(3, 2, n_rows)
    )
    return X, y, y, sw


def make_estimator(loss, **params):
    if loss in ("log_loss", "multinomial"):
        return FTRLClassifier(**params)
    return FTRLRegressor(loss=loss, **params)


LOSSES = ["log_loss", "multinomial", "squared_error", "huber", "poisson"]


@pytest.mark.parametrize("hyper", HYPER[1:])
@pytest.mark.parametrize("batch_size", [2, 7, 64])
@pytest.mark.parametrize("loss", LOSSES)
def test_mini_batches_match_the_reference_batch_rule(loss, batch_size, hyper):
    X, y, targets, sw = make_problem(loss, 80, seed=4)
    est = make_estimator(loss, batch_size=batch_size, **hyper)
    assert_batches_match_reference(est, loss, X, y, targets, sw, batch_size, hyper)


def assert_batches_match_reference(est, loss, X, y, targets, sw, batch_size, hyper, **options):
    """Stream X through ``est.partial_fit`` in chunks(), and the reference's
    batch rule over the same batches (which never span two calls); compare.
    ``options`` go to ReferenceFTRL (power, n_initial)."""
    ref = ReferenceFTRL(
        3 if loss == "multinomial" else 1,
        loss=loss,
        alpha=hyper["learning_rate"],
        beta=hyper["beta"],
        l1=hyper["l1"],
        l2=hyper["l2"],
        fit_intercept=hyper["fit_intercept"],
        **options,
    )
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    for part in chunks(X.shape[0]):
        kwargs = {"classes": np.unique(y)} if isinstance(est, FTRLClassifier) else {}
        est.partial_fit(X[part], y[part], sample_weight=sw[part], **kwargs)
        for first in range(part.start, part.stop, batch_size):
            batch = slice(first, min(first + batch_size, part.stop))
            ref.learn_batch(rows[batch], targets[batch], sw[batch])
    assert_matches_reference(est, ref, rows, N_FEATURES)


@pytest.mark.parametrize("batch_size", [1, 5])
@pytest.mark.parametrize("loss", LOSSES)
def test_mini_batch_kernel_in_any_row_order(loss, batch_size):
    # fit with shuffle=True hands the kernel rows in a random order: the batch
    # is then gathered from scattered rows, and batch_size=1 is the exact rule.
    X, y, targets, sw = make_problem(loss, 60, seed=5)
    order = np.random.RandomState(0).permutation(60)
    n_outputs = 3 if loss == "multinomial" else 1
    hyper = HYPER[1]
    ref = ReferenceFTRL(
        n_outputs,
        loss=loss,
        alpha=hyper["learning_rate"],
        beta=hyper["beta"],
        l1=hyper["l1"],
        l2=hyper["l2"],
        fit_intercept=True,
    )
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    for first in range(0, 60, batch_size):
        batch = order[first : first + batch_size]
        ref.learn_batch([rows[i] for i in batch], targets[batch], sw[batch])

    state = LinearState(
        np.zeros((n_outputs, N_FEATURES), order="F"),
        np.zeros((n_outputs, N_FEATURES), order="F"),
        np.zeros(n_outputs),
        np.zeros(n_outputs),
    )
    parameters = Parameters(loss=get_loss(loss, epsilon=0.1), **hyper)
    # The batch pass even for batch_size=1 (get_engine would give the exact one).
    margins = NumpyBatchEngine(batch_size, NUMPY).learn(state, parameters, X, targets, sw, order)
    z, n, _ = ref.state(N_FEATURES)
    assert_allclose(state[0], z, **TOLERANCE)
    assert_allclose(state[1], n, **TOLERANCE)
    assert_allclose(state[2], ref.z_bias, **TOLERANCE)
    assert margins.shape == (60, n_outputs)
    if batch_size == 1:  # the exact per-row kernel gives the same state and margins
        exact = LinearState(*(np.zeros_like(a) for a in state))
        exact_margins = NUMPY.learn(exact, parameters, X, targets, sw, order)
        for a, b in zip(state, exact):
            assert_allclose(a, b, **TOLERANCE)
        assert_allclose(margins, exact_margins, **TOLERANCE)


def test_fit_passes_match_reference_and_class_weight_scales_gradients(engine):
    rng = np.random.RandomState(3)
    X = random_sparse(rng, 50)
    y = rng.randint(2, size=50)
    sw = rng.uniform(0.5, 2, size=50)
    class_weight = {0: 0.5, 1: 3.0}
    hyper = dict(learning_rate=0.3, beta=1.0, l1=0.2, l2=0.1, fit_intercept=True)

    clf = FTRLClassifier(
        engine=engine,
        max_iter=3,
        tol=None,
        early_stopping=False,
        shuffle=False,
        class_weight=class_weight,
        **hyper,
    )
    clf.fit(X, y, sample_weight=sw)
    assert clf.n_iter_ == 3
    assert clf.n_samples_seen_ == 150

    effective = sw * np.where(y == 1, 3.0, 0.5)
    ref, rows = run_reference(X, y.astype(float), effective, 1, dict(hyper, loss="log_loss"), 3)
    assert_matches_reference(clf, ref, rows, N_FEATURES)


def test_non_canonical_csr_matches_reference_and_is_not_modified(engine):
    # Unsorted and duplicate column indices within rows; the reference sums them.
    indptr = np.array([0, 3, 3, 7, 9])
    indices = np.array([4, 1, 4, 2, 0, 2, 7, 3, 3])
    data = np.array([1.0, -2.0, 0.5, 1.5, 3.0, -1.0, 2.0, 0.25, 0.75])
    X = sp.csr_matrix((data, indices, indptr), shape=(4, 8))
    assert not X.has_canonical_format
    y = np.array([1.0, 0.0, 1.0, 1.0])
    before = (X.indptr.copy(), X.indices.copy(), X.data.copy())

    clf = FTRLClassifier(engine=engine, learning_rate=0.4).partial_fit(X, y, classes=[0.0, 1.0])

    ref, rows = run_reference(
        X,
        y,
        np.ones(4),
        1,
        dict(loss="log_loss", learning_rate=0.4, beta=1.0, l1=0.0, l2=0.0, fit_intercept=True),
    )
    assert_matches_reference(clf, ref, rows, 8)
    for kept, now in zip(before, (X.indptr, X.indices, X.data)):
        assert np.array_equal(kept, now)


@pytest.mark.parametrize("loss", ["log_loss", "squared_error"])
def test_loss_curve_is_the_progressive_validation_loss_of_each_call(loss, engine):
    """Each partial_fit call appends the weighted mean loss of its rows, each
    scored by the reference's weights before that row was learned."""
    rng = np.random.default_rng(7)
    X = random_sparse(rng, 60)
    weights = rng.uniform(0.5, 2.0, size=60)
    if loss == "log_loss":
        y = rng.integers(0, 2, size=60).astype(float)
        model = FTRLClassifier(learning_rate=0.3, beta=0.5, l1=0.1, engine=engine)
    else:
        y = rng.normal(size=60)
        model = FTRLRegressor(learning_rate=0.3, beta=0.5, l1=0.1, engine=engine)
    ref = ReferenceFTRL(1, loss=loss, alpha=0.3, beta=0.5, l1=0.1, l2=0.0, fit_intercept=True)
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    expected = []
    for part in chunks(60):
        total = 0.0
        for x, target, s in zip(rows[part], y[part], weights[part]):
            margin = ref.margins(x)[0]
            if loss == "log_loss":
                p = 1.0 / (1.0 + math.exp(-margin))
                total += s * -math.log(p if target == 1 else 1.0 - p)
            else:
                total += s * 0.5 * (margin - target) ** 2
            ref.learn_one(x, target, s)
        expected.append(total / weights[part].sum())
        if loss == "log_loss":
            model.partial_fit(X[part], y[part], classes=[0.0, 1.0], sample_weight=weights[part])
        else:
            model.partial_fit(X[part], y[part], sample_weight=weights[part])
    assert_allclose(model.loss_curve_, expected, rtol=1e-10)
    # fit starts a new curve with one entry per pass.
    model.set_params(max_iter=3, tol=None, early_stopping=False).fit(X, y)
    assert len(model.loss_curve_) == 3


# TensorFlow's generalization of the rate, alpha / (beta + n ** -power), and an
# initial accumulator n_0 > 0; power -0.5 with n_0 = 0 is the paper (tested above).
RATE_VARIANTS = [
    {"learning_rate_power": -0.25, "initial_accumulator_value": 0.0},
    {"learning_rate_power": 0.0, "initial_accumulator_value": 0.0},
    {"learning_rate_power": -1.0, "initial_accumulator_value": 0.1},
    {"learning_rate_power": -0.5, "initial_accumulator_value": 0.3},
]


@pytest.mark.parametrize("variant", RATE_VARIANTS, ids=str)
@pytest.mark.parametrize("batch_size", [1, 7])
@pytest.mark.parametrize("loss", LOSSES)
def test_learning_rate_power_and_initial_accumulator_match_the_reference(
    loss, batch_size, variant, engine
):
    # Mini-batches run on numpy only: engine="auto" there, which is numpy.
    engine = engine if batch_size == 1 else "auto"
    X, y, targets, sw = make_problem(loss, 50, seed=6)
    hyper = HYPER[1]
    est = make_estimator(loss, batch_size=batch_size, engine=engine, **hyper, **variant)
    assert_batches_match_reference(
        est,
        loss,
        X,
        y,
        targets,
        sw,
        batch_size,
        hyper,
        power=variant["learning_rate_power"],
        n_initial=variant["initial_accumulator_value"],
    )


def test_initial_accumulator_value_is_where_n_starts_and_zero_power_is_a_constant_rate():
    X, y, _, _ = make_problem("log_loss", 40, seed=8)
    assert X[3].nnz == 0  # an empty row: only the intercept learns
    clf = FTRLClassifier(initial_accumulator_value=0.25, learning_rate=0.4)
    clf.partial_fit(X[3], y[3:4], classes=[0, 1])
    assert np.all(clf.n_ == 0.25) and np.all(clf.coef_ == 0.0)
    # The intercept's first gradient is sigmoid(0) - y = +-0.5, added to 0.25.
    assert clf.n_intercept_[0] == 0.25 + 0.5**2
    # With power 0 the rate is alpha / (beta + 1) for every coordinate and
    # sigma is 0, so w = -z / ((beta + 1) / alpha) exactly (l1 = l2 = 0).
    clf = FTRLClassifier(learning_rate_power=0.0, learning_rate=0.4, beta=1.5)
    clf.partial_fit(X, y, classes=[0, 1])
    assert_allclose(clf.coef_, -clf.z_ / ((1.5 + 1.0) / 0.4), rtol=1e-15)


@pytest.mark.parametrize("loss", ["log_loss", "multinomial"])
def test_a_mini_batch_of_more_than_65536_nonzeros_matches_the_reference(loss):
    # A batch's columns are grouped through slots holding positions in the
    # batch; here 74,400 of them (4,960 dense rows of 15 columns in the last
    # partial_fit call), beyond what 16-bit slots would hold.
    X, y, targets, sw = make_problem(loss, 5000, seed=6)
    X = sp.csr_matrix(np.random.RandomState(6).normal(size=X.shape))
    hyper = HYPER[1]
    est = make_estimator(loss, batch_size=5000, **hyper)
    assert_batches_match_reference(est, loss, X, y, targets, sw, 5000, hyper)
