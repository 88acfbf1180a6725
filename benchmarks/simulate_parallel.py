"""The merge of a parallel pass, simulated in one process: N = 1 to 32 shards.

A parallel pass (``n_jobs``, and skftrl.dask) learns its rows in rounds, each
round cut into N contiguous shards learned from the state as the round began,
their changes then added up. This runs one pass of FTRLClassifier(n_jobs=N)
on a9a, w8a and the synthetic click stream of bench_peers.py, its rounds made
of N shards of R rows each (from the first row; the library's own rounds
start smaller and grow, see docs/parallel.rst), for N in --shards and R in
--shard-rows, and prints the held-out log loss relative to the sequential
pass's, and the bytes one round moves between the model and N workers as
skftrl.dask moves them (each shard's distinct columns, out with their z and n
and back). A last column gives the library's own rounds (``auto``). Threads
on a machine with fewer cores than N give the same models as N cores would:
only the time differs, which is not measured here. --figure draws the table.

    python benchmarks/simulate_parallel.py [--datasets a9a,w8a,synthetic]
        [--shards 1,2,4,8,16,32] [--shard-rows 64,256,1024,4096,16384]
        [--synthetic-rows 1000000] [--data-dir DIR] [--figure PATH]
"""

import argparse
import time
from pathlib import Path

import numpy as np
from bench_peers import COMMON, load_dataset
from sklearn.metrics import log_loss

import skftrl._engines._rounds as rounds_module
from skftrl import FTRLClassifier

CLASSES = np.array([0, 1])
# One coordinate of one round: its column (8 bytes) out, and its z and n
# (float64) out and back.
BYTES_PER_COORDINATE = 8 + 2 * 16


def held_out_loss(ds, n_jobs):
    """The held-out log loss after one pass of FTRLClassifier(n_jobs=n_jobs)
    (one partial_fit call) over the training rows."""
    model = FTRLClassifier(n_jobs=n_jobs, **COMMON)
    model.partial_fit(ds.X_train, ds.y_train, classes=CLASSES)
    return log_loss(ds.y_test, model.predict_proba(ds.X_test)[:, 1], labels=CLASSES)


def with_fixed_rounds(shard_rows, function, *args):
    """``function(*args)`` with every round of N shards of ``shard_rows`` rows
    (after the first row), the library's rounds put back after."""
    saved = rounds_module.GROWTH, rounds_module.SMALLEST_SHARD, rounds_module.LARGEST_SHARD
    rounds_module.GROWTH = {2: 1e18}
    rounds_module.SMALLEST_SHARD = rounds_module.LARGEST_SHARD = shard_rows
    try:
        return function(*args)
    finally:
        rounds_module.GROWTH, rounds_module.SMALLEST_SHARD, rounds_module.LARGEST_SHARD = saved


def bytes_per_round(X, n_shards, shard_rows):
    """The mean bytes a round of ``n_shards`` shards of ``shard_rows`` rows moves."""
    indptr, indices = X.indptr, X.indices
    totals, round_rows = [], n_shards * shard_rows
    for start in range(1, X.shape[0], round_rows):
        stop = min(X.shape[0], start + round_rows)
        bounds = [start + (stop - start) * t // n_shards for t in range(n_shards + 1)]
        coordinates = sum(
            len(np.unique(indices[indptr[a] : indptr[b]])) for a, b in zip(bounds[:-1], bounds[1:])
        )
        totals.append(coordinates * BYTES_PER_COORDINATE)
    return float(np.mean(totals))


def simulate(ds, shards, shard_rows):
    """{(N, R or "auto"): (relative loss, bytes per round)} of one dataset."""
    sequential = held_out_loss(ds, 1)
    results = {}
    for n in shards:
        for rows in shard_rows:
            began = time.perf_counter()
            loss = with_fixed_rounds(rows, held_out_loss, ds, n) if n > 1 else sequential
            results[n, rows] = (loss / sequential - 1, bytes_per_round(ds.X_train, n, rows))
            loss, moved = results[n, rows]
            spent = time.perf_counter() - began
            print(
                f"  N={n:2d} R={rows:6d}: {100 * loss:+8.2f}%  {moved / 1e6:9.3f} MB/round", end=""
            )
            print(f"  ({spent:.0f} s)", flush=True)
        results[n, "auto"] = (held_out_loss(ds, n) / sequential - 1, None)
    return sequential, results


def print_table(name, sequential, results, shards, shard_rows):
    print(f"\n{name}: sequential held-out log loss {sequential:.5f}; relative to it:")
    print("  " + "N \\ R".rjust(6) + "".join(f"{r:>10d}" for r in shard_rows) + "      auto")
    for n in shards:
        cells = "".join(f"{100 * results[n, r][0]:+9.2f}%" for r in shard_rows)
        print(f"  {n:6d}{cells}{100 * results[n, 'auto'][0]:+9.2f}%")
    print("  bytes a round moves (MB):")
    for n in shards:
        print(f"  {n:6d}" + "".join(f"{results[n, r][1] / 1e6:10.3f}" for r in shard_rows))


def draw(all_results, shards, shard_rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(all_results), figsize=(4.2 * len(all_results), 3.6))
    for ax, (name, results) in zip(np.atleast_1d(axes), all_results.items()):
        for n in shards[1:]:
            losses = [100 * results[n, r][0] for r in shard_rows]
            ax.plot(shard_rows, np.clip(losses, -1, 20), marker="o", label=f"N = {n}")
        ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_ylim(-1, 20)
        ax.set_title(name)
        ax.set_xlabel("rows per shard (R)")
        ax.set_ylabel("held-out log loss vs sequential (%)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"\nfigure: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="a9a,w8a,synthetic")
    parser.add_argument("--shards", default="1,2,4,8,16,32")
    parser.add_argument("--shard-rows", default="64,256,1024,4096,16384")
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--synthetic-features-log2", type=int, default=20)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--figure", type=Path)
    args = parser.parse_args()
    shards = [int(n) for n in args.shards.split(",")]
    shard_rows = [int(r) for r in args.shard_rows.split(",")]
    all_results = {}
    for name in args.datasets.split(","):
        ds = load_dataset(name, args)
        if ds is None:
            continue
        print(f"{name}: {ds.X_train.shape[0]:,} training rows, {ds.X_train.shape[1]:,} columns")
        sequential, results = simulate(ds, shards, shard_rows)
        print_table(name, sequential, results, shards, shard_rows)
        all_results[name] = results
    if args.figure:
        draw(all_results, shards, shard_rows, args.figure)


if __name__ == "__main__":
    main()
