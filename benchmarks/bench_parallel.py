"""Parallel passes: n_jobs=2 against n_jobs=1, two Dask workers against one, and peak memory.

1. Threads. Two partial_fit passes over the synthetic click stream of
   bench_peers.py (2**20 columns) and over a9a repeated ten times, with
   n_jobs=1 and n_jobs=2 taking turns --repeats times, for FTRLClassifier and
   FMClassifier, each pass timed: the first a new model's (which makes its
   state and learns its first rows in order), the second that of a model
   that has learned the rows once (as a stream's later calls, or fit's later
   passes, are). Rows/s of each (medians), the median of the paired ratios
   (n_jobs=2 over n_jobs=1), the CPU time of the n_jobs=2 pass over its wall
   time (2 when both threads compute all the time; 1 when they take turns or
   the machine's other work leaves them one core), the work: the CPU time of
   the n_jobs=2 pass over the n_jobs=1 pass's, median of the pairs (what the
   rounds add to the learning: on two idle cores, n_jobs=2 is at most 2 /
   work times faster), and the held-out log loss of each.
2. Dask. skftrl.dask.partial_fit over --dask-rows rows (blocks of
   --dask-block-rows rows, a9a's blocks copies of a9a, made and kept on the
   workers) on a LocalCluster of
   two one-thread worker processes (two blocks a round) and on one of one
   worker (one block a round: the sequential pass), taking turns: rows/s,
   the median of the paired ratios, and the held-out log loss of both.
3. Memory. partial_fit over a 2**24-column stream (float32 state) in chunks,
   in a new process per n_jobs: the resident memory of the process while it
   learns (sampled), above what it held before, and the tracemalloc peak of
   its calls (Python and numpy allocations; numba's own temporaries are not
   seen), n_jobs=2 over n_jobs=1.

The machine's load average is printed first: the threads' ratios mean little
on a machine whose cores are busy with other work.

    python benchmarks/bench_parallel.py [--repeats 5] [--synthetic-rows 1000000]
        [--a9a-copies 10] [--dask-rows 2000000] [--dask-block-rows 100000]
        [--dask-data synthetic,a9a] [--memory-rows 500000] [--skip threads,dask,memory]
"""

import argparse
import copy
import os
import subprocess
import sys
import threading
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp
from bench_peers import COMMON, make_click_stream
from sklearn.metrics import log_loss

from skftrl import FMClassifier, FTRLClassifier
from skftrl.datasets import load_a9a

CLASSES = np.array([0, 1])
LEARNERS = {
    "FTRLClassifier": lambda n_jobs: FTRLClassifier(n_jobs=n_jobs, **COMMON),
    "FMClassifier": lambda n_jobs: FMClassifier(n_jobs=n_jobs, random_state=0),
}


def a9a_copies(copies):
    """a9a's training rows ``copies`` times (labels 0/1), and its test rows."""
    X, y, X_test, y_test = load_a9a()
    X_many = sp.vstack([X] * copies, format="csr")
    return X_many, np.tile((y > 0) * 1, copies), X_test, (y_test > 0) * 1


def synthetic(rows, features_log2):
    """The synthetic click stream, the last 10% held out."""
    X, y, _ = make_click_stream(rows, features_log2)
    cut = X.shape[0] - X.shape[0] // 10
    return X[:cut], y[:cut], X[cut:], y[cut:]


def timed_passes(make, X, y):
    """Two partial_fit passes of a new model: each pass's wall and CPU seconds,
    and a copy of the model after each."""
    model, times, models = make(), [], []
    for _ in range(2):
        wall, cpu = time.perf_counter(), time.process_time()
        model.partial_fit(X, y, classes=CLASSES)
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
        models.append(copy.deepcopy(model))  # scored once all are timed
    return times, models


def compare_threads(name, data, learner, repeats):
    X, y, X_test, y_test = data
    make = LEARNERS[learner]
    for n_jobs in (1, 2):  # numba compiles, or loads its cache, before timing
        make(n_jobs).partial_fit(X[:20_000], y[:20_000], classes=CLASSES)
    walls = {(p, n): [] for p in (0, 1) for n in (1, 2)}
    cpus = {key: [] for key in walls}
    models = {}
    for _ in range(repeats):
        for n_jobs in (1, 2):
            times, models[n_jobs] = timed_passes(lambda n_jobs=n_jobs: make(n_jobs), X, y)
            for p, (wall, cpu) in enumerate(times):
                walls[p, n_jobs].append(wall)
                cpus[p, n_jobs].append(cpu)
    rows = X.shape[0]
    for p in (0, 1):
        one, two = (p, 1), (p, 2)
        busy = [cpu / wall for cpu, wall in zip(cpus[two], walls[two])]
        work = [b / a for a, b in zip(cpus[one], cpus[two])]
        ratios = [a / b for a, b in zip(walls[one], walls[two])]
        losses = {
            n: log_loss(y_test, models[n][p].predict_proba(X_test)[:, 1], labels=CLASSES)
            for n in (1, 2)
        }
        print(
            f"  {name + (', pass 2' if p else ''):<22} {learner:<15} "
            f"{rows / np.median(walls[one]):>12,.0f} "
            f"{rows / np.median(walls[two]):>12,.0f} {np.median(ratios):>7.2f} "
            f"{min(ratios):>5.2f}-{max(ratios):<5.2f} {np.median(busy):>9.2f} "
            f"{np.median(work):>6.2f} "
            f"{losses[1]:>9.5f} {losses[2]:>9.5f} {100 * (losses[2] / losses[1] - 1):>+7.2f}%"
        )


