"""The engines give, bit for bit, the states stored from the code before the
engine layer was redesigned (tests/stored_states.py)."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import HAS_NUMBA
from stored_states import STORE, cases, flat_state, train

from skftrl._engines import _numpy_exact

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


@pytest.mark.parametrize(
    "name, settings", [case for case in CASES if case.values[1]["engine"] == "numpy"]
)
def test_state_is_the_same_when_the_numpy_passes_take_one_row_or_batch_at_a_time(
    name, settings, stored, monkeypatch
):
    # The numpy passes prepare their rows' non-zeros a block of rows at a time
    # (and the per-row pass records its undo log per block): blocks of a
    # single row or batch must change nothing.
    monkeypatch.setattr(_numpy_exact, "BLOCK_NONZEROS", 1)
    assert _numpy_exact.rows_per_block(sp.csr_matrix(np.ones((4, 4))), 3) == 3
    assert np.array_equal(flat_state(train(settings)), stored[name])
