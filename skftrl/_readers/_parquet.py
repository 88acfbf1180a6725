"""Parquet files in chunks, through pyarrow, hashed by a ColumnHasher.

A file is read a row group at a time, in record batches of whole chunks
(at least BATCH_ROWS rows), only the columns used, decoded ahead of their
hashing when the chunks are read ahead; the batches are cut into
chunks of exactly ``chunk_size`` rows by :func:`~._chunks.rechunk`. Columns of
strings are read as dictionary arrays: the batches of a row group share its
dictionary, whose values are hashed once (:func:`batch_features`). A chunk's
``lines`` are the numbers of its rows, counted from 1. The columns' types say
what they hold (see :mod:`._tables`). An error names the file, the row and
its row group.
"""

import io
import sys
from typing import NamedTuple, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._chunks import Chunk, collect_classes, rechunk
from ._hashing import Factorized, compiled_hashing, record_names
from ._sources import DataError, read_ahead, read_on_demand, source_name
from ._tables import arrow_column, arrow_text, column_by_value, dictionary_codes

# Batches decoded ahead of their hashing, at most.
DECODED_AHEAD = 2
# The rows hashed at a time, at least: fewer, larger batches cost fewer
# Python steps a row, for a few MB more in flight.
BATCH_ROWS = 16_384


def open_parquet(path):
    """A ``pyarrow.parquet.ParquetFile`` of a path, ``-`` (standard input, read
    whole: Parquet keeps its description at the end) or a file object; its
    columns of strings are read as dictionary arrays, whose dictionary the
    batches of a row group share (see :func:`batch_features`)."""
    name = source_name(path)
    source = path
    if path == "-":
        source = pa.BufferReader(sys.stdin.buffer.read())
    elif not hasattr(path, "read"):
        source = str(path)
    elif isinstance(path, io.TextIOBase):
        raise TypeError("open a Parquet file in binary mode ('rb'), or pass its path")
    # A file object may be remote, where reading a row group's columns in a
    # few large requests pays; a local file is read as the batches need it,
    # which keeps less of it in memory.
    options = {"pre_buffer": hasattr(path, "read")}
    try:
        parquet = pq.ParquetFile(source, **options)
        strings = [
            field.name
            for field in parquet.schema_arrow
            if pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        ]
        if strings:  # opened again: the columns read as dictionaries are named up front
            parquet.close()  # closes only a file it opened itself (a path)
            options.update(metadata=parquet.metadata, read_dictionary=strings)
            parquet = pq.ParquetFile(source, **options)
        return parquet
    except FileNotFoundError:
        raise DataError(name, None, "No such file or directory") from None
    except (pa.ArrowException, OSError) as error:
        raise DataError(name, None, f"not a readable Parquet file: {error}") from None


def row_name(first_row, group):
    """``where(i)``: how errors name the ``i``-th row of a batch whose first
    row is ``first_row`` (counted from 1), of the row group ``group``."""
    return lambda i: f"row {first_row + int(i):,} (row group {group})"


def holds_numbers(kind):
    """Whether a column of the Arrow type ``kind`` holds numbers (else strings)."""
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)


def is_integer_type(kind):
    """Whether a column of the Arrow type ``kind`` holds integers."""
    return pa.types.is_integer(kind)


def column_values(path, where, array, what):
    """The values of a label or weight column: floats for a numeric column,
    else strings; DataError at the first missing one."""
    if array.null_count:
        first = np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0]
        raise DataError(path, None, f"{where(first)}: missing {what}")
    if holds_numbers(array.type):
        values = array.cast(pa.float64()).to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise DataError(
                path, None, f"{where(bad[0])}: the {what} {values[bad[0]]} is not finite"
            )
        return values
    return np.array(array.cast(pa.string()).to_pylist(), dtype=str)


def scan_labels(parquet, name, label_column):
    """``(n_rows, classes)`` of an open Parquet file: its rows and its
    distinct labels (sorted, see :func:`column_values`), from its label
    column read alone, a row group at a time."""
    check_columns(parquet, name, [label_column])
    labels = set()
    first_row = 1
    for group in range(parquet.num_row_groups):
        try:
            table = parquet.read_row_group(group, columns=[label_column])
        except (pa.ArrowException, OSError) as error:
            raise DataError(name, None, f"row group {group}: {error}") from None
        array = table.column(label_column).combine_chunks()
        values = column_values(name, row_name(first_row, group), array, "label")
        first_row += table.num_rows
        end = f"the end of row group {group} (row {first_row - 1:,})"
        collect_classes(name, None, np.unique(values).tolist(), labels, by=end)
    return first_row - 1, np.array(sorted(labels))


