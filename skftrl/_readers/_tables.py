"""Tables of raw values as the hashing's columns (:class:`~._hashing.Column`).

A table is a pandas DataFrame, a pyarrow Table or RecordBatch, any table
with the Arrow PyCapsule interface (``__arrow_c_stream__``: polars, DuckDB
...), a mapping of column names to 1-D arrays, or a list of dicts (one a
row; a key absent from a row is a missing value). Each value is a number or
a category:

- a column of an integer type (pandas' int, Int and uint, numpy's, Arrow's,
  polars' through Arrow) holds categories: integers are ids and codes, as
  whole numbers of a CSV file are, unless the column is named in
  ``numeric``;
- a column of a float or boolean type holds numbers;
- a column of a categorical type (pandas ``category``, Arrow dictionary)
  holds categories, whatever the type of the categories;
- any other column (strings, objects, dates) is read value by value: a
  number (``int``, ``float``, ``bool`` and numpy's) is a number, anything
  else a category;
- a column named in ``categorical`` holds categories only (its numbers are
  hashed by value), one named in ``numeric`` numbers (its integers too);
- missing values (None, NaN, pandas' NA and NaT, Arrow nulls) hold nothing.

A category is hashed by its text (``_value_text.value_text``), one per logical
value whatever the table: integers read as categories are
kept exact (not made floats), and Arrow's timestamps, durations, times and
decimals are written as the same Python or pandas values are.

Only the distinct values of a column are looked at one by one.

The column functions take ``by_value``: True for a column read as
categories, False for one read as numbers where it holds numbers, None for
its type to decide (:data:`BY_TYPE`).
"""

import datetime
import decimal
from collections.abc import Mapping
from numbers import Real

import numpy as np

from ._hashing import Column, Factorized, compiled_hashing, factorize
from ._value_text import fraction_text, offset_text, value_text

# ``by_value`` of a column neither ``categorical`` nor ``numeric``: its type decides.
BY_TYPE = None


def column_by_value(name, categorical, numeric):
    """``by_value`` of the column ``name``: True where ``categorical`` names
    it, False where ``numeric`` does, else :data:`BY_TYPE`."""
    if name in categorical:
        return True
    return False if name in numeric else BY_TYPE


