"""Speed of the factorization machines: rows per second of FMClassifier's
engines (numba and numpy per row, numpy mini-batches of --batch-size rows)
against the linear numba engine and river's facto.FMClassifier.

The rows are bench_peers.py's synthetic click stream (20 hashed one-hot fields
a row, 2^--features-log2 columns). Every learner sees the same rows once, in
order, through partial_fit in chunks of --chunk-size rows (river: learn_one
per row, on the first --river-rows rows, as it takes one Python call per row);
only the learning calls are timed. The learners take turns within each of
--repeats repeats, in this process, and the median rows/s is reported, with
its ratio to the linear numba engine and river's; the held-out log loss (the
last 10% of the rows, after one pass) is printed for information.

    python benchmarks/bench_fm.py [--rows 200000] [--features-log2 20] [--k 8]
        [--repeats 3] [--river-rows 20000] [--numpy-rows 20000] [--batch-size 64]

Wordbatch's FM_FTRL (Cython) is not compared: its sdist (1.4.9, the only
release pip finds here) fails to build ("No module named 'Cython'" in its
setup.py, which does not declare Cython as a build requirement).
"""

import argparse
import platform
import statistics
import time

import numpy as np
from bench_peers import make_click_stream
from sklearn.metrics import log_loss

import skftrl
from skftrl import FMClassifier, FTRLClassifier

try:
    from river import facto
except ImportError:
    facto = None

CLASSES = np.array([0, 1])


def timed_partial_fit(model, X, y, chunk_size):
    """Seconds spent in partial_fit over X in consecutive chunks (sliced beforehand)."""
    chunks = [
        (X[i : i + chunk_size], y[i : i + chunk_size]) for i in range(0, X.shape[0], chunk_size)
    ]
    seconds = 0.0
    for X_chunk, y_chunk in chunks:
        began = time.perf_counter()
        model.partial_fit(X_chunk, y_chunk, classes=CLASSES)
        seconds += time.perf_counter() - began
    return seconds


def river_rows(X, y):
    """Each row as river's dict {column: value}, made before any timing."""
    return [
        (
            dict(
                zip(
                    X.indices[X.indptr[i] : X.indptr[i + 1]].tolist(),
                    X.data[X.indptr[i] : X.indptr[i + 1]].tolist(),
                )
            ),
            bool(y[i]),
        )
        for i in range(X.shape[0])
    ]


def timed_river(rows, k):
    model = facto.FMClassifier(n_factors=k, seed=0)
    began = time.perf_counter()
    for x, label in rows:
        model.learn_one(x, label)
    return model, time.perf_counter() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features-log2", type=int, default=20)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--river-rows", type=int, default=20_000)
    parser.add_argument("--numpy-rows", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    X, y, _ = make_click_stream(args.rows, args.features_log2)
    cut = X.shape[0] - X.shape[0] // 10
    X_train, y_train, X_test, y_test = X[:cut], y[:cut], X[cut:], y[cut:]
    print(
        f"skftrl {skftrl.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}; synthetic click stream: {X_train.shape[0]:,} "
        f"training rows x 2^{args.features_log2} columns, {X_train.nnz / X_train.shape[0]:.1f} "
        f"non-zeros a row; k={args.k}; median of {args.repeats} repeats"
    )
    learners = {
        "linear FTRL numba": lambda: FTRLClassifier(engine="numba"),
        f"FM numba k={args.k}": lambda: FMClassifier(
            engine="numba", n_components=args.k, random_state=0
        ),
        f"FM numpy k={args.k}": lambda: FMClassifier(
            engine="numpy", n_components=args.k, random_state=0
        ),
        f"FM numpy batch={args.batch_size} k={args.k}": lambda: FMClassifier(
            engine="numpy", batch_size=args.batch_size, n_components=args.k, random_state=0
        ),
    }
    # Compile (or load the compiled code) before timing.
    for make in learners.values():
        make().partial_fit(X_train[:16], y_train[:16], classes=CLASSES)
    rows_of = {label: X_train.shape[0] for label in learners}
    rows_of[f"FM numpy k={args.k}"] = min(args.numpy_rows, X_train.shape[0])
    rows_of["river facto.FMClassifier"] = min(args.river_rows, X_train.shape[0])
    river_data = (
        river_rows(X_train[: rows_of["river facto.FMClassifier"]], y_train) if facto else None
    )

    speeds = {label: [] for label in rows_of}
    losses = {}
    for _ in range(args.repeats):
        for label, make in learners.items():
            model = make()
            n = rows_of[label]
            seconds = timed_partial_fit(model, X_train[:n], y_train[:n], args.chunk_size)
            speeds[label].append(n / seconds)
            losses[label] = log_loss(y_test, model.predict_proba(X_test))
        if facto is not None:
            model, seconds = timed_river(river_data, args.k)
            speeds["river facto.FMClassifier"].append(len(river_data) / seconds)
            probabilities = [
                model.predict_proba_one(
                    dict(
                        zip(
                            X_test.indices[X_test.indptr[i] : X_test.indptr[i + 1]].tolist(),
                            X_test.data[X_test.indptr[i] : X_test.indptr[i + 1]].tolist(),
                        )
                    )
                ).get(True, 0.0)
                for i in range(min(X_test.shape[0], 5000))
            ]
            losses["river facto.FMClassifier"] = log_loss(
                y_test[: len(probabilities)], np.clip(probabilities, 1e-15, 1 - 1e-15)
            )

    median = {label: statistics.median(values) for label, values in speeds.items() if values}
    linear, fm = median["linear FTRL numba"], median[f"FM numba k={args.k}"]
    river = median.get("river facto.FMClassifier")
    print(
        f"{'learner':28s} {'rows':>9s} {'rows/s':>11s} {'x linear numba':>15s} "
        f"{'x river':>9s} {'held-out log loss':>18s}"
    )
    for label, speed in median.items():
        versus_river = f"{speed / river:9.1f}" if river else f"{'-':>9s}"
        print(
            f"{label:28s} {rows_of[label]:9,d} {speed:11,.0f} {speed / linear:15.3f} "
            f"{versus_river} {losses[label]:18.4f}"
        )
    print(f"\nFM numba k={args.k} / linear numba: {fm / linear:.3f}")
    batch = median[f"FM numpy batch={args.batch_size} k={args.k}"]
    print(
        f"FM numpy batch={args.batch_size} / FM numpy per row: "
        f"{batch / median[f'FM numpy k={args.k}']:.1f}"
    )
    if river:
        print(f"FM numba k={args.k} / river facto.FMClassifier: {fm / river:.1f}")


if __name__ == "__main__":
    main()
