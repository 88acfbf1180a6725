"""Saving mid-stream and resuming continues exactly as if never interrupted."""

import copy
import io
import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from skftrl import FTRLClassifier, FTRLRegressor

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
