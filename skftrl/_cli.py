"""The ``skftrl`` command line: ``demo``, ``train``, ``predict`` and ``inspect``.

Reading files is in ``_io.py``; this module parses options, runs the
estimators over the chunks, and reports. Bad input ends with one line on
stderr, ``skftrl: error: <file>:<line>: <what>``, and exit code 1; bad
options with exit code 2, as argparse does.
"""

import argparse
import os
import shutil
import signal
import sys
import threading
import time

import joblib
import numpy as np
from sklearn.metrics import log_loss, roc_auc_score

from . import __version__
from ._classifier import FTRLClassifier
from ._io import (
    MODEL_KIND,
    DataError,
    FeatureNames,
    atomic_output,
    data_format,
    load_model,
    open_binary,
    read_csv,
    read_libsvm,
    scan_csv,
    scan_libsvm,
)
from ._regressor import FTRLRegressor
from .datasets import load_a9a

# Rows per chunk when a command reads a file the user cannot size (predict, --test).
READ_CHUNK_SIZE = 10_000


class UsageError(Exception):
    """Options that cannot work together, or an invalid hyper-parameter: exit code 2."""


class Progress:
    """A one-line display on stderr, redrawn at most every ``interval`` seconds."""

    def __init__(self, enabled, stream=None, interval=0.5):
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.interval = interval
        self.last_shown = -np.inf
        self.shown = False

    def show(self, text):
        now = time.perf_counter()
        if not self.enabled or now - self.last_shown < self.interval:
            return
        width = shutil.get_terminal_size().columns - 1
        self.stream.write("\r" + text[:width] + "\033[K")
        self.stream.flush()
        self.last_shown = now
        self.shown = True

    def clear(self):
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False
        self.last_shown = -np.inf


def format_label(label):
    """A class label as a user wrote it: 1 rather than 1.0."""
    return f"{label:g}" if isinstance(label, (float, np.floating)) else str(label)


def validated(estimator):
    """The estimator, its hyper-parameters and engine checked before any data is read."""
    try:
        estimator._validate_params()  # the engine too: numba needs numba and batch_size=1
    except (ValueError, ImportError) as error:
        raise UsageError(str(error)) from None
    return estimator


# --------------------------------------------------------------------- demo
def run_demo(args, out):
    """One streaming pass over a9a, with progressive validation, then a test score."""
    model = validated(
        FTRLClassifier(learning_rate=args.learning_rate, beta=args.beta, l1=args.l1, l2=args.l2)
    )
    X_train, y_train, X_test, y_test = load_a9a()
    classes = np.unique(y_train)
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
    print(f"training speed:            {n_rows / train_seconds:,.0f} rows/s", file=out)
    return 0


# -------------------------------------------------------------------- train
def make_estimator(args):
    """The estimator the options ask for; options left unset keep its defaults."""
    given = {
        "learning_rate": args.learning_rate,
        "beta": args.beta,
        "l1": args.l1,
        "l2": args.l2,
        "batch_size": args.batch_size,
        "engine": args.engine,
    }
    params = {name: value for name, value in given.items() if value is not None}
    if args.task == "classify":
        if args.loss is not None or args.epsilon is not None:
            raise UsageError(
                "--loss and --epsilon are for --task regress; classification "
                "uses the log loss (two classes) or the multinomial loss (more)"
            )
        return validated(FTRLClassifier(**params))
    if args.loss is not None:
        params["loss"] = args.loss
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    return validated(FTRLRegressor(**params))


def check_format_options(args, data_kind):
    """Options that belong to the other format are mistakes, not silently ignored."""
    if data_kind == "csv":
        if args.label_column is None:
            raise UsageError(f"{args.data} is read as CSV, which needs --label-column NAME")
        if args.n_features is not None:
            raise UsageError("--n-features is for LIBSVM data; CSV data is hashed (--hash-bits)")
    else:
        if args.label_column is not None or args.hash_bits is not None:
            raise UsageError(
                f"{args.data} is read as LIBSVM, which takes neither --label-column "
                "nor --hash-bits (use --format csv for CSV data)"
            )