def tag_values(array):
    """A column's values as strings (an empty one where missing), as
    ``predict`` writes an id."""
    return np.array(pc.fill_null(array.cast(pa.string()), "").to_pylist(), dtype=str)


class Columns(NamedTuple):
    """The columns a reading of a Parquet file uses: the features, and the
    label, weight and tag (an id) columns, each None when not read."""

    features: list
    label: Optional[str] = None
    weight: Optional[str] = None
    tag: Optional[str] = None

    def used(self):
        """Each column read, once."""
        return list(dict.fromkeys([*self.features, *filter(None, self[1:])]))


def batch_features(table, features, categorical, numeric, dictionaries):
    """The feature columns of a batch (a pyarrow Table) for
    :meth:`~skftrl.preprocessing.ColumnHasher.transform`: field -> numbers or
    :class:`~._hashing.Factorized` categories (see :mod:`._tables`: an
    integer column is categories unless ``numeric`` names it). A
    column read as a dictionary array whose dictionary is that of the
    batch before (``dictionaries``: field -> (dictionary, its Factorized),
    updated) takes that Factorized's values and hashes, computed once."""
    columns = {}
    for field in features:
        array = table.column(field).combine_chunks()
        if not pa.types.is_dictionary(array.type):
            column = arrow_column(array, column_by_value(field, categorical, numeric))
            columns[field] = column.numbers if column.categories is None else column.categories
            continue
        codes = dictionary_codes(array)
        known = dictionaries.get(field)
        if known is not None and known[0].equals(array.dictionary):
            columns[field] = known[1].with_codes(codes)
            continue
        columns[field] = Factorized(
            array.dictionary, codes, cached=True, text=arrow_text(array.dictionary)
        )
        dictionaries[field] = (array.dictionary, columns[field])
    return columns


def batch_chunk(path, where, table, hasher, columns, lines, features):
    """The :class:`~._chunks.Chunk` of a batch of rows (a pyarrow Table) of
    the :class:`Columns` ``columns``, its ``features`` (see :func:`batch_features`)."""
    try:
        X = hasher.transform(features)
    except ValueError as error:
        raise DataError(path, None, f"in the batch from {where(0)}: {error}") from None
    y = weights = tags = None
    if columns.label:
        y = column_values(path, where, table.column(columns.label).combine_chunks(), "label")
    if columns.weight:
        array = table.column(columns.weight).combine_chunks()
        weights = column_values(path, where, array, "weight")
        if weights.dtype.kind != "f":
            raise DataError(path, None, f"the weight column {columns.weight!r} holds no numbers")
        negative = np.flatnonzero(weights < 0)
        if negative.size:
            value = weights[negative[0]]
            raise DataError(path, None, f"{where(negative[0])}: the weight {value} is negative")
    if columns.tag:
        tags = tag_values(table.column(columns.tag).combine_chunks())
    return Chunk(X, y, lines, weights, tags)


def check_column_types(parquet, name, features, leave_out, label_column=None):
    """DataError at the feature columns (and the label column) of the open
    Parquet file that hold neither numbers nor text (lists, structs, maps):
    ``leave_out`` says how to leave features out."""
    schema = parquet.schema_arrow
    check_columns(parquet, name, [*features, *filter(None, [label_column])])
    if label_column is not None and pa.types.is_nested(schema.field(label_column).type):
        kind = schema.field(label_column).type
        raise DataError(
            name,
            None,
            f"the label column {label_column!r} ({kind}) holds neither numbers nor text",
        )
    nested = [field for field in features if pa.types.is_nested(schema.field(field).type)]
    if not nested:
        return
    listed = " and ".join(f"{field!r} ({schema.field(field).type})" for field in nested)
    several = len(nested) > 1
    raise DataError(
        name,
        None,
        f"the column{'s' if several else ''} {listed} hold{'' if several else 's'} neither "
        f"numbers nor text: leave {'them' if several else 'it'} out {leave_out(nested)}",
    )


