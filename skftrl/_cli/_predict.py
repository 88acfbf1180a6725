"""``skftrl test`` and ``skftrl predict``: a model over a file, scored or predicted.

Both read the file as the model's training file was read (its input spec),
in chunks of READ_CHUNK_SIZE rows.
"""

import os

import numpy as np

from .._classifier import FTRLClassifier
from .._readers._sources import DataError
from ._estimators import check_known_labels, format_label
from ._model_files import atomic_output, load_model
from ._parser import UsageError
from ._progress import format_score

# Rows per chunk when a command reads a file to score it (predict, test, --test).
READ_CHUNK_SIZE = 10_000


def held_out_scores(estimator, spec, path, reading=None):
    """Metrics on a labelled file read as ``spec`` says (with the options
    ``reading`` of :func:`reading_options`): (name, value) pairs, and the row
    count."""
    # Imported here: sklearn.metrics brings scipy.stats, which a command
    # without scores never executes (skftrl._cli.lean_imports).
    from sklearn.metrics import log_loss, mean_poisson_deviance, roc_auc_score

    n_rows, reading = 0, reading or {}
    if not isinstance(estimator, FTRLClassifier):
        squared, absolute, deviance = 0.0, 0.0, 0.0
        for chunk in spec.chunks(path, READ_CHUNK_SIZE, **reading):
            predicted = estimator.predict(chunk.X)
            residuals = predicted - chunk.y
            squared += float(residuals @ residuals)
            absolute += float(np.abs(residuals).sum())
            if estimator.loss == "poisson":
                deviance += mean_poisson_deviance(chunk.y, predicted) * chunk.n_rows
            n_rows += chunk.X.shape[0]
        if not n_rows:
            return [], 0
        scores = [("RMSE", np.sqrt(squared / n_rows)), ("MAE", absolute / n_rows)]
        if estimator.loss == "poisson":
            scores.append(("mean Poisson deviance", deviance / n_rows))
        return scores, n_rows

    classes = estimator.classes_
    loss_sum, correct = 0.0, 0
    labels, positive_proba = [], []  # binary AUC needs every score
    for chunk in spec.chunks(path, READ_CHUNK_SIZE, **reading):
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


def reading_options(args, spec):
    """The options of ``spec.chunks`` that a command's flags ask for
    (``--drop-extra-features``, ``--id-column``, ``--column-names``); a flag
    of another format is a UsageError."""
    options = {}
    if args.drop_extra_features:
        if spec.format != "libsvm":
            raise UsageError(
                "--drop-extra-features is for LIBSVM models; this model reads CSV, whose "
                "features are hashed into its width"
            )
        options["drop_extra"] = True
    if getattr(args, "id_column", None) is not None:
        if spec.format not in ("csv", "parquet"):
            raise UsageError(
                "--id-column is for CSV and Parquet models: LIBSVM rows have no id column, "
                "and VW rows end with their tags"
            )
        options["tag_column"] = args.id_column
    if args.column_names is not None:
        if spec.format != "csv":
            raise UsageError("--column-names is for CSV models, which read a header line")
        options["column_names"] = args.column_names
    return options


def run_test(args, out):
    """Scores of a model on a labelled file."""
    estimator, spec = load_model(args.model, args.zero_based)
    scores, n_rows = held_out_scores(estimator, spec, args.data, reading_options(args, spec))
    if not n_rows:
        raise DataError(args.data, None, "no data rows")
    print(f"rows: {n_rows:,}", file=out)
    for name, value in scores:
        print(f"{name}: {format_score(value)}", file=out)
    return 0


def output_values(estimator, X, output_type):
    """The values ``predict`` writes for the rows of ``X``: an array of one or
    more numbers a row, or of labels (strings)."""
    if isinstance(estimator, FTRLClassifier):
        if output_type == "label":
            return np.array([format_label(label) for label in estimator.predict(X)])
        if output_type == "raw":
            return estimator.decision_function(X)
        proba = estimator.predict_proba(X)
        return proba[:, 1] if proba.shape[1] == 2 else proba
    predicted = estimator.predict(X)
    if output_type == "raw" and estimator.loss == "poisson":  # the margin: log of the mean
        with np.errstate(divide="ignore"):
            return np.log(predicted)
    return predicted


def format_predictions(values, tags=None):
    """One line a row; several values (multiclass) separated by spaces, then
    the row's tag if it has one (not empty), as Vowpal Wabbit writes them.

    ``repr`` writes the shortest text that reads back as the same float.
    """
    texts = values.tolist()
    if values.dtype.kind == "f":
        texts = (
            [repr(value) for value in texts]
            if values.ndim == 1
            else [" ".join(map(repr, row)) for row in texts]
        )
    if tags is not None:
        texts = [
            f"{text} {one_line(tag)}" if tag else text for text, tag in zip(texts, tags.tolist())
        ]
    return "".join(f"{text}\n" for text in texts)


def one_line(tag):
    """A tag with its line ends written ``\\n`` and ``\\r``: each row's
    prediction stays one line."""
    if "\n" in tag or "\r" in tag:
        return tag.replace("\r", "\\r").replace("\n", "\\n")
    return tag


def write_predictions(estimator, spec, path, output, output_type=None, reading=None):
    """One line a row of the file ``path``, read as ``spec`` says, to ``output``."""
    for chunk in spec.chunks(path, READ_CHUNK_SIZE, labels=False, **(reading or {})):
        values = output_values(estimator, chunk.X, output_type)
        output.write(format_predictions(values, chunk.tags))


def run_predict(args, out):
    """Stream a file through the model: one prediction per line."""
    if args.output is not None:
        written = os.path.realpath(args.output)
        for option, path in (("model", args.model), ("DATA", args.data)):
            if path != "-" and os.path.realpath(path) == written:
                raise UsageError(
                    f"--output {args.output} is the {option} file: it would be overwritten"
                )
    estimator, spec = load_model(args.model, args.zero_based)
    if args.output_type == "probability" and not isinstance(estimator, FTRLClassifier):
        raise UsageError(
            f"{args.model} is a regressor: its predictions are values (--output-type label, "
            "or raw for the margin), not probabilities"
        )
    reading = reading_options(args, spec)
    if args.output is None:
        write_predictions(estimator, spec, args.data, out, args.output_type, reading)
    else:
        with atomic_output(args.output, "w") as output:
            write_predictions(estimator, spec, args.data, output, args.output_type, reading)
    return 0
