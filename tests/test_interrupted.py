"""A training call that fails once its pass has started leaves the model
exactly as it was: an exception, Ctrl-C (KeyboardInterrupt) or a warning
turned into an error, in partial_fit and in a warm-start fit with several
passes. A shallow copy shares nothing that training changes."""

import copy
import signal
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from conftest import assert_same, snapshot
from skftrl import FTRLClassifier, FTRLRegressor
from skftrl.datasets import load_a9a, load_dna

LEARNED = ("z_", "n_", "z_intercept_", "n_intercept_")


class interrupted_after:
    """Send KeyboardInterrupt to the main thread after ``seconds``, as Ctrl-C does.

    Python runs a signal's handler in whatever Python code is running, and
    when that is a finalizer or a weakref callback (such as a WeakSet's, run
    as an object is collected), it prints the exception ("Exception ignored
    in ...") and goes on: the interrupt never reaches the code it was sent
    to, as happens to a real Ctrl-C. So each interrupt also sends the next,
    ``AGAIN_AFTER`` seconds later, as a user presses Ctrl-C again, until one
    gets through; leaving the block stops them.
    """

    AGAIN_AFTER = 0.25

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def interrupt(signum, frame):
            signal.setitimer(signal.ITIMER_REAL, self.AGAIN_AFTER)
            raise KeyboardInterrupt

        self.previous = signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc_info):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)


def warm_start_of_many_passes(model, X, y):
    """Set a fitted model to learn on for many passes, once a first
    warm-start pass has compiled (numba) the pass that records its steps:
    the interrupt then lands in a pass, not in numba's compiler, which a
    KeyboardInterrupt leaves broken."""
    model.set_params(warm_start=True).fit(X, y)
    model.set_params(max_iter=10_000)


def test_ctrl_c_in_a_numpy_pass_leaves_the_model_as_it_was(undo_way):
    # The numpy per-row pass takes seconds over a9a's 32,561 rows ten times:
    # the interrupt lands between two rows' updates, or inside one.
    X, y, _, _ = load_a9a()
    model = FTRLClassifier(engine="numpy", l1=0.5).partial_fit(X[:500], y[:500], classes=[-1, 1])
    before = snapshot(model)
    X_long, y_long = sp.vstack([X] * 10, format="csr"), np.tile(y, 10)
    with pytest.raises(KeyboardInterrupt), interrupted_after(0.3):
        model.partial_fit(X_long, y_long)
    assert_same(before, snapshot(model))
    # And it goes on learning as if the interrupted call had never been made.
    model.partial_fit(X[500:1000], y[500:1000])
    fresh = FTRLClassifier(engine="numpy", l1=0.5)
    fresh.partial_fit(X[:500], y[:500], classes=[-1, 1]).partial_fit(X[500:1000], y[500:1000])
    for name in LEARNED:
        assert np.array_equal(getattr(model, name), getattr(fresh, name)), name


@pytest.mark.parametrize("batch_size", [1, 16])
def test_ctrl_c_in_a_warm_start_fit_leaves_the_model_as_it_was(engine, batch_size, undo_way):
    # Many passes over dna (three outputs): the interrupt lands in some pass
    # after others have completed, or (numba) right after a compiled pass.
    if engine == "numba" and batch_size > 1:
        pytest.skip("numba runs the exact per-row pass only")
    X, y, _, _ = load_dna()
    model = FTRLClassifier(engine=engine, batch_size=batch_size, max_iter=1, tol=None)
    model.fit(X, y)
    model.set_params(random_state=0)
    warm_start_of_many_passes(model, X, y)
    before = snapshot(model)
    with pytest.raises(KeyboardInterrupt), interrupted_after(0.5):
        model.fit(X, y)
    assert_same(before, snapshot(model))


@pytest.mark.parametrize("early_stopping", [False, True])
def test_a_warning_as_error_after_the_passes_of_a_warm_start_fit_changes_nothing(
    engine, undo_way, early_stopping
):
    # fit warns (ConvergenceWarning) after its passes; as an error, it must
    # undo them, loss_curve_'s entries included. With early stopping, the
    # passes learn the rows not held out: some of the rows only, and of the
    # features some only (each row has 5 of 2,000).
    X = sp.random(600, 2000, density=5 / 2000, format="csr", random_state=0)
    y = np.arange(600) % 3
    model = FTRLClassifier(engine=engine, max_iter=1, tol=None).fit(X, y)
    model.set_params(
        warm_start=True, max_iter=3, tol=0.0, n_iter_no_change=10, early_stopping=early_stopping
    )
    before = snapshot(model)
    curve = model.loss_curve_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConvergenceWarning):
            model.fit(X, y)
    assert_same(before, snapshot(model))
    assert curve == before["loss_curve_"]  # the list the user holds, too


