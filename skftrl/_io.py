"""Streaming readers and model files for the ``skftrl`` command line.

The readers turn a LIBSVM/svmlight or CSV file, plain or gzip-compressed,
into chunks of at most ``chunk_size`` rows: a CSR matrix, the labels, and the
line number of each row, so that every problem can be reported as
``file:line``. Only one chunk is in memory at a time.

A file is read twice when a model is trained on it: :func:`scan_libsvm` or
:func:`scan_csv` first learns what the model must know before its first
``partial_fit`` call (the classes, the width of a LIBSVM file and whether its
indices start at 0 or 1, the kind of each CSV column), then
:func:`read_libsvm` or :func:`read_csv` stream the rows.
"""

import contextlib
import csv
import gzip
import io
import os
import tempfile
import zlib
from itertools import islice
from typing import NamedTuple

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.feature_extraction import FeatureHasher

GZIP_MAGIC = b"\x1f\x8b"

# A classification target with more distinct labels than this is most likely
# a regression target; the scan stops instead of collecting them all.
MAX_CLASSES = 1000

# Names of hashed CSV features kept for `skftrl inspect`: the first distinct
# values of each categorical column, so that memory stays bounded.
MAX_NAMES_PER_COLUMN = 1000

# CSV values that mean "missing" (compared after strip and lower-casing):
# a missing value adds no feature.
MISSING = frozenset({"", "na", "nan", "n/a", "null"})

# Feature indices of a LIBSVM file must fit the 32-bit integers of the parser.
MAX_INDEX = 2**31 - 1

# Identifies the dictionary that `skftrl train` saves.
MODEL_KIND = "skftrl model"


class DataError(Exception):
    """A problem with an input or model file, reported as ``path:line: message``."""

    def __init__(self, path, line, message):
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self):
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class Chunk(NamedTuple):
    """Consecutive rows of a file."""

    X: sp.csr_matrix
    y: np.ndarray  # None when labels are not read
    lines: np.ndarray  # the line number of each row, counted from 1


def data_format(path, requested="auto"):
    """``"csv"`` or ``"libsvm"``: as requested, else from the file name."""
    if requested != "auto":
        return requested
    name = os.fspath(path).lower()
    return "csv" if name.endswith((".csv", ".csv.gz")) else "libsvm"


def open_binary(path):
    """Open ``path`` for reading bytes, decompressing it if it is gzip data."""
    try:
        with open(path, "rb") as file:
            magic = file.read(2)
        return gzip.open(path, "rb") if magic == GZIP_MAGIC else open(path, "rb")
    except OSError as error:
        raise DataError(path, None, error.strerror or str(error)) from None


class LineBlocks:
    """The lines of a file, read in blocks, numbered from 1."""

    def __init__(self, path):
        self.path = path
        self.file = open_binary(path)
        self.next_line = 1

    def read(self, n_lines):
        """Up to ``n_lines`` lines (bytes) and the number of the first one."""
        try:
            lines = list(islice(self.file, n_lines))
        except (OSError, EOFError, zlib.error) as error:
            raise DataError(
                self.path, None, f"unreadable after line {self.next_line - 1}: {error}"
            ) from None
        first_line = self.next_line
        self.next_line += len(lines)
        return first_line, lines

    def close(self):
        self.file.close()


def row_at(X, position):
    """The row of ``X`` holding the stored value at ``position``."""
    return int(np.searchsorted(X.indptr, position, side="right") - 1)