def run_threads(args):
    print(
        f"\n1. Threads: two partial_fit passes of a new model (the second: 'pass 2'), "
        f"n_jobs=1 and 2 taking turns {args.repeats} "
        "times (rows/s: medians; ratio: median of the paired ratios, and their range;\n"
        "   CPU/wall: of the n_jobs=2 pass; work: its CPU time over n_jobs=1's; log loss: "
        "held out)"
    )
    print(
        f"  {'data':<22} {'learner':<15} {'n_jobs=1':>12} {'n_jobs=2':>12} {'ratio':>7} "
        f"{'range':>11} {'CPU/wall':>9} {'work':>6} {'loss 1':>9} {'loss 2':>9} {'change':>8}"
    )
    stream = synthetic(args.synthetic_rows, 20)
    a9a = a9a_copies(args.a9a_copies)
    for learner in LEARNERS:
        fm = learner == "FMClassifier"
        # The factorization machine learns a tenth of the stream: it is slower.
        rows = stream[0].shape[0] // 10 if fm else stream[0].shape[0]
        part = (stream[0][:rows], stream[1][:rows], stream[2], stream[3])
        compare_threads(f"synthetic 2^20 {rows // 1000}k", part, learner, args.repeats)
        compare_threads(f"a9a x{args.a9a_copies}", a9a, learner, args.repeats)


