"""Extreme inputs: scales, widths and lengths far from the usual, degenerate
batches, and input memory skftrl does not own. Each gives a finite model
that is checked against an independent expectation, or an error that
leaves the model unchanged (tests/test_bad_input.py holds the table of errors).
"""

import tracemalloc
import warnings
from fractions import Fraction

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from reference import ReferenceFTRL, rows_as_dicts
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier, SGDRegressor
from test_reference import assert_matches_reference, run_reference

from conftest import assert_same, needs_numba, snapshot, with_int64_indices
from skftrl import FTRLClassifier, FTRLRegressor
from skftrl.datasets import load_a9a, load_dna

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]
# Every way to run the training: exact engines, a mini-batch, a float32 state.
ENGINE_PARAMS = [
    pytest.param({"engine": "numpy"}, id="numpy"),
    pytest.param({"engine": "numba"}, id="numba", marks=needs_numba),
    pytest.param({"batch_size": 16}, id="batch_size=16"),
    pytest.param({"engine": "numpy", "dtype": np.float32}, id="float32"),
]


@pytest.fixture(scope="module")
def a9a_head():
    """The first 3,000 rows of a9a, labels -1 and +1."""
    X, y, _, _ = load_a9a()
    return X[:3000], y[:3000]


def assert_same_state(got, expected):
    for name in STATE:
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
        assert getattr(got, name).dtype == getattr(expected, name).dtype, name


# ------------------------------------------------------------------ scales
@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_values_of_a_million_match_the_reference(a9a_head, engine):
    X, y = a9a_head
    X, y = X[:500] * 1e6, y[:500]
    hyper = dict(learning_rate=0.1, beta=1.0, l1=1e3, l2=0.5, fit_intercept=True)
    model = FTRLClassifier(engine=engine, **hyper).partial_fit(X, y, classes=[-1.0, 1.0])
    reference, rows = run_reference(
        X, (y == 1).astype(float), np.ones(500), 1, dict(hyper, loss="log_loss")
    )
    assert_matches_reference(model, reference, rows, X.shape[1])
    assert np.all(np.isfinite(model.predict_proba(X)))


@pytest.mark.parametrize("engine_params", ENGINE_PARAMS)
def test_values_of_1e_300_leave_only_the_intercept_learning(a9a_head, engine_params):
    """A gradient d * 1e-300 squares to 0 (below the smallest float) and its
    weight times 1e-300 is 0 again: n stays 0, every margin is the intercept,
    and the intercept learns exactly as on rows with no features at all."""
    X, y = a9a_head
    tiny = FTRLClassifier(**engine_params).partial_fit(X * 1e-300, y, classes=[-1.0, 1.0])
    empty = FTRLClassifier(**engine_params).partial_fit(
        sp.csr_matrix(X.shape), y, classes=[-1.0, 1.0]
    )
    assert np.all(tiny.n_ == 0)
    assert np.all(np.isfinite(tiny.z_))
    if tiny.z_.dtype == np.float64:
        assert np.any(tiny.z_ != 0)  # z did move, by ~1e-300
    else:
        assert np.all(tiny.z_ == 0)  # ~1e-300 is below float32's smallest value, 1e-45
    assert np.array_equal(tiny.z_intercept_, empty.z_intercept_)
    assert np.array_equal(tiny.n_intercept_, empty.n_intercept_)
    assert np.array_equal(tiny.predict_proba(X * 1e-300), empty.predict_proba(X))


