"""The ``skftrl`` command line: ``skftrl demo`` trains on the shipped a9a data."""

import argparse
import sys
import time

import numpy as np
from sklearn.metrics import log_loss, roc_auc_score

from . import __version__
from ._classifier import FTRLClassifier
from .datasets import load_a9a


def run_demo(args, out):
    """One streaming pass over a9a, with progressive validation, then a test score."""
    X_train, y_train, X_test, y_test = load_a9a()
    model = FTRLClassifier(
        learning_rate=args.learning_rate, beta=args.beta, l1=args.l1, l2=args.l2
    )
    classes = np.unique(y_train)
    print(
        f"skftrl {__version__} demo: one FTRL-Proximal pass over a9a "
        f"({X_train.shape[0]:,} rows, {X_train.shape[1]} features), "
        f"learning_rate={args.learning_rate}, beta={args.beta}, l1={args.l1}, l2={args.l2}",
        file=out,
    )
    print(
        f"progressive validation: each {args.chunk_size:,}-row chunk is scored "
        "before it is learned",
        file=out,
    )
    loss_sum = 0.0
    train_seconds = 0.0
    n_rows = X_train.shape[0]
    for chunk, start in enumerate(range(0, n_rows, args.chunk_size), start=1):
        X_chunk = X_train[start : start + args.chunk_size]
        y_chunk = y_train[start : start + args.chunk_size]
        if start > 0:
            proba = model.predict_proba(X_chunk)
            loss_sum += log_loss(y_chunk, proba, labels=classes, normalize=False)
        began = time.perf_counter()
        model.partial_fit(X_chunk, y_chunk, classes=classes)
        train_seconds += time.perf_counter() - began
        seen = start + X_chunk.shape[0]
        if chunk > 1 and (chunk % 8 == 0 or seen == n_rows):
            scored = seen - args.chunk_size
            print(f"  rows {seen:>7,}  progressive log loss {loss_sum / scored:.4f}", file=out)

    proba = model.predict_proba(X_test)[:, 1]
    nonzero = int(np.count_nonzero(model.coef_))
    print(f"held-out log loss (a9a.t): {log_loss(y_test, proba):.4f}", file=out)
    print(f"held-out AUC (a9a.t):      {roc_auc_score(y_test, proba):.4f}", file=out)
    print(f"non-zero weights:          {nonzero} of {model.coef_.size}", file=out)
    print(f"training speed:            {n_rows / train_seconds:,.0f} rows/s", file=out)
    return 0


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
    demo.add_argument("--chunk-size", type=int, default=1000)
    demo.set_defaults(run=run_demo)
    return parser


def main(argv=None, out=None):
    """Entry point of the ``skftrl`` command; returns the exit code."""
    out = sys.stdout if out is None else out
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["demo"])
    try:
        return args.run(args, out)
    except ValueError as error:  # bad values a user typed: one line, no traceback
        parser.exit(2, f"skftrl: error: {error}\n")
