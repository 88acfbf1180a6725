"""How FMClassifier's and FMRegressor's defaults were chosen: held-out loss of
factorization machines against the linear FTRL model on three datasets.

- ratings: user x item one-hot rows (2 non-zeros), ratings from a rank-3 model
  with user and item biases plus noise of standard deviation 0.3 (squared
  error, RMSE reported);
- clicks: 8 one-hot categorical fields with main effects and two planted
  low-rank interactions between pairs of fields (log loss);
- a9a: the census data the package ships (log loss; 14 non-zeros a row).

Each configuration learns the training rows in --passes passes of partial_fit
(the same rows in the same order), then is scored on held-out rows. Varying
one parameter at a time around the defaults shows what each one does.

    python benchmarks/fm_defaults.py [--passes 8] [--rows 20000]
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import log_loss, mean_squared_error

from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor
from skftrl.datasets import load_a9a


def one_hot(fields, cardinalities):
    n_rows = len(fields[0])
    offsets = np.cumsum((0, *cardinalities[:-1]))
    columns = np.column_stack([f + o for f, o in zip(fields, offsets)]).ravel()
    indptr = np.arange(0, n_rows * len(fields) + 1, len(fields))
    shape = (n_rows, sum(cardinalities))
    return sp.csr_matrix((np.ones(len(columns)), columns, indptr), shape=shape)


def ratings(n_rows, seed, n_users=300, n_items=200, rank=3):
    truth = np.random.default_rng(0)
    P = truth.normal(scale=0.5, size=(n_users, rank))
    Q = truth.normal(scale=0.5, size=(n_items, rank))
    bias_u, bias_i = truth.normal(scale=0.5, size=n_users), truth.normal(scale=0.5, size=n_items)
    rng = np.random.default_rng(seed)
    users, items = rng.integers(n_users, size=n_rows), rng.integers(n_items, size=n_rows)
    y = 3.5 + bias_u[users] + bias_i[items] + (P[users] * Q[items]).sum(axis=1)
    y += rng.normal(scale=0.3, size=n_rows)
    return one_hot([users, items], (n_users, n_items)), y


def clicks(n_rows, seed, cardinalities=(100, 200, 30, 500, 10, 50, 1000, 20)):
    truth = np.random.default_rng(0)
    main = [truth.normal(0.0, 0.4, size=c) for c in cardinalities]
    # Two interactions, field 0 x field 1 and field 2 x field 3, of rank 2.
    pairs = [(0, 1), (2, 3)]
    factors = {
        f: truth.normal(0.0, 0.8, size=(cardinalities[f], 2)) for pair in pairs for f in pair
    }
    rng = np.random.default_rng(seed)
    # Skewed category frequencies, as in ad logs.
    fields = [
        np.minimum((rng.pareto(1.0, size=n_rows) * c / 10).astype(int), c - 1)
        for c in cardinalities
    ]
    logit = -1.5 + sum(m[f] for m, f in zip(main, fields))
    for a, b in pairs:
        logit += (factors[a][fields[a]] * factors[b][fields[b]]).sum(axis=1)
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return one_hot(fields, cardinalities), y


def datasets(n_rows):
    X, y = ratings(n_rows, seed=1)
    X_test, y_test = ratings(10_000, seed=2)
    yield "ratings", "regression", X, y, X_test, y_test
    X, y = clicks(n_rows, seed=1)
    X_test, y_test = clicks(10_000, seed=2)
    yield "clicks", "classification", X, y, X_test, y_test
    X, y, X_test, y_test = load_a9a()
    yield "a9a", "classification", X[:n_rows], (y[:n_rows] > 0).astype(int), X_test, (y_test > 0)


VARIANTS = [
    ("linear FTRL (default)", None),
    ("FM defaults", {}),
    ("n_components=4", {"n_components": 4}),
    ("n_components=16", {"n_components": 16}),
    ("init_stdev=0.003", {"init_stdev": 0.003}),
    ("init_stdev=0.03", {"init_stdev": 0.03}),
    ("init_stdev=0.1", {"init_stdev": 0.1}),
    ("factor_l2=0", {"factor_l2": 0.0}),
    ("factor_l2=0.01", {"factor_l2": 0.01}),
    ("factor_l2=0.1", {"factor_l2": 0.1}),
    ("factor_learning_rate=0.03", {"factor_learning_rate": 0.03}),
    ("factor_learning_rate=0.3", {"factor_learning_rate": 0.3}),
    ("learning_rate=0.3", {"learning_rate": 0.3}),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=8)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    for name, task, X, y, X_test, y_test in datasets(args.rows):
        print(
            f"\n{name}: {X.shape[0]:,} training rows, {X_test.shape[0]:,} held out, "
            f"{X.shape[1]:,} columns; {args.passes} passes"
        )
        for label, params in VARIANTS:
            if task == "regression":
                model = (
                    FTRLRegressor() if params is None else FMRegressor(random_state=0, **params)
                )
            else:
                model = (
                    FTRLClassifier() if params is None else FMClassifier(random_state=0, **params)
                )
            start = time.perf_counter()
            curve = []
            for _ in range(args.passes):
                if task == "regression":
                    model.partial_fit(X, y)
                    curve.append(mean_squared_error(y_test, model.predict(X_test)) ** 0.5)
                else:
                    model.partial_fit(X, y, classes=[0, 1])
                    curve.append(log_loss(y_test, model.predict_proba(X_test)))
            seconds = time.perf_counter() - start
            metric = "RMSE" if task == "regression" else "log loss"
            passes = " ".join(f"{value:.4f}" for value in curve)
            print(f"  {label:28s} held-out {metric} by pass: {passes}   ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
