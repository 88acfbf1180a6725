"""The factorization machines against the slow reference written from
docs/fm_math.rst (tests/reference_fm.py), in every engine: the exact per-row
pass (numpy, numba) and the mini-batch pass (numpy) at several batch sizes."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from reference import rows_as_dicts
from reference_fm import ReferenceFM, explicit_pairwise
from test_reference import N_FEATURES, chunks, random_sparse

from conftest import HAS_NUMBA
from skftrl import FMClassifier, FMRegressor
from skftrl._engines import FMParameters, FMState, get_engine, get_loss
from skftrl._engines._fm_batch import FMBatchEngine as FMNumpyBatchEngine
from skftrl._engines._fm_numpy import ENGINE as FM_NUMPY
from skftrl._engines._records import new_factor_state

TOLERANCE = dict(rtol=1e-12, atol=1e-12)
K_COMPONENTS = 3

HYPER = [
    dict(
        learning_rate=0.1,
        beta=1.0,
        l1=0.0,
        l2=0.0,
        fit_intercept=True,
        factor_l2=0.0,
        init_stdev=0.1,
    ),
    dict(
        learning_rate=0.5,
        beta=0.5,
        l1=0.3,
        l2=0.2,
        fit_intercept=True,
        factor_learning_rate=0.05,
        factor_l2=0.1,
        init_stdev=0.3,
    ),
    dict(
        learning_rate=0.2,
        beta=2.0,
        l1=0.1,
        l2=0.0,
        fit_intercept=False,
        factor_l2=0.01,
        init_stdev=0.05,
    ),
]


@pytest.fixture(
    params=[
        ("numpy", 1),
        pytest.param(
            ("numba", 1),
            marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed"),
        ),
        ("numpy", 2),
        ("auto", 7),  # mini-batches run on numpy, whatever numba's presence
        ("numpy", 64),
    ],
    ids=["numpy", "numba", "numpy-batch2", "auto-batch7", "numpy-batch64"],
)
def fm_engine(request):
    """Each FM engine, as ``dict(engine=..., batch_size=...)``: the exact
    per-row pass in numpy and numba, and the mini-batch pass."""
    engine, batch_size = request.param
    return dict(engine=engine, batch_size=batch_size)


def run_reference(X, targets, weights, n_outputs, params, random_state, batch_size=1):
    """The reference's pass over the rows of X as the estimators' partial_fit
    calls over chunks() take them: row by row, or in mini-batches that never
    span two calls."""
    ref = make_reference(n_outputs, X.shape[1], params, random_state)
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    if batch_size == 1:
        for x, y, s in zip(rows, targets, weights):
            ref.learn_one(x, y, s)
        return ref, rows
    for part in chunks(X.shape[0]):
        for first in range(part.start, part.stop, batch_size):
            batch = slice(first, min(first + batch_size, part.stop))
            ref.learn_batch(rows[batch], targets[batch], weights[batch])
    return ref, rows


def make_reference(n_outputs, n_features, params, random_state):
    """A fresh ReferenceFM with the hyper-parameters ``params`` (with its ``loss``)."""
    return ReferenceFM(
        n_outputs,
        n_features,
        params.get("n_components", K_COMPONENTS),
        loss=params["loss"],
        alpha=params["learning_rate"],
        beta=params["beta"],
        l1=params["l1"],
        l2=params["l2"],
        fit_intercept=params["fit_intercept"],
        init_stdev=params["init_stdev"],
        random_state=random_state,
        alpha_v=params.get("factor_learning_rate"),
        lambda_v=params["factor_l2"],
        epsilon=params.get("epsilon", 0.1),
        power=params.get("learning_rate_power", -0.5),
        n_initial=params.get("initial_accumulator_value", 0.0),
    )


def assert_matches_reference(est, ref, rows):
    """State, weights and factors equal the reference's; returns its margins."""
    assert_allclose(est.z_, ref.z, **TOLERANCE)
    assert_allclose(est.n_, ref.n, **TOLERANCE)
    assert_allclose(est.z_intercept_, ref.z_bias, **TOLERANCE)
    assert_allclose(est.n_intercept_, ref.n_bias, **TOLERANCE)
    assert_allclose(est.z_factors_, ref.z_v, **TOLERANCE)
    assert_allclose(est.n_factors_, ref.n_v, **TOLERANCE)
    assert_allclose(est.coef_, ref.coef(), **TOLERANCE)
    assert_allclose(est.intercept_, ref.intercept(), **TOLERANCE)
    assert_allclose(est.components_, ref.factors(), **TOLERANCE)
    return np.array([ref.margins(x) for x in rows])


