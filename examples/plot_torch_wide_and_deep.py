"""
=========================================================
A Wide & Deep click model in PyTorch, its wide part FTRL
=========================================================

A Wide & Deep model (Cheng et al., 2016) adds two parts' margins: a *wide*
linear model over the sparse input features, and a *deep* network over
dense embeddings of the same features. The usual recipe trains the wide part
with FTRL-Proximal and L1, which keeps it sparse and gives each feature a
learning rate of its own, and the deep part with Adam. PyTorch has no FTRL
optimizer; :class:`skftrl.torch.FTRL` is one, exactly skftrl's algorithm.

This example trains such a model on a9a (UCI Adult, 123 binary features)
in mini-batches, against the same model trained with Adam alone and against
:class:`~skftrl.FTRLClassifier`, a linear model learned row by row. All three
see the rows in the same order, for five passes, and are scored on the
held-out a9a.t after each.
"""

# %%
# The data and the model
# ----------------------
# ``nn.EmbeddingBag(mode="sum")`` with per-sample weights computes a sparse
# row times a weight matrix: each bag is one row of the CSR matrix, its
# column indices the bag's entries and its values their weights. The wide
# part is such a bag with one output and *sparse* gradients, so that each
# step touches only the rows (features) of the batch; the deep part embeds
# the same features in 16 dimensions, followed by a small MLP.
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.metrics import log_loss

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a
from skftrl.torch import FTRL

torch.set_num_threads(1)  # small steps: threads cost more than they give

X_train, y_train, X_test, y_test = load_a9a()
n_features = X_train.shape[1]
target_train = torch.from_numpy((y_train == 1).astype(np.float32))
target_test = (y_test == 1).astype(np.float32)


def bags(X):
    """A CSR matrix as EmbeddingBag input: indices, offsets, per-sample weights."""
    return (
        torch.from_numpy(X.indices.astype(np.int64)),
        torch.from_numpy(X.indptr[:-1].astype(np.int64)),
        torch.from_numpy(X.data.astype(np.float32)),
    )


class WideAndDeep(torch.nn.Module):
    def __init__(self, n_features, sparse_wide, dim=16):
        super().__init__()
        self.wide = torch.nn.EmbeddingBag(n_features, 1, mode="sum", sparse=sparse_wide)
        torch.nn.init.zeros_(self.wide.weight)  # a sparse model starts at 0
        self.bias = torch.nn.Parameter(torch.zeros(1))
        self.embedding = torch.nn.EmbeddingBag(n_features, dim, mode="sum")
        torch.nn.init.normal_(self.embedding.weight, std=0.1)
        self.mlp = torch.nn.Sequential(
            torch.nn.ReLU(), torch.nn.Linear(dim, dim), torch.nn.ReLU(), torch.nn.Linear(dim, 1)
        )

    def forward(self, indices, offsets, values):
        wide = self.wide(indices, offsets, per_sample_weights=values)[:, 0] + self.bias
        deep = self.mlp(self.embedding(indices, offsets, per_sample_weights=values))[:, 0]
        return wide + deep


# %%
# Two optimizers for one model
# ----------------------------
# The wide weights go to :class:`~skftrl.torch.FTRL` with L1, and the wide
# part's bias to a parameter group of its own without regularization (as
# the estimators' intercept); everything else to Adam. The loss is summed
# over the batch: FTRL's ``l1`` is a threshold on the accumulated gradient,
# so it then means the same as for the estimator, which sums over rows.
# The comparison model is the same network, with dense gradients, and one
# Adam for all of it.
LEARNING_RATE, L1 = 0.1, 20.0
ADAM_LR, BATCH_SIZE, EPOCHS = 0.003, 64, 5


def wide_and_deep_with_ftrl():
    torch.manual_seed(0)
    model = WideAndDeep(n_features, sparse_wide=True)
    wide = FTRL(
        [
            {"params": [model.wide.weight], "l1": L1},
            {"params": [model.bias], "l1": 0.0, "l2": 0.0},
        ],
        lr=LEARNING_RATE,
    )
    deep_parameters = [*model.embedding.parameters(), *model.mlp.parameters()]
    return model, [wide, torch.optim.Adam(deep_parameters, lr=ADAM_LR)]


