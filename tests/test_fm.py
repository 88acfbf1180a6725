"""The factorization machines' behaviour: what they learn that the linear model
cannot, parameters, bad input, persistence and extreme inputs.

Their exact arithmetic is checked against the reference in tests/test_fm_reference.py.
"""

import copy
import io
import pickle
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss, mean_squared_error

from conftest import HAS_NUMBA, assert_same, snapshot
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor
from skftrl._engines._math import pairwise_margins
from skftrl._sklearn_compat import InvalidParameterError

FM_STATE = ["z_", "n_", "z_intercept_", "n_intercept_", "z_factors_", "n_factors_"]

# Each FM pass: per row in numpy and numba, mini-batches in numpy.
FM_PASSES = [
    pytest.param(dict(engine="numpy"), id="numpy"),
    pytest.param(
        dict(engine="numba"),
        id="numba",
        marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed"),
    ),
    pytest.param(dict(engine="numpy", batch_size=16), id="numpy-mini-batches"),
]


def one_hot_fields(fields, n_values):
    """CSR one-hot encoding of integer columns ``fields`` with ``n_values`` each."""
    n_rows = len(fields[0])
    offsets = np.cumsum((0, *n_values[:-1]))
    columns = np.column_stack([f + o for f, o in zip(fields, offsets)]).ravel()
    indptr = np.arange(0, n_rows * len(fields) + 1, len(fields))
    return sp.csr_matrix((np.ones(len(columns)), columns, indptr), shape=(n_rows, sum(n_values)))


def click_stream(n_rows, seed, interaction, n_values=(30, 30, 20)):
    """Three categorical fields with main effects and, of strength ``interaction``,
    a planted interaction of the first two: ``interaction * u_a * u_b`` with
    random signs u, which has no main effect of its own, so no linear model
    can represent it. The model (effects and signs) is the same for every seed."""
    rng = np.random.default_rng(seed)
    fields = [rng.integers(v, size=n_rows) for v in n_values]
    truth = np.random.default_rng(1000)
    main = [truth.normal(0.0, 0.5, size=v) for v in n_values]
    u_a, u_b = (truth.choice([-1.0, 1.0], size=v) for v in n_values[:2])
    logit = -1.0 + sum(m[f] for m, f in zip(main, fields))
    logit += interaction * u_a[fields[0]] * u_b[fields[1]]
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return one_hot_fields(fields, n_values), y


def held_out_log_losses(interaction, passes=3):
    """Held-out log loss of the linear model and of the FM (defaults, k=4)."""
    X, y = click_stream(4000, seed=0, interaction=interaction)
    X_test, y_test = click_stream(4000, seed=1, interaction=interaction)
    losses = []
    for model in (FTRLClassifier(engine="numpy"), FMClassifier(n_components=4, random_state=0)):
        for _ in range(passes):
            model.partial_fit(X, y, classes=[0, 1])
        losses.append(log_loss(y_test, model.predict_proba(X_test)))
    return losses


def test_a_planted_interaction_is_learned_by_the_fm_and_not_by_the_linear_model():
    linear, fm = held_out_log_losses(interaction=2.0)
    # The linear model cannot do better than the main effects (about 0.65);
    # the FM recovers most of the interaction.
    assert fm < 0.8 * linear, (fm, linear)


def test_without_interactions_the_fm_is_no_worse_than_the_linear_model():
    # The stated margin: at most 1% more held-out log loss than the linear
    # model when the data have no interaction at all.
    linear, fm = held_out_log_losses(interaction=0.0)
    assert fm <= 1.01 * linear, (fm, linear)


