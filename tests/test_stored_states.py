"""The engines give, bit for bit, the states stored from the code before the
engine layer was redesigned (tests/stored_states.py)."""

import numpy as np
import pytest
from conftest import HAS_NUMBA
from stored_states import STORE, cases, flat_state, train

CASES = [
    pytest.param(
        name,
        settings,
        marks=pytest.mark.skipif(
            settings["engine"] == "numba" and not HAS_NUMBA, reason="numba is not installed"
        ),
        id=name,
    )
    for name, settings in cases()
]


@pytest.fixture(scope="module")
def stored():
    with np.load(STORE) as arrays:
        return dict(arrays)


@pytest.mark.parametrize("name, settings", CASES)
def test_state_equals_the_stored_state(name, settings, stored):
    model = train(settings)
    assert model.z_.dtype == model.n_.dtype == np.dtype(settings["dtype"])
    assert np.array_equal(flat_state(model), stored[name])


def test_every_stored_case_is_checked(stored):
    assert sorted(stored) == sorted(name for name, _ in cases())