# ------------------------------------------------------------------- LIBSVM
def libsvm_line_problem(line, labels_required):
    """What is wrong with one LIBSVM line, or None if it is well formed.

    Mirrors what scikit-learn's ``load_svmlight_file`` accepts: an optional
    ``# comment``, a label (optional when ``labels_required`` is False, as for
    prediction), an optional ``qid:<id>``, then ``index:value`` pairs with
    indices in ascending order, without repeats.
    """
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return None
    if labels_required or b":" not in tokens[0]:
        label, tokens = tokens[0], tokens[1:]
        # Where labels are optional, multilabel lines ("1,3") are accepted too.
        try:
            for part in [label] if labels_required else label.split(b","):
                float(part)
        except ValueError:
            return f"the label {label.decode(errors='replace')!r} is not a number"
    if tokens and tokens[0].startswith(b"qid"):
        if b":" not in tokens[0]:
            return f"{tokens[0].decode(errors='replace')!r} is not qid:<id>"
        tokens = tokens[1:]
    previous = -1
    for token in tokens:
        text = token.decode(errors="replace")
        index, colon, value = token.partition(b":")
        if not colon:
            return f"{text!r} is not index:value"
        try:
            index = int(index)
        except ValueError:
            return f"the feature index in {text!r} is not an integer"
        if not 0 <= index <= MAX_INDEX:
            return f"the feature index in {text!r} is outside [0, {MAX_INDEX}]"
        if index <= previous:
            return (
                f"feature index {index} after {previous}: indices must be in "
                "ascending order, without repeats"
            )
        try:
            float(value)
        except ValueError:
            return f"the feature value in {text!r} is not a number"
        previous = index
    return None


def has_data(line):
    """Whether a LIBSVM line holds a row (not blank, not only a comment)."""
    return bool(line.split(b"#", 1)[0].split())


def parse_libsvm_lines(path, first_line, lines, labels_required=True):
    """Parse consecutive LIBSVM lines; indices are returned as written.

    Returns a Chunk whose ``X`` is as wide as its largest index + 1, with
    ``y`` None when ``labels_required`` is False (labels are then optional
    and ignored). Raises DataError naming the first malformed line.
    """
    text = b"".join(lines)
    try:
        # scikit-learn's compiled parser; multilabel mode accepts lines
        # without a label, which prediction allows.
        X, y = load_svmlight_file(
            io.BytesIO(text),
            dtype=np.float64,
            zero_based=True,
            multilabel=not labels_required,
        )
    except (ValueError, OverflowError, TypeError) as error:
        # Rare: find the line, with the slower parser that explains it.
        for number, line in enumerate(lines, start=first_line):
            problem = libsvm_line_problem(line, labels_required)
            if problem is not None:
                raise DataError(path, number, problem) from None
        last_line = first_line + len(lines) - 1
        raise DataError(path, first_line, f"in lines {first_line}-{last_line}: {error}") from None
    if X.shape[0] == len(lines):
        line_numbers = np.arange(first_line, first_line + len(lines))
    else:  # blank or comment lines hold no row
        line_numbers = np.array(
            [n for n, line in enumerate(lines, start=first_line) if has_data(line)],
            dtype=np.int64,
        )
    y = np.asarray(y, dtype=np.float64) if labels_required else None
    chunk = Chunk(X, y, line_numbers)
    check_finite(path, chunk)
    return chunk


def check_finite(path, chunk):
    """Raise DataError at the first row with a non-finite value or label."""
    bad = np.flatnonzero(~np.isfinite(chunk.X.data))
    if bad.size:
        line = int(chunk.lines[row_at(chunk.X, bad[0])])
        raise DataError(path, line, f"the feature value {chunk.X.data[bad[0]]} is not finite")
    if chunk.y is not None:
        bad = np.flatnonzero(~np.isfinite(chunk.y))
        if bad.size:
            raise DataError(
                path, int(chunk.lines[bad[0]]), f"the label {chunk.y[bad[0]]} is not finite"
            )


def libsvm_row_chunks(path, chunk_size, labels_required=True):
    """Chunks of exactly ``chunk_size`` rows (the last may be shorter), indices as written."""
    with contextlib.closing(LineBlocks(path)) as blocks:
        while True:
            pieces, n_rows = [], 0
            while n_rows < chunk_size:
                first_line, lines = blocks.read(chunk_size - n_rows)
                if not lines:
                    break
                piece = parse_libsvm_lines(path, first_line, lines, labels_required)
                if piece.X.shape[0]:
                    pieces.append(piece)
                    n_rows += piece.X.shape[0]
            if not pieces:
                return
            if len(pieces) == 1:
                yield pieces[0]
            else:  # blank or comment lines made a block short of rows
                width = max(piece.X.shape[1] for piece in pieces)
                X = sp.vstack(
                    [
                        sp.csr_matrix(piece.X, shape=(piece.X.shape[0], width))
                        for piece in pieces
                    ],
                    format="csr",
                )
                yield Chunk(
                    X,
                    None if pieces[0].y is None else np.concatenate([p.y for p in pieces]),
                    np.concatenate([piece.lines for piece in pieces]),
                )
            if n_rows < chunk_size:
                return


