"""ColumnHasher (skftrl.preprocessing): raw columns and their crosses, hashed.

Each result is compared with a reference computed another way: scikit-learn's
FeatureHasher on the features written out as dicts (features without
crosses), and a slow loop over rows in plain Python that hashes each name
with scikit-learn's MurmurHash3 and combines the hashes of a cross as the
user guide states (crosses).
"""

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.feature_extraction import FeatureHasher
from sklearn.pipeline import make_pipeline
from sklearn.utils import murmurhash3_32

from conftest import needs_numba, needs_readers_extra
from skftrl import FTRLClassifier
from skftrl.preprocessing import ColumnHasher

HASH_BITS = 12

ROWS = [
    {"site": "news", "app": "a1", "hour": 13, "price": 2.5, "device": "phone"},
    {"site": "shop", "app": "a1", "hour": 0, "price": None, "device": "tablet"},
    {"site": None, "app": "a2", "hour": 7, "price": 1.0, "device": "phone"},
    {"site": "news", "app": "a3", "hour": 13, "price": -4.0, "device": None},
    {"site": "blog", "app": "a2", "hour": 23, "price": float("nan"), "device": "phone"},
    {"site": "news", "app": "a1", "hour": 13, "price": 0.0, "device": "desktop"},
]


def row_features(row, categorical=()):
    """A row's features written out (the reference): ``column=value`` 1 for a
    category, ``column`` with the number for a number; missing ones and zeros
    left out."""
    features = {}
    for column, value in row.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, str) or column in categorical:
            text = str(int(value)) if isinstance(value, float) and value.is_integer() else value
            features[f"{column}={text}"] = 1.0
        elif value != 0:
            features[column] = float(value)
    return features


def reference_hash(name):
    return murmurhash3_32(name, seed=0, positive=False)


def reference_cross_hash(hashes):
    """The user guide's combination: ((h1 * 16777619) ^ h2) mod 2**32, then
    with h3..., read as a signed 32-bit number."""
    combined = hashes[0] % 2**32
    for h in hashes[1:]:
        combined = ((combined * 16777619) ^ (h % 2**32)) % 2**32
    return combined - 2**32 if combined >= 2**31 else combined


def slow_reference(rows, interactions=(), categorical=(), hash_bits=HASH_BITS):
    """The dense matrix, row by row in plain Python."""
    X = np.zeros((len(rows), 2**hash_bits))
    for i, row in enumerate(rows):
        per_column = {}  # column -> (name, value) of its feature
        for column, value in row.items():
            one = row_features({column: value}, categorical)
            if one:
                ((name, number),) = one.items()
                per_column[column] = (name, number)
        features = [(reference_hash(name), value) for name, value in per_column.values()]
        for columns in interactions:
            if all(column in per_column for column in columns):
                hashes = [reference_hash(per_column[column][0]) for column in columns]
                value = math.prod(per_column[column][1] for column in columns)
                features.append((reference_cross_hash(hashes), value))
        for h, value in features:
            X[i, abs(h) % 2**hash_bits] += value
    return X


def test_features_without_crosses_are_featurehasher_of_the_rows_written_out():
    expected = FeatureHasher(2**HASH_BITS, alternate_sign=False).transform(
        [row_features(row) for row in ROWS]
    )
    X = ColumnHasher(hash_bits=HASH_BITS).transform(ROWS)
    assert sp.isspmatrix_csr(X) and X.dtype == np.float64
    assert X.shape == (len(ROWS), 2**HASH_BITS)
    assert (X != expected).nnz == 0


@pytest.mark.parametrize(
    "interactions",
    [
        [("site", "app")],
        [("site", "app"), ("app", "device"), ("site", "app", "device")],
        [("site", "hour"), ("hour", "price")],  # a number crossed: the product
        [("app", "app")],
    ],
)
def test_crosses_are_the_hashed_combinations_of_the_slow_reference(interactions):
    X = ColumnHasher(hash_bits=HASH_BITS, interactions=interactions).transform(ROWS)
    assert np.array_equal(X.toarray(), slow_reference(ROWS, interactions))


def test_crosses_of_many_rows_match_the_slow_reference():
    rng = np.random.default_rng(0)
    rows = [
        {
            "a": f"a{rng.integers(50)}",
            "b": None if rng.random() < 0.2 else f"b{rng.integers(500)}",
            "c": f"c{rng.integers(3)}",
            "n": float(rng.integers(-3, 4)),
        }
        for _ in range(400)
    ]
    interactions = [("a", "b"), ("b", "c", "a"), ("n", "c")]
    X = ColumnHasher(hash_bits=10, interactions=interactions).transform(rows)
    assert np.array_equal(X.toarray(), slow_reference(rows, interactions, hash_bits=10))


def test_categorical_columns_hash_numbers_by_value_integral_floats_as_integers():
    rows = [{"hour": 13}, {"hour": 13.0}, {"hour": 2.5}, {"hour": None}]
    X = ColumnHasher(hash_bits=HASH_BITS, categorical=["hour"]).transform(rows)
    expected = FeatureHasher(2**HASH_BITS, alternate_sign=False).transform(
        [{"hour=13": 1}, {"hour=13": 1}, {"hour=2.5": 1}, {}]
    )
    assert (X != expected).nnz == 0


