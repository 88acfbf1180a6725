"""The ``skftrl`` command line: ``demo``, ``train``, ``test``, ``predict`` and ``inspect``.

Reading files is in ``_io.py``; this module parses options, runs the
estimators over the chunks, and reports. Bad input ends with one line on
stderr, ``skftrl: error: <file>:<line>: <what>``, and exit code 1; bad
options with exit code 2, as argparse does.

Only the standard library is imported at start-up, so that ``--help`` and
``--version`` answer at once; numpy, scikit-learn and the estimators are
imported by the commands that use them.
"""

import argparse
import os
import signal
import sys
import threading
import time

from . import __version__

# Rows per chunk when a command reads a file to score it (predict, test, --test).
READ_CHUNK_SIZE = 10_000

# The label-leak check fits the label on the numeric columns of the first
# chunk: a fit this good means some columns are derived from the label.
LEAK_R2 = 0.99


class UsageError(Exception):
    """Options that cannot work together, or an invalid hyper-parameter: exit code 2."""


def format_label(label):
    """A class label as a user wrote it: 1 rather than 1.0."""
    import numpy as np

    return f"{label:g}" if isinstance(label, (float, np.floating)) else str(label)


def validated(estimator):
    """The estimator, its hyper-parameters and engine checked before any data is read.

    A clone learns one row through the public API: whatever the estimator
    refuses (a hyper-parameter out of range, ``engine="numba"`` without numba
    or with ``batch_size > 1``) is refused before the input is opened.
    """
    import numpy as np
    import scipy.sparse as sp
    from sklearn.base import clone, is_classifier

    probe = clone(estimator)
    X = sp.csr_matrix((1, 1))
    try:
        if is_classifier(probe):
            probe.partial_fit(X, np.zeros(1), classes=[0, 1])
        else:
            probe.partial_fit(X, np.zeros(1))
    except (ValueError, TypeError, ImportError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return estimator


def engine_name(estimator):
    """The engine a model runs: numba when it imports and ``batch_size`` is 1, else numpy."""
    if estimator.batch_size > 1 or estimator.engine == "numpy":
        return "numpy"
    try:
        import numba  # noqa: F401
    except ImportError:
        return "numpy"
    return "numba"


# --------------------------------------------------------------- progress
class Progress:
    """A live display on stderr when it is a terminal and tqdm is installed.

    It shows the rows read, and the percentage and the time left when the
    total is known (after a first pass), and always the rows per second and
    the running loss: they come first, so that a narrow terminal shortens
    only the bar. Elsewhere nothing is drawn; the commands print one line per
    pass instead.
    """

    KNOWN_TOTAL = (
        "{desc} | {rate_fmt} | {percentage:.0f}% ETA {remaining} | {n_fmt}/{total_fmt} {bar}"
    )
    UNKNOWN_TOTAL = "{desc} | {rate_fmt} | {n_fmt} rows {elapsed}"

    def __init__(self, enabled):
        self.bar = None
        if not enabled or not sys.stderr.isatty():
            return
        try:
            from tqdm import tqdm
        except ImportError:  # tqdm is optional: one line per pass instead
            return
        self.bar = tqdm(
            file=sys.stderr,
            dynamic_ncols=True,
            unit=" rows",
            unit_scale=True,
            leave=False,
            mininterval=0.25,
            bar_format=self.UNKNOWN_TOTAL,
        )

    def update(self, description, rows, total=None):
        """Show ``rows`` read (of ``total``, when known) and ``description``."""
        bar = self.bar
        if bar is None:
            return
        bar.total = total
        bar.bar_format = self.UNKNOWN_TOTAL if total is None else self.KNOWN_TOTAL
        bar.set_description_str(description, refresh=False)
        bar.update(rows - bar.n)

    def restart(self):
        if self.bar is not None:
            self.bar.reset()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


# --------------------------------------------------------------------- demo
def run_demo(args, out):
    """One streaming pass over a9a, with progressive validation, then a test score."""
    import numpy as np
    from sklearn.base import clone
    from sklearn.metrics import log_loss, roc_auc_score

    from ._classifier import FTRLClassifier
    from .datasets import load_a9a

    model = validated(
        FTRLClassifier(learning_rate=args.learning_rate, beta=args.beta, l1=args.l1, l2=args.l2)
    )
    X_train, y_train, X_test, y_test = load_a9a()
    classes = np.unique(y_train)
    # The engine's first call compiles or loads numba's cache: done here, on
    # a copy, so that the training time below is the engine's own.
    clone(model).partial_fit(X_train[:10], y_train[:10], classes=classes)
    engine = engine_name(model)
    print(
        f"skftrl {__version__} demo: one FTRL-Proximal pass over a9a "
        f"({X_train.shape[0]:,} rows, {X_train.shape[1]} features), "
        f"learning_rate={args.learning_rate}, beta={args.beta}, l1={args.l1}, l2={args.l2}",
        file=out,
    )
    print(
        "progressive validation: each row is scored before it is learned, "
        f"in chunks of {args.chunk_size:,} rows",
        file=out,
    )
    loss_sum = 0.0
    train_seconds = 0.0
    n_rows = X_train.shape[0]
    for chunk, start in enumerate(range(0, n_rows, args.chunk_size), start=1):
        X_chunk = X_train[start : start + args.chunk_size]
        y_chunk = y_train[start : start + args.chunk_size]
        began = time.perf_counter()
        model.partial_fit(X_chunk, y_chunk, classes=classes)
        train_seconds += time.perf_counter() - began
        # The mean log loss of the chunk's rows, each scored before it was learned.
        loss_sum += model.loss_curve_[-1] * X_chunk.shape[0]
        seen = start + X_chunk.shape[0]
        if chunk % 8 == 0 or seen == n_rows:
            print(f"  rows {seen:>7,}  progressive log loss {loss_sum / seen:.4f}", file=out)

    proba = model.predict_proba(X_test)[:, 1]
    nonzero = int(np.count_nonzero(model.coef_))
    print(f"held-out log loss (a9a.t): {log_loss(y_test, proba):.4f}", file=out)
    print(f"held-out AUC (a9a.t):      {roc_auc_score(y_test, proba):.4f}", file=out)
    print(f"non-zero weights:          {nonzero} of {model.coef_.size}", file=out)
    print(
        f"training speed:            {n_rows / train_seconds:,.0f} rows/s "
        f"(engine {engine}, after its warm-up; partial_fit on chunks in memory)",
        file=out,
    )
    return 0


# ------------------------------------------------------------ model files
MODEL_ATTRIBUTES = ("input_spec_", "hashed_feature_names_", "training_log_")


def save_model(estimator, path, file):
    """Write the estimator: skops for a ``.skops`` path, else joblib."""
    if os.fspath(path).endswith(".skops"):
        try:
            import skops.io as sio
        except ImportError:
            raise UsageError(
                f"{path}: saving a .skops model needs skops (pip install 'skftrl[skops]')"
            ) from None
        file.write(sio.dumps(estimator))
    else:
        import joblib

        joblib.dump(estimator, file)


def load_model(path):
    """A fitted FTRLClassifier or FTRLRegressor (or their factorization
    machines, FMClassifier and FMRegressor) from a model file.

    The file is a joblib pickle (as ``skops train`` or ``joblib.dump``
    write it), a skops file (zip; only skftrl's estimator types are trusted),
    or the dictionary of skftrl 0.1.0. Like any pickle, a joblib file can run
    code when loaded: load only files you trust.
    """
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from ._classifier import FTRLClassifier
    from ._fm import FMClassifier, FMRegressor
    from ._io import LEGACY_MODEL_KIND, DataError
    from ._regressor import FTRLRegressor

    if not os.path.exists(path):
        raise DataError(path, None, "No such file or directory")
    try:
        with open(path, "rb") as file:
            is_zip = file.read(4) == b"PK\x03\x04"
        if is_zip:
            import skops.io as sio

            trusted = [
                f"{cls.__module__}.{cls.__qualname__}"
                for cls in (FTRLClassifier, FTRLRegressor, FMClassifier, FMRegressor)
            ]
            untrusted = set(sio.get_untrusted_types(file=path)) - set(trusted)
            if untrusted:
                raise DataError(
                    path,
                    None,
                    f"the skops file holds types that are not skftrl's: {sorted(untrusted)}",
                )
            model = sio.load(path, trusted=trusted)
        else:
            import joblib

            model = joblib.load(path)
    except DataError:
        raise
    except Exception as error:  # a corrupt file fails in many ways
        raise DataError(
            path, None, f"not a readable skftrl model file ({type(error).__name__}: {error})"
        ) from None
    if isinstance(model, dict) and model.get("kind") == LEGACY_MODEL_KIND:
        model = from_legacy_dict(path, model)
    if not isinstance(model, (FTRLClassifier, FTRLRegressor)):
        raise DataError(
            path,
            None,
            f"not a skftrl model file: it holds a {type(model).__name__}, not a fitted "
            "FTRLClassifier or FTRLRegressor",
        )
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise DataError(
            path, None, f"the {type(model).__name__} in this file is not fitted"
        ) from None
    return model


def from_legacy_dict(path, saved):
    """The estimator of a skftrl 0.1.0 model file, with its CLI attributes."""
    from ._io import DataError

    missing = [key for key in ("estimator", "input", "training") if key not in saved]
    if missing:
        raise DataError(
            path, None, f"a damaged skftrl model file: no {', '.join(map(repr, missing))} in it"
        )
    estimator = saved["estimator"]
    estimator.input_spec_ = dict(saved["input"], hash_bits=saved["input"].get("hash_bits"))
    estimator.hashed_feature_names_ = saved.get("feature_names")
    estimator.training_log_ = [saved["training"]]
    return estimator


def input_spec(estimator, args=None):
    """How the model reads files: its ``input_spec_``, or for a model made in
    Python (no ``input_spec_``), LIBSVM ``n_features_in_`` wide, indices from 1
    unless ``--zero-based``."""
    spec = getattr(estimator, "input_spec_", None)
    if spec is not None:
        return spec
    return {
        "format": "libsvm",
        "n_features": int(estimator.n_features_in_),
        "zero_based": bool(getattr(args, "zero_based", False)),
        "hash_bits": None,
    }


def libsvm_layout(spec):
    from ._io import LibsvmLayout

    return LibsvmLayout(spec["n_features"], spec["zero_based"], spec.get("hash_bits"))


def csv_layout(spec):
    from ._io import CsvLayout

    return CsvLayout(
        spec["label_column"],
        spec.get("kinds"),
        spec["numeric_labels"],
        spec["hash_bits"],
        spec.get("weight_column"),
        tuple(spec.get("ignored", ())),
    )


def chunk_reader(spec, chunk_size, names=None, on_first_chunk=None, find_kinds=None):
    """A function ``read(path, labels=True)`` giving a file's chunks as ``spec`` says."""
    from ._io import read_csv, read_libsvm

    if spec["format"] == "libsvm":
        layout = libsvm_layout(spec)

        def read(path, labels=True):
            return read_libsvm(path, chunk_size, layout, labels_required=labels)

    else:

        def read(path, labels=True):
            return read_csv(
                path,
                csv_layout(spec),
                chunk_size,
                "required" if labels else "ignored",
                names,
                on_first_chunk,
                find_kinds,
            )

    return read


def describe_input(spec):
    if spec["format"] == "libsvm":
        if spec.get("hash_bits") is not None:
            return f"LIBSVM, indices hashed into 2**{spec['hash_bits']} features"
        first = 0 if spec["zero_based"] else 1
        return f"LIBSVM, {spec['n_features']:,} features (indices from {first})"
    kinds = list(spec["kinds"].values())
    text = (
        f"CSV, label column {spec['label_column']!r}, "
        f"{kinds.count('numeric')} numeric and {kinds.count('categorical')} "
        f"categorical columns hashed into 2**{spec['hash_bits']} features"
    )
    if spec.get("weight_column"):
        text += f", weights from {spec['weight_column']!r}"
    if spec.get("ignored"):
        text += f", {len(spec['ignored'])} columns ignored"
    return text


# -------------------------------------------------------------------- train
FACTOR_OPTIONS = {
    "--init-stdev": "init_stdev",
    "--factor-learning-rate": "factor_learning_rate",
    "--factor-l2": "factor_l2",
}
HOLDOUT_OPTIONS = {"--tol": "tol", "--n-iter-no-change": "n_iter_no_change"}


def make_estimator(args, initial):
    """The estimator the options ask for; options left unset keep its defaults
    (or, with ``-i``, the continued model's).

    ``--factors K`` makes a factorization machine (FMClassifier or
    FMRegressor) with ``n_components=K``; its initial factors are drawn with
    ``--random-state`` (default 0, so that a run is repeatable).
    """
    from ._classifier import FTRLClassifier
    from ._fm import FMClassifier, FMRegressor
    from ._regressor import FTRLRegressor

    given = {
        "learning_rate": args.learning_rate,
        "beta": args.beta,
        "l1": args.l1,
        "l2": args.l2,
        "batch_size": args.batch_size,
        "engine": args.engine,
        **{name: getattr(args, name) for name in FACTOR_OPTIONS.values()},
        **{name: getattr(args, name) for name in HOLDOUT_OPTIONS.values()},
    }
    params = {name: value for name, value in given.items() if value is not None}
    if args.loss is not None:
        params["loss"] = args.loss
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    classify = args.task == "classify"
    if classify and ("loss" in params or "epsilon" in params):
        raise UsageError(
            "--loss and --epsilon are for --task regress; classification "
            "uses the log loss (two classes) or the multinomial loss (more)"
        )
    check_holdout_options(args)
    is_fm = isinstance(initial, (FMClassifier, FMRegressor))
    if not is_fm and args.factors is None:
        factor_options = [option for option, name in FACTOR_OPTIONS.items() if name in params]
        if args.random_state is not None:
            factor_options.append("--random-state")
        if factor_options:
            raise UsageError(
                f"{', '.join(factor_options)} {'are' if len(factor_options) > 1 else 'is'} for "
                "factorization machines: add --factors K"
            )
    if initial is not None:
        if isinstance(initial, FTRLClassifier) != classify:
            kind = "a classifier" if isinstance(initial, FTRLClassifier) else "a regressor"
            raise UsageError(
                f"--initial-model {args.initial_model} is {kind}: use "
                f"--task {'classify' if isinstance(initial, FTRLClassifier) else 'regress'}"
            )
        if args.factors is not None and (not is_fm or args.factors != initial.n_components):
            what = f"{initial.n_components} factors a feature" if is_fm else "a linear model"
            raise UsageError(
                f"--initial-model {args.initial_model} is {what}: a model continued with -i "
                "keeps its factors (leave out --factors)"
            )
        if args.random_state is not None:
            raise UsageError(
                f"--random-state draws the initial factors of a new model; those of "
                f"--initial-model {args.initial_model} are drawn already"
            )
        validated(initial.__class__(**{**initial.get_params(), **params}))
        return initial.set_params(**params)
    if args.factors is not None:
        params["n_components"] = args.factors
        params["random_state"] = 0 if args.random_state is None else args.random_state
        Estimator = FMClassifier if classify else FMRegressor
    else:
        Estimator = FTRLClassifier if classify else FTRLRegressor
    return validated(Estimator(**params))


def check_holdout_options(args):
    """``--tol`` and ``--n-iter-no-change`` stop on the held-out loss: they need it."""
    if args.holdout_period is None:
        given = [
            option for option, name in HOLDOUT_OPTIONS.items() if getattr(args, name) is not None
        ]
        if given:
            raise UsageError(
                f"{' and '.join(given)} stop{'' if len(given) > 1 else 's'} the passes on the "
                "held-out loss: add --holdout-period K"
            )


def check_paths(args):
    """The model must not overwrite the data it is trained or tested on."""
    written = os.path.realpath(args.model)
    for option, path in (("DATA", args.data), ("--test", args.test)):
        if path not in (None, "-") and os.path.realpath(path) == written:
            raise UsageError(f"--model {args.model} is the {option} file: it would be overwritten")


def check_format_options(args, data_kind):
    """Options that belong to the other format are mistakes, not silently ignored."""
    csv_only = {
        "--label-column": args.label_column,
        "--weight-column": args.weight_column,
        "--ignore": args.ignore,
        "--keep": args.keep,
        "--categorical": args.categorical,
    }
    if data_kind == "csv":
        if args.label_column is None and args.initial_model is None:
            raise UsageError(f"{args.data} is read as CSV, which needs --label-column NAME")
        if args.n_features is not None or args.zero_based:
            raise UsageError(
                "--n-features and --zero-based are for LIBSVM data; "
                "CSV data is hashed (--hash-bits)"
            )
    else:
        given = [option for option, value in csv_only.items() if value is not None]
        if given:
            raise UsageError(
                f"{args.data} is read as LIBSVM, which takes no {', '.join(given)} "
                "(use --format csv for CSV data)"
            )
        if args.n_features is not None and args.hash_bits is not None:
            raise UsageError("--n-features or --hash-bits, not both")


def parse_classes(text):
    """``--classes``: numbers when every one is a number, else strings."""
    import numpy as np

    names = [name.strip() for name in text.split(",")]
    if len(names) < 2 or "" in names or len(set(names)) < len(names):
        raise UsageError(f"--classes needs two distinct labels or more, comma-separated: {text!r}")
    try:
        return np.unique(np.array(names, dtype=np.float64)), True
    except ValueError:
        return np.array(sorted(names)), False


def memory_needed(n_outputs, n_features, dtype, n_components=0):
    """Bytes of a state of ``n_outputs`` x ``n_features`` (z and n of the
    weights, and of ``n_components`` factors a feature)."""
    import numpy as np

    return 2 * n_outputs * n_features * (1 + n_components) * np.dtype(dtype).itemsize


def factors_of(estimator):
    """The number of factors a feature of the estimator has: 0 for a linear model."""
    return getattr(estimator, "n_components", 0)


def check_memory(estimator, n_features, classes):
    """Refuse a width whose state cannot fit in memory, saying what it needs."""
    n_outputs = 1 if classes is None or len(classes) == 2 else len(classes)
    n_components = factors_of(estimator)
    needed = memory_needed(n_outputs, n_features, estimator.dtype, n_components)
    try:
        available = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        available = None
    if n_features > 2**62 or (available is not None and needed > available):
        raise UsageError(memory_message(n_features, n_outputs, needed, available, n_components))


def memory_message(n_features, n_outputs, needed, available=None, n_components=0):
    have = "" if available is None else f", more than this machine's {available / 2**30:,.1f} GiB"
    factors = f", {n_components} factors a feature" if n_components else ""
    return (
        f"a model {n_features:,} features wide needs {needed / 2**30:,.1f} GiB for its state "
        f"(z and n, {n_outputs} output{'s' if n_outputs > 1 else ''}{factors}){have}: use "
        "--hash-bits B to hash the features into 2**B columns"
    )


def known_input(args, data_kind, initial):
    """What the options or the continued model tell of the input:
    ``(spec or None, classes or None)``; None where a scan must find it."""
    if initial is not None:
        spec = input_spec(initial, args)
        if spec["format"] != data_kind:
            raise UsageError(
                f"--initial-model {args.initial_model} reads {spec['format'].upper()} data, "
                f"but {args.data} is read as {data_kind.upper()}"
            )
        classes = getattr(initial, "classes_", None)
        return spec, classes
    classes = numeric_classes = None
    if args.classes is not None:
        if args.task != "classify":
            raise UsageError("--classes is for --task classify")
        classes, numeric_classes = parse_classes(args.classes)
    if data_kind == "libsvm":
        if args.classes is not None and not numeric_classes:
            raise UsageError(f"LIBSVM labels are numbers: --classes {args.classes}")
        spec = None
        if args.hash_bits is not None:
            spec = {
                "format": "libsvm",
                "n_features": 2**args.hash_bits,
                "zero_based": True,
                "hash_bits": args.hash_bits,
            }
        elif args.n_features is not None:
            spec = {
                "format": "libsvm",
                "n_features": args.n_features,
                "zero_based": args.zero_based,
                "hash_bits": None,
            }
        return spec, classes
    # CSV: the column kinds come from the first chunk when nothing else needs a scan.
    spec = {
        "format": "csv",
        "label_column": args.label_column,
        "kinds": None,
        "numeric_labels": True if args.task == "regress" else numeric_classes,
        "hash_bits": 20 if args.hash_bits is None else args.hash_bits,
        "weight_column": args.weight_column,
        "ignored": [],
    }
    return spec, classes


def column_list(text):
    return None if text is None else [name.strip() for name in text.split(",") if name.strip()]


def csv_columns_of(args):
    """A function giving the feature columns of a CSV header, checking the column options."""
    from ._io import feature_columns

    ignore, keep = column_list(args.ignore) or [], column_list(args.keep)
    categorical = column_list(args.categorical) or []

    def columns_of(header, path):
        from ._io import DataError

        named = {"--ignore": ignore, "--keep": keep or [], "--categorical": categorical}
        if args.weight_column is not None:
            named["--weight-column"] = [args.weight_column]
        for option, names in named.items():
            absent = [name for name in names if name not in header]
            if absent:
                raise DataError(
                    path,
                    1,
                    f"{option}: no column {', '.join(map(repr, absent))} in the header "
                    f"(the columns are: {', '.join(header)})",
                )
        if args.weight_column is not None and args.weight_column == args.label_column:
            raise UsageError("--weight-column is the label column")
        return feature_columns(header, args.label_column, args.weight_column, ignore, keep)

    return columns_of, categorical


def scan_csv_input(args, spec, classify, progress):
    """The CSV spec's column kinds and the classes, by a first pass."""
    from ._io import scan_csv

    columns_of, categorical = csv_columns_of(args)
    name = os.path.basename(args.data)

    def show(rows):
        progress.update(f"scanning {name}", rows)

    scan = scan_csv(
        args.data,
        args.label_column,
        args.chunk_size,
        classify,
        lambda header: columns_of(header, args.data),
        categorical,
        show,
    )
    spec["kinds"] = scan.kinds
    spec["ignored"] = ignored_columns(scan.header, spec)
    spec["numeric_labels"] = scan.numeric_labels
    return spec, scan.labels, scan.n_rows


def ignored_columns(header, spec):
    """The header's columns that are neither features, label nor weight."""
    used = {*spec["kinds"], spec["label_column"], spec.get("weight_column")}
    return [name for name in header if name not in used]


def kinds_finder(args, spec):
    """``find_kinds(header, values)`` for read_csv: the kinds of the first chunk's values."""
    from ._io import column_kinds

    columns_of, categorical = csv_columns_of(args)

    def find_kinds(header, values):
        columns = columns_of(header, args.data)
        if not values:
            found = dict.fromkeys(columns, True)
        else:
            found = column_kinds(columns, values, categorical)
        spec["kinds"] = {name: "numeric" if found[name] else "categorical" for name in columns}
        spec["ignored"] = ignored_columns(header, spec)
        return spec["kinds"], spec["ignored"]

    return find_kinds


def scan_libsvm_input(args, spec, classes, classify, progress, cache):
    """The LIBSVM spec and classes, by a scan (its chunks kept in ``cache``)."""
    from ._io import DataError, scan_libsvm

    name = os.path.basename(args.data)

    def show(rows):
        progress.update(f"scanning {name}", rows)

    scan = scan_libsvm(args.data, args.chunk_size, classify and classes is None, show, cache)
    if spec is None:
        spec = {
            "format": "libsvm",
            "n_features": scan.n_features,
            "zero_based": scan.zero_based or args.zero_based,
            "hash_bits": None,
        }
    elif spec.get("hash_bits") is None and scan.largest_index >= 0:
        offset = 0 if spec["zero_based"] else 1
        if scan.largest_index + 1 - offset > spec["n_features"]:
            raise DataError(
                args.data,
                scan.largest_index_line,
                f"feature index {scan.largest_index} is beyond --n-features {spec['n_features']}",
            )
    return spec, (scan.labels if classes is None else classes), scan.n_rows


def stream_error(args, width_missing):
    """The error of a stream that would need a first pass."""
    what = ["--n-features N (or --hash-bits B)"] if width_missing else []
    if args.task == "classify":
        what.append("--classes A,B,...")
    return UsageError(
        f"{args.data} is not a regular file and cannot be read twice: give "
        + " and ".join(what)
        + " so that one pass suffices (or continue a model with -i)"
    )


def label_leaks(numbers_of, y):
    """Numeric columns that, together, reproduce the label almost exactly.

    Least squares of the label on the numeric columns of the first chunk
    (with an intercept): when they explain over LEAK_R2 of its variance, the
    columns without which they no longer do are returned, with the R^2.
    """
    import numpy as np

    names = [name for name, values in numbers_of.items() if np.isfinite(values).all()]
    if not names or y is None or y.dtype.kind != "f" or len(y) <= len(names) + 1:
        return [], 0.0
    variance = np.var(y)
    if variance == 0:
        return [], 0.0

    def r2(columns):
        A = np.column_stack([np.ones(len(y))] + [numbers_of[name] for name in columns])
        residual = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        return 1 - np.mean(residual**2) / variance

    explained = r2(names)
    if explained < LEAK_R2:
        return [], explained
    needed = [name for name in names if r2([other for other in names if other != name]) < LEAK_R2]
    return needed or names, explained


def learn(estimator, chunk, classes, path):
    """``partial_fit`` on one chunk; a refusal is reported with the chunk's lines."""
    import numpy as np
    from sklearn.base import is_classifier

    from ._engines import get_loss
    from ._io import DataError

    if not is_classifier(estimator):
        loss = get_loss(estimator.loss)
        invalid = loss.invalid_targets(chunk.y)
        if invalid is not None and invalid.any():
            line = chunk.lines[np.flatnonzero(invalid)[0]]
            raise DataError(path, int(line), f"--loss {estimator.loss} needs {loss.target_domain}")
    if classes is not None:
        check_known_labels(path, chunk, classes)
    extra = {} if chunk.sample_weight is None else {"sample_weight": chunk.sample_weight}
    try:
        if classes is None or hasattr(estimator, "classes_"):
            estimator.partial_fit(chunk.X, chunk.y, **extra)
        else:
            estimator.partial_fit(chunk.X, chunk.y, classes=classes, **extra)
    except ValueError as error:
        first, last = int(chunk.lines[0]), int(chunk.lines[-1])
        raise DataError(path, first, f"in the rows of lines {first}-{last}: {error}") from None


def check_known_labels(path, chunk, classes):
    """Every label of a file must be one of the model's classes."""
    import numpy as np

    from ._io import DataError

    unknown = np.flatnonzero(~np.isin(chunk.y, classes))
    if unknown.size:
        raise DataError(
            path,
            int(chunk.lines[unknown[0]]),
            f"the label {format_label(chunk.y[unknown[0]])} is not one of the model's "
            f"classes ({', '.join(map(format_label, classes))})",
        )


def held_out_scores(estimator, read, path):
    """Metrics on a labelled file: (name, value) pairs, and the row count."""
    import numpy as np
    from sklearn.metrics import log_loss, roc_auc_score

    from ._classifier import FTRLClassifier

    n_rows = 0
    if not isinstance(estimator, FTRLClassifier):
        squared, absolute = 0.0, 0.0
        for chunk in read(path):
            residuals = estimator.predict(chunk.X) - chunk.y
            squared += float(residuals @ residuals)
            absolute += float(np.abs(residuals).sum())
            n_rows += chunk.X.shape[0]
        if not n_rows:
            return [], 0
        return [("RMSE", np.sqrt(squared / n_rows)), ("MAE", absolute / n_rows)], n_rows

    classes = estimator.classes_
    loss_sum, correct = 0.0, 0
    labels, positive_proba = [], []  # binary AUC needs every score
    for chunk in read(path):
        check_known_labels(path, chunk, classes)
        proba = estimator.predict_proba(chunk.X)
        loss_sum += log_loss(chunk.y, proba, labels=classes, normalize=False)
        correct += int(np.sum(classes[np.argmax(proba, axis=1)] == chunk.y))
        n_rows += chunk.X.shape[0]
        if len(classes) == 2:
            labels.append(chunk.y == classes[1])
            positive_proba.append(proba[:, 1])
    if not n_rows:
        return [], 0
    scores = [("log loss", loss_sum / n_rows)]
    if len(classes) == 2:
        labels = np.concatenate(labels)
        if 0 < labels.sum() < labels.size:  # AUC needs both classes
            scores.append(("AUC", roc_auc_score(labels, np.concatenate(positive_proba))))
    scores.append(("accuracy", correct / n_rows))
    return scores, n_rows


class Holdout:
    """``--holdout-period K``: every K-th row held out, scored after each pass,
    and the best pass's model kept.

    The rows K, 2K, 3K, ... of the file (counted from 1, data rows only) are
    never learned from. Their parsed chunks are kept in a cache of their own
    (a temporary file, 1/K of the data) during the first pass; after each
    pass the model scores them as ``fit``'s early stopping scores its
    held-out rows (their weighted mean loss), with the same early stopping as
    ``early_stopping=True``: the best pass is the one of the lowest loss (the
    later of two equal ones), as Vowpal Wabbit keeps its holdout's best
    model; the passes stop when the loss has not improved on the lowest by
    ``tol`` for ``n_iter_no_change`` passes in a row. The state of the best
    pass is kept for the columns the training rows use (no other column
    changes) and put back at the end.
    """

    def __init__(self, period, path):
        from ._io import ChunkCache

        self.period, self.path = period, path
        self.cache = ChunkCache()
        self.row = 0  # data rows of the current pass read so far
        self.n_held_out = 0
        self.used_columns = None  # the columns of the training rows (a mask)
        self.stopping = None  # the estimator's, made at the first pass's end

    def training_part(self, chunk, first_pass):
        """The chunk's rows that are learned from; in the first pass, the
        held-out rows are cached and the columns of the others recorded."""
        import numpy as np

        numbers = np.arange(self.row + 1, self.row + 1 + chunk.n_rows)
        self.row += chunk.n_rows
        held = numbers % self.period == 0
        training = select_rows(chunk, ~held)
        if first_pass:
            if held.any():
                self.cache.write(select_rows(chunk, held))
                self.n_held_out += int(held.sum())
            if self.used_columns is None:
                self.used_columns = np.zeros(chunk.X.shape[1], dtype=bool)
            self.used_columns[training.X.indices] = True
        return training

    def end_pass(self, estimator, n_rows):
        """Score the held-out rows: ``(loss, whether the pass is the best, whether to stop)``."""
        import numpy as np

        from ._io import DataError

        self.row = 0
        if not self.n_held_out:
            raise DataError(
                self.path,
                None,
                f"--holdout-period {self.period} holds out no row: the file has {n_rows:,} "
                f"data row{'s' if n_rows != 1 else ''}, fewer than {self.period}",
            )
        if self.stopping is None:
            self.stopping = estimator._early_stopping(np.flatnonzero(self.used_columns))
        loss_sum = weight_sum = 0.0
        for chunk in self.cache.chunks():
            chunk_loss, chunk_weight = held_out_loss(estimator, self.stopping, chunk, self.path)
            loss_sum += chunk_loss
            weight_sum += chunk_weight
        loss = loss_sum / weight_sum if weight_sum else 0.0
        best = self.stopping.end_pass(loss)
        return loss, best, self.stopping.stopped

    def keep_best(self):
        """Put the best pass's state back; returns its held-out loss."""
        self.stopping.restore()
        return self.stopping.best_loss

    def close(self):
        self.cache.close()


def select_rows(chunk, mask):
    """The rows of ``chunk`` where ``mask`` is True."""
    return chunk._replace(
        X=chunk.X[mask],
        y=None if chunk.y is None else chunk.y[mask],
        lines=chunk.lines[mask],
        sample_weight=None if chunk.sample_weight is None else chunk.sample_weight[mask],
    )


def held_out_loss(estimator, stopping, chunk, path):
    """The summed loss of a chunk of held-out rows and their summed weight,
    each row's loss as the estimators' early stopping scores it."""
    import numpy as np
    from sklearn.base import is_classifier

    from ._io import DataError

    weights = np.ones(chunk.n_rows) if chunk.sample_weight is None else chunk.sample_weight
    if is_classifier(estimator):
        check_known_labels(path, chunk, estimator.classes_)
    try:
        return stopping.held_out_loss(chunk.X, chunk.y, weights)
    except ValueError as error:
        first, last = int(chunk.lines[0]), int(chunk.lines[-1])
        raise DataError(
            path, first, f"in the held-out rows of lines {first}-{last}: {error}"
        ) from None


class Training:
    """One ``skftrl train`` run: what the input is, the passes, the report, the model file."""

    def __init__(self, args, out):
        self.args, self.out = args, out
        self.progress = Progress(enabled=False)
        self.holdout = None

    def report(self, text):
        if not self.args.quiet:
            print(text, file=self.out)

    def warn(self, text):
        print(f"skftrl: warning: {text}", file=sys.stderr)

    def run(self):
        from ._io import ChunkCache, DataError, FeatureNames, data_format, is_regular_file

        args = self.args
        check_paths(args)
        data_kind = data_format(args.data, args.format)
        initial = None if args.initial_model is None else load_model(args.initial_model)
        if initial is not None and data_kind == "csv" and args.label_column is None:
            args.label_column = input_spec(initial).get("label_column")
        check_format_options(args, data_kind)
        estimator = make_estimator(args, initial)
        classify = args.task == "classify"
        regular = is_regular_file(args.data)
        if args.data != "-" and not os.path.exists(args.data):
            raise DataError(args.data, None, "No such file or directory")
        if args.test is not None and args.test != "-" and not os.path.exists(args.test):
            raise DataError(
                args.test, None, "No such file or directory"
            )  # now, not after training
        if not regular and args.passes > 1 and args.no_cache:
            raise UsageError(f"{args.data} cannot be read twice: --passes > 1 needs the cache")
        spec, classes = known_input(args, data_kind, initial)
        if spec is not None and spec["format"] == "libsvm" and initial is None:
            check_memory(estimator, spec["n_features"], classes)
        cache = None
        try:
            began = time.perf_counter()
            n_rows = None
            needs_scan = classify and classes is None
            if data_kind == "libsvm" and (spec is None or needs_scan):
                if not regular:
                    raise stream_error(args, width_missing=spec is None)
                self.progress = Progress(enabled=not args.quiet)
                cache = None if args.no_cache else ChunkCache()
                spec, classes, n_rows = scan_libsvm_input(
                    args, spec, classes, classify, self.progress, cache
                )
            elif data_kind == "csv" and spec.get("kinds") is None and needs_scan:
                if not regular:
                    raise stream_error(args, width_missing=False)
                self.progress = Progress(enabled=not args.quiet)
                spec, classes, n_rows = scan_csv_input(args, spec, classify, self.progress)
            self.progress.close()
            if classify and classes is not None and len(classes) < 2:
                raise DataError(
                    args.data,
                    None,
                    f"every label is {format_label(classes[0])}: a classifier needs two "
                    "classes or more",
                )
            if n_rows is not None:
                self.report(
                    f"scanned {args.data} in {time.perf_counter() - began:.1f} s: {n_rows:,} "
                    "rows; "
                    + describe_input(spec)
                    + (f"; classes {' '.join(map(format_label, classes))}" if classify else "")
                )
            if spec["format"] == "libsvm" and initial is None:
                check_memory(estimator, spec["n_features"], classes)
            names = None
            if spec["format"] == "csv":
                existing = getattr(initial, "hashed_feature_names_", None)
                names = FeatureNames(dict(existing) if existing else None)
            if cache is None and not args.no_cache and args.passes > 1:
                cache = ChunkCache()
            self.progress = Progress(enabled=not args.quiet)
            if args.holdout_period is not None:
                self.holdout = Holdout(args.holdout_period, args.data)
            rows = self.train_passes(estimator, spec, classes, names, cache, n_rows)
        finally:
            self.progress.close()
            if cache is not None:
                cache.close()
            if self.holdout is not None:
                self.holdout.close()
        self.save(estimator, spec, names, initial, rows)
        return 0

    def leak_check(self, spec):
        """The label-leak warning, from the first chunk of a CSV file."""

        def check(numbers_of, y):
            leaks, explained = label_leaks(numbers_of, y)
            if leaks:
                several = len(leaks) > 1
                self.warn(
                    f"the numeric column{'s' if several else ''} {', '.join(map(repr, leaks))} "
                    f"reproduce{'' if several else 's'} the label {spec['label_column']!r} "
                    f"almost exactly (R^2 = {explained:.4f} over the first {len(y):,} rows): "
                    f"derived from it? Leave {'them' if several else 'it'} out with "
                    f"--ignore {','.join(leaks)}"
                )

        return check

    def pass_sources(self, spec, names, cache, scanned):
        """The chunks of each pass: from the text, or from the cache of parsed chunks."""
        from ._io import fit_to_model

        args = self.args
        if scanned and cache is not None:  # the LIBSVM scan cached the rows as written
            layout = libsvm_layout(spec)
            for _ in range(args.passes):
                yield (fit_to_model(args.data, chunk, layout) for chunk in cache.chunks())
            return
        find_kinds = None
        if spec["format"] == "csv" and spec.get("kinds") is None:
            find_kinds = kinds_finder(args, spec)
        on_first = self.leak_check(spec) if spec["format"] == "csv" else None
        first = chunk_reader(spec, args.chunk_size, names, on_first, find_kinds)(args.data)
        if cache is None:
            yield first
            for _ in range(args.passes - 1):
                yield chunk_reader(spec, args.chunk_size)(args.data)
            return

        def caching(chunks):
            for chunk in chunks:
                cache.write(chunk)
                yield chunk

        yield caching(first)
        for _ in range(args.passes - 1):
            yield cache.chunks()

    def train_passes(self, estimator, spec, classes, names, cache, n_rows):
        """Every pass through partial_fit (until the held-out loss stops
        improving, with ``--holdout-period``); returns the training rows of a pass."""
        import numpy as np

        from ._io import DataError

        args = self.args
        holdout = self.holdout
        loss_name = "log loss" if args.task == "classify" else f"{estimator.loss} loss"
        scanned = n_rows is not None and spec["format"] == "libsvm"
        began = time.perf_counter()
        total_rows = 0
        sources = self.pass_sources(spec, names, cache, scanned)
        for number, chunks in enumerate(sources, start=1):
            loss_sum, weight_sum, rows, read = 0.0, 0.0, 0, 0
            for chunk in chunks:
                read += chunk.n_rows
                if holdout is not None:
                    chunk = holdout.training_part(chunk, first_pass=number == 1)
                    if not chunk.n_rows:
                        continue
                if total_rows == 0:
                    self.first_partial_fit(estimator, chunk, classes, spec)
                else:
                    learn(estimator, chunk, classes, args.data)
                rows += chunk.n_rows
                total_rows += chunk.n_rows
                # The chunk's mean loss, each row scored before it was learned.
                weight = (
                    chunk.n_rows
                    if chunk.sample_weight is None
                    else float(chunk.sample_weight.sum())
                )
                loss_sum += estimator.loss_curve_[-1] * weight
                weight_sum += weight
                loss = loss_sum / weight_sum if weight_sum else 0.0
                self.progress.update(
                    f"pass {number}/{args.passes} loss {loss:.4f}", read, total=n_rows
                )
            if read == 0:
                raise DataError(args.data, None, "no data rows")
            n_rows = read
            self.progress.restart()
            loss = loss_sum / weight_sum if weight_sum else 0.0
            line = f"pass {number}/{args.passes}: progressive {loss_name} {loss:.4f}"
            if holdout is None:
                self.report(line)
                continue
            held_loss, best, stop = holdout.end_pass(estimator, read)
            self.report(f"{line}, held-out {loss_name} {held_loss:.6f}{' (best)' if best else ''}")
            if stop:
                break
        seconds = time.perf_counter() - began
        if holdout is not None:
            kept = holdout.keep_best()
            self.report(
                f"kept the model of pass {holdout.stopping.best_pass} of "
                f"{len(holdout.stopping.losses)} "
                f"(held-out {loss_name} {kept:.6f})"
                + (
                    f"; stopped: no improvement of {estimator.tol:g} for "
                    f"{estimator.n_iter_no_change} passes"
                    if holdout.stopping.stopped
                    else ""
                )
            )
        coef = estimator.coef_
        self.report(
            f"trained on {total_rows:,} rows in {seconds:.1f} s "
            f"({total_rows / seconds:,.0f} rows/s, reading included; engine "
            f"{engine_name(estimator)}); non-zero weights "
            f"{np.count_nonzero(coef):,} of {coef.size:,}"
        )
        return rows

    def first_partial_fit(self, estimator, chunk, classes, spec):
        """The first partial_fit, which allocates the state: a clear error if memory lacks."""
        try:
            learn(estimator, chunk, classes, self.args.data)
        except MemoryError:
            n_outputs = 1 if classes is None or len(classes) == 2 else len(classes)
            n_features = chunk.X.shape[1]
            n_components = factors_of(estimator)
            needed = memory_needed(n_outputs, n_features, estimator.dtype, n_components)
            raise UsageError(
                memory_message(n_features, n_outputs, needed, n_components=n_components)
            ) from None

    def save(self, estimator, spec, names, initial, rows):
        from ._io import atomic_output

        args = self.args
        estimator.input_spec_ = spec
        estimator.hashed_feature_names_ = None if names is None else names.by_index
        log = list(getattr(initial, "training_log_", None) or [])
        entry = {
            "file": args.data,
            "rows": rows,
            "passes": args.passes,
            "chunk_size": args.chunk_size,
            "skftrl_version": __version__,
        }
        holdout = self.holdout
        if holdout is not None:
            # rows: those learned from; passes: those of the model kept.
            entry.update(
                passes=holdout.stopping.best_pass,
                holdout_period=holdout.period,
                held_out_rows=holdout.n_held_out,
                passes_made=len(holdout.stopping.losses),
                held_out_losses=holdout.stopping.losses,
            )
        log.append(entry)
        estimator.training_log_ = log
        scores, n_test = [], None
        if args.test is not None and is_empty(args.test):
            n_test = 0
        elif args.test is not None:
            scores, n_test = held_out_scores(
                estimator, chunk_reader(spec, READ_CHUNK_SIZE), args.test
            )
        with atomic_output(args.model) as model_file:
            save_model(estimator, args.model, model_file)
        if args.test is not None and not n_test:
            self.warn(f"{args.test} has no data rows: no held-out scores")
        for name, value in scores:
            print(f"held-out {name} ({args.test}): {value:.4f}", file=self.out)
        self.report(f"model saved to {args.model}")


def is_empty(path):
    """Whether ``path`` is an empty regular file."""
    return path != "-" and os.path.isfile(path) and os.path.getsize(path) == 0


def run_train(args, out):
    """Stream the file ``--passes`` times through partial_fit, save the model."""
    return Training(args, out).run()


# ------------------------------------------------------------ test, predict
def run_test(args, out):
    """Scores of a model on a labelled file."""
    estimator = load_model(args.model)
    spec = input_spec(estimator, args)
    scores, n_rows = held_out_scores(estimator, chunk_reader(spec, READ_CHUNK_SIZE), args.data)
    if not n_rows:
        from ._io import DataError

        raise DataError(args.data, None, "no data rows")
    print(f"rows: {n_rows:,}", file=out)
    for name, value in scores:
        print(f"{name}: {value:.4f}", file=out)
    return 0


def format_predictions(values):
    """One line a row; several values (multiclass) separated by spaces.

    ``repr`` writes the shortest text that reads back as the same float.
    """
    if values.ndim == 1:
        return "".join(f"{value!r}\n" for value in values.tolist())
    return "".join(" ".join(map(repr, row)) + "\n" for row in values.tolist())


def write_predictions(args, estimator, output):
    from ._classifier import FTRLClassifier

    read = chunk_reader(input_spec(estimator, args), READ_CHUNK_SIZE)
    for chunk in read(args.data, labels=False):
        if isinstance(estimator, FTRLClassifier):
            proba = estimator.predict_proba(chunk.X)
            values = proba[:, 1] if proba.shape[1] == 2 else proba
        else:
            values = estimator.predict(chunk.X)
        output.write(format_predictions(values))


def run_predict(args, out):
    """Stream a file through the model: one prediction per line."""
    from ._io import atomic_output

    if args.output is not None:
        written = os.path.realpath(args.output)
        for option, path in (("--model", args.model), ("DATA", args.data)):
            if path != "-" and os.path.realpath(path) == written:
                raise UsageError(
                    f"--output {args.output} is the {option} file: it would be overwritten"
                )
    estimator = load_model(args.model)
    if args.output is None:
        write_predictions(args, estimator, out)
    else:
        with atomic_output(args.output, "w") as output:
            write_predictions(args, estimator, output)
    return 0


# ------------------------------------------------------------------ inspect
def feature_namer(estimator, spec):
    """A function naming a model's column."""
    if spec["format"] == "libsvm":
        if spec.get("hash_bits") is not None:
            return lambda column: f"hashed index {column} (index mod 2**{spec['hash_bits']})"
        offset = 0 if spec["zero_based"] else 1
        names_in = getattr(estimator, "feature_names_in_", None)
        if names_in is not None and getattr(estimator, "input_spec_", None) is None:
            return lambda column: str(names_in[column])
        return lambda column: f"feature {column + offset}"
    names = estimator.hashed_feature_names_ or {}

    def name(column):
        known = names.get(column)
        return " | ".join(known) if known else f"hashed feature {column} (name not recorded)"

    return name


# The most features whose every pairwise interaction inspect computes at
# once: their Gram matrix of float64 is 32 MiB.
MAX_INTERACTION_CANDIDATES = 2048


def learned_factors(estimator):
    """The columns whose factors training has changed and are not all zero,
    and their factors, shape (n_outputs, n_columns, n_components).

    A column never learned from keeps its random initial factors: its
    interactions are noise of size ``init_stdev**2``, not learned structure.
    Only the learned columns' factors are computed, from the state in closed
    form as ``components_`` computes them, not the whole width's.
    """
    import numpy as np

    n = estimator.n_factors_
    initial_n = n.dtype.type(estimator.initial_accumulator_value)
    columns = np.flatnonzero((n != initial_n).any(axis=(0, 2)))
    factors = estimator._factors(columns)
    nonzero = (factors != 0).any(axis=(0, 2))
    return columns[nonzero], factors[:, nonzero]


def strongest_interactions(factors, top):
    """The ``top`` pairs ``a < b`` of rows of ``factors`` (n, k) with the largest
    ``|<v_a, v_b>|``: a list of ``(value, a, b)``, strongest first, and None
    when the list is certainly the strongest of all pairs, else a bound on the
    pairs left out.

    By Cauchy-Schwarz ``|<v_a, v_b>| <= |v_a| |v_b|``: the pairs among the
    ``m`` rows of largest norm are computed (a Gram matrix), and a pair with
    any other row is at most the ``m+1``-th norm times the largest. When
    that bound is no more than the ``top``-th value found, the list is exact;
    else ``m`` grows fourfold, up to MAX_INTERACTION_CANDIDATES rows.
    """
    import numpy as np

    norms = np.sqrt(np.einsum("ij,ij->i", factors, factors))
    order = np.argsort(-norms, kind="stable")
    size = min(len(order), max(64, 2 * top), MAX_INTERACTION_CANDIDATES)
    while True:
        chosen = order[:size]
        gram = factors[chosen] @ factors[chosen].T
        magnitude = np.abs(gram)
        magnitude[np.tri(size, dtype=bool)] = -1.0  # each pair once, no a with itself
        n_pairs = size * (size - 1) // 2
        count = min(top, n_pairs)
        flat = magnitude.ravel()
        found = np.argpartition(-flat, count - 1)[:count] if count else np.zeros(0, np.intp)
        if size == len(order):
            left_out = None
            break
        left_out = float(norms[order[size]] * norms[order[0]])
        if count == top and left_out <= flat[found].min():
            left_out = None
            break
        if size >= MAX_INTERACTION_CANDIDATES:
            break
        size = min(len(order), 4 * size, MAX_INTERACTION_CANDIDATES)
    pairs = []
    for position in found.tolist():
        a, b = divmod(position, size)
        pairs.append((float(gram[a, b]), *sorted((int(chosen[a]), int(chosen[b])))))
    pairs.sort(key=lambda pair: (-abs(pair[0]), pair[1], pair[2]))
    return pairs, left_out


def print_interactions(estimator, name, top, out):
    """The strongest pairwise interactions of a factorization machine, by feature name."""
    columns, factors = learned_factors(estimator)
    n_outputs, n_learned, n_components = factors.shape
    print(
        f"factors:          {n_components} a feature; {n_learned:,} features learned "
        "(factors changed by training)",
        file=out,
    )
    found, left_out = [], []
    for output in range(n_outputs):
        pairs, bound = strongest_interactions(factors[output], top)
        for value, a, b in pairs:  # columns are ascending: so are columns[a] < columns[b]
            found.append((-abs(value), output, int(columns[a]), int(columns[b]), value))
        if bound is not None:
            left_out.append(bound)
    found = sorted(found)[:top]
    n_pairs = n_learned * (n_learned - 1) // 2 * n_outputs
    print(
        f"strongest interactions <v_i, v_j> ({len(found)} of {n_pairs:,} pairs of learned "
        "features, by magnitude):",
        file=out,
    )
    if left_out:
        print(
            f"  (among the {MAX_INTERACTION_CANDIDATES:,} features of largest factor norm; "
            f"a pair with another feature is at most {max(left_out):.6g})",
            file=out,
        )
    multiclass = n_outputs > 1
    for _, output, first, second, value in found:
        where = f"class {format_label(estimator.classes_[output])}  " if multiclass else ""
        print(f"  {value:>+12.6f}  {where}{name(first)} x {name(second)}", file=out)


def run_inspect(args, out):
    """Hyper-parameters, rows seen, sparsity and the largest (or every) weight."""
    import numpy as np

    from ._classifier import FTRLClassifier

    estimator = load_model(args.model)
    spec = input_spec(estimator, args)
    log = getattr(estimator, "training_log_", None)
    coef = estimator.coef_
    nonzero = int(np.count_nonzero(coef))
    params = estimator.get_params()
    if "dtype" in params:
        params["dtype"] = np.dtype(params["dtype"]).name
    version = log[-1].get("skftrl_version", "0.1.0") if log else "saved from Python"
    print(f"model:            {args.model} (skftrl {version})", file=out)
    print(f"estimator:        {type(estimator).__name__}", file=out)
    print(
        "hyper-parameters: " + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())),
        file=out,
    )
    if isinstance(estimator, FTRLClassifier):
        classes = ", ".join(map(format_label, estimator.classes_))
        print(f"classes:          {classes}", file=out)
    print(f"input:            {describe_input(spec)}", file=out)
    if log:
        runs = "; ".join(
            f"{run['passes']} pass{'es' if run['passes'] > 1 else ''} over the "
            f"{run['rows']:,} rows of {run['file']}"
            for run in log
        )
        print(f"rows seen:        {estimator.n_samples_seen_:,} ({runs})", file=out)
    else:
        print(f"rows seen:        {estimator.n_samples_seen_:,}", file=out)
    print(
        f"non-zero weights: {nonzero:,} of {coef.size:,} ({100 * nonzero / coef.size:.2f}%)",
        file=out,
    )
    intercept = " ".join(f"{value:.6g}" for value in estimator.intercept_)
    print(f"intercept:        {intercept}", file=out)

    name = feature_namer(estimator, spec)
    multiclass = coef.shape[0] > 1
    if args.all:
        print(f"every non-zero weight ({nonzero:,}), by feature:", file=out)
        outputs, columns = np.nonzero(coef)
        order = np.lexsort((outputs, columns))
        positions = zip(outputs[order].tolist(), columns[order].tolist())
    else:
        top = min(args.top, nonzero)
        flat = np.abs(coef).ravel()
        largest = np.argpartition(-flat, top - 1)[:top] if top else np.zeros(0, np.intp)
        largest = largest[np.argsort(-flat[largest], kind="stable")]
        print(f"largest weights ({top} of {nonzero:,} non-zero, by magnitude):", file=out)
        positions = (divmod(int(position), coef.shape[1]) for position in largest)
    for output, column in positions:
        where = f"class {format_label(estimator.classes_[output])}  " if multiclass else ""
        print(f"  {coef[output, column]:>+12.6f}  {where}{name(column)}", file=out)
    if hasattr(estimator, "n_components"):
        print_interactions(estimator, name, args.top, out)
    return 0


