"""The ``skftrl`` command end to end against Vowpal Wabbit's driver: speed, memory, start-up.

1. LIBSVM: a9a repeated ``--a9a-copies`` times (100: 3,256,100 rows; the copy
   shipped in skftrl/_data), one pass over the same file: ``skftrl train``
   without hints (its first pass finds the classes and the width) and with
   ``--n-features 123 --classes -1,1`` (one pass), against Vowpal Wabbit's
   own driver, ``python -m vowpalwabbit -d FILE --ftrl`` (the
   ``vowpalwabbit`` package ships no ``vw`` executable; its ``__main__`` runs
   the C++ driver, parser included, on the file), on the same rows in VW's
   text format.
2. Click CSV: a synthetic click log of 20 categorical columns (values drawn
   from Zipf-like laws over 10 to 100,000 distinct values, log-spaced) and a
   0/1 label, ``--click-rows`` rows, trained with ``--hash-bits 20`` (without
   and with ``--classes 0,1``), against VW on the same rows written as VW
   text (one namespace, ``column=value`` features, ``-b 20``); and
   ``skftrl train`` on that VW text (``--classes=-1,1``) and on the same
   table written as Parquet (with pyarrow installed).
3. Peak memory of ``skftrl train --hash-bits 20`` (a 2**20-column linear
   model) on LIBSVM files of 10**5, 10**6 and 3 * 10**6 rows of a9a drawn at random:
   flat in the file size.
4. ``--profile``: where ``skftrl train``'s CPU time goes (each import in a new
   process; parsing, the compiled scan and ``partial_fit`` in this process),
   and the start-up time of ``skftrl --version``.

Every command is a whole process (imports, reading, training, saving the
model), run after one warm-up run; the commands of a table take turns, in a
rotating order, ``--repeats`` times. Each table gives the median wall time,
CPU time (user + system) and peak resident memory of each command, and the
median over the turns of the paired ratio VW wall time / skftrl wall time
(above 1: skftrl is faster). The load average is printed: on a shared
machine wall times are noisy, and the paired ratios of interleaved runs are
the figures to compare. ``--baseline DIR`` adds the commands of another
skftrl (an exported checkout: ``git archive REV skftrl | tar -x -C DIR``).
Every file is written to a temporary directory, deleted at the end.

    python benchmarks/bench_cli.py --repeats 5
    python benchmarks/bench_cli.py --repeats 1 --click-rows 10000000 --click-warmup 0 \
        --skip libsvm,memory
"""

import argparse
import gzip
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.resources import files

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VW = [sys.executable, "-m", "vowpalwabbit", "--ftrl", "--loss_function", "logistic"]
VW += ["--holdout_off", "--quiet"]
# The click CSV: 20 categorical columns of 10 to 100,000 distinct values.
CLICK_COLUMNS = 20
CARDINALITIES = np.unique(np.geomspace(10, 100_000, CLICK_COLUMNS).round().astype(int))


def shipped(name):
    return gzip.decompress((files("skftrl") / "_data" / name).read_bytes())


def environment():
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
    }


def load():
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def skftrl(*args, package=None):
    """The command ``skftrl *args``; with ``package``, the skftrl found in that directory."""
    if package is None:
        return [sys.executable, "-m", "skftrl", *map(str, args)]
    code = (
        "import sys; sys.meta_path[:] = [h for h in sys.meta_path if 'editable' not in "
        f"repr(h).lower()]; sys.path.insert(0, {package!r}); import skftrl._cli as cli; "
        # The executable's entry point: command() where there is one.
        "getattr(cli, 'command', lambda: sys.exit(cli.main(sys.argv[1:])))()"
    )
    return [sys.executable, "-c", code, *map(str, args)]