def test_regressor_recovers_a_low_rank_rating_matrix():
    # Ratings user x item from a rank-2 model plus biases: the FM's held-out
    # error approaches the noise, the linear model's stays at the interaction's size.
    rng = np.random.default_rng(0)
    n_users, n_items = 40, 30
    P, Q = rng.normal(size=(n_users, 2)), rng.normal(size=(n_items, 2))
    bias_u, bias_i = rng.normal(size=n_users), rng.normal(size=n_items)

    def ratings(n_rows, seed):
        draw = np.random.default_rng(seed)
        users, items = draw.integers(n_users, size=n_rows), draw.integers(n_items, size=n_rows)
        y = 3.0 + bias_u[users] + bias_i[items] + (P[users] * Q[items]).sum(axis=1)
        y += draw.normal(scale=0.1, size=n_rows)
        return one_hot_fields([users, items], (n_users, n_items)), y

    X, y = ratings(3000, seed=1)
    X_test, y_test = ratings(2000, seed=2)
    linear = FTRLRegressor(engine="numpy", learning_rate=0.5)
    fm = FMRegressor(n_components=4, learning_rate=0.5, random_state=0)
    for model in (linear, fm):
        for _ in range(3):
            model.partial_fit(X, y)
    interaction_variance = np.var((P[:, None, :] * Q[None, :, :]).sum(axis=2))
    linear_error = mean_squared_error(y_test, linear.predict(X_test))
    fm_error = mean_squared_error(y_test, fm.predict(X_test))
    assert linear_error > 0.8 * interaction_variance
    assert fm_error < 0.25 * linear_error, (fm_error, linear_error)


# ---------------------------------------------------------------- parameters
def small_problem(n_classes=2, n_rows=60, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n_rows, 8, density=0.4, format="csr", random_state=rng)
    return X, rng.randint(n_classes, size=n_rows)


def test_init_stdev_0_is_the_linear_model():
    # Factors that start at 0 have gradient 0 (every factor gradient contains
    # another factor): they stay 0, and the rest is the linear FTRL model.
    X, y = small_problem(n_classes=3)
    hyper = dict(learning_rate=0.3, l1=0.05, l2=0.1, random_state=0, max_iter=3, tol=None)
    fm = FMClassifier(init_stdev=0.0, **hyper).fit(X, y)
    linear = FTRLClassifier(engine="numpy", **hyper).fit(X, y)
    assert np.all(fm.components_ == 0)
    for name in ["z_", "n_", "z_intercept_", "n_intercept_"]:
        assert_allclose(getattr(fm, name), getattr(linear, name), rtol=1e-12, atol=1e-14)
    assert_allclose(fm.predict_proba(X), linear.predict_proba(X), rtol=1e-12)


def test_factor_learning_rate_none_is_learning_rate():
    X, y = small_problem()
    a = FMClassifier(learning_rate=0.3, random_state=0).partial_fit(X, y, classes=[0, 1])
    b = FMClassifier(learning_rate=0.3, factor_learning_rate=0.3, random_state=0)
    b.partial_fit(X, y, classes=[0, 1])
    for name in FM_STATE:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    c = FMClassifier(learning_rate=0.3, factor_learning_rate=0.1, random_state=0)
    c.partial_fit(X, y, classes=[0, 1])
    assert not np.array_equal(a.z_factors_, c.z_factors_)


def test_random_state_fixes_the_initial_factors_and_fit_is_deterministic():
    X, y = small_problem()
    first = FMClassifier(random_state=3, max_iter=5).fit(X, y)
    second = FMClassifier(random_state=3, max_iter=5).fit(X, y)
    other = FMClassifier(random_state=4, max_iter=5).fit(X, y)
    for name in FM_STATE:
        assert np.array_equal(getattr(first, name), getattr(second, name)), name
    assert not np.array_equal(first.z_factors_, other.z_factors_)


def test_fit_restarts_and_warm_start_continues():
    X, y = small_problem()
    once = FMClassifier(random_state=0, max_iter=2, tol=None, shuffle=False).fit(X, y)
    twice = FMClassifier(random_state=0, max_iter=4, tol=None, shuffle=False).fit(X, y)
    model = FMClassifier(random_state=0, max_iter=2, tol=None, shuffle=False).fit(X, y)
    model.fit(X, y)  # a new state: the same as one fit
    for name in FM_STATE:
        assert np.array_equal(getattr(model, name), getattr(once, name)), name
    model.set_params(warm_start=True).fit(X, y)  # continues: two more passes
    for name in FM_STATE:
        assert np.array_equal(getattr(model, name), getattr(twice, name)), name
    assert len(model.loss_curve_) == 4 and model.n_samples_seen_ == 4 * len(y)


