"""CSV and Parquet reading speed: pyarrow's CSV parser against the csv module's.

Each file is read whole into chunks of hashed rows, as ``skftrl train`` and
``skftrl.readers`` read it (parsing, the label, the column kinds, the hashing
by ColumnHasher), without learning. Two CSV files, written to a temporary
folder:

- bike sharing: the package's hour.csv (17,379 rows, 13 numeric columns and a
  date), stacked to at least ``--rows`` rows; the label ``cnt``, ``casual``
  and ``registered`` ignored, the columns' kinds from a first pass (every
  column of numbers numeric, as skftrl.readers reads it);
- clicks: ``--rows`` rows of 20 categorical columns, of 2 to 1,000,000
  Zipf-distributed values each (the label a 20% click), without quotes.

Each repeat reads each file with pyarrow's parser, with the csv module's
(``parser="python"``), with the reader of ``--baseline REVISION`` if given
(exported from git, imported under a name of its own), and reads its
Parquet copy (``iter_parquet``), in turns, so that the machine's load hits
them alike. Printed: the rows/s of each (median of the repeats), by wall
time and by the process's CPU time (all threads; waiting for a CPU on a
shared machine does not inflate it), the medians of the repeats'
pyarrow/python ratios, and whether the chunks are identical (X, labels,
lines; Parquet: X and labels).

    python benchmarks/bench_readers.py [--rows 1000000] [--repeats 3]
        [--chunk-size 10000] [--baseline REVISION]
"""

import argparse
import gzip
import importlib
import os
import statistics
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from skftrl._readers._csv import NUMERIC, feature_columns, read_csv, scan_csv
from skftrl._readers._spec import CsvSpec
from skftrl.preprocessing import ColumnHasher
from skftrl.readers import iter_parquet

sys.path.insert(0, str(Path(__file__).parent))

HASH_BITS = 20
CARDINALITIES = [2, 3, 5, 7, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000]
CARDINALITIES += [50_000, 100_000, 200_000, 500_000, 1_000_000]


