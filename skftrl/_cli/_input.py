"""What ``skftrl train`` reads: the input spec and the classes, resolved once a run.

The options, or the model continued with ``-i``, tell what they can. Where
that is not enough, a first pass over the file (a scan) finds the rest: the
classes, the width of LIBSVM data, the kind of each CSV column. A CSV file
read in one pass (regression, or ``--classes``) takes the kinds of its first
chunk's values instead, and its first pass goes on from that chunk.

A CSV classification file whose first chunk's labels are 0 and 1 (or -1
and 1) is read in one pass too, its classes and kinds guessed from that
chunk (``TrainingInput.guessed``): when a later row contradicts the guess
(another label, a word in a column guessed numeric), the run starts over
with a scan (see ``_train``). A file that bears the guess out gives the
model a scan would have given: the scan would have found those classes and
kinds.
"""

import contextlib
import os
import time
from typing import NamedTuple, Optional

import numpy as np

from .._readers._cache import ChunkCache
from .._readers._chunks import collect_classes
from .._readers._csv import (
    CATEGORICAL,
    NUMERIC,
    feature_columns,
    first_chunk_kinds,
    first_chunk_labels,
    ignored_columns,
    open_csv_input,
    scan_csv,
)
from .._readers._hashing import FeatureNames
from .._readers._libsvm import scan_libsvm
from .._readers._sources import DataError, default_delimiter, is_regular_file
from .._readers._spec import CsvSpec, InputSpec, LibsvmSpec, ParquetSpec, VwSpec
from ._column_warnings import check_id_columns
from ._estimators import check_memory, format_label, numba_compiling
from ._parser import UsageError
from ._progress import Progress, duration

# CSV features are hashed into 2**DEFAULT_HASH_BITS columns unless --hash-bits.
DEFAULT_HASH_BITS = 20

# How messages name the formats.
FORMAT_NAMES = {"libsvm": "LIBSVM", "csv": "CSV", "vw": "VW text", "parquet": "Parquet"}


class TrainingInput(NamedTuple):
    """The input of a training run, resolved."""

    spec: InputSpec
    classes: Optional[np.ndarray]  # None for regression
    n_rows: Optional[int]  # the rows a scan counted; None without a scan
    names: Optional[FeatureNames]  # CSV: the names of the hashed features
    # LIBSVM after a scan: the chunks it read, indices as written (None with --no-cache).
    scan_cache: Optional[ChunkCache] = None
    # CSV without a scan: the open input and its rows, from the first (see open_csv).
    csv_rows: Optional[tuple] = None
    # The seconds of a scan run beside other work (see _reading), else None.
    scan_seconds: Optional[float] = None
    # CSV: the classes and kinds guessed from the first chunk (see the module).
    guessed: bool = False


def training_reading(args):
    """The options of ``spec.chunks`` that a training run's flags ask for, for
    its file and its --test file."""
    reading = {"drop_extra": True} if args.drop_extra_features else {}
    if args.column_names is not None:
        reading["column_names"] = args.column_names
    return reading


def check_format_options(args, data_kind):
    """Options that belong to another format are mistakes, not silently ignored."""
    # Options of tables of named columns (CSV and Parquet), and of CSV text.
    table_options = {
        "--label-column": args.label_column,
        "--weight-column": args.weight_column,
        "--ignore": args.ignore,
        "--keep": args.keep,
        "--categorical": args.categorical,
        "--numeric": args.numeric,
    }
    text_options = {"--delimiter": args.delimiter, "--column-names": args.column_names}
    name = FORMAT_NAMES[data_kind]
    refused = {"csv": {}, "parquet": text_options}.get(data_kind, table_options | text_options)
    tables = data_kind in ("csv", "parquet")
    if tables and args.label_column is None and args.initial_model is None:
        raise UsageError(f"{args.data} is read as {name}, which needs --label-column NAME")
    given = [option for option, value in refused.items() if value is not None]
    if given:
        raise UsageError(
            f"{args.data} is read as {name}, which takes no {', '.join(given)} "
            "(use --format csv for CSV data)"
        )
    if args.interactions and data_kind != "vw":
        raise UsageError(
            "-q, --cubic and --interactions cross the namespaces of VW text; "
            f"{args.data} is read as {name} (--factors K learns every pair's interaction)"
        )
    if data_kind != "libsvm":
        if args.n_features is not None or args.zero_based or args.drop_extra_features:
            raise UsageError(
                "--n-features, --zero-based and --drop-extra-features are for LIBSVM data; "
                f"{name} is hashed (--hash-bits)"
            )
    elif args.n_features is not None and args.hash_bits is not None:
        raise UsageError("--n-features or --hash-bits, not both")


