"""CSV files in chunks: the column kinds, the first pass, and the hashed rows.

A CSV input has a header line, then one row a line (a quoted field may hold
newlines). The label column names the label; the feature columns are hashed
by :class:`~skftrl.preprocessing.ColumnHasher` (see :mod:`._hashing`), each
numeric or categorical: a column is numeric when every value that is not
missing is a number, and it is not named categorical. A column of whole
numbers is categories unless named numeric, on the command line (--numeric)
and in :func:`skftrl.readers.iter_csv` (``ColumnHasher(numeric=...)``)
alike (see :func:`column_kinds`). The kinds are found by a first pass over the
file (:func:`scan_csv`, which also finds the classes), or from the first
chunk's values (:func:`first_chunk_kinds`) when nothing else needs a first
pass.
"""

import contextlib
import itertools
from typing import NamedTuple

import numpy as np

from ._chunks import Chunk, collect_classes
from ._csv_text import CsvInput
from ._csv_values import (
    CATEGORICAL_HINT,
    as_strings,
    check_labels_present,
    distinct_values,
    numeric_values,
    parse_numbers,
    parse_targets,
    parse_weights,
    text_categories,
)
from ._hashing import Factorized, RowError, record_names
from ._sources import DataError


class CsvScan(NamedTuple):
    """What a first pass over a CSV training file found."""

    n_rows: int
    kinds: dict  # feature column -> "numeric" or "categorical"
    numeric_labels: bool
    labels: np.ndarray  # the sorted distinct labels (classification), else None
    header: list


def feature_columns(header, label_column, weight_column, ignore, keep):
    """The header's feature columns: not the label, the weight, ignored, or left out
    by ``keep``."""
    special = {label_column, weight_column}
    return [
        name
        for name in header
        if name not in special and name not in ignore and (keep is None or name in keep)
    ]


def ignored_columns(header, kinds, label_column, weight_column):
    """The header's columns that are neither features, label nor weight."""
    used = {*kinds, label_column, weight_column}
    return [name for name in header if name not in used]


NUMERIC, CATEGORICAL = "numeric", "categorical"


def column_kinds(columns, values, categorical, kinds=None, numeric=None):
    """``kinds`` (column -> NUMERIC or CATEGORICAL; None before the first
    chunk) updated with a chunk's ``values``.

    A column of numbers is numeric, but one whose first chunk holds whole
    numbers only (ids, codes) is categorical unless ``numeric`` names it or
    is None (the command line gives its --numeric columns, iter_csv its
    hasher's ``numeric``; None reads every column of numbers as numbers).
    Whether the numbers are whole is the first chunk's: a first pass and a
    reading that takes the kinds from the first chunk then agree, but
    for a later value that is not a number (a word, where that reading
    starts over)."""
    first = kinds is None
    kinds = {} if first else kinds
    for name in columns:
        if name in categorical:
            kinds[name] = CATEGORICAL
        elif first or kinds[name] == NUMERIC:
            numbers = parse_numbers(values[name])
            if numbers is None:
                kinds[name] = CATEGORICAL
            elif first:
                amounts = numeric is None or name in numeric or not is_whole(numbers)
                kinds[name] = NUMERIC if amounts else CATEGORICAL
    return kinds


def is_whole(numbers):
    """Whether every finite one of ``numbers`` is a whole number."""
    finite = numbers[np.isfinite(numbers)]
    return bool(np.all(finite == np.floor(finite)))


def open_csv_input(path, parser="auto", delimiter=",", column_names=None):
    """The CSV input at ``path``, its fields separated by ``delimiter`` (its
    ``column_names`` given when it has no header line), opened: parsed by
    pyarrow where it is installed (``parser="auto"``) or asked for
    (``"pyarrow"``), else by the csv module (``"python"``). Both give the
    same rows."""
    if parser == "python":
        return CsvInput(path, delimiter, column_names)
    try:
        from ._csv_arrow import ArrowCsvInput
    except ImportError:
        if parser == "pyarrow":
            raise ImportError(
                "parser='pyarrow' needs pyarrow: pip install 'skftrl[readers]'"
            ) from None
        return CsvInput(path, delimiter, column_names)
    return ArrowCsvInput(path, delimiter, column_names)


