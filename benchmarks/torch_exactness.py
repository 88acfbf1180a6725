"""How far skftrl.torch.FTRL is from FTRLClassifier's state, one a9a row per step.

A float64 logistic model in torch (an ``EmbeddingBag(123, 1, mode="sum")``
whose per-sample weights are a CSR row's values, and a bias in a group of its
own with ``l1 = l2 = 0``) learns the first ``--rows`` rows of a9a one per
step with FTRL, with dense and with sparse gradients; FTRLClassifier
(numpy engine) learns the same rows with ``partial_fit``. For each setting it
prints, for z, n, the intercept's z and n and the weights, the largest
absolute and relative difference and how many coordinates differ at all.
tests/test_torch.py asserts the same comparison to 1e-12.

    python benchmarks/torch_exactness.py [--rows 2000]
"""

import argparse

import numpy as np
import torch

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a
from skftrl.torch import FTRL

SETTINGS = [
    dict(lr=0.1),
    dict(lr=0.2, beta=0.5, l1=0.5, l2=0.3, lr_power=-0.3, initial_accumulator_value=0.1),
    dict(lr=0.05, beta=2.0, l1=1.0, l2=1.0, initial_accumulator_value=0.5),
    dict(lr=0.3, beta=0.0, l1=0.2, l2=0.0, lr_power=-1.0),
]


def train_torch(X, targets, sparse, settings):
    embedding = torch.nn.EmbeddingBag(X.shape[1], 1, mode="sum", sparse=sparse).double()
    torch.nn.init.zeros_(embedding.weight)
    bias = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    optimizer = FTRL(
        [{"params": [embedding.weight]}, {"params": [bias], "l1": 0.0, "l2": 0.0}], **settings
    )
    offsets = torch.tensor([0])
    for row in range(X.shape[0]):
        start, end = X.indptr[row], X.indptr[row + 1]
        columns = torch.from_numpy(X.indices[start:end].astype(np.int64))
        values = torch.from_numpy(X.data[start:end])
        optimizer.zero_grad()
        margin = embedding(columns, offsets, per_sample_weights=values)[:, 0] + bias
        target = torch.tensor([targets[row]], dtype=torch.float64)
        torch.nn.functional.binary_cross_entropy_with_logits(
            margin, target, reduction="sum"
        ).backward()
        optimizer.step()
    weight_state, bias_state = optimizer.state[embedding.weight], optimizer.state[bias]
    return {
        "z": weight_state["z"][:, 0].numpy(),
        "n": weight_state["n"][:, 0].numpy(),
        "z_intercept": bias_state["z"].numpy(),
        "n_intercept": bias_state["n"].numpy(),
        "coef": embedding.weight.detach()[:, 0].numpy(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()
    X, y, _, _ = load_a9a()
    X, y = X[: args.rows], y[: args.rows]
    targets = (y == 1).astype(np.float64)
    for settings in SETTINGS:
        estimator = FTRLClassifier(
            engine="numpy",
            learning_rate=settings["lr"],
            beta=settings.get("beta", 1.0),
            l1=settings.get("l1", 0.0),
            l2=settings.get("l2", 0.0),
            learning_rate_power=settings.get("lr_power", -0.5),
            initial_accumulator_value=settings.get("initial_accumulator_value", 0.0),
        ).partial_fit(X, y, classes=[-1.0, 1.0])
        expected = {
            "z": estimator.z_[0],
            "n": estimator.n_[0],
            "z_intercept": estimator.z_intercept_,
            "n_intercept": estimator.n_intercept_,
            "coef": estimator.coef_[0],
        }
        print(settings)
        for sparse in (False, True):
            got = train_torch(X, targets, sparse, settings)
            parts = []
            for name, value in got.items():
                difference = np.abs(value - expected[name])
                scale = np.where(expected[name] != 0, np.abs(expected[name]), 1.0)
                parts.append(
                    f"{name} {difference.max():.1e} (rel {np.max(difference / scale):.1e}, "
                    f"{int((value != expected[name]).sum())}/{value.size} differ)"
                )
            print(f"  {'sparse' if sparse else 'dense '}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
