"""The ``skftrl`` command end to end: against Vowpal Wabbit's driver, start-up, CSV, memory.

1. On a9a repeated 20 times (651,220 rows; the copy shipped in skftrl/_data),
   one pass over the same file: ``skftrl train`` (with the first pass that
   finds the classes and width, and with ``--n-features``/``--classes``, one
   pass) against Vowpal Wabbit's own driver, ``python -m vowpalwabbit -d FILE
   --ftrl`` (the ``vowpalwabbit`` package ships no ``vw`` executable; its
   ``__main__`` runs the C++ driver, parser included, on the file), on the
   same rows in VW's text format. Wall time of the whole command, taking
   turns, median of ``--repeats``; rows/s and the ratio skftrl / VW.
   Then where the time goes: the CPU seconds of each import the command
   makes (each in a new process, minus ``python -c pass``), of parsing the
   file (the numba-compiled parser and the numpy one, in this process, taking
   turns) and of training on the parsed chunks.
2. Start-up: ``skftrl --version``, median wall time of 5 runs.
3. CSV: rows/s of the reader (parse, hash, CSR) on the bike sharing file
   shipped in skftrl/_data repeated 20 times.
4. Peak resident memory of ``skftrl train`` (``/usr/bin/time -v``) on 10**5
   and 10**6 rows of a9a drawn at random: flat in the file size.

Every file is written to a temporary directory, deleted at the end.

    python benchmarks/bench_cli.py [--repeats 3]
"""

import argparse
import gzip
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.resources import files

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VW_ARGS = ["--ftrl", "--loss_function", "logistic", "-b", "18", "--holdout_off", "--quiet"]


def shipped(name):
    return gzip.decompress((files("skftrl") / "_data" / name).read_bytes())


def environment():
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
    }


