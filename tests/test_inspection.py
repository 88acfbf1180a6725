"""nonzero_coefficients: the non-zero weights by feature name, on a9a and dna."""

import sys

import numpy as np
import pandas as pd
import pytest
from real_frames import A9A_FEATURE_NAMES, ADULT_COLUMNS, a9a_frame, a9a_one_hot_encoder
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import FeatureHasher
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from skftrl import FTRLClassifier, FTRLRegressor
from skftrl.datasets import load_a9a, load_dna
from skftrl.inspection import nonzero_coefficients

N_ROWS = 4000


@pytest.fixture(scope="module")
def a9a():
    X, y, _, _ = load_a9a()
    return X[:N_ROWS], y[:N_ROWS]


def a9a_pipeline():
    encoder = ColumnTransformer([("onehot", a9a_one_hot_encoder(), ADULT_COLUMNS)])
    return make_pipeline(encoder, FTRLClassifier(l1=1.0, random_state=0, max_iter=3, tol=None))


def assert_lists_the_nonzero_coefficients(table, coef, names, classes):
    """Each row is one non-zero coef_[k, j], named, largest magnitude first."""
    assert len(table) == np.count_nonzero(coef)
    names = list(names)
    for feature, label, value in zip(table["feature"], table["class"], table["coefficient"]):
        k = 0 if coef.shape[0] == 1 else list(classes).index(label)
        assert value == coef[k, names.index(feature)] != 0
    magnitudes = np.abs(table["coefficient"].to_numpy())
    assert np.all(magnitudes[:-1] >= magnitudes[1:])


def test_names_from_a_column_transformer_on_a9a(a9a):
    X, y = a9a
    pipeline = a9a_pipeline().fit(a9a_frame(X), y)
    table = nonzero_coefficients(pipeline)
    assert list(table.columns) == ["feature", "class", "coefficient"]
    assert set(table["class"]) == {1.0}  # the one output is the score of classes_[1]
    names = pipeline[:-1].get_feature_names_out()
    assert_lists_the_nonzero_coefficients(table, pipeline[-1].coef_, names, [-1.0, 1.0])
    assert 0 < len(table) < 123  # l1 = 1 zeroes some weights

    # The names mean what the census says about earning over $50K.
    weight = dict(zip(table["feature"], table["coefficient"]))
    assert weight["onehot__capital-gain_positive"] > 0
    assert weight["onehot__marital-status_Married-civ-spouse"] > 0
    assert weight["onehot__education-num_bin5"] > 0  # 13 years of school or more
    assert weight["onehot__marital-status_Never-married"] < 0
    assert weight["onehot__age_bin1"] < 0  # the youngest fifth

    # The same model fitted on the a9a matrix, named by hand, gives the same table.
    direct = FTRLClassifier(l1=1.0, random_state=0, max_iter=3, tol=None).fit(X, y)
    by_hand = nonzero_coefficients(
        direct, feature_names=["onehot__" + name.replace("=", "_") for name in A9A_FEATURE_NAMES]
    )
    pd.testing.assert_frame_equal(table, by_hand)


def test_names_from_a_dataframe(a9a):
    X, y = a9a
    frame = pd.DataFrame(X.toarray(), columns=A9A_FEATURE_NAMES)
    model = FTRLClassifier(l1=1.0).partial_fit(frame, y, classes=[-1, 1])
    table = nonzero_coefficients(model)
    assert_lists_the_nonzero_coefficients(table, model.coef_, A9A_FEATURE_NAMES, [-1, 1])
    # A pipeline of the model alone takes the model's names too.
    in_pipeline = make_pipeline(FTRLClassifier(l1=1.0, random_state=0, max_iter=2, tol=None))
    in_pipeline.fit(frame, y)
    assert set(nonzero_coefficients(in_pipeline)["feature"]) <= set(A9A_FEATURE_NAMES)


def test_multiclass_lists_one_row_per_class_and_feature():
    X, y, _, _ = load_dna()
    model = FTRLClassifier(l1=2.0, random_state=0, max_iter=3, tol=None).fit(X, y)
    table = nonzero_coefficients(model)
    assert model.coef_.shape == (3, 180)
    # Unnamed columns are named as scikit-learn names them.
    assert_lists_the_nonzero_coefficients(
        table, model.coef_, [f"x{j}" for j in range(180)], model.classes_
    )
    assert set(table["class"]) == {1.0, 2.0, 3.0}


def test_regressor_has_no_class_column(a9a):
    X, y = a9a
    model = FTRLRegressor(l1=1.0).partial_fit(X, y)
    table = nonzero_coefficients(model, feature_names=A9A_FEATURE_NAMES)
    assert list(table.columns) == ["feature", "coefficient"]
    assert len(table) == np.count_nonzero(model.coef_)
    for feature, value in zip(table["feature"], table["coefficient"]):
        assert value == model.coef_[0, A9A_FEATURE_NAMES.index(feature)]


