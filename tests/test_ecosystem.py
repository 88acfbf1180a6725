"""The estimators among scikit-learn's tools, on the real data shipped with skftrl.

Encoders in pipelines and column transformers (on DataFrames decoded from
a9a and dna, see ``real_frames.py``), model selection in parallel, calibration,
cloning, and metadata routing of ``sample_weight`` to ``fit`` and
``partial_fit``. Each test compares with an independent computation: the
estimator on the equivalent matrix, a sequential run, a hand-written loop.
"""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from real_frames import (
    A9A_FEATURE_NAMES,
    ADULT_BINNED,
    ADULT_COLUMNS,
    a9a_frame,
    a9a_mixed_frame,
    a9a_one_hot_encoder,
    dna_position_tokens,
    dna_sequences,
)
from scipy.stats import loguniform, uniform
from sklearn import config_context
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.feature_extraction import FeatureHasher
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.feature_selection import SelectFromModel
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import (
    GridSearchCV,
    HalvingRandomSearchCV,
    RandomizedSearchCV,
    StratifiedKFold,
    cross_val_score,
)
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier, MultiOutputRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted

from skftrl import FTRLClassifier, FTRLRegressor
from skftrl.datasets import load_a9a, load_dna

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]
N_ROWS = 4000  # of a9a's training and test rows: each fit takes a fraction of a second


@pytest.fixture(scope="module")
def a9a():
    X, y, X_test, y_test = load_a9a()
    return X[:N_ROWS], y[:N_ROWS], X_test[:N_ROWS], y_test[:N_ROWS]


@pytest.fixture(scope="module")
def dna():
    return load_dna()


def ftrl(**params):
    """A deterministic classifier making three passes in fit."""
    params = {"random_state": 0, "max_iter": 3, "tol": None, "early_stopping": False, **params}
    return FTRLClassifier(**params)


def assert_same_state(a, b):
    for name in STATE:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def assert_different_state(a, b):
    assert not np.array_equal(a.z_, b.z_)


# ------------------------------------------------------------- encoders
def test_a9a_decodes_to_uci_adult(a9a):
    X, y, _, _ = a9a
    frame = a9a_frame(X)
    # The first row of UCI's adult.data: 39, State-gov, 77516, Bachelors, 13,
    # Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40,
    # United-States, <=50K.
    first = frame.iloc[0]
    assert [
        first[c]
        for c in [
            "workclass",
            "education",
            "marital-status",
            "occupation",
            "relationship",
            "race",
            "sex",
            "native-country",
        ]
    ] == [
        "State-gov",
        "Bachelors",
        "Never-married",
        "Adm-clerical",
        "Not-in-family",
        "White",
        "Male",
        "United-States",
    ]
    assert (first["capital-gain"], first["capital-loss"]) == ("positive", "zero")
    assert y[0] == -1
    # The categories in a9a's column order re-encode the very same matrix.
    assert (a9a_one_hot_encoder().fit_transform(frame) != X).nnz == 0


def test_one_hot_encoder_in_a_column_transformer_learns_the_same_model(a9a):
    X, y, X_test, y_test = a9a
    encoder = ColumnTransformer([("onehot", a9a_one_hot_encoder(), ADULT_COLUMNS)])
    pipeline = make_pipeline(encoder, ftrl(l1=1.0)).fit(a9a_frame(X), y)
    direct = ftrl(l1=1.0).fit(X, y)
    assert_same_state(pipeline[-1], direct)
    assert np.array_equal(pipeline.predict_proba(a9a_frame(X_test)), direct.predict_proba(X_test))


