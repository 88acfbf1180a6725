"""Streaming readers: files in chunks of rows, ready for ``partial_fit``.

Each reader takes a path, ``"-"`` (standard input) or a file object (one in
text mode is read from where its text is, in its encoding), and yields
chunks of exactly ``chunk_size`` rows (the last may be shorter) as
``(X, y, sample_weight)`` tuples (VW text adds each row's
tag): ``X`` a CSR matrix of a width fixed for the whole file, ``y`` the
labels and ``sample_weight`` the weights (None where the file has none).
Text may be plain or compressed with gzip, bz2, xz or zstd, recognised by
its first bytes. The command line (``skftrl train``, ``test``, ``predict``)
reads its files with the same code.

A chunk is yielded whole or not at all: a row that cannot be read raises a
``ValueError`` naming the file, its line (or row and row group) and what is
wrong, before any row of its chunk is yielded.

Read more in the :ref:`User Guide <readers>`.
"""

import contextlib
from numbers import Integral

from ._readers import _sources
from ._readers._csv import (
    NUMERIC,
    csv_chunks,
    first_chunk_kinds,
    first_chunk_labels,
    open_csv_input,
)
from ._readers._csv_values import PYTHON_CATEGORICAL_HINT
from ._readers._hashing import warn_large_values
from ._readers._libsvm import PYTHON_HINTS, read_libsvm
from ._readers._sources import DataError, default_delimiter, source_name
from ._readers._spec import CsvSpec, LibsvmSpec
from ._readers._vw import check_interactions, read_vw
from ._sklearn_compat import Interval, StrOptions, validate_params
from .preprocessing import ColumnHasher

__all__ = ["iter_csv", "iter_libsvm", "iter_parquet", "iter_vw"]

SOURCE = "no_validation"  # a path, "-" or a file object: checked when opened
CHUNK_SIZE = [Interval(Integral, 1, None, closed="left")]
HASH_BITS = [Interval(Integral, 1, 30, closed="both")]
COLUMN = [str, None]
READ_AHEAD = ["boolean"]

# The documentation of read_ahead, the same for every reader.
READ_AHEAD_DOC = """read_ahead : bool, default=True
        Whether the next chunks are read and parsed in a background thread
        while the current one is used (a few chunks ahead at most, so
        memory stays bounded). False reads each chunk in the thread that
        asks for it, and starts no thread. Leaving the loop early (``break``,
        an exception, ``close()``) stops the thread."""


def starter(read_ahead):
    """What starts a reader's chunks: in a thread that reads ahead, or not."""
    return _sources.read_ahead if read_ahead else _sources.read_on_demand


@validate_params(
    {
        "source": SOURCE,
        "n_features": [Interval(Integral, 1, None, closed="left"), None],
        "hash_bits": [*HASH_BITS, None],
        "zero_based": ["boolean"],
        "chunk_size": CHUNK_SIZE,
        "read_ahead": READ_AHEAD,
    },
    prefer_skip_nested_validation=True,
)
def iter_libsvm(
    source,
    *,
    n_features=None,
    hash_bits=None,
    zero_based=False,
    chunk_size=10_000,
    read_ahead=True,
):
    """Stream a LIBSVM (svmlight) file in chunks of rows.

    A line is ``label index:value ...`` with indices in ascending order; ``#``
    starts a comment and ``qid:`` is read and dropped, as
    :func:`~sklearn.datasets.load_svmlight_file` reads them.

    Parameters
    ----------
    source : str, path-like or file object
        The file: a path, ``"-"`` for standard input, or a file object: in
        binary mode, plain text or gzip, bz2, xz or zstd compressed; in text
        mode, its text from where it is.
    n_features : int, default=None
        The width of ``X`` (at least 1): a larger index is an error. Give
        ``n_features`` or ``hash_bits``: a stream cannot be read twice to
        find its largest index.
    hash_bits : int, default=None
        Instead of ``n_features``: every index is taken modulo
        ``2**hash_bits`` (1 to 30), the values of colliding indices in a row
        added up.
    zero_based : bool, default=False
        Whether indices start at 0; by default they start at 1, as LIBSVM
        writes them, and an index 0 is an error.
    chunk_size : int, default=10_000
        Rows a chunk, at least 1.
    {read_ahead}

    Yields
    ------
    X : scipy.sparse.csr_matrix of shape (n_rows, n_features)
        The rows of the chunk (``2**hash_bits`` columns with ``hash_bits``).
    y : ndarray of shape (n_rows,)
        Their labels, float64.
    sample_weight : None
        LIBSVM files have no weights.

    See Also
    --------
    sklearn.datasets.load_svmlight_file : Loads a whole LIBSVM file.

    Examples
    --------
    >>> from importlib.resources import files
    >>> from skftrl import FTRLClassifier
    >>> from skftrl.readers import iter_libsvm
    >>> model = FTRLClassifier()
    >>> a9a = files("skftrl") / "_data" / "a9a.gz"
    >>> for X, y, _ in iter_libsvm(a9a, n_features=123, chunk_size=5000):
    ...     model = model.partial_fit(X, y, classes=[-1, 1])
    >>> model.n_features_in_
    123
    """
    if (n_features is None) == (hash_bits is None):
        raise ValueError(
            "give n_features (the width of X) or hash_bits (indices taken modulo "
            "2**hash_bits), one of them"
        )
    if hash_bits is not None:
        spec = LibsvmSpec(2**hash_bits, zero_based=True, hash_bits=hash_bits)
    else:
        spec = LibsvmSpec(n_features, zero_based=zero_based)
    chunks = read_libsvm(source, chunk_size, spec, hints=PYTHON_HINTS, start=starter(read_ahead))
    for chunk in chunks:
        yield chunk.X, chunk.y, None


