"""The dataset loaders against an independent reading of the shipped files."""

import csv
import gzip
from importlib.resources import as_file, files

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skftrl.datasets import load_bike_sharing

CATEGORICAL = [
    "season",
    "yr",
    "mnth",
    "hr",
    "holiday",
    "weekday",
    "workingday",
    "weathersit",
]
NUMERIC = ["temp", "atemp", "hum", "windspeed"]


@pytest.fixture(scope="module")
def bike_rows():
    """The shipped CSV read with the csv module: one dict of strings per hour."""
    with as_file(files("skftrl") / "_data" / "bike_sharing_hour.csv.gz") as path:
        with gzip.open(path, "rt", newline="") as stream:
            return list(csv.DictReader(stream))


def test_bike_sharing_arrays_match_the_file(bike_rows):
    bunch = load_bike_sharing()
    # Shape and names as the dataset's Readme.txt documents them.
    assert bunch.data.shape == (17379, 12)
    assert bunch.feature_names == CATEGORICAL + NUMERIC
    assert bunch.categorical_features == CATEGORICAL
    assert bunch.target_names == ["cnt"]
    assert bunch.frame is None
    assert len(bike_rows) == 17379
    for j, name in enumerate(bunch.feature_names):
        assert_array_equal(bunch.data[:, j], [float(row[name]) for row in bike_rows])
    counts = np.array([int(row["cnt"]) for row in bike_rows])
    assert_array_equal(bunch.target, counts)
    # The Readme: cnt is the sum of the casual and registered users, which is
    # why those two columns must not be features.
    casual_plus_registered = [int(row["casual"]) + int(row["registered"]) for row in bike_rows]
    assert_array_equal(bunch.target, casual_plus_registered)
    assert bunch.target.dtype == np.float64 and bunch.data.dtype == np.float64


def test_bike_sharing_value_ranges():
    X, y = load_bike_sharing(return_X_y=True)
    column = dict(zip(CATEGORICAL + NUMERIC, X.T))
    expected_codes = {
        "season": range(1, 5),
        "yr": range(0, 2),
        "mnth": range(1, 13),
        "hr": range(0, 24),
        "holiday": range(0, 2),
        "weekday": range(0, 7),
        "workingday": range(0, 2),
        "weathersit": range(1, 5),
    }
    for name, codes in expected_codes.items():
        assert_array_equal(np.unique(column[name]), list(codes))
    for name in NUMERIC:
        assert 0.0 <= column[name].min() and column[name].max() <= 1.0
    assert (y.min(), y.max()) == (1.0, 977.0)


def test_bike_sharing_as_frame_matches_arrays():
    pytest.importorskip("pandas")
    X, y = load_bike_sharing(return_X_y=True)
    bunch = load_bike_sharing(as_frame=True)
    assert list(bunch.frame.columns) == CATEGORICAL + NUMERIC + ["cnt"]
    assert list(bunch.data.columns) == CATEGORICAL + NUMERIC
    assert all(bunch.data[name].dtype.kind == "i" for name in CATEGORICAL)
    assert_array_equal(bunch.data.to_numpy(dtype=float), X)
    assert_array_equal(bunch.target.to_numpy(), y)
    frame_X, frame_y = load_bike_sharing(return_X_y=True, as_frame=True)
    assert_array_equal(frame_X.to_numpy(dtype=float), X)
    assert frame_y.name == "cnt"


# The synthetic click table. Its columns, in order, as the docstring lists them.
CLICK_INTEGER = ["C1", "banner_pos", "device_type", "device_conn_type"] + [
    f"C{i}" for i in range(14, 22)
]
CLICK_IDS = [
    "site_id",
    "site_domain",
    "site_category",
    "app_id",
    "app_domain",
    "app_category",
    "device_id",
    "device_ip",
    "device_model",
]
# The most values each column may take.
CLICK_VALUES = {
    "C1": 7, "banner_pos": 7, "device_type": 5, "device_conn_type": 4, "C14": 2600, "C15": 8,
    "C16": 9, "C17": 430, "C18": 4, "C19": 70, "C20": 170, "C21": 60, "site_id": 4000,
    "site_domain": 6000, "site_category": 26, "app_id": 8000, "app_domain": 500,
    "app_category": 36, "device_model": 8000, "device_id": 3_000_000,
    "device_ip": 10_000_000,
}  # fmt: skip