class LibsvmScan(NamedTuple):
    """What a first pass over a LIBSVM training file found."""

    n_rows: int
    n_features: int  # the width a model needs: the largest index + 1 - offset
    zero_based: bool  # whether some index is 0 (as load_svmlight_file's "auto")
    largest_index: int  # as written in the file; -1 if there is no feature
    largest_index_line: int  # where it first appears
    labels: np.ndarray  # the sorted distinct labels (classification), else None


def scan_libsvm(path, chunk_size, collect_labels, progress=None):
    """A first streaming pass over a LIBSVM training file.

    ``collect_labels`` gathers the distinct labels (at most MAX_CLASSES);
    ``progress(rows)`` is called after each chunk.
    """
    n_rows, largest, largest_line, zero_based = 0, -1, 0, False
    labels = set()
    for chunk in libsvm_row_chunks(path, chunk_size):
        if chunk.X.nnz:
            position = int(np.argmax(chunk.X.indices))
            if chunk.X.indices[position] > largest:
                largest = int(chunk.X.indices[position])
                largest_line = int(chunk.lines[row_at(chunk.X, position)])
            zero_based = zero_based or bool(chunk.X.indices.min() == 0)
        if collect_labels:
            collect_classes(path, int(chunk.lines[-1]), np.unique(chunk.y).tolist(), labels)
        n_rows += chunk.X.shape[0]
        if progress is not None:
            progress(n_rows)
    if n_rows == 0:
        raise DataError(path, None, "no data rows")
    offset = 0 if zero_based else 1
    return LibsvmScan(
        n_rows,
        max(largest + 1 - offset, 1),
        zero_based,
        largest,
        largest_line,
        np.array(sorted(labels)) if collect_labels else None,
    )


def collect_classes(path, line, chunk_labels, labels):
    """Add the distinct labels of a chunk ending at ``line`` to ``labels``."""
    labels.update(chunk_labels)
    if len(labels) > MAX_CLASSES:
        raise DataError(
            path,
            line,
            f"more than {MAX_CLASSES} distinct labels by this line: is this "
            "a regression target? (use --task regress)",
        )


def read_libsvm(path, chunk_size, n_features, zero_based, labels_required=True):
    """Chunks of a LIBSVM file for a model ``n_features`` wide.

    Indices are made zero-based; an index the model does not have is an
    error naming its line.
    """
    offset = 0 if zero_based else 1
    for chunk in libsvm_row_chunks(path, chunk_size, labels_required):
        X = chunk.X
        if X.nnz:
            if not zero_based and X.indices.min() == 0:
                position = int(np.argmin(X.indices))
                raise DataError(
                    path,
                    int(chunk.lines[row_at(X, position)]),
                    "feature index 0, but this model's indices start at 1 "
                    "(its training file had no index 0)",
                )
            position = int(np.argmax(X.indices))
            if X.indices[position] - offset >= n_features:
                raise DataError(
                    path,
                    int(chunk.lines[row_at(X, position)]),
                    f"feature index {X.indices[position]} is beyond the model's "
                    f"{n_features} features (indices {offset} to {n_features - 1 + offset}; "
                    "train with --n-features for a wider model)",
                )
        indices = X.indices - offset if offset else X.indices
        X = sp.csr_matrix((X.data, indices, X.indptr), shape=(X.shape[0], n_features))
        yield Chunk(X, chunk.y, chunk.lines)