def check_columns(parquet, name, columns):
    """DataError unless the open Parquet file has each of ``columns``."""
    names = parquet.schema_arrow.names
    absent = [column for column in columns if column not in names]
    if absent:
        raise DataError(
            name,
            None,
            f"no column {', '.join(map(repr, absent))} (the columns are: {', '.join(names)})",
        )


def numbers_of_features(table, features):
    """``{field: float64 values}`` (NaN: missing) of the feature columns of a
    batch that hold numbers, whatever they are read as."""
    return {
        field: arrow_column(table.column(field), by_value=False).numbers
        for field in features
        if holds_numbers(table.schema.field(field).type)
    }


def decoded_batches(parquet, name, batch_size, used):
    """``(row group, record batch)`` of the columns ``used`` of an open
    Parquet file, each batch at most ``batch_size`` rows of one row group."""
    for group in range(parquet.num_row_groups):
        # pyarrow's own threads would cost more CPU than they save here: the
        # batches are decoded in a thread of their own, beside the hashing.
        batches = parquet.iter_batches(
            batch_size, row_groups=[group], columns=used, use_threads=False
        )
        while True:
            try:
                batch = next(batches, None)
            except (pa.ArrowException, OSError) as error:
                raise DataError(name, None, f"row group {group}: {error}") from None
            if batch is None:
                break
            yield group, batch


def parquet_pieces(
    parquet,
    name,
    hasher,
    columns,
    batch_size,
    names=None,
    on_first_chunk=None,
    start=read_on_demand,
):
    """Chunks of the row groups of an open Parquet file named ``name`` (each
    at most ``batch_size`` rows) of the :class:`Columns` ``columns``, hashed
    by ``hasher``; ``names`` (a :class:`~._hashing.FeatureNames`) records
    the names of the hashed features. ``on_first_chunk(numbers_of, y)``
    sees the first batch's feature columns of numbers
    (:func:`numbers_of_features`) and labels, before its chunk is given.
    ``start`` decodes the batches (:func:`~._sources.read_ahead`: in a
    thread of its own, ahead of their hashing)."""
    used = columns.used()
    check_columns(parquet, name, used)
    categorical, numeric = set(hasher.categorical or ()), set(hasher.numeric or ())
    dictionaries = {}  # field -> the dictionary of its last batch, and its Factorized
    # The features' kinds are known once they are read: a hasher without
    # them names them.
    naming = None if names is None else type(hasher)(hash_bits=hasher.hash_bits)
    first_row = 1
    for group, batch in start(decoded_batches(parquet, name, batch_size, used), DECODED_AHEAD):
        lines = np.arange(first_row, first_row + batch.num_rows)
        table = pa.Table.from_batches([batch])
        where = row_name(first_row, group)
        features = batch_features(table, columns.features, categorical, numeric, dictionaries)
        chunk = batch_chunk(name, where, table, hasher, columns, lines, features)
        if on_first_chunk is not None:
            on_first_chunk(numbers_of_features(table, columns.features), chunk.y)
            on_first_chunk = None
        yield chunk
        if names is not None:
            record_names(names, naming, features)
        first_row += batch.num_rows


def read_parquet(
    parquet, name, hasher, columns, chunk_size, names=None, on_first_chunk=None, start=read_ahead
):
    """Chunks of exactly ``chunk_size`` rows (the last may be shorter) of an
    open Parquet file (see :func:`parquet_pieces`), read and hashed ahead in
    a thread while the chunks before are learned (``start``:
    :func:`~._sources.read_ahead`, or :func:`~._sources.read_on_demand` for none)."""
    # numba (the compiled hashing) imported in this thread, before the
    # reader's starts: two threads importing it at once (the reader's and a
    # learner's) can deadlock on its circular imports.
    compiled_hashing()
    # Whole chunks: a batch is cut into chunks without copying its rows, but
    # where a row group ends.
    batch_size = chunk_size * -(-BATCH_ROWS // chunk_size)
    pieces = parquet_pieces(
        parquet, name, hasher, columns, batch_size, names, on_first_chunk, start
    )
    return rechunk(start(pieces), chunk_size)