def scan_csv(
    path,
    label_column,
    chunk_size,
    classify,
    columns_of,
    categorical=(),
    progress=None,
    parser="auto",
    delimiter=",",
    column_names=None,
    numeric=None,
):
    """A first streaming pass over a CSV training file (its fields
    separated by ``delimiter``; its ``column_names`` given when it has no
    header line).

    A column is numeric when every value that is not missing is a number
    (and it is not in ``categorical``), else categorical; one of whole
    numbers is numeric only if ``numeric`` names it or is None (see
    :func:`column_kinds`). For
    classification the labels are numbers when every label is, else
    strings; for regression every label must be a number. ``columns_of``
    gives the feature columns of a header; ``progress(rows)`` is called
    after each chunk.
    """
    with contextlib.closing(open_csv_input(path, parser, delimiter, column_names)) as source:
        label_position = source.position(label_column, "label")
        columns = columns_of(source.header)
        positions = {name: source.header.index(name) for name in columns}
        header = source.header
        kinds = None
        labels, numeric_labels, n_rows = set(), True, 0
        # Neither a feature nor the label: never read after the first block.
        unused = {i for i, name in enumerate(header) if name not in columns} - {label_position}
        for values, lines in source.row_chunks(chunk_size):
            kinds = column_kinds(
                columns,
                {name: values[positions[name]] for name in columns},
                categorical,
                kinds,
                numeric,
            )
            # A column found categorical stays so: the later rows need not be read.
            categorical_now = {positions[name] for name in columns if kinds[name] == CATEGORICAL}
            source.skip_columns(unused | categorical_now)
            label_values = values[label_position]
            check_labels_present(path, label_values, lines)
            if classify:
                numeric_labels = numeric_labels and parse_numbers(label_values) is not None
                collect_classes(path, int(lines[-1]), distinct_values(label_values), labels)
            else:
                parse_targets(path, label_values, lines)
            n_rows += len(lines)
            if progress is not None:
                progress(n_rows)
    if n_rows == 0:
        raise DataError(path, None, "no data rows after the header")
    classes = None
    if classify and numeric_labels:
        classes = np.unique(np.array(sorted(labels), dtype=np.float64))
    elif classify:
        classes = np.array(sorted(labels))
    return CsvScan(n_rows, kinds, numeric_labels, classes, header)


def first_chunk_kinds(source, rows, columns_of, categorical=(), numeric=None):
    """The kinds of the feature columns from the first chunk of ``rows`` (of
    the open CsvInput ``source``), and the same rows, the first chunk
    included: ``(kinds, rows)``; ``numeric`` as :func:`column_kinds` takes it.

    For reading without a first pass; ``columns_of`` gives the feature
    columns of the header. Without rows, every column is numeric.
    """
    first = next(rows, None)
    columns = columns_of(source.header)
    if first is None:
        kinds = dict.fromkeys(columns, NUMERIC)
    else:
        values = dict(zip(source.header, first.columns))
        kinds = column_kinds(columns, values, categorical, numeric=numeric)
    return kinds, itertools.chain([] if first is None else [first], rows)


def first_chunk_labels(source, rows, label_column):
    """The labels of the first chunk of ``rows`` (of the open CsvInput
    ``source``) as numbers (NaN where missing), and the same rows, the first
    chunk included: ``(labels, rows)``; ``labels`` is None without rows or
    when a label is not a number."""
    label_position = source.position(label_column, "label")
    first = next(rows, None)
    if first is None:
        return None, rows
    return parse_numbers(first.columns[label_position]), itertools.chain([first], rows)