# ---------------------------------------------------------------------- CSV
class CsvRows:
    """The header and rows of a CSV file, with the line number of each row."""

    def __init__(self, path):
        self.path = path
        self.binary = open_binary(path)
        self.text = io.TextIOWrapper(self.binary, encoding="utf-8", newline="")
        self.reader = csv.reader(self.text)
        try:
            self.header = self._next_row()
            if self.header is None:
                raise DataError(path, 1, "empty file: no header line")
            repeated = sorted({name for name in self.header if self.header.count(name) > 1})
            if repeated:
                raise DataError(path, 1, f"repeated column names in the header: {repeated}")
        except DataError:
            self.close()
            raise

    def _next_row(self):
        """The next non-blank row, or None at the end of the file."""
        try:
            for row in self.reader:
                if row:
                    return row
        except (csv.Error, UnicodeDecodeError, OSError, EOFError, zlib.error) as error:
            raise DataError(self.path, self.reader.line_num + 1, str(error)) from None
        return None

    def chunks(self, chunk_size):
        """Lists of at most ``chunk_size`` rows and their line numbers."""
        reader, width = self.reader, len(self.header)
        rows, lines = [], []
        try:
            for row in reader:
                if len(row) != width:
                    if not row:  # a blank line
                        continue
                    raise DataError(
                        self.path,
                        reader.line_num,
                        f"{len(row)} fields, but the header has {width}",
                    )
                rows.append(row)
                lines.append(reader.line_num)
                if len(rows) == chunk_size:
                    yield rows, np.array(lines, dtype=np.int64)
                    rows, lines = [], []
        except (csv.Error, UnicodeDecodeError, OSError, EOFError, zlib.error) as error:
            raise DataError(self.path, reader.line_num + 1, str(error)) from None
        if rows:
            yield rows, np.array(lines, dtype=np.int64)

    def position(self, column, role):
        """Where ``column`` is in the header; DataError if it is not there."""
        if column not in self.header:
            raise DataError(
                self.path,
                1,
                f"no {role} column {column!r} in the header (the columns are: "
                f"{', '.join(self.header)})",
            )
        return self.header.index(column)

    def close(self):
        self.text.close()


def is_missing(value):
    return value.strip().lower() in MISSING


def parse_numbers(values):
    """Floats of CSV values, NaN for missing ones; None if one is not a number."""
    try:
        numbers = np.array(values, dtype=np.float64)  # numpy parses the strings
    except ValueError:  # missing markers such as "" or "NA", or words
        try:
            numbers = np.array(
                [np.nan if is_missing(value) else float(value) for value in values]
            )
        except ValueError:
            return None
    return numbers


class CsvScan(NamedTuple):
    """What a first pass over a CSV training file found."""

    n_rows: int
    layout: dict  # how to read files like it: see read_csv
    labels: np.ndarray  # the sorted distinct labels (classification), else None


def scan_csv(path, label_column, hash_bits, chunk_size, classify, progress=None):
    """A first streaming pass over a CSV training file.

    A column is numeric when every value that is not missing is a number,
    else categorical. For classification the labels are numbers when every
    label is, else strings; for regression every label must be a number.
    ``progress(rows)`` is called after each chunk.
    """
    with contextlib.closing(CsvRows(path)) as source:
        label_position = source.position(label_column, "label")
        columns = [name for name in source.header if name != label_column]
        numeric = dict.fromkeys(columns, True)
        labels, numeric_labels, n_rows = set(), True, 0
        for rows, lines in source.chunks(chunk_size):
            values = list(zip(*rows))
            for position, name in enumerate(source.header):
                if name != label_column and numeric[name]:
                    numeric[name] = parse_numbers(values[position]) is not None
            label_values = values[label_position]
            check_labels_present(path, label_values, lines)
            if classify:
                numeric_labels = numeric_labels and parse_numbers(label_values) is not None
                collect_classes(path, int(lines[-1]), set(label_values), labels)
            else:
                parse_targets(path, label_values, lines)
            n_rows += len(rows)
            if progress is not None:
                progress(n_rows)
    if n_rows == 0:
        raise DataError(path, None, "no data rows after the header")
    classes = None
    if classify and numeric_labels:
        classes = np.unique(np.array(sorted(labels), dtype=np.float64))
    elif classify:
        classes = np.array(sorted(labels))
    layout = {
        "label_column": label_column,
        "kinds": {name: "numeric" if numeric[name] else "categorical" for name in columns},
        "numeric_labels": numeric_labels,
        "hash_bits": hash_bits,
    }
    return CsvScan(n_rows, layout, classes)


