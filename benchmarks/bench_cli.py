"""The ``skftrl`` command end to end against Vowpal Wabbit's driver: speed, memory, start-up.

1. LIBSVM: a9a repeated ``--a9a-copies`` times (100: 3,256,100 rows; the copy
   shipped in skftrl/_data), one pass over the same file: ``skftrl train``
   without hints (its first pass finds the classes and the width) and with
   ``--n-features 123 --classes -1,1`` (one pass), against Vowpal Wabbit's
   own driver, ``python -m vowpalwabbit -d FILE --ftrl`` (the
   ``vowpalwabbit`` package ships no ``vw`` executable; its ``__main__`` runs
   the C++ driver, parser included, on the file), on the same rows in VW's
   text format.
2. Click table: ``skftrl.datasets.write_click_table(path, n_rows,
   random_state=0)`` (Avazu's 22 columns and ``click``: an hour code,
   integer codes, ids of 8 hex digits), ``--click-rows`` rows (one table per
   size), written once as CSV, Parquet (integer columns int64) and VW text
   (a namespace a column). One pass each, 2**20 hashed columns:
   ``skftrl train --hash-bits 20 --classes 0,1`` on the CSV and the Parquet
   file and ``--classes=-1,1`` on the VW text, against VW's driver on the VW
   text (``-b 20``), VW pinned to one core, and datatable's ``fread`` and
   ``Ftrl`` (``nbins=2**20``, one epoch, every column but the label) on the
   CSV, as a process of their own. The CPU ratios are to VW on one core.
   With several sizes, each command's peak memory at each size, and its
   ratio at the largest size to each smaller one (flat: 1.00).
3. Peak memory of ``skftrl train --hash-bits 20`` (a 2**20-column linear
   model) on LIBSVM files of 10**5, 10**6 and 3 * 10**6 rows of a9a drawn at random:
   flat in the file size.
4. ``--profile``: where ``skftrl train``'s CPU time goes (each import in a new
   process; parsing, the compiled scan and ``partial_fit`` in this process),
   and the start-up time of ``skftrl --version``.

Every command is a whole process (imports, reading, training, saving the
model), run after one warm-up run (``--click-warmup 0``: none, but each
skftrl command first runs once on a click table of 1,000 rows, which fills
numba's cache); the commands of a table take turns, in a
rotating order, ``--repeats`` times. Each table gives the median wall time,
CPU time (user + system) and peak resident memory of each command, and the
medians over the turns of the paired ratios VW wall time / its wall time
(above 1: it is faster) and VW CPU time / its CPU time (the click tables:
VW on one core, whose CPU time is not inflated by its threads' waiting).
The load average is printed: on a shared machine wall times are noisy, and
the paired ratios of interleaved runs are the figures to compare.
``--baseline DIR`` adds the commands of another skftrl (an exported
checkout: ``git archive REV skftrl | tar -x -C DIR``).
Every file is written to a temporary directory, deleted at the end, except
the click files with ``--data-dir DIR``: written there if missing (10**7
rows take minutes: about 1 GB of CSV, 0.3 GB of Parquet, 3.3 GB of VW text),
kept, and taken again by later runs (checked to hold the rows).

    python benchmarks/bench_cli.py --repeats 5

The click tables (500,000, 1,000,000 and 10,000,000 rows, and the peak
memory at 10,000,000 rows over that at 1,000,000):

    python benchmarks/bench_cli.py --skip libsvm,memory --repeats 5 \
        --click-rows 500000,1000000,10000000 --data-dir /tmp/click
"""

import argparse
import gzip
import importlib.util
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
# The click table of the untimed runs that fill numba's cache (--click-warmup 0).
WARM_UP_ROWS = 1_000
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