def frame():
    return pd.DataFrame(
        {
            "site": pd.Series(["news", "shop", None, "news", "blog", "news"], dtype=object),
            "app": pd.Categorical(["a1", "a1", "a2", "a3", "a2", "a1"]),
            "hour": [13, 0, 7, 13, 23, 13],
            "price": [2.5, np.nan, 1.0, -4.0, np.nan, 0.0],
            "clicks": pd.array([1, None, 3, 0, 2, None], dtype="Int64"),
            "new": [True, False, True, False, False, True],
            "mixed": pd.Series([1, "x", 2.5, None, "x", float("nan")], dtype=object),
            "device": ["phone", None, "tablet", "phone", "desk", "phone"],  # pandas' str
            "os": pd.array(["ios", "android", None, "ios", "ios", None], dtype="string"),
        }
    )


def frame_rows():
    """frame() as rows of Python values (the reference)."""
    data = frame()
    rows = []
    for i in range(len(data)):
        row = {}
        for column in data.columns:
            value = data[column].iloc[i]
            if value is pd.NA or (not isinstance(value, str) and pd.isna(value)):
                value = None
            elif isinstance(value, (np.bool_, bool)):
                value = float(value)
            elif isinstance(value, (np.integer, np.floating)):
                value = float(value)
            row[column] = value
        rows.append(row)
    return rows


def test_a_dataframe_of_every_kind_of_column():
    interactions = [("site", "app"), ("app", "hour"), ("mixed", "site"), ("device", "os")]
    # The integer columns read as numbers where named so.
    hasher = ColumnHasher(
        hash_bits=HASH_BITS, interactions=interactions, numeric=["hour", "clicks"]
    )
    X = hasher.transform(frame())
    assert np.array_equal(X.toarray(), slow_reference(frame_rows(), interactions))


@needs_readers_extra
def test_integer_columns_are_categories_unless_named_numeric_from_every_table():
    import pyarrow as pa

    codes = [1005, 1002, 1005, 7]
    expected = FeatureHasher(2**HASH_BITS, alternate_sign=False).transform(
        [{f"C1={code}": 1, "price": 2.5} for code in codes]
    )
    prices = [2.5] * 4
    tables = {
        "pandas int64": pd.DataFrame({"C1": codes, "price": prices}),
        "pandas Int64": pd.DataFrame({"C1": pd.array(codes, dtype="Int64"), "price": prices}),
        "pandas uint16": pd.DataFrame({"C1": np.array(codes, np.uint16), "price": prices}),
        "numpy int32": {"C1": np.array(codes, np.int32), "price": np.array(prices)},
        "arrow int64": pa.table({"C1": pa.array(codes, pa.int64()), "price": prices}),
        "arrow uint8 in a batch": pa.record_batch(
            [pa.array([c % 256 for c in codes], pa.uint8()), pa.array(prices)], ["C1", "price"]
        ),
    }
    for kind, X in tables.items():
        got = ColumnHasher(hash_bits=HASH_BITS).transform(X)
        if kind == "arrow uint8 in a batch":
            want = FeatureHasher(2**HASH_BITS, alternate_sign=False).transform(
                [{f"C1={code % 256}": 1, "price": 2.5} for code in codes]
            )
            assert (got != want).nnz == 0, kind
            continue
        assert (got != expected).nnz == 0, kind
        numbers = ColumnHasher(hash_bits=HASH_BITS, numeric=["C1"]).transform(X)
        as_amounts = FeatureHasher(2**HASH_BITS, alternate_sign=False).transform(
            [{"C1": code, "price": 2.5} for code in codes]
        )
        assert (numbers != as_amounts).nnz == 0, kind
    with pytest.raises(ValueError, match="categorical and numeric both name 'C1'"):
        ColumnHasher(categorical=["C1"], numeric=["C1"]).fit()
    with pytest.raises(ValueError, match="numeric: no column 'D' in X"):
        ColumnHasher(numeric=["D"]).transform(tables["pandas int64"])


@needs_readers_extra
@pytest.mark.parametrize("parser", ["python", "pyarrow"])
def test_integer_columns_hash_alike_from_pandas_parquet_and_csv_text(tmp_path, parser):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skftrl.readers import iter_csv, iter_parquet

    frame = pd.DataFrame(
        {
            "y": [1, 0, 0, 1],
            "C1": np.array([1005, 1002, 1005, 1010], np.int64),
            "hour": np.array([14102100, 14102100, 14102101, 14102123], np.int64),
            "site": ["a1b2c3d4", "ffff0000", "a1b2c3d4", "00000001"],
            "price": [0.25, 1.5, 2.0, 0.75],
        }
    )
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("C1", "site")])
    expected = hasher.transform(frame.drop(columns="y"))
    (tmp_path / "t.csv").write_text(frame.to_csv(index=False))
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "t.parquet")
    ((from_csv, _, _),) = iter_csv(
        tmp_path / "t.csv", label_column="y", hasher=hasher, parser=parser
    )
    ((from_parquet, _, _),) = iter_parquet(tmp_path / "t.parquet", label_column="y", hasher=hasher)
    for X in (from_csv, from_parquet):
        assert (X != expected).nnz == 0
    # The reference: each integer a category named by its text, C1=1005.
    plain = ColumnHasher(hash_bits=HASH_BITS).transform(frame.drop(columns="y"))
    rows = [
        {f"C1={c}": 1, f"hour={h}": 1, f"site={s}": 1, "price": p}
        for c, h, s, p in zip(frame.C1, frame.hour, frame.site, frame.price)
    ]
    assert (plain != FeatureHasher(2**HASH_BITS, alternate_sign=False).transform(rows)).nnz == 0