def test_click_table_has_avazus_columns_values_and_click_rate():
    from skftrl.datasets import make_click_table

    n = 200_000
    table = make_click_table(n, random_state=0, as_frame=False)
    assert list(table) == ["click", "hour"] + [
        "C1", "banner_pos", "site_id", "site_domain", "site_category", "app_id", "app_domain",
        "app_category", "device_id", "device_ip", "device_model", "device_type",
        "device_conn_type", "C14", "C15", "C16", "C17", "C18", "C19", "C20", "C21",
    ]  # fmt: skip
    assert all(len(column) == n for column in table.values())
    assert set(np.unique(table["click"])) == {0, 1}
    assert 0.15 < table["click"].mean() < 0.19
    hours = table["hour"]
    assert hours.dtype == np.int64 and np.all(np.diff(hours) >= 0)
    # YYMMDDHH over ten days from 2014-10-21, every hour present.
    expected = [14102100 + day * 100 + hour for day in range(10) for hour in range(24)]
    assert_array_equal(np.unique(hours), expected)
    for name in CLICK_INTEGER:
        assert table[name].dtype == np.int64 and table[name].min() >= 0
    for name in CLICK_IDS:
        assert all(len(v) == 8 and int(v, 16) >= 0 for v in table[name][:1000])
    for name, most in CLICK_VALUES.items():
        distinct = len(np.unique(table[name]))
        assert 2 <= distinct <= most, name
    # Zipf-like: the most frequent value is far above the median one's count.
    _, counts = np.unique(table["site_id"], return_counts=True)
    assert counts.max() > 20 * np.median(counts)
    # Many users, most of them seen once or twice.
    assert len(np.unique(table["device_ip"])) > 0.3 * n


def test_click_table_is_the_same_for_a_seed():
    pd = pytest.importorskip("pandas")
    from skftrl.datasets import make_click_table

    small = make_click_table(1_000, random_state=3)
    pd.testing.assert_frame_equal(small, make_click_table(1_000, random_state=3))
    assert not small.equals(make_click_table(1_000, random_state=4))


def test_click_table_holds_its_planted_cross():
    # Within each value of banner_pos and of app_category, the click rate of
    # their pairs spreads far more than the main effects alone explain: a
    # logistic model of the two columns' one-hot values fits worse than one
    # of their pairs. Independent of skftrl: scikit-learn's LogisticRegression.
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.preprocessing import OneHotEncoder

    from skftrl.datasets import make_click_table

    table = make_click_table(100_000, random_state=0, as_frame=False)
    y = table["click"]
    pair = np.column_stack([table["banner_pos"], table["app_category"]])
    joined = np.asarray([f"{a}_{b}" for a, b in pair])[:, None]
    losses = []
    for X in (pair, joined):
        encoded = OneHotEncoder(handle_unknown="ignore").fit_transform(X)
        model = LogisticRegression(C=1.0, max_iter=1000).fit(encoded[:80_000], y[:80_000])
        losses.append(log_loss(y[80_000:], model.predict_proba(encoded[80_000:])[:, 1]))
    assert losses[1] < losses[0] - 0.01


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".vw", ".parquet"])
def test_written_click_table_holds_the_rows_of_make_click_table(tmp_path, suffix):
    from skftrl.datasets import make_click_table, write_click_table

    n = 70_000  # more than one block of rows
    table = make_click_table(n, random_state=1, as_frame=False)
    path = tmp_path / f"clicks{suffix}"
    if suffix == ".parquet":
        pq = pytest.importorskip("pyarrow.parquet")
    write_click_table(path, n, random_state=1)
    names = list(table)
    if suffix == ".parquet":
        read = pq.read_table(path)
        assert read.schema.field("C14").type == "int64"
        for name in names:
            assert_array_equal(read.column(name).to_numpy(), table[name])
        return
    opener = gzip.open if suffix.endswith(".gz") else open
    with opener(path, "rt", newline="") as file:
        lines = file.read().split("\n")
    assert lines[-1] == ""
    if suffix == ".vw":
        assert len(lines) == n + 1
        for i in (0, 1, 65_535, 65_536, n - 1):
            label = "1" if table["click"][i] == 1 else "-1"
            features = "".join(f" |{name} {table[name][i]}" for name in names[1:])
            assert lines[i] == label + features
        return
    rows = list(csv.reader(lines[:-1]))
    assert rows[0] == names and len(rows) == n + 1
    for i in (0, 1, 65_535, 65_536, n - 1):
        assert rows[i + 1] == [str(table[name][i]) for name in names]
