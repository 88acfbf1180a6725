"""fit's passes: held-out early stopping, the best pass's state, and the refit default.

Every expectation comes from a by-hand run with ``partial_fit`` over the same
rows, scored with scikit-learn's metrics, never from fit's own records.
"""

import copy
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss, mean_poisson_deviance
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

from conftest import assert_same, snapshot
from skftrl import FTRLClassifier, FTRLRegressor

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]


def assert_same_model(a, b):
    """The same state, bit for bit, and the same record of its training."""
    for name in STATE:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.loss_curve_ == b.loss_curve_
    assert a.n_samples_seen_ == b.n_samples_seen_


def rare_feature_data(n_rows=600, n_features=2000, seed=0):
    """Hashed-click-like rows: 8 one-hot features a row, most of them rare.

    A true logistic model over all the features makes the labels noisy, so
    passes after the first few memorize the rare features and the held-out
    log loss rises, while the accuracy barely moves.
    """
    rng = np.random.RandomState(seed)
    columns = np.minimum(rng.zipf(1.6, size=(n_rows, 8)) - 1, n_features - 1)
    columns = (columns * 7919 + np.arange(8) * 104729) % n_features
    X = sp.csr_matrix(
        (np.ones(columns.size), (np.repeat(np.arange(n_rows), 8), columns.ravel())),
        shape=(n_rows, n_features),
    )
    y = (rng.rand(n_rows) < expit(X @ rng.normal(0, 0.25, n_features) - 1.0)).astype(int)
    return X, y


def validation_rows(model, y, seed, fraction):
    """The held-out rows of scikit-learn's SGD estimators' early stopping."""
    splitter = StratifiedShuffleSplit if isinstance(model, FTRLClassifier) else ShuffleSplit
    train, validation = next(
        splitter(test_size=fraction, random_state=seed).split(np.zeros((len(y), 1)), y)
    )
    return np.sort(train), np.sort(validation)


def held_out_loss(model, X, y):
    """The model's own loss on (X, y), from scikit-learn's metrics."""
    if isinstance(model, FTRLClassifier):
        return log_loss(y, model.predict_proba(X), labels=model.classes_)
    predicted = model.predict(X)
    if model.loss == "squared_error":
        return 0.5 * np.mean((predicted - y) ** 2)
    # Poisson: half the mean deviance, less the terms without the margin.
    constant = np.mean(np.where(y > 0, y * np.log(np.where(y > 0, y, 1)) - y, 0.0))
    return 0.5 * mean_poisson_deviance(y, predicted) - constant


def by_hand_passes(model, X, y, passes, classes=None):
    """Copies of ``model`` after each of ``passes`` partial_fit calls on (X, y)."""
    models = []
    for _ in range(passes):
        if classes is None:
            model.partial_fit(X, y)
        else:
            model.partial_fit(X, y, classes=classes)
        models.append(copy.deepcopy(model))
    return models


# Each task: a model, the targets from rare_feature_data's (X, y), and a
# seed of that data where the best pass is neither the first nor the last.
TASKS = {
    "classification": (FTRLClassifier(), lambda X, y: y, 3),
    "squared_error": (
        FTRLRegressor(learning_rate=0.5),
        lambda X, y: X @ np.linspace(-1, 1, X.shape[1]) + y,
        5,
    ),
    "poisson": (FTRLRegressor(loss="poisson", learning_rate=0.3), lambda X, y: 3 * y, 1),
}


@pytest.mark.parametrize("task", TASKS)
def test_early_stopping_restores_the_state_of_the_best_pass(task):
    model, target, seed = TASKS[task]
    X, y = rare_feature_data(seed=seed)
    y = target(X, y)
    params = dict(shuffle=False, tol=None, max_iter=8, random_state=3)
    stopped = clone(model).set_params(early_stopping=True, validation_fraction=0.2, **params)
    stopped.fit(X, y)

    train, validation = validation_rows(model, y, seed=3, fraction=0.2)
    classes = [0, 1] if task == "classification" else None
    by_hand = clone(model).set_params(early_stopping=False, **params)
    passes = by_hand_passes(by_hand, X[train], y[train], 8, classes)
    losses = [held_out_loss(m, X[validation], y[validation]) for m in passes]
    best = int(np.argmin(losses)) + 1
    assert 1 < best < 8  # the restore is not trivially the first or the last pass
    assert stopped.best_iteration_ == best and stopped.n_iter_ == 8
    assert_same_model(stopped, passes[best - 1])
    # validation_scores_ are the negated held-out losses: higher is better.
    assert_allclose(stopped.validation_scores_, -np.array(losses), rtol=1e-12)
    assert stopped.best_validation_score_ == max(stopped.validation_scores_)


