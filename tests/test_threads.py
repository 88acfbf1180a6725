"""Learning from several threads: an estimator's learning calls run one at a time.

Two threads each call ``partial_fit`` (or ``fit`` with ``warm_start``) on the
same batch, many times over. Whatever order the lock lets them in, every call
learns the same rows from the state the previous call left, so the result must
be, bit for bit, that of the same number of calls made one after the other. An
update lost by two passes interleaving (one reading coordinates the other is
writing) changes the state, ``n_samples_seen_`` or ``loss_curve_``.
"""

import copy
import gc
import pickle
import sys
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import skftrl._fm
from conftest import HAS_NUMBA
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor
from skftrl._base import _LEARNING_LOCKS, learning_lock
from skftrl._engines import prediction_engine

N_THREADS = 2
CALLS_PER_THREAD = 12


def batch(n_rows=150, n_features=40, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_features, density=0.2, format="csr", random_state=seed)
    return X, (rng.random(n_rows) < 0.5).astype(np.float64)


def in_threads(call, n_threads=N_THREADS):
    """Run ``call(index)`` in ``n_threads`` threads started together, with the
    interpreter switching threads as often as it can; re-raise any error."""
    start, errors = threading.Barrier(n_threads), []

    def run(index):
        try:
            start.wait()
            call(index)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]


def state_of(model):
    names = ["z_", "n_", "z_intercept_", "n_intercept_", "z_factors_", "n_factors_"]
    arrays = {name: getattr(model, name) for name in names if hasattr(model, name)}
    return arrays, model.n_samples_seen_, list(model.loss_curve_)


def assert_same_state(one, other):
    (arrays, seen, curve), (other_arrays, other_seen, other_curve) = one, other
    assert seen == other_seen
    assert len(curve) == len(other_curve)
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, other_arrays[name], err_msg=name)


ESTIMATORS = {
    "linear, numpy": lambda: FTRLClassifier(engine="numpy"),
    "linear, numba": lambda: FTRLClassifier(engine="numba"),
    "linear, mini-batch": lambda: FTRLClassifier(engine="numpy", batch_size=4),
    "linear regressor, numpy": lambda: FTRLRegressor(engine="numpy"),
    "FM, numpy": lambda: FMClassifier(engine="numpy", n_components=3, random_state=0),
    "FM regressor, mini-batch": lambda: FMRegressor(
        engine="numpy", n_components=3, random_state=0, batch_size=16
    ),
}