def wide_and_deep_with_adam():
    torch.manual_seed(0)
    model = WideAndDeep(n_features, sparse_wide=False)
    return model, [torch.optim.Adam(model.parameters(), lr=ADAM_LR)]


# %%
# Training
# --------
# Each pass visits the rows in a new random order, the same for every
# model; :class:`~skftrl.FTRLClassifier` (with the same ``learning_rate``
# and ``l1``) learns them one at a time with ``partial_fit``.
rng = np.random.default_rng(0)
orders = [rng.permutation(X_train.shape[0]) for _ in range(EPOCHS)]
test_bags = bags(X_test)


def train_torch(model, optimizers):
    losses, zeros = [], []
    for order in orders:
        model.train()
        for start in range(0, len(order), BATCH_SIZE):
            rows = order[start : start + BATCH_SIZE]
            for optimizer in optimizers:
                optimizer.zero_grad()
            margins = model(*bags(X_train[rows]))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                margins, target_train[rows], reduction="sum"
            )
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
        with torch.no_grad():
            probabilities = torch.sigmoid(model(*test_bags)).numpy()
        losses.append(log_loss(target_test, probabilities))
        zeros.append(int((model.wide.weight == 0).sum()))
    return losses, zeros


def train_estimator():
    estimator = FTRLClassifier(learning_rate=LEARNING_RATE, l1=L1)
    losses, zeros = [], []
    for order in orders:
        estimator.partial_fit(X_train[order], y_train[order], classes=[-1.0, 1.0])
        losses.append(log_loss(y_test, estimator.predict_proba(X_test)))
        zeros.append(int((estimator.coef_ == 0).sum()))
    return losses, zeros


results = {
    "Wide & Deep: FTRL (wide) + Adam (deep)": train_torch(*wide_and_deep_with_ftrl()),
    "Wide & Deep: Adam alone": train_torch(*wide_and_deep_with_adam()),
    "FTRLClassifier (linear)": train_estimator(),
}

print(f"{'model':<40} {'held-out log loss by pass':<44} wide zeros (of {n_features})")
for name, (losses, zeros) in results.items():
    print(f"{name:<40} {' '.join(f'{loss:.4f}' for loss in losses):<44} {zeros[-1]}")

# %%
# Held-out loss and the wide part's zeros
# ---------------------------------------
# With L1, FTRL sets many of the wide weights exactly to 0 (``==``, not
# merely small); the deep part carries what the zeroed features still say.
# Adam's wide weights are all non-zero: every feature seen moves its weight.
fig, (loss_axis, zeros_axis) = plt.subplots(1, 2, figsize=(10, 4))
passes = np.arange(1, EPOCHS + 1)
for name, (losses, zeros) in results.items():
    loss_axis.plot(passes, losses, marker="o", label=name)
    zeros_axis.plot(passes, zeros, marker="o", label=name)
loss_axis.set(xlabel="pass", ylabel="held-out log loss (a9a.t)", xticks=passes)
zeros_axis.set(
    xlabel="pass",
    ylabel=f"wide weights exactly 0 (of {n_features})",
    xticks=passes,
    ylim=(-3, n_features),
)
loss_axis.legend(fontsize="small")
fig.tight_layout()
plt.show()

# %%
# What to take from it
# --------------------
# - The wide part trained with FTRL and L1 is sparse, and the model scores
#   as well as the model trained with Adam alone, whose wide part keeps
#   every weight.
# - :class:`~skftrl.torch.FTRL` steps only the rows a sparse gradient
#   touches: on a wide hashed input with millions of rows, a step costs in
#   proportion to the batch's features, not to the table.
# - The wide part alone is the linear model of
#   :class:`~skftrl.FTRLClassifier`; with one row per step and float64
#   parameters, :class:`~skftrl.torch.FTRL` computes exactly its state.
