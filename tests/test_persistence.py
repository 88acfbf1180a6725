"""Saving mid-stream and resuming continues exactly as if never interrupted."""

import copy
import io
import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import is_classifier

from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor

STATE = ["z_", "n_", "z_intercept_", "n_intercept_", "n_samples_seen_"]


def pickle_round_trip(est):
    return pickle.loads(pickle.dumps(est))


def joblib_round_trip(est):
    buffer = io.BytesIO()
    joblib.dump(est, buffer)
    buffer.seek(0)
    return joblib.load(buffer)


@pytest.mark.parametrize("round_trip", [pickle_round_trip, joblib_round_trip])
@pytest.mark.parametrize(
    "make, labels",
    [
        (lambda: FTRLClassifier(l1=0.1, l2=0.1), [0, 1]),
        (lambda: FTRLClassifier(learning_rate=0.3), ["a", "b", "c"]),
        (lambda: FTRLRegressor(loss="huber", epsilon=0.5), None),
        (lambda: FTRLRegressor(loss="poisson"), None),
        (lambda: FTRLClassifier(dtype=np.float32), [0, 1]),
        (lambda: FTRLClassifier(batch_size=16), [0, 1]),
    ],
)
def test_resumed_training_is_bit_for_bit(round_trip, make, labels, engine):
    rng = np.random.RandomState(0)
    X = sp.random(300, 40, density=0.2, format="csr", random_state=rng)
    if labels is None:
        y = rng.poisson(1.5, size=300).astype(float)
        extra = {}
    else:
        y = np.asarray(labels)[rng.randint(len(labels), size=300)]
        extra = {"classes": labels}
    A, B = slice(0, 170), slice(170, 300)

    def make_in_engine():
        est = make()
        # Mini-batches run on numpy whatever the engine.
        return est.set_params(engine=engine) if est.batch_size == 1 else est

    uninterrupted = make_in_engine()
    uninterrupted.partial_fit(X[A], y[A], **extra)
    uninterrupted.partial_fit(X[B], y[B])

    saved = make_in_engine()
    saved.partial_fit(X[A], y[A], **extra)
    resumed = round_trip(saved)
    resumed.partial_fit(X[B], y[B])

    for name in STATE:
        assert np.array_equal(getattr(resumed, name), getattr(uninterrupted, name)), name
    assert np.array_equal(resumed.coef_, uninterrupted.coef_)
    assert np.array_equal(resumed.predict(X), uninterrupted.predict(X))


@pytest.mark.parametrize("round_trip", [pickle_round_trip, joblib_round_trip, copy.deepcopy])
@pytest.mark.parametrize("labels", [[0, 1], ["a", "b", "c"]])
def test_round_trips_keep_the_interleaved_state(round_trip, labels):
    # Each feature's z and n are adjacent in one buffer (one cache miss per
    # coordinate); pickle stores z_ and n_ as two arrays, and loading puts
    # them back into one buffer, values unchanged.
    rng = np.random.RandomState(0)
    X = sp.random(50, 7, density=0.5, format="csr", random_state=rng)
    y = np.asarray(labels)[rng.randint(len(labels), size=50)]
    model = FTRLClassifier(initial_accumulator_value=0.25).fit(X, y)
    loaded = round_trip(model)
    for fitted in (model, loaded):
        assert fitted.z_.base is fitted.n_.base is not None
        assert fitted.z_.base.shape == (7, fitted.z_.shape[0], 2)
        assert fitted.z_.strides == fitted.n_.strides == (16, 16 * fitted.z_.shape[0])
    for name in STATE:
        assert np.array_equal(getattr(loaded, name), getattr(model, name)), name


# ------------------------------------------------------------ damaged files
def saved_with(model, tamper, monkeypatch):
    """The pickle of ``model`` whose saved state ``tamper(state)`` changed."""
    getstate = type(model).__getstate__
    with monkeypatch.context() as patched:
        patched.setattr(type(model), "__getstate__", lambda self: tamper(getstate(self)))
        return pickle.dumps(model)