# ------------------------------------------------------------------ options
def whole_number(text):
    """An integer; scientific notation (1e6) is accepted when it is whole."""
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not number.is_integer():
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        return int(number)


def positive_int(text):
    """An integer >= 1."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def holdout_period(text):
    """An integer >= 2: every K-th row is held out, the others learned."""
    value = whole_number(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"must be 2 or more (every K-th row is held out, the others learned), got {value}"
        )
    return value


def hash_bits(text):
    value = int(text)
    if not 1 <= value <= 30:
        raise argparse.ArgumentTypeError(f"must be from 1 to 30, got {value}")
    return value


TRAIN_DESCRIPTION = """\
Train a model on a LIBSVM/svmlight or CSV file, streamed in chunks through
partial_fit so that the file may be larger than memory. DATA is a path or -
(standard input); pipes and FIFOs work; plain text or gzip, bz2 or xz
compressed (recognised by their first bytes).

One pass reads the data when the model's width and classes are known up
front: from --n-features (or --hash-bits) and --classes, or from the model
continued with -i. Otherwise a first pass over the file finds them (the
classes, the width of LIBSVM data, the kind of each CSV column); a stream,
which cannot be read twice, then needs those options. The parsed chunks are
kept in a binary cache (a temporary file) so that the text is parsed once,
whatever --passes is.

