"""Memory and speed of ``skftrl train`` on LIBSVM files of growing size.

Writes files of a9a rows drawn at random (a9a's 123 features, about 14
non-zeros a row) into a temporary directory, runs ``skftrl train`` on each
under ``/usr/bin/time -v``, and prints the peak resident memory, the wall time
and the rows per second. Memory must not grow with the file: the reader holds
one chunk at a time. Then checks that the model of the largest file equals
``partial_fit`` over the same chunks of the whole file loaded in memory, and
measures parsing alone. The files are deleted at the end.

    python benchmarks/bench_cli.py [--rows 100000 1000000]
"""

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time
from importlib.resources import files

import joblib
import numpy as np
from sklearn.datasets import load_svmlight_file

from skftrl import FTRLClassifier
from skftrl._io import read_libsvm

CHUNK_SIZE = 10_000  # skftrl train's default --chunk-size


def write_rows(path, n_rows, seed=0):
    """``n_rows`` lines of a9a drawn at random."""
    lines = gzip.decompress((files("skftrl") / "_data" / "a9a.gz").read_bytes()).splitlines(
        keepends=True
    )
    picks = np.random.RandomState(seed).randint(len(lines), size=n_rows)
    with open(path, "wb") as file:
        for start in range(0, n_rows, 100_000):
            file.write(b"".join(lines[i] for i in picks[start : start + 100_000]))


def train_measured(data, model):
    """Run ``skftrl train``; return peak RSS (MB) and wall seconds from time -v."""
    result = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "skftrl", "train", data,
         "--model", model, "--l1", "1", "--quiet"],
        capture_output=True, text=True, check=True,
    )
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)[1])
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", result.stderr)[1]
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall.split(":"))))
    return peak_kb / 1024, seconds


def same_as_partial_fit(data, model):
    """Whether the saved state equals partial_fit over the same chunks in memory."""
    X, y = load_svmlight_file(data)
    reference = FTRLClassifier(l1=1.0)
    for start in range(0, X.shape[0], CHUNK_SIZE):
        rows = slice(start, start + CHUNK_SIZE)
        reference.partial_fit(X[rows], y[rows], classes=[-1, 1])
    trained = joblib.load(model)["estimator"]
    return all(
        np.array_equal(getattr(trained, name), getattr(reference, name))
        for name in ["z_", "n_", "z_intercept_", "n_intercept_"]
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        for n_rows in args.rows:
            data = os.path.join(directory, f"rows{n_rows}.svm")
            model = os.path.join(directory, f"rows{n_rows}.model")
            write_rows(data, n_rows)
            size_mb = os.path.getsize(data) / 2**20
            peak_mb, seconds = train_measured(data, model)
            print(
                f"{n_rows:>10,} rows ({size_mb:,.0f} MB): peak RSS {peak_mb:,.0f} MB, "
                f"wall {seconds:.1f} s (a scan and a training pass: "
                f"{2 * n_rows / seconds:,.0f} rows read/s)"
            )
        began, cpu = time.perf_counter(), time.process_time()
        for _ in read_libsvm(data, CHUNK_SIZE, 123, zero_based=False):
            pass
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        print(
            f"parsing alone: {n_rows / wall:,.0f} rows/s wall, {n_rows / cpu:,.0f} rows/s CPU"
        )
        print("model equals partial_fit over the same chunks:", same_as_partial_fit(data, model))


if __name__ == "__main__":
    main()