def fm_params(hyper):
    return dict(hyper, n_components=K_COMPONENTS, random_state=7)


@pytest.mark.parametrize("hyper", HYPER)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_classifier_matches_reference(hyper, weighted, fm_engine):
    rng = np.random.RandomState(0)
    X = random_sparse(rng, 60)
    y = np.where(rng.rand(60) < 0.4, "yes", "no")
    sw = rng.uniform(0, 3, size=60) if weighted else np.ones(60)

    clf = FMClassifier(**fm_engine, **fm_params(hyper))
    for part in chunks(60):
        clf.partial_fit(X[part], y[part], classes=["no", "yes"], sample_weight=sw[part])

    targets = (y == "yes").astype(float)
    ref, rows = run_reference(
        X, targets, sw, 1, dict(hyper, loss="log_loss"), 7, fm_engine["batch_size"]
    )
    margins = assert_matches_reference(clf, ref, rows)[:, 0]
    assert_allclose(clf.decision_function(X), margins, **TOLERANCE)
    p = np.array([1.0 / (1.0 + math.exp(-m)) for m in margins])
    assert_allclose(clf.predict_proba(X), np.column_stack([1 - p, p]), **TOLERANCE)
    assert list(clf.predict(X)) == ["yes" if m > 0 else "no" for m in margins]


@pytest.mark.parametrize("hyper", HYPER)
def test_multinomial_classifier_matches_reference(hyper, fm_engine):
    # One set of weights and factors per class.
    rng = np.random.RandomState(1)
    X = random_sparse(rng, 70)
    y = rng.randint(3, size=70) * 10
    sw = rng.uniform(0, 2, size=70)

    clf = FMClassifier(**fm_engine, **fm_params(hyper))
    for part in chunks(70):
        clf.partial_fit(X[part], y[part], classes=[0, 10, 20], sample_weight=sw[part])

    ref, rows = run_reference(
        X, y // 10, sw, 3, dict(hyper, loss="multinomial"), 7, fm_engine["batch_size"]
    )
    margins = assert_matches_reference(clf, ref, rows)
    assert clf.components_.shape == (3, N_FEATURES, K_COMPONENTS)
    assert_allclose(clf.decision_function(X), margins, **TOLERANCE)
    exps = np.exp(margins - margins.max(axis=1, keepdims=True))
    assert_allclose(clf.predict_proba(X), exps / exps.sum(axis=1, keepdims=True), **TOLERANCE)


@pytest.mark.parametrize("hyper", HYPER)
@pytest.mark.parametrize(
    "loss, extra", [("squared_error", {}), ("huber", {"epsilon": 0.5}), ("poisson", {})]
)
def test_regressor_matches_reference(hyper, loss, extra, fm_engine):
    rng = np.random.RandomState(2)
    X = random_sparse(rng, 60)
    X.data *= 0.3
    if loss == "poisson":
        y = rng.poisson(2.0, size=60).astype(float)
    else:
        y = rng.normal(3.0, 2.0, size=60)
    sw = rng.uniform(0, 2, size=60)

    reg = FMRegressor(loss=loss, **fm_engine, **extra, **fm_params(hyper))
    for part in chunks(60):
        reg.partial_fit(X[part], y[part], sample_weight=sw[part])

    ref, rows = run_reference(
        X, y, sw, 1, dict(hyper, loss=loss, **extra), 7, fm_engine["batch_size"]
    )
    margins = assert_matches_reference(reg, ref, rows)[:, 0]
    expected = np.exp(margins) if loss == "poisson" else margins
    assert_allclose(reg.predict(X), expected, **TOLERANCE)


def test_rate_power_and_initial_accumulator_match_reference(fm_engine):
    # TensorFlow's generalization applies to every coordinate, factors included.
    hyper = dict(HYPER[1], learning_rate_power=-0.3, initial_accumulator_value=0.2)
    rng = np.random.RandomState(3)
    X = random_sparse(rng, 50)
    y = rng.normal(size=50)
    reg = FMRegressor(**fm_engine, **fm_params(hyper))
    for part in chunks(50):
        reg.partial_fit(X[part], y[part])
    ref, rows = run_reference(
        X, y, np.ones(50), 1, dict(hyper, loss="squared_error"), 7, fm_engine["batch_size"]
    )
    assert_matches_reference(reg, ref, rows)


