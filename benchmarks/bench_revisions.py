"""Training and prediction speed of two revisions of skftrl, in one process.

For a change that must not slow anything down (a refactoring of the
engines), comparing two runs of ``bench_peers.py`` on a shared machine mixes
the change with the machine's load, which moves speeds by 20% from one
minute to the next. Here both revisions are exported from git (``git
archive``) as packages of their own names, imported side by side, and timed
in turns on the same data: each repeat times one pass of every learner of
both revisions, then ``SGDClassifier``, so that load hits them alike. The
revisions take turns going first: on a loaded machine the first pass of a
repeat ran markedly slower (the compiled learner's most), and a commit named
twice read as faster than itself. Printed: rows/s (median of
``--repeats``), the median of the repeats' after/before ratios, and the
ratio to ``SGDClassifier``.

The second revision's compiled factorization machine reads a few percent
slower than the first's even when both are the same code: compare a ratio
with that of a commit against itself, named twice
(``bench_revisions.py HEAD $(git rev-parse --short HEAD)``).

    python benchmarks/bench_revisions.py BEFORE AFTER [--repeats 7]
        [--datasets a9a,w8a,synthetic] [--learners "numba b=1,FM numpy b=64"]
        [--synthetic-rows 300000] [--data-dir DIR]

The learners are FTRLClassifier's and, labelled "FM ...", FMClassifier's
(8 components); predict_proba is FTRLClassifier's.
"""

import argparse
import importlib
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import SGDClassifier

sys.path.insert(0, str(Path(__file__).parent))
from bench_peers import chunked, load_dataset

# FTRLClassifier's, then FMClassifier's (labels starting "FM").
LEARNERS = {
    "numpy b=1": {"engine": "numpy"},
    "numpy b=64": {"engine": "numpy", "batch_size": 64},
    "numba b=1": {"engine": "numba"},
    "numba b=1 f32": {"engine": "numba", "dtype": np.float32},
    "FM numpy b=1": {"engine": "numpy"},
    "FM numpy b=64": {"engine": "numpy", "batch_size": 64},
    "FM numba b=1": {"engine": "numba"},
    "FM numba b=1 f32": {"engine": "numba", "dtype": np.float32},
}
FTRL = {"learning_rate": 0.1, "beta": 1.0, "l1": 1.0, "l2": 0.0}
# The factorization machines' own parameters (their defaults, with a seed).
FM = {"n_components": 8, "random_state": 0}


def export(revision, directory):
    """The ``skftrl`` package of ``revision``, imported under a name of its own."""
    name = "skftrl_" + revision.replace("-", "_").replace(".", "_")
    archive = subprocess.run(
        ["git", "archive", revision, "skftrl"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory / "tmp", filter="data")
    (directory / "tmp" / "skftrl").rename(directory / name)
    sys.path.insert(0, str(directory))
    return importlib.import_module(name)


def one_pass(make, chunks, classes):
    model = make()
    start = time.perf_counter()
    for X, y in chunks:
        model.partial_fit(X, y, classes=classes)
    return time.perf_counter() - start, model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--datasets", default="a9a,w8a,synthetic")
    parser.add_argument(
        "--learners", default=",".join(LEARNERS), help="comma-separated labels of LEARNERS to time"
    )
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--synthetic-rows", type=int, default=300_000)
    parser.add_argument("--synthetic-features-log2", type=int, default=20)
    parser.add_argument(
        "--numpy-rows", type=int, default=30_000, help="rows of the per-row numpy pass"
    )
    parser.add_argument(
        "--fm-numpy-rows", type=int, default=10_000, help="rows of the FM's per-row numpy pass"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(__file__).parents[2] / "shared" / "data"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        packages = {
            "before": export(args.before, Path(directory)),
            "after": export(args.after, Path(directory)),
        }
        print(
            f"before = {args.before}, after = {args.after}; median of {args.repeats} repeats "
            "taking turns"
        )
        for name in args.datasets.split(","):
            ds = load_dataset(name, args)
            if ds is None:  # its file is missing (a note was printed)
                continue
            classes = np.unique(ds.y_train)
            chunks = chunked(ds.X_train, ds.y_train, args.chunk_size)
            print(f"\n{name}: {ds.X_train.shape[0]:,} rows, {ds.X_train.shape[1]:,} columns")
            print(
                f"  {'learner':16} {'before rows/s':>14} {'after rows/s':>14} "
                f"{'after/before':>13} "
                f"{'before/SGD':>11} {'after/SGD':>10}"
            )
            sgd = lambda: SGDClassifier(loss="log_loss")  # noqa: E731
            for label in args.learners.split(","):
                params = LEARNERS[label]
                rows = chunks
                # The per-row numpy passes are slow: a part of the rows.
                part = {"numpy b=1": args.numpy_rows, "FM numpy b=1": args.fm_numpy_rows}
                if label in part:
                    rows = chunked(
                        ds.X_train[: part[label]], ds.y_train[: part[label]], args.chunk_size
                    )
                n_rows = sum(X.shape[0] for X, _ in rows)
                fm = label.startswith("FM")
                model, model_params = ("FMClassifier", FM) if fm else ("FTRLClassifier", {})
                makes = {
                    side: (
                        lambda p=package, params=params, model=model, extra=model_params: getattr(
                            p, model
                        )(**FTRL, **extra, **params)
                    )
                    for side, package in packages.items()
                }
                for make in makes.values():  # compilation and caches, untimed
                    one_pass(make, [(X[:16], y[:16]) for X, y in rows[:1]], classes)
                times = {"before": [], "after": [], "sgd": []}
                for repeat in range(args.repeats):
                    # Each revision goes first in every other repeat (see the docstring).
                    sides = list(makes.items())
                    for side, make in sides if repeat % 2 == 0 else sides[::-1]:
                        times[side].append(one_pass(make, rows, classes)[0])
                    times["sgd"].append(one_pass(sgd, rows, classes)[0])
                speed = {side: n_rows / statistics.median(t) for side, t in times.items()}
                paired = statistics.median(b / a for a, b in zip(times["after"], times["before"]))
                print(
                    f"  {label:16} {speed['before']:>14,.0f} {speed['after']:>14,.0f} "
                    f"{paired:>13.2f} "
                    f"{speed['before'] / speed['sgd']:>11.2f} "
                    f"{speed['after'] / speed['sgd']:>10.2f}"
                )
            # FTRLClassifier's predict_proba with the kept weights, against SGDClassifier's.
            linear = {
                side: (lambda p=package: p.FTRLClassifier(**FTRL))
                for side, package in packages.items()
            }
            fitted = {side: one_pass(linear[side], chunks[:3], classes)[1] for side in linear}
            reference = one_pass(sgd, chunks[:3], classes)[1]
            times = {"before": [], "after": [], "sgd": []}
            for _ in range(3 * args.repeats):
                for side, model in [*fitted.items(), ("sgd", reference)]:
                    start = time.perf_counter()
                    model.predict_proba(ds.X_test)
                    times[side].append(time.perf_counter() - start)
            speed = {side: ds.X_test.shape[0] / statistics.median(t) for side, t in times.items()}
            paired = statistics.median(b / a for a, b in zip(times["after"], times["before"]))
            print(
                f"  {'predict_proba':16} {speed['before']:>14,.0f} {speed['after']:>14,.0f} "
                f"{paired:>13.2f} "
                f"{speed['before'] / speed['sgd']:>11.2f} {speed['after'] / speed['sgd']:>10.2f}"
            )


if __name__ == "__main__":
    main()