def test_early_stopping_and_loss_curve():
    X, y = click_stream(600, seed=0, interaction=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = FMClassifier(early_stopping=True, max_iter=8, random_state=0).fit(X, y)
    # The best pass's state is restored, factors included (docs: "How many
    # passes fit makes"): the same fit stopped after that pass is the same model.
    assert len(model.validation_scores_) == model.n_iter_
    assert 1 <= model.best_iteration_ < model.n_iter_
    assert len(model.loss_curve_) == model.best_iteration_
    assert model.n_samples_seen_ == model.best_iteration_ * 540  # 10% held out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        short = FMClassifier(
            early_stopping=True, max_iter=model.best_iteration_, random_state=0
        ).fit(X, y)
    for name in FM_STATE:
        assert np.array_equal(getattr(model, name), getattr(short, name)), name


def test_a_factor_parameter_changed_between_partial_fit_calls_is_applied():
    X, y = small_problem()
    changed = FMClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])
    changed.set_params(factor_l2=0.5).partial_fit(X, y)
    same = FMClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])
    same.partial_fit(X, y)
    assert not np.array_equal(changed.z_factors_, same.z_factors_)
    with pytest.raises(InvalidParameterError, match="'factor_l2' parameter of FMClassifier"):
        changed.set_params(factor_l2=-1.0).partial_fit(X, y)


def test_components_are_the_interactions_of_the_predictions():
    X, y = small_problem()
    model = FMClassifier(n_components=3, random_state=0).partial_fit(X, y, classes=[0, 1])
    assert model.components_.shape == (1, 8, 3)
    # Two features on, with values a and b: the margin is the sum of the
    # linear parts plus <v_i, v_j> a b.
    row = np.zeros((1, 8))
    row[0, 1], row[0, 5] = 2.0, -0.5
    V, w = model.components_[0], model.coef_[0]
    expected = model.intercept_[0] + 2.0 * w[1] - 0.5 * w[5] + (V[1] @ V[5]) * 2.0 * -0.5
    assert_allclose(model.decision_function(row), [expected], rtol=1e-13)


# ----------------------------------------------------------------- bad input
def fitted_fm_classifier():
    X, y = small_problem()
    return FMClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])


def fitted_fm_regressor():
    X, y = small_problem()
    return FMRegressor(random_state=0).partial_fit(X, y.astype(float))


X_SMALL, Y_SMALL = small_problem()

