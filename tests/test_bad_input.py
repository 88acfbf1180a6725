"""Bad input: a clear error naming the problem, and the model left exactly as it was."""

import sys

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from conftest import HAS_NUMBA, assert_same, snapshot
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor
from skftrl._sklearn_compat import InvalidParameterError

RNG = np.random.RandomState(0)
X = RNG.normal(size=(30, 5))
Y_CLASS = np.array(["a", "b"])[RNG.randint(2, size=30)]
Y_REG = RNG.poisson(2.0, size=30).astype(float)


def with_value(value, sparse=False):
    X_bad = X.copy()
    X_bad[2, 3] = value
    return sp.csr_matrix(X_bad) if sparse else X_bad


def fitted_classifier():
    return FTRLClassifier(l1=0.1).partial_fit(X, Y_CLASS, classes=["a", "b"])


def fitted_regressor(loss="squared_error"):
    return FTRLRegressor(loss=loss).partial_fit(X, Y_REG)


def fitted_on_dataframe():
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    return FTRLClassifier().partial_fit(frame, Y_CLASS, classes=["a", "b"])


# (id, make the model, the bad call, error type, pattern the message must match)
CASES = [
    (
        "nan-in-X",
        fitted_classifier,
        lambda m: m.partial_fit(with_value(np.nan), Y_CLASS),
        ValueError,
        "Input X contains NaN",
    ),
    (
        "inf-in-sparse-X",
        fitted_classifier,
        lambda m: m.partial_fit(with_value(np.inf, sparse=True), Y_CLASS),
        ValueError,
        "Input X contains infinity",
    ),
    (
        "nan-in-y",
        fitted_regressor,
        lambda m: m.partial_fit(X, np.where(Y_REG > 2, np.nan, 1.0)),
        ValueError,
        "Input y contains NaN",
    ),
    (
        "nan-label",
        lambda: FTRLClassifier().partial_fit(X, Y_REG > 2, classes=[0.0, 1.0]),
        lambda m: m.partial_fit(X, np.where(Y_REG > 2, np.nan, 1.0)),
        ValueError,
        "Input y contains NaN",
    ),
    (
        "inf-in-y",
        fitted_regressor,
        lambda m: m.partial_fit(X, np.where(Y_REG > 2, np.inf, 1.0)),
        ValueError,
        "Input y contains infinity",
    ),
    (
        "nan-in-sample-weight",
        fitted_classifier,
        lambda m: m.partial_fit(X, Y_CLASS, sample_weight=np.where(Y_REG > 2, np.nan, 1.0)),
        ValueError,
        "sample_weight contains NaN",
    ),
    (
        "inf-in-sample-weight",
        fitted_regressor,
        lambda m: m.partial_fit(X, Y_REG, sample_weight=np.full(30, np.inf)),
        ValueError,
        "sample_weight contains infinity",
    ),
    (
        "negative-sample-weight",
        fitted_classifier,
        lambda m: m.partial_fit(X, Y_CLASS, sample_weight=np.linspace(-1, 1, 30)),
        ValueError,
        "Negative values in data passed to `sample_weight`",
    ),
    (
        # fit has nothing to learn (partial_fit learns nothing from such a chunk).
        "all-zero-sample-weight-in-fit",
        fitted_classifier,
        lambda m: m.fit(X, Y_CLASS, sample_weight=np.zeros(30)),
        ValueError,
        "fit needs a row of non-zero weight: the sample weights of all 30 rows are 0",
    ),
    (
        "sample-weight-length",
        fitted_classifier,
        lambda m: m.partial_fit(X, Y_CLASS, sample_weight=np.ones(29)),
        ValueError,
        r"sample_weight.shape == \(29,\), expected \(30,\)",
    ),
    (
        "wrong-feature-count",
        fitted_classifier,
        lambda m: m.partial_fit(X[:, :4], Y_CLASS),
        ValueError,
        "X has 4 features, but FTRLClassifier is expecting 5 features",
    ),
    (
        "wrong-feature-count-fit-warm-start",
        lambda: fitted_classifier().set_params(warm_start=True),
        lambda m: m.fit(X[:, :4], Y_CLASS),
        ValueError,
        "X has 4 features, but FTRLClassifier is expecting 5 features",
    ),
    (
        "renamed-dataframe-columns",
        fitted_on_dataframe,
        lambda m: m.partial_fit(pd.DataFrame(X, columns=list("vwxyz")), Y_CLASS),
        ValueError,
        "feature names",
    ),
    (
        "unseen-label",
        fitted_classifier,
        lambda m: m.partial_fit(X, np.where(Y_REG > 2, "c", "a")),
        ValueError,
        r"y contains labels not in classes: \['c'\]",
    ),
    (
        "changed-classes",
        fitted_classifier,
        lambda m: m.partial_fit(X, Y_CLASS, classes=["a", "b", "c"]),
        ValueError,
        "is not the same as on last call to partial_fit",
    ),
    (
        "y-missing",
        fitted_classifier,
        lambda m: m.partial_fit(X, None),
        ValueError,
        "requires y to be passed",
    ),
    (
        "y-length",
        fitted_regressor,
        lambda m: m.partial_fit(X, Y_REG[:-1]),
        ValueError,
        "inconsistent numbers of samples",
    ),
    (
        "empty-X",
        fitted_classifier,
        lambda m: m.partial_fit(X[:0], Y_CLASS[:0]),
        ValueError,
        r"0 sample\(s\)",
    ),
    (
        "no-features",
        fitted_regressor,
        lambda m: m.fit(X[:, :0], Y_REG),
        ValueError,
        r"0 feature\(s\)",
    ),
    (
        "one-dimensional-X",
        fitted_regressor,
        lambda m: m.partial_fit(X[:, 0], Y_REG),
        ValueError,
        "Expected 2D array, got 1D array",
    ),
    (
        "non-numeric-X",
        fitted_classifier,
        lambda m: m.partial_fit(np.full((30, 5), "x", dtype=object), Y_CLASS),
        ValueError,
        "could not convert string to float",
    ),
    (
        "complex-X",
        fitted_regressor,
        lambda m: m.partial_fit(X + 1j, Y_REG),
        ValueError,
        "Complex data not supported",
    ),
    (
        "continuous-y-for-classifier",
        fitted_classifier,
        lambda m: m.fit(X, X[:, 0]),
        ValueError,
        "Unknown label type",
    ),
    (
        "one-class-in-fit",
        fitted_classifier,
        lambda m: m.fit(X, np.full(30, "a")),
        ValueError,
        "at least 2 classes",
    ),
    (
        "nan-in-X-fit-from-dataframe",
        fitted_classifier,
        lambda m: m.fit(pd.DataFrame(with_value(np.nan), columns=list("vwxyz")), Y_CLASS),
        ValueError,
        "Input X contains NaN",
    ),
    (
        "negative-poisson-target",
        lambda: fitted_regressor("poisson"),
        lambda m: m.partial_fit(X, Y_REG - 3.0),
        ValueError,
        "loss='poisson' requires non-negative y",
    ),
    (
        "string-y-for-regressor",
        fitted_regressor,
        lambda m: m.partial_fit(X, Y_CLASS),
        ValueError,
        "could not convert string to float",
    ),
    (
        "invalid-learning-rate",
        lambda: fitted_classifier().set_params(learning_rate=0.0),
        lambda m: m.partial_fit(X, Y_CLASS),
        InvalidParameterError,
        "The 'learning_rate' parameter of FTRLClassifier must be",
    ),
    (
        "invalid-l1",
        lambda: fitted_regressor().set_params(l1=-1.0),
        lambda m: m.fit(X, Y_REG),
        InvalidParameterError,
        "The 'l1' parameter of FTRLRegressor must be",
    ),
    (
        "invalid-loss",
        lambda: fitted_regressor().set_params(loss="hinge"),
        lambda m: m.partial_fit(X, Y_REG),
        InvalidParameterError,
        "The 'loss' parameter of FTRLRegressor must be",
    ),
    (
        "learning-rate-power-above-0",
        lambda: fitted_classifier().set_params(learning_rate_power=0.5),
        lambda m: m.partial_fit(X, Y_CLASS),
        InvalidParameterError,
        "The 'learning_rate_power' parameter of FTRLClassifier must be",
    ),
    (
        "negative-initial-accumulator",
        lambda: fitted_regressor().set_params(initial_accumulator_value=-0.1),
        lambda m: m.fit(X, Y_REG),
        InvalidParameterError,
        "The 'initial_accumulator_value' parameter of FTRLRegressor must be",
    ),
    (
        "validation-fraction-1",
        lambda: fitted_classifier().set_params(validation_fraction=1.0),
        lambda m: m.fit(X, Y_CLASS),
        InvalidParameterError,
        "The 'validation_fraction' parameter of FTRLClassifier must be",
    ),
    (
        "balanced-class-weight-in-partial-fit",
        lambda: fitted_classifier().set_params(class_weight="balanced"),
        lambda m: m.partial_fit(X, Y_CLASS),
        ValueError,
        "class_weight='balanced' is not supported for partial_fit",
    ),
    (
        "first-partial-fit-without-classes",
        FTRLClassifier,
        lambda m: m.partial_fit(X, Y_CLASS),
        ValueError,
        "classes must be passed on the first call to partial_fit",
    ),
    (
        "first-partial-fit-with-one-class",
        FTRLClassifier,
        lambda m: m.partial_fit(X, np.full(30, "a"), classes=["a"]),
        ValueError,
        "at least 2 classes",
    ),
    (
        "predict-before-fit",
        FTRLRegressor,
        lambda m: m.predict(X),
        NotFittedError,
        "This FTRLRegressor instance is not fitted yet",
    ),
    (
        "coef-before-fit",
        FTRLClassifier,
        lambda m: m.coef_,
        NotFittedError,
        "This FTRLClassifier instance is not fitted yet",
    ),
    (
        "predict-wrong-feature-count",
        fitted_classifier,
        lambda m: m.predict_proba(X[:, :3]),
        ValueError,
        "X has 3 features, but FTRLClassifier is expecting 5 features",
    ),
    (
        "predict-nan",
        fitted_regressor,
        lambda m: m.predict(with_value(np.nan)),
        ValueError,
        "Input X contains NaN",
    ),
    (
        "three-dimensional-X",
        fitted_classifier,
        lambda m: m.partial_fit(X[:, :, None], Y_CLASS),
        ValueError,
        "Found array with dim 3",
    ),
    (
        "two-dimensional-y",
        fitted_regressor,
        lambda m: m.partial_fit(X, np.column_stack([Y_REG, Y_REG])),
        ValueError,
        r"y should be a 1d array, got an array of shape \(30, 2\)",
    ),
    (
        "two-dimensional-sample-weight",
        fitted_classifier,
        lambda m: m.partial_fit(X, Y_CLASS, sample_weight=np.ones((30, 1))),
        ValueError,
        "Sample weights must be 1D array or scalar",
    ),
    (
        "string-sample-weight",
        fitted_regressor,
        lambda m: m.partial_fit(X, Y_REG, sample_weight=np.full(30, "heavy")),
        ValueError,
        "could not convert string to float",
    ),
    (
        "none-in-object-X",
        fitted_classifier,
        lambda m: m.partial_fit(np.where(X > 1, None, X).astype(object), Y_CLASS),
        ValueError,
        "Input X contains NaN",
    ),
    (
        "inf-in-sparse-X-predict",
        fitted_classifier,
        lambda m: m.predict_proba(with_value(-np.inf, sparse=True)),
        ValueError,
        "Input X contains infinity",
    ),
    (
        "unseen-label-in-warm-start-fit",
        lambda: fitted_classifier().set_params(warm_start=True),
        lambda m: m.fit(X, np.where(Y_REG > 2, "c", "a")),
        ValueError,
        r"y contains labels not in classes: \['c'\]",
    ),
    (
        "duplicated-single-class",
        FTRLClassifier,
        lambda m: m.partial_fit(X, np.full(30, "a"), classes=["a", "a"]),
        ValueError,
        "at least 2 classes",
    ),
    (
        "infinite-learning-rate",
        lambda: fitted_regressor().set_params(learning_rate=np.inf),
        lambda m: m.partial_fit(X, Y_REG),
        InvalidParameterError,
        "The 'learning_rate' parameter of FTRLRegressor must be",
    ),
    (
        "float16-state",
        lambda: fitted_classifier().set_params(dtype=np.float16),
        lambda m: m.fit(X, Y_CLASS),
        InvalidParameterError,
        "The 'dtype' parameter of FTRLClassifier must be",
    ),
    (
        "numba-with-mini-batches-first-call",
        lambda: FTRLClassifier(engine="numba", batch_size=8),
        lambda m: m.partial_fit(X, Y_CLASS, classes=["a", "b"]),
        ValueError,
        "engine='numba' runs the exact per-row algorithm and needs batch_size=1",
    ),
    (
        "numba-with-mini-batches-fitted",
        lambda: fitted_regressor().set_params(engine="numba", batch_size=8),
        lambda m: m.partial_fit(X, Y_REG),
        ValueError,
        "engine='numba' runs the exact per-row algorithm and needs batch_size=1",
    ),
    # class_weight is checked as sample_weight is (it once gave a NaN state).
    (
        "nan-class-weight",
        lambda: fitted_classifier().set_params(class_weight={"a": np.nan, "b": 1}),
        lambda m: m.partial_fit(X, Y_CLASS),
        ValueError,
        "Input class_weight contains NaN",
    ),
    (
        "inf-class-weight-first-call",
        lambda: FTRLClassifier(class_weight={"a": np.inf, "b": 1}),
        lambda m: m.partial_fit(X, Y_CLASS, classes=["a", "b"]),
        ValueError,
        "Input class_weight contains infinity",
    ),
    (
        "negative-class-weight-fit",
        lambda: fitted_classifier().set_params(class_weight={"a": -1}),
        lambda m: m.fit(X, Y_CLASS),
        ValueError,
        "Negative values in data passed to class_weight",
    ),
    (
        "class-weight-times-sample-weight-overflows",
        lambda: fitted_classifier().set_params(class_weight={"a": 10.0, "b": 1.0}),
        lambda m: m.partial_fit(X, Y_CLASS, sample_weight=np.full(30, 1e308)),
        ValueError,
        "sample_weight times class_weight overflows",
    ),
    # A value equal to the checked one but of another type is checked again.
    (
        "float-batch-size-after-an-int",
        lambda: (
            fitted_classifier()
            .set_params(batch_size=64)
            .partial_fit(X, Y_CLASS)
            .set_params(batch_size=64.0)
        ),
        lambda m: m.partial_fit(X, Y_CLASS),
        InvalidParameterError,
        "The 'batch_size' parameter of FTRLClassifier must be",
    ),
    (
        "integer-fit-intercept-after-true",
        lambda: fitted_regressor().partial_fit(X, Y_REG).set_params(fit_intercept=1),
        lambda m: m.partial_fit(X, Y_REG),
        InvalidParameterError,
        "The 'fit_intercept' parameter of FTRLRegressor must be",
    ),
    # A float32 state cannot hold n beyond 3.4e38: it stored inf and never learned.
    (
        "initial-accumulator-beyond-float32-first-call",
        lambda: FTRLClassifier(dtype=np.float32, initial_accumulator_value=1e39),
        lambda m: m.partial_fit(X, Y_CLASS, classes=["a", "b"]),
        ValueError,
        r"initial_accumulator_value=1e\+39 does not fit in a float32 state",
    ),
    (
        "initial-accumulator-beyond-float32-fit",
        lambda: fitted_regressor().set_params(dtype=np.float32, initial_accumulator_value=3.5e38),
        lambda m: m.fit(X, Y_REG),
        ValueError,
        r"initial_accumulator_value=3.5e\+38 does not fit in a float32 state",
    ),
    # A missing label (None, pandas.NA) once raised a TypeError from sorting.
    (
        "none-label-with-classes",
        fitted_classifier,
        lambda m: m.partial_fit(X, np.where(Y_REG > 2, None, Y_CLASS)),
        ValueError,
        "Input y contains a missing label",
    ),
    (
        "pandas-na-label-with-classes-first-call",
        FTRLClassifier,
        lambda m: m.partial_fit(
            X, pd.array(np.where(Y_REG > 2, None, Y_CLASS), dtype="string"), classes=["a", "b"]
        ),
        ValueError,
        "Input y contains a missing label",
    ),
    (
        "pandas-na-integer-label-in-object-y",
        lambda: FTRLClassifier().fit(X, Y_REG > 2),
        lambda m: m.partial_fit(
            X, pd.array(np.where(Y_REG > 3, pd.NA, Y_REG > 2), dtype=object), classes=[False, True]
        ),
        ValueError,
        "Input y contains a missing label",
    ),
    (
        "none-label-in-fit",
        fitted_classifier,
        lambda m: m.fit(X, np.where(Y_REG > 2, None, Y_CLASS)),
        ValueError,
        "Input y contains a missing label",
    ),
]