def run_once(command, cwd):
    """``(wall s, CPU s, peak resident MB)`` of one run of ``command``."""
    began = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{error.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def interleaved(commands, cwd, repeats, warmup=1):
    """Every command run ``warmup`` times first, then ``repeats`` turns in a
    rotating order; ``{name: [(wall, cpu, peak), ...]}``."""
    for command in commands.values():
        for _ in range(warmup):
            run_once(command, cwd)
    names = list(commands)
    measured = {name: [] for name in names}
    for turn in range(repeats):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            measured[name].append(run_once(commands[name], cwd))
    return measured


def table(title, measured, reference, n_rows):
    """Print the medians of each command and its paired ratio to ``reference``."""
    print(f"{title} (load average {load()}):")
    print(
        f"   {'command':<52} {'wall s':>7} {'rows/s':>11} {'CPU s':>7} {'peak MB':>8} "
        f"{'VW/this, wall':>14} {'(CPU)':>6}"
    )
    for name, runs in measured.items():
        wall, cpu, peak = (statistics.median(run[i] for run in runs) for i in range(3))
        ratio = statistics.median(
            other[0] / run[0] for run, other in zip(runs, measured[reference])
        )
        cpu_ratio = statistics.median(
            other[1] / run[1] for run, other in zip(runs, measured[reference])
        )
        print(
            f"   {name:<52} {wall:7.2f} {n_rows / wall:11,.0f} {cpu:7.2f} {peak:8.0f} "
            f"{ratio:14.2f} {cpu_ratio:6.2f}"
        )
    sys.stdout.flush()


def vw_text(libsvm_lines):
    """LIBSVM lines as VW text: the label, then every ``index:value`` in one namespace."""
    return b"".join(
        line.split(b" ", 1)[0] + b" |f " + line.split(b" ", 1)[1] + b"\n"
        for line in libsvm_lines.splitlines()
    )


def libsvm_speed(directory, copies, repeats, baseline):
    a9a = shipped("a9a.gz")
    n_rows = a9a.count(b"\n") * copies
    with open(os.path.join(directory, "a9a.svm"), "wb") as file:
        for _ in range(copies):
            file.write(a9a)
    with open(os.path.join(directory, "a9a.vw"), "wb") as file:
        text = vw_text(a9a)
        for _ in range(copies):
            file.write(text)
    plain = ["train", "a9a.svm", "--model", "m", "--l1", 1, "--quiet"]
    hints = ["--n-features", 123, "--classes=-1,1"]
    commands = {}
    packages = {"": None} if baseline is None else {"": None, " (baseline)": baseline}
    for suffix, package in packages.items():
        commands["skftrl train" + suffix] = skftrl(*plain, package=package)
        commands["skftrl train --n-features 123 --classes=-1,1" + suffix] = skftrl(
            *plain, *hints, package=package
        )
    commands["vw --ftrl -b 18"] = [*VW, "-d", "a9a.vw", "-f", "vw.model", "-b", "18"]
    commands.update(vw_on_one_core("vw --ftrl -b 18", commands["vw --ftrl -b 18"]))
    measured = interleaved(commands, directory, repeats)
    table(
        f"1. one pass over a9a x {copies} ({n_rows:,} rows), median of {repeats} turns",
        measured,
        "vw --ftrl -b 18",
        n_rows,
    )


def vw_on_one_core(name, command):
    """The VW command again, pinned to one core (``taskset -c 0``) where taskset
    exists: VW's parsing and learning threads wait on each other by spinning,
    and on an idle two-core machine its run is faster on one core than on two."""
    if shutil.which("taskset") is None:
        return {}
    return {f"{name}, one core": ["taskset", "-c", "0", *command]}


def click_columns(n_rows, seed):
    """The click log's label (0/1) and its columns' value codes (one array per column).

    Each column's values follow a Zipf-like law (the k-th most frequent value
    has probability proportional to 1 / k**1.1); the label is drawn from a
    logistic model of a random effect per value of 8 of the columns.
    """
    rng = np.random.default_rng(seed)
    codes, margin = [], np.full(n_rows, -1.5)
    for column, cardinality in enumerate(np.resize(CARDINALITIES, CLICK_COLUMNS)):
        weights = 1.0 / np.arange(1, cardinality + 1) ** 1.1
        values = np.searchsorted(np.cumsum(weights / weights.sum()), rng.random(n_rows))
        values = np.minimum(values, cardinality - 1)
        codes.append(values)
        if column % 5 < 2:
            margin += rng.normal(0, 0.5, cardinality)[values]
    label = (rng.random(n_rows) < 1 / (1 + np.exp(-margin))).astype(np.uint8)
    return label, codes


def fixed_width_lines(pieces, n_rows):
    """Lines of fixed-width fields, built as one byte matrix: each piece is
    bytes (the same in every row) or an ``(array, width)`` of numbers
    written with ``width`` digits."""
    width = sum(len(piece) if isinstance(piece, bytes) else piece[1] for piece in pieces)
    lines = np.empty((n_rows, width + 1), dtype=np.uint8)
    at = 0
    for piece in pieces:
        if isinstance(piece, bytes):
            lines[:, at : at + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
            at += len(piece)
            continue
        numbers, digits = piece
        for digit in range(digits):
            lines[:, at + digits - 1 - digit] = 48 + (numbers // 10**digit) % 10
        at += digits
    lines[:, -1] = 10
    return lines.tobytes()


def write_click_files(directory, n_rows, seed=0):
    """The click log as CSV (``clicked``, c00..c19; values k00000..k99999),
    ``click{n_rows}.csv``, and as VW text, ``click{n_rows}.vw``."""
    csv_path = os.path.join(directory, f"click{n_rows}.csv")
    vw_path = os.path.join(directory, f"click{n_rows}.vw")
    names = [f"c{column:02d}" for column in range(CLICK_COLUMNS)]
    with open(csv_path, "wb") as csv_file, open(vw_path, "wb") as vw_file:
        csv_file.write(("clicked," + ",".join(names) + "\n").encode())
        block = 500_000
        for start in range(0, n_rows, block):
            rows = min(block, n_rows - start)
            label, codes = click_columns(rows, seed + start)
            csv_pieces, vw_pieces = [(label, 1)], [(label, 1), b" |f"]
            for name, values in zip(names, codes):
                csv_pieces += [b",k", (values, 5)]
                vw_pieces += [f" {name}=k".encode(), (values, 5)]
            csv_file.write(fixed_width_lines(csv_pieces, rows))
            # VW's logistic loss reads -1/+1 labels: 0 becomes "-", then the digit 0 -> "-1".
            vw_lines = (
                np.frombuffer(fixed_width_lines([b" ", *vw_pieces], rows), dtype=np.uint8)
                .reshape(rows, -1)
                .copy()
            )
            negative = vw_lines[:, 1] == ord("0")
            vw_lines[negative, 0], vw_lines[negative, 1] = ord("-"), ord("1")
            vw_file.write(vw_lines.tobytes())


def parquet_copy(csv_path, directory):
    """The table of a CSV file written as Parquet by a child process (the
    commands' memory counts the pages of this one), or None without pyarrow."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return None
    parquet_path = os.path.join(directory, os.path.basename(csv_path) + ".parquet")

    def write():
        import pyarrow.csv
        import pyarrow.parquet

        pyarrow.parquet.write_table(pyarrow.csv.read_csv(csv_path), parquet_path)

    writer = multiprocessing.get_context("fork").Process(target=write)
    writer.start()
    writer.join()
    return parquet_path


def click_speed(directory, row_counts, repeats, baseline, warmup=1):
    for n_rows in row_counts:
        # Written by a child process: a command's peak memory counts the
        # pages of the process it is forked from, which must stay small.
        writer = multiprocessing.get_context("fork").Process(
            target=write_click_files, args=(directory, n_rows)
        )
        writer.start()
        writer.join()
        csv_path = os.path.join(directory, f"click{n_rows}.csv")
        vw_path = os.path.join(directory, f"click{n_rows}.vw")
        parquet_path = parquet_copy(csv_path, directory)
        plain = ["train", csv_path, "--label-column", "clicked", "--hash-bits", 20]
        plain += ["--model", "m", "--quiet"]
        commands = {}
        packages = {"": None} if baseline is None else {"": None, " (baseline)": baseline}
        for suffix, package in packages.items():
            commands["skftrl train --hash-bits 20" + suffix] = skftrl(*plain, package=package)
            commands["skftrl train --hash-bits 20 --classes 0,1" + suffix] = skftrl(
                *plain, "--classes", "0,1", package=package
            )
            on_vw_text = ["train", vw_path, "--hash-bits", 20, "--classes=-1,1"]
            commands["skftrl train --classes=-1,1, the VW text" + suffix] = skftrl(
                *on_vw_text, "--model", "m", "--quiet", package=package
            )
            if parquet_path is not None:
                commands["skftrl train --hash-bits 20, the Parquet file" + suffix] = skftrl(
                    "train", parquet_path, *plain[2:], package=package
                )
        commands["vw --ftrl -b 20"] = [*VW, "-d", vw_path, "-f", "vw.model", "-b", "20"]
        commands.update(vw_on_one_core("vw --ftrl -b 20", commands["vw --ftrl -b 20"]))
        measured = interleaved(commands, directory, repeats, warmup)
        table(
            f"2. one pass over the click CSV ({n_rows:,} rows, 20 categorical columns), "
            f"median of {repeats} turns",
            measured,
            "vw --ftrl -b 20",
            n_rows,
        )
        for path in (csv_path, vw_path, parquet_path):
            if os.path.exists(path):
                os.remove(path)


def memory(directory, repeats):
    lines = shipped("a9a.gz").splitlines(keepends=True)
    commands = {}
    for n_rows in (100_000, 1_000_000, 3_000_000):
        path = os.path.join(directory, f"rows{n_rows}.svm")
        picks = np.random.RandomState(0).randint(len(lines), size=n_rows)
        with open(path, "wb") as file:
            for start in range(0, n_rows, 100_000):
                file.write(b"".join(lines[i] for i in picks[start : start + 100_000]))
        size = os.path.getsize(path) / 2**20
        commands[f"{n_rows:>9,} rows ({size:,.0f} MB)"] = skftrl(
            "train", path, "--model", "m", "--quiet", "--hash-bits", 20
        )
    measured = interleaved(commands, directory, repeats)
    print(
        f"3. peak resident memory of skftrl train --hash-bits 20 (a 2**20-column linear "
        f"model; a9a rows drawn at random), median of {repeats}:"
    )
    for name, runs in measured.items():
        print(f"   {name}: {statistics.median(run[2] for run in runs):,.0f} MB")


IMPORTS = {
    "python -c pass": "pass",
    "numpy, scipy.sparse": "import numpy, scipy.sparse",
    "+ numba": "import numpy, scipy.sparse, numba",
    # As a command imports it: without pandas, scipy.stats left unexecuted.
    "+ scikit-learn (as the command)": "import numpy, scipy.sparse, numba\n"
    "from skftrl._cli import lean_imports\nwith lean_imports(): import sklearn.base",
    "+ scikit-learn (all of it, with pandas)": "import numpy, scipy.sparse, numba, sklearn.base",
}


def profile(directory, repeats):
    """CPU seconds of the imports, of parsing, of the scan and of training, each on its own."""
    import scipy.sparse as sp

    from skftrl import FTRLClassifier
    from skftrl._cli._estimators import engine_name
    from skftrl._readers._libsvm import (
        compiled_plain_parser,
        parse_plain_libsvm,
        quick_scan_libsvm,
        read_libsvm,
        scan_libsvm,
    )
    from skftrl._readers._spec import LibsvmSpec

    print(f"4. where the time goes (CPU s, median of {repeats}; load average {load()}):")
    measured = interleaved(
        {name: [sys.executable, "-c", code] for name, code in IMPORTS.items()}, directory, repeats
    )
    for name, runs in measured.items():
        print(f"   {'import ' + name:<58} {statistics.median(run[1] for run in runs):6.2f} s")
    path = os.path.join(directory, "a9a.svm")
    if not os.path.exists(path):
        with open(path, "wb") as file:
            file.write(shipped("a9a.gz") * 20)
    with open(path, "rb") as file:
        data = file.read()
    blocks, start = [], 0
    while start < len(data):  # the reader's blocks: 4 MiB of whole lines
        end = data.rfind(b"\n", start, start + 4 * 2**20) + 1 or len(data)
        blocks.append(data[start:end])
        start = end
    compiled_plain_parser()(b"1 1:1\n", True)  # compiles, or loads numba's cache
    quick_scan_libsvm(path, True)

    def parse(compiled):
        for block in blocks:
            parse_plain_libsvm(block, True, compiled=compiled)

    steps = {
        "parse (numba-compiled parser)": lambda: parse(True),
        "parse (numpy parser)": lambda: parse(False),
        "first pass: compiled scan of labels and indices": lambda: quick_scan_libsvm(path, True),
        "first pass: parsing scan (as without the compiled scan)": lambda: scan_libsvm(
            path, 10_000, True
        ),
    }
    for name, step in steps.items():
        times = []
        for _ in range(repeats):
            began = time.process_time()
            step()
            times.append(time.process_time() - began)
        median = statistics.median(times)
        print(f"   {name:<58} {median:6.2f} s ({len(data) / median / 2**20:,.0f} MiB/s)")
    chunks = list(read_libsvm(path, 10_000, LibsvmSpec(123, False)))
    FTRLClassifier(l1=1.0).partial_fit(sp.csr_matrix((1, 123)), [-1], classes=[-1, 1])
    times = []
    for _ in range(repeats):
        model = FTRLClassifier(l1=1.0)
        began = time.process_time()
        for chunk in chunks:
            model.partial_fit(chunk.X, chunk.y, classes=[-1, 1])
        times.append(time.process_time() - began)
    print(
        f"   {'partial_fit, 10,000-row chunks (engine ' + engine_name(model) + ')':<58} "
        f"{statistics.median(times):6.2f} s  ({len(data) / 2**20:,.0f} MiB of text)"
    )
    measured = interleaved(
        {"skftrl --version": skftrl("--version"), "python -c pass": [sys.executable, "-c", ""]},
        directory,
        repeats,
    )
    print(
        "   start-up, wall: "
        + ", ".join(
            f"{name} {statistics.median(run[0] for run in runs):.3f} s"
            for name, runs in measured.items()
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="turns of each table (default 5)")
    parser.add_argument(
        "--a9a-copies", type=int, default=100, help="a9a repeated this many times (default 100)"
    )
    parser.add_argument(
        "--click-rows",
        default="500000",
        help="rows of the click CSV, comma-separated (default 500000; a larger "
        "size, 10000000, writes: about 1.4 GB of CSV and 2.3 GB of VW text in the temporary "
        "directory)",
    )
    parser.add_argument(
        "--skip", default="", help="comma-separated tables to leave out: libsvm, click, memory"
    )
    parser.add_argument("--profile", action="store_true", help="also where the time goes")
    parser.add_argument(
        "--click-warmup",
        type=int,
        default=1,
        help="warm-up runs of each click CSV command (default 1; 0 for the long files)",
    )
    parser.add_argument(
        "--baseline", metavar="DIR", help="also time the skftrl package found in DIR"
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    baseline = None if args.baseline is None else os.path.abspath(args.baseline)
    with tempfile.TemporaryDirectory() as directory:
        if "libsvm" not in skip:
            libsvm_speed(directory, args.a9a_copies, args.repeats, baseline)
        if "click" not in skip:
            rows = [int(float(n)) for n in args.click_rows.split(",")]
            click_speed(directory, rows, args.repeats, baseline, args.click_warmup)
        if "memory" not in skip:
            memory(directory, args.repeats)
        if args.profile:
            profile(directory, args.repeats)


if __name__ == "__main__":
    main()