@needs_readers_extra
def test_arrow_tables_and_arrow_streams_hash_as_the_dataframe():
    import pyarrow as pa

    data = frame().drop(columns="mixed")
    table = pa.Table.from_pandas(data, preserve_index=False)
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("site", "app", "hour")])
    expected = hasher.transform(data)

    class ArrowStream:  # any table with the Arrow PyCapsule interface (polars, ...)
        def __arrow_c_stream__(self, requested_schema=None):
            return table.__arrow_c_stream__(requested_schema)

    for X in (
        hasher.transform(table),
        hasher.transform(table.to_batches()[0]),
        hasher.transform(ArrowStream()),
        hasher.transform(pa.concat_tables([table.slice(0, 2), table.slice(2)])),
    ):
        assert (X != expected).nnz == 0


def test_a_mapping_of_columns_hashes_as_the_rows():
    columns = {"site": np.array(["news", "shop", "news"]), "hour": [13, 0, 7.5]}
    rows = [{"site": s, "hour": h} for s, h in zip(columns["site"], columns["hour"])]
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("site", "hour")])
    assert (hasher.transform(columns) != hasher.transform(rows)).nnz == 0


def test_a_key_absent_from_a_row_is_a_missing_value():
    rows = [{"site": "news", "app": "a1"}, {"app": "a2"}, {}]
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("site", "app")])
    assert np.array_equal(
        hasher.transform(rows).toarray(), slow_reference(rows, [("site", "app")])
    )


def test_batches_hash_as_the_whole_table():
    # Stateless: a partial_fit stream's batches are the rows of the whole.
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("site", "app")])
    data = frame()
    whole = hasher.transform(data)
    parts = sp.vstack([hasher.transform(data.iloc[:2]), hasher.transform(data.iloc[2:])])
    assert (whole != parts).nnz == 0


def test_hashed_names_say_what_lands_in_each_column():
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("site", "app")])
    names = hasher.hashed_names(ROWS[:1])
    expected = {}
    for name in ["site=news", "app=a1", "hour", "price", "device=phone"]:
        expected.setdefault(abs(reference_hash(name)) % 2**HASH_BITS, []).append(name)
    cross = reference_cross_hash([reference_hash("site=news"), reference_hash("app=a1")])
    expected.setdefault(abs(cross) % 2**HASH_BITS, []).append("site=news^app=a1")
    assert names == {column: sorted(found) for column, found in sorted(expected.items())}


def test_in_a_pipeline_before_an_estimator():
    data = pd.concat([frame()] * 20, ignore_index=True)
    y = (data["site"] == "news").to_numpy()
    pipeline = make_pipeline(
        ColumnHasher(hash_bits=HASH_BITS, interactions=[("site", "app")]), FTRLClassifier()
    )
    pipeline.fit(data, y)
    assert pipeline.score(data, y) == 1.0
    assert len(pipeline[:-1].get_feature_names_out()) == 2**HASH_BITS
    assert clone(pipeline[0]).get_params() == pipeline[0].get_params()


@pytest.mark.parametrize(
    "parameters, X, message",
    [
        ({"hash_bits": 31}, ROWS, "hash_bits"),
        ({"interactions": ["site"]}, ROWS, "tuple of two or more column names"),
        ({"interactions": [("site",)]}, ROWS, "tuple of two or more column names"),
        ({"interactions": [("site", "nope")]}, frame(), "interactions: no column 'nope'"),
        ({"categorical": ["nope"]}, frame(), "categorical: no column 'nope'"),
        ({}, [{"price": float("inf")}], "column 'price' holds inf in row 0"),
        ({}, {"a": [1, 2], "b": [1]}, "different lengths"),
        ({}, np.zeros((2, 2)), "X must be a table"),
    ],
)
def test_bad_parameters_and_input_are_refused_naming_the_problem(parameters, X, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ColumnHasher(**parameters).transform(X)


def test_fit_learns_nothing_and_fit_transform_is_transform():
    hasher = ColumnHasher(hash_bits=HASH_BITS)
    before = dict(vars(hasher))
    assert hasher.fit(ROWS) is hasher and vars(hasher) == before
    assert (hasher.fit_transform(ROWS) != hasher.transform(ROWS)).nnz == 0


@needs_readers_extra
def test_arrow_columns_of_every_index_and_string_type_hash_as_python_values():
    # polars exports categories with unsigned indices and strings as views.
    import pyarrow as pa

    values = ["x", None, "y", "x"]
    rows = [{"a": v, "b": v, "c": v, "d": v} for v in values]
    table = pa.table(
        {
            "a": pa.DictionaryArray.from_arrays(
                pa.array([0, None, 1, 0], pa.uint32()), pa.array(["x", "y"])
            ),
            "b": pa.DictionaryArray.from_arrays(
                pa.array([1, None, 0, 1], pa.uint8()), pa.array(["y", "x"], pa.large_string())
            ),
            "c": pa.array(values, pa.string_view()),
            "d": pa.array(values, pa.large_string()),
        }
    )
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("a", "c")])
    assert (hasher.transform(table) != hasher.transform(rows)).nnz == 0


