"""fit from given weights (``coef_init``, ``intercept_init``), against the slow
reference written from docs/algorithm.rst ("Starting from given weights")."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from reference import ReferenceFTRL, rows_as_dicts

from conftest import assert_same, snapshot
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor

TOLERANCE = dict(rtol=1e-12, atol=1e-12)
ONE_PASS = dict(max_iter=1, shuffle=False, early_stopping=False, tol=None)
HYPER = [
    dict(learning_rate=0.1, beta=1.0, l1=0.0, l2=0.0),
    dict(learning_rate=0.5, beta=0.5, l1=0.3, l2=0.2),
    dict(learning_rate=0.2, beta=0.25, l1=0.1, l2=0.0, learning_rate_power=-0.3),
]


def reference_z(w, n, alpha, beta, l1, l2, power):
    """The page's z of a weight w at the accumulator n."""
    if w == 0:
        return 0.0
    root = math.sqrt(n) if power == -0.5 else n**-power
    return -(w * ((beta + root) / alpha + l2) + math.copysign(l1, w))


def reference_from(coef, intercept, hyper, loss, initial_n=0.0):
    """The reference, its state set as the page says for the weights given."""
    power = hyper.get("learning_rate_power", -0.5)
    alpha, beta, l1, l2 = (hyper[name] for name in ("learning_rate", "beta", "l1", "l2"))
    ref = ReferenceFTRL(
        len(coef),
        loss=loss,
        alpha=alpha,
        beta=beta,
        l1=l1,
        l2=l2,
        fit_intercept=True,
        power=power,
        n_initial=initial_n,
    )
    for k, row in enumerate(coef):
        for i, w in enumerate(row):
            if w != 0:
                ref.z[k][i] = reference_z(w, initial_n, alpha, beta, l1, l2, power)
        ref.z_bias[k] = reference_z(intercept[k], initial_n, alpha, beta, 0.0, 0.0, power)
    return ref


def problem(rng, n_rows=60, n_features=12):
    X = sp.random(n_rows, n_features, density=0.3, format="csr", random_state=rng)
    X.data = rng.normal(scale=2.0, size=X.nnz)
    return X


@pytest.mark.parametrize(
    "hyper, initial_n",
    # beta = 0 needs n > 0: at n = 0 the page's denominator is 0.
    [(HYPER[0], 0.0), (HYPER[1], 0.0), (HYPER[2], 0.5), (dict(HYPER[1], beta=0.0), 0.5)],
)
@pytest.mark.parametrize(
    "make, loss, n_outputs",
    [
        (FTRLClassifier, "log_loss", 1),
        (FTRLClassifier, "multinomial", 3),
        (FTRLRegressor, "squared_error", 1),
    ],
)
def test_a_fit_from_given_weights_matches_the_reference(
    make, loss, n_outputs, hyper, initial_n, engine
):
    rng = np.random.RandomState(0)
    X = problem(rng)
    coef = rng.normal(size=(n_outputs, X.shape[1]))
    coef[:, ::4] = 0.0  # weights of 0 stay at z = 0
    intercept = rng.normal(size=n_outputs)
    if loss == "squared_error":
        y = X @ rng.normal(size=X.shape[1]) + 2.0
        targets = y
    else:
        targets = rng.randint(max(n_outputs, 2), size=X.shape[0])
        y = targets
    model = make(engine=engine, initial_accumulator_value=initial_n, **hyper, **ONE_PASS)
    model.fit(X, y, coef_init=coef, intercept_init=intercept)

    ref = reference_from(coef, intercept, hyper, loss, initial_n)
    for x, target in zip(rows_as_dicts(X.indptr, X.indices, X.data), targets):
        ref.learn_one(x, target)
    z, n, ref_coef = ref.state(X.shape[1])
    assert_allclose(model.z_, z, **TOLERANCE)
    assert_allclose(model.n_, n, **TOLERANCE)
    assert_allclose(model.coef_, ref_coef, **TOLERANCE)
    assert_allclose(model.z_intercept_, ref.z_bias, **TOLERANCE)
    assert_allclose(model.intercept_, [ref.bias(k) for k in range(n_outputs)], **TOLERANCE)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("hyper", HYPER)