def fitted(make, compact):
    """A model saved compactly (few coordinates touched) or whole."""
    X = sp.random(20, 3000 if compact else 6, density=0.002 if compact else 1.0, random_state=0)
    X = X.tocsr()
    model = make(random_state=0, max_iter=1, tol=None)
    return model.fit(X, np.arange(20) % 3 if is_classifier(model) else np.arange(20.0))


def replaced(name, value):
    def tamper(state):
        # Either the whole array, or the record of its touched coordinates.
        key = name if name in state else {"z_": "_touched_state", "n_": "_touched_state"}[name]
        state[key] = value
        return state

    return tamper


def removed(name):
    def tamper(state):
        for key in (name, "_touched_state" if name in ("z_", "n_") else name):
            state.pop(key, None)
        return state

    return tamper


DAMAGE = [
    (removed("n_"), r"saved state has no (z_|n_)"),  # compact: z_ and n_ in one record
    (removed("z_intercept_"), r"saved state has no z_intercept_"),
    (replaced("z_", [0.0, 1.0]), r"saved (z_|_touched_state) (is a list|is not a record)"),
    (replaced("n_", {"a": 1}), r"saved (n_ is a dict|_touched_state is not a record)"),
    (replaced("z_", np.zeros(3)), r"saved (z_ has the shape \(3,\)|_touched_state is not)"),
    (replaced("n_features_in_", "6"), r"saved n_features_in_ is '6', not a non-negative int"),
    (removed("n_features_in_"), r"saved n_features_in_ is None"),
    (replaced("n_samples_seen_", None), r"saved n_samples_seen_ is None"),
    (replaced("_state_parameters", None), r"saved _state_parameters is not a record of"),
]


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("tamper, message", DAMAGE)
@pytest.mark.parametrize("make", [FTRLClassifier, FTRLRegressor, FMClassifier, FMRegressor])
def test_a_damaged_saved_state_is_refused_with_a_value_error(
    make, tamper, message, compact, monkeypatch
):
    """Regression: a saved model whose state arrays were missing, of the wrong
    type or shape, or whose shape-giving attributes were damaged, loaded and
    failed later (or at once) with an AttributeError, TypeError or IndexError,
    or loaded a state broadcast from a number. The docs promise a ValueError
    that names what is wrong."""
    data = saved_with(fitted(make, compact), tamper, monkeypatch)
    with pytest.raises(ValueError, match=message):
        pickle.loads(data)


@pytest.mark.parametrize("make", [FTRLClassifier, FMClassifier])
@pytest.mark.parametrize("classes", [None, np.array(["a"]), 3, [0, 1, 2]])
def test_a_classifier_saved_without_its_classes_is_refused(make, classes, monkeypatch):
    data = saved_with(fitted(make, True), replaced("classes_", classes), monkeypatch)
    with pytest.raises(ValueError, match=r"saved classes_ is not a 1-d array of at least two"):
        pickle.loads(data)


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize(
    "source, target",
    [
        (FMClassifier, FTRLClassifier),
        (FMRegressor, FTRLRegressor),
        (FTRLClassifier, FMClassifier),
        (FTRLClassifier, FTRLRegressor),
        (FTRLRegressor, FTRLClassifier),
    ],
)
def test_the_state_of_another_kind_of_model_is_refused(source, target, compact):
    """Regression: a factorization machine's state set into an FTRLClassifier
    loaded without its factors (and predicted from its linear part alone)."""
    state = fitted(source, compact).__getstate__()
    model = target.__new__(target)
    if source.__name__.startswith("FM") and not target.__name__.startswith("FM"):
        message = r"holds .*(z_factors_|_touched_factors).* another kind of model \(FM"
    elif target.__name__.startswith("FM"):
        message = r"saved state has no z_factors_"
    elif target is FTRLRegressor:
        message = r"holds classes_, which a FTRLRegressor does not have"
    else:
        message = r"saved classes_ is not"
    with pytest.raises(ValueError, match=message):
        model.__setstate__(state)