def canonical_rows_reference_of(rows):
    """``(indptr, indices, data)`` of rows given as ``{column: value}``."""
    indptr, indices, data = [0], [], []
    for row in rows:
        indices += sorted(row)
        data += [row[column] for column in sorted(row)]
        indptr.append(len(indices))
    return indptr, indices, data


def canonical_rows_reference(columns, values):
    """Row by row in plain Python: a row's values added up per column in the
    order of the fields (NaN: none), its columns sorted."""
    rows = []
    for i in range(columns.shape[1]):
        row = {}
        for f in range(columns.shape[0]):
            if not math.isnan(values[f, i]):
                column = int(columns[f, i])
                row[column] = row[column] + values[f, i] if column in row else values[f, i]
        rows.append(row)
    return canonical_rows_reference_of(rows)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)])
@pytest.mark.parametrize("n_fields", [1, 3, 20, 40, 100])  # 100: sorted by a radix sort
def test_rows_are_assembled_as_the_reference_adds_them(compiled, n_fields, monkeypatch):
    """Many collisions of three and more fields in a column (where the order
    of the sum shows in the last bits), missing values, rows of none."""
    from skftrl._readers import _hashing

    if not compiled:
        monkeypatch.setattr(_hashing, "_compiled_hashing", None)
    rng = np.random.default_rng(n_fields)
    columns = rng.choice(rng.integers(0, 2**30, size=6), size=(n_fields, 300))  # collide
    values = rng.normal(size=(n_fields, 300)) / 3
    values[rng.random(values.shape) < 0.3] = np.nan
    values[:, :5] = np.nan
    indptr, indices, data = _hashing.canonical_rows(columns, values)
    expected = canonical_rows_reference(columns, values)
    assert np.array_equal(indptr, expected[0]) and np.array_equal(indices, expected[1])
    assert np.array_equal(data, expected[2])  # bit for bit
    assert indices.dtype == np.int32 and data.dtype == np.float64


@pytest.mark.parametrize("longest", [3, 20, 200])
def test_features_are_assembled_as_the_reference_adds_them(longest):
    """hashed_matrix (Vowpal Wabbit text without numba): features in any
    order of rows, rows of 0 to ``longest`` features, many collisions of
    three and more in a column, values cancelling (an explicit zero kept, as
    scipy keeps it)."""
    from skftrl._readers import _hashing

    rng = np.random.default_rng(longest)
    n_rows, hash_bits = 50, 12
    rows = np.repeat(np.arange(n_rows), rng.integers(0, longest + 1, size=n_rows))
    rows = rng.permutation(rows)
    hashes = rng.choice(rng.integers(-(2**31), 2**31, size=8), size=len(rows))
    values = rng.normal(size=len(rows)) / 3
    rows, hashes = np.append(rows, [7, 7]), np.append(hashes, [12345, 12345])
    values = np.append(values, [0.5, -0.5])  # row 7 has nothing else in 12345's column
    values[(rows == 7) & (hashes != 12345)] = 0.0
    X = _hashing.hashed_matrix(_hashing.Features(rows, hashes, values), n_rows, hash_bits)
    columns = np.abs(hashes) % 2**hash_bits
    expected_rows = [{} for _ in range(n_rows)]
    for row, column, value in zip(rows.tolist(), columns.tolist(), values.tolist()):
        by_column = expected_rows[row]
        by_column[column] = by_column[column] + value if column in by_column else value
    expected = canonical_rows_reference_of(expected_rows)
    assert X.shape == (n_rows, 2**hash_bits) and X.has_canonical_format
    assert np.array_equal(X.indptr, expected[0]) and np.array_equal(X.indices, expected[1])
    assert np.array_equal(X.data, expected[2])  # bit for bit
    assert X[7, 12345 % 2**hash_bits] == 0 and 12345 % 2**hash_bits in X[7].indices


def test_a_blocks_hashes_serve_its_chunks_and_those_across_two_blocks():
    """A reader's block hashes each distinct value once for all its chunks
    (a cached Factorized): every row still gets the MurmurHash3 of its own
    ``field=value``, in chunks cut from one block, across two blocks, and
    after missing values are taken out."""
    from skftrl._readers._csv_values import text_categories
    from skftrl._readers._hashing import Column, concatenate_factorized, factorize, field_rows

    rng = np.random.default_rng(0)
    words = np.array(["a", "b", "NA", "", "c d", "é", "a,b", "7"], dtype=object)
    blocks = [factorize(words[rng.integers(0, len(words), size=n)]) for n in (40, 30)]
    chunks = [
        blocks[0][0:15],
        blocks[0][15:30],
        concatenate_factorized([blocks[0][30:40], blocks[1][0:12]]),
        blocks[1][12:30],
    ]
    for field in ("site", "hour"):
        for chunk in chunks:
            values = chunk.values()
            hashes, ones, _ = field_rows(
                field, Column(categories=text_categories(chunk)), len(chunk)
            )
            for value, row_hash, one in zip(values, hashes, ones):
                if value in ("NA", ""):  # missing values
                    assert math.isnan(one)
                else:
                    assert row_hash == murmurhash3_32(f"{field}={value}") and one == 1.0
    # Each block's values were hashed once a field, the chunk across two blocks included.
    assert all(sorted(block.cache) == ["hour", "site"] for block in blocks)
    assert all(len(block.cache["site"]) == len(block.distinct) for block in blocks)


