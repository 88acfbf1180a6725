"""The CSR assembly of hashed fields and the joining of chunks, against slow references."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import needs_numba
from skftrl._readers import _hashing
from skftrl._readers._chunks import Chunk, concatenate, rechunk


def reference_matrix(hashes, values, hash_bits):
    """Row by row in plain Python, a dict a row: the column of a hash is
    ``abs(h) mod 2**hash_bits``, a row's values added up per column in the
    order of the fields (NaN: none), its columns sorted."""
    indptr, indices, data = [0], [], []
    for i in range(hashes.shape[1]):
        row = {}
        for f in range(hashes.shape[0]):
            value = float(values[f, i])
            if not math.isnan(value):
                column = abs(int(hashes[f, i])) % 2**hash_bits
                row[column] = row[column] + value if column in row else value
        for column in sorted(row):
            indices.append(column)
            data.append(row[column])
        indptr.append(len(indices))
    return indptr, indices, data


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)])
@pytest.mark.parametrize("n_fields", [1, 2, 22, 70])  # 70: a row sorted by a radix sort
def test_fields_are_assembled_as_a_dict_per_row_adds_them(compiled, n_fields, monkeypatch):
    """fields_matrix of a table's fields (hashed_rows): signed hashes that
    collide in a column (and as hashes of opposite signs), missing values,
    rows of none, sums of three and more values whose order shows in the
    last bits."""
    if not compiled:
        monkeypatch.setattr(_hashing, "_compiled_hashing", None)
    rng = np.random.default_rng(n_fields)
    n_rows, hash_bits = 400, 10
    pool = rng.integers(-(2**31), 2**31, size=8)
    pool = np.append(pool, [-pool[0], pool[1] + 2**hash_bits])  # the same columns
    columns = {f"f{f}": _hashing.Column(numbers=np.zeros(n_rows)) for f in range(n_fields)}
    fields = _hashing.table_fields(columns, n_rows)
    fields.hashes[:] = rng.choice(pool, size=(n_fields, n_rows))
    fields.values[:] = rng.normal(size=(n_fields, n_rows)) / 3
    fields.values[rng.random((n_fields, n_rows)) < 0.3] = np.nan
    fields.values[:, :5] = np.nan
    X = _hashing.fields_matrix(fields, n_rows, hash_bits)
    indptr, indices, data = reference_matrix(fields.hashes, fields.values, hash_bits)
    assert X.shape == (n_rows, 2**hash_bits) and X.has_canonical_format
    assert np.array_equal(X.indptr, indptr) and np.array_equal(X.indices, indices)
    assert np.array_equal(X.data, data)  # bit for bit


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)])
@pytest.mark.parametrize("n_fields", [3, 22, 64, 65])
@pytest.mark.parametrize("spread", [2**4, 2**13, 2**20])
def test_rows_of_columns_close_together_are_sorted(compiled, n_fields, spread, monkeypatch):
    """Rows whose columns are many and close together (their top bits
    alike: a sort that spreads keys by their top bits meets most in one
    place), with a few far off, and repeated columns: the same matrix as a
    dict per row."""
    if not compiled:
        monkeypatch.setattr(_hashing, "_compiled_hashing", None)
    rng = np.random.default_rng(n_fields + spread)
    n_rows, hash_bits = 300, 20
    near = 2**hash_bits - spread + rng.integers(0, spread, size=90)
    pool = np.concatenate([near, -near[:5], rng.integers(0, 2**hash_bits, size=4)])
    columns = {f"f{f}": _hashing.Column(numbers=np.zeros(n_rows)) for f in range(n_fields)}
    fields = _hashing.table_fields(columns, n_rows)
    fields.hashes[:] = rng.choice(pool, size=(n_fields, n_rows))
    fields.values[:] = rng.normal(size=(n_fields, n_rows)) / 3
    fields.values[rng.random((n_fields, n_rows)) < 0.1] = np.nan
    X = _hashing.fields_matrix(fields, n_rows, hash_bits)
    indptr, indices, data = reference_matrix(fields.hashes, fields.values, hash_bits)
    assert np.array_equal(X.indptr, indptr) and np.array_equal(X.indices, indices)
    assert np.array_equal(X.data, data)  # bit for bit


def test_table_fields_are_rows_of_the_arrays_the_matrix_reads():
    """Each field's hashes and values (numbers, categories with missing
    values, a cross) are the rows of the table's arrays."""
    categories = _hashing.Factorized(np.array(["a", "b"], dtype=object), [0, -1, 1, 0])
    columns = {
        "n": _hashing.Column(numbers=np.array([0.0, 2.0, np.nan, -1.5])),
        "c": _hashing.Column(categories=categories),
    }
    fields = _hashing.table_fields(columns, 4, interactions=[("n", "c")])
    n_hash, a, b = (_hashing.hash_names([name])[0] for name in ("n", "c=a", "c=b"))
    nan = np.nan
    expected_values = [[nan, 2.0, nan, -1.5], [1.0, nan, 1.0, 1.0], [nan, nan, nan, -1.5]]
    assert np.array_equal(fields.values, expected_values, equal_nan=True)
    assert fields.hashes[0].tolist() == [n_hash] * 4
    assert fields.hashes[1, [0, 2, 3]].tolist() == [a, b, a]
    assert fields.hashes[2, 3] == _hashing.crossed_hashes(n_hash, a)
    for field, hashes, values in zip(fields, fields.hashes, fields.values):
        assert field.hashes is not hashes and np.shares_memory(field.hashes, hashes)
        assert np.shares_memory(field.values, values)


