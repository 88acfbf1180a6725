"""When does FTRLAdam help? Held-out log loss of FTRL and FTRLAdam on a9a.

Two models, each trained in mini-batches (the loss summed over the batch)
for a few passes over a9a's training rows, in the same shuffled order, and
scored on a9a.t after each pass:

- ``linear``: logistic regression, an ``EmbeddingBag(123, 1, mode="sum")``
  and a bias, the whole model trained by the optimizer compared;
- ``deep``: the gallery's Wide & Deep model, its wide part trained by FTRL
  (L1) and its deep part (embeddings and MLP) by the optimizer compared:
  Adam, FTRL or FTRLAdam.

Each optimizer runs over a grid of learning rates; the table gives, for
each, the best held-out log loss over the grid and the passes (and the rate
that reached it), and the loss after the last pass at that rate.

    python benchmarks/bench_torch_ftrl_adam.py [--passes 5] [--batch-size 64]
"""

import argparse

import numpy as np
import torch
from sklearn.metrics import log_loss

from skftrl.datasets import load_a9a
from skftrl.torch import FTRL, FTRLAdam

RATES = {
    "FTRL": [0.01, 0.03, 0.1, 0.3, 1.0],
    "FTRLAdam": [0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
    "Adam": [0.0003, 0.001, 0.003, 0.01, 0.03],
}
WIDE_L1 = 20.0


def bags(X):
    return (
        torch.from_numpy(X.indices.astype(np.int64)),
        torch.from_numpy(X.indptr[:-1].astype(np.int64)),
        torch.from_numpy(X.data.astype(np.float32)),
    )


class Linear(torch.nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.weight = torch.nn.EmbeddingBag(n_features, 1, mode="sum")
        torch.nn.init.zeros_(self.weight.weight)
        self.bias = torch.nn.Parameter(torch.zeros(1))

    def forward(self, indices, offsets, values):
        return self.weight(indices, offsets, per_sample_weights=values)[:, 0] + self.bias


class WideAndDeep(torch.nn.Module):
    def __init__(self, n_features, dim=16):
        super().__init__()
        self.wide = Linear(n_features)
        self.embedding = torch.nn.EmbeddingBag(n_features, dim, mode="sum")
        torch.nn.init.normal_(self.embedding.weight, std=0.1)
        self.mlp = torch.nn.Sequential(
            torch.nn.ReLU(), torch.nn.Linear(dim, dim), torch.nn.ReLU(), torch.nn.Linear(dim, 1)
        )

    def forward(self, indices, offsets, values):
        deep = self.mlp(self.embedding(indices, offsets, per_sample_weights=values))[:, 0]
        return self.wide(indices, offsets, values) + deep


def make_optimizer(name, params, lr):
    if name == "Adam":
        return torch.optim.Adam(params, lr=lr)
    return {"FTRL": FTRL, "FTRLAdam": FTRLAdam}[name](params, lr=lr)


def build(model_name, optimizer_name, lr, n_features):
    torch.manual_seed(0)
    if model_name == "linear":
        model = Linear(n_features)
        bias_group = {"params": [model.bias], "l1": 0.0, "l2": 0.0}
        if optimizer_name == "Adam":
            return model, [torch.optim.Adam(model.parameters(), lr=lr)]
        optimizer_class = {"FTRL": FTRL, "FTRLAdam": FTRLAdam}[optimizer_name]
        return model, [optimizer_class([{"params": [model.weight.weight]}, bias_group], lr=lr)]
    model = WideAndDeep(n_features)
    wide = FTRL(
        [
            {"params": [model.wide.weight.weight], "l1": WIDE_L1},
            {"params": [model.wide.bias], "l1": 0.0, "l2": 0.0},
        ],
        lr=0.1,
    )
    deep = [*model.embedding.parameters(), *model.mlp.parameters()]
    return model, [wide, make_optimizer(optimizer_name, deep, lr)]


def held_out_losses(model, optimizers, data, orders, batch_size):
    X_train, target_train, test_bags, target_test = data
    losses = []
    for order in orders:
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            for optimizer in optimizers:
                optimizer.zero_grad()
            torch.nn.functional.binary_cross_entropy_with_logits(
                model(*bags(X_train[rows])), target_train[rows], reduction="sum"
            ).backward()
            for optimizer in optimizers:
                optimizer.step()
        with torch.no_grad():
            probabilities = torch.sigmoid(model(*test_bags)).numpy().astype(np.float64)
        losses.append(log_loss(target_test, np.clip(probabilities, 1e-15, 1 - 1e-15)))
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    X_train, y_train, X_test, y_test = load_a9a()
    data = (
        X_train,
        torch.from_numpy((y_train == 1).astype(np.float32)),
        bags(X_test),
        (y_test == 1).astype(np.float64),
    )
    rng = np.random.default_rng(0)
    orders = [rng.permutation(X_train.shape[0]) for _ in range(args.passes)]
    print(f"a9a, batches of {args.batch_size} rows (summed loss), {args.passes} passes")
    header = ("model", "optimizer", "best loss", "pass", "lr", "last pass")
    print("{:<8} {:<10} {:>10} {:>5} {:>7} {:>10}".format(*header))
    for model_name in ("linear", "deep"):
        for optimizer_name, rates in RATES.items():
            runs = {}
            for lr in rates:
                model, optimizers = build(model_name, optimizer_name, lr, X_train.shape[1])
                runs[lr] = held_out_losses(model, optimizers, data, orders, args.batch_size)
            best_lr = min(runs, key=lambda lr: min(runs[lr]))
            best = min(runs[best_lr])
            best_pass = runs[best_lr].index(best) + 1
            print(
                f"{model_name:<8} {optimizer_name:<10} {best:>10.4f} {best_pass:>5} "
                f"{best_lr:>7g} {runs[best_lr][-1]:>10.4f}"
            )


if __name__ == "__main__":
    main()