@pytest.mark.parametrize("batch_size", [1, 5])
@pytest.mark.parametrize("loss", ["log_loss", "multinomial", "poisson"])
def test_the_mini_batch_pass_in_any_row_order(loss, batch_size):
    # fit with shuffle=True hands the pass its rows in a random order: each
    # batch is then gathered from scattered rows. batch_size=1 is the per-row rule.
    rng = np.random.RandomState(8)
    X = random_sparse(rng, 60)
    targets = rng.randint(3, size=60) if loss == "multinomial" else rng.randint(2, size=60)
    sw = rng.uniform(0, 2, size=60)
    order = rng.permutation(60)
    n_outputs = 3 if loss == "multinomial" else 1
    hyper = dict(HYPER[1], loss=loss)
    ref = make_reference(n_outputs, N_FEATURES, hyper, 7)
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    ref_margins = []
    for first in range(0, 60, batch_size):
        batch = order[first : first + batch_size]
        ref_margins += ref.learn_batch([rows[i] for i in batch], targets[batch], sw[batch])

    parameters = engine_parameters(hyper)
    state = fresh_state(n_outputs, parameters, hyper["init_stdev"])
    # The mini-batch pass even for batch_size=1 (get_engine would give the per-row one).
    margins = FMNumpyBatchEngine(batch_size, FM_NUMPY).learn(
        state, parameters, X, targets, sw, order
    )
    assert_allclose(margins, ref_margins, **TOLERANCE)
    for array, expected in zip(state, (ref.z, ref.n, ref.z_bias, ref.n_bias, ref.z_v, ref.n_v)):
        assert_allclose(array, expected, **TOLERANCE)
    if batch_size == 1:
        # The per-row pass gives the same state and margins, to rounding only:
        # it sums a row's linear products as a matrix product (values @ w,
        # in the order numpy and BLAS choose), the mini-batch pass with
        # np.bincount in row order, so the last bits can differ.
        exact = fresh_state(n_outputs, parameters, hyper["init_stdev"])
        exact_margins = FM_NUMPY.learn(exact, parameters, X, targets, sw, order)
        assert_allclose(margins, exact_margins, **TOLERANCE)
        for array, expected in zip(state, exact):
            assert_allclose(array, expected, **TOLERANCE)


def engine_parameters(hyper):
    """The engine's parameters record of a HYPER entry with its ``loss``."""
    hyper = dict(hyper)
    return FMParameters(
        loss=get_loss(hyper.pop("loss"), epsilon=0.1),
        factor_learning_rate=hyper.pop("factor_learning_rate", hyper["learning_rate"]),
        factor_l2=hyper["factor_l2"],
        **{name: hyper[name] for name in ("learning_rate", "beta", "l1", "l2", "fit_intercept")},
    )


def fresh_state(n_outputs, parameters, init_stdev):
    """A new FM state over N_FEATURES, its factors drawn with random_state=7."""
    z_factors, n_factors, _ = new_factor_state(
        n_outputs,
        N_FEATURES,
        K_COMPONENTS,
        np.float64,
        parameters,
        init_stdev=init_stdev,
        random_state=7,
    )
    linear = (np.zeros((n_outputs, N_FEATURES)) for _ in range(2))
    return FMState(*linear, np.zeros(n_outputs), np.zeros(n_outputs), z_factors, n_factors)


@pytest.mark.parametrize("random_state", [0, 12345])
def test_initial_factors_are_drawn_as_the_docs_say(random_state):
    # docs/fm_math.rst: v0 = init_stdev * default_rng(random_state).standard_normal((K, F, k)).
    rng = np.random.RandomState(4)
    X = random_sparse(rng, 20)
    y = rng.randint(3, size=20)
    clf = FMClassifier(n_components=4, init_stdev=0.25, factor_l2=0.0, random_state=random_state)
    # Rows of weight 0 learn nothing (without factor_l2, which applies to every
    # row), the empty row 3 only the intercept: the factors are the initial ones.
    only_the_empty_row = np.zeros(20)
    only_the_empty_row[3] = 1.0
    clf.partial_fit(X, y, classes=[0, 1, 2], sample_weight=only_the_empty_row)
    expected = 0.25 * np.random.default_rng(random_state).standard_normal((3, N_FEATURES, 4))
    assert_allclose(clf.components_, expected, rtol=1e-15, atol=0)
    assert np.all(clf.n_factors_ == 0)
    again = FMClassifier(n_components=4, init_stdev=0.25, factor_l2=0.0, random_state=random_state)
    again.partial_fit(X, y, classes=[0, 1, 2], sample_weight=only_the_empty_row)
    assert np.array_equal(again.z_factors_, clf.z_factors_)