def resolve_input(
    args, data_kind, initial, initial_spec, estimator, report, resources, guess=True
):
    """The :class:`TrainingInput` of a run, by a scan only where one is needed.

    ``initial`` and ``initial_spec`` are the model continued with ``-i`` and
    its input spec (None without ``-i``); what the run opens is closed by
    ``resources`` (an ExitStack). Without ``guess``, a CSV file's classes and
    kinds are not guessed from its first chunk (see the module).
    """
    if initial is not None:
        if initial_spec.format != data_kind:
            raise UsageError(
                f"--initial-model {args.initial_model} reads {initial_spec.format.upper()} "
                f"data, but {args.data} is read as {data_kind.upper()}"
            )
        check_options_agree(args, initial, initial_spec)
        names = None
        if initial_spec.format in ("csv", "parquet"):
            existing = getattr(initial, "hashed_feature_names_", None)
            names = FeatureNames(dict(existing) if existing else None)
        return TrainingInput(initial_spec, getattr(initial, "classes_", None), None, names)
    classes = numeric_classes = None
    if args.classes is not None:
        if args.task != "classify":
            raise UsageError("--classes is for --task classify")
        classes, numeric_classes = parse_classes(args.classes)
    began = time.perf_counter()
    with numba_compiling() as compiling:
        if data_kind == "libsvm":
            found = libsvm_input(args, classes, numeric_classes, estimator, resources)
        elif data_kind == "vw":
            found = vw_input(args, classes, numeric_classes, estimator, resources)
        elif data_kind == "parquet":
            found = parquet_input(args, classes, numeric_classes, estimator)
        else:
            found = csv_input(args, classes, numeric_classes, resources, guess)
    if found.classes is not None and len(found.classes) < 2:
        raise DataError(
            args.data,
            None,
            f"every label is {format_label(found.classes[0])}: a classifier needs two "
            "classes or more",
        )
    check_id_columns(args, found.spec, report)
    if found.n_rows is not None:
        seconds = found.scan_seconds or time.perf_counter() - began
        # A first run's scan is mostly numba compiling the reader: said, so
        # that it is not taken for the time the scan takes.
        compiled = (
            f" (of which numba compiling {duration(compiling.duration)})"
            if compiling is not None and compiling.done
            else ""
        )
        report.line(
            f"scanned {args.data} in {duration(seconds)}{compiled}: "
            f"{found.n_rows:,} rows; "
            + described(found.spec)
            + (
                f"; classes {' '.join(map(format_label, found.classes))}"
                if args.task == "classify"
                else ""
            )
        )
    if found.guessed:
        report.line(
            f"reading {args.data} in one pass, as its first rows show it: "
            + described(found.spec)
            + f"; classes {' '.join(map(format_label, found.classes))}"
        )
    if found.spec.format == "libsvm":
        check_memory(estimator, found.spec.n_features, found.classes)
    return found


def described(spec):
    """The input ``spec`` described, with the names of a CSV file's
    categorical columns (the first MAX_NAMED of them)."""
    text = spec.describe()
    if spec.format != "csv":
        return text
    names = [name for name, kind in spec.kinds.items() if kind == CATEGORICAL]
    if not names:
        return text
    listed = ", ".join(names[:MAX_NAMED])
    if len(names) > MAX_NAMED:
        listed += f" and {len(names) - MAX_NAMED:,} more"
    return f"{text} (categorical: {listed})"