def test_names_are_those_of_the_first_distinct_values_up_to_the_limit():
    """A chunk across two blocks lists a value of both twice among its
    distinct values: it is one name, and the limit counts it once."""
    from skftrl._readers._hashing import (
        Factorized,
        FeatureNames,
        concatenate_factorized,
        record_names,
    )

    first = Factorized(["a", "b"], [0, 1, 0], cached=True)
    second = Factorized(["a", "c", "d", "e"], [0, 1, 2, 3], cached=True)
    names = FeatureNames(limit=4)
    hasher = ColumnHasher(hash_bits=8)
    record_names(names, hasher, {"f": concatenate_factorized([first, second])})
    recorded = {}
    for index, listed in names.by_index.items():
        for name in listed:
            recorded[name] = index
    expected = ["f=a", "f=b", "f=c", "f=d"]  # the first four distinct, in order
    assert sorted(recorded) == expected
    assert all(recorded[name] == abs(murmurhash3_32(name)) % 2**8 for name in expected)
    assert not names.wants("f")


@needs_numba
@needs_readers_extra
def test_the_reading_thread_hashes_the_categories_of_the_blocks_it_parses(tmp_path, monkeypatch):
    """pyarrow's CSV reader hashes ``field=value`` of each distinct value of
    the columns it is told of, in its thread, from the next block on: the
    MurmurHash3 of each, found in the block's hashes when it is learned."""
    import skftrl._readers._sources
    from skftrl._readers._csv import open_csv_input

    monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", 64)  # several blocks
    rng = np.random.default_rng(0)
    words = ["a", "b", "é", "c d", "7", "x" * 30]
    lines = ["y,site,hour"] + [
        f"{i % 2},{rng.choice(words)},{rng.choice(words)}" for i in range(60)
    ]
    path = tmp_path / "ahead.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    source = open_csv_input(path, parser="pyarrow")
    chunks = source.row_chunks(7)
    source.hash_categories({1: "site"})
    hashed = 0
    for rows, _ in chunks:
        site, hour = rows[1], rows[2]
        blocks = site.parts or (site,)
        for block in blocks:
            if "site" in block.cache:
                expected = [murmurhash3_32(f"site={value}") for value in block.distinct]
                assert block.cache["site"].tolist() == expected
                hashed += 1
        assert not any(hour_block.cache for hour_block in hour.parts or (hour,))
    assert hashed > 10
    source.close()


@pytest.mark.parametrize("limit", [1000, 7])
def test_names_recorded_from_a_blocks_chunks_are_those_of_each_chunk_on_its_own(limit):
    """Chunks cut from blocks share the blocks' distinct values (some chunks
    across two blocks, some values missing): what is recorded, and its
    order, is what chunks of the same rows made on their own record."""
    from skftrl._readers._chunks import rechunk
    from skftrl._readers._csv_values import text_categories
    from skftrl._readers._hashing import (
        FeatureNames,
        concatenate_factorized,
        factorize,
        record_names,
    )

    class Block(NamedTuple):  # a reader's block of rows, cut into chunks by rechunk
        columns: list

        @property
        def n_rows(self):
            return len(self.columns[0])

        def rows(self, start, stop):
            return Block([column[start:stop] for column in self.columns])

    def concatenate(pieces):
        parts = zip(*(piece.columns for piece in pieces))
        return Block([concatenate_factorized(list(column)) for column in parts])

    rng = np.random.default_rng(0)
    hasher = ColumnHasher(hash_bits=6)  # collisions: several names a column
    blocks = []
    for n_rows in [37, 5, 60, 1, 44]:
        columns = []
        for vocabulary in (3, 40):
            values = [f"v{k}" for k in rng.zipf(1.3, size=n_rows) % vocabulary]
            values = ["" if value == "v1" else value for value in values]  # missing
            columns.append(factorize(values))
        blocks.append(Block(columns))
    shared, alone = FeatureNames(limit=limit), FeatureNames(limit=limit)
    for chunk in rechunk(blocks, 9, concatenate):
        columns = {f"f{i}": text_categories(column) for i, column in enumerate(chunk.columns)}
        record_names(shared, hasher, columns)
        columns = {
            f"f{i}": text_categories(factorize(list(column.values())))
            for i, column in enumerate(chunk.columns)
        }
        record_names(alone, hasher, columns)
    assert list(shared.by_index.items()) == list(alone.by_index.items())
    distinct = {
        f"f{i}": {value for block in blocks for value in block.columns[i].values()} - {""}
        for i in range(2)
    }
    assert shared.count == {field: min(limit, len(values)) for field, values in distinct.items()}