def csv_chunks(
    source,
    rows,
    spec,
    labels=True,
    names=None,
    on_first_chunk=None,
    hasher=None,
    hint=CATEGORICAL_HINT,
    tag_column=None,
):
    """Chunks of the rows ``rows`` (each ``(values, lines)``) of the open CSV
    input ``source``, read as ``spec`` (a :class:`~._spec.CsvSpec`) says.

    ``spec.kinds`` names the feature columns, hashed by
    :class:`~skftrl.preprocessing.ColumnHasher` into ``2**hash_bits``
    columns: numeric ones as numbers, categorical ones as categories;
    ``numeric_labels`` tells whether labels are floats (else strings);
    ``weight_column`` the sample weights, if any; ``ignored`` columns that
    are read and dropped. With ``labels``, the label column (and the weight
    column) are read; without, they are skipped if they are there. Every
    feature column of the spec must be in the header, and no other column
    unless ignored. ``names`` (a :class:`~._hashing.FeatureNames`) records
    the names of hashed features. ``on_first_chunk(values, y)`` sees the
    first chunk's columns of numbers, numeric or categorical (a dict of
    float arrays), and labels.
    ``hasher`` (by default ``ColumnHasher(hash_bits=spec.hash_bits)``) hashes
    the columns; ``hint`` says what reads a column as categories.
    ``tag_column`` (any column of the header) gives each chunk's ``tags``,
    its values as written.
    """
    from ..preprocessing import ColumnHasher

    path = source.path
    if hasher is None:
        hasher = ColumnHasher(hash_bits=spec.hash_bits)
    positions = {name: source.position(name, "feature") for name in spec.kinds}
    label_position = weight_position = None
    if labels:
        label_position = source.position(spec.label_column, "label")
        if spec.weight_column is not None:
            weight_position = source.position(spec.weight_column, "weight")
    tag_position = None if tag_column is None else source.position(tag_column, "id")
    numeric = [name for name, kind in spec.kinds.items() if kind == "numeric"]
    source.read_numbers({positions[name] for name in numeric} - {tag_position})
    source.hash_categories(
        {positions[name]: name for name, kind in spec.kinds.items() if kind != "numeric"}
    )
    known = {spec.label_column, spec.weight_column, tag_column, *spec.ignored}
    unknown = [name for name in source.header if name not in spec.kinds and name not in known]
    if unknown:
        raise DataError(path, 1, f"columns the model was not trained on: {unknown}")
    # The columns read: the features, and the label and weights if any.
    read_positions = {
        name: at
        for name, at in [
            *positions.items(),
            (spec.label_column, label_position),
            (spec.weight_column, weight_position),
        ]
        if at is not None
    }
    for values, lines in rows:
        check_no_header_rows(
            path, {name: values[at] for name, at in read_positions.items()}, lines
        )
        columns, numbers_of = {}, {}
        for name, kind in spec.kinds.items():
            if kind == "numeric":
                numbers_of[name] = numeric_values(path, name, values[positions[name]], lines, hint)
                columns[name] = numbers_of[name]
            else:
                columns[name] = text_categories(values[positions[name]])
        try:
            X = hasher.transform(columns)
        except RowError as error:
            raise DataError(path, int(lines[error.row]), error.message) from None
        if names is not None:
            record_names(names, hasher, columns)
        y = weights = None
        if label_position is not None:
            label_values = values[label_position]
            check_labels_present(path, label_values, lines)
            if spec.numeric_labels:
                y = parse_targets(path, label_values, lines)
            else:
                y = as_strings(label_values)
        if weight_position is not None:
            weights = parse_weights(path, values[weight_position], lines, spec.weight_column)
        if on_first_chunk is not None:
            # The categorical columns of numbers (whole ones) too.
            for name, kind in spec.kinds.items():
                if kind != "numeric":
                    numbers = parse_numbers(values[positions[name]])
                    if numbers is not None:
                        numbers_of[name] = numbers
            on_first_chunk(numbers_of, y)
            on_first_chunk = None
        tags = None if tag_position is None else as_strings(values[tag_position])
        yield Chunk(X, y, lines, weights, tags)


def check_no_header_rows(path, columns, lines):
    """DataError at the first row whose every column (of ``columns``, name ->
    a chunk's values) holds the column's own name: a header line repeated in
    the data, as files joined with their header lines give. Read as data, it
    would add its label as a class, and its names as features."""

    def rows_holding(values, name):
        if isinstance(values, Factorized):
            # The column of fewest distinct values is looked at first: only
            # its distinct values are made Python strings.
            (where,) = np.nonzero(values.distinct == name)
            return np.flatnonzero(np.isin(values.codes, where))
        if np.asarray(values).dtype.kind == "f":  # numbers: no name among them
            return np.zeros(0, dtype=np.intp)
        return np.flatnonzero(np.asarray(values, dtype=object) == name)

    def size(item):
        values = item[1]
        return values.n_distinct if isinstance(values, Factorized) else len(values)

    if not columns:
        return
    names = sorted(columns.items(), key=size)
    rows = rows_holding(names[0][1], names[0][0])
    for name, values in names[1:]:
        if not rows.size:
            return
        rows = np.intersect1d(rows, rows_holding(values, name))
    if rows.size:
        raise DataError(
            path,
            int(lines[rows[0]]),
            "this row repeats the header line (files joined with their header lines?): remove it",
        )


def read_csv(
    path,
    spec,
    chunk_size,
    labels=True,
    names=None,
    on_first_chunk=None,
    parser="auto",
    tag_column=None,
    column_names=None,
):
    """Chunks of ``chunk_size`` rows of a CSV input, read as ``spec`` says (see
    :func:`csv_chunks`); ``column_names`` are those of a file without a header line."""
    with contextlib.closing(open_csv_input(path, parser, spec.delimiter, column_names)) as source:
        rows = source.row_chunks(chunk_size)
        yield from csv_chunks(
            source, rows, spec, labels, names, on_first_chunk, tag_column=tag_column
        )