@pytest.mark.parametrize(
    "make, call, error, pattern", [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_bad_input_raises_and_changes_nothing(make, call, error, pattern):
    model = make()
    before = snapshot(model)
    with pytest.raises(error, match=pattern):
        call(model)
    assert_same(before, snapshot(model))


def test_model_still_learns_after_a_rejected_batch():
    model = fitted_classifier()
    reference = fitted_classifier()
    with pytest.raises(ValueError):
        model.partial_fit(with_value(np.nan), Y_CLASS)
    model.partial_fit(X, Y_CLASS)
    reference.partial_fit(X, Y_CLASS)
    assert np.array_equal(model.z_, reference.z_)
    assert np.array_equal(model.n_, reference.n_)


# Models whose rows of weight 0 change nothing (an FM's factor_l2 still acts
# on such a row, as documented: 0 here).
WEIGHTLESS = {
    "linear, numpy": lambda: FTRLClassifier(engine="numpy", l1=0.1),
    "linear, numba": lambda: FTRLClassifier(engine="numba", l1=0.1),
    "linear, mini-batch": lambda: FTRLClassifier(batch_size=4, l1=0.1),
    "regressor": lambda: FTRLRegressor(initial_accumulator_value=0.5),
    "FM": lambda: FMClassifier(factor_l2=0.0, random_state=0),
    "FM regressor, mini-batch": lambda: FMRegressor(factor_l2=0.0, batch_size=8, random_state=0),
}


def learn(model, X_rows, y_rows, sample_weight=None):
    if isinstance(model, FTRLClassifier):
        y_rows = Y_CLASS[: len(X_rows)] if y_rows is None else y_rows
        return model.partial_fit(X_rows, y_rows, ["a", "b"], sample_weight=sample_weight)
    y_rows = Y_REG[: len(X_rows)] if y_rows is None else y_rows
    return model.partial_fit(X_rows, y_rows, sample_weight=sample_weight)


@pytest.mark.parametrize("make", WEIGHTLESS.values(), ids=WEIGHTLESS.keys())
def test_a_call_whose_rows_all_weigh_zero_learns_nothing(make):
    # Valid input (weights are >= 0): the call learns nothing, counts its
    # rows and records a loss of 0 (its rows weigh nothing), in a stream's
    # first call, between two calls, and as its last.
    if make().engine == "numba" and not HAS_NUMBA:
        pytest.skip("numba is not installed")
    weightless = np.zeros(10)
    model = learn(make(), X[:10], None, weightless)
    initial = model.initial_accumulator_value
    assert not model.z_.any() and not model.z_intercept_.any()
    assert (model.n_ == initial).all() and (model.n_intercept_ == initial).all()
    assert model.n_samples_seen_ == 10 and model.loss_curve_ == [0.0]
    learn(model, X[10:20], None)
    learn(model, X[20:], None, weightless)
    learn(model, X[:5], None, np.zeros(5))
    alone = learn(make(), X[10:20], None)
    assert_same_state(model, alone)
    assert model.n_samples_seen_ == 35
    assert model.loss_curve_ == [0.0, alone.loss_curve_[0], 0.0, 0.0]


def assert_same_state(model, other):
    state = {name: value for name, value in vars(other).items() if name.endswith("_")}
    for name, value in state.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.array_equal(getattr(model, name), value), name


@pytest.mark.parametrize("make", [FTRLClassifier, fitted_classifier], ids=["first-call", "fitted"])
def test_numba_engine_without_numba_changes_nothing(make, monkeypatch):
    """engine="numba" when numba cannot be imported: the ImportError says how
    to install it, and the model (fresh or fitted) is left as it was."""
    import skftrl._engines
    from skftrl._engines import _compiled_engine

    model = make().set_params(engine="numba")
    monkeypatch.setitem(sys.modules, "skftrl._engines._linear_numba", None)  # its import fails
    monkeypatch.delattr(skftrl._engines, "_linear_numba", raising=False)
    # The outcome of the import is cached per process: forget it before and after.
    _compiled_engine.cache_clear()
    try:
        before = snapshot(model)
        with pytest.raises(ImportError, match=r"pip install 'skftrl\[fast\]'"):
            model.partial_fit(X, Y_CLASS, classes=["a", "b"])
        assert_same(before, snapshot(model))
    finally:
        _compiled_engine.cache_clear()


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("make", [FMClassifier, FMRegressor])
def test_fm_auto_engine_falls_back_when_numba_fails_to_load(make, monkeypatch):
    """numba importing, but skftrl's compiled modules failing to load with
    another error than an ImportError (here numba's compiler raising an
    OSError): a factorization machine with engine="auto" learns with numpy
    after one warning, as the linear estimators do; engine="numba" raises
    the ImportError that says how to install it, and changes nothing."""
    import warnings

    import numba

    import skftrl._engines
    from skftrl._engines import _compiled_engine

    def failing_njit(*args, **kwargs):
        raise OSError("no executable memory")

    # The compiled modules are loaded again, with numba's compiler failing.
    for name in ("_compile", "_linear_numba", "_fm_numba"):
        monkeypatch.delitem(sys.modules, f"skftrl._engines.{name}", raising=False)
        monkeypatch.delattr(skftrl._engines, name, raising=False)
    monkeypatch.setattr(numba, "njit", failing_njit)
    y = Y_CLASS if make is FMClassifier else np.arange(len(Y_CLASS), dtype=float)
    fit_kwargs = {"classes": ["a", "b"]} if make is FMClassifier else {}
    _compiled_engine.cache_clear()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            auto = make(random_state=0).partial_fit(X, y, **fit_kwargs)
            auto.predict(X)
        refused = make(engine="numba", random_state=0)
        before = snapshot(refused)
        with pytest.raises(ImportError, match=r"pip install 'skftrl\[fast\]'"):
            refused.partial_fit(X, y, **fit_kwargs)
        assert_same(before, snapshot(refused))
    finally:
        _compiled_engine.cache_clear()
    assert [str(w.message) for w in caught] == [
        "numba is installed, but skftrl's numba engine failed to load "
        "(OSError('no executable memory')); the numpy engine is used instead."
    ]
    expected = make(engine="numpy", random_state=0).partial_fit(X, y, **fit_kwargs)
    assert np.array_equal(auto.z_factors_, expected.z_factors_)
    assert np.array_equal(auto.z_, expected.z_)


# ------------------------------------------------- malformed sparse matrices
def _malformed(kind):
    """``X`` as a sparse matrix with one entry of an index array made wrong.

    scipy checks index arrays only when a matrix is built from them (and not
    the indices' range): assigning into them afterwards is how such matrices
    arise.
    """
    fmt, array, position, value = kind
    X_bad = sp.csr_matrix(X).asformat(fmt)
    if value == 2**40:
        X_bad.indices = X_bad.indices.astype(np.int64)
    getattr(X_bad, array)[position] = value
    return X_bad


MALFORMED = {
    # (format, index array, position in it, wrong value)
    "csr-column--1": ("csr", "indices", 7, -1),  # numpy's indexing: the last feature
    "csr-column-n_features": ("csr", "indices", 7, 5),  # just past the state
    "csr-column-1e9": ("csr", "indices", 7, 10**9),
    "csr-int64-column-2**40": ("csr", "indices", 7, 2**40),
    "csr-indptr-decreasing": ("csr", "indptr", 7, 0),
    "csr-indptr-beyond-nnz": ("csr", "indptr", -1, 151),
    "csc-row-n_samples": ("csc", "indices", 7, 30),
    "coo-column-n_features": ("coo", "col", 7, 5),
    "coo-row--1": ("coo", "row", 7, -1),
}
MALFORMED_CALLS = {
    "classifier-first-partial_fit": (
        FTRLClassifier,
        lambda m, Xb: m.partial_fit(Xb, Y_CLASS, classes=["a", "b"]),
    ),
    "classifier-partial_fit": (fitted_classifier, lambda m, Xb: m.partial_fit(Xb, Y_CLASS)),
    "classifier-fit": (fitted_classifier, lambda m, Xb: m.fit(Xb, Y_CLASS)),
    "classifier-warm-start-fit": (
        lambda: fitted_classifier().set_params(warm_start=True),
        lambda m, Xb: m.fit(Xb, Y_CLASS),
    ),
    "classifier-early-stopping-fit": (
        lambda: FTRLClassifier(early_stopping=True),
        lambda m, Xb: m.fit(Xb, Y_CLASS),
    ),
    "predict": (fitted_classifier, lambda m, Xb: m.predict(Xb)),
    "decision_function": (fitted_classifier, lambda m, Xb: m.decision_function(Xb)),
    "predict_proba": (fitted_classifier, lambda m, Xb: m.predict_proba(Xb)),
    "predict_log_proba": (fitted_classifier, lambda m, Xb: m.predict_log_proba(Xb)),
    "classifier-score": (fitted_classifier, lambda m, Xb: m.score(Xb, Y_CLASS)),
    "regressor-partial_fit": (fitted_regressor, lambda m, Xb: m.partial_fit(Xb, Y_REG)),
    "regressor-fit": (FTRLRegressor, lambda m, Xb: m.fit(Xb, Y_REG)),
    "regressor-predict": (fitted_regressor, lambda m, Xb: m.predict(Xb)),
    "regressor-score": (fitted_regressor, lambda m, Xb: m.score(Xb, Y_REG)),
}
ENGINES = {
    "numpy": {"engine": "numpy"},
    "numba": {"engine": "numba"},
    "batch_size=4": {"engine": "numpy", "batch_size": 4},
}


@pytest.mark.parametrize("engine_params", ENGINES.values(), ids=ENGINES.keys())
@pytest.mark.parametrize("make, call", MALFORMED_CALLS.values(), ids=MALFORMED_CALLS.keys())
@pytest.mark.parametrize("kind", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_sparse_indices_are_rejected_before_anything_changes(
    kind, make, call, engine_params
):
    """Regression: an index outside the matrix made the numba pass write past
    the state (or crash), numpy's negative indexing update the last feature,
    and the numpy pass raise an IndexError half-way through."""
    if engine_params["engine"] == "numba" and not HAS_NUMBA:
        pytest.skip("numba is not installed")
    model = make()
    model.set_params(**engine_params)
    X_bad = _malformed(kind)
    before = snapshot(model)
    with pytest.raises(ValueError, match=f"X is a malformed {kind[0].upper()} matrix"):
        call(model, X_bad)
    assert_same(before, snapshot(model))