@needs_numba
@needs_readers_extra
@pytest.mark.parametrize("large", [False, True])
def test_compiled_murmurhash3_of_arrow_strings_is_scikit_learns(large):
    """Every length's tail (0 to 3 bytes past the 4-byte blocks), empty values
    and prefixes, text beyond ASCII, a sliced array (its offsets start past 0)."""
    import pyarrow as pa

    from skftrl._readers._hashing_numba import hash_prefixed
    from skftrl._readers._tables import arrow_text

    rng = np.random.default_rng(0)
    alphabet = list("abcXYZ019=|: \t") + ["é", "中", "😀", "\u00a0"]
    values = ["".join(rng.choice(alphabet, size=n)) for n in rng.integers(0, 24, size=3000)]
    strings = pa.array(values, pa.large_string() if large else pa.string()).slice(7)
    for field in ["", "c", "ab", "abc", "c07", "名前"]:
        prefix = np.frombuffer(f"{field}=".encode(), dtype=np.uint8)
        expected = [murmurhash3_32(f"{field}={value}", seed=0) for value in values[7:]]
        assert hash_prefixed(prefix, *arrow_text(strings)).tolist() == expected
    assert arrow_text(pa.array(["a", None])) is None
    assert arrow_text(pa.array([1, 2])) is None


def names_of(X, column, categorical=True):
    """The names a table's column gives, as a set (of every output column)."""
    hasher = ColumnHasher(hash_bits=HASH_BITS, categorical=[column] if categorical else None)
    return {name for names in hasher.hashed_names(X).values() for name in names}


# Ids beyond 2**53 (where float64 holds only every other integer, then fewer)
# and the extremes of int64 and uint64.
BIG_IDS = [2**53 + 1, 1234567890123456789, 1234567890123456790, -(2**63), 2**63 - 1]