LIBSVM: "label index:value ...", indices in ascending order; they start at 1
unless the training file has an index 0 (as load_svmlight_file's
zero_based="auto"), or --zero-based. The model is as wide as the largest
index, or --n-features; --hash-bits B takes each index modulo 2**B instead.

CSV: a header line, then one row a line; --label-column names the label. A
column whose values are all numbers (or missing: empty, NA, NaN, N/A, null) is
numeric: its value is the feature at the hashed index of the column's name.
Any other column, and every column named by --categorical, is categorical:
"column=value" is hashed to a feature of value 1. Hashing is sklearn's
FeatureHasher into 2**--hash-bits features. Without a first pass (regression,
or --classes), the kinds are those of the first chunk's values.

Classification: the classes are the distinct labels of the training file
(numbers when every label is a number, else strings), or --classes; two
classes train a logistic model, more a multinomial one.

--factors K trains a factorization machine (FMClassifier or FMRegressor,
K factors a feature) instead of the linear model.

--holdout-period K holds out every K-th row (rows K, 2K, ...), scores them
after each pass, stops when their loss has not improved by --tol for
--n-iter-no-change passes, and saves the best pass's model.

The model file is the fitted estimator, written only if everything succeeds:
joblib.load (or skops.io.load for a .skops path) returns it, with
input_spec_, hashed_feature_names_ and training_log_ for the command line. A
joblib file is a pickle: load only model files you trust."""


def regression_loss(text):
    """``--loss``: one of FTRLRegressor's losses (imported here, not at start-up)."""
    from ._engines._losses import REGRESSION_LOSSES

    if text not in REGRESSION_LOSSES:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(REGRESSION_LOSSES)})"
        )
    return text