TABLE_PARAMETERS = {
    "source": SOURCE,
    "label_column": COLUMN,
    "weight_column": COLUMN,
    "columns": ["array-like", None],
    "hasher": [ColumnHasher, None],
    "chunk_size": CHUNK_SIZE,
    "read_ahead": READ_AHEAD,
}


@validate_params(
    {
        **TABLE_PARAMETERS,
        "parser": [StrOptions({"auto", "pyarrow", "python"})],
        "delimiter": [str, None],
        "column_names": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def iter_csv(
    source,
    *,
    label_column=None,
    weight_column=None,
    columns=None,
    hasher=None,
    chunk_size=10_000,
    parser="auto",
    delimiter=None,
    column_names=None,
    read_ahead=True,
):
    """Stream a CSV file in chunks of rows, its columns hashed.

    The file has a header line (unless ``column_names`` are given), then one
    row a line, its fields separated by ``delimiter`` (a quoted field may
    hold it, quotes doubled, and newlines).
    The feature columns are hashed by ``hasher``, each column's kind decided
    by its first chunk as the command line decides it: a column whose values
    there are all numbers or missing, not all whole numbers, is numeric; a
    column of whole numbers (ids, codes) holds categories (``C1=1005``, as
    from an integer column of pandas or Parquet), unless the hasher names it
    ``numeric``; a column the hasher names ``categorical``, and any other
    column, holds categories. A numeric column with values beyond 10,000 in
    the first chunk is warned of (a ``UserWarning``), as the command line
    warns: such values spoil FTRL's steps. A value is missing
    when it is empty or ``NA``, ``NaN``, ``N/A`` or ``null`` (in any case,
    spaces around ignored).

    With pyarrow installed (``pip install 'skftrl[readers]'``), the text is
    parsed by pyarrow, faster than by Python's :mod:`csv` module (see
    :ref:`bench-readers`); the rows are the same either way.

    Parameters
    ----------
    source : str, path-like or file object
        The file: a path, ``"-"`` for standard input, or a file object: in
        binary mode, plain text or gzip, bz2, xz or zstd compressed; in text
        mode, its text from where it is.
    label_column : str, default=None
        The labels' column: numbers when every label of the first chunk is a
        number, else strings. None reads no labels (``y`` is None).
    weight_column : str, default=None
        The sample weights' column (numbers >= 0), read with the labels.
    columns : list of str, default=None
        The feature columns (neither the label nor the weights); by default
        every column but the label and the weights.
    hasher : ColumnHasher, default=None
        What hashes the feature columns (its ``hash_bits``, ``categorical``,
        ``numeric`` and ``interactions``); by default ``ColumnHasher()``.
    chunk_size : int, default=10_000
        Rows a chunk, at least 1.
    parser : {"auto", "pyarrow", "python"}, default="auto"
        What parses the text: pyarrow where it is installed (``"auto"``),
        pyarrow (``"pyarrow"``, an ImportError without it) or Python's
        :mod:`csv` module (``"python"``).
    delimiter : str, default=None
        The character between fields (``"\\t"`` for a tab); by default a tab
        in a file whose name ends in ``.tsv`` (compressed or not), else a
        comma.
    column_names : list of str, default=None
        The names of the columns of a file without a header line, whose
        first line is then a row (as pandas' ``read_csv(names=...)``). A
        file whose first line is these names has a header line: it is
        refused.
    {read_ahead}
        Python's parser (``parser="python"``) reads in the thread that asks,
        either way.

    Yields
    ------
    X : scipy.sparse.csr_matrix of shape (n_rows, 2**hasher.hash_bits)
        The hashed rows of the chunk.
    y : ndarray of shape (n_rows,) or None
        Their labels (float64, or str).
    sample_weight : ndarray of shape (n_rows,) or None
        Their weights.

    Raises
    ------
    ValueError
        Naming the file and the line, at a row that cannot be read, and at
        a row that repeats the header line (files joined with their header
        lines), which would otherwise be read as data.

    See Also
    --------
    ColumnHasher : The hashing of the columns.

    Examples
    --------
    >>> import io
    >>> from skftrl.preprocessing import ColumnHasher
    >>> from skftrl.readers import iter_csv
    >>> text = b"click,site,hour\\n1,news,13\\n0,shop,NA\\n0,news,9\\n"
    >>> hasher = ColumnHasher(hash_bits=8, interactions=[("site", "hour")])
    >>> for X, y, _ in iter_csv(io.BytesIO(text), label_column="click", hasher=hasher):
    ...     print(X.shape, y)
    (3, 256) [1. 0. 0.]
    """
    check_roles(label_column, weight_column, columns)
    hasher = ColumnHasher() if hasher is None else hasher
    hasher.fit()  # its parameters checked
    categorical = [] if hasher.categorical is None else list(hasher.categorical)
    numeric = [] if hasher.numeric is None else list(hasher.numeric)
    if delimiter is None:
        delimiter = default_delimiter(source)
    if column_names is not None:
        column_names = list(column_names)
        if not all(isinstance(name, str) for name in column_names):
            raise ValueError(f"column_names must be strings; got {column_names!r}")
    with contextlib.closing(open_csv_input(source, parser, delimiter, column_names)) as csv_input:
        header = csv_input.header
        for role, column in (("label", label_column), ("weight", weight_column)):
            if column is not None:
                csv_input.position(column, role)
        features = feature_columns(csv_input.path, header, label_column, weight_column, columns)
        # The kinds as the command line finds them: whole numbers are categories
        # unless the hasher names them numeric.
        kinds, rows = first_chunk_kinds(
            csv_input,
            csv_input.row_chunks(chunk_size, starter(read_ahead)),
            lambda _: features,
            categorical,
            numeric,
        )
        # A numeric column holds numbers: a value that is not one is an error at its line.
        kinds = {name: NUMERIC if name in numeric else kind for name, kind in kinds.items()}
        numeric_labels = True
        if label_column is not None:
            first_labels, rows = first_chunk_labels(csv_input, rows, label_column)
            numeric_labels = first_labels is not None
        spec = CsvSpec(
            label_column,
            kinds,
            numeric_labels,
            hasher.hash_bits,
            weight_column,
            [name for name in header if name not in {*features, label_column, weight_column}],
            delimiter,
        )
        labels = label_column is not None
        numeric_columns = {name for name, kind in kinds.items() if kind == NUMERIC}

        def warn(numbers_of, y):
            warn_large_values(
                {name: v for name, v in numbers_of.items() if name in numeric_columns},
                csv_input.path,
            )

        chunks = csv_chunks(
            csv_input,
            rows,
            spec,
            labels,
            on_first_chunk=warn,
            hasher=hasher,
            hint=PYTHON_CATEGORICAL_HINT,
        )
        for chunk in chunks:
            yield chunk.X, chunk.y, chunk.sample_weight


def check_roles(label_column, weight_column, columns):
    """A ValueError where the label, weight and feature columns overlap:
    a column is one of them at most."""
    if weight_column is not None and label_column is None:
        raise ValueError("weight_column is read with the labels: give label_column too")
    if weight_column is not None and weight_column == label_column:
        raise ValueError(f"weight_column and label_column are both {label_column!r}")
    if columns is not None:
        for role, column in (("label", label_column), ("weight", weight_column)):
            if column is not None and column in columns:
                raise ValueError(
                    f"columns holds the {role} column {column!r}: a feature column is "
                    f"neither the label nor the weights"
                )


def feature_columns(path, header, label_column, weight_column, columns):
    """The feature columns: ``columns``, each in the header, or every column
    but the label and the weights."""
    if columns is None:
        return [name for name in header if name not in (label_column, weight_column)]
    columns = list(columns)
    absent = [name for name in columns if name not in header]
    if absent:
        raise DataError(
            path,
            1,
            f"columns: no column {', '.join(map(repr, absent))} in the header "
            f"(the columns are: {', '.join(header)})",
        )
    return columns


@validate_params(TABLE_PARAMETERS, prefer_skip_nested_validation=True)
def iter_parquet(
    source,
    *,
    label_column=None,
    weight_column=None,
    columns=None,
    hasher=None,
    chunk_size=10_000,
    read_ahead=True,
):
    """Stream a Parquet file in chunks of rows, its columns hashed.

    The file is read a row group at a time, and only the columns used. The
    columns' types say what they hold, as on the command line: a float or
    boolean column holds numbers, an integer column categories (ids, codes:
    ``C1=1005``, as from CSV text) unless the hasher names it ``numeric``,
    any other column categories (a column the hasher names ``categorical``
    too); nulls are missing values. A numeric column with values beyond
    10,000 in the first batch is warned of (a ``UserWarning``), as the
    command line warns. Needs pyarrow (``pip install 'skftrl[readers]'``).

    Parameters
    ----------
    source : str, path-like or file object
        The file: a path, ``"-"`` for standard input (read whole: a Parquet
        file describes itself at its end), or a file object opened in binary
        mode.
    label_column : str, default=None
        The labels' column: floats when it is numeric, else strings. None
        reads no labels (``y`` is None).
    weight_column : str, default=None
        The sample weights' column (numbers >= 0).
    columns : list of str, default=None
        The feature columns (neither the label nor the weights); by default
        every column but the label and the weights.
    hasher : ColumnHasher, default=None
        What hashes the feature columns (its ``hash_bits``, ``categorical``,
        ``numeric`` and ``interactions``); by default ``ColumnHasher()``.
    chunk_size : int, default=10_000
        Rows a chunk, at least 1.
    {read_ahead}

    Yields
    ------
    X : scipy.sparse.csr_matrix of shape (n_rows, 2**hasher.hash_bits)
        The hashed rows of the chunk.
    y : ndarray of shape (n_rows,) or None
        Their labels (float64, or str).
    sample_weight : ndarray of shape (n_rows,) or None
        Their weights.

    See Also
    --------
    iter_csv : The same from a CSV file.

    Examples
    --------
    >>> import io
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from skftrl.readers import iter_parquet
    >>> table = pa.table({"click": [1, 0, 0], "site": ["news", "shop", None]})
    >>> file = io.BytesIO()
    >>> pq.write_table(table, file)
    >>> X, y, _ = next(iter_parquet(io.BytesIO(file.getvalue()), label_column="click"))
    >>> X.nnz, y
    (2, array([1., 0., 0.]))
    """
    try:
        from ._readers._parquet import (
            Columns,
            check_column_types,
            is_integer_type,
            open_parquet,
            read_parquet,
        )
    except ImportError:
        raise ImportError("iter_parquet needs pyarrow: pip install 'skftrl[readers]'") from None
    check_roles(label_column, weight_column, columns)
    hasher = ColumnHasher() if hasher is None else hasher
    hasher.fit()  # its parameters checked
    parquet = open_parquet(source)
    name = source_name(source)
    names = parquet.schema_arrow.names
    features = feature_columns(name, names, label_column, weight_column, columns)
    check_column_types(
        parquet, name, features, lambda nested: "of columns=", label_column=label_column
    )
    columns = Columns(features, label_column, weight_column)
    categorical, numeric = set(hasher.categorical or ()), set(hasher.numeric or ())
    schema = parquet.schema_arrow

    def warn(numbers_of, y):
        # The columns of numbers read as numbers: integers only where named numeric.
        warn_large_values(
            {
                field: values
                for field, values in numbers_of.items()
                if field not in categorical
                and (field in numeric or not is_integer_type(schema.field(field).type))
            },
            name,
        )

    chunks = read_parquet(
        parquet, name, hasher, columns, chunk_size, on_first_chunk=warn, start=starter(read_ahead)
    )
    for chunk in chunks:
        yield chunk.X, chunk.y, chunk.sample_weight


@validate_params(
    {
        "source": SOURCE,
        "hash_bits": HASH_BITS,
        "interactions": ["array-like", None],
        "chunk_size": CHUNK_SIZE,
        "read_ahead": READ_AHEAD,
    },
    prefer_skip_nested_validation=True,
)
def iter_vw(source, *, hash_bits=20, interactions=None, chunk_size=10_000, read_ahead=True):
    """Stream a file of Vowpal Wabbit's text format in chunks of rows, hashed.

    A line is ``[label [importance]] ['tag]|namespace[:weight]
    feature[:value] ... |namespace ...``: the common subset of the format.
    The feature ``f`` of the namespace ``ns`` (with its value, 1 without one,
    times the namespace's weight) is hashed as the feature ``ns=f``, as
    :class:`~skftrl.preprocessing.ColumnHasher` hashes a category ``f`` of a
    column ``ns``; features of the default namespace (``| f``) as ``f``. A row
    without a label is read when every row has none (for predictions). What
    differs from Vowpal Wabbit's own hashing is listed in the
    :ref:`User Guide <readers>`.

    Parameters
    ----------
    source : str, path-like or file object
        The file: a path, ``"-"`` for standard input, or a file object: in
        binary mode, plain text or gzip, bz2, xz or zstd compressed; in text
        mode, its text from where it is.
    hash_bits : int, default=20
        ``X`` has ``2**hash_bits`` columns, 1 to 30 bits.
    interactions : list of str, default=None
        Crosses of namespaces, as Vowpal Wabbit's ``-q ab`` and ``--cubic
        abc``: each string names namespaces by their first letters (a space
        for the default namespace), and every feature of a namespace
        starting with ``a`` is crossed with every feature of one starting with
        ``b`` in the same row, the product of their values at a hash of
        theirs.
    chunk_size : int, default=10_000
        Rows a chunk, at least 1.
    {read_ahead}

    Yields
    ------
    X : scipy.sparse.csr_matrix of shape (n_rows, 2**hash_bits)
        The hashed rows of the chunk.
    y : ndarray of shape (n_rows,) or None
        Their labels (float64); None when the file has none.
    sample_weight : ndarray of shape (n_rows,) or None
        Their importance weights (1 where a row has none); None when no row
        of the chunk has one.
    tags : ndarray of shape (n_rows,), dtype object
        Their tags, ``""`` where a row has none.

    Examples
    --------
    >>> import io
    >>> from skftrl.readers import iter_vw
    >>> text = b"1 2.0 'first|user alice |item book price:9.5\\n-1 |user bob\\n"
    >>> chunks = iter_vw(io.BytesIO(text), hash_bits=10, interactions=["ui"])
    >>> X, y, weights, tags = next(chunks)
    >>> X.getnnz(axis=1)  # user, item, price and their two crosses; then user
    array([5, 1], dtype=int32)
    >>> y, weights, tags
    (array([ 1., -1.]), array([2., 1.]), array(['first', ''], dtype=object))
    """
    interactions = check_interactions(interactions)
    chunks = read_vw(source, chunk_size, hash_bits, interactions, None, start=starter(read_ahead))
    for chunk in chunks:
        yield chunk.X, chunk.y, chunk.sample_weight, chunk.tags


for _reader in (iter_csv, iter_libsvm, iter_parquet, iter_vw):
    # str.replace, not format: the docstrings hold braces of their own.
    _reader.__doc__ = _reader.__doc__.replace("{read_ahead}", READ_AHEAD_DOC)