@needs_readers_extra
def test_integer_ids_beyond_2_53_keep_their_exact_decimal_text_from_every_table(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skftrl.readers import iter_parquet

    expected = {f"id={n}" for n in BIG_IDS}  # Python's exact decimal text
    tables = {
        "pandas int64": pd.DataFrame({"id": np.array(BIG_IDS, dtype=np.int64)}),
        "pandas Int64": pd.DataFrame({"id": pd.array(BIG_IDS + [None], dtype="Int64")}),
        "pandas object": pd.DataFrame({"id": pd.Series(BIG_IDS, dtype=object)}),
        "dicts": [{"id": n} for n in BIG_IDS],
        "numpy ints": {"id": np.array(BIG_IDS, dtype=np.int64)},
        "numpy scalars": [{"id": np.int64(n)} for n in BIG_IDS],
        "arrow": pa.table({"id": pa.array(BIG_IDS, pa.int64())}),
        "arrow dictionary": pa.table({"id": pa.array(BIG_IDS).dictionary_encode()}),
    }
    for kind, X in tables.items():
        assert names_of(X, "id") == expected, kind
    unsigned = [2**64 - 1, 2**63 + 1]
    expected_unsigned = {f"id={n}" for n in unsigned}
    for X in (
        pd.DataFrame({"id": np.array(unsigned, dtype=np.uint64)}),
        {"id": np.array(unsigned, dtype=np.uint64)},
        pa.table({"id": pa.array(unsigned, pa.uint64())}),
    ):
        assert names_of(X, "id") == expected_unsigned
    # Each id its own column of the output, as CSV text gives it.
    X = ColumnHasher(hash_bits=30, categorical=["id"]).transform({"id": np.array(BIG_IDS)})
    columns = [abs(reference_hash(f"id={n}")) % 2**30 for n in BIG_IDS]
    assert X.indices.tolist() == columns and X.data.tolist() == [1.0] * len(BIG_IDS)
    # As numbers (not categorical), an Arrow column of such ids is read as
    # pandas reads it: the nearest float64, not an error.
    X = ColumnHasher(hash_bits=HASH_BITS, numeric=["id"]).transform(
        pa.table({"id": pa.array(BIG_IDS)})
    )
    assert X.data.tolist() == [float(n) for n in BIG_IDS]
    pq.write_table(pa.table({"y": [0.0, 1.0] * 3, "id": BIG_IDS[:6] + [7]}), tmp_path / "t.pq")
    hasher = ColumnHasher(hash_bits=30, categorical=["id"])
    ((X, y, _),) = iter_parquet(tmp_path / "t.pq", label_column="y", hasher=hasher)
    columns = [abs(reference_hash(f"id={n}")) % 2**30 for n in BIG_IDS[:6] + [7]]
    assert X.indices.tolist() == columns


def timestamp_texts():
    """Values and the one text each is hashed as, written by hand: the text
    pandas prints for a timestamp (a fraction only when there is one, of 6
    digits, or 9 where nanoseconds are not whole microseconds)."""
    import datetime

    moment = datetime.datetime(2020, 1, 1, 10, 0, 0)
    return [
        (moment, "2020-01-01 10:00:00"),
        (moment + datetime.timedelta(milliseconds=500), "2020-01-01 10:00:00.500000"),
        (moment + datetime.timedelta(microseconds=7), "2020-01-01 10:00:00.000007"),
        (datetime.datetime(1969, 12, 31, 23, 59, 59, 250000), "1969-12-31 23:59:59.250000"),
    ]


@needs_readers_extra
def test_a_timestamp_has_one_text_from_every_table_type():
    import pyarrow as pa

    values, texts = zip(*timestamp_texts())
    expected = {f"t={text}" for text in texts}
    assert {f"t={pd.Timestamp(value)}" for value in values} == expected  # pandas prints these
    tables = {
        "dicts": [{"t": value} for value in values],
        "pandas Timestamp": [{"t": pd.Timestamp(value)} for value in values],
        "numpy scalars": [{"t": np.datetime64(value, "ns")} for value in values],
    }
    for unit in ("us", "ns"):
        tables[f"pandas [{unit}]"] = pd.DataFrame({"t": pd.Series(values).astype(f"M8[{unit}]")})
        tables[f"numpy [{unit}]"] = {"t": np.array(values, dtype=f"M8[{unit}]")}
        tables[f"arrow [{unit}]"] = pa.table({"t": pa.array(values, pa.timestamp(unit))})
    for kind, X in tables.items():
        assert names_of(X, "t", categorical=False) == expected, kind
    # Whole seconds and milliseconds in every unit; nanoseconds where they are kept.
    whole = [values[0], values[1]]
    for unit in ("s", "ms"):
        expected_whole = {f"t={texts[0]}"} | ({f"t={texts[1]}"} if unit == "ms" else set())
        for X in (
            pa.table({"t": pa.array(whole, pa.timestamp("s" if unit == "s" else "ms"))}),
            {"t": np.array(whole, dtype=f"M8[{unit}]")},
            pd.DataFrame({"t": pd.Series(whole).astype(f"M8[{unit}]")}),
        ):
            assert names_of(X, "t", categorical=False) == expected_whole
    nanosecond = pd.Timestamp("2020-01-01 10:00:00.000000001")
    assert str(nanosecond) == "2020-01-01 10:00:00.000000001"
    for X in (
        pd.DataFrame({"t": [nanosecond]}),
        {"t": np.array([nanosecond.to_datetime64()])},
        pa.table({"t": pa.array([nanosecond.value], pa.timestamp("ns"))}),
    ):
        assert names_of(X, "t") == {"t=2020-01-01 10:00:00.000000001"}
    # With a time zone: the local time and its offset, as pandas prints it.
    utc = datetime_in("UTC")
    expected_zoned = {"t=2020-01-01 10:00:00+00:00", "t=2020-06-01 12:00:00+02:00"}
    for X in (
        pd.DataFrame({"t": [utc[0], utc[1].tz_convert("Europe/Paris")]}),
        [{"t": utc[0].to_pydatetime()}, {"t": utc[1].tz_convert("Europe/Paris").to_pydatetime()}],
    ):
        assert names_of(X, "t", categorical=False) == expected_zoned
    arrow = pa.table(
        {"t": pa.array([utc[0].value, utc[1].value], pa.timestamp("ns", tz="Europe/Paris"))}
    )
    assert names_of(arrow, "t") == {
        "t=2020-01-01 11:00:00+01:00",
        "t=2020-06-01 12:00:00+02:00",
    }
    assert {f"t={value.tz_convert('Europe/Paris')}" for value in utc} == names_of(arrow, "t")


def datetime_in(zone):
    return [
        pd.Timestamp("2020-01-01 10:00:00", tz=zone),
        pd.Timestamp("2020-06-01 10:00", tz=zone),
    ]


@needs_readers_extra
def test_durations_bytes_decimals_and_times_have_one_text_from_every_table_type():
    import datetime
    import decimal

    import pyarrow as pa

    # Durations as pandas prints them.
    durations = [
        datetime.timedelta(hours=1, seconds=3),
        datetime.timedelta(days=2, milliseconds=250),
        datetime.timedelta(seconds=-1),
        datetime.timedelta(0),
    ]
    expected = {
        "d=0 days 01:00:03",
        "d=2 days 00:00:00.250000",
        "d=-1 days +23:59:59",
        "d=0 days 00:00:00",
    }
    assert {f"d={pd.Timedelta(value)}" for value in durations} == expected
    for kind, X in {
        "dicts": [{"d": value} for value in durations],
        "pandas": pd.DataFrame({"d": durations}),
        "numpy": {"d": np.array(durations, dtype="m8[us]")},
        "numpy ns": {"d": np.array(durations, dtype="m8[ns]")},
        "numpy scalars": [{"d": np.timedelta64(value, "ms")} for value in durations],
        "arrow": pa.table({"d": pa.array(durations, pa.duration("ms"))}),
        "arrow us": pa.table({"d": pa.array(durations, pa.duration("us"))}),
    }.items():
        assert names_of(X, "d", categorical=False) == expected, kind
    # Bytes as their UTF-8 text.
    blobs = [b"ab", "caf\u00e9".encode()]
    expected = {"b=ab", "b=caf\u00e9"}
    for kind, X in {
        "dicts": [{"b": value} for value in blobs],
        "pandas": pd.DataFrame({"b": blobs}),
        "numpy": {"b": np.array(blobs, dtype=object)},
        "arrow": pa.table({"b": pa.array(blobs, pa.binary())}),
        "arrow large": pa.table({"b": pa.array(blobs, pa.large_binary())}),
    }.items():
        assert names_of(X, "b", categorical=False) == expected, kind
    assert names_of({"b": np.array([b"ab"])}, "b", categorical=False) == {"b=ab"}
    # Decimals as their exact value's shortest text, whatever their scale:
    # as the same float (2.0 -> 2, 2.50 -> 2.5) where it is one.
    decimals = [decimal.Decimal(text) for text in ("2", "2.50", "-0.0", "12345678901234567.125")]
    expected = {"m=2", "m=2.5", "m=0", "m=12345678901234567.125"}
    for kind, X in {
        "dicts": [{"m": value} for value in decimals],
        "pandas": pd.DataFrame({"m": decimals}),
        "arrow": pa.table({"m": pa.array(decimals, pa.decimal128(20, 3))}),
        "arrow scale 0": pa.table({"m": pa.array([decimal.Decimal(2)], pa.decimal128(5, 0))}),
    }.items():
        names = names_of(X, "m", categorical=False)
        assert names == (expected if len(X) > 1 else {"m=2"}), kind
    assert names_of({"m": [2.0, 2.5]}, "m") == {"m=2", "m=2.5"}  # the floats' texts
    # Times of day as Python prints them.
    times = [datetime.time(10, 0), datetime.time(10, 0, 0, 500000)]
    expected = {"h=10:00:00", "h=10:00:00.500000"}
    for kind, X in {
        "dicts": [{"h": value} for value in times],
        "pandas": pd.DataFrame({"h": times}),
        "arrow": pa.table({"h": pa.array(times, pa.time64("us"))}),
        "arrow ns": pa.table({"h": pa.array(times, pa.time64("ns"))}),
        "arrow ms": pa.table({"h": pa.array(times, pa.time32("ms"))}),
    }.items():
        assert names_of(X, "h", categorical=False) == expected, kind


def colliding_names(hash_bits):
    """Two column names whose features land in the same output column."""
    names = [f"c{i}" for i in range(10)]
    columns = [abs(reference_hash(name)) % 2**hash_bits for name in names]
    first = names[0]
    return first, next(n for n, c in zip(names[1:], columns[1:]) if c == columns[0])


def test_a_product_or_sum_that_overflows_is_refused_naming_the_columns():
    hasher = ColumnHasher(hash_bits=HASH_BITS, interactions=[("a", "b")])
    X = {"a": [1.0, 1e200], "b": [2.0, -1e200]}
    with pytest.raises(
        ValueError,
        match=r"row 1: the cross of 'a' \(1e\+200\) and 'b' "
        r"\(-1e\+200\) overflows float64",
    ):
        hasher.transform(X)
    with pytest.raises(ValueError, match="overflows float64"):
        hasher.hashed_names(X)
    three = ColumnHasher(hash_bits=HASH_BITS, interactions=[("a", "c", "b")])
    with pytest.raises(
        ValueError,
        match=r"row 0: the cross of 'a' \(1e\+200\), 'c' \(1e\+20\) "
        r"and 'b' \(1e\+100\) overflows",
    ):
        three.transform({"a": [1e200], "b": [1e100], "c": [1e20]})
    first, second = colliding_names(1)
    with pytest.raises(
        ValueError,
        match=f"row 0: the sum of {first!r} \\(1e\\+308\\) and "
        f"{second!r} \\(1e\\+308\\), which land in one column, overflows",
    ):
        ColumnHasher(hash_bits=1).transform({first: [1e308], second: [1e308]})
    # Large values that do not overflow are kept.
    X = ColumnHasher(hash_bits=HASH_BITS, interactions=[("a", "b")]).transform(
        {"a": [1e200], "b": [1e100]}
    )
    assert sorted(X.data) == [1e100, 1e200, 1e300]


def test_timestamps_and_durations_are_written_as_pandas_prints_them():
    """Of random values to the nanosecond, before and after 1970, whole
    seconds, microseconds and nanoseconds among them: the text is pandas'
    str() of the same Timestamp or Timedelta, from numpy's scalars and
    pandas' own."""
    from skftrl._readers._value_text import value_text

    rng = np.random.default_rng(3)
    counts = rng.integers(-(2**62), 2**62, size=300)
    counts = np.concatenate([counts, counts // 10**9 * 10**9, counts // 1000 * 1000, [0, -1, 1]])
    for count in counts.tolist():
        moment = np.datetime64(count, "ns")
        assert value_text(moment) == str(pd.Timestamp(moment)) == value_text(pd.Timestamp(moment))
        duration = np.timedelta64(count, "ns")
        assert value_text(duration) == str(pd.Timedelta(duration))
        assert value_text(pd.Timedelta(duration)) == str(pd.Timedelta(duration))
        if count % 1000 == 0:
            assert value_text(pd.Timedelta(duration).to_pytimedelta()) == str(
                pd.Timedelta(duration)
            )