BAD = [
    (
        "n-components-0",
        lambda: FMClassifier(n_components=0),
        lambda m: m.fit(X_SMALL, Y_SMALL),
        InvalidParameterError,
        r"'n_components' parameter of FMClassifier must be an int in the range \[1, inf\)",
    ),
    (
        "beta-0",
        lambda: fitted_fm_regressor().set_params(beta=0.0),
        lambda m: m.partial_fit(X_SMALL, Y_SMALL),
        InvalidParameterError,
        r"'beta' parameter of FMRegressor must be a float in the range \(0.0, inf\)",
    ),
    (
        "negative-init-stdev",
        lambda: fitted_fm_classifier().set_params(init_stdev=-0.1),
        lambda m: m.partial_fit(X_SMALL, Y_SMALL),
        InvalidParameterError,
        "'init_stdev' parameter of FMClassifier",
    ),
    (
        "factor-learning-rate-0",
        lambda: fitted_fm_classifier().set_params(factor_learning_rate=0.0),
        lambda m: m.fit(X_SMALL, Y_SMALL),
        InvalidParameterError,
        "'factor_learning_rate' parameter of FMClassifier",
    ),
    # Mini-batches run on numpy: engine="numba" is rejected as the linear
    # estimators reject it (with or without numba installed).
    (
        "numba-with-mini-batches",
        lambda: fitted_fm_classifier().set_params(engine="numba", batch_size=8),
        lambda m: m.partial_fit(X_SMALL, Y_SMALL),
        ValueError,
        "engine='numba' runs the exact per-row algorithm and needs batch_size=1",
    ),
    (
        "numba-with-mini-batches-first-call",
        lambda: FMRegressor(engine="numba", batch_size=8),
        lambda m: m.fit(X_SMALL, Y_SMALL),
        ValueError,
        "engine='numba' runs the exact per-row algorithm and needs batch_size=1",
    ),
    (
        "nan-in-X",
        fitted_fm_classifier,
        lambda m: m.partial_fit(np.where(X_SMALL.toarray() > 0.5, np.nan, 0.0), Y_SMALL),
        ValueError,
        "Input X contains NaN",
    ),
    (
        "wrong-feature-count",
        fitted_fm_regressor,
        lambda m: m.partial_fit(X_SMALL[:, :4], Y_SMALL),
        ValueError,
        "X has 4 features, but FMRegressor is expecting 8 features",
    ),
    (
        "unseen-label",
        fitted_fm_classifier,
        lambda m: m.partial_fit(X_SMALL, Y_SMALL + 5),
        ValueError,
        "y contains labels not in classes",
    ),
    (
        "one-class",
        FMClassifier,
        lambda m: m.fit(X_SMALL, np.zeros(60)),
        ValueError,
        "FMClassifier needs samples of at least 2 classes",
    ),
    (
        "negative-poisson-target",
        lambda: FMRegressor(loss="poisson"),
        lambda m: m.partial_fit(X_SMALL, Y_SMALL - 1.0),
        ValueError,
        "loss='poisson' requires non-negative y",
    ),
]


@pytest.mark.parametrize("batch_size", [1, 8], ids=["per-row", "mini-batches"])
@pytest.mark.parametrize(
    "make, call, error, pattern", [case[1:] for case in BAD], ids=[case[0] for case in BAD]
)
def test_bad_input_raises_and_changes_nothing(make, call, error, pattern, batch_size):
    model = make()
    model.set_params(batch_size=max(batch_size, model.batch_size))
    before = snapshot(model)
    with pytest.raises(error, match=pattern):
        call(model)
    assert_same(before, snapshot(model))


# --------------------------------------------------------------- persistence
def pickle_round_trip(model):
    return pickle.loads(pickle.dumps(model))


def joblib_round_trip(model):
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    return joblib.load(buffer)


def skops_round_trip(model):
    sio = pytest.importorskip("skops.io")
    data = sio.dumps(model)
    # Nothing but the package's own type needs trusting.
    assert sio.get_untrusted_types(data=data) == [f"skftrl._fm.{type(model).__name__}"]
    return sio.loads(data, trusted=[type(model)])


@pytest.mark.parametrize(
    "round_trip", [pickle_round_trip, joblib_round_trip, copy.deepcopy, skops_round_trip]
)
@pytest.mark.parametrize(
    "make, labels",
    [
        (lambda: FMClassifier(l1=0.1, factor_l2=0.01, random_state=0), [0, 1]),
        (lambda: FMClassifier(n_components=3, random_state=1), ["a", "b", "c"]),
        (lambda: FMRegressor(loss="huber", epsilon=0.5, random_state=2), None),
        (lambda: FMRegressor(loss="poisson", dtype=np.float32, random_state=3), None),
        # The mini-batch pass.
        (lambda: FMClassifier(n_components=3, batch_size=16, random_state=4), ["a", "b", "c"]),
        (lambda: FMRegressor(loss="huber", batch_size=7, factor_l2=0.1, random_state=5), None),
    ],
)
def test_resumed_training_is_bit_for_bit(round_trip, make, labels):
    rng = np.random.RandomState(0)
    X = sp.random(200, 30, density=0.2, format="csr", random_state=rng)
    if labels is None:
        y, extra = rng.poisson(1.5, size=200).astype(float), {}
    else:
        y, extra = np.asarray(labels)[rng.randint(len(labels), size=200)], {"classes": labels}
    first, second = slice(0, 120), slice(120, 200)

    uninterrupted = make().partial_fit(X[first], y[first], **extra)
    uninterrupted.partial_fit(X[second], y[second])
    saved = make().partial_fit(X[first], y[first], **extra)
    resumed = round_trip(saved)
    resumed.partial_fit(X[second], y[second])

    for name in FM_STATE + ["n_samples_seen_"]:
        assert np.array_equal(getattr(resumed, name), getattr(uninterrupted, name)), name
        assert (
            np.asarray(getattr(resumed, name)).dtype
            == np.asarray(getattr(uninterrupted, name)).dtype
        ), name
    assert np.array_equal(resumed.components_, uninterrupted.components_)
    assert np.array_equal(resumed.predict(X), uninterrupted.predict(X))
    # The loaded state is read-only again, as a fresh one.
    assert not resumed.z_factors_.flags.writeable and not resumed.n_factors_.flags.writeable