def test_column_transformer_with_categorical_and_numeric_columns_learns(a9a):
    X, y, X_test, y_test = a9a
    nominal = [c for c in ADULT_COLUMNS if c not in ADULT_BINNED]
    encoder = ColumnTransformer(
        [
            ("onehot", OneHotEncoder(handle_unknown="ignore"), nominal),
            ("scale", StandardScaler(), ADULT_BINNED),  # bin numbers as numbers
        ]
    )
    pipeline = make_pipeline(encoder, ftrl()).fit(a9a_mixed_frame(X), y)
    loss = log_loss(y_test, pipeline.predict_proba(a9a_mixed_frame(X_test)))
    # The same rows one-hot encoded (a9a itself), and a constant prediction.
    one_hot_loss = log_loss(y_test, ftrl().fit(X, y).predict_proba(X_test))
    prior_loss = log_loss(y_test, np.full(len(y_test), np.mean(y == 1)))
    assert abs(loss - one_hot_loss) < 0.01
    assert loss < prior_loss - 0.15


def test_feature_hasher_learns_the_same_weights_as_the_one_hot_matrix(a9a):
    X, y, X_test, _ = a9a
    hasher = FeatureHasher(n_features=2**18, input_type="dict", alternate_sign=False)

    def records(X):
        # One {"attribute": "category"} dict per row; missing values left out.
        return [
            {name: value for name, value in row.items() if value != "?"}
            for row in a9a_frame(X).to_dict("records")
        ]

    pipeline = make_pipeline(hasher, ftrl(l1=1.0)).fit(records(X), y)
    direct = ftrl(l1=1.0).fit(X, y)
    # The hashed column of each a9a feature ("workclass=Private", ...).
    columns = [
        hasher.transform([dict([name.split("=", 1)])]).indices[0] for name in A9A_FEATURE_NAMES
    ]
    assert len(set(columns)) == 123, "hash collision: the matrices are not equivalent"
    model = pipeline[-1]
    # Equal up to the order of summation in the margins, which hashing permutes.
    assert_allclose(model.coef_[:, columns], direct.coef_, rtol=1e-9, atol=1e-12)
    assert_allclose(model.z_[:, columns], direct.z_, rtol=1e-9, atol=1e-9)
    assert np.count_nonzero(model.n_) == np.count_nonzero(direct.n_)
    assert_allclose(
        pipeline.predict_proba(records(X_test)), direct.predict_proba(X_test), rtol=1e-9
    )


def test_hashing_vectorizer_on_dna_sequences_learns_like_one_hot_positions(dna):
    X, y, X_test, y_test = dna
    sequences, sequences_test = dna_sequences(X), dna_sequences(X_test)
    assert sequences[0] == "CTAGGCTCCAGATAGCCATAGAAGAACCAAACACTTTCTGCGTGTGTGAGAATAATCAGA"
    vectorizer = HashingVectorizer(
        analyzer=dna_position_tokens, n_features=2**16, alternate_sign=False, norm=None
    )
    hashed = make_pipeline(vectorizer, ftrl()).fit(sequences, y)

    # The same tokens, one-hot encoded from a table of positions.
    def table(sequences):
        return pd.DataFrame([list(s) for s in sequences]).rename(columns=lambda p: f"p{p}")

    one_hot = make_pipeline(OneHotEncoder(handle_unknown="ignore"), ftrl()).fit(
        table(sequences), y
    )
    names = [name.replace("_", "=") for name in one_hot[0].get_feature_names_out()]
    assert len(names) == 240  # 60 positions, 4 bases
    # HashingVectorizer hashes the analyzer's tokens as FeatureHasher does strings.
    hasher = FeatureHasher(n_features=2**16, input_type="string", alternate_sign=False)
    columns = [hasher.transform([[name]]).indices[0] for name in names]
    assert len(set(columns)) == len(names), "hash collision"
    assert_allclose(hashed[-1].coef_[:, columns], one_hot[-1].coef_, rtol=1e-9, atol=1e-12)
    # And it classifies as well as the LIBSVM encoding (dna's batch optimum is 0.949).
    accuracy = accuracy_score(y_test, hashed.predict(sequences_test))
    libsvm_accuracy = accuracy_score(y_test, ftrl().fit(X, y).predict(X_test))
    assert accuracy >= 0.93 and abs(accuracy - libsvm_accuracy) < 0.02