@pytest.mark.parametrize("make", [FTRLClassifier, FTRLRegressor, FMClassifier, FMRegressor])
def test_the_given_weights_are_those_learning_starts_from(make, hyper, dtype):
    # The first row's progressive loss is that of the given weights, and the
    # rows of sample weight 0 change nothing: the weights of the features
    # the first row does not hold are the given ones, to the state's
    # precision. That row has one feature: a factorization machine's
    # pairwise term is then 0.
    rng = np.random.RandomState(1)
    X = problem(rng, n_rows=20).tolil()
    X[0, :] = 0
    X[0, 5] = 1.5
    X = X.tocsr()
    y = np.arange(20) % 2
    coef = rng.normal(size=X.shape[1])
    coef[3] = 0.0
    sample_weight = np.zeros(20)
    sample_weight[0] = 1.0
    model = make(dtype=dtype, **hyper, **ONE_PASS)
    model.fit(X, y, sample_weight, coef_init=coef, intercept_init=0.75)
    margin = 1.5 * coef[5] + 0.75
    if make in (FTRLClassifier, FMClassifier):
        expected = math.log1p(math.exp(-margin)) + margin * (1 - y[0])  # log loss, y = 0
    else:
        expected = (margin - y[0]) ** 2 / 2
    precision = dict(rtol=1e-12) if dtype == np.float64 else dict(rtol=1e-6)
    assert_allclose(model.loss_curve_[0], expected, **precision)
    others = np.arange(X.shape[1]) != 5
    assert_allclose(model.coef_[0, others], coef[others], **precision, atol=0)
    assert model.coef_[0, 5] != coef[5]


def test_a_wrong_start_is_refused_and_changes_nothing():
    rng = np.random.RandomState(2)
    X, y = problem(rng), np.arange(60) % 3
    model = FTRLClassifier(dtype=np.float32).fit(X, y)
    before = snapshot(model)
    cases = [
        (dict(coef_init=np.ones((1, 12))), r"coef_init has shape \(1, 12\); .* needs \(3, 12\)"),
        (dict(coef_init=np.ones(12)), r"coef_init has shape \(12,\); .* needs \(3, 12\)"),
        (dict(coef_init=np.full((3, 12), np.nan)), "coef_init contains NaN"),
        (dict(coef_init=np.full((3, 12), 1e38)), r"coef_init holds weights too large .*float32"),
        (dict(intercept_init=[1.0, 2.0]), r"intercept_init has shape \(2,\); .* or \(3,\)"),
        (dict(intercept_init=np.inf), "intercept_init contains infinity"),
    ]
    for given, message in cases:
        with pytest.raises(ValueError, match=message):
            model.fit(X, y, **given)
        assert_same(before, snapshot(model))
    with pytest.raises(ValueError, match="intercept_init is not 0, but fit_intercept=False"):
        FTRLRegressor(fit_intercept=False).fit(X, y, intercept_init=1.0)
    # An intercept of 0 is what such a model has.
    FTRLRegressor(fit_intercept=False).fit(X, y, intercept_init=0.0)


def test_given_weights_start_a_new_state_even_with_warm_start():
    rng = np.random.RandomState(3)
    X, y = problem(rng), np.arange(60) % 2
    coef = rng.normal(size=(1, 12))
    warm = FTRLClassifier(warm_start=True, **ONE_PASS).fit(X, y)
    warm.fit(X, y, coef_init=coef)
    new = FTRLClassifier(**ONE_PASS).fit(X, y, coef_init=coef)
    assert np.array_equal(warm.z_, new.z_) and np.array_equal(warm.n_, new.n_)
    assert warm.n_samples_seen_ == new.n_samples_seen_ == 60


@pytest.mark.parametrize("make", [FTRLClassifier, FTRLRegressor, FMClassifier, FMRegressor])
def test_partial_fit_starts_from_given_weights_in_its_first_call_only(make):
    # A stream from given weights learns as fit's one pass over it, in order.
    rng = np.random.RandomState(4)
    X, y = problem(rng), np.arange(60) % 2
    coef, classes = (
        rng.normal(size=12),
        {"classes": [0, 1]} if "Classifier" in make.__name__ else {},
    )
    stream = make(random_state=0)
    for part in [slice(0, 25), slice(25, 60)]:
        start = dict(coef_init=coef, intercept_init=0.5) if part.start == 0 else {}
        stream.partial_fit(X[part], y[part], **classes, **start)
    whole = make(random_state=0, **ONE_PASS).fit(X, y, coef_init=coef, intercept_init=0.5)
    for name in ("z_", "n_", "z_intercept_", "n_intercept_"):
        assert np.array_equal(getattr(stream, name), getattr(whole, name)), name
    before = snapshot(stream)
    with pytest.raises(ValueError, match="taken by the partial_fit that starts a model"):
        stream.partial_fit(X, y, coef_init=coef)
    assert_same(before, snapshot(stream))


ESTIMATORS = [FTRLClassifier, FTRLRegressor, FMClassifier, FMRegressor]
# Hyper-parameters of the exact-start tests.
EXACT = [
    dict(learning_rate=0.1, beta=1.0, l1=0.0, l2=0.0),
    dict(learning_rate=0.5, beta=0.5, l1=0.3, l2=0.2),
    dict(learning_rate=0.5, beta=0.5, l1=0.3, l2=0.2, initial_accumulator_value=1.7),
    dict(learning_rate=0.1, beta=1.0, l1=1.0, l2=0.0),
    dict(learning_rate=0.1, beta=1.0, l1=5.0, l2=0.0),
]


