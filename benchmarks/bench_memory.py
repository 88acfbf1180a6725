"""Peak memory of a wide factorization machine and a wide linear model, against
the bytes of their state.

Each case runs in a fresh Python process (this script started again with
``--case``), so that no case inherits another's allocations, and reports two
peaks, each divided by the state's bytes (the ``nbytes`` of ``z_``, ``n_``,
the intercepts' and, for an FM, ``z_factors_`` and ``n_factors_``):

- ``allocated``: the peak of the memory Python and numpy allocate
  (``tracemalloc``), counting from just before the case's operation but
  after its input was made; for saving, the model's state is counted in.
  Memory a program asked for is counted even where the system never gave it
  pages (a zero page never written);
- ``resident``: the process's peak resident memory (``ru_maxrss``) less its
  resident memory just before the operation (for saving, plus the state's
  resident pages): the pages the system really gave.

The cases, for ``FMClassifier(n_components=8)`` over ``2**--fm-bits``
columns in float64 and float32 (``--fm-rows`` rows of a synthetic click
stream, 20 hashed one-hot fields a row):

- ``fm-partial-fit``: the first ``partial_fit`` (the state and its random
  initial factors are made, then the rows learned);
- ``fm-save``: ``joblib.dump`` of that model to a file (it saves only the
  coordinates training touched);
- ``fm-load``: ``joblib.load`` of that file;
- ``fm-save-part`` and ``fm-load-part``: the same with the factors of one
  feature in 7 touched besides (``z_factors_`` plus 1 there): about the
  largest model saved compactly, whose records take the most memory;
- ``fm-save-whole`` and ``fm-load-whole``: the same with every factor
  touched, which is saved whole;

and for ``FTRLClassifier(dtype=float32)`` over ``2**--linear-bits`` columns
(a few hundred touched): ``linear-save``, ``joblib.dump`` of the model, whose
peak beyond its state is reported in bytes per touched coordinate rather
than against the state (a wide model's state is mostly pages never
written).

    python benchmarks/bench_memory.py [--fm-bits 24] [--fm-rows 1000]
        [--linear-bits 30] [--cases fm-partial-fit,fm-save,...]

To compare two versions of skftrl, run it with each through
``benchmarks/with_package.py``.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import tracemalloc

import numpy as np

WITH_PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "with_package.py")
FM_CASES = (
    "fm-partial-fit",
    "fm-save",
    "fm-load",
    "fm-save-part",
    "fm-load-part",
    "fm-save-whole",
    "fm-load-whole",
)
CASES = (*FM_CASES, "linear-save")


def resident_bytes(field="VmRSS"):
    """The process's resident memory now (VmRSS), or its peak (VmHWM), from Linux's /proc."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def state_bytes(model):
    names = ["z_", "n_", "z_intercept_", "n_intercept_", "z_factors_", "n_factors_"]
    return sum(getattr(model, name).nbytes for name in names if hasattr(model, name))


class Baseline:
    """The memory held before the model existed (its input made): what an
    operation's peaks are counted from."""

    def __init__(self):
        self.allocated, self.resident = tracemalloc.get_traced_memory()[0], resident_bytes()

    def peaks(self, operation):
        """The peaks of ``operation()`` (allocated, resident), less the baseline,
        and its result."""
        tracemalloc.reset_peak()
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # the peak resident memory starts again from now
        result = operation()
        allocated = tracemalloc.get_traced_memory()[1] - self.allocated
        return allocated, resident_bytes("VmHWM") - self.resident, result


def click_stream(args, n_rows, bits):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_peers import make_click_stream

    X, y, _ = make_click_stream(n_rows, bits, seed=0)
    return X, y


