"""``skftrl demo``: one streaming pass over the a9a data shipped with skftrl."""

import time

import numpy as np
from sklearn.base import clone
from sklearn.metrics import log_loss, roc_auc_score

from .. import __version__
from .._classifier import FTRLClassifier
from ..datasets import load_a9a
from ._estimators import engine_name, validated


def run(args, out):
    """One streaming pass over a9a, with progressive validation, then a test score."""
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