# The most categorical columns a run's summary names.
MAX_NAMED = 12


def kinds_conflict(args, spec):
    """``--categorical A`` or ``--numeric A`` where the continued model (its
    CSV or Parquet ``spec``) reads A otherwise, or not at all; else None."""
    named = {
        "--categorical": column_list(args.categorical) or [],
        "--numeric": column_list(args.numeric) or [],
    }
    if not any(named.values()):
        return None
    if spec.format == "csv":
        read_as = spec.kinds
    else:  # a Parquet column the model does not list is read as its type says
        read_as = {name: "categorical" for name in spec.categorical}
        if is_regular_file(args.data):
            from .._readers._parquet import holds_numbers, open_parquet

            with contextlib.closing(open_parquet(args.data)) as parquet:
                schema = parquet.schema_arrow
                for name in spec.features:
                    if name not in read_as and name in schema.names:
                        numbers = holds_numbers(schema.field(name).type)
                        read_as[name] = "numeric" if numbers else "categorical"
    columns = spec.kinds if spec.format == "csv" else spec.features
    for option, names in named.items():
        kind = option[2:]
        for name in names:
            # (A Parquet column's type is unknown when the data is a stream.)
            if name not in columns or read_as.get(name, kind) != kind:
                return f"{option} {name}"
    return None


def check_options_agree(args, initial, spec):
    """The reading options and the classes given with ``-i`` must be the
    continued model's (``spec`` is how it reads files): it reads data as it
    was trained to, and ignoring an option that says otherwise would be silent."""
    model = f"--initial-model {args.initial_model}"
    conflict = None
    if args.n_features is not None and (
        spec.hash_bits is not None or args.n_features != spec.n_features
    ):
        conflict = f"--n-features {args.n_features}"
    elif args.hash_bits is not None and args.hash_bits != spec.hash_bits:
        conflict = f"--hash-bits {args.hash_bits}"
    elif args.zero_based and not spec.zero_based:
        conflict = "--zero-based"
    elif args.interactions and tuple(args.interactions) != spec.interactions:
        conflict = " ".join(f"-q {letters}" for letters in args.interactions)
    elif args.delimiter is not None and args.delimiter != getattr(spec, "delimiter", None):
        conflict = f"--delimiter {args.delimiter!r}"
    else:
        conflict = kinds_conflict(args, spec)
    if conflict is not None:
        raise UsageError(
            f"{conflict} conflicts with {model}, which reads {spec.describe()}: a model "
            "continued with -i reads data as it was trained to (leave the option out)"
        )
    if args.classes is None:
        return
    classes = getattr(initial, "classes_", None)
    if classes is None:
        raise UsageError("--classes is for --task classify")
    if not same_classes(args.classes, classes):
        raise UsageError(
            f"--classes {args.classes} conflicts with {model}, whose classes are "
            f"{', '.join(map(format_label, classes))} (leave the option out)"
        )


def same_classes(text, classes):
    """Whether ``--classes`` (``text``) names the classes ``classes`` of a model."""
    given, numeric = parse_classes(text)
    if np.asarray(classes).dtype.kind in "biuf":
        return numeric and np.array_equal(given, np.asarray(classes, dtype=np.float64))
    return sorted(name.strip() for name in text.split(",")) == sorted(map(str, classes))


def parse_classes(text):
    """``--classes``: numbers when every one is a number, else strings."""
    names = [name.strip() for name in text.split(",")]
    if len(names) < 2 or "" in names or len(set(names)) < len(names):
        raise UsageError(f"--classes needs two distinct labels or more, comma-separated: {text!r}")
    try:
        return np.unique(np.array(names, dtype=np.float64)), True
    except ValueError:
        return np.array(sorted(names)), False