def chunk_reader(spec, chunk_size, names=None):
    """A function ``read(path, labels=True)`` giving a file's chunks as ``spec`` says.

    ``spec`` is the model file's ``"input"``: how its training file was read.
    """
    if spec["format"] == "libsvm":

        def read(path, labels=True):
            return read_libsvm(
                path, chunk_size, spec["n_features"], spec["zero_based"], labels_required=labels
            )

    else:

        def read(path, labels=True):
            return read_csv(
                path, spec, chunk_size, "required" if labels else "ignored", names
            )

    return read


def scan_training_file(args, data_kind, classify, progress):
    """The first pass: the model's input spec, its classes, and the row count."""
    name = os.path.basename(args.data)

    def show(rows):
        progress.show(f"scanning {name}: {rows:,} rows")

    if data_kind == "libsvm":
        scan = scan_libsvm(args.data, args.chunk_size, classify, progress=show)
        n_features = scan.n_features
        if args.n_features is not None:
            if args.n_features < scan.n_features:
                raise DataError(
                    args.data,
                    scan.largest_index_line,
                    f"feature index {scan.largest_index} is beyond --n-features "
                    f"{args.n_features}",
                )
            n_features = args.n_features
        spec = {"format": "libsvm", "n_features": n_features, "zero_based": scan.zero_based}
    else:
        hash_bits = 20 if args.hash_bits is None else args.hash_bits
        scan = scan_csv(args.data, args.label_column, hash_bits, args.chunk_size, classify, show)
        spec = {"format": "csv", **scan.layout}
    progress.clear()
    if classify and len(scan.labels) < 2:
        raise DataError(
            args.data,
            None,
            f"every label is {format_label(scan.labels[0])}: a classifier needs two classes or more",
        )
    return spec, scan.labels, scan.n_rows


def describe_input(spec):
    if spec["format"] == "libsvm":
        first = 0 if spec["zero_based"] else 1
        return f"LIBSVM, {spec['n_features']:,} features (indices from {first})"
    kinds = list(spec["kinds"].values())
    return (
        f"CSV, label column {spec['label_column']!r}, "
        f"{kinds.count('numeric')} numeric and {kinds.count('categorical')} "
        f"categorical columns hashed into 2**{spec['hash_bits']} features"
    )


def learn(estimator, chunk, classes, path):
    """``partial_fit`` on one chunk; a refusal is reported with the chunk's lines."""
    if getattr(estimator, "loss", None) == "poisson" and np.any(chunk.y < 0):
        line = chunk.lines[np.flatnonzero(chunk.y < 0)[0]]
        raise DataError(path, int(line), "--loss poisson needs labels >= 0")
    try:
        if classes is None:
            estimator.partial_fit(chunk.X, chunk.y)
        else:
            estimator.partial_fit(chunk.X, chunk.y, classes=classes)
    except ValueError as error:
        first, last = int(chunk.lines[0]), int(chunk.lines[-1])
        raise DataError(path, first, f"in the rows of lines {first}-{last}: {error}") from None


def check_known_labels(path, chunk, classes):
    """Every label of a test file must be one of the model's classes."""
    unknown = np.flatnonzero(~np.isin(chunk.y, classes))
    if unknown.size:
        raise DataError(
            path,
            int(chunk.lines[unknown[0]]),
            f"the label {format_label(chunk.y[unknown[0]])} is not one of the model's "
            f"classes ({', '.join(map(format_label, classes))})",
        )


