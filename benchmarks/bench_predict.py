"""predict_proba latency by batch size on a wide hashed model, vs SGDClassifier.

A model learns one pass of a synthetic click stream (bench_peers.py's
generator), then predicts batches of 1 to 100,000 held-out rows. For each
size it prints the median time of --repeats calls, taking turns with
SGDClassifier. "first" is the first call after learning (the model's record
of earlier predictions dropped): skftrl computes the weights, all of them or,
for few rows, only those the rows read. "again" is a call of a copy of the
model that has kept every weight (it predicted all the held-out rows once,
before any timing), as when a fixed model scores or serves many rows. Ratios are
SGDClassifier's time
over skftrl's (above 1: skftrl is faster).

    python benchmarks/bench_predict.py [--features-log2 22] [--rows 300000]
        [--engine auto] [--repeats 15]
"""

import argparse
import copy
from functools import partial

import numpy as np
from bench_peers import COMMON, forget_kept_weights, make_click_stream, seconds_to_predict
from sklearn.linear_model import SGDClassifier

from skftrl import FTRLClassifier

BATCH_ROWS = (1, 100, 10_000, 100_000)


def median_ms(calls, repeats):
    """Median milliseconds of each zero-argument call (which returns its own
    time in seconds), the calls taking turns."""
    times = [[] for _ in calls]
    for _ in range(repeats):
        for call, spent in zip(calls, times):
            spent.append(call())
    return [1e3 * np.median(spent) for spent in times]


def first_call_seconds(model, X):
    """Seconds of ``model``'s first prediction, on X, after learning."""
    forget_kept_weights(model)
    return seconds_to_predict(model, X)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features-log2", type=int, default=22)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--engine", default="auto", choices=["auto", "numpy", "numba"])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    test_rows = max(BATCH_ROWS)
    X, y, _ = make_click_stream(args.rows + test_rows, args.features_log2)
    X_train, y_train, X_test = X[: args.rows], y[: args.rows], X[args.rows :]
    model = FTRLClassifier(engine=args.engine, **COMMON).partial_fit(X_train, y_train, [0, 1])
    sgd = SGDClassifier(loss="log_loss", random_state=0).partial_fit(X_train, y_train, [0, 1])
    serving = copy.deepcopy(model)
    serving.predict_proba(X_test)
    assert serving._prediction_cache.kept, "the copy should keep its weights"
    print(
        f"{args.rows:,} training rows, 2**{args.features_log2} columns, "
        f"engine={args.engine!r}; median of {args.repeats} turns, milliseconds"
    )
    print(f"{'rows':>8} {'first':>9} {'again':>9} {'SGD':>9} {'SGD/first':>10} {'SGD/again':>10}")
    for rows in BATCH_ROWS:
        batch = X_test[:rows]
        first, again, sgd_ms = median_ms(
            [
                partial(first_call_seconds, model, batch),
                partial(seconds_to_predict, serving, batch),
                partial(seconds_to_predict, sgd, batch),
            ],
            args.repeats,
        )
        print(
            f"{rows:>8,} {first:>9.3f} {again:>9.3f} {sgd_ms:>9.3f} "
            f"{sgd_ms / first:>10.2f} {sgd_ms / again:>10.2f}"
        )


if __name__ == "__main__":
    main()