def random_chunk(rng, n_rows, width, canonical):
    X = sp.random(n_rows, width, density=0.3, format="csr", random_state=rng)
    y, lines = rng.normal(size=n_rows), np.arange(n_rows) + 1
    if canonical:
        return Chunk(_hashing.canonical_matrix(X.indptr, X.indices, X.data, X.shape), y, lines)
    # Columns out of order in each row, and not known to be canonical.
    order = [np.arange(a, b)[::-1] for a, b in zip(X.indptr, X.indptr[1:])]
    order = np.concatenate([np.zeros(0, int), *order])
    X = sp.csr_matrix((X.data[order], X.indices[order], X.indptr), shape=X.shape)
    return Chunk(X, y, lines)


@pytest.mark.parametrize("canonical", [False, True])
def test_chunks_joined_are_scipys_vstack(canonical):
    """concatenate joins the matrices' arrays: scipy's vstack of them,
    widened to the widest, canonical when every part is known to be."""
    rng = np.random.default_rng(0)
    chunks = [random_chunk(rng, n, width, canonical) for n, width in [(3, 9), (0, 9), (5, 12)]]
    joined = concatenate(chunks)
    # Rechunked across the pieces (flags looked at before scipy finds them out).
    rechunked = list(rechunk(iter(chunks), 2))
    assert [chunk.n_rows for chunk in rechunked] == [2, 2, 2, 2]
    assert all(getattr(c.X, "_has_canonical_format", False) == canonical for c in rechunked)
    assert getattr(joined.X, "_has_canonical_format", False) == canonical
    widened = [sp.csr_matrix(chunk.X, shape=(chunk.n_rows, 12)) for chunk in chunks]
    expected = sp.vstack(widened, format="csr")
    assert joined.X.shape == expected.shape
    assert np.array_equal(joined.X.indptr, expected.indptr)
    assert np.array_equal(joined.X.indices, expected.indices)
    assert np.array_equal(joined.X.data, expected.data)
    assert np.array_equal(joined.y, np.concatenate([chunk.y for chunk in chunks]))
    widened = [sp.csr_matrix(chunk.X, shape=(chunk.n_rows, 12)) for chunk in rechunked]
    assert (sp.vstack(widened) != expected).nnz == 0