def test_a_stateless_pipeline_streams_through_its_last_step(a9a):
    # Pipeline has no partial_fit: with a stateless step, transform each batch
    # with it and learn it with pipeline[-1].partial_fit.
    X, y, X_test, _ = a9a
    tokens = [[A9A_FEATURE_NAMES[j] for j in row.indices] for row in X]
    tokens_test = [[A9A_FEATURE_NAMES[j] for j in row.indices] for row in X_test]
    pipeline = make_pipeline(
        FeatureHasher(n_features=2**18, input_type="string", alternate_sign=False),
        FTRLClassifier(l1=1.0),
    )
    direct = FTRLClassifier(l1=1.0)
    for start in range(0, N_ROWS, 1000):
        batch = slice(start, start + 1000)
        hashed = pipeline[0].transform(tokens[batch])
        pipeline[-1].partial_fit(hashed, y[batch], classes=[-1, 1])
        direct.partial_fit(X[batch], y[batch], classes=[-1, 1])
    assert_allclose(pipeline.predict_proba(tokens_test), direct.predict_proba(X_test), rtol=1e-9)


# ---------------------------------------------------------- model selection
SEARCHES = {
    "grid": lambda n_jobs: GridSearchCV(
        ftrl(),
        {"l1": [0.0, 2.0], "learning_rate": [0.05, 0.3]},
        cv=3,
        scoring="neg_log_loss",
        n_jobs=n_jobs,
    ),
    "randomized": lambda n_jobs: RandomizedSearchCV(
        ftrl(),
        {"l1": uniform(0, 3), "learning_rate": loguniform(0.02, 0.5)},
        n_iter=4,
        cv=3,
        scoring="neg_log_loss",
        random_state=0,
        n_jobs=n_jobs,
    ),
    "halving": lambda n_jobs: HalvingRandomSearchCV(
        ftrl(),
        {"l1": uniform(0, 3), "learning_rate": loguniform(0.02, 0.5)},
        n_candidates=6,
        factor=2,
        min_resources=150,
        cv=3,
        scoring="neg_log_loss",
        random_state=0,
        n_jobs=n_jobs,
    ),
}


@pytest.mark.parametrize("make_search", SEARCHES.values(), ids=SEARCHES.keys())
def test_search_in_two_processes_matches_the_sequential_search(make_search, a9a):
    X, y, _, _ = a9a
    X, y = X[:900], y[:900]
    sequential = make_search(n_jobs=1).fit(X, y)
    parallel = make_search(n_jobs=2).fit(X, y)
    results, parallel_results = sequential.cv_results_, parallel.cv_results_
    assert results.keys() == parallel_results.keys()
    for key in results:
        if "time" not in key:
            assert np.array_equal(results[key], parallel_results[key]), key
    assert parallel.best_params_ == sequential.best_params_
    assert_same_state(parallel.best_estimator_, sequential.best_estimator_)
    # The refit model is the estimator with the best parameters on all rows
    # (the halving search refits on the rows of its last round: all of them).
    best = ftrl(**parallel.best_params_).fit(X, y)
    assert_same_state(parallel.best_estimator_, best)


def test_cross_val_score_matches_a_hand_written_loop(dna):
    X, y, _, _ = dna
    X, y = X[:900], y[:900]
    scores = cross_val_score(ftrl(), X, y, cv=3, scoring="neg_log_loss", n_jobs=2)
    expected = [
        -log_loss(y[test], ftrl().fit(X[train], y[train]).predict_proba(X[test]))
        for train, test in StratifiedKFold(3).split(X, y)
    ]
    assert_allclose(scores, expected, rtol=1e-14)


def test_isotonic_calibration_of_a_frozen_model_is_isotonic_regression(a9a):
    X, y, X_test, y_test = a9a
    model = ftrl().fit(X[:2000], y[:2000])
    calibrated = CalibratedClassifierCV(FrozenEstimator(model), method="isotonic")
    calibrated.fit(X[2000:], y[2000:])
    isotonic = IsotonicRegression(out_of_bounds="clip")
    isotonic.fit(model.decision_function(X[2000:]), y[2000:] == 1)
    expected = isotonic.predict(model.decision_function(X_test))
    proba = calibrated.predict_proba(X_test)
    assert_allclose(proba[:, 1], expected, rtol=1e-12, atol=1e-15)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert log_loss(y_test, np.clip(proba, 1e-15, 1)) < log_loss(
        y_test, np.full(len(y_test), 0.24)
    )