def held_out_scores(estimator, read, path):
    """Metrics on a labelled file: name, value pairs."""
    n_rows = 0
    if isinstance(estimator, FTRLRegressor):
        squared, absolute = 0.0, 0.0
        for chunk in read(path):
            residuals = estimator.predict(chunk.X) - chunk.y
            squared += float(residuals @ residuals)
            absolute += float(np.abs(residuals).sum())
            n_rows += chunk.X.shape[0]
        return [("RMSE", np.sqrt(squared / n_rows)), ("MAE", absolute / n_rows)]

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
    scores = [("log loss", loss_sum / n_rows)]
    if len(classes) == 2:
        labels = np.concatenate(labels)
        if 0 < labels.sum() < labels.size:  # AUC needs both classes
            scores.append(("AUC", roc_auc_score(labels, np.concatenate(positive_proba))))
    scores.append(("accuracy", correct / n_rows))
    return scores


def run_train(args, out):
    """Scan the file, stream it ``--passes`` times through partial_fit, save the model."""
    estimator = make_estimator(args)
    classify = args.task == "classify"
    data_kind = data_format(args.data, args.format)
    check_format_options(args, data_kind)
    if args.test is not None:
        open_binary(args.test).close()  # fail now, not after training
    progress = Progress(enabled=not args.quiet and sys.stderr.isatty())

    def report(text):
        if not args.quiet:
            print(text, file=out)

    loss_name = "log loss" if classify else f"{estimator.loss} loss"
    with atomic_output(args.model) as model_file:
        began = time.perf_counter()
        spec, classes, n_rows = scan_training_file(args, data_kind, classify, progress)
        scan_seconds = time.perf_counter() - began
        report(
            f"scanned {args.data} in {scan_seconds:.1f} s: {n_rows:,} rows; "
            + describe_input(spec)
            + (f"; classes {' '.join(map(format_label, classes))}" if classify else "")
        )
        names = FeatureNames() if spec["format"] == "csv" else None
        began = time.perf_counter()
        for number in range(1, args.passes + 1):
            # Feature names are recorded in the first pass; later passes see the same.
            read = chunk_reader(spec, args.chunk_size, names if number == 1 else None)
            loss_sum, rows = 0.0, 0
            for chunk in read(args.data):
                learn(estimator, chunk, classes, args.data)
                rows += chunk.X.shape[0]
                # The chunk's mean loss, each row scored before it was learned.
                loss_sum += estimator.loss_curve_[-1] * chunk.X.shape[0]
                done = (number - 1) * n_rows + rows
                progress.show(
                    f"pass {number}/{args.passes}: {rows:,} of {n_rows:,} rows, "
                    f"{done / (time.perf_counter() - began):,.0f} rows/s, "
                    f"progressive {loss_name} {loss_sum / rows:.4f}"
                )
            progress.clear()
            report(f"pass {number}/{args.passes}: progressive {loss_name} {loss_sum / rows:.4f}")
        seconds = time.perf_counter() - began
        coef = estimator.coef_
        report(
            f"trained on {args.passes * n_rows:,} rows in {seconds:.1f} s "
            f"({args.passes * n_rows / seconds:,.0f} rows/s, reading included); "
            f"non-zero weights {np.count_nonzero(coef):,} of {coef.size:,}"
        )
        scores = []
        if args.test is not None:
            scores = held_out_scores(estimator, chunk_reader(spec, READ_CHUNK_SIZE), args.test)
        joblib.dump(
            {
                "kind": MODEL_KIND,
                "skftrl_version": __version__,
                "task": args.task,
                "estimator": estimator,
                "input": spec,
                "feature_names": None if names is None else names.by_index,
                "training": {
                    "file": args.data,
                    "rows": n_rows,
                    "passes": args.passes,
                    "chunk_size": args.chunk_size,
                },
            },
            model_file,
        )
    for name, value in scores:
        print(f"held-out {name} ({args.test}): {value:.4f}", file=out)
    report(f"model saved to {args.model}")
    return 0


# ------------------------------------------------------------------ predict
def format_predictions(values):
    """One line a row; several values (multiclass) separated by spaces.

    ``repr`` writes the shortest text that reads back as the same float.
    """
    if values.ndim == 1:
        return "".join(f"{value!r}\n" for value in values.tolist())
    return "".join(" ".join(map(repr, row)) + "\n" for row in values.tolist())