def seconds(command, cwd, cpu=None):
    """Wall seconds of a command; its CPU seconds (user + system) appended to ``cpu``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(command, check=True, cwd=cwd, env=environment(), capture_output=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall


def skftrl(*args):
    return [sys.executable, "-m", "skftrl", *map(str, args)]


def end_to_end(directory, repeats):
    a9a = shipped("a9a.gz")
    n_rows = a9a.count(b"\n") * 20
    with open(os.path.join(directory, "a9a20"), "wb") as file:
        file.write(a9a * 20)
    with open(os.path.join(directory, "a9a20.vw"), "wb") as file:
        vw_text = b"".join(
            line.split(b" ", 1)[0] + b" |f " + line.split(b" ", 1)[1] + b"\n"
            for line in a9a.splitlines()
        )
        file.write(vw_text * 20)
    runs = {
        "skftrl train (first pass finds classes, width)": skftrl(
            "train", "a9a20", "--model", "m", "--l1", 1, "--quiet"
        ),
        "skftrl train --n-features 123 --classes=-1,1": skftrl(
            "train",
            "a9a20",
            "--model",
            "m",
            "--l1",
            1,
            "--quiet",
            "--n-features",
            123,
            "--classes=-1,1",
        ),
        "vw --ftrl (python -m vowpalwabbit)": [
            sys.executable,
            "-m",
            "vowpalwabbit",
            "-d",
            "a9a20.vw",
            "-f",
            "vw.model",
            *VW_ARGS,
        ],
    }
    times = {name: [] for name in runs}
    cpu_times = {name: [] for name in runs}
    for _ in range(repeats):  # taking turns
        for name, command in runs.items():
            times[name].append(seconds(command, directory, cpu_times[name]))
    name_vw = "vw --ftrl (python -m vowpalwabbit)"
    vw, vw_cpu = statistics.median(times[name_vw]), statistics.median(cpu_times[name_vw])
    print(
        f"1. one pass over a9a x 20 ({n_rows:,} rows), the whole command, median of "
        f"{repeats}; wall time, and CPU time (user + system, which waiting for a "
        f"shared CPU or disk does not inflate); load average {load()}:"
    )
    for name, measured in times.items():
        wall, cpu = statistics.median(measured), statistics.median(cpu_times[name])
        print(
            f"   {name:<48} wall {wall:6.2f} s {n_rows / wall:>9,.0f} rows/s ratio to VW "
            f"{vw / wall:.2f} | CPU {cpu:5.2f} s {n_rows / cpu:>9,.0f} rows/s ratio to VW "
            f"{vw_cpu / cpu:.2f}"
        )


IMPORTS = {
    "python -c pass": "pass",
    "numpy, scipy.sparse": "import numpy, scipy.sparse",
    "+ scikit-learn, the estimators": "import numpy, scipy.sparse, skftrl; skftrl.FTRLClassifier",
    "+ numba": "import numpy, scipy.sparse, skftrl, numba; skftrl.FTRLClassifier",
}


def load():
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def where_the_time_goes(directory, repeats):
    """CPU seconds of the imports, of parsing, and of training, each on its own."""
    import scipy.sparse as sp

    import skftrl._readers._libsvm
    from skftrl import FTRLClassifier
    from skftrl._cli._estimators import engine_name
    from skftrl._readers._libsvm import compiled_plain_parser, parse_plain_libsvm, read_libsvm
    from skftrl._readers._spec import LibsvmSpec

    print(f"   where the time goes (CPU s, median of {repeats}; load average {load()}):")
    cpu = {name: [] for name in IMPORTS}
    for _ in range(repeats):
        for name, code in IMPORTS.items():
            seconds([sys.executable, "-c", code], directory, cpu[name])
    previous = 0.0
    for name, measured in cpu.items():
        total = statistics.median(measured)
        print(f"   {'import ' + name:<48} {total:6.2f} s (+{total - previous:.2f})")
        previous = total
    with open(os.path.join(directory, "a9a20"), "rb") as file:
        data = file.read()
    blocks, start = [], 0
    while start < len(data):  # the reader's blocks: 4 MiB of whole lines
        end = data.rfind(b"\n", start, start + 4 * 2**20) + 1 or len(data)
        blocks.append(data[start:end])
        start = end
    parsers = {"parse (numpy parser)": False}
    if compiled_plain_parser() is not None:
        parsers["parse (numba-compiled parser)"] = True
        compiled_plain_parser()(b"1 1:1\n", True)  # compiles, or loads numba's cache
    parse_cpu = {name: [] for name in parsers}
    for _ in range(repeats):
        for name, compiled in parsers.items():
            began = time.process_time()
            for block in blocks:
                parse_plain_libsvm(block, True, compiled=compiled)
            parse_cpu[name].append(time.process_time() - began)
    for name, measured in parse_cpu.items():
        median = statistics.median(measured)
        print(f"   {name:<48} {median:6.2f} s ({len(data) / median / 2**20:,.0f} MiB/s)")
    if compiled_plain_parser() is not None:
        # What the numpy parser leaves to load_svmlight_file: a9a x 2 with a
        # comment on every line and its values written with an exponent.
        text = shipped("a9a.gz").replace(b":1 ", b":1e0 ").replace(b"\n", b" # row\n") * 2
        path = os.path.join(directory, "a9a2-extras")
        with open(path, "wb") as file:
            file.write(text)
        readers = {
            "without the compiled parser (load_svmlight_file)": None,
            "with the compiled parser": compiled_plain_parser(),
        }
        extras_cpu = {name: [] for name in readers}
        for _ in range(repeats):
            for name, parser in readers.items():
                skftrl._readers._libsvm._compiled_parser = parser
                began = time.process_time()
                for _chunk in read_libsvm(path, 10_000, LibsvmSpec(123, False)):
                    pass
                extras_cpu[name].append(time.process_time() - began)
        skftrl._readers._libsvm._compiled_parser = readers["with the compiled parser"]
        print(
            f"   the reader on a9a x 2 with comments and exponents ({len(text) / 2**20:.0f} MiB):"
        )
        for name, measured in extras_cpu.items():
            median = statistics.median(measured)
            print(f"     {name:<46} {median:6.2f} s ({len(text) / median / 2**20:,.1f} MiB/s)")
    chunks = list(read_libsvm(os.path.join(directory, "a9a20"), 10_000, LibsvmSpec(123, False)))
    FTRLClassifier(l1=1.0).partial_fit(sp.csr_matrix((1, 123)), [-1], classes=[-1, 1])
    train_cpu = []
    for _ in range(repeats):
        model = FTRLClassifier(l1=1.0)
        began = time.process_time()
        for chunk in chunks:
            model.partial_fit(chunk.X, chunk.y, classes=[-1, 1])
        train_cpu.append(time.process_time() - began)
    print(
        f"   {'partial_fit, 10,000-row chunks (engine ' + engine_name(model) + ')':<48} "
        f"{statistics.median(train_cpu):6.2f} s"
    )


def startup(directory):
    cpu, bare_cpu = [], []
    measured = [seconds(skftrl("--version"), directory, cpu) for _ in range(5)]
    bare = [seconds([sys.executable, "-c", "pass"], directory, bare_cpu) for _ in range(5)]
    print(
        f"2. skftrl --version: wall {statistics.median(measured):.3f} s, CPU "
        f"{statistics.median(cpu):.3f} s (python -c pass: wall {statistics.median(bare):.3f} s, "
        f"CPU {statistics.median(bare_cpu):.3f} s), median of 5"
    )


def csv_speed(directory, repeats):
    from skftrl._readers._csv import read_csv
    from skftrl._readers._spec import CsvSpec

    bike = shipped("bike_sharing_hour.csv.gz")
    header, body = bike.split(b"\n", 1)
    header = header.rstrip(b"\r")
    path = os.path.join(directory, "bike20.csv")
    with open(path, "wb") as file:
        file.write(header + b"\n" + body * 20)
    n_rows = body.count(b"\n") * 20
    kinds = {
        name: "numeric" if name in ("temp", "atemp", "hum", "windspeed") else "categorical"
        for name in header.decode().split(",")
        if name != "cnt"
    }
    spec = CsvSpec("cnt", kinds, True, 20)
    measured = []
    for _ in range(repeats):
        began = time.perf_counter()
        list(read_csv(path, spec, 10_000))
        measured.append(time.perf_counter() - began)
    print(
        f"3. CSV reader (parse, hash, CSR), bike sharing x 20 ({n_rows:,} rows), "
        f"median of {repeats}: {n_rows / statistics.median(measured):,.0f} rows/s"
    )


def memory(directory):
    if not os.path.exists("/usr/bin/time"):
        print("4. peak memory: /usr/bin/time is not installed")
        return
    lines = shipped("a9a.gz").splitlines(keepends=True)
    print("4. peak resident memory of skftrl train (a9a rows drawn at random):")
    for n_rows in (100_000, 300_000, 1_000_000):
        path = os.path.join(directory, f"rows{n_rows}.svm")
        picks = np.random.RandomState(0).randint(len(lines), size=n_rows)
        with open(path, "wb") as file:
            for start in range(0, n_rows, 100_000):
                file.write(b"".join(lines[i] for i in picks[start : start + 100_000]))
        result = subprocess.run(
            ["/usr/bin/time", "-v", *skftrl("train", path, "--model", "m", "--quiet")],
            capture_output=True,
            text=True,
            check=True,
            cwd=directory,
            env=environment(),
        )
        peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)[1])
        size = os.path.getsize(path) / 2**20
        print(f"   {n_rows:>10,} rows ({size:,.0f} MB): peak RSS {peak / 1024:,.0f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        end_to_end(directory, args.repeats)
        where_the_time_goes(directory, args.repeats)
        startup(directory)
        csv_speed(directory, args.repeats)
        memory(directory)


if __name__ == "__main__":
    main()