# ---------------------------------------------------------------- Dask
def dask_blocks(kind, rows, block_rows):
    """Dask arrays X, y of about ``rows`` rows made on the workers, block by
    block, and held-out rows made here. a9a's blocks are copies of its
    training rows (as many as fit in ``block_rows``), each in another order."""
    import dask
    import dask.array as da

    if kind == "a9a":
        copies = max(1, block_rows // load_a9a()[0].shape[0])
        block_rows = copies * load_a9a()[0].shape[0]

    def block(seed):
        if kind == "a9a":
            X, y, _, _ = load_a9a()
            order = np.random.default_rng(seed).permutation(X.shape[0] * copies) % X.shape[0]
            return X[order], (y[order] > 0) * 1
        X, y, _ = make_click_stream(block_rows, 20, seed=seed)
        return X, y

    n_features = 123 if kind == "a9a" else 2**20
    # At least ``rows`` rows: whole blocks.
    made = [dask.delayed(block, nout=2)(seed) for seed in range(1, -(-rows // block_rows) + 1)]
    X = da.concatenate(
        [
            da.from_delayed(
                X, (block_rows, n_features), dtype=np.float64, meta=sp.csr_matrix((0, 0))
            )
            for X, _ in made
        ]
    )
    y = da.concatenate([da.from_delayed(y, (block_rows,), dtype=np.int64) for _, y in made])
    if kind == "a9a":
        _, _, X_test, y_test = load_a9a()
        return X, y, X_test, (y_test > 0) * 1
    X_test, y_test, _ = make_click_stream(100_000, 20, seed=0)
    return X, y, X_test, y_test


def run_dask(args):
    import skftrl.dask

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("\n2. Dask: skipped, distributed is not installed (pip install 'skftrl[dask]')")
        return
    warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
    print(
        f"\n2. Dask: skftrl.dask.partial_fit over {args.dask_rows:,} rows in blocks of "
        f"{args.dask_block_rows:,}, made and kept on the workers; LocalClusters of\n"
        f"   two one-thread workers (two blocks a round) and of one (one block a round: the "
        f"sequential pass), taking turns {args.repeats} times"
    )
    print(
        f"  {'data':<12} {'one worker':>12} {'two workers':>12} {'ratio':>7} {'range':>11} "
        f"{'loss 1':>9} {'loss 2':>9} {'change':>8}"
    )
    options = dict(threads_per_worker=1, processes=True, dashboard_address=None)
    with (
        LocalCluster(n_workers=1, **options) as one,
        LocalCluster(n_workers=2, **options) as two,
        Client(one, set_as_default=False) as client_one,
        Client(two, set_as_default=False) as client_two,
    ):
        for kind in args.dask_data.split(","):
            X, y, X_test, y_test = dask_blocks(kind, args.dask_rows, args.dask_block_rows)
            persisted = {client: client.persist([X, y]) for client in (client_one, client_two)}
            for client, (X_kept, y_kept) in persisted.items():
                client.gather(client.futures_of([X_kept, y_kept]))
            seconds, models = {1: [], 2: []}, {}
            for _ in range(args.repeats):
                for workers, client in ((1, client_one), (2, client_two)):
                    X_kept, y_kept = persisted[client]
                    began = time.perf_counter()
                    models[workers] = skftrl.dask.partial_fit(
                        FTRLClassifier(**COMMON), X_kept, y_kept, classes=CLASSES, client=client
                    )
                    seconds[workers].append(time.perf_counter() - began)
            rows = X.shape[0]
            ratios = [one / two for one, two in zip(seconds[1], seconds[2])]
            losses = {
                w: log_loss(y_test, models[w].predict_proba(X_test)[:, 1], labels=CLASSES)
                for w in (1, 2)
            }
            print(
                f"  {kind:<12} {rows / np.median(seconds[1]):>12,.0f} "
                f"{rows / np.median(seconds[2]):>12,.0f} {np.median(ratios):>7.2f} "
                f"{min(ratios):>5.2f}-{max(ratios):<5.2f} {losses[1]:>9.5f} {losses[2]:>9.5f} "
                f"{100 * (losses[2] / losses[1] - 1):>+7.2f}%"
            )
            del persisted


# -------------------------------------------------------------- memory
CHUNK_ROWS = 100_000


def resident_bytes():
    """The process's resident memory now (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_child(n_jobs, rows):
    """(In a new process.) partial_fit over a 2**24-column stream in chunks, made
    beforehand: prints the resident MB before learning, its peak while learning
    (sampled every 2 ms) and the largest tracemalloc peak of a call above what
    it began with."""
    chunks = [
        make_click_stream(min(CHUNK_ROWS, rows - start), 24, seed=seed, chunk_rows=10_000)[:2]
        for seed, start in enumerate(range(0, rows, CHUNK_ROWS))
    ]
    model = FTRLClassifier(n_jobs=n_jobs, dtype=np.float32, **COMMON)
    before, peak, learning = resident_bytes(), [0], [True]

    def sample():
        while learning[0]:
            peak[0] = max(peak[0], resident_bytes())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    tracemalloc.start()
    traced = 0
    for X, y in chunks:
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        model.partial_fit(X, y, classes=CLASSES)
        traced = max(traced, tracemalloc.get_traced_memory()[1] - baseline)
    learning[0] = False
    sampler.join()
    print(f"{before / 2**20:.1f} {peak[0] / 2**20:.1f} {traced / 2**20:.1f}")


def run_memory(args):
    print(
        f"\n3. Memory: partial_fit over {args.memory_rows:,} rows x 2^24 columns (float32 "
        f"state, {2 * 4 * 2**24 / 2**20:.0f} MB), chunks of {CHUNK_ROWS:,} rows made "
        "beforehand, a new process each:\n   resident MB before learning and at its peak "
        "while learning (the learning's own: their difference), and tracemalloc's\n"
        "   largest peak of a partial_fit call above what it began with"
    )
    measured = {}
    for n_jobs in (1, 2):
        output = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(n_jobs), str(args.memory_rows)],
            check=True,
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        ).stdout.split()
        before, peak, traced = (float(value) for value in output[-3:])
        measured[n_jobs] = (peak, peak - before, traced)
        print(
            f"  n_jobs={n_jobs}: resident {before:8.1f} MB before, {peak:8.1f} MB at the peak "
            f"({peak - before:7.1f} MB learning); call peak {traced:7.1f} MB"
        )
    ratios = [two / one for one, two in zip(measured[1], measured[2])]
    print(
        f"  n_jobs=2 / n_jobs=1: resident peak {ratios[0]:.2f}, learning's {ratios[1]:.2f}, "
        f"call peak {ratios[2]:.2f}"
    )


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--memory-child":
        memory_child(int(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--a9a-copies", type=int, default=10)
    parser.add_argument("--dask-rows", type=int, default=2_000_000)
    parser.add_argument("--dask-block-rows", type=int, default=100_000)
    parser.add_argument("--dask-data", default="synthetic,a9a")
    parser.add_argument("--memory-rows", type=int, default=500_000)
    parser.add_argument("--skip", default="")
    args = parser.parse_args()
    print(f"load average (1, 5, 15 min): {os.getloadavg()}, CPUs: {os.cpu_count()}")
    skip = set(args.skip.split(","))
    if "threads" not in skip:
        run_threads(args)
    if "dask" not in skip:
        run_dask(args)
    if "memory" not in skip:
        run_memory(args)
    print(f"\nload average (1, 5, 15 min): {os.getloadavg()}")


if __name__ == "__main__":
    main()