def test_a_random_state_instance_draws_with_its_own_standard_normal():
    parameters = FMParameters(
        loss=get_loss("log_loss"),
        learning_rate=0.1,
        beta=1.0,
        l1=0.0,
        l2=0.0,
        factor_learning_rate=0.5,
    )
    z, _, _ = new_factor_state(
        1, 5, 2, np.float64, parameters, init_stdev=1.0, random_state=np.random.RandomState(3)
    )
    expected = np.random.RandomState(3).standard_normal((1, 5, 2))
    assert_allclose(-z * 0.5, expected, rtol=1e-15)


def random_rows_and_factors(seed, n_rows=30, n_features=12, k=4):
    rng = np.random.RandomState(seed)
    X = sp.random(n_rows, n_features, density=0.5, format="csr", random_state=rng)
    X.data = rng.normal(scale=2.0, size=X.nnz)
    # A row where one feature dominates: s_f^2 - sum v^2 x^2 cancels most.
    X = sp.vstack(
        [X, sp.csr_matrix(([1e4, 1e-3, 2e-3], ([0, 0, 0], [1, 5, 7])), shape=(1, n_features))]
    ).tocsr()
    factors = rng.normal(scale=0.7, size=(1, n_features, k))
    return X, factors


def test_the_pass_margin_equals_the_explicit_pairwise_sum(fm_engine):
    # Each engine's O(k * nnz) margin, on rows of weight 0 (which change
    # nothing), against the sum over pairs i < j of <v_i, v_j> x_i x_j.
    X, factors = random_rows_and_factors(seed=5)
    n_features = factors.shape[1]
    z_factors = -factors * (1.0 / 0.5)  # z0 = -v0 beta / alpha_v, beta = 1, alpha_v = 0.5
    state = FMState(
        np.zeros((1, n_features)),
        np.zeros((1, n_features)),
        np.zeros(1),
        np.zeros(1),
        z_factors,
        np.zeros_like(z_factors),
    )
    parameters = FMParameters(
        loss=get_loss("squared_error"),
        learning_rate=0.1,
        beta=1.0,
        l1=0.0,
        l2=0.0,
        factor_learning_rate=0.5,
    )
    margins = get_engine("fm", fm_engine["engine"], fm_engine["batch_size"]).learn(
        state, parameters, X, np.zeros(X.shape[0]), np.zeros(X.shape[0]), np.arange(X.shape[0])
    )
    assert_pairwise_sums(margins[:, 0], X, -z_factors * 0.5)


def assert_pairwise_sums(margins, X, factors):
    """``margins`` are the explicit pairwise sums of the rows of X, to 1e-12 of
    the squares that the O(k * nnz) identity subtracts: rounding can cost no
    less when one feature dominates a row (its last row)."""
    V = factors[0]
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    expected = np.array([explicit_pairwise(x, V.tolist()) for x in rows])
    sums = np.asarray(X @ V)
    squares = (sums * sums + np.asarray(X.multiply(X) @ (V * V))).sum(axis=1)
    assert np.all(np.abs(margins - expected) <= 1e-12 * np.maximum(squares, 1.0))
    # Without the dominant row, to 1e-12 of the result itself.
    assert_allclose(margins[:-1], expected[:-1], rtol=1e-12, atol=1e-12)
    # The dominant row's identity subtracts squares ~1e4 times its result.
    assert squares[-1] > 1e4 * abs(expected[-1])


def test_prediction_margin_equals_the_explicit_pairwise_sum():
    X, _ = random_rows_and_factors(seed=6)
    y = np.random.RandomState(6).normal(size=X.shape[0])
    reg = FMRegressor(n_components=4, init_stdev=0.5, random_state=0).partial_fit(X, y)
    linear = X @ reg.coef_[0] + reg.intercept_[0]
    assert_pairwise_sums(reg.predict(X) - linear, X, reg.components_)
    # Dense input: the same matrix products.
    assert_pairwise_sums(reg.predict(X.toarray()) - linear, X, reg.components_)