def check_labels_present(path, label_values, lines):
    """DataError at the first row whose label is missing."""
    if any(is_missing(value) for value in set(label_values)):
        for value, line in zip(label_values, lines):
            if is_missing(value):
                raise DataError(path, int(line), f"missing label {value!r}")


def first_non_number(values, lines, missing_allowed):
    """The first value that is not a finite number (or missing, if allowed), and its line."""
    for value, line in zip(values, lines):
        if missing_allowed and is_missing(value):
            continue
        try:
            number = float(value)
        except ValueError:
            return value, int(line)
        if not (np.isfinite(number) or (missing_allowed and np.isnan(number))):
            return value, int(line)
    raise ValueError("every value is a number")


def parse_targets(path, label_values, lines):
    """The labels as floats; DataError at the first one that is not a number."""
    targets = parse_numbers(label_values)
    if targets is None or not np.all(np.isfinite(targets)):
        value, line = first_non_number(label_values, lines, missing_allowed=False)
        raise DataError(path, line, f"the label {value!r} is not a finite number")
    return targets


def hashed_index(hasher, names):
    """The column of each name in the hashed feature space, as FeatureHasher puts it."""
    if not names:
        return np.zeros(0, dtype=np.int64)
    return hasher.transform([[name] for name in names]).indices.astype(np.int64)


class FeatureNames:
    """The names of hashed features, at most MAX_NAMES_PER_COLUMN a column."""

    def __init__(self):
        self.by_index = {}  # hashed index -> list of names
        self.count = {}  # column -> names recorded

    def add(self, column, names, indices):
        for name, index in zip(names, indices):
            if not self.wants(column):
                return
            names_here = self.by_index.setdefault(int(index), [])
            if name not in names_here:
                names_here.append(name)
                self.count[column] = self.count.get(column, 0) + 1

    def wants(self, column):
        return self.count.get(column, 0) < MAX_NAMES_PER_COLUMN


def read_csv(path, layout, chunk_size, labels="required", names=None):
    """Chunks of a CSV file, read as ``layout`` (from :func:`scan_csv`) says.

    ``layout`` holds ``label_column``; ``kinds``, the feature columns, each
    ``"numeric"`` (its value at the hashed index of the column's name) or
    ``"categorical"`` (1 at the hashed index of ``"column=value"``);
    ``numeric_labels``, whether labels are floats (else strings); and
    ``hash_bits``, the width ``2**hash_bits``. Hashing is FeatureHasher's,
    without alternate signs, so that a weight reads as the feature's effect.

    ``labels="required"`` reads the label column, ``"ignored"`` skips it if
    it is there. Every feature column of the layout must be in the header,
    and no other column. ``names`` (a FeatureNames) records the names of
    hashed features.
    """
    hasher = FeatureHasher(
        n_features=2 ** layout["hash_bits"], input_type="string", alternate_sign=False
    )
    kinds = layout["kinds"]
    label_column = layout["label_column"]
    numeric_names = [name for name, kind in kinds.items() if kind == "numeric"]
    numeric_index = dict(zip(numeric_names, hashed_index(hasher, numeric_names)))
    if names is not None:
        for name in numeric_names:
            names.add(name, [name], [numeric_index[name]])
    with contextlib.closing(CsvRows(path)) as source:
        positions = {name: source.position(name, "feature") for name in kinds}
        label_position = None
        if labels == "required":
            label_position = source.position(label_column, "label")
        unknown = [name for name in source.header if name not in kinds and name != label_column]
        if unknown:
            raise DataError(path, 1, f"columns the model was not trained on: {unknown}")
        for rows, lines in source.chunks(chunk_size):
            values = list(zip(*rows))
            row_ids, column_ids, data = [], [], []
            for name, kind in kinds.items():
                column_values = values[positions[name]]
                if kind == "numeric":
                    rows_kept, numbers = numeric_features(path, name, column_values, lines)
                    row_ids.append(rows_kept)
                    column_ids.append(np.full(rows_kept.size, numeric_index[name]))
                    data.append(numbers)
                else:
                    rows_kept, indices = categorical_features(
                        name, column_values, hasher, names
                    )
                    row_ids.append(rows_kept)
                    column_ids.append(indices)
                    data.append(np.ones(rows_kept.size))
            # Summing duplicates adds up hash collisions, as FeatureHasher does.
            X = sp.csr_matrix(
                (
                    np.concatenate(data) if data else np.zeros(0),
                    (
                        np.concatenate(row_ids) if row_ids else np.zeros(0, np.int64),
                        np.concatenate(column_ids) if column_ids else np.zeros(0, np.int64),
                    ),
                ),
                shape=(len(rows), hasher.n_features),
            )
            X.sum_duplicates()
            y = None
            if label_position is not None:
                label_values = values[label_position]
                check_labels_present(path, label_values, lines)
                if layout["numeric_labels"]:
                    y = parse_targets(path, label_values, lines)
                else:
                    y = np.array(label_values)
            yield Chunk(X, y, lines)