def write_predictions(args, model, output):
    estimator = model["estimator"]
    read = chunk_reader(model["input"], READ_CHUNK_SIZE)
    for chunk in read(args.data, labels=False):
        if isinstance(estimator, FTRLClassifier):
            proba = estimator.predict_proba(chunk.X)
            values = proba[:, 1] if proba.shape[1] == 2 else proba
        else:
            values = estimator.predict(chunk.X)
        output.write(format_predictions(values))


def run_predict(args, out):
    """Stream a file through the model: one prediction per line."""
    model = load_model(args.model)
    if args.output is None:
        write_predictions(args, model, out)
    else:
        with atomic_output(args.output, "w") as output:
            write_predictions(args, model, output)
    return 0


# ------------------------------------------------------------------ inspect
def feature_name(model, column):
    spec = model["input"]
    if spec["format"] == "libsvm":
        return f"feature {column + (0 if spec['zero_based'] else 1)}"
    names = model["feature_names"].get(column)
    if names:
        return " | ".join(names)
    return f"hashed feature {column} (name not recorded)"


def run_inspect(args, out):
    """Hyper-parameters, rows seen, sparsity and the largest weights."""
    model = load_model(args.model)
    estimator = model["estimator"]
    training = model["training"]
    coef = estimator.coef_
    nonzero = int(np.count_nonzero(coef))
    params = estimator.get_params()
    if "dtype" in params:
        params["dtype"] = np.dtype(params["dtype"]).name
    print(f"model:            {args.model} (skftrl {model['skftrl_version']})", file=out)
    print(f"estimator:        {type(estimator).__name__}", file=out)
    print(
        "hyper-parameters: " + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())),
        file=out,
    )
    if isinstance(estimator, FTRLClassifier):
        classes = ", ".join(map(format_label, estimator.classes_))
        print(f"classes:          {classes}", file=out)
    print(f"input:            {describe_input(model['input'])}", file=out)
    print(
        f"rows seen:        {estimator.n_samples_seen_:,} ({training['passes']} "
        f"pass{'es' if training['passes'] > 1 else ''} over the {training['rows']:,} "
        f"rows of {training['file']})",
        file=out,
    )
    print(
        f"non-zero weights: {nonzero:,} of {coef.size:,} ({100 * nonzero / coef.size:.2f}%)",
        file=out,
    )
    intercept = " ".join(f"{value:.6g}" for value in estimator.intercept_)
    print(f"intercept:        {intercept}", file=out)

    top = min(args.top, nonzero)
    flat = np.abs(coef).ravel()
    largest = np.argpartition(-flat, top - 1)[:top] if top else np.zeros(0, np.intp)
    largest = largest[np.argsort(-flat[largest], kind="stable")]
    multiclass = coef.shape[0] > 1
    print(f"largest weights ({top} of {nonzero:,} non-zero, by magnitude):", file=out)
    for position in largest:
        output, column = divmod(int(position), coef.shape[1])
        where = f"class {format_label(estimator.classes_[output])}  " if multiclass else ""
        print(f"  {coef[output, column]:>+12.6f}  {where}{feature_name(model, column)}", file=out)
    return 0


# ------------------------------------------------------------------ options
def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def hash_bits(text):
    value = int(text)
    if not 1 <= value <= 30:
        raise argparse.ArgumentTypeError(f"must be from 1 to 30, got {value}")
    return value


TRAIN_DESCRIPTION = """\
Train a model on a LIBSVM/svmlight or CSV file, plain or gzip-compressed,
streamed in chunks through partial_fit so that the file may be larger than
memory. The file is read once more than --passes: a first pass finds what the
model must know before it learns (the classes, the width of LIBSVM data, the
kind of each CSV column).

LIBSVM: "label index:value ...", indices in ascending order; they start at 1
unless the training file has an index 0 (as load_svmlight_file's
zero_based="auto"). The model is as wide as the largest index, or
--n-features.

CSV: a header line, then one row a line; --label-column names the label. A
column whose values are all numbers (or missing: empty, NA, NaN, N/A, null) is
numeric: its value is the feature at the hashed index of the column's name.
Any other column is categorical: "column=value" is hashed to a feature of
value 1. Hashing is sklearn's FeatureHasher into 2**--hash-bits features.

Classification: the classes are the distinct labels of the training file
(numbers when every label is a number, else strings); two classes train a
logistic model, more a multinomial one.

The model is written to --model only if everything succeeds (through a
temporary file in the same directory), with what predict and inspect need. It
is a pickle: load only model files you trust."""