def test_calibration_with_cross_validation_trains_each_fold_as_a_direct_fit(dna):
    X, y, X_test, y_test = dna
    X, y = X[:900], y[:900]
    model = ftrl(max_iter=2)
    calibrated = CalibratedClassifierCV(model, method="sigmoid", cv=3).fit(X, y)
    folds = StratifiedKFold(3).split(X, y)
    for fold, (train, _) in zip(calibrated.calibrated_classifiers_, folds):
        assert_same_state(fold.estimator, clone(model).fit(X[train], y[train]))
    proba = calibrated.predict_proba(X_test)
    assert_allclose(proba.sum(axis=1), 1.0)
    # The most frequent class alone is right on 51% of dna's test rows.
    assert accuracy_score(y_test, calibrated.classes_[proba.argmax(axis=1)]) >= 0.9


@pytest.mark.parametrize("Estimator", [FTRLClassifier, FTRLRegressor])
def test_clone_is_unfitted_with_the_same_parameters(Estimator, a9a):
    X, y, _, _ = a9a
    model = Estimator(l1=0.5, dtype=np.float32, random_state=0, max_iter=2, tol=None)
    model.fit(X[:1000], y[:1000])
    copy = clone(model)
    with pytest.raises(NotFittedError):
        check_is_fitted(copy)
    assert not hasattr(copy, "z_") and not hasattr(copy, "loss_curve_")
    assert copy.get_params() == model.get_params()
    assert copy.dtype is np.float32
    # The clone learns exactly what the original learned.
    assert_same_state(copy.fit(X[:1000], y[:1000]), model)

    changed = clone(model.set_params(l1=2.0, learning_rate=0.3))
    assert (changed.l1, changed.learning_rate) == (2.0, 0.3)
    assert changed.get_params() == model.get_params()


# ---------------------------------------------------------- metadata routing
def weights(n):
    return np.random.RandomState(0).uniform(0.1, 3.0, size=n)


def test_routing_sample_weight_to_fit_through_a_pipeline(a9a):
    X, y, _, _ = a9a
    w = weights(len(y))
    with config_context(enable_metadata_routing=True):
        pipeline = make_pipeline(
            StandardScaler(with_mean=False).set_fit_request(sample_weight=True),
            ftrl().set_fit_request(sample_weight=True),
        )
        pipeline.fit(X, y, sample_weight=w)
    scaled = StandardScaler(with_mean=False).fit(X, sample_weight=w).transform(X)
    assert_same_state(pipeline[-1], ftrl().fit(scaled, y, sample_weight=w))
    assert_different_state(pipeline[-1], ftrl().fit(scaled, y))


def test_routing_sample_weight_to_fit_and_score_through_a_grid_search(a9a):
    X, y, _, _ = a9a
    X, y = X[:2000], y[:2000]
    w = weights(len(y))
    grid = {"l1": [0.0, 2.0]}
    with config_context(enable_metadata_routing=True):
        model = ftrl().set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
        search = GridSearchCV(model, grid, cv=3, n_jobs=2).fit(X, y, sample_weight=w)
    for i, params in enumerate(search.cv_results_["params"]):
        for split, (train, test) in enumerate(StratifiedKFold(3).split(X, y)):
            fitted = ftrl(**params).fit(X[train], y[train], sample_weight=w[train])
            expected = fitted.score(X[test], y[test], sample_weight=w[test])
            assert search.cv_results_[f"split{split}_test_score"][i] == expected
    best = ftrl(**search.best_params_)
    assert_same_state(search.best_estimator_, best.fit(X, y, sample_weight=w))
    assert_different_state(search.best_estimator_, clone(best).fit(X, y))


# The weights to start from, which fit and partial_fit take (as SGDClassifier's fit).
START = {"coef_init": None, "intercept_init": None}


