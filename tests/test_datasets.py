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
