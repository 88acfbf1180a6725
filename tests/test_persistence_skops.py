"""Safe persistence with skops.io: no pickle, and nothing runs that is not trusted.

A saved estimator's only type outside skops' defaults is its own class
("skftrl._classifier.FTRLClassifier" or "skftrl._regressor.FTRLRegressor"),
also inside a scikit-learn pipeline; once loaded it predicts the same and
resumes training bit for bit. A file edited to call ``eval`` is refused.
"""

import json
import zipfile

import numpy as np
import pytest
import sklearn
from real_frames import A9A_FEATURE_NAMES, ADULT_COLUMNS, a9a_frame, a9a_one_hot_encoder
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.utils.fixes import parse_version

from skftrl import FTRLClassifier, FTRLRegressor
from skftrl.datasets import load_a9a, load_dna

sio = pytest.importorskip("skops.io")
from skops.io.exceptions import UntrustedTypesFoundException  # noqa: E402

STATE = ["z_", "n_", "z_intercept_", "n_intercept_", "n_samples_seen_", "n_features_in_"]
# What the README's persistence section lists, the types to pass as trusted.
CLASSIFIER_TYPE = "skftrl._classifier.FTRLClassifier"
REGRESSOR_TYPE = "skftrl._regressor.FTRLRegressor"


def binary_a9a():
    X, y, X_test, _ = load_a9a()
    return FTRLClassifier, X[:3000], y[:3000], X_test[:2000]


def multiclass_dna():
    X, y, X_test, _ = load_dna()
    # UCI's names of the classes: exon-intron, intron-exon, neither.
    labels = np.array(["EI", "IE", "N"], dtype=object)
    return FTRLClassifier, X, labels[y.astype(int) - 1], X_test


def regression_a9a():
    # Years of education (its bin, 1 to 5) from the other attributes of a9a.
    X, _, X_test, _ = load_a9a()
    start = A9A_FEATURE_NAMES.index("education-num=bin1")
    bins = X[:3000, start : start + 5].toarray().argmax(axis=1) + 1.0
    education = [j for j, name in enumerate(A9A_FEATURE_NAMES) if name.startswith("education")]
    keep = np.setdiff1d(np.arange(X.shape[1]), education)
    return FTRLRegressor, X[:3000, keep], bins, X_test[:2000, keep]


TASKS = {"binary": binary_a9a, "multiclass": multiclass_dna, "regression": regression_a9a}


def predictions(model, X):
    outputs = [model.predict(X)]
    if hasattr(model, "predict_proba"):
        outputs += [model.predict_proba(X), model.decision_function(X)]
    return outputs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("task", TASKS.values(), ids=TASKS.keys())