def add_hyper_parameters(parser):
    group = parser.add_argument_group("hyper-parameters (default: the estimator's)")
    group.add_argument("--learning-rate", type=float, help="alpha, > 0 (default 0.1)")
    group.add_argument("--beta", type=float, help=">= 0 (default 1.0)")
    group.add_argument("--l1", type=float, help=">= 0 (default 0.0)")
    group.add_argument("--l2", type=float, help=">= 0 (default 0.0)")
    group.add_argument(
        "--loss",
        type=regression_loss,
        help="regression loss: one of FTRLRegressor's (default squared_error); "
        "classification always uses the log loss",
    )
    group.add_argument("--epsilon", type=float, help="Huber threshold, > 0 (default 0.1)")
    group.add_argument(
        "--batch-size", type=positive_int, help="rows per update; 1 is exact (default 1)"
    )
    group.add_argument(
        "--engine",
        choices=["auto", "numpy", "numba"],
        help="engine of the exact algorithm (default auto: numba when installed)",
    )
    factors = parser.add_argument_group(
        "factorization machine (FMClassifier, FMRegressor): pairwise interactions"
    )
    factors.add_argument(
        "--factors",
        metavar="K",
        type=positive_int,
        help="train a factorization machine with K factors a feature (n_components); "
        "its state is K+1 times the linear model's",
    )
    factors.add_argument(
        "--init-stdev",
        type=float,
        help="standard deviation of the initial factors, >= 0 (default 0.01)",
    )
    factors.add_argument(
        "--factor-learning-rate",
        type=float,
        help="the factors' alpha, > 0 (default: --learning-rate)",
    )
    factors.add_argument(
        "--factor-l2", type=float, help="per-row L2 penalty of the factors, >= 0 (default 0.03)"
    )
    factors.add_argument(
        "--random-state",
        metavar="SEED",
        type=int,
        help="seed of the initial factors (default 0: a run is repeatable)",
    )