def numeric_features(path, column, values, lines):
    """Rows with a non-zero value in a numeric column, and those values."""
    numbers = parse_numbers(values)
    if numbers is None or np.isinf(numbers).any():
        value, line = first_non_number(values, lines, missing_allowed=True)
        raise DataError(path, line, f"column {column!r} holds numbers, but this value is {value!r}")
    # NaN is a missing value; a zero adds nothing to a linear model.
    rows = np.flatnonzero(~np.isnan(numbers) & (numbers != 0))
    return rows, numbers[rows]


def categorical_features(column, values, hasher, names):
    """Rows with a value in a categorical column, and the hashed index of each."""
    distinct = list(dict.fromkeys(values))
    code_of = {value: code for code, value in enumerate(distinct)}
    row_codes = np.fromiter(map(code_of.__getitem__, values), dtype=np.intp, count=len(values))
    present = np.array([not is_missing(value) for value in distinct], dtype=bool)
    feature_names = [f"{column}={value}" for value in distinct]
    indices = np.full(len(distinct), -1, dtype=np.int64)
    indices[present] = hashed_index(hasher, [n for n, p in zip(feature_names, present) if p])
    if names is not None and names.wants(column):
        names.add(column, [n for n, p in zip(feature_names, present) if p], indices[present])
    row_indices = indices[row_codes]
    rows = np.flatnonzero(row_indices >= 0)
    return rows, row_indices[rows]


# -------------------------------------------------------------- model files
@contextlib.contextmanager
def atomic_output(path, mode="wb"):
    """A file that appears at ``path`` only if the ``with`` block succeeds.

    It is written to a temporary file in the same directory, then renamed
    over ``path`` (atomic on POSIX and Windows); on any error, or an
    interruption, the temporary file is removed and ``path`` is untouched.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
        )
    except OSError as error:
        raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, mode) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        # mkstemp makes the file private; give it the permissions of a new file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        try:
            os.replace(temporary, path)
        except OSError as error:
            raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def load_model(path):
    """The dictionary saved by ``skftrl train``; DataError if it is not one.

    Like any pickle, a model file can run code when loaded: load only files
    you trust.
    """
    if not os.path.exists(path):
        raise DataError(path, None, "No such file or directory")
    try:
        model = joblib.load(path)
    except Exception as error:  # a corrupt file fails in many ways
        raise DataError(
            path, None, f"not a readable skftrl model file ({type(error).__name__}: {error})"
        ) from None
    if not isinstance(model, dict) or model.get("kind") != MODEL_KIND:
        raise DataError(path, None, "not a skftrl model file (made by skftrl train)")
    return model
