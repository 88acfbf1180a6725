"""Fixtures shared by the tests."""

import copy
import functools
import importlib.util
import os
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

HAS_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")

# The tests of pyarrow's CSV parser, Parquet, Arrow tables and zstd (the
# readers extra) are skipped where it is not installed, unless
# SKFTRL_REQUIRE_READERS=1 (CI's full stage), which makes them run and fail.
READERS_EXTRA = ("pyarrow", "zstandard")
HAS_READERS_EXTRA = all(importlib.util.find_spec(name) for name in READERS_EXTRA)
needs_readers_extra = pytest.mark.skipif(
    not HAS_READERS_EXTRA and os.environ.get("SKFTRL_REQUIRE_READERS") != "1",
    reason="pyarrow and zstandard are not installed (pip install 'skftrl[readers]')",
)

# Hypothesis (tests/test_properties.py). "ci", the default, is fixed: a set
# number of examples, derandomized so that every run draws the same ones (a
# failure reproduces), no deadline on a shared machine, no example database
# written to the work tree. "deep" explores more, at random:
#     python -m pytest tests/test_properties.py --hypothesis-profile=deep
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    # The engine fixture only names an engine: nothing to reset between examples.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "deep", parent=settings.get_profile("ci"), max_examples=2000, derandomize=False
)
settings.load_profile("ci")


@pytest.fixture(autouse=True)
def no_thread_of_skftrl_left_running():
    """Each test ends with no thread of skftrl's running (the readers' read
    ahead, the command line's scan of a LIBSVM file): one left would read on
    beside the next tests, its allocations counted in their measurements of
    memory. A thread told to stop ends after its current item, which may be
    numba's first compile of a function on a busy machine: it is waited for,
    a while, and fails the test if it does not end."""
    yield
    for thread in threading.enumerate():
        if thread.name.startswith("skftrl-"):
            thread.join(timeout=30)
    running = [
        thread.name for thread in threading.enumerate() if thread.name.startswith("skftrl-")
    ]
    assert not running, f"threads of skftrl left running: {running}"


@pytest.fixture(
    params=[
        "numpy",
        pytest.param(
            "numba",
            marks=pytest.mark.skipif(
                not HAS_NUMBA, reason="numba is not installed (pip install 'skftrl[fast]')"
            ),
        ),
    ]
)
def engine(request):
    """Each engine of the exact per-row algorithm."""
    return request.param


@pytest.fixture(params=["state copy", "step log"])
def undo_way(request, monkeypatch):
    """Each record that puts the state back when a training call fails
    (skftrl._engines.undo_record), whatever the size of the state and rows:
    a copy of the whole state, and the log of each step of the pass."""
    from skftrl import _base, _engines

    whole_state = request.param == "state copy"
    monkeypatch.setattr(
        _base, "undo_record", functools.partial(_engines.undo_record, whole_state=whole_state)
    )
    return request.param


def snapshot(model):
    """A deep copy of everything the model holds: parameters, state, attributes."""
    return copy.deepcopy(vars(model))


def assert_same(before, after):
    """Two snapshots are equal: same attributes, arrays equal with the same dtype
    (in dictionaries too, such as the record of the FMs' initial factors)."""
    assert before.keys() == after.keys()
    for name, value in before.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, after[name]), name
            assert value.dtype == after[name].dtype, name
        elif isinstance(value, dict) and any(isinstance(v, np.ndarray) for v in value.values()):
            assert isinstance(after[name], dict), name
            assert_same(value, after[name])
        else:
            assert value == after[name], name


def with_int64_indices(X):
    """CSR ``X`` with 64-bit indices and indptr.

    scipy's constructor downcasts index arrays whose values fit in 32 bits,
    so the arrays are replaced after construction.
    """
    X = X.copy()
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    return X