@pytest.mark.parametrize(
    "round_trip", [pickle_round_trip, joblib_round_trip, copy.deepcopy, skops_round_trip]
)
@pytest.mark.parametrize("random_state", [7, None, "instance"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_wide_model_saves_only_the_factors_training_changed(round_trip, random_state, dtype):
    # 2**16 hashed columns, of which a few hundred are seen: the untouched
    # factors keep their random initial values, which loading draws again.
    if random_state == "instance":
        random_state = np.random.RandomState(3)
    rng = np.random.RandomState(0)
    X = sp.random(60, 2**16, density=5 / 2**16, format="csr", random_state=rng)
    y = rng.randint(2, size=60)
    first, second = slice(0, 40), slice(40, 60)
    saved = FMClassifier(n_components=4, dtype=dtype, random_state=random_state)
    saved.partial_fit(X[first], y[first], classes=[0, 1])
    # A shallow copy copies the state's arrays whole (it does not save them).
    uninterrupted = copy.copy(saved)
    dense_bytes = saved.z_factors_.nbytes + saved.n_factors_.nbytes
    assert len(pickle.dumps(saved)) < dense_bytes / 20
    resumed = round_trip(saved)
    for name in FM_STATE:
        assert np.array_equal(getattr(resumed, name), getattr(saved, name)), name
        assert getattr(resumed, name).dtype == getattr(saved, name).dtype, name
    uninterrupted.partial_fit(X[second], y[second])
    resumed.partial_fit(X[second], y[second])
    for name in FM_STATE:
        assert np.array_equal(getattr(resumed, name), getattr(uninterrupted, name)), name
    assert not resumed.z_factors_.flags.writeable


# ------------------------------------------------------------ extreme inputs
@pytest.mark.parametrize("scale", [1e6, 1e100, 1e-300])
@pytest.mark.parametrize(
    "make",
    [
        lambda: FMClassifier(learning_rate=10.0, random_state=0),
        lambda: FMRegressor(random_state=0, factor_l2=0.1),
        lambda: FMRegressor(loss="poisson", learning_rate=5.0, random_state=0),
        lambda: FMClassifier(dtype=np.float32, random_state=0),
        lambda: FMClassifier(learning_rate=10.0, batch_size=16, random_state=0),
        lambda: FMRegressor(loss="poisson", batch_size=16, factor_l2=0.1, random_state=0),
    ],
)
def test_extreme_finite_values_give_a_finite_state(make, scale):
    X, y = small_problem(n_classes=3, n_rows=80)
    X = X * scale
    model = make()
    y = y if isinstance(model, FMClassifier) else y * 1e3
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or 0/0 inside
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
        model.partial_fit(X, y)
    for name in FM_STATE:
        assert np.all(np.isfinite(getattr(model, name))), name
    assert np.all(np.isfinite(model.components_))
    assert np.all(np.isfinite(model.coef_))
    if scale <= 1e6:
        predictions = (
            model.predict_proba(X) if hasattr(model, "predict_proba") else model.predict(X)
        )
        assert np.all(np.isfinite(predictions))


@pytest.mark.parametrize("fm_pass", FM_PASSES)
def test_every_pass_keeps_the_state_finite_near_the_largest_float(fm_pass):
    # Values of 1e300: the factor terms v x are clipped before they are
    # squared and every gradient is clipped, in each pass (prediction itself
    # overflows at this scale: only learning is checked).
    X, y = small_problem(n_classes=3, n_rows=80)
    model = FMClassifier(learning_rate=10.0, factor_l2=0.1, random_state=0, **fm_pass)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(3):
            model.partial_fit(X * 1e300, y, classes=[0, 1, 2])
    for name in FM_STATE:
        assert np.all(np.isfinite(getattr(model, name))), name
    assert np.all(np.isfinite(model.components_))


# ------------------------------------------------------------------- engines
@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numba_and_numpy_engines_agree(n_classes, dtype):
    X, y = click_stream(1500, seed=0, interaction=2.0)
    y = (y + np.arange(1500) % n_classes) % n_classes
    models = [
        FMClassifier(
            engine=engine, n_components=5, factor_l2=0.01, l1=0.1, dtype=dtype, random_state=0
        )
        for engine in ("numpy", "numba")
    ]
    for model in models:
        model.partial_fit(X[:700], y[:700], classes=np.arange(n_classes))
        model.partial_fit(X[700:], y[700:])
    numpy_model, numba_model = models
    for name in FM_STATE:
        (
            assert_allclose(
                getattr(numba_model, name),
                getattr(numpy_model, name),
                rtol=1e-12 if dtype == np.float64 else 1e-6,
                atol=1e-12,
            ),
            name,
        )
    assert_allclose(numba_model.loss_curve_, numpy_model.loss_curve_, rtol=1e-12)


# ------------------------------------------------------- interrupted passes
@pytest.mark.parametrize("fm_pass", FM_PASSES)
def test_ctrl_c_in_a_pass_leaves_the_model_as_it_was(fm_pass, undo_way):
    # A warm-start fit of many passes: Ctrl-C lands inside some pass, after
    # others have completed. Weights, intercepts and factors are put back.
    from test_interrupted import interrupted_after, warm_start_of_many_passes

    X, y = click_stream(3000, seed=0, interaction=2.0)
    y = (y + np.arange(3000) % 3) % 3  # three classes: three sets of factors
    hyper = dict(fm_pass, max_iter=1, tol=None, random_state=0)
    model = FMClassifier(**hyper).fit(X, y)
    warm_start_of_many_passes(model, X, y)
    before = snapshot(model)
    with pytest.raises(KeyboardInterrupt), interrupted_after(0.5):
        model.fit(X, y)
    assert_same(before, snapshot(model))
    # And it learns on as if the interrupted call had never been made.
    model.set_params(warm_start=False, max_iter=1)
    model.partial_fit(X[:100], y[:100])
    fresh = FMClassifier(**hyper).fit(X, y)
    fresh.set_params(warm_start=True).fit(X, y)
    fresh.partial_fit(X[:100], y[:100])
    for name in FM_STATE:
        assert np.array_equal(getattr(model, name), getattr(fresh, name)), name


def test_a_few_rows_read_only_their_factors_and_predict_the_same():
    # Predicting a few rows of a wide model computes only the factors of
    # their columns: the margins are those of all the rows, exactly.
    X, y = click_stream(500, seed=0, interaction=2.0)
    X_wide = sp.hstack([X, sp.csr_matrix((500, 5000))]).tocsr()
    model = FMClassifier(random_state=0).partial_fit(X_wide, y, classes=[0, 1])
    linear = X_wide @ model.coef_[0] + model.intercept_[0]
    all_rows = linear + pairwise_margins(X_wide, model.components_)[:, 0]
    for rows in (slice(0, 1), slice(3, 9), slice(100, 140)):
        assert np.array_equal(model.decision_function(X_wide[rows]), all_rows[rows])
    assert_allclose(model.decision_function(X_wide[:20].toarray()), all_rows[:20], rtol=1e-13)