def test_loaded_model_predicts_the_same_and_resumes_exactly(task, dtype, tmp_path):
    Estimator, X, y, X_test = task()
    first, second = slice(0, len(y) // 2), slice(len(y) // 2, len(y))
    model = Estimator(
        l1=0.5, dtype=dtype, random_state=0, max_iter=2, tol=None, early_stopping=False
    )
    model.fit(X[first], y[first])
    path = tmp_path / "model.skops"
    sio.dump(model, path)

    expected_type = CLASSIFIER_TYPE if Estimator is FTRLClassifier else REGRESSOR_TYPE
    assert sio.get_untrusted_types(file=path) == [expected_type]
    with pytest.raises(UntrustedTypesFoundException, match=expected_type):
        sio.load(path)
    by_name = sio.load(path, trusted=[expected_type])
    loaded = sio.load(path, trusted=[Estimator])

    for copy in (by_name, loaded):
        assert type(copy) is Estimator
        assert copy.get_params() == model.get_params() and copy.dtype is dtype
        for name in STATE:
            assert np.array_equal(getattr(copy, name), getattr(model, name)), name
        assert copy.z_.dtype == dtype
        # z_ and n_ are views of one buffer again, laid out as a fresh model's.
        assert copy.z_.base is copy.n_.base is not None
        assert copy.z_.strides == model.z_.strides and copy.n_.strides == model.n_.strides
        assert copy.loss_curve_ == model.loss_curve_
        for got, want in zip(predictions(copy, X_test), predictions(model, X_test)):
            assert np.array_equal(got, want)

    # Training continues as if the model had never been saved.
    loaded.partial_fit(X[second], y[second])
    model.partial_fit(X[second], y[second])
    for name in STATE:
        assert np.array_equal(getattr(loaded, name), getattr(model, name)), name
    assert loaded.loss_curve_ == model.loss_curve_ and len(model.loss_curve_) == 3
    for got, want in zip(predictions(loaded, X_test), predictions(model, X_test)):
        assert np.array_equal(got, want)


def column_transformer():
    return ColumnTransformer([("onehot", a9a_one_hot_encoder(), ADULT_COLUMNS)])


# scikit-learn 1.6's ColumnTransformer holds a type of its own that skops does
# not trust by default (scikit-learn 1.7 removed it).
RemainderColsList = (
    ["sklearn.compose._column_transformer._RemainderColsList"]
    if parse_version(sklearn.__version__) < parse_version("1.7")
    else []
)


@pytest.mark.parametrize(
    "make_encoder, sklearn_types",
    [
        (a9a_one_hot_encoder, []),
        (column_transformer, RemainderColsList),
    ],
    ids=["OneHotEncoder", "ColumnTransformer"],
)
def test_a_pipeline_of_scikit_learn_steps_needs_only_the_estimator_trusted(
    make_encoder, sklearn_types, tmp_path
):
    X, y, X_test, _ = load_a9a()
    model = FTRLClassifier(l1=1.0, class_weight={-1.0: 1.0, 1.0: 2.0}, max_iter=2, tol=None)
    pipeline = make_pipeline(make_encoder(), model).fit(a9a_frame(X[:2000]), y[:2000])
    path = tmp_path / "pipeline.skops"
    sio.dump(pipeline, path)
    assert sio.get_untrusted_types(file=path) == sorted([CLASSIFIER_TYPE, *sklearn_types])
    loaded = sio.load(path, trusted=[FTRLClassifier, *sklearn_types])
    frame_test = a9a_frame(X_test[:2000])
    assert np.array_equal(loaded.predict_proba(frame_test), pipeline.predict_proba(frame_test))


def tamper(path, payload):
    """Rewrite the saved model so that loading it evaluates ``payload``.

    The estimator's ``learning_rate`` becomes a node that skops would build by
    calling ``builtins.eval(payload)``.
    """
    with zipfile.ZipFile(path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    schema = json.loads(files["schema.json"])
    schema["content"]["content"]["learning_rate"] = {
        "__class__": "eval",
        "__module__": "builtins",
        "__loader__": "ConstructorFromReduceNode",
        "__id__": 1,
        "content": {
            "__class__": "tuple",
            "__module__": "builtins",
            "__loader__": "TupleNode",
            "__id__": 2,
            "content": [
                {
                    "__class__": "str",
                    "__module__": "builtins",
                    "__loader__": "JsonNode",
                    "__id__": 3,
                    "content": json.dumps(payload),
                    "is_json": True,
                }
            ],
        },
    }
    files["schema.json"] = json.dumps(schema).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)


def test_a_tampered_file_is_refused_and_runs_nothing(tmp_path):
    X, y, _, _ = load_dna()
    path = tmp_path / "model.skops"
    sio.dump(FTRLClassifier(max_iter=1, tol=None).fit(X[:200], y[:200]), path)
    side_effect = tmp_path / "pwned"
    tamper(path, f"__import__('pathlib').Path({str(side_effect)!r}).touch()")

    assert sorted(sio.get_untrusted_types(file=path)) == ["builtins.eval", CLASSIFIER_TYPE]
    for trusted in ([FTRLClassifier], [CLASSIFIER_TYPE], None):
        with pytest.raises(UntrustedTypesFoundException, match="builtins.eval"):
            sio.load(path, trusted=trusted)
    assert not side_effect.exists()

    # The payload is live: trusting eval runs it.
    sio.load(path, trusted=[FTRLClassifier, "builtins.eval"])
    assert side_effect.exists()


def _without_n(state):
    state.pop("n_", None)
    return state


def _state_as_lists(state):
    state["z_"] = state["z_"].tolist()
    return state


def _no_feature_count(state):
    del state["n_features_in_"]
    return state


@pytest.mark.parametrize(
    "tamper, message",
    [
        (_without_n, "saved state has no n_"),
        (_state_as_lists, "saved z_ is a list, not a numpy array"),
        (_no_feature_count, "saved n_features_in_ is None, not a non-negative integer"),
    ],
)
def test_a_damaged_file_is_refused_with_a_value_error(tamper, message, tmp_path, monkeypatch):
    """Regression: a skops file whose state lacked an array, held one as a
    list, or lacked the number of features, loaded into an AttributeError
    (at once, or at predict)."""
    X, y, _, _ = load_dna()
    model = FTRLClassifier(max_iter=1, tol=None).fit(X[:200, :20].toarray(), y[:200])
    assert "z_" in model.__getstate__()  # saved whole: most coordinates touched
    getstate = FTRLClassifier.__getstate__
    path = tmp_path / "model.skops"
    with monkeypatch.context() as patched:
        patched.setattr(FTRLClassifier, "__getstate__", lambda self: tamper(getstate(self)))
        sio.dump(model, path)
    with pytest.raises(ValueError, match=message):
        sio.load(path, trusted=[FTRLClassifier])