def add_hyper_parameters(parser):
    group = parser.add_argument_group("hyper-parameters (default: the estimator's)")
    group.add_argument("--learning-rate", type=float, help="alpha, > 0 (default 0.1)")
    group.add_argument("--beta", type=float, help=">= 0 (default 1.0)")
    group.add_argument("--l1", type=float, help=">= 0 (default 0.0)")
    group.add_argument("--l2", type=float, help=">= 0 (default 0.0)")
    group.add_argument(
        "--loss",
        choices=["squared_error", "huber", "poisson"],
        help="regression loss (default squared_error); classification always "
        "uses the log loss",
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
    train.add_argument("data", metavar="DATA", help="training file (.gz: compressed)")
    train.add_argument("--model", metavar="PATH", required=True, help="model file to write")
    train.add_argument("--test", metavar="DATA", help="labelled file to score at the end")
    train.add_argument(
        "--task", choices=["classify", "regress"], default="classify",
        help="classification (default) or regression",
    )
    train.add_argument(
        "--format", choices=["auto", "libsvm", "csv"], default="auto",
        help="auto (default): .csv or .csv.gz is CSV, anything else LIBSVM",
    )
    train.add_argument("--label-column", metavar="NAME", help="CSV: the label column (required)")
    train.add_argument(
        "--hash-bits", metavar="B", type=hash_bits,
        help="CSV: hash features into 2**B columns, 1 to 30 (default 20)",
    )
    train.add_argument(
        "--n-features", metavar="N", type=positive_int,
        help="LIBSVM: the model's width (default: the training file's largest index); "
        "files with larger indices are refused",
    )
    train.add_argument(
        "--chunk-size", metavar="N", type=positive_int, default=10_000,
        help="rows per partial_fit call (default 10000)",
    )
    train.add_argument(
        "--passes", metavar="N", type=positive_int, default=1,
        help="passes over the file, in order (default 1)",
    )
    train.add_argument(
        "--quiet", action="store_true",
        help="print only errors and the held-out scores (no progress display; "
        "the display is shown only when stderr is a terminal)",
    )
    add_hyper_parameters(train)
    train.set_defaults(run=run_train)

    predict = commands.add_parser(
        "predict",
        help="write one prediction per line",
        description="Stream a file (the model's format; labels, if present, are "
        "ignored) through a model and write one line per row: for two classes the "
        "probability of the second class in sorted order (+1 of -1/+1, 1 of 0/1); "
        "for more, the probability of each class in sorted order (see inspect), "
        "separated by spaces; for regression the prediction.",
    )
    predict.add_argument("data", metavar="DATA", help="file to predict (.gz: compressed)")
    predict.add_argument("--model", metavar="PATH", required=True, help="model file")
    predict.add_argument(
        "--output", metavar="FILE", help="write here (only if all succeeds) instead of stdout"
    )
    predict.set_defaults(run=run_predict)

    inspect = commands.add_parser(
        "inspect",
        help="show a model's hyper-parameters, sparsity and largest weights",
        description="Print a model's hyper-parameters, input, rows seen, the "
        "non-zero weights of all, and the largest weights by magnitude with "
        "feature names (CSV: the column, or column=value; LIBSVM: the index).",
    )
    inspect.add_argument("--model", metavar="PATH", required=True, help="model file")
    inspect.add_argument(
        "--top", metavar="K", type=positive_int, default=20, help="weights to list (default 20)"
    )
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