def is_missing_value(value):
    """Whether a Python value is missing: None, NaN, pandas' NA or NaT."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating, decimal.Decimal)):
        return value != value
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    return type(value).__name__ in ("NAType", "NaTType")


def is_number(value):
    # numpy's timedelta64 is an integer type to numpy: a duration here.
    return isinstance(value, (Real, np.number, np.bool_)) and not isinstance(
        value, (str, np.timedelta64)
    )


def typed_by_value(column, by_value):
    """The :class:`Column` of a :class:`Factorized` column of Python values,
    each distinct value a number, a category or missing."""
    distinct = column.distinct
    missing = np.fromiter(map(is_missing_value, distinct), dtype=bool, count=len(distinct))
    if by_value:
        return Column(categories=column.without(missing))
    numeric = ~missing & np.fromiter(map(is_number, distinct), dtype=bool, count=len(distinct))
    if not numeric.any():
        return Column(categories=column.without(missing))
    numbers = np.full(len(distinct), np.nan)
    numbers[numeric] = distinct[numeric].astype(np.float64)
    per_row = column.per_row(numbers, np.nan)
    if numeric.sum() == (~missing).sum():
        return Column(numbers=per_row)
    return Column(numbers=per_row, categories=column.without(missing | numeric))


def numbers_column(numbers, by_value):
    """The :class:`Column` of a float array (NaN: missing)."""
    if not by_value:
        return Column(numbers=numbers)
    present = ~np.isnan(numbers)
    distinct, codes = np.unique(numbers[present], return_inverse=True)
    all_codes = np.full(len(numbers), -1, dtype=np.intp)
    all_codes[present] = codes
    return Column(categories=Factorized(distinct.astype(object), all_codes))


def integers_column(integers):
    """The :class:`Column` of categories of an integer array (none missing),
    each value exact: Python ints, not floats, which hold integers beyond
    2**53 only approximately."""
    compiled = compiled_hashing()
    if compiled is not None and fits_int64(integers.dtype):
        present = np.ones(len(integers), dtype=bool)
        distinct, codes = compiled.factorize_integers(integers.astype(np.int64), present)
    else:
        distinct, codes = np.unique(integers, return_inverse=True)
    return Column(categories=Factorized.of_integers(distinct, codes.reshape(-1)))


def fits_int64(dtype):
    """Whether every integer of a numpy integer dtype is an int64."""
    return dtype.kind == "i" or dtype.itemsize < 8


def numpy_column(values, by_value):
    """The :class:`Column` of a 1-D array-like (a numpy array, a list, a pandas
    Series of plain numpy type)."""
    if isinstance(values, Factorized):  # the readers' columns of categories
        return Column(categories=values)
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"a column must be 1-D, got an array of shape {array.shape}")
    if by_value is BY_TYPE:
        by_value = array.dtype.kind in "iu"
    if by_value and array.dtype.kind in "iu":
        return integers_column(array)
    if array.dtype.kind in "biuf":
        return numbers_column(array.astype(np.float64), by_value)
    if array.dtype.kind == "U":
        return Column(categories=factorize(array.astype(str).tolist()))
    if array.dtype.kind == "S":
        return Column(categories=factorize(map(value_text, array.tolist())))
    # numpy's datetimes and durations as numpy's scalars (tolist() makes
    # those of nanoseconds integers).
    values = list(array) if array.dtype.kind in "mM" else array.astype(object).tolist()
    return typed_by_value(factorize(map(hashable, values)), bool(by_value))


def pandas_column(series, by_value):
    """The :class:`Column` of a pandas Series."""
    import pandas as pd

    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        categories = np.asarray(series.cat.categories, dtype=object)
        return Column(categories=Factorized(categories, series.cat.codes.to_numpy()))
    integers = pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    if by_value is BY_TYPE:
        by_value = integers
    if by_value and integers:
        codes, distinct = pd.factorize(series, use_na_sentinel=True)
        # pandas' Int dtypes (of an extension array) hold numpy's.
        kind = getattr(distinct.dtype, "numpy_dtype", distinct.dtype)
        return Column(categories=Factorized.of_integers(np.asarray(distinct, dtype=kind), codes))
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        numbers = series.to_numpy(dtype=np.float64, na_value=np.nan)
        return numbers_column(numbers, by_value)
    codes, distinct = pd.factorize(series, use_na_sentinel=True)
    distinct = np.asarray(distinct, dtype=object)
    return typed_by_value(Factorized(distinct, codes), bool(by_value))


def arrow_column(array, by_value):
    """The :class:`Column` of a pyarrow Array or ChunkedArray."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    kind = array.type
    if by_value is BY_TYPE:
        by_value = pa.types.is_integer(kind)
    if by_value and pa.types.is_integer(kind):  # exact, not made floats
        compiled = compiled_hashing()
        if compiled is not None and kind != pa.uint64():
            # Factorized by numba: a few times faster than dictionary_encode.
            present = np.ones(len(array), dtype=bool)
            values = array
            if array.null_count:
                present = array.is_valid().to_numpy(zero_copy_only=False)
                values = pc.fill_null(array, 0)
            values = values.cast(pa.int64()) if kind != pa.int64() else values
            distinct, codes = compiled.factorize_integers(values.to_numpy(), present)
            return Column(categories=Factorized.of_integers(distinct, codes))
        array = pc.dictionary_encode(array)
        distinct = array.dictionary.to_numpy(zero_copy_only=False)
        return Column(categories=Factorized.of_integers(distinct, dictionary_codes(array)))
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        # Integers beyond 2**53 as their nearest floats, as numpy makes them.
        floats = array.cast(pa.float64(), safe=False)
        numbers = pc.fill_null(floats, np.nan).to_numpy(zero_copy_only=False)
        return numbers_column(numbers, by_value)
    if pa.types.is_null(kind):
        return Column(numbers=np.full(len(array), np.nan))
    if not pa.types.is_dictionary(array.type):
        if not (typed_values(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            array = array.cast(pa.string())
        array = pc.dictionary_encode(array)
    distinct = np.asarray(arrow_values(array.dictionary), dtype=object)
    return Column(categories=Factorized(distinct, dictionary_codes(array)))


def typed_values(kind):
    """Whether :func:`arrow_values` writes Arrow values of this type as
    Python's or pandas' same values are written (rather than as Arrow casts
    them to strings)."""
    import pyarrow as pa

    return (
        pa.types.is_integer(kind)
        or pa.types.is_temporal(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
    )


def arrow_values(array):
    """The values of a pyarrow array (a dictionary, none null) as Python
    values, or the texts :func:`~._value_text.value_text` gives them: Arrow's
    timestamps (of any unit and time zone), durations and times of day."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_timestamp(kind):
        wall = array if kind.tz is None else pc.local_timestamp(array)
        texts = [value_text(value) for value in wall.to_numpy(zero_copy_only=False)]
        if kind.tz is None:
            return texts
        # The offset of each value's local time from UTC, in the array's unit.
        unit = 10 ** {"s": 0, "ms": 3, "us": 6, "ns": 9}[kind.unit]
        offsets = pc.subtract(wall.cast(pa.int64()), array.cast(pa.int64())).to_numpy()
        return [
            text + offset_text(datetime.timedelta(seconds=int(offset) // unit))
            for text, offset in zip(texts, offsets)
        ]
    if pa.types.is_duration(kind):
        return [value_text(value) for value in array.to_numpy(zero_copy_only=False)]
    if pa.types.is_time(kind):
        unit = 10 ** {"s": 9, "ms": 6, "us": 3, "ns": 0}[kind.unit]
        texts = []
        counts = array.cast(pa.int32() if pa.types.is_time32(kind) else pa.int64())
        for count in counts.to_numpy().tolist():
            seconds, nanoseconds = divmod(count * unit, 10**9)
            clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
            texts.append(clock + fraction_text(nanoseconds))
        return texts
    return array.to_pylist()


def arrow_text(strings):
    """``(data, offsets)``: the UTF-8 bytes of a pyarrow string array (of
    ``string`` or ``large_string`` values, none null) and each value's start
    among them, then their end, as numpy views; None for other arrays."""
    import pyarrow as pa

    kind = strings.type
    if strings.null_count or not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return None
    _, offsets, data = strings.buffers()
    width = np.int64 if pa.types.is_large_string(kind) else np.int32
    offsets = np.frombuffer(offsets, dtype=width)[
        strings.offset : strings.offset + len(strings) + 1
    ]
    data = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, dtype=np.uint8)
    return data, offsets


def dictionary_codes(array):
    """Each row's code of a pyarrow DictionaryArray, -1 where it is null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not array.null_count:  # numpy's view of Arrow's (int32) codes, not a copy
        return array.indices.to_numpy()
    return pc.fill_null(array.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)


def table_columns(X, categorical=(), numeric=()):
    """``(columns, n_rows)``: the :class:`Column` of each column of the table
    ``X`` (see the module's description), in the table's order."""
    categorical, numeric = set(categorical), set(numeric)

    def by_value(name):
        return column_by_value(name, categorical, numeric)

    kind = type(X).__module__.partition(".")[0]
    if kind == "pandas" and hasattr(X, "columns"):
        check_unique(list(map(str, X.columns)))
        columns = {str(name): pandas_column(X[name], by_value(str(name))) for name in X.columns}
        return columns, len(X)
    if kind != "pyarrow" and hasattr(X, "__arrow_c_stream__"):
        X = arrow_table(X)
        kind = "pyarrow"
    if kind == "pyarrow" and hasattr(X, "schema"):
        check_unique(X.schema.names)
        columns = {
            name: arrow_column(X.column(i), by_value(name))
            for i, name in enumerate(X.schema.names)
        }
        return columns, X.num_rows
    if isinstance(X, Mapping):
        return mapping_columns(X, by_value)
    if isinstance(X, (list, tuple)) and all(isinstance(row, Mapping) for row in X):
        return dict_rows_columns(X, by_value)
    raise TypeError(
        "X must be a table: a pandas DataFrame, a pyarrow Table or RecordBatch, a table "
        "with the Arrow PyCapsule interface (such as a polars DataFrame), a mapping of "
        f"column names to 1-D arrays, or a list of dicts; got {type(X).__name__}"
    )


def arrow_table(X):
    """A pyarrow Table of a table with the Arrow PyCapsule interface."""
    try:
        import pyarrow as pa
    except ImportError:
        raise ImportError(
            f"reading a {type(X).__name__} needs pyarrow: pip install 'skftrl[readers]'"
        ) from None
    return pa.table(X)


def check_unique(names):
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"repeated column names: {repeated}")


def mapping_columns(X, by_value):
    """The columns of a mapping of column names to 1-D arrays (equal lengths)."""
    columns = {str(name): numpy_column(values, by_value(str(name))) for name, values in X.items()}
    lengths = {name: column_length(column) for name, column in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"the columns have different lengths: {lengths}")
    return columns, next(iter(lengths.values()), 0)


def column_length(column):
    return len(column.numbers if column.numbers is not None else column.categories)


def dict_rows_columns(rows, by_value):
    """The columns of a list of dicts: every key of any row, in order of appearance."""
    names = list(dict.fromkeys(str(key) for row in rows for key in row))
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        # Python values, each read as what it is: no type to decide.
        columns[name] = typed_by_value(factorize(map(hashable, values)), by_value(name) is True)
    return columns, len(rows)


def hashable(value):
    """A value as a key of the factorization: NaN and other missing values as None."""
    return None if is_missing_value(value) else value
