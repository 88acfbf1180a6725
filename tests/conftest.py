"""Fixtures shared by the tests."""

import importlib.util

import pytest

HAS_NUMBA = importlib.util.find_spec("numba") is not None


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