def test_early_stopping_with_shuffling_equals_a_run_stopped_at_its_best_pass():
    X, y = rare_feature_data(seed=3)
    params = dict(early_stopping=True, tol=None, random_state=5)
    stopped = FTRLClassifier(max_iter=8, **params).fit(X, y)
    assert 1 < stopped.best_iteration_ < 8
    # The same split and the same shuffles, stopped after the best pass.
    short = FTRLClassifier(max_iter=stopped.best_iteration_, **params).fit(X, y)
    assert_same_model(stopped, short)
    assert short.validation_scores_ == stopped.validation_scores_[: stopped.best_iteration_]


def test_default_fit_refits_all_rows_for_the_best_number_of_passes():
    X, y = rare_feature_data(seed=8)
    params = dict(shuffle=False, max_iter=8, tol=None, random_state=0)
    fitted = FTRLClassifier(**params).fit(X, y)  # early_stopping="refit"
    stopped = FTRLClassifier(early_stopping=True, **params).fit(X, y)
    assert fitted.validation_scores_ == stopped.validation_scores_
    assert fitted.best_iteration_ == stopped.best_iteration_ > 1
    by_hand = FTRLClassifier(early_stopping=False, **params)
    passes = by_hand_passes(by_hand, X, y, fitted.best_iteration_, classes=[0, 1])
    assert_same_model(fitted, passes[-1])
    assert fitted.n_iter_ == 8

    # warm_start: the refit starts again from the state fit started from.
    warm = FTRLClassifier(warm_start=True, **params).fit(X[:300], y[:300])
    start = copy.deepcopy(warm)
    warm.fit(X, y)
    passes = by_hand_passes(start, X, y, warm.best_iteration_, classes=[0, 1])
    assert_same_model(warm, passes[-1])


def test_stopping_is_on_the_held_out_loss_after_n_iter_no_change_passes():
    X, y = rare_feature_data(seed=3)
    model = FTRLClassifier(early_stopping=True, shuffle=False, random_state=3, tol=0.0)
    stopped = clone(model).set_params(n_iter_no_change=2).fit(X, y)
    train, validation = validation_rows(model, y, seed=3, fraction=0.1)
    passes = by_hand_passes(clone(model), X[train], y[train], 30, [0, 1])
    losses = [log_loss(y[validation], m.predict_proba(X[validation])) for m in passes]
    # fit stops at the first pass that ends n_iter_no_change = 2 passes in a
    # row without a lower held-out log loss than every pass before them.
    stop = next(p for p in range(3, 31) if min(losses[p - 2 : p]) >= min(losses[: p - 2]))
    assert stopped.n_iter_ == stop > 3  # not at once
    best = int(np.argmin(losses[:stop])) + 1
    assert stopped.best_iteration_ == best
    assert_same_model(stopped, passes[best - 1])

    # A loss cannot improve by 1.1: the first pass is the best, and
    # n_iter_no_change passes without improvement stop fit, without warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        quick = clone(model).set_params(tol=1.1, n_iter_no_change=3).fit(X, y)
    assert quick.n_iter_ == 4 and len(quick.validation_scores_) == 4
    # The best pass is that of the lowest held-out loss.
    best = int(np.argmax(quick.validation_scores_)) + 1
    assert quick.best_iteration_ == best and len(quick.loss_curve_) == best
    with pytest.warns(ConvergenceWarning, match="held-out loss"):
        clone(model).set_params(max_iter=2, tol=1.1, n_iter_no_change=3).fit(X, y)