def run_case(args):
    """Run one case in this process; prints its figures on one line."""
    import joblib
    import scipy.sparse as sp

    from skftrl import FMClassifier, FTRLClassifier
    from skftrl._engines._undo import writable

    tracemalloc.start()
    dtype = np.dtype(args.dtype).type
    path = os.path.join(args.directory, f"{args.case.split('-')[0]}-{args.case}-{args.dtype}")
    path = path.replace("-load", "-save")
    if args.case == "linear-save":
        rng = np.random.default_rng(0)
        n_features = 2**args.linear_bits
        columns = np.sort(rng.choice(n_features, size=300, replace=False))
        X = sp.csr_matrix((np.ones(300), columns, np.arange(0, 301, 3)), shape=(100, n_features))
        model = FTRLClassifier(dtype=np.float32, engine="numpy")
        model.partial_fit(X, np.arange(100) % 2, classes=[0, 1])
        # The state is mostly pages never written: the peak beyond it.
        baseline = Baseline()
        with open(path, "wb") as file:
            allocated, resident, _ = baseline.peaks(lambda: joblib.dump(model, file))
        print(allocated, resident, state_bytes(model), np.count_nonzero(model.n_))
        return
    if args.case.startswith("fm-load"):
        baseline = Baseline()
        allocated, resident, model = baseline.peaks(lambda: joblib.load(path))
        print(allocated, resident, state_bytes(model))
        return
    X, y = click_stream(args, args.fm_rows, args.fm_bits)
    small_X, small_y = click_stream(args, 10, 10)  # numba compiles on a small model
    FMClassifier(n_components=8, dtype=dtype, random_state=0).partial_fit(small_X, small_y, [0, 1])
    model = FMClassifier(n_components=8, dtype=dtype, random_state=0)
    baseline = Baseline()
    allocated, resident, _ = baseline.peaks(lambda: model.partial_fit(X, y, classes=[0, 1]))
    if args.case != "fm-partial-fit":
        # Factors touched in place (an assigned array would keep the old one
        # alive beside it).
        if args.case == "fm-save-part":
            writable(model.z_factors_)[:, ::7] += 1.0
        elif args.case == "fm-save-whole":
            writable(model.z_factors_)[...] += 1.0
        with open(path, "wb") as file:
            allocated, resident, _ = baseline.peaks(lambda: joblib.dump(model, file))
    print(allocated, resident, state_bytes(model))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fm-bits", type=int, default=24)
    parser.add_argument("--fm-rows", type=int, default=1000)
    parser.add_argument("--linear-bits", type=int, default=30)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float64", help=argparse.SUPPRESS)
    parser.add_argument("--directory", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        run_case(args)
        return
    import skftrl

    package = os.path.dirname(os.path.dirname(os.path.abspath(skftrl.__file__)))
    print(f"skftrl {skftrl.__version__} from {os.path.dirname(skftrl.__file__)}")
    print(f"FMClassifier(n_components=8): 2**{args.fm_bits} columns, {args.fm_rows:,} rows")
    print(f"FTRLClassifier(dtype=float32): 2**{args.linear_bits} columns, 300 touched")
    print(f"{'case':<15} {'dtype':<8} {'state MiB':>10} {'allocated':>10} {'resident':>10}")
    with tempfile.TemporaryDirectory() as directory:
        for case in args.cases.split(","):
            for dtype in ("float64", "float32") if case in FM_CASES else ("float32",):
                # The case's process imports this one's skftrl (with_package.py's too).
                command = [sys.executable, WITH_PACKAGE, package, sys.argv[0]]
                command += ["--case", case, "--dtype", dtype]
                command += ["--directory", directory, "--fm-bits", str(args.fm_bits)]
                command += ["--fm-rows", str(args.fm_rows), "--linear-bits", str(args.linear_bits)]
                output = subprocess.run(command, capture_output=True, text=True, check=False)
                if output.returncode:
                    print(f"{case} {dtype} failed:\n{output.stderr}")
                    continue
                figures = [int(word) for word in output.stdout.splitlines()[-1].split()]
                allocated, resident, state = figures[:3]
                if case == "linear-save":
                    # Beyond the state: MiB in all.
                    print(
                        f"{case:<15} {dtype:<8} {state / 2**20:>10,.0f} "
                        f"{allocated / 2**20:>7,.1f} MiB {resident / 2**20:>6,.1f} MiB"
                        f"  (beyond the state; {figures[3]} coordinates touched)"
                    )
                    continue
                print(
                    f"{case:<15} {dtype:<8} {state / 2**20:>10,.0f} "
                    f"{allocated / state:>9.2f}x {resident / state:>9.2f}x"
                )


if __name__ == "__main__":
    main()