def denominator(hyper, dtype):
    """The page's (beta + sqrt(n)) / alpha + l2 at n = initial_accumulator_value
    as a state of ``dtype`` stores it, summed as sqrt(n) / alpha + (beta /
    alpha + l2) (for the same bits)."""
    alpha = hyper["learning_rate"]
    root = math.sqrt(dtype(hyper.get("initial_accumulator_value", 0.0)))
    return root / alpha + (hyper["beta"] / alpha + hyper["l2"])


def closed_form(z, hyper, dtype):
    """The page's weight of one z where it starts, in Python floats."""
    l1 = hyper["l1"]
    if abs(z) <= l1:
        return 0.0
    return -(z - math.copysign(l1, z)) / denominator(hyper, dtype)


def reachable_around(w, hyper, dtype):
    """The weights of the 33 floats of ``dtype`` around the page's z of ``w``:
    a brute force, far wider than the rounding of that z."""
    page_z = -(w * denominator(hyper, dtype))
    page_z -= math.copysign(hyper["l1"], w)
    integer = np.int64 if dtype == np.float64 else np.int32
    around = np.array([page_z], dtype=dtype).view(integer) + np.arange(-16, 17, dtype=integer)
    return [closed_form(float(z), hyper, dtype) for z in around.view(dtype)]


def nearest(values, w):
    return min(values, key=lambda value: abs(value - w))


def random_weights(rng, size):
    """Weights of all signs, about half of them small against an l1 near 1."""
    coef = rng.normal(size=size)
    coef[size // 2 :] *= 10.0 ** rng.randint(-8, 0, size=size - size // 2)
    return coef


def started(make, hyper, dtype, engine, coef):
    """A model started at ``coef`` whose rows hold no feature: their
    gradients leave every coefficient's state as it was set."""
    X, y = sp.csr_matrix((4, len(coef))), np.array([0, 1, 0, 1])
    model = make(dtype=dtype, engine=engine, random_state=0, **hyper, **ONE_PASS)
    return model.fit(X, y, coef_init=coef)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("hyper", EXACT)
@pytest.mark.parametrize("make", ESTIMATORS)
def test_weights_the_state_can_hold_come_back_bit_for_bit(make, hyper, dtype, engine):
    # Each weight given is the closed form of some z of the state's dtype (by
    # brute force, the one nearest a random weight), so a state can hold it:
    # the model's weights are the given ones, bits and all.
    rng = np.random.RandomState(5)
    coef = np.array(
        [nearest(reachable_around(w, hyper, dtype), w) for w in random_weights(rng, 120)]
    )
    coef[::7] = 0.0
    model = started(make, hyper, dtype, engine, coef)
    assert np.array_equal(model.coef_[0], coef), np.flatnonzero(model.coef_[0] != coef)
    # The intercept (float64, never regularized) too, from rows of a weight so
    # small that their steps move no z by an ulp (and add 0 to n).
    unregularized = dict(hyper, l1=0.0, l2=0.0)
    for w in random_weights(rng, 6):
        intercept = nearest(reachable_around(w, unregularized, np.float64), w)
        X, y = sp.csr_matrix((2, 3)), np.array([0, 1])
        alone = make(dtype=dtype, engine=engine, random_state=0, **hyper, **ONE_PASS)
        alone.fit(X, y, np.full(2, 1e-300), intercept_init=intercept)
        assert alone.intercept_[0] == intercept


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("hyper", EXACT)
@pytest.mark.parametrize("make", ESTIMATORS)
def test_any_weight_starts_at_the_nearest_the_state_can_hold(make, hyper, dtype, engine):
    # Against the brute force: each weight is the nearest a z of the dtype
    # gives. With l1 = 5 in float32, 1e-8 and 1e-6 lie between those weights.
    rng = np.random.RandomState(6)
    coef = random_weights(rng, 120)
    coef[:2] = [1e-8, 1e-6]
    model = started(make, hyper, dtype, engine, coef)
    for got, w in zip(model.coef_[0], coef):
        best = nearest(reachable_around(w, hyper, dtype), w)
        assert abs(got - w) == abs(best - w), (w, got, best)


def test_the_documented_float32_example():
    # docs/algorithm.rst: in float32 with l1 = 5 (alpha = 0.1, beta = 1, so a
    # denominator of 10), z lies near 5, where float32's floats are 2**-21
    # apart: the weights within reach near 0 are k * 2**-21 / 10.
    model = started(FTRLRegressor, dict(l1=5.0), np.float32, "numpy", np.array([1e-6, 1e-8]))
    assert model.coef_[0, 0] == 21 * 2.0**-21 / 10  # 1.0014e-6, the nearest to 1e-6
    assert model.coef_[0, 1] == 0.0  # 1e-8 is below half of 2**-21 / 10