def libsvm_input(args, classes, numeric_classes, estimator, resources):
    """A LIBSVM input: its width from --hash-bits or --n-features, else from a
    scan, which also finds the classes (and caches its chunks)."""
    if args.classes is not None and not numeric_classes:
        raise UsageError(f"LIBSVM labels are numbers: --classes {args.classes}")
    spec = None
    if args.hash_bits is not None:
        spec = LibsvmSpec(2**args.hash_bits, zero_based=True, hash_bits=args.hash_bits)
    elif args.n_features is not None:
        spec = LibsvmSpec(args.n_features, zero_based=args.zero_based)
    if spec is not None:
        check_memory(estimator, spec.n_features, classes)
    collect_labels = args.task == "classify" and classes is None
    if spec is not None and not collect_labels:
        return TrainingInput(spec, classes, None, None)
    if not is_regular_file(args.data):
        raise stream_error(args, width_missing=spec is None)
    early = args.early
    scan = early.scan() if early is not None else None
    scan_seconds = early.scan_seconds if scan is not None else None
    cache = None
    if scan is None:  # a form the compiled scan leaves to the parser, or no numba
        if not args.no_cache:
            cache = resources.enter_context(contextlib.closing(ChunkCache()))
        chunks = None if early is None else early.chunks()
        with scan_progress(args) as progress:
            scan = scan_libsvm(args.data, args.chunk_size, collect_labels, progress, cache, chunks)
    if spec is None:
        zero_based = scan.zero_based or args.zero_based
        # The scan's width counts from 1 in a file without an index 0: read
        # from 0 (--zero-based), its largest index needs one column more.
        extra = int(zero_based and not scan.zero_based and scan.largest_index >= 0)
        spec = LibsvmSpec(scan.n_features + extra, zero_based=zero_based)
    elif spec.hash_bits is None and scan.largest_index >= 0 and not args.drop_extra_features:
        offset = 0 if spec.zero_based else 1
        if scan.largest_index + 1 - offset > spec.n_features:
            raise DataError(
                args.data,
                scan.largest_index_line,
                f"feature index {scan.largest_index} is beyond --n-features {spec.n_features}",
            )
    classes = scan.labels if classes is None else classes
    return TrainingInput(
        spec, classes, scan.n_rows, None, scan_cache=cache, scan_seconds=scan_seconds
    )


def vw_input(args, classes, numeric_classes, estimator, resources):
    """VW text: hashed into 2**--hash-bits columns; the classes from a scan
    (which caches its chunks) unless --classes."""
    if args.classes is not None and not numeric_classes:
        raise UsageError(f"VW labels are numbers: --classes {args.classes}")
    spec = VwSpec(
        DEFAULT_HASH_BITS if args.hash_bits is None else args.hash_bits,
        tuple(args.interactions or ()),
    )
    check_memory(estimator, spec.n_features, classes)
    if args.task != "classify" or classes is not None:
        return TrainingInput(spec, classes, None, None)
    if not is_regular_file(args.data):
        raise stream_error(args, width_missing=False)
    cache = None
    if not args.no_cache:
        cache = resources.enter_context(contextlib.closing(ChunkCache()))
    with scan_progress(args) as progress:
        chunks = spec.chunks(args.data, args.chunk_size)
        n_rows, labels = scan_labels(args.data, chunks, progress, cache)
    if n_rows == 0:
        raise DataError(args.data, None, "no data rows")
    return TrainingInput(spec, labels, n_rows, None, scan_cache=cache)


