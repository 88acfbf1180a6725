"""Streaming in Python: a reader feeding ``partial_fit``, as a fraction of ``partial_fit`` alone.

The click table, ``skftrl.datasets.write_click_table(path, rows,
random_state=0)`` (Avazu's 22 columns and ``click``), ``--rows`` rows
written as CSV, Parquet (integer columns int64) and VW text (files of
``benchmarks/bench_cli.py``'s click section: ``--data-dir`` takes them again,
writing those missing). In this process, with ``FTRLClassifier()`` (its
default engine) and 10,000-row chunks:

- ``partial_fit`` alone: one pass over the CSV file's chunks, read into
  memory beforehand, ``classes=[0, 1]``, after one warm-up call on a model of
  its own (numba compiling or loading its cache);
- ``for X, y, w in iter_csv(path, label_column="click", hasher=hasher):
  clf.partial_fit(X, y, classes=[0, 1])`` (``hasher`` hashes into 2**20
  columns), the same with ``iter_parquet``, and with ``iter_vw``
  (``classes=[-1, 1]``, VW's labels);
- each reader alone, its chunks read and dropped.

Each repeat runs them all, in a rotating order. Printed: each one's rows/s
by wall time and by the process's CPU time (all threads; waiting for a CPU
on a shared machine does not inflate it; pyarrow's threads add to it),
medians of the repeats; its speed as a fraction of ``partial_fit`` alone
(the medians of the repeats' paired ratios, by wall and by CPU time), beside
the fractions of wall time the readers aim at; and whether each reader's pass
learns the same coefficients as ``partial_fit`` alone.

The table of 1,000,000 rows:

    python benchmarks/bench_stream.py --rows 1000000 --repeats 5 --data-dir /tmp/click
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from skftrl import FTRLClassifier
from skftrl._cli._estimators import engine_name
from skftrl.preprocessing import ColumnHasher
from skftrl.readers import iter_csv, iter_parquet, iter_vw

sys.path.insert(0, str(Path(__file__).parent))

from bench_cli import click_files

HASH_BITS = 20
# The fractions of partial_fit alone that a reader and partial_fit aim at.
TARGETS = {"iter_csv + partial_fit": 0.25, "iter_parquet + partial_fit": 0.5}


def readers(paths, chunk_size):
    """``{name: (a function returning the (X, y) chunks, the classes)}``."""

    def hasher():
        return ColumnHasher(hash_bits=HASH_BITS)

    def csv():
        for X, y, _ in iter_csv(
            paths["csv"], label_column="click", hasher=hasher(), chunk_size=chunk_size
        ):
            yield X, y

    def parquet():
        for X, y, _ in iter_parquet(
            paths["parquet"], label_column="click", hasher=hasher(), chunk_size=chunk_size
        ):
            yield X, y

    def vw():
        for X, y, _, _ in iter_vw(paths["vw"], hash_bits=HASH_BITS, chunk_size=chunk_size):
            yield X, y

    return {"iter_csv": (csv, [0, 1]), "iter_parquet": (parquet, [0, 1]), "iter_vw": (vw, [-1, 1])}


def learn(chunks, classes):
    """One pass of a new ``FTRLClassifier()`` over the chunks; its coefficients."""
    model = FTRLClassifier()
    for X, y in chunks:
        model.partial_fit(X, y, classes=classes)
    return model.coef_


def read(chunks):
    for _ in chunks:
        pass


def timed(run):
    """``(wall s, CPU s)`` of ``run()``, and what it returned."""
    start, start_cpu = time.perf_counter(), time.process_time()
    result = run()
    return (time.perf_counter() - start, time.process_time() - start_cpu), result


def bench(paths, n_rows, args):
    chunk_readers = readers(paths, args.chunk_size)
    in_memory = list(chunk_readers["iter_csv"][0]())
    warm_up = FTRLClassifier()
    warm_up.partial_fit(*in_memory[0], classes=[0, 1])
    runs = {"partial_fit alone": lambda: learn(in_memory, [0, 1])}
    for name, (chunks, classes) in chunk_readers.items():
        runs[f"{name} + partial_fit"] = lambda chunks=chunks, classes=classes: learn(
            chunks(), classes
        )
    for name, (chunks, _) in chunk_readers.items():
        runs[f"{name} alone"] = lambda chunks=chunks: read(chunks())
    names = list(runs)
    seconds = {name: [] for name in names}
    coefficients = {}
    for turn in range(args.repeats):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            elapsed, coefficients[name] = timed(runs[name])
            seconds[name].append(elapsed)
    print(
        f"{n_rows:,} rows of the click table, {args.chunk_size:,}-row chunks, 2**{HASH_BITS} "
        f"columns, engine {engine_name(warm_up)}; medians of {args.repeats} repeats "
        f"(load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}):"
    )
    print(f"  {'':<28} {'rows/s':>23} {'/ partial_fit alone':>23}")
    print(f"  {'':<28} {'wall':>11} {'CPU':>11} {'wall':>11} {'CPU':>11} {'aim (wall)':>11}")
    alone = seconds["partial_fit alone"]
    for name in names:
        wall, cpu = (statistics.median(times) for times in zip(*seconds[name]))
        fractions = [
            statistics.median(a[i] / t[i] for a, t in zip(alone, seconds[name])) for i in (0, 1)
        ]
        aim = f">= {TARGETS[name]:.2f}" if name in TARGETS else ""
        print(
            f"  {name:<28} {n_rows / wall:>11,.0f} {n_rows / cpu:>11,.0f} "
            f"{fractions[0]:>10.2f}x {fractions[1]:>10.2f}x {aim:>11}"
        )
    same = {
        name: bool(np.array_equal(coefficients[f"{name} + partial_fit"], coefficients[names[0]]))
        for name in chunk_readers
    }
    print(
        "  same coefficients as partial_fit alone: "
        + ", ".join(f"{name}: {value}" for name, value in same.items())
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="default 1000000")
    parser.add_argument("--repeats", type=int, default=5, help="default 5")
    parser.add_argument("--chunk-size", type=int, default=10_000, help="default 10000")
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="where the click files are: written there if missing, and kept (default: a "
        "temporary directory, deleted at the end)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        data_dir = directory if args.data_dir is None else os.path.abspath(args.data_dir)
        os.makedirs(data_dir, exist_ok=True)
        paths = click_files(data_dir, args.rows)
        if "parquet" not in paths:
            raise SystemExit("bench_stream.py needs pyarrow: pip install 'skftrl[readers]'")
        bench(paths, args.rows, args)


if __name__ == "__main__":
    main()