def test_true_keeps_the_lowest_loss_and_refit_the_last_pass_within_tol_of_it():
    X, y = rare_feature_data(seed=3)
    train, validation = validation_rows(FTRLClassifier(), y, seed=3, fraction=0.2)
    passes = by_hand_passes(FTRLClassifier(shuffle=False), X[train], y[train], 8, [0, 1])
    losses = np.array([log_loss(y[validation], m.predict_proba(X[validation])) for m in passes])
    best = int(np.argmin(losses)) + 1
    # A tol that counts a later, higher loss as equal to the lowest, and not
    # the last pass's.
    tol = (np.sort(losses[best:])[0] + np.sort(losses[best:])[1]) / 2 - losses.min()
    last_within_tol = max(p for p in range(1, 9) if losses[p - 1] <= losses.min() + tol)
    assert best < last_within_tol < 8
    params = dict(
        shuffle=False,
        max_iter=8,
        tol=tol,
        n_iter_no_change=8,
        random_state=3,
        validation_fraction=0.2,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter is reached
        stopped = FTRLClassifier(early_stopping=True, **params).fit(X, y)
        refit = FTRLClassifier(early_stopping="refit", **params).fit(X, y)
    # True: the model that scored best, as MLPClassifier keeps it.
    assert stopped.best_iteration_ == best
    assert_same_model(stopped, passes[best - 1])
    assert stopped.best_validation_score_ == max(stopped.validation_scores_)
    # "refit": passes within tol count as equal, the later one has learned more.
    assert refit.best_iteration_ == last_within_tol
    assert refit.best_validation_score_ == refit.validation_scores_[last_within_tol - 1]
    by_hand = FTRLClassifier(shuffle=False)
    assert_same_model(refit, by_hand_passes(by_hand, X, y, last_within_tol, [0, 1])[-1])


def test_default_fit_is_not_worse_than_one_pass_on_rare_features():
    X, y = rare_feature_data(n_rows=10_000, n_features=20_000)
    X_test, y_test = X[5000:], y[5000:]
    X, y = X[:5000], y[:5000]
    one_pass = FTRLClassifier().partial_fit(X, y, classes=[0, 1])
    one_pass_loss = log_loss(y_test, one_pass.predict_proba(X_test))
    fitted = FTRLClassifier(random_state=0).fit(X, y)
    # At this size the order of the rows alone moves one pass's loss by up
    # to about 1% (benchmarks/bench_fit.py measures larger logs).
    assert log_loss(y_test, fitted.predict_proba(X_test)) <= 1.01 * one_pass_loss
    # Passes over all rows until the training loss stops improving overfit.
    old = FTRLClassifier(early_stopping=False, tol=1e-3, random_state=0).fit(X, y)
    assert log_loss(y_test, old.predict_proba(X_test)) > 1.03 * one_pass_loss


def test_the_best_state_costs_the_columns_fit_reads_not_the_model_width():
    # 2**22 columns, of which the rows use a few hundred: a copy of the whole
    # state would add the size of z_ and n_ again.
    X, y = rare_feature_data(n_rows=300, n_features=500)
    X = sp.csr_matrix((X.data, X.indices * 8000, X.indptr), shape=(300, 2**22))
    peaks = {}
    for early_stopping in [False, True, "refit"]:
        model = FTRLClassifier(early_stopping=early_stopping, max_iter=4, tol=None, random_state=0)
        tracemalloc.start()
        model.fit(X, y)
        peaks[early_stopping] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    state_bytes = model.z_.nbytes + model.n_.nbytes
    assert peaks[False] > state_bytes
    assert peaks[True] < peaks[False] + 0.05 * state_bytes
    assert peaks["refit"] < peaks[False] + 0.05 * state_bytes


def test_a_class_of_one_row_falls_back_to_an_unstratified_split():
    X, y = rare_feature_data(n_rows=200)
    y[0] = 2
    stopped = FTRLClassifier(early_stopping=True, shuffle=False, random_state=0).fit(X, y)
    train, _ = next(ShuffleSplit(test_size=0.1, random_state=0).split(np.zeros((200, 1))))
    by_hand = FTRLClassifier(shuffle=False)
    passes = by_hand_passes(
        by_hand, X[np.sort(train)], y[np.sort(train)], stopped.best_iteration_, classes=[0, 1, 2]
    )
    assert_same_model(stopped, passes[-1])


def test_early_stopping_errors_leave_the_model_unchanged_and_fit_is_deterministic():
    X, y = rare_feature_data(n_rows=300)
    a = FTRLClassifier(early_stopping=True, random_state=5).fit(X, y)
    b = FTRLClassifier(early_stopping=True, random_state=5).fit(X, y)
    assert_same_model(a, b)
    assert a.validation_scores_ == b.validation_scores_

    model = FTRLRegressor(random_state=0).fit(X, y)
    before = snapshot(model)
    with pytest.raises(ValueError, match="at least 2 samples.*early_stopping=False"):
        model.fit(X[:1], y[:1])
    assert_same(before, snapshot(model))
    # Without early stopping, one row is enough.
    model.set_params(early_stopping=False).fit(X[:1], y[:1])
    assert model.validation_scores_ is None and model.best_iteration_ == model.n_iter_