@pytest.mark.parametrize("make", ESTIMATORS.values(), ids=ESTIMATORS.keys())
def test_concurrent_partial_fit_loses_no_update(make):
    if make().engine == "numba" and not HAS_NUMBA:
        pytest.skip("numba is not installed")
    X, y = batch()
    classes = {"classes": [0.0, 1.0]} if isinstance(make(), FTRLClassifier) else {}
    shared = make().partial_fit(X, y, **classes)

    def learn(_):
        for _ in range(CALLS_PER_THREAD):
            shared.partial_fit(X, y)

    in_threads(learn)
    alone = make().partial_fit(X, y, **classes)
    for _ in range(N_THREADS * CALLS_PER_THREAD):
        alone.partial_fit(X, y)
    assert_same_state(state_of(shared), state_of(alone))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_concurrent_fit_with_warm_start_loses_no_update():
    X, y = batch()
    shared = FTRLClassifier(engine="numpy", warm_start=True, max_iter=3, random_state=0).fit(X, y)

    def learn(_):
        for _ in range(CALLS_PER_THREAD // 3):
            shared.fit(X, y)

    in_threads(learn)
    alone = FTRLClassifier(engine="numpy", warm_start=True, max_iter=3, random_state=0).fit(X, y)
    for _ in range(N_THREADS * (CALLS_PER_THREAD // 3)):
        alone.fit(X, y)
    assert_same_state(state_of(shared), state_of(alone))


def test_a_failing_call_in_one_thread_leaves_the_others_learning():
    X, y = batch()
    shared = FTRLClassifier(engine="numpy").partial_fit(X, y, classes=[0.0, 1.0])
    bad = X.copy()
    bad.data[0] = np.nan

    def learn(index):
        rows = (X, bad)[index]
        for _ in range(CALLS_PER_THREAD):
            try:
                shared.partial_fit(rows, y)
            except ValueError:
                assert rows is bad

    in_threads(learn)
    alone = FTRLClassifier(engine="numpy").partial_fit(X, y, classes=[0.0, 1.0])
    n_good = (shared.n_samples_seen_ - X.shape[0]) // X.shape[0]
    for _ in range(n_good):
        alone.partial_fit(X, y)
    assert_same_state(state_of(shared), state_of(alone))


def test_the_lock_is_no_part_of_the_model():
    X, y = batch()
    model = FTRLClassifier(engine="numpy").partial_fit(X, y, classes=[0.0, 1.0])
    lock = learning_lock(model)
    assert learning_lock(model) is lock
    assert "lock" not in "".join(model.get_params()) and "lock" not in "".join(vars(model))
    for other in (pickle.loads(pickle.dumps(model)), copy.copy(model), copy.deepcopy(model)):
        assert learning_lock(other) is not lock
        other.partial_fit(X, y)  # each learns on its own
    assert learning_lock(clone(model)) is not lock
    # The entry goes with the estimator.
    n_locks = len(_LEARNING_LOCKS)
    del model, other
    gc.collect()
    assert len(_LEARNING_LOCKS) < n_locks


def test_weights_computed_while_a_pass_ends_are_not_kept(monkeypatch):
    # A prediction reads the state while another thread's pass ends (and
    # clears the cache): its weights, of a state part way through the pass,
    # must serve that prediction only.
    X, y = batch()
    model = FTRLClassifier(engine="numpy").fit(X, y)
    engine = prediction_engine("linear", "numpy")
    weights = engine.weights

    def weights_while_a_pass_ends(state, parameters):
        coef = weights(state, parameters)
        model._prediction_cache.clear()
        return coef

    monkeypatch.setattr(engine, "weights", weights_while_a_pass_ends)
    model.predict(X)  # reads more non-zeros than the state's width: whole weights
    assert not model._prediction_cache.kept
    monkeypatch.undo()
    model.predict(X)
    assert model._prediction_cache.kept


def test_a_first_call_publishes_its_whole_state_at_once(monkeypatch):
    # While a wide factorization machine's first partial_fit draws its
    # factors, another thread sees the model unfitted: predict raises
    # NotFittedError, and a pickle loads (a pickle waits for the call to end).
    X, y = batch(n_features=5000)
    model = FMClassifier(engine="numpy", n_components=4, random_state=0)
    draw = skftrl._fm.new_factor_state
    outcomes = {}

    def in_another_thread(name, call):
        thread = threading.Thread(target=lambda: outcomes.__setitem__(name, call()))
        thread.start()
        return thread

    def predict():
        try:
            return model.predict(X)
        except Exception as error:
            return error

    def drawing(*args, **kwargs):
        factors = draw(*args, **kwargs)
        in_another_thread("predict", predict).join()
        pickling = in_another_thread("pickle", lambda: pickle.dumps(model))
        pickling.join(timeout=0.2)  # done at once, unless it waits for the call
        outcomes["pickling"] = pickling
        return factors

    monkeypatch.setattr(skftrl._fm, "new_factor_state", drawing)
    model.partial_fit(X, y, classes=[0.0, 1.0])
    outcomes["pickling"].join()
    assert isinstance(outcomes["predict"], NotFittedError)
    loaded = pickle.loads(outcomes["pickle"])
    if hasattr(loaded, "z_"):
        assert_same_state(state_of(loaded), state_of(model))
    else:
        assert not hasattr(loaded, "z_factors_") and not hasattr(loaded, "n_samples_seen_")