def table(title, measured, reference, n_rows, cpu_reference=None):
    """Print the medians of each command, its paired ratio of wall times to
    ``reference`` and of CPU times to ``cpu_reference`` (default: ``reference``)."""
    cpu_reference = reference if cpu_reference is None else cpu_reference
    print(f"{title} (load average {load()}):")
    print(
        f"   ratios: wall {reference} / this; CPU {cpu_reference} / this "
        "(above 1: this is faster, uses less CPU)"
    )
    print(
        f"   {'command':<52} {'wall s':>7} {'rows/s':>11} {'CPU s':>7} {'peak MB':>8} "
        f"{'wall ratio':>11} {'CPU ratio':>10}"
    )
    for name, runs in measured.items():
        wall, cpu, peak = (statistics.median(run[i] for run in runs) for i in range(3))
        ratio = statistics.median(
            other[0] / run[0] for run, other in zip(runs, measured[reference])
        )
        cpu_ratio = statistics.median(
            other[1] / run[1] for run, other in zip(runs, measured[cpu_reference])
        )
        print(
            f"   {name:<52} {wall:7.2f} {n_rows / wall:11,.0f} {cpu:7.2f} {peak:8.0f} "
            f"{ratio:11.2f} {cpu_ratio:10.2f}"
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


CLICK_FORMATS = ("csv", "parquet", "vw")
# datatable's reader and FTRL, as a process of their own: fread the CSV file,
# one epoch of Ftrl (skftrl's alpha and beta) on every column but the label,
# the model saved, as every other command saves its model.
DATATABLE = """
import pickle, sys
import datatable as dt
from datatable.models import Ftrl
path, label, model_path = sys.argv[1:]
frame = dt.fread(path)
model = Ftrl(nbins=2**20, alpha=0.1, beta=1.0, nepochs=1)
model.fit(frame[:, [name for name in frame.names if name != label]], frame[:, label])
with open(model_path, "wb") as file:
    pickle.dump(model, file)
"""


def installed(package):
    """Whether ``package`` can be imported, without importing it: a command's
    peak memory counts that of this process, which must stay small."""
    return importlib.util.find_spec(package) is not None


def size_name(n_rows):
    """``1m`` for 1,000,000 rows, ``500k`` for 500,000, else the number."""
    for size, suffix in ((10**6, "m"), (10**3, "k")):
        if n_rows % size == 0:
            return f"{n_rows // size}{suffix}"
    return str(n_rows)


def rows_in(path, file_format):
    """The rows of a click file: its lines (less the CSV header), or the
    row count of the Parquet footer."""
    if file_format == "parquet":
        import pyarrow.parquet

        return pyarrow.parquet.read_metadata(path).num_rows
    lines = 0
    with open(path, "rb") as file:
        while block := file.read(2**24):
            lines += block.count(b"\n")
    return lines - (file_format == "csv")


def click_file(path, n_rows, file_format):
    """Write ``write_click_table(path, n_rows, random_state=0)`` unless the
    file exists, which must then hold ``n_rows`` rows (a file still being
    written, or of another size, is an error, not a measurement)."""
    if os.path.exists(path):
        found = rows_in(path, file_format)
        if found != n_rows:
            raise SystemExit(f"{path} holds {found:,} rows, not {n_rows:,}: remove it")
        return
    from skftrl.datasets import write_click_table

    # Written under another name, then renamed: an interrupted run leaves no
    # partial file under the name that a later run would take as complete.
    partial = f"{path}.{os.getpid()}.partial"
    write_click_table(partial, n_rows, random_state=0, file_format=file_format)
    os.replace(partial, path)


def click_files(directory, n_rows):
    """``{format: path}`` of the click table of ``n_rows`` rows in
    ``directory`` (``c1m.csv``, ``c1m.parquet``, ``c1m.vw`` for 1,000,000
    rows; no Parquet without pyarrow), each written if missing."""
    formats = CLICK_FORMATS if installed("pyarrow") else ("csv", "vw")
    paths = {}
    for file_format in formats:
        path = os.path.join(directory, f"c{size_name(n_rows)}.{file_format}")
        # Checked and written by a child process: a command's peak memory
        # counts the pages of the process it is started from, which must
        # stay small (no pyarrow, no table).
        child = multiprocessing.get_context("fork").Process(
            target=click_file, args=(path, n_rows, file_format)
        )
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit(f"the click table {path} could not be written or checked")
        paths[file_format] = path
    return paths


def click_commands(paths, baseline):
    """The commands of the click table, by name: one pass each, 2**20 columns."""
    options = ["--hash-bits", 20, "--model", "m", "--quiet"]
    on_table = ["--label-column", "click", "--classes", "0,1", *options]
    commands = {}
    packages = {"": None} if baseline is None else {"": None, " (baseline)": baseline}
    for suffix, package in packages.items():
        commands["skftrl train, CSV" + suffix] = skftrl(
            "train", paths["csv"], *on_table, package=package
        )
        if "parquet" in paths:
            commands["skftrl train, Parquet" + suffix] = skftrl(
                "train", paths["parquet"], *on_table, package=package
            )
        commands["skftrl train, VW text (--classes=-1,1)" + suffix] = skftrl(
            "train", paths["vw"], "--classes=-1,1", *options, package=package
        )
    commands["vw --ftrl -b 20"] = [*VW, "-d", paths["vw"], "-f", "vw.model", "-b", "20"]
    commands.update(vw_on_one_core("vw --ftrl -b 20", commands["vw --ftrl -b 20"]))
    if installed("datatable"):
        commands["datatable fread + Ftrl, CSV"] = [
            sys.executable, "-c", DATATABLE, paths["csv"], "click", "dt.model"
        ]  # fmt: skip
    else:
        print("   (datatable is not installed: its row left out)")
    return commands


def click_speed(directory, data_dir, row_counts, repeats, baseline, warmup=1):
    """One table per size of the click table, its files in ``data_dir`` (kept)
    or, if None, in ``directory`` (removed after their table); then each
    command's peak memory at each size."""
    peaks = {}
    if not warmup:  # numba's cache filled all the same: compiling is no part of a turn
        small = click_files(directory, WARM_UP_ROWS)
        for name, command in click_commands(small, baseline).items():
            if name.startswith("skftrl"):
                run_once(command, directory)
    for n_rows in row_counts:
        if data_dir is not None:
            os.makedirs(data_dir, exist_ok=True)
        paths = click_files(directory if data_dir is None else data_dir, n_rows)
        commands = click_commands(paths, baseline)
        measured = interleaved(commands, directory, repeats, warmup)
        one_core = "vw --ftrl -b 20, one core"
        table(
            f"2. one pass over the click table ({n_rows:,} rows, skftrl.datasets."
            f"write_click_table), median of {repeats} turns",
            measured,
            "vw --ftrl -b 20",
            n_rows,
            cpu_reference=one_core if one_core in measured else "vw --ftrl -b 20",
        )
        peaks[n_rows] = {
            name: statistics.median(run[2] for run in runs) for name, runs in measured.items()
        }
        if data_dir is None:  # the temporary copies: the next size's need the room
            for path in paths.values():
                os.remove(path)
    if len(peaks) > 1:
        sizes = sorted(peaks)
        largest = size_name(sizes[-1])
        print(
            "   peak memory, MB at each size, and its ratio at the largest size to each "
            "smaller (1.00: flat):"
        )
        heads = [f"{size_name(n)} MB" for n in sizes]
        heads += [f"{largest}/{size_name(n)}" for n in sizes[:-1]]
        print(f"   {'command':<52} " + " ".join(f"{head:>9}" for head in heads))
        for name in peaks[sizes[-1]]:
            cells = [f"{peaks[n][name]:9,.0f}" for n in sizes]
            cells += [f"{peaks[sizes[-1]][name] / peaks[n][name]:9.2f}" for n in sizes[:-1]]
            print(f"   {name:<52} " + " ".join(cells))
        sys.stdout.flush()


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
        help="rows of the click table, comma-separated sizes (default 500000; 10000000 "
        "rows are about 1 GB of CSV, 0.3 GB of Parquet and 3.3 GB of VW text, minutes to "
        "write)",
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="where the click files are: written there if missing, and kept (default: "
        "the temporary directory, deleted at the end)",
    )
    parser.add_argument(
        "--skip", default="", help="comma-separated tables to leave out: libsvm, click, memory"
    )
    parser.add_argument("--profile", action="store_true", help="also where the time goes")
    parser.add_argument(
        "--click-warmup",
        type=int,
        default=1,
        help="warm-up runs of each click table command (default 1; with 0, each skftrl "
        f"command still runs once on {WARM_UP_ROWS:,} rows first, to fill numba's cache)",
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
            data_dir = None if args.data_dir is None else os.path.abspath(args.data_dir)
            click_speed(directory, data_dir, rows, args.repeats, baseline, args.click_warmup)
        if "memory" not in skip:
            memory(directory, args.repeats)
        if args.profile:
            profile(directory, args.repeats)


if __name__ == "__main__":
    main()
