"""Speed of one partial_fit pass over a9a: skftrl's exact per-row engine vs SGDClassifier.

Both learners run in this process on the same CSR data. Prints the median of
several runs in rows per second, the ratio to SGDClassifier, and held-out log
loss; then the cost of a partial_fit call on a single row (streaming one event
at a time), where validation overhead dominates.

    python benchmarks/bench_partial_fit.py [--repeats 5]
"""

import argparse
import time

import numpy as np
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import log_loss

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a


def median_seconds(run, repeats):
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - began)
    return float(np.median(seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--single-rows", type=int, default=2000)
    args = parser.parse_args()

    X_train, y_train, X_test, y_test = load_a9a()
    classes = np.unique(y_train)
    learners = {
        "SGDClassifier(log_loss)": lambda: SGDClassifier(loss="log_loss", random_state=0),
        "FTRLClassifier(l1=1)": lambda: FTRLClassifier(l1=1.0),
    }

    print(f"one partial_fit pass over a9a ({X_train.shape[0]:,} rows), median of {args.repeats}")
    speeds = {}
    for name, make in learners.items():
        model = make()
        seconds = median_seconds(
            lambda make=make: make().partial_fit(X_train, y_train, classes=classes), args.repeats
        )
        model.partial_fit(X_train, y_train, classes=classes)
        speeds[name] = X_train.shape[0] / seconds
        loss = log_loss(y_test, model.predict_proba(X_test))
        print(
            f"  {name:<26} {speeds[name]:>12,.0f} rows/s  "
            f"ratio to SGD {speeds[name] / speeds['SGDClassifier(log_loss)']:5.2f}  "
            f"held-out log loss {loss:.4f}"
        )

    rows = [X_train[i] for i in range(args.single_rows)]
    print(f"partial_fit called once per row, {args.single_rows:,} calls, median of {args.repeats}")
    costs = {}
    for name, make in learners.items():
        model = make().partial_fit(X_train[:10], y_train[:10], classes=classes)

        def stream(model=model):
            for i, row in enumerate(rows):
                model.partial_fit(row, y_train[i : i + 1])

        costs[name] = median_seconds(stream, args.repeats) / args.single_rows * 1e6
        print(
            f"  {name:<26} {costs[name]:>8,.0f} us per call  "
            f"ratio to SGD {costs['SGDClassifier(log_loss)'] / costs[name]:5.2f} (speed)"
        )


if __name__ == "__main__":
    main()