def test_an_overflow_warning_as_error_in_partial_fit_changes_nothing(
    engine, undo_way, monkeypatch
):
    # A warning raised once the pass has run, when the pass's loss is
    # computed. (A squared error beyond the float range used to warn there;
    # it is now clamped without a warning, issue 16, so the loss is made to.)
    from skftrl._engines._losses import SquaredError

    value = SquaredError._value

    def warning_value(self, margins, targets):
        warnings.warn("overflow encountered in square", RuntimeWarning, stacklevel=2)
        return value(self, margins, targets)

    X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    model = FTRLRegressor(engine=engine).partial_fit(X, [1.0, 2.0, 3.0])
    before = snapshot(model)
    monkeypatch.setattr(SquaredError, "_value", warning_value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="overflow"):
            model.partial_fit(X, [1e200, 1.0, 1.0])
    assert_same(before, snapshot(model))


@pytest.mark.parametrize("make", [FTRLClassifier, FTRLRegressor])
def test_a_shallow_copy_shares_nothing_that_training_changes(make, engine, undo_way):
    X, y, _, _ = load_a9a()
    X, y = X[:400], y[:400]
    original = make(engine=engine).partial_fit(
        X[:200], y[:200], **({"classes": [-1, 1]} if make is FTRLClassifier else {})
    )
    before = snapshot(original)
    copied = copy.copy(original)
    copied.partial_fit(X[200:], y[200:])
    copied.set_params(warm_start=True, max_iter=2, tol=None, early_stopping=False).fit(X, y)
    assert_same(before, snapshot(original))
    assert len(copied.loss_curve_) == len(original.loss_curve_) + 3
    for name in LEARNED:
        assert not np.shares_memory(getattr(copied, name), getattr(original, name)), name


@pytest.mark.parametrize("batch_size", [1, 8])
def test_an_error_in_a_later_block_of_a_numpy_pass_leaves_the_model_as_it_was(
    batch_size, undo_way, monkeypatch
):
    # The numpy passes read their rows a block at a time (and the per-row
    # pass records the coordinates of each block before learning it): an
    # error many blocks into a pass must undo every block's changes.
    from skftrl._engines import _linear_numpy, _math, _rows

    monkeypatch.setattr(_rows, "BLOCK_NONZEROS", 200)
    X, y, _, _ = load_dna()
    model = FTRLClassifier(engine="numpy", batch_size=batch_size, l1=0.5)
    model.partial_fit(X[:100], y[:100], classes=np.unique(y))
    before = snapshot(model)
    update, calls = _math.update_coordinates, []

    def failing_update(*args, **kwargs):
        calls.append(None)
        if len(calls) > 1000 // batch_size:
            raise RuntimeError("failed in a later block")
        return update(*args, **kwargs)

    monkeypatch.setattr(_math, "update_coordinates", failing_update)
    monkeypatch.setattr(_linear_numpy, "update_coordinates", failing_update)
    with pytest.raises(RuntimeError, match="later block"):
        model.partial_fit(X[100:2000], y[100:2000])
    assert_same(before, snapshot(model))


def test_a_state_with_fewer_features_than_the_pass_has_non_zeros_is_copied_whole():
    # undo_record keeps the smaller record: a copy of a state of F features
    # when the rows have at least F non-zeros, else a log of each step. Both
    # put the state back exactly.
    import scipy.sparse as sp

    from skftrl._engines import LinearState, StateCopy, UndoLog, new_state, undo_record

    X = sp.csr_matrix(np.eye(6)[:, :5])  # 5 non-zeros in 6 rows
    for n_features, expected in [(5, StateCopy), (6, UndoLog)]:
        X_wide = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(6, n_features))
        z, n = new_state(2, n_features, np.float64)
        state = LinearState(z, n, np.zeros(2), np.zeros(2))
        rows = np.arange(6)
        record, log = undo_record(state, X_wide, rows)
        assert type(record) is expected
        assert log is (None if expected is StateCopy else record)
        if log is not None:
            log.record(np.arange(5))
        z[:, :5], n[:, :5], state.z_intercept[:] = 1.0, 2.0, 3.0
        record.restore()
        assert not z.any() and not n.any() and not state.z_intercept.any()
