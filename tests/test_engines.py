"""The engines (numpy, numba), mini-batches and float32 state against each other."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss

from conftest import needs_numba
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor
from skftrl.datasets import load_a9a, load_dna

TOLERANCE = dict(rtol=1e-12, atol=1e-12)
STATE = ("z_", "n_", "z_intercept_", "n_intercept_")


def assert_same_state(a, b, **tolerance):
    for name in STATE:
        assert_allclose(getattr(a, name), getattr(b, name), **(tolerance or TOLERANCE))


@needs_numba
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numba_and_numpy_agree_on_a9a(dtype):
    X_train, y_train, _, _ = load_a9a()
    models = [
        FTRLClassifier(engine=engine, l1=1.0, l2=0.5, dtype=dtype).partial_fit(
            X_train, y_train, classes=[-1.0, 1.0]
        )
        for engine in ("numpy", "numba")
    ]
    assert models[1].z_.dtype == dtype
    assert_same_state(*models)


@needs_numba
def test_numba_and_numpy_agree_on_shuffled_multinomial_passes():
    X_train, y_train, _, _ = load_dna()
    models = []
    for engine in ("numpy", "numba"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            models.append(
                FTRLClassifier(engine=engine, max_iter=3, l1=0.1, random_state=0).fit(
                    X_train, y_train
                )
            )
    assert_same_state(*models)


@needs_numba
@pytest.mark.parametrize("loss", ["squared_error", "huber", "poisson"])
def test_numba_and_numpy_agree_for_regression(loss):
    rng = np.random.RandomState(0)
    X = rng.binomial(1, 0.3, size=(500, 20)) * rng.normal(size=(500, 20))
    y = rng.poisson(np.exp(X @ rng.normal(scale=0.3, size=20))).astype(float)
    models = [
        FTRLRegressor(loss=loss, engine=engine, l1=0.2, max_iter=2, tol=None, random_state=0).fit(
            X, y
        )
        for engine in ("numpy", "numba")
    ]
    assert_same_state(*models)


def test_float32_state_stays_close_to_float64():
    X_train, y_train, X_test, _ = load_a9a()
    exact = FTRLClassifier(engine="numpy", l1=1.0).partial_fit(X_train, y_train, classes=[-1, 1])
    small = clone(exact).set_params(dtype=np.float32)
    small.partial_fit(X_train, y_train, classes=[-1, 1])
    assert small.z_.dtype == small.n_.dtype == np.float32
    assert small.z_.nbytes * 2 == exact.z_.nbytes
    # Only the storage is rounded (relative 6e-8 a step), so the models differ slightly.
    assert_allclose(small.predict_proba(X_test), exact.predict_proba(X_test), rtol=1e-4)
    assert np.count_nonzero(small.coef_) == np.count_nonzero(exact.coef_)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_float32_state_stays_finite_for_huge_values(engine):
    X = np.array([[1e30, 0.0], [0.0, -1e30], [1e30, 1e30]] * 5)
    y = np.array([10.0, -10.0, 5.0] * 5)
    reg = FTRLRegressor(engine=engine, dtype=np.float32).fit(X, y)
    for name in STATE:
        assert np.all(np.isfinite(getattr(reg, name)))
    assert np.all(np.isfinite(reg.predict(X)))


@pytest.mark.parametrize("batch_size", [16, 64])
def test_mini_batches_lose_less_than_a_fifth_of_a_percent_on_a9a(batch_size):
    X_train, y_train, X_test, y_test = load_a9a()
    losses = {}
    for size in (1, batch_size):
        clf = FTRLClassifier(engine="numpy", l1=1.0, batch_size=size)
        clf.partial_fit(X_train, y_train, classes=[-1, 1])
        losses[size] = log_loss(y_test, clf.predict_proba(X_test))
    assert abs(losses[batch_size] / losses[1] - 1) < 0.002


def test_batch_size_one_is_the_exact_engine():
    X_train, y_train, _, _ = load_dna()
    exact = FTRLClassifier(engine="numpy", random_state=0, max_iter=2, tol=None)
    batched = clone(exact).set_params(batch_size=1)
    assert_same_state(exact.fit(X_train, y_train), batched.fit(X_train, y_train))


def test_numba_with_mini_batches_is_refused_and_changes_nothing():
    X, y = np.eye(4), [0, 1, 0, 1]
    clf = FTRLClassifier(engine="numpy").partial_fit(X, y, classes=[0, 1])
    before = {name: getattr(clf, name).copy() for name in STATE}
    clf.set_params(engine="numba", batch_size=8)
    with pytest.raises(ValueError, match="engine='numba'.*batch_size=1"):
        clf.partial_fit(X, y)
    for name in STATE:
        assert np.array_equal(getattr(clf, name), before[name])
    assert clf.n_samples_seen_ == 4


def run_without_numba(code):
    """Run ``code`` in a new interpreter where importing numba fails."""
    blocker = "import sys; sys.modules['numba'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", blocker + code], capture_output=True, text=True, timeout=120
    )


def test_auto_falls_back_to_numpy_and_numba_says_how_to_install():
    fit = (
        "import numpy as np\nfrom skftrl import FTRLClassifier\n"
        "FTRLClassifier(engine={!r}, tol=None, max_iter=3)"
        ".fit(np.eye(4), [0, 1, 0, 1])\nprint('fitted')"
    )
    auto = run_without_numba(fit.format("auto"))
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.strip() == "fitted" and auto.stderr == ""
    numba = run_without_numba(fit.format("numba"))
    assert numba.returncode == 1
    assert "ImportError: engine='numba' needs numba" in numba.stderr
    assert "pip install 'skftrl[fast]'" in numba.stderr


@needs_numba
def test_compiled_kernel_is_cached_across_processes():
    code = (
        "import numpy as np\nfrom skftrl import FTRLClassifier\n"
        "FTRLClassifier(engine='numba').fit(np.eye(4), [0, 1, 0, 1])\n"  # one output
        "FTRLClassifier(engine='numba').fit(np.eye(3), [0, 1, 2])\n"  # three
        "from skftrl._engines._linear_numba import _pass\n"
        "stats = _pass.stats\n"
        "print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))"
    )
    for _ in range(2):  # the first run may compile and write the cache
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr
    hits, misses = map(int, result.stdout.split())
    assert hits >= 2 and misses == 0  # one output, and several


@needs_numba
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize(
    "hyper",
    [
        {"learning_rate": 0.1, "beta": 1.0, "l1": 0.0, "l2": 0.0},
        {"learning_rate": 0.3, "beta": 0.0, "l1": 0.2, "l2": 0.5},
        {"learning_rate": 0.3, "beta": 0.5, "l1": 0.1, "l2": 0.0, "learning_rate_power": -0.3},
    ],
)
def test_compiled_weights_equal_the_numpy_weights(hyper, order, dtype):
    from skftrl._engines import LinearState, Parameters, get_engine, get_loss

    rng = np.random.default_rng(0)
    z = np.asarray(
        rng.normal(scale=0.5, size=(3, 200)) * (rng.random((3, 200)) < 0.5), order=order
    )
    n = np.asarray(rng.exponential(size=(3, 200)), order=order)
    z[0, :5] = 0.0
    n[0, :5] = 0.0  # with beta = l2 = 0, a zero denominator
    z, n = z.astype(dtype), n.astype(dtype)
    state = LinearState(z, n, np.zeros(3), np.zeros(3))
    parameters = Parameters(loss=get_loss("multinomial"), **hyper)
    compiled = get_engine("linear", "numba").weights(state, parameters)
    assert_allclose(
        compiled, get_engine("linear", "numpy").weights(state, parameters), **TOLERANCE
    )


@needs_numba
@pytest.mark.parametrize("load", [load_a9a, load_dna], ids=["binary", "multiclass"])
def test_numba_prefetching_changes_nothing(load, monkeypatch):
    # On a state larger than the L2 cache, the numba pass prefetches each
    # row's coordinates a few rows early; the results must not change. Forced
    # on and off here (these states are small), on the same partial_fit calls.
    import skftrl._engines._compile as numba_kernel

    X_train, y_train, _, _ = load()
    models = {}
    for threshold in (0, 2**62):
        monkeypatch.setattr(numba_kernel, "PREFETCH_STATE_BYTES", threshold)
        model = FTRLClassifier(engine="numba", l1=0.5)
        for start in range(0, 1800, 600):
            rows = slice(start, start + 600)
            model.partial_fit(X_train[rows], y_train[rows], classes=np.unique(y_train))
        models[threshold] = model
    for name in STATE:
        assert np.array_equal(getattr(models[0], name), getattr(models[2**62], name)), name
    exact = FTRLClassifier(engine="numpy", l1=0.5)
    exact.partial_fit(X_train[:1800], y_train[:1800], classes=np.unique(y_train))
    assert_same_state(models[0], exact)


def test_a_changed_dtype_is_rejected_before_anything_changes():
    # The storage type is set when the state is created: a later partial_fit
    # (or warm-start fit) with another dtype says so instead of ignoring it.
    X, y = np.eye(4), [0, 1, 0, 1]
    model = FTRLClassifier(engine="numpy").partial_fit(X, y, classes=[0, 1])
    before = {name: getattr(model, name).copy() for name in STATE}
    model.set_params(dtype=np.float32)
    with pytest.raises(ValueError, match="dtype=float32 differs from the state's float64"):
        model.partial_fit(X, y)
    with pytest.raises(ValueError, match="dtype=float32 differs"):
        model.set_params(warm_start=True).fit(X, y)
    for name in STATE:
        assert np.array_equal(getattr(model, name), before[name])
    assert model.n_samples_seen_ == 4
    # A new state takes the new dtype.
    assert model.set_params(warm_start=False).fit(X, y).z_.dtype == np.float32


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_numba_with_mini_batches_is_refused_when_the_parameters_are_checked(method):
    # Before the data is even looked at (this X is not numeric).
    model = FTRLClassifier(engine="numba", batch_size=8)
    with pytest.raises(ValueError, match="engine='numba'.*batch_size=1; got batch_size=8"):
        getattr(model, method)(
            [["not", "numbers"]], [0], **({"classes": [0, 1]} if method == "partial_fit" else {})
        )


def test_batch_size_and_engine_changed_between_calls_are_applied():
    X_train, y_train, _, _ = load_a9a()
    first, second = slice(0, 500), slice(500, 1000)
    changed = FTRLClassifier(engine="numpy").partial_fit(X_train[first], y_train[first], [-1, 1])
    changed.set_params(batch_size=16).partial_fit(X_train[second], y_train[second])
    # The same two calls, the second through a model that always had batch_size=16.
    batched = FTRLClassifier(engine="numpy", batch_size=16)
    exact = FTRLClassifier(engine="numpy").partial_fit(X_train[first], y_train[first], [-1, 1])
    for name in STATE:
        setattr(batched, name, getattr(exact, name).copy())
    batched.classes_, batched.n_features_in_, batched.n_samples_seen_ = exact.classes_, 123, 500
    batched.loss_curve_ = []
    batched.partial_fit(X_train[second], y_train[second])
    assert_same_state(changed, batched, rtol=0, atol=0)
    exact.partial_fit(X_train[second], y_train[second])
    assert not np.array_equal(changed.z_, exact.z_)


@pytest.mark.parametrize(
    "make_model, name, value",
    [
        (lambda: FTRLClassifier(engine="numpy"), "initial_accumulator_value", 0.1),
        (lambda: FTRLRegressor(engine="numpy", batch_size=2), "initial_accumulator_value", 1.0),
        (lambda: FMClassifier(engine="numpy"), "initial_accumulator_value", 0.1),
        (lambda: FMClassifier(engine="numpy"), "n_components", 3),
        (lambda: FMRegressor(engine="numpy"), "init_stdev", 0.5),
    ],
)
def test_a_parameter_of_the_state_s_creation_changed_later_is_rejected(make_model, name, value):
    # Like dtype: these are read only when a state is created, so a later
    # partial_fit or warm-start fit refuses a new value, changing nothing.
    X, y = np.eye(4), np.array([0, 1, 0, 1])
    model = make_model()
    original = model.get_params()[name]
    fit_kwargs = {"classes": [0, 1]} if hasattr(model, "predict_proba") else {}
    model.partial_fit(X, y, **fit_kwargs)
    before = {
        key: np.copy(array)
        for key, array in model.__dict__.items()
        if isinstance(array, np.ndarray)
    }
    model.set_params(**{name: value})
    with pytest.raises(ValueError, match=f"{name}={value!r} differs from"):
        model.partial_fit(X, y)
    with pytest.raises(ValueError, match=f"{name}={value!r} differs from"):
        model.set_params(warm_start=True).fit(X, y)
    for key, array in before.items():
        assert np.array_equal(getattr(model, key), array), key
    assert model.n_samples_seen_ == 4
    # Set back, it learns on; a new state takes the new value.
    model.set_params(**{name: original}).partial_fit(X, y)
    assert model.n_samples_seen_ == 8
    model.set_params(**{name: value, "warm_start": False}).fit(X, y)
    assert model._state_parameters[name] == value
    model.partial_fit(X, y)
