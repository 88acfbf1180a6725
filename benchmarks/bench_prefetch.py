"""The numba engine's prefetching: one pass over a hashed click stream, with
and without it, by the number of columns (bench_peers.py's generator).

The compiled pass asks the CPU for each row's coordinates a few rows before
it learns from them, when the state is larger than PREFETCH_STATE_BYTES. This
prints rows/s of partial_fit with prefetching forced on and off, taking turns,
median of --repeats, and the ratio (above 1: prefetching helps).

    python benchmarks/bench_prefetch.py [--rows 300000] [--repeats 5]
        [--features-log2 10,16,20,22]
"""

import argparse
import time

import numpy as np
from bench_peers import COMMON, make_click_stream

import skftrl._engines._compile as numba_compile
from skftrl import FTRLClassifier


def seconds_to_learn(X, y, prefetch):
    numba_compile.PREFETCH_STATE_BYTES = 0 if prefetch else 2**62
    model = FTRLClassifier(engine="numba", **COMMON)
    began = time.perf_counter()
    model.partial_fit(X, y, classes=[0, 1])
    return time.perf_counter() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--features-log2", default="10,16,20,22")
    args = parser.parse_args()
    print(f"{args.rows:,} rows; rows/s, median of {args.repeats} turns")
    print(f"{'columns':>9} {'state MiB':>9} {'prefetch':>11} {'without':>11} {'ratio':>6}")
    for log2 in map(int, args.features_log2.split(",")):
        X, y, _ = make_click_stream(args.rows, log2)
        seconds_to_learn(X[:1000], y[:1000], True)  # compile, or load the cache
        seconds_to_learn(X[:1000], y[:1000], False)
        times = {True: [], False: []}
        for _ in range(args.repeats):
            for prefetch in (True, False):
                times[prefetch].append(seconds_to_learn(X, y, prefetch))
        on, off = (args.rows / np.median(times[p]) for p in (True, False))
        print(
            f"  2**{log2:<4} {2**log2 * 16 / 2**20:>9.2f} {on:>11,.0f} {off:>11,.0f} "
            f"{on / off:>6.2f}"
        )


if __name__ == "__main__":
    main()