def parquet_input(args, classes, numeric_classes, estimator):
    """A Parquet file: its feature columns from its schema and the column
    options; the classes from its label column, read alone, unless --classes."""
    try:
        from .._readers._parquet import (
            check_column_types,
            check_columns,
            holds_numbers,
            is_integer_type,
            open_parquet,
            scan_labels,
        )
    except ImportError:
        raise UsageError(
            f"{args.data} is read as Parquet, which needs pyarrow: pip install 'skftrl[readers]'"
        ) from None
    if not is_regular_file(args.data):
        raise UsageError(
            f"{args.data}: a Parquet file describes itself at its end; train reads one by "
            "its path, not from a stream (test and predict read streams)"
        )
    columns_of, categorical, numeric = csv_columns_of(args, header_line=False)
    with contextlib.closing(open_parquet(args.data)) as parquet:
        schema = parquet.schema_arrow
        check_columns(parquet, args.data, [args.label_column])
        features = columns_of(schema.names)
        check_column_types(
            parquet,
            args.data,
            features,
            lambda nested: f"with --ignore {','.join(nested)}",
            label_column=args.label_column,
        )
        # Integers are ids and codes, as whole numbers are in CSV, unless
        # --numeric names them: the model file lists them as categorical.
        categorical = categorical + [
            name
            for name in features
            if is_integer_type(schema.field(name).type)
            and name not in numeric
            and name not in categorical
        ]
        numeric_labels = holds_numbers(schema.field(args.label_column).type)
        n_rows = None
        if args.task == "classify" and classes is None:
            n_rows, classes = scan_labels(parquet, args.data, args.label_column)
            if n_rows == 0:
                raise DataError(args.data, None, "no data rows")
    if classes is not None and numeric_classes is not None and numeric_classes != numeric_labels:
        raise UsageError(
            f"--classes {args.classes}: the label column {args.label_column!r} holds "
            + ("numbers" if numeric_labels else "strings")
        )
    hash_bits = DEFAULT_HASH_BITS if args.hash_bits is None else args.hash_bits
    spec = ParquetSpec(args.label_column, features, categorical, hash_bits, args.weight_column)
    check_memory(estimator, spec.n_features, classes)
    return TrainingInput(spec, classes, n_rows, FeatureNames())


def scan_labels(path, chunks, progress, cache):
    """``(n_rows, labels)``: a first pass over the ``chunks`` of ``path``
    counting the rows and collecting the distinct labels (sorted); each chunk
    written to ``cache`` if it is not None."""
    n_rows, labels = 0, set()
    for chunk in chunks:
        collect_classes(path, int(chunk.lines[-1]), np.unique(chunk.y).tolist(), labels)
        if cache is not None:
            cache.write(chunk)
        n_rows += chunk.n_rows
        progress(n_rows)
    return n_rows, np.array(sorted(labels))


def csv_input(args, classes, numeric_classes, resources, guess):
    """A CSV input: the column kinds and the classes from a scan when the
    classes are not known (nor guessed, see the module), else the kinds of
    the first chunk."""
    columns_of, categorical, numeric = csv_columns_of(args)
    delimiter = default_delimiter(args.data) if args.delimiter is None else args.delimiter
    n_rows = csv_rows = None
    guessed = False
    if args.task == "classify" and classes is None:
        if not is_regular_file(args.data):
            raise stream_error(args, width_missing=False)
        if guess:
            csv_rows, classes = binary_first_chunk(args, resources, delimiter)
            guessed = numeric_classes = classes is not None
    if args.task == "classify" and classes is None:
        with scan_progress(args) as progress:
            scan = scan_csv(
                args.data,
                args.label_column,
                args.chunk_size,
                True,
                # The --numeric columns are numeric whatever they hold: the
                # training pass refuses a value that is not a number.
                lambda header: [name for name in columns_of(header) if name not in numeric],
                categorical,
                progress,
                delimiter=delimiter,
                column_names=args.column_names,
                numeric=numeric,
            )
        header, kinds, numeric_labels = scan.header, scan.kinds, scan.numeric_labels
        classes, n_rows = scan.labels, scan.n_rows
    else:
        source, rows = csv_rows or open_csv(args, resources, delimiter)
        kinds, rows = first_chunk_kinds(source, rows, columns_of, categorical, numeric)
        header, csv_rows = source.header, (source, rows)
        numeric_labels = True if args.task == "regress" else numeric_classes
    kinds = {name: NUMERIC if name in numeric else kinds[name] for name in columns_of(header)}
    spec = CsvSpec(
        args.label_column,
        kinds,
        numeric_labels,
        DEFAULT_HASH_BITS if args.hash_bits is None else args.hash_bits,
        args.weight_column,
        ignored_columns(header, kinds, args.label_column, args.weight_column),
        delimiter,
    )
    return TrainingInput(spec, classes, n_rows, FeatureNames(), csv_rows=csv_rows, guessed=guessed)


