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

--rules compares other merges with skftrl's (the sum of the shards' changes),
learning the same rounds here, one shard after the other, each from a copy of
the round's start: ``mean``, the shards' models averaged (iterative parameter
mixing, McDonald et al. 2010); ``revision``, ``n`` corrected for the
correlation of the shards' gradients, ``(sum G)^2 - sum G^2`` added, after
McMahan and Streeter's AdaptiveRevision (NIPS 2014); ``weights``, the
shards' weights averaged by their summed squared gradients (Vowpal Wabbit's
AllReduce), ``n`` summed; ``contraction``, each coordinate's summed change
of ``z`` scaled by ``(1 - prod r_s) / sum (1 - r_s)``, ``r_s`` the part of
an error shard s leaves uncorrected, estimated from its ``n``.

    python benchmarks/simulate_parallel.py [--datasets a9a,w8a,synthetic]
        [--shards 1,2,4,8,16,32] [--shard-rows 64,256,1024,4096,16384]
        [--synthetic-rows 1000000] [--data-dir DIR] [--figure PATH]
        [--rules sum,mean,revision,weights,contraction] [--rule-shards 2,4,8]
        [--rule-shard-rows 100,1000,10000]
"""

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from bench_peers import COMMON, load_dataset
from sklearn.metrics import log_loss

import skftrl._engines._rounds as rounds_module
from skftrl import FTRLClassifier
from skftrl._engines import LinearState, Parameters, get_loss, new_state
from skftrl._engines._linear_numba import learn as compiled_learn

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
            ax.plot(shard_rows, np.clip(losses, -1, 1000), marker="o", label=f"N = {n}")
        ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xscale("log", base=2)
        # Linear within 1%, logarithmic beyond: the 0.5% line and the
        # oscillating rounds' losses on one axis.
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(-1, 1000)
        ax.set_title(name)
        ax.set_xlabel("rows per shard (R)")
        ax.set_ylabel("held-out log loss vs sequential (%)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"\nfigure: {path}")


# ------------------------------------------------------ other merge rules
def closed_form(z, n, alpha, beta, l1, l2):
    """FTRL-Proximal's weight of each coordinate (docs/algorithm.rst)."""
    return np.where(
        np.abs(z) > l1, -(z - np.sign(z) * l1) / ((beta + np.sqrt(n)) / alpha + l2), 0.0
    )


def uncorrected_log(n_start, n_end, alpha, beta):
    """log r: the part of an error a coordinate's steps leave, its squared
    gradients taken as its curvature (log loss), from n_start to n_end."""
    root_a, root_b = np.sqrt(n_start), np.sqrt(n_end)
    return -2 * alpha * ((root_b - root_a) - beta * np.log((beta + root_b) / (beta + root_a)))


def merged_by_rule(rule, z0, n0, changes, alpha, beta, l1, l2):
    """The merged (z, n) of coordinates whose round began at (z0, n0), from each
    shard's (dz, dn) of them (zero where it did not learn them)."""
    dz = np.array([c[0] for c in changes])
    dn = np.array([c[1] for c in changes])
    touched = (dz != 0) | (dn != 0)
    n = n0 + dn.sum(axis=0)
    if rule == "sum":
        return z0 + dz.sum(axis=0), n
    if rule == "mean":
        return z0 + dz.mean(axis=0), n0 + dn.mean(axis=0)
    if rule == "revision":
        gradients = dz.sum(axis=0)
        cross = gradients**2 - (dz**2).sum(axis=0)
        return z0 + gradients, np.maximum(n + cross, n0 + dn.max(axis=0))
    contraction = np.where(touched, 1 - np.exp(uncorrected_log(n0, n0 + dn, alpha, beta)), 0)
    whole = 1 - np.exp(uncorrected_log(n0, n, alpha, beta))
    scale = np.minimum(
        1,
        np.where(
            contraction.sum(axis=0) > 0, whole / np.maximum(contraction.sum(axis=0), 1e-300), 1
        ),
    )
    if rule == "contraction":
        return z0 + scale * dz.sum(axis=0), n
    # weights: the shards' weights averaged by their squared gradients
    w0 = closed_form(z0, n0, alpha, beta, l1, l2)
    weights = closed_form(z0 + dz, n0 + dn, alpha, beta, l1, l2)
    total = dn.sum(axis=0)
    w = w0 + np.where(total > 0, (dn * (weights - w0)).sum(axis=0) / np.maximum(total, 1e-300), 0)
    z = np.where(
        w != 0,
        -w * ((beta + np.sqrt(n)) / alpha + l2) - np.sign(w) * l1,
        np.clip(z0 + dz.sum(axis=0), -l1, l1),
    )
    return z, n


