"""The engines give, bit for bit, the states stored from the code before the
engine layer was redesigned (tests/stored_states.py).

The states were stored on an x86-64 CPU with AVX2 and no AVX-512, and are
computed on its numpy and OpenBLAS loops (tests/avx2_loops.py): the last bits
of some results differ on a CPU with AVX-512.
"""

import avx2_loops
import numpy as np
import pytest
from stored_states import STORE, cases

from conftest import HAS_NUMBA

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


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    """This code's state of every case, on the AVX2 loops."""
    path = tmp_path_factory.mktemp("states") / "states.npz"
    return avx2_loops.arrays("stored_states", "every_state", path)


@pytest.mark.parametrize("name, settings", CASES)
def test_state_equals_the_stored_state(name, settings, stored, computed):
    assert computed[f"dtype/{name}"].tolist() == [np.dtype(settings["dtype"]).name] * 2
    assert np.array_equal(computed[name], stored[name])


def test_every_stored_case_is_checked(stored):
    assert sorted(stored) == sorted(name for name, _ in cases())


@pytest.mark.parametrize(
    "name, settings", [case for case in CASES if case.values[1]["engine"] == "numpy"]
)
def test_state_is_the_same_when_the_numpy_passes_take_one_row_or_batch_at_a_time(
    name, settings, stored, computed
):
    # The numpy passes prepare their rows' non-zeros a block of rows at a time
    # (and the per-row pass records its undo log per block): blocks of a
    # single row or batch must change nothing (stored_states.states checks
    # that the blocks are of one row or batch).
    assert np.array_equal(computed[f"one_at_a_time/{name}"], stored[name])