@pytest.mark.parametrize(
    "Estimator, partial_fit_metadata",
    [
        (FTRLClassifier, {"classes": None, "sample_weight": True, **START}),
        (FTRLRegressor, {"sample_weight": True, **START}),
    ],
)
def test_estimators_can_request_metadata_for_partial_fit(Estimator, partial_fit_metadata):
    # BaseEstimator derives set_partial_fit_request from partial_fit's signature.
    with config_context(enable_metadata_routing=True):
        model = Estimator().set_partial_fit_request(sample_weight=True)
        routing = model.get_metadata_routing()
    assert routing.partial_fit.requests == partial_fit_metadata
    assert routing.fit.requests == {"sample_weight": None, **START}


def test_routing_sample_weight_to_partial_fit_one_vs_rest(dna):
    X, y, _, _ = dna
    w = weights(len(y))
    classes = np.unique(y)
    with config_context(enable_metadata_routing=True):
        ovr = OneVsRestClassifier(FTRLClassifier().set_partial_fit_request(sample_weight=True))
        for batch in np.array_split(np.arange(len(y)), 4):
            ovr.partial_fit(X[batch], y[batch], classes=classes, sample_weight=w[batch])
    for label, binary in zip(classes, ovr.estimators_):
        direct, unweighted = FTRLClassifier(), FTRLClassifier()
        for batch in np.array_split(np.arange(len(y)), 4):
            target = (y[batch] == label).astype(int)
            direct.partial_fit(X[batch], target, classes=[0, 1], sample_weight=w[batch])
            unweighted.partial_fit(X[batch], target, classes=[0, 1])
        assert_same_state(binary, direct)
        assert_different_state(binary, unweighted)


@pytest.mark.parametrize(
    "Meta, Estimator",
    [
        (MultiOutputClassifier, FTRLClassifier),
        (MultiOutputRegressor, FTRLRegressor),
    ],
)
def test_routing_sample_weight_to_partial_fit_multi_output(Meta, Estimator, a9a):
    # Two targets from a9a: income (the label) and sex (its columns removed from X).
    X, y, _, _ = a9a
    sex_columns = [A9A_FEATURE_NAMES.index("sex=Female"), A9A_FEATURE_NAMES.index("sex=Male")]
    targets = np.column_stack([y == 1, X[:, sex_columns[1]].toarray().ravel()]).astype(int)
    X = X[:, [j for j in range(X.shape[1]) if j not in sex_columns]]
    w = weights(len(y))
    extra = {"classes": [[0, 1], [0, 1]]} if Meta is MultiOutputClassifier else {}
    with config_context(enable_metadata_routing=True):
        multi = Meta(Estimator().set_partial_fit_request(sample_weight=True))
        multi.partial_fit(X, targets, sample_weight=w, **extra)
    for k, model in enumerate(multi.estimators_):
        extra = {"classes": [0, 1]} if Meta is MultiOutputClassifier else {}
        direct = Estimator().partial_fit(X, targets[:, k], sample_weight=w, **extra)
        assert_same_state(model, direct)
        assert_different_state(model, Estimator().partial_fit(X, targets[:, k], **extra))


def test_routing_sample_weight_to_partial_fit_of_select_from_model(a9a):
    # FTRL with L1 as a streaming feature selector.
    X, y, _, _ = a9a
    w = weights(len(y))
    with config_context(enable_metadata_routing=True):
        model = FTRLClassifier(l1=5.0).set_partial_fit_request(classes=True, sample_weight=True)
        selector = SelectFromModel(model, threshold=1e-12)
        selector.partial_fit(X, y, classes=[-1, 1], sample_weight=w)
    direct = FTRLClassifier(l1=5.0).partial_fit(X, y, classes=[-1, 1], sample_weight=w)
    assert_same_state(selector.estimator_, direct)
    assert np.array_equal(selector.get_support(), direct.coef_[0] != 0)
    assert 0 < selector.get_support().sum() < X.shape[1]
    unweighted = FTRLClassifier(l1=5.0).partial_fit(X, y, classes=[-1, 1])
    assert_different_state(selector.estimator_, unweighted)
