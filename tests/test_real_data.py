"""Quality on the real datasets shipped with the package."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score, log_loss, roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a, load_dna


@pytest.mark.parametrize(
    "params",
    [dict(learning_rate=0.1, beta=1.0, l1=1.0, l2=0.0), {}],
    ids=["l1=1", "defaults"],
)
def test_a9a_one_pass_reaches_the_batch_optimum(params, engine):
    # The batch LogisticRegression optimum on a9a.t is log loss 0.324, AUC 0.902.
    X_train, y_train, X_test, y_test = load_a9a()
    clf = FTRLClassifier(engine=engine, **params)
    clf.partial_fit(X_train, y_train, classes=[-1.0, 1.0])
    proba = clf.predict_proba(X_test)[:, 1]
    assert log_loss(y_test, proba) <= 0.3245
    assert roc_auc_score(y_test, proba) >= 0.902
    if params:  # l1 = 1 zeroes some weights exactly
        assert 0 < np.count_nonzero(clf.coef_) < X_train.shape[1]


def test_dna_multinomial_accuracy(engine):
    X_train, y_train, X_test, y_test = load_dna()
    clf = FTRLClassifier(engine=engine, max_iter=5, early_stopping=False, random_state=0)
    clf.fit(X_train, y_train)
    assert clf.n_iter_ <= 5
    assert clf.coef_.shape == (3, 180)
    assert accuracy_score(y_test, clf.predict(X_test)) >= 0.94


def test_a9a_default_fit_is_close_to_the_optimum():
    X_train, y_train, X_test, y_test = load_a9a()
    clf = FTRLClassifier(random_state=0).fit(X_train, y_train)
    assert clf.n_iter_ < clf.max_iter  # stopped on tol
    assert log_loss(y_test, clf.predict_proba(X_test)) <= 0.3245


def test_grid_search_over_a_pipeline_on_dna():
    X_train, y_train, X_test, y_test = load_dna()
    pipeline = make_pipeline(MaxAbsScaler(), FTRLClassifier(max_iter=3, random_state=0))
    search = GridSearchCV(
        pipeline,
        {"ftrlclassifier__l1": [0.0, 1.0], "ftrlclassifier__learning_rate": [0.1, 0.3]},
        cv=3,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(X_train, y_train)
    assert search.best_score_ >= 0.93
    assert search.score(X_test, y_test) >= 0.93


def test_shipped_data_loads_with_32_bit_indices_as_scikit_learn_expects():
    X_train, y_train, X_test, y_test = load_a9a()
    assert X_train.shape == (32561, 123) and X_test.shape == (16281, 123)
    assert X_train.indices.dtype == np.int32 and X_train.has_canonical_format
    assert set(np.unique(y_train)) == {-1.0, 1.0}
    SGDClassifier(loss="log_loss").partial_fit(X_train[:100], y_train[:100], classes=[-1, 1])