def bike_csv(directory, rows):
    """hour.csv stacked to at least ``rows`` rows (each copy numbered on)."""
    text = gzip.decompress((files("skftrl") / "_data" / "bike_sharing_hour.csv.gz").read_bytes())
    header, _, body = text.partition(b"\n")
    body = body.rstrip(b"\r\n") + b"\r\n"  # its lines end with CRLF
    copies = -(-rows // body.count(b"\n"))
    path = directory / "bike.csv"
    with open(path, "wb") as file:
        file.write(header + b"\n")
        for _ in range(copies):
            file.write(body)
    return path, "cnt", ["casual", "registered"]


def click_csv(directory, rows, seed=0):
    """``rows`` rows of 20 categorical columns and a 0/1 label."""
    rng = np.random.default_rng(seed)
    columns = {"click": (rng.random(rows) < 0.2).astype(np.int8)}
    for j, cardinality in enumerate(CARDINALITIES):
        codes = rng.zipf(1.3, rows) % cardinality
        columns[f"c{j}"] = np.char.add(f"v{j}_", codes.astype(str))
    path = directory / "clicks.csv"
    options = pa_csv.WriteOptions(quoting_style="none")  # as click logs are written
    pa_csv.write_csv(pa.table(columns), path, options)
    return path, "click", []


def spec_of(path, label, ignored):
    """The CsvSpec of a first pass, every column of numbers numeric, as
    skftrl.readers reads them (the command line reads the columns of whole
    numbers as categories: a change of the hashing, not of the reading)."""

    def columns_of(header):
        return feature_columns(header, label, None, ignored, None)

    scan = scan_csv(path, label, 100_000, False, columns_of, parser="python")
    return CsvSpec(label, scan.kinds, True, HASH_BITS, None, list(ignored)), scan.n_rows


def parquet_copy(path):
    """The CSV file as Parquet (pyarrow's types: numbers, strings)."""
    parquet = path.with_suffix(".parquet")
    pq.write_table(pa_csv.read_csv(path), parquet)
    return parquet


def read_all(chunks):
    """Every chunk of a reader, and the seconds it took: wall time, and the
    process's CPU time (all threads), which waiting for a CPU does not inflate."""
    start, start_cpu = time.perf_counter(), time.process_time()
    kept = list(chunks)
    return (time.perf_counter() - start, time.process_time() - start_cpu), kept


def same_chunks(first, second, lines=True):
    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if a.X.shape != b.X.shape or (a.X != b.X).nnz or not np.array_equal(a.y, b.y):
            return False
        if lines and not np.array_equal(a.lines, b.lines):
            return False
    return True


class ParquetChunk:  # (X, y) of iter_parquet, compared as chunks
    def __init__(self, X, y):
        self.X, self.y = X, y


def bench_file(path, label, ignored, args, baseline):
    """Time every reader of one CSV file (and its Parquet copy), print the table."""
    spec, n_rows = spec_of(path, label, ignored)
    parquet = parquet_copy(path)
    features = list(spec.kinds)
    # The Parquet copy's integer columns read as the CSV file's kinds say.
    numeric = [name for name, kind in spec.kinds.items() if kind == NUMERIC]
    hasher = ColumnHasher(hash_bits=HASH_BITS, numeric=numeric)
    readers = {
        "pyarrow": lambda: read_csv(path, spec, args.chunk_size, parser="pyarrow"),
        "python": lambda: read_csv(path, spec, args.chunk_size, parser="python"),
        "parquet": lambda: (
            ParquetChunk(X, y)
            for X, y, _ in iter_parquet(
                parquet,
                label_column=label,
                columns=features,
                hasher=hasher,
                chunk_size=args.chunk_size,
            )
        ),
    }
    if baseline is not None:
        old_spec = baseline[0].CsvSpec(label, spec.kinds, True, HASH_BITS, None, list(ignored))
        readers[args.baseline] = lambda: baseline[1].read_csv(path, old_spec, args.chunk_size)
    seconds = {name: [] for name in readers}  # (wall, cpu) of each repeat
    chunks = {}
    for _ in range(args.repeats):
        for name, reader in readers.items():
            elapsed, chunks[name] = read_all(reader())
            seconds[name].append(elapsed)
    print(f"\n{path.name}: {n_rows:,} rows, {path.stat().st_size / 2**20:,.0f} MiB")
    print(f"  {'reader':<10} {'rows/s (wall)':>14} {'rows/s (CPU)':>14}")
    for name in readers:
        wall, cpu = (statistics.median(times) for times in zip(*seconds[name]))
        print(f"  {name:<10} {n_rows / wall:>14,.0f} {n_rows / cpu:>14,.0f}")
    for other in ["python", args.baseline] if baseline is not None else ["python"]:
        ratios = [(o[0] / a[0], o[1] / a[1]) for o, a in zip(seconds[other], seconds["pyarrow"])]
        wall, cpu = (statistics.median(values) for values in zip(*ratios))
        print(f"  pyarrow / {other}: {wall:.2f}x wall, {cpu:.2f}x CPU (medians of paired ratios)")
    checks = {
        "pyarrow == python": same_chunks(chunks["pyarrow"], chunks["python"]),
        "parquet == csv": same_chunks(chunks["parquet"], chunks["pyarrow"], lines=False),
    }
    if baseline is not None:
        checks[f"pyarrow == {args.baseline}"] = same_chunks(
            chunks["pyarrow"], chunks[args.baseline]
        )
    print("  identical chunks: " + ", ".join(f"{k}: {v}" for k, v in checks.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--baseline", help="a git revision whose reader is timed too")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        baseline = None
        if args.baseline:
            from bench_revisions import export

            package = export(args.baseline, directory)
            baseline = (
                importlib.import_module(f"{package.__name__}._readers._spec"),
                importlib.import_module(f"{package.__name__}._readers._csv"),
            )
        for make in (bike_csv, click_csv):
            bench_file(*make(directory, args.rows), args, baseline)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