def add_reading_options(parser):
    """Options that say how to read a file for a model made in Python."""
    parser.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM indices start at 0 (for a model saved from Python, which does not "
        "say; default: from 1)",
    )


def build_parser():
    parser = argparse.ArgumentParser(
        prog="skftrl", description="FTRL-Proximal online learning for scikit-learn."
    )
    parser.add_argument("--version", action="version", version=f"skftrl {__version__}")
    commands = parser.add_subparsers(dest="command")

    demo = commands.add_parser(
        "demo", help="train on the built-in a9a data and report held-out scores"
    )
    demo.add_argument("--learning-rate", type=float, default=0.1)
    demo.add_argument("--beta", type=float, default=1.0)
    demo.add_argument("--l1", type=float, default=1.0)
    demo.add_argument("--l2", type=float, default=0.0)
    demo.add_argument("--chunk-size", type=positive_int, default=1000)
    demo.set_defaults(run=run_demo)

    train = commands.add_parser(
        "train",
        help="train a model on a LIBSVM or CSV file, streamed",
        description=TRAIN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("data", metavar="DATA", help="training file, or - for standard input")
    train.add_argument(
        "--model",
        "-f",
        metavar="PATH",
        required=True,
        help="model file to write (.skops: skops format, else joblib)",
    )
    train.add_argument(
        "--initial-model",
        "-i",
        metavar="PATH",
        help="continue training this model (exactly as partial_fit would)",
    )
    train.add_argument("--test", metavar="DATA", help="labelled file to score at the end")
    train.add_argument(
        "--task",
        choices=["classify", "regress"],
        default=None,
        help="classification (default) or regression",
    )
    train.add_argument(
        "--format",
        choices=["auto", "libsvm", "csv"],
        default="auto",
        help="auto (default): .csv (also compressed: .csv.gz) is CSV, anything else LIBSVM",
    )
    train.add_argument(
        "--classes",
        metavar="A,B,...",
        help="the classes, comma-separated: no first pass needed to find them",
    )
    train.add_argument("--label-column", metavar="NAME", help="CSV: the label column (required)")
    train.add_argument(
        "--weight-column",
        metavar="NAME",
        help="CSV: sample weights (numbers >= 0), as partial_fit's sample_weight",
    )
    train.add_argument("--ignore", metavar="A,B,...", help="CSV: columns not to use as features")
    train.add_argument(
        "--keep", metavar="A,B,...", help="CSV: the only columns to use as features"
    )
    train.add_argument(
        "--categorical",
        metavar="A,B,...",
        help="CSV: columns whose values are categories even if they are numbers (codes)",
    )
    train.add_argument(
        "--hash-bits",
        metavar="B",
        type=hash_bits,
        help="CSV: hash features into 2**B columns, 1 to 30 (default 20); "
        "LIBSVM: take indices modulo 2**B",
    )
    train.add_argument(
        "--n-features",
        metavar="N",
        type=positive_int,
        help="LIBSVM: the model's width (default: the training file's largest index); "
        "files with larger indices are refused",
    )
    train.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM: indices start at 0 (default: from 1 unless the file has an index 0)",
    )
    train.add_argument(
        "--chunk-size",
        metavar="N",
        type=positive_int,
        default=10_000,
        help="rows per partial_fit call (default 10000)",
    )
    train.add_argument(
        "--passes",
        metavar="N",
        type=positive_int,
        default=1,
        help="passes over the file, in order (default 1)",
    )
    train.add_argument(
        "--holdout-period",
        metavar="K",
        type=holdout_period,
        help="hold out every K-th row (K, 2K, ...; as vw --holdout_period), score it after "
        "each pass, stop when its loss stops improving, keep the best pass's model",
    )
    train.add_argument(
        "--tol",
        metavar="T",
        type=float,
        help="with --holdout-period: an improvement of the held-out loss smaller than T "
        "does not count (default 1e-4, the estimator's tol)",
    )
    train.add_argument(
        "--n-iter-no-change",
        metavar="N",
        type=positive_int,
        help="with --holdout-period: stop after N passes without improvement "
        "(default 5, the estimator's n_iter_no_change; as vw --early_terminate)",
    )
    train.add_argument(
        "--no-cache",
        action="store_true",
        help="parse the text on every pass instead of caching the parsed chunks "
        "in a temporary file (about as large as the text)",
    )
    train.add_argument(
        "--quiet",
        action="store_true",
        help="print only errors and the held-out scores (no progress display; "
        "the display is shown only when stderr is a terminal)",
    )
    add_hyper_parameters(train)
    train.set_defaults(run=run_train)

    test = commands.add_parser(
        "test",
        help="score a model on a labelled file",
        description="Stream a labelled file (the model's format) through a model and "
        "print its scores: log loss, AUC (two classes) and accuracy, or RMSE and MAE.",
    )
    test.add_argument("data", metavar="DATA", help="labelled file, or - for standard input")
    test.add_argument("--model", "-i", metavar="PATH", required=True, help="model file")
    add_reading_options(test)
    test.set_defaults(run=run_test)

    predict = commands.add_parser(
        "predict",
        help="write one prediction per line",
        description="Stream a file (the model's format; labels, if present, are "
        "ignored) through a model and write one line per row: for two classes the "
        "probability of the second class in sorted order (+1 of -1/+1, 1 of 0/1); "
        "for more, the probability of each class in sorted order (see inspect), "
        "separated by spaces; for regression the prediction.",
    )
    predict.add_argument("data", metavar="DATA", help="file to predict, or - for standard input")
    predict.add_argument("--model", "-i", metavar="PATH", required=True, help="model file")
    predict.add_argument(
        "--output",
        "-p",
        metavar="FILE",
        help="write here (only if all succeeds) instead of stdout",
    )
    add_reading_options(predict)
    predict.set_defaults(run=run_predict)

    inspect = commands.add_parser(
        "inspect",
        help="show a model's hyper-parameters, sparsity and largest weights",
        description="Print a model's hyper-parameters, input, rows seen, the "
        "non-zero weights of all, and the largest weights by magnitude (or, with "
        "--all, every non-zero weight) with feature names (CSV: the column, or "
        "column=value; LIBSVM: the index); for a factorization machine, then the "
        "strongest interactions <v_i, v_j> of the features it has learned.",
    )
    inspect.add_argument("--model", "-i", metavar="PATH", required=True, help="model file")
    inspect.add_argument(
        "--top",
        metavar="K",
        type=positive_int,
        default=20,
        help="weights (and interactions) to list (default 20)",
    )
    inspect.add_argument(
        "--all", action="store_true", help="list every non-zero weight, by feature"
    )
    add_reading_options(inspect)
    inspect.set_defaults(run=run_inspect)
    return parser


def interrupt(signum, frame):
    """SIGTERM ends the command as Ctrl-C does: temporary files are removed."""
    raise KeyboardInterrupt(signum)


def main(argv=None, out=None):
    """Entry point of the ``skftrl`` command; returns the exit code."""
    out = sys.stdout if out is None else out
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["demo"])
    if args.command == "train" and args.task is None:
        args.task = "classify"
    from ._io import DataError

    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:  # signal handlers can only be set there
        previous_handler = signal.signal(signal.SIGTERM, interrupt)
    try:
        return args.run(args, out)
    except UsageError as error:  # options a user typed: one line, as argparse
        print(f"skftrl: error: {error}", file=sys.stderr)
        return 2
    except DataError as error:
        print(f"skftrl: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `skftrl predict ... | head`: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        print(f"skftrl: error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as error:  # Ctrl-C, or SIGTERM through interrupt()
        print("skftrl: interrupted", file=sys.stderr)
        signum = error.args[0] if error.args else signal.SIGINT
        return 128 + signum
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_handler)