def test_without_pandas_a_list_of_tuples_in_the_same_order(a9a, monkeypatch):
    X, y = a9a
    model = FTRLClassifier(l1=1.0).partial_fit(X, y, classes=[-1, 1])
    table = nonzero_coefficients(model)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    rows = nonzero_coefficients(model)
    assert isinstance(rows, list)
    assert rows == list(table.itertuples(index=False, name=None))


def test_ties_keep_the_order_of_the_features():
    model = FTRLRegressor(fit_intercept=False, learning_rate=1.0)
    # Features 0, 2 and 3 always move together; feature 1 twice as much.
    model.partial_fit([[1.0, 2.0, 1.0, 1.0]] * 3, [1.0, 1.0, 1.0])
    table = nonzero_coefficients(model, feature_names=["a", "b", "c", "d"])
    assert list(table["feature"]) == ["b", "a", "c", "d"]


def test_errors_name_the_problem(a9a):
    X, y = a9a
    with pytest.raises(NotFittedError):
        nonzero_coefficients(FTRLClassifier())
    with pytest.raises(NotFittedError):
        nonzero_coefficients(a9a_pipeline())
    model = FTRLClassifier().partial_fit(X, y, classes=[-1, 1])
    with pytest.raises(ValueError, match="123 features, got 2 names"):
        nonzero_coefficients(model, feature_names=["a", "b"])
    tokens = [[A9A_FEATURE_NAMES[j] for j in row.indices] for row in X]
    hashed = make_pipeline(
        FeatureHasher(n_features=256, input_type="string"), FTRLClassifier(max_iter=1, tol=None)
    ).fit(tokens, y)
    with pytest.raises(ValueError, match="Pass feature_names"):
        nonzero_coefficients(hashed)
    # Names given by hand work where the steps cannot name their outputs.
    names = [f"bucket{j}" for j in range(256)]
    assert set(nonzero_coefficients(hashed, feature_names=names)["feature"]) <= set(names)
    with pytest.raises(TypeError, match="linear model with coef_"):
        nonzero_coefficients(KNeighborsClassifier().fit(X, y))


def hashed_column(name, hash_bits):
    """A feature's output column, from scikit-learn's MurmurHash3 (the documented rule)."""
    from sklearn.utils import murmurhash3_32

    return abs(murmurhash3_32(name, seed=0, positive=False)) % 2**hash_bits


def test_raw_rows_name_the_hashed_features_of_a_pipeline():
    from skftrl.datasets import make_click_table
    from skftrl.preprocessing import ColumnHasher

    table = make_click_table(3000, random_state=0)
    X, y = table[["site_category", "banner_pos", "C18"]], table["click"]
    bits = 12
    model = make_pipeline(
        ColumnHasher(hash_bits=bits, categorical=list(X.columns)),
        FTRLClassifier(l1=0.5, random_state=0, max_iter=2, tol=None),
    ).fit(X, y)
    # Every feature of the rows, named as ColumnHasher's docs say, at its column.
    by_column = {}
    for column in X.columns:
        for value in np.unique(X[column]):
            name = f"{column}={value}"
            by_column.setdefault(hashed_column(name, bits), []).append(name)
    coef = model[-1].coef_
    expected = [f"columnhasher{j}" for j in range(2**bits)]
    for j, names in by_column.items():
        expected[j] = " | ".join(sorted(names))
    for table_ in (
        nonzero_coefficients(model, X=X),
        nonzero_coefficients(model, feature_names=model[0].hashed_names(X)),
    ):
        assert_lists_the_nonzero_coefficients(table_, coef, expected, model[-1].classes_)
        assert not any(name.startswith("columnhasher") for name in table_["feature"])
    # Rows holding only some values name only their columns; the rest keep their names.
    first_row = {hashed_column(f"{c}={X[c].iloc[0]}", bits): f"{c}={X[c].iloc[0]}" for c in X}
    partial = nonzero_coefficients(model, X=X.iloc[:1])
    names = [first_row.get(j, f"columnhasher{j}") for j in range(2**bits)]
    assert_lists_the_nonzero_coefficients(partial, coef, names, model[-1].classes_)


def test_naming_hashed_features_needs_a_hasher_before_the_model_and_columns_it_has(a9a):
    X, y = a9a
    model = FTRLClassifier(random_state=0, max_iter=1, tol=None).fit(X, y)
    with pytest.raises(ValueError, match="ColumnHasher"):
        nonzero_coefficients(model, X=X)
    with pytest.raises(ValueError, match="not both"):
        nonzero_coefficients(model, feature_names={0: ["a"]}, X=X)
    with pytest.raises(ValueError, match="names column 123, but the model has 123"):
        nonzero_coefficients(model, feature_names={123: ["a"]})
    named = nonzero_coefficients(model, feature_names={0: ["first"]})
    names = ["first"] + [f"x{i}" for i in range(1, 123)]
    assert_lists_the_nonzero_coefficients(named, model.coef_, names, model.classes_)
