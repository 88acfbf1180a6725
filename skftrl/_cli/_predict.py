"""``skftrl test`` and ``skftrl predict``: a model over a file, scored or predicted.

Both read the file as the model's training file was read (its input spec),
in chunks of READ_CHUNK_SIZE rows.
"""

import os

import numpy as np
from sklearn.metrics import log_loss, roc_auc_score

from .._classifier import FTRLClassifier
from .._readers._sources import DataError
from ._estimators import check_known_labels
from ._model_files import atomic_output, load_model
from ._parser import UsageError
from ._progress import format_score

# Rows per chunk when a command reads a file to score it (predict, test, --test).
READ_CHUNK_SIZE = 10_000


def held_out_scores(estimator, spec, path):
    """Metrics on a labelled file read as ``spec`` says: (name, value) pairs,
    and the row count."""
    n_rows = 0
    if not isinstance(estimator, FTRLClassifier):
        squared, absolute = 0.0, 0.0
        for chunk in spec.chunks(path, READ_CHUNK_SIZE):
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
    for chunk in spec.chunks(path, READ_CHUNK_SIZE):
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


def run_test(args, out):
    """Scores of a model on a labelled file."""
    estimator, spec = load_model(args.model, args.zero_based)
    scores, n_rows = held_out_scores(estimator, spec, args.data)
    if not n_rows:
        raise DataError(args.data, None, "no data rows")
    print(f"rows: {n_rows:,}", file=out)
    for name, value in scores:
        print(f"{name}: {format_score(value)}", file=out)
    return 0


def format_predictions(values):
    """One line a row; several values (multiclass) separated by spaces.

    ``repr`` writes the shortest text that reads back as the same float.
    """
    if values.ndim == 1:
        return "".join(f"{value!r}\n" for value in values.tolist())
    return "".join(" ".join(map(repr, row)) + "\n" for row in values.tolist())


def write_predictions(estimator, spec, path, output):
    """One line a row of the file ``path``, read as ``spec`` says, to ``output``."""
    for chunk in spec.chunks(path, READ_CHUNK_SIZE, labels=False):
        if isinstance(estimator, FTRLClassifier):
            proba = estimator.predict_proba(chunk.X)
            values = proba[:, 1] if proba.shape[1] == 2 else proba
        else:
            values = estimator.predict(chunk.X)
        output.write(format_predictions(values))


def run_predict(args, out):
    """Stream a file through the model: one prediction per line."""
    if args.output is not None:
        written = os.path.realpath(args.output)
        for option, path in (("--model", args.model), ("DATA", args.data)):
            if path != "-" and os.path.realpath(path) == written:
                raise UsageError(
                    f"--output {args.output} is the {option} file: it would be overwritten"
                )
    estimator, spec = load_model(args.model, args.zero_based)
    if args.output is None:
        write_predictions(estimator, spec, args.data, out)
    else:
        with atomic_output(args.output, "w") as output:
            write_predictions(estimator, spec, args.data, output)
    return 0
