"""Integers hashed as categories: the compiled hash of their decimal text is
scikit-learn's MurmurHash3 of the Python text, and every table type and the
CSV text give the same matrix."""

import numpy as np
import pandas as pd
import pytest
from sklearn.utils import murmurhash3_32

from conftest import needs_numba, needs_readers_extra
from skftrl.preprocessing import ColumnHasher

# Zero, one digit and the step to two, negatives, 2**53 and past it (where
# float64 is not exact), the int64 extremes.
EDGES = [0, 1, -1, 9, 10, -10, 99, 100, 1005, -1005, 2**31, -(2**31) - 1]
EDGES += [2**53, 2**53 + 1, -(2**53) - 1, 10**18, 2**63 - 1, -(2**63), -(2**63) + 1]


@needs_numba
def test_compiled_hash_of_integers_is_scikit_learns_of_their_text():
    from skftrl._readers._hashing_numba import hash_integers

    rng = np.random.default_rng(0)
    values = np.array(EDGES, dtype=np.int64)
    values = np.concatenate([values, rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64)])
    # Every length of text, so every tail of MurmurHash3's 4-byte blocks.
    values = np.concatenate([values, [10**n for n in range(19)], [-(10**n) for n in range(19)]])
    for field in ["", "C", "C1", "hou", "名前"]:
        prefix = np.frombuffer(f"{field}=".encode(), dtype=np.uint8)
        expected = [murmurhash3_32(f"{field}={value}", seed=0) for value in values.tolist()]
        assert hash_integers(prefix, values).tolist() == expected


def reference_matrix(values, hash_bits=20):
    """The matrix of a column ``C1`` of integers (None: missing) hashed by
    the names of their Python text."""
    import scipy.sparse as sp

    X = sp.lil_matrix((len(values), 2**hash_bits))
    for row, value in enumerate(values):
        if value is not None:
            X[row, abs(murmurhash3_32(f"C1={value}", seed=0)) % 2**hash_bits] = 1.0
    return X.tocsr()


VALUES = [*EDGES, None, 1005, -(2**63), None, 2**53 + 1]


def equal(X, Y):
    return X.shape == Y.shape and (X != Y).nnz == 0


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)])
def test_integer_columns_of_every_table_hash_as_their_text(compiled, monkeypatch):
    from skftrl._readers import _hashing

    if not compiled:
        monkeypatch.setattr(_hashing, "_compiled_hashing", None)
    expected = reference_matrix(VALUES)
    hasher = ColumnHasher(hash_bits=20)
    assert equal(hasher.transform(pd.DataFrame({"C1": pd.array(VALUES, dtype="Int64")})), expected)
    present = [value for value in VALUES if value is not None]
    expected_present = reference_matrix(present)
    tables = [
        pd.DataFrame({"C1": np.array(present, dtype=np.int64)}),
        {"C1": np.array(present, dtype=np.int64)},
        {"C1": present},  # a list of Python ints: an int64 array
    ]
    for table in tables:
        assert equal(hasher.transform(table), expected_present)
    unsigned = [value for value in present if value >= 0] + [2**64 - 1]
    for table in [{"C1": np.array(unsigned, dtype=np.uint64)}, pd.DataFrame({"C1": unsigned})]:
        assert equal(hasher.transform(table), reference_matrix(unsigned))


@needs_readers_extra
@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)])
def test_integer_columns_of_arrow_parquet_and_csv_hash_as_their_text(
    compiled, monkeypatch, tmp_path
):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skftrl._readers import _hashing
    from skftrl.readers import iter_csv, iter_parquet

    if not compiled:
        monkeypatch.setattr(_hashing, "_compiled_hashing", None)
    expected = reference_matrix(VALUES)
    hasher = ColumnHasher(hash_bits=20)
    labels = [i % 2 for i in range(len(VALUES))]
    assert equal(hasher.transform(pa.table({"C1": pa.array(VALUES, pa.int64())})), expected)
    # Beyond int64 (an unsigned column's): as Python writes them.
    unsigned = [value for value in VALUES if value is None or value >= 0] + [2**64 - 1]
    table = pa.table({"C1": pa.array(unsigned, pa.uint64())})
    assert equal(hasher.transform(table), reference_matrix(unsigned))
    table = pa.table({"C1": pa.array(VALUES, pa.int64()), "y": labels})
    pq.write_table(table, tmp_path / "t.parquet")
    ((X, _, _),) = iter_parquet(tmp_path / "t.parquet", label_column="y", hasher=hasher)
    assert equal(X, expected)
    text = "C1,y\n" + "".join(
        f"{'' if value is None else value},{label}\n" for value, label in zip(VALUES, labels)
    )
    (tmp_path / "t.csv").write_text(text)
    ((X, _, _),) = iter_csv(tmp_path / "t.csv", label_column="y", hasher=hasher)
    assert equal(X, expected)


@needs_numba
def test_compiled_factorization_of_integers_is_numpys():
    """Each present value's code points at it, the distinct values are
    numpy's unique ones (each once), a row not present has code -1."""
    from skftrl._readers._hashing_numba import factorize_integers

    rng = np.random.default_rng(1)
    for n_values in [0, 1, 7, 1000, 30000]:
        pool = np.array(EDGES + [-5, 3, 2**40], dtype=np.int64)
        values = np.concatenate([pool, rng.integers(-50, 50, n_values)])[:n_values]
        values = rng.permutation(np.concatenate([values, values[: n_values // 2]]))
        present = rng.random(len(values)) < 0.9
        distinct, codes = factorize_integers(values, present)
        assert np.array_equal(codes < 0, ~present)
        assert np.array_equal(distinct[codes[present]], values[present])
        assert np.array_equal(np.sort(distinct), np.unique(values[present]))
