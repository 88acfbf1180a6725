"""Steps per second of skftrl.torch.FTRL's sparse step, against torch's sparse optimizers.

An ``nn.EmbeddingBag(2**20, 16, mode="sum", sparse=True)`` (float32) receives
sparse gradients of about 2,000 touched rows a step (128 bags of 16 random
rows). Each optimizer steps its own copy of the table: FTRL with the sparse
gradients, ``torch.optim.SparseAdam`` and ``torch.optim.Adagrad`` with the same
sparse gradients, and FTRL with the same gradients made dense (the dense
step over the whole table). Gradients cycle through a pool made beforehand
(the step coalesces them, as it would autograd's), so that each step touches
other rows; the timings are of ``optimizer.step()`` alone. A few warm-up
steps allocate each optimizer's state before any timing. The optimizers
take turns, ``--rounds`` times, and the medians are printed, with the
ratios that matter: FTRL's sparse step over SparseAdam's and over the dense
FTRL step (steps/s; above 1: FTRL's sparse step is faster).

torch runs one thread by default here (``torch.set_num_threads(1)``): on a
machine with few shared cores, torch's intra-op threads spin and make small
steps many times slower. ``--default-threads`` keeps torch's own setting.

    python benchmarks/bench_torch.py [--rows-log2 20] [--dim 16] [--bags 128]
        [--bag-size 16] [--rounds 7] [--default-threads]
"""

import argparse
import platform
import statistics
import time

import torch

from skftrl.torch import FTRL

# Gradients made beforehand and cycled through (sparse; dense ones are 64 MiB each).
SPARSE_POOL = 32
DENSE_POOL = 2
WARM_UP_STEPS = 3


def sparse_gradients(table_rows, dim, bags, bag_size, count, seed):
    """Gradients of a sum-mode EmbeddingBag for random bags, as autograd makes them."""
    generator = torch.Generator().manual_seed(seed)
    model = torch.nn.EmbeddingBag(table_rows, dim, mode="sum", sparse=True)
    offsets = torch.arange(0, bags * bag_size, bag_size)
    made = []
    for _ in range(count):
        indices = torch.randint(0, table_rows, (bags * bag_size,), generator=generator)
        target = torch.randn(bags, dim, generator=generator)
        model.zero_grad()
        ((model(indices, offsets) - target) ** 2).sum().backward()
        made.append(model.weight.grad.clone())
    return made


def stepper(optimizer, param, gradients, steps_per_call):
    """A call that makes ``steps_per_call`` steps and returns the steps per second."""
    position = 0

    def run():
        nonlocal position
        start = time.perf_counter()
        for _ in range(steps_per_call):
            param.grad = gradients[position % len(gradients)]
            position += 1
            optimizer.step()
        return steps_per_call / (time.perf_counter() - start)

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-log2", type=int, default=20)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--bags", type=int, default=128)
    parser.add_argument("--bag-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sparse-steps", type=int, default=100, help="steps per timing")
    parser.add_argument("--dense-steps", type=int, default=3, help="steps per timing")
    parser.add_argument(
        "--default-threads", action="store_true", help="keep torch's number of threads"
    )
    args = parser.parse_args()
    if not args.default_threads:
        torch.set_num_threads(1)
    torch.manual_seed(0)
    table_rows = 2**args.rows_log2

    gradients = sparse_gradients(
        table_rows, args.dim, args.bags, args.bag_size, SPARSE_POOL, seed=1
    )
    touched = statistics.mean(len(g.coalesce().indices()[0]) for g in gradients)
    dense_gradients = [g.coalesce().to_dense() for g in gradients[:DENSE_POOL]]

    def table():
        return torch.nn.Parameter(torch.randn(table_rows, args.dim))

    cases = {}
    param = table()
    cases["FTRL, sparse step"] = stepper(
        FTRL([param], l1=1.0), param, gradients, args.sparse_steps
    )
    param = table()
    cases["SparseAdam"] = stepper(
        torch.optim.SparseAdam([param], lr=1e-3), param, gradients, args.sparse_steps
    )
    param = table()
    cases["Adagrad, sparse"] = stepper(
        torch.optim.Adagrad([param], lr=0.1), param, gradients, args.sparse_steps
    )
    param = table()
    cases["FTRL, dense step"] = stepper(
        FTRL([param], l1=1.0), param, dense_gradients, args.dense_steps
    )
    for run in cases.values():  # the state's allocation, left out of the timings
        for _ in range(WARM_UP_STEPS):
            run()

    rates = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, run in cases.items():
            rates[name].append(run())
    medians = {name: statistics.median(values) for name, values in rates.items()}

    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
        f"{platform.processor() or platform.machine()}; table {table_rows:,} x {args.dim} "
        f"float32, {touched:,.0f} touched rows a step; medians of {args.rounds} rounds"
    )
    print(f"{'optimizer':<20} {'steps/s':>10} {'ms/step':>9} {'spread (min-max steps/s)':>26}")
    for name, median in medians.items():
        low, high = min(rates[name]), max(rates[name])
        print(f"{name:<20} {median:>10,.1f} {1e3 / median:>9.3f} {low:>12,.1f} - {high:>11,.1f}")
    sparse = medians["FTRL, sparse step"]
    print(f"FTRL sparse / SparseAdam:        {sparse / medians['SparseAdam']:.2f}")
    print(f"FTRL sparse / Adagrad (sparse):  {sparse / medians['Adagrad, sparse']:.2f}")
    print(f"FTRL sparse / FTRL dense:        {sparse / medians['FTRL, dense step']:.1f}")


if __name__ == "__main__":
    main()