@pytest.mark.parametrize("engine_params", ENGINE_PARAMS)
@pytest.mark.parametrize("beta, learning_rate", [(5e-324, 2.0), (1e-310, 1e20)])
def test_a_beta_so_small_that_beta_over_the_rate_underflows_gives_a_finite_state(
    engine_params, beta, learning_rate
):
    """Regression: beta > 0 with beta / learning_rate rounding to 0 made the
    weight of a coordinate not yet learned 0 / 0, and the state NaN."""
    X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    for model in (
        FTRLClassifier(beta=beta, learning_rate=learning_rate, **engine_params).partial_fit(
            X, [0, 1, 1], classes=[0, 1]
        ),
        FTRLRegressor(beta=beta, learning_rate=learning_rate, **engine_params).partial_fit(
            X, [0.0, 1.0, 3.0]
        ),
    ):
        for name in STATE:
            assert np.all(np.isfinite(getattr(model, name))), name
        # Gradients reached the first coordinate, and the model predicts.
        assert model.n_[0, 0] > 0
        assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize(
    "engine",
    ["numpy", pytest.param("numba", marks=needs_numba), pytest.param("batch", id="batch_size=4")],
)
@pytest.mark.parametrize("beta, l2", [(0.0, 1e-60), (1e-60, 0.0), (0.0, 1e-110)])
@pytest.mark.parametrize("weight", [3e-45, 1e-30])
def test_float32_state_with_tiny_gradients_and_a_tiny_denominator(engine, beta, l2, weight):
    """Regression (found by hypothesis): gradients below 2.6e-23 have squares
    that round to 0 in float32, so n stayed 0 while z moved; with beta /
    learning_rate + l2 tiny but not 0, z over it overflowed float32 and the
    state became inf, then NaN. A positive n is now stored as at least the
    smallest float32, so the weight stays z / sqrt(n)-sized."""
    params = dict(batch_size=4) if engine == "batch" else dict(engine=engine)
    X = np.array([[1.0, 2.0], [1.0, 1.0], [3.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    weights = np.full(5, weight)
    for model in (
        FTRLRegressor(
            loss="huber", epsilon=1.0, beta=beta, l2=l2, dtype=np.float32, **params
        ).partial_fit(X, [1.0, 0.0, 0.0, 0.0, 0.0], sample_weight=weights),
        FTRLClassifier(beta=beta, l2=l2, dtype=np.float32, **params).partial_fit(
            X, [1, 0, 0, 0, 0], classes=[0, 1], sample_weight=weights
        ),
    ):
        for name in STATE:
            assert np.all(np.isfinite(getattr(model, name))), name
        assert np.all(model.n_ > 0)  # every coordinate received a gradient
        assert np.all(np.abs(model.coef_) <= model.learning_rate)


@pytest.mark.parametrize("engine_params", ENGINE_PARAMS)
def test_sample_weights_near_the_largest_float(a9a_head, engine_params):
    """Weights of 1e300 and 1e308 make every gradient exceed the clipping
    bound, so both give the same model; the state, the predictions and the
    progressive loss (whose weight sum once overflowed to inf / inf = NaN)
    stay finite."""
    X, y = a9a_head
    models = [
        FTRLClassifier(**engine_params).partial_fit(
            X, y, classes=[-1.0, 1.0], sample_weight=np.full(len(y), weight)
        )
        for weight in (1e300, 1e308)
    ]
    for model in models:
        for name in STATE:
            assert np.all(np.isfinite(getattr(model, name))), name
        assert np.all(np.isfinite(model.predict_proba(X)))
        assert np.all(np.isfinite(model.loss_curve_))
    assert_same_state(*models)
    assert models[0].loss_curve_ == models[1].loss_curve_


@pytest.mark.parametrize("engine_params", ENGINE_PARAMS)
@pytest.mark.parametrize(
    "hyper",
    [
        {"learning_rate": 1e300},
        {"learning_rate": 1e300, "beta": 0.0},
        {"learning_rate": 1e-300},
        {"beta": 1e300},
        {"l1": 1e300},
        {"l2": 1e300},
    ],
    ids=lambda hyper: ",".join(f"{key}={value:g}" for key, value in hyper.items()),
)
def test_extreme_hyper_parameters_give_a_finite_model(a9a_head, engine_params, hyper):
    """Hyper-parameters at the ends of their ranges (infinite ones are
    rejected, see tests/test_bad_input.py) still give a finite state,
    predictions and progressive loss."""
    X, y = a9a_head
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or 0/0 inside
        model = FTRLClassifier(**hyper, **engine_params).partial_fit(X, y, classes=[-1.0, 1.0])
        probabilities = model.predict_proba(X)
    for name in STATE:
        assert np.all(np.isfinite(getattr(model, name))), name
    assert np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(probabilities))
    assert np.all(np.isfinite(model.loss_curve_))
    if "l1" in hyper:
        assert np.all(model.coef_ == 0)  # |z| never reaches 1e300


# The largest finite float64, 1.8e308: margins and losses beyond it are clamped to it.
LARGEST = np.finfo(np.float64).max
# Every way to run the training, float32 states in both exact engines.
ALL_ENGINE_PARAMS = ENGINE_PARAMS + [
    pytest.param({"engine": "numba", "dtype": np.float32}, id="numba-float32", marks=needs_numba)
]
TASKS = ["binary", "multiclass", "squared_error", "huber", "poisson"]


def huge_problem(task, scale, n_rows=60, n_features=8, seed=0):
    """Sparse rows of values up to ``scale`` in magnitude, of both signs, and
    targets of the task (regression targets up to ``scale`` too). Some stored
    values are 0: a derivative that overflowed to inf made their gradient NaN."""
    rng = np.random.RandomState(seed)
    X = sp.random(n_rows, n_features, density=0.6, format="csr", random_state=rng)
    X.data = rng.uniform(-1.0, 1.0, size=X.nnz) * scale
    X.data[::7] = 0.0
    first = X[:, 0].toarray()[:, 0]
    if task == "binary":
        return X, (first > 0).astype(int)
    if task == "multiclass":
        return X, np.digitize(rng.uniform(size=n_rows), [1 / 3, 2 / 3])
    y = rng.uniform(-1.0, 1.0, size=n_rows) * scale
    return X, np.abs(y) if task == "poisson" else y


def model_for(task, **params):
    if task in ("binary", "multiclass"):
        return FTRLClassifier(**params)
    return FTRLRegressor(loss=task, **params)


def learn_twice(model, X, y):
    """Two partial_fit calls (the second from a state far from 0), then a warm fit."""
    classes = {"classes": np.unique(y)} if isinstance(model, FTRLClassifier) else {}
    model.partial_fit(X, y, **classes)
    model.partial_fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.set_params(warm_start=True, max_iter=2, random_state=0).fit(X, y)


@pytest.mark.parametrize("engine_params", ALL_ENGINE_PARAMS)
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scale", [1e250, 1e300, LARGEST])
@pytest.mark.parametrize("learning_rate", [0.1, 1e3])
def test_values_up_to_the_largest_float_give_a_finite_model(
    engine_params, task, scale, learning_rate
):
    """Regression: between 1e250 and the largest float, margins overflowed to
    inf - inf: multinomial states, regressors in numba and mini-batches
    turned NaN, losses became inf and regressors predicted -inf. Now state,
    margins, losses and predictions are finite, with no RuntimeWarning."""
    X, y = huge_problem(task, scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or 0/0 inside
        model = learn_twice(model_for(task, learning_rate=learning_rate, **engine_params), X, y)
        if isinstance(model, FTRLClassifier):
            proba = model.predict_proba(X)
            margins = model.decision_function(X)
            assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
            assert np.all(np.isfinite(model.predict_log_proba(X)))
        else:
            proba = margins = model.predict(X)
            if task == "poisson":
                assert np.all(proba >= 0)
    for name in STATE:
        assert np.all(np.isfinite(getattr(model, name))), name
    assert np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(model.intercept_))
    assert np.all(np.isfinite(margins)) and np.all(np.isfinite(proba))
    assert np.all(np.isfinite(model.loss_curve_))
    assert model.n_[0].max() > 0  # it did learn


@needs_numba
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scale", [1e250, 1e300, LARGEST])
@pytest.mark.parametrize("learning_rate", [0.1, 1e3])
def test_engines_agree_up_to_the_largest_float(dtype, task, scale, learning_rate):
    """Regression: with margins beyond the float range the numpy engine made
    no update where numba applied a step of -1e100. Both engines now give
    the same state and margins, to rounding."""
    X, y = huge_problem(task, scale)
    models = [
        learn_twice(model_for(task, learning_rate=learning_rate, engine=engine, dtype=dtype), X, y)
        for engine in ("numpy", "numba")
    ]
    for name in STATE:
        got, expected = (getattr(model, name) for model in models)
        assert_allclose(got, expected, rtol=1e-9, atol=0, err_msg=name)
    assert_allclose(models[0].loss_curve_, models[1].loss_curve_, rtol=1e-9)
    scores = [
        model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X)
        for model in models
    ]
    assert_allclose(scores[0], scores[1], rtol=1e-9)


def exact_margins(X, coef, intercept):
    """X @ coef.T + intercept summed exactly (fractions), then rounded to a
    float and clamped to the largest float: an independent reference."""
    X = sp.csr_matrix(X)
    margins = np.empty((X.shape[0], coef.shape[0]))
    for row in range(X.shape[0]):
        start, end = X.indptr[row], X.indptr[row + 1]
        for k in range(coef.shape[0]):
            exact = Fraction(intercept[k]) + sum(
                Fraction(value) * Fraction(coef[k, column])
                for value, column in zip(X.data[start:end], X.indices[start:end])
            )
            try:
                margins[row, k] = float(exact)
            except OverflowError:
                margins[row, k] = LARGEST if exact > 0 else -LARGEST
            margins[row, k] = min(max(margins[row, k], -LARGEST), LARGEST)
    return margins


@pytest.mark.parametrize("engine_params", ALL_ENGINE_PARAMS)
@pytest.mark.parametrize("task", ["binary", "multiclass", "squared_error", "poisson"])
def test_margins_beyond_the_float_range_are_clamped_to_it(engine_params, task):
    """Regression: a regressor's predict returned -inf (its docstring says
    "always finite"), and products of both signs beyond the float range
    summed to inf - inf = NaN. A margin is the exact sum rounded, clamped
    to +-1.8e308; X is scored by a model trained on ordinary values."""
    X, y = huge_problem(task, 1.0, n_rows=200)
    if task == "squared_error":
        y = 10.0 * y  # weights of several units, whose products overflow
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = model_for(
            task,
            learning_rate=5.0,
            random_state=0,
            max_iter=3,
            early_stopping=False,
            **engine_params,
        )
        model.fit(X, y)
    rng = np.random.RandomState(1)
    huge = sp.random(40, X.shape[1], density=0.7, format="csr", random_state=rng)
    huge.data = rng.uniform(-1.0, 1.0, size=huge.nnz) * LARGEST
    huge.data[huge.indptr[0] : huge.indptr[1]] = 0.0  # a row of zeros: the intercept alone
    expected = exact_margins(huge, model.coef_, model.intercept_)
    assert np.any(np.abs(expected) == LARGEST) and np.any(np.abs(expected) < 1e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        if isinstance(model, FTRLClassifier):
            got = model.decision_function(huge).reshape(expected.shape)
            assert np.all(np.isfinite(model.predict_proba(huge)))
        else:
            got = model.predict(huge)[:, None]
            if task == "poisson":  # the mean exp(margin), with the margin capped at 700
                expected = np.exp(np.minimum(expected, 700.0))
    assert np.all(np.isfinite(got))
    assert_allclose(got, expected, rtol=1e-9, atol=0)


@pytest.mark.parametrize("engine_params", ALL_ENGINE_PARAMS)
def test_a_loss_beyond_the_float_range_is_recorded_as_the_largest_float(engine_params):
    """Rows without features have the margin 0 (the intercept, not yet
    learned): targets of 1e200 have squared errors of 5e399, beyond the float
    range. Each row's loss is clamped to 1.8e308 before the weighted mean,
    which then stays finite (it was inf)."""
    X = sp.csr_matrix((3, 2))
    model = FTRLRegressor(**engine_params).partial_fit(X[:1], [1e200])
    assert model.loss_curve_ == [LARGEST]
    model = FTRLRegressor(**engine_params).partial_fit(X, [1e200, -1e200, 1.0])
    assert_allclose(model.loss_curve_, [LARGEST / 3 * 2], rtol=1e-15)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
@pytest.mark.parametrize("l1", [0.1, 1 / 3, 1e-3])
def test_a_float32_z_is_compared_with_l1_exactly(engine, l1):
    """Regression: with a float32 state, the numpy weights compared |z| with
    l1 rounded to float32 and numba with l1 itself, so a z between l1 and its
    float32 rounding had a weight in one engine and none in the other: the
    number of non-zero weights depended on the engine. Here z is l1 rounded
    to float32 (above l1 for these three values), and l1 rounded up and down."""
    X = np.eye(3)
    model = FTRLClassifier(engine=engine, l1=l1, dtype=np.float32).partial_fit(
        X, [0, 1, 0], classes=[0, 1]
    )
    l1_32 = np.float32(l1)
    assert float(l1_32) > l1
    z = np.array([[l1_32, -l1_32, np.nextafter(l1_32, np.float32(0))]], dtype=np.float32)
    model.z_, model.n_ = z, np.full_like(z, 4.0)
    # The closed form in float64 from the stored values: w = 0 iff |z| <= l1.
    z64 = z.astype(np.float64)
    denominator = (model.beta + 2.0) / model.learning_rate + model.l2
    expected = np.where(np.abs(z64) > l1, -(z64 - np.sign(z64) * l1) / denominator, 0.0)
    assert np.count_nonzero(expected) == 2
    assert np.array_equal(model.coef_, expected)
    assert np.array_equal(model.decision_function(X), X @ expected[0] + model.intercept_[0])


@pytest.mark.parametrize("engine_params", ALL_ENGINE_PARAMS)
def test_huge_huber_targets_raise_no_warning(engine_params):
    """Regression: the Huber loss evaluated both branches of np.where, and
    the quadratic one overflowed (a spurious RuntimeWarning) for residuals
    beyond 1e154, though the linear branch is the one taken."""
    X, _ = huge_problem("huber", 1.0)
    y = np.linspace(-1e300, 1e300, X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = FTRLRegressor(loss="huber", epsilon=1.0, **engine_params).partial_fit(X, y)
    # Each row's loss is |residual| - 1/2 (linear branch): close to the mean |y|.
    residuals = np.abs(y)
    assert_allclose(model.loss_curve_[0], np.mean(residuals - 0.5), rtol=1e-6)


# ------------------------------------------------------------------- width
@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_two_to_the_24_columns_with_a_few_non_zeros(engine):
    """A hashed space of 2**24 columns in a float32 state: learning touches
    only the columns present, exactly as a model of those columns alone, and
    a partial_fit call allocates in proportion to its batch, not the width."""
    rng = np.random.RandomState(0)
    n_rows, per_row, width = 2000, 5, 2**24
    columns = rng.randint(0, width, size=(n_rows, per_row))
    indptr = np.arange(0, n_rows * per_row + 1, per_row)
    X = sp.csr_matrix(
        (rng.normal(size=n_rows * per_row), columns.ravel(), indptr), shape=(n_rows, width)
    )
    y = rng.randint(2, size=n_rows)
    wide = FTRLClassifier(engine=engine, dtype=np.float32, l1=0.5)
    wide.partial_fit(X[:1000], y[:1000], classes=[0, 1])
    assert wide.z_.dtype == np.float32 and wide.z_.nbytes == width * 4  # 64 MiB each

    # A throwaway model's two calls compile (numba) both kinds of pass, the
    # first on a new state and a later one that records what it overwrites,
    # so that the call measured below allocates only what every call does.
    warm = FTRLClassifier(engine=engine, dtype=np.float32, l1=0.5)
    warm.partial_fit(X[:10], y[:10], classes=[0, 1]).partial_fit(X[10:20], y[10:20])

    tracemalloc.start()
    wide.partial_fit(X[1000:], y[1000:])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.05 * wide.z_.nbytes  # the state is 128 MiB; a call uses < 3.2 MiB

    used, narrow_columns = np.unique(X.indices, return_inverse=True)
    X_narrow = sp.csr_matrix((X.data, narrow_columns, X.indptr), shape=(n_rows, len(used)))
    narrow = FTRLClassifier(engine=engine, dtype=np.float32, l1=0.5)
    narrow.partial_fit(X_narrow[:1000], y[:1000], classes=[0, 1])
    narrow.partial_fit(X_narrow[1000:], y[1000:])

    for name in ["z_", "n_"]:
        assert np.array_equal(getattr(wide, name)[:, used], getattr(narrow, name)), name
        assert np.count_nonzero(getattr(wide, name)) == np.count_nonzero(getattr(narrow, name))
    assert np.array_equal(wide.z_intercept_, narrow.z_intercept_)
    assert np.array_equal(wide.predict_proba(X), narrow.predict_proba(X_narrow))


# ------------------------------------------------------------------ length
@pytest.mark.parametrize(
    "engine_params",
    [
        pytest.param({"engine": "numba"}, id="numba", marks=needs_numba),
        pytest.param({"batch_size": 1024}, id="batch_size=1024"),
        pytest.param({"batch_size": 1024, "dtype": np.float32}, id="batch_size=1024-float32"),
    ],
)
def test_a_million_identical_rows(engine_params):
    """One feature of value 1 and the intercept see the same gradient on every
    row, so they hold the same state; three labels in four are positive, so
    the probability converges to 0.75, and n to a million times the mean
    squared gradient there, 0.75 * 0.25**2 + 0.25 * 0.75**2 = 0.1875.

    The exact numpy engine runs about 40,000 rows a second (25 s for this):
    the test uses numba when installed, and mini-batches of 1,024 always.
    """
    n_rows = 1_000_000
    X = sp.csr_matrix(
        (np.ones(n_rows), np.zeros(n_rows, dtype=np.int32), np.arange(n_rows + 1, dtype=np.int32)),
        shape=(n_rows, 1),
    )
    y = (np.arange(n_rows) % 4 != 0).astype(int)
    model = FTRLClassifier(**engine_params).partial_fit(X, y, classes=[0, 1])

    assert model.n_samples_seen_ == n_rows
    assert_allclose(model.predict_proba(X[:1])[0, 1], 0.75, atol=1e-3)
    assert_allclose(model.n_intercept_[0], 0.1875 * n_rows, rtol=0.01)
    if engine_params.get("dtype") == np.float32:
        # n in float32 near 2e5 keeps about 7 digits: close, not identical.
        assert_allclose(model.n_[0, 0], model.n_intercept_[0], rtol=1e-4)
    elif "engine" in engine_params:
        # Row by row, the two coordinates go through the same operations.
        assert model.z_[0, 0] == model.z_intercept_[0]
        assert model.n_[0, 0] == model.n_intercept_[0]
    else:
        # A mini-batch sums the feature's gradients and the intercept's in
        # different orders.
        assert_allclose(model.z_[0, 0], model.z_intercept_[0], rtol=1e-9)
        assert_allclose(model.n_[0, 0], model.n_intercept_[0], rtol=1e-9)


@pytest.mark.parametrize(
    "engine_params, updates_per_row",
    [
        pytest.param({"engine": "numpy"}, 1, id="numpy"),
        pytest.param({"engine": "numba"}, 1, id="numba", marks=needs_numba),
        pytest.param({"batch_size": 4}, 4, id="batch_size=4"),
    ],
)
def test_a_float32_n_stops_growing_near_2_to_the_24_squared_gradients(
    engine_params, updates_per_row
):
    """What the docs say float32 gives up: an update adds its squared gradient
    (a mini-batch, their sum Q) to n, and float32 drops an addition below half
    its spacing near n, 2**-24 n. With unit gradients (Huber's, beyond
    epsilon) n stops at 2**24 Q, where float64 goes on counting; the
    intercept's n, always float64, counts every row."""
    n_rows, q = 40, float(updates_per_row)
    start = 2.0**24 * q - 8 * q  # 8 updates below the limit
    X = np.ones((n_rows, 1))
    y = np.full(n_rows, 1e6)  # every residual beyond epsilon: each gradient is exactly -1
    models = {
        dtype: FTRLRegressor(
            loss="huber",
            epsilon=1.0,
            initial_accumulator_value=start,
            dtype=dtype,
            **engine_params,
        ).partial_fit(X, y)
        for dtype in (np.float32, np.float64)
    }
    assert models[np.float64].n_[0, 0] == start + n_rows
    assert models[np.float32].n_[0, 0] == 2.0**24 * q  # 32 rows' gradients lost
    for model in models.values():
        assert model.n_intercept_[0] == start + n_rows


# --------------------------------------------------------- degenerate batches
@pytest.mark.parametrize("dataset", ["a9a", "dna"])
def test_a_batch_of_one_class_after_the_classes_are_known(engine, dataset):
    """Any batch may hold a single class once the classes are known: it is
    learned like any other, and matches the reference."""
    X, y, _, _ = load_a9a() if dataset == "a9a" else load_dna()
    classes = np.unique(y)
    X, y = X[:300], y[:300]
    only = y == classes[-1]
    X_one, y_one = X[only], y[only]
    assert len(np.unique(y_one)) == 1

    hyper = dict(learning_rate=0.2, beta=1.0, l1=0.1, l2=0.1, fit_intercept=True)
    model = FTRLClassifier(engine=engine, **hyper)
    model.partial_fit(X_one[:20], y_one[:20], classes=classes)  # the first call, one class
    model.partial_fit(X, y)  # every class
    model.partial_fit(X_one, y_one)  # one class again

    n_outputs = 1 if len(classes) == 2 else len(classes)
    loss = "log_loss" if n_outputs == 1 else "multinomial"
    reference = ReferenceFTRL(
        n_outputs, loss=loss, alpha=0.2, beta=1.0, l1=0.1, l2=0.1, fit_intercept=True
    )
    X_all = sp.vstack([X_one[:20], X, X_one]).tocsr()
    targets = np.searchsorted(classes, np.concatenate([y_one[:20], y, y_one])).astype(float)
    rows = rows_as_dicts(X_all.indptr, X_all.indices, X_all.data)
    for x, target in zip(rows, targets):
        reference.learn_one(x, target)
    assert_matches_reference(model, reference, rows, X.shape[1])
    assert model.n_samples_seen_ == len(targets)


EMPTY_CALLS = [
    ("partial_fit-dense", lambda m, X, y: m.partial_fit(X[:0].toarray(), y[:0])),
    ("partial_fit-csr", lambda m, X, y: m.partial_fit(X[:0], y[:0])),
    ("fit", lambda m, X, y: m.fit(X[:0], y[:0])),
    ("predict", lambda m, X, y: m.predict(X[:0])),
    ("decision_function", lambda m, X, y: m.decision_function(X[:0])),
    ("predict_proba", lambda m, X, y: m.predict_proba(X[:0])),
]
# A batch whose weights are all 0 is valid input, which learns nothing
# (tests/test_bad_input.py), where scikit-learn's SGD refuses it.


CLASSIFIER_ONLY = {"decision_function", "predict_proba"}


@pytest.mark.parametrize(
    "task, name, call",
    [("classification", name, call) for name, call in EMPTY_CALLS]
    + [("regression", name, call) for name, call in EMPTY_CALLS if name not in CLASSIFIER_ONLY],
    ids=[f"classification-{name}" for name, _ in EMPTY_CALLS]
    + [f"regression-{name}" for name, _ in EMPTY_CALLS if name not in CLASSIFIER_ONLY],
)
def test_empty_batches_fail_as_in_scikit_learn_and_change_nothing(a9a_head, task, name, call):
    """SGDClassifier and SGDRegressor are the model: a batch of 0 rows (or
    whose weights are all 0) raises their error, and the model is unchanged."""
    X, y = a9a_head
    X, y = X[:100], y[:100]
    if task == "classification":
        sgd = SGDClassifier(loss="log_loss").partial_fit(X, y, classes=[-1.0, 1.0])
        model = FTRLClassifier().partial_fit(X, y, classes=[-1.0, 1.0])
    else:
        sgd = SGDRegressor().partial_fit(X, y)
        model = FTRLRegressor().partial_fit(X, y)

    try:
        call(sgd, X, y)
    except ValueError as error:
        expected = error
    else:  # a scikit-learn that accepts it (older ones took all-zero weights)
        expected = None
    before = snapshot(model)
    if expected is None:
        call(model, X, y)
        for state in STATE:
            assert np.array_equal(getattr(model, state), before[state])
    else:
        with pytest.raises(ValueError) as raised:
            call(model, X, y)
        # The same message, up to the estimator's name.
        assert str(raised.value).replace(type(model).__name__, "<name>") == str(expected).replace(
            type(sgd).__name__, "<name>"
        )
        assert_same(before, snapshot(model))


@pytest.mark.parametrize("engine_params", ENGINE_PARAMS)
def test_rows_whose_weight_is_0_change_no_coordinate(a9a_head, engine_params):
    """A weight of 0 makes every gradient of its row 0: z and n do not move."""
    X, y = a9a_head
    model = FTRLClassifier(**engine_params).partial_fit(X[:1000], y[:1000], classes=[-1.0, 1.0])
    before = snapshot(model)
    weights = np.zeros(2000)
    weights[-1] = 1.0  # one row learned, so that the batch is accepted
    model.partial_fit(X[1000:], y[1000:], sample_weight=weights)
    expected = FTRLClassifier(**engine_params).partial_fit(X[:1000], y[:1000], classes=[-1.0, 1.0])
    expected.partial_fit(X[-1:], y[-1:])
    assert_same_state(model, expected)
    assert model.n_samples_seen_ == before["n_samples_seen_"] + 2000


# ------------------------------------------------------- memory not our own
@pytest.mark.parametrize("engine_params", ENGINE_PARAMS)
def test_int64_indices(a9a_head, engine_params):
    """CSR with 64-bit indices and indptr (what load_svmlight_file returns)
    learns and predicts exactly as with 32-bit ones."""
    X, y = a9a_head
    X64 = with_int64_indices(X)
    assert X64.indices.dtype == np.int64 and X64.indptr.dtype == np.int64
    expected = FTRLClassifier(**engine_params).partial_fit(X, y, classes=[-1.0, 1.0])
    model = FTRLClassifier(**engine_params).partial_fit(X64, y, classes=[-1.0, 1.0])
    assert_same_state(model, expected)
    assert np.array_equal(model.predict_proba(X64), expected.predict_proba(X))


@pytest.mark.parametrize("engine_params", ENGINE_PARAMS)
def test_read_only_memory_mapped_input(a9a_head, engine_params, tmp_path):
    """A CSR whose arrays are read-only memory maps (joblib.load with
    mmap_mode="r"), and a read-only np.memmap of dense rows, train, predict
    and fit exactly as the same data in memory."""
    X, y = a9a_head
    joblib.dump(X, tmp_path / "X.joblib")
    X_mapped = joblib.load(tmp_path / "X.joblib", mmap_mode="r")
    for array in (X_mapped.data, X_mapped.indices, X_mapped.indptr):
        assert isinstance(array, np.memmap) and not array.flags.writeable
    dense = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", shape=(500, X.shape[1]))
    dense[:] = X[:500].toarray()
    dense.flush()
    del dense
    dense_mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    assert not dense_mapped.flags.writeable

    expected = FTRLClassifier(**engine_params).partial_fit(X, y, classes=[-1.0, 1.0])
    model = FTRLClassifier(**engine_params).partial_fit(X_mapped, y, classes=[-1.0, 1.0])
    assert_same_state(model, expected)
    assert np.array_equal(model.predict_proba(X_mapped), expected.predict_proba(X))

    expected.partial_fit(X[:500], y[:500])
    model.partial_fit(dense_mapped, y[:500])
    assert_same_state(model, expected)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=2 does not converge
        fitted = FTRLClassifier(max_iter=2, random_state=0, **engine_params).fit(X_mapped, y)
        expected = FTRLClassifier(max_iter=2, random_state=0, **engine_params).fit(X, y)
    assert_same_state(fitted, expected)