# The labels of a binary file, as its first chunk may show them.
BINARY_CLASSES = ({0.0, 1.0}, {-1.0, 1.0})


def binary_first_chunk(args, resources, delimiter):
    """``(csv_rows, classes)``: the CSV input opened (and closed by
    ``resources``) and its rows, and the classes of a binary file, when its
    first chunk's labels are those of :data:`BINARY_CLASSES` (none missing);
    else ``(None, None)``, the input closed."""
    with contextlib.ExitStack() as attempt:
        source, rows = open_csv(args, attempt, delimiter)
        labels, rows = first_chunk_labels(source, rows, args.label_column)
        classes = None if labels is None else np.unique(labels)
        if classes is None or set(classes.tolist()) not in BINARY_CLASSES:
            return None, None
        resources.enter_context(attempt.pop_all())
        return (source, rows), classes


def open_csv(args, resources, delimiter):
    """``(source, rows)``: the CSV input of a training run opened (and closed by
    ``resources``), its fields separated by ``delimiter``, and its rows in chunks."""
    source = open_csv_input(args.data, delimiter=delimiter, column_names=args.column_names)
    resources.enter_context(contextlib.closing(source))
    return source, source.row_chunks(args.chunk_size)


@contextlib.contextmanager
def scan_progress(args):
    """``progress(rows)`` for a scan: the live display, closed when the scan ends."""
    display = Progress(enabled=not args.quiet)
    name = os.path.basename(args.data)
    try:
        yield lambda rows: display.update(f"scanning {name}", rows)
    finally:
        display.close()


def stream_error(args, width_missing):
    """The error of a stream that would need a scan of the file."""
    what = ["--n-features N (or --hash-bits B)"] if width_missing else []
    if args.task == "classify":
        what.append("--classes A,B,...")
    return UsageError(
        f"{args.data} is not a regular file and cannot be read twice: give "
        + " and ".join(what)
        + " so that no scan of the file is needed (or continue a model with -i)"
    )


def column_list(text):
    return None if text is None else [name.strip() for name in text.split(",") if name.strip()]


def csv_columns_of(args, header_line=True):
    """``(columns_of, categorical, numeric)``: a function giving the feature
    columns of a CSV header (of a Parquet schema without ``header_line``),
    checking the column options against it, and the columns named by
    --categorical and by --numeric."""
    ignore, keep = column_list(args.ignore) or [], column_list(args.keep)
    categorical = column_list(args.categorical) or []
    numeric = column_list(args.numeric) or []
    both = [name for name in numeric if name in categorical]
    if both:
        raise UsageError(f"--numeric and --categorical both name {', '.join(map(repr, both))}")

    def columns_of(header):
        named = {
            "--ignore": ignore,
            "--keep": keep or [],
            "--categorical": categorical,
            "--numeric": numeric,
        }
        if args.weight_column is not None:
            named["--weight-column"] = [args.weight_column]
        for option, names in named.items():
            absent = [name for name in names if name not in header]
            if absent:
                raise DataError(
                    args.data,
                    1 if header_line else None,
                    f"{option}: no column {', '.join(map(repr, absent))}"
                    f"{' in the header' if header_line else ''} "
                    f"(the columns are: {', '.join(header)})",
                )
        if args.weight_column is not None and args.weight_column == args.label_column:
            raise UsageError("--weight-column is the label column")
        return feature_columns(header, args.label_column, args.weight_column, ignore, keep)

    return columns_of, categorical, numeric