def rule_pass(ds, rule, n_shards, shard_rows):
    """Held-out log loss after one pass in rounds of ``n_shards`` shards of
    ``shard_rows`` rows, merged by ``rule``, the shards learned one after the
    other by the compiled pass, each from a copy of the round's start."""
    parameters = Parameters(loss=get_loss("log_loss"), **COMMON)
    alpha, beta, l1, l2 = (parameters.learning_rate, parameters.beta, parameters.l1, parameters.l2)
    X, y = ds.X_train, ds.y_train.astype(np.float64)
    F = X.shape[1]
    z, n = np.zeros(F), np.zeros(F)
    intercept = np.zeros(2)  # z, n
    weights = np.ones(X.shape[0])
    for start in range(0, X.shape[0], n_shards * shard_rows):
        stop = min(X.shape[0], start + n_shards * shard_rows)
        bounds = [start + (stop - start) * t // n_shards for t in range(n_shards + 1)]
        union = np.unique(X.indices[X.indptr[start] : X.indptr[stop]])
        changes, intercept_changes = [], []
        for a, b in zip(bounds[:-1], bounds[1:]):
            shard = X[a:b]
            columns, renumbered = np.unique(shard.indices, return_inverse=True)
            local = sp.csr_matrix(
                (shard.data, renumbered.astype(shard.indices.dtype), shard.indptr)
            )
            local_z, local_n = new_state(1, len(columns), np.float64)
            local_z[0], local_n[0] = z[columns], n[columns]
            state = LinearState(local_z, local_n, intercept[:1].copy(), intercept[1:].copy())
            compiled_learn(state, parameters, local, y[a:b], weights[a:b], np.arange(b - a))
            at = np.searchsorted(union, columns)
            dz, dn = np.zeros(len(union)), np.zeros(len(union))
            dz[at], dn[at] = local_z[0] - z[columns], local_n[0] - n[columns]
            changes.append((dz, dn))
            intercept_changes.append(
                (state.z_intercept - intercept[:1], state.n_intercept - intercept[1:])
            )
        z[union], n[union] = merged_by_rule(rule, z[union], n[union], changes, alpha, beta, l1, l2)
        merged = merged_by_rule(
            rule, intercept[:1], intercept[1:], intercept_changes, alpha, beta, 0.0, 0.0
        )
        intercept = np.concatenate(merged)
    margins = ds.X_test @ closed_form(z, n, alpha, beta, l1, l2) + closed_form(
        intercept[:1], intercept[1:], alpha, beta, 0.0, 0.0
    )
    return log_loss(ds.y_test, 1 / (1 + np.exp(-margins)), labels=CLASSES)


def compare_rules(name, ds, args):
    rules = args.rules.split(",")
    settings = [
        (int(n), int(r))
        for n in args.rule_shards.split(",")
        for r in args.rule_shard_rows.split(",")
    ]
    sequential = held_out_loss(ds, 1)
    print(f"\n{name}: merge rules, held-out log loss relative to the sequential pass's")
    print(f"  {'N, R':>10}" + "".join(f"{rule:>13}" for rule in rules))
    for n_shards, shard_rows in settings:
        cells = [rule_pass(ds, rule, n_shards, shard_rows) / sequential - 1 for rule in rules]
        print(
            f"  {n_shards:>3}, {shard_rows:>5}" + "".join(f"{100 * c:+12.2f}%" for c in cells),
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="a9a,w8a,synthetic")
    parser.add_argument("--shards", default="1,2,4,8,16,32")
    parser.add_argument("--shard-rows", default="64,256,1024,4096,16384")
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--synthetic-features-log2", type=int, default=20)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--figure", type=Path)
    parser.add_argument("--rules", default="")
    parser.add_argument("--rule-shards", default="2,4,8")
    parser.add_argument("--rule-shard-rows", default="100,1000,10000")
    args = parser.parse_args()
    shards = [int(n) for n in args.shards.split(",")]
    shard_rows = [int(r) for r in args.shard_rows.split(",")]
    all_results = {}
    for name in args.datasets.split(","):
        ds = load_dataset(name, args)
        if ds is None:
            continue
        print(f"{name}: {ds.X_train.shape[0]:,} training rows, {ds.X_train.shape[1]:,} columns")
        if args.rules:
            compare_rules(name, ds, args)
            continue
        sequential, results = simulate(ds, shards, shard_rows)
        print_table(name, sequential, results, shards, shard_rows)
        all_results[name] = results
    if args.figure:
        draw(all_results, shards, shard_rows, args.figure)


if __name__ == "__main__":
    main()
