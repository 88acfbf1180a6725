"""
=======================================================================
Online gradient descent and exact streaming least squares, pass by pass
=======================================================================

FTRL-Proximal against two relatives, on the bike-sharing counts
(:func:`~skftrl.datasets.load_bike_sharing`):

* **Exact streaming least squares.** A linear model's least-squares solution
  depends on the data only through :math:`X^T X` and :math:`X^T y`, which
  add up over batches: after each batch :math:`t`,
  :math:`\\hat\\beta_t = (\\sum_{j \\le t} X_j^T X_j)^{-1}
  \\sum_{j \\le t} X_j^T y_j` is *exactly* the batch solution on every row
  seen, for the memory of a :math:`p \\times p` matrix. It is the optimum of
  the squared error that the other two learners approach.
* **Online gradient descent** (OGD), :math:`w \\leftarrow w - \\eta\\, g`.
  FTRL-Proximal with ``l1 = l2 = 0`` and one global rate produces OGD's
  iterates (McMahan, AISTATS 2011; ``tests/test_related_algorithms.py``
  checks it against an OGD written from the formula): with
  ``learning_rate_power=0`` every coordinate has the constant rate
  ``learning_rate / (beta + 1)``.
* **FTRL-Proximal**, :class:`~skftrl.FTRLRegressor` with its per-coordinate
  rates :math:`\\alpha / (\\beta + \\sqrt{n_i})`.

Both online learners make passes over the training hours with
``partial_fit``; after each pass the example records the training objective
(half the mean squared error) and the test RMSE, against those of the exact
least-squares solution.
"""

# %%
# Features: one-hot calendar and weather codes
# --------------------------------------------
# The features of :ref:`sphx_glr_auto_examples_plot_regression_bike_sharing.py`,
# one-hot encoded (dense: 109 columns), with the first 75% of the hours for
# training, in time order, and the rest for testing. A column of ones is the
# least-squares intercept; the online learners have their own.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import make_column_transformer
from sklearn.preprocessing import OneHotEncoder

from skftrl import FTRLRegressor
from skftrl.datasets import load_bike_sharing

bikes = load_bike_sharing(as_frame=True)
data = bikes.data.assign(
    hr_workingday=bikes.data["hr"].astype(str) + "_" + bikes.data["workingday"].astype(str)
)
categorical = bikes.categorical_features + ["hr_workingday"]
encoder = make_column_transformer(
    (OneHotEncoder(sparse_output=False), categorical),
    ("passthrough", ["temp", "atemp", "hum", "windspeed"]),
)
X = encoder.fit_transform(data)
y = bikes.target.to_numpy(dtype=float)
split = int(0.75 * len(y))
X_train, X_test, y_train, y_test = X[:split], X[split:], y[:split], y[split:]
print(f"{X_train.shape[0]:,} training hours, {X.shape[1]} columns")


def objective(predicted, target):
    """Half the mean squared error: the loss all three learners minimize."""
    return 0.5 * np.mean((predicted - target) ** 2)


def rmse(predicted, target):
    return np.sqrt(np.mean((predicted - target) ** 2))


# %%
# Exact streaming least squares
# -----------------------------
# Batches of 500 hours update the two cumulative statistics; the solution
# after each batch uses the pseudo-inverse, since one-hot columns and the
# column of ones are collinear (the minimum-norm solution predicts the same).
with_ones = np.column_stack([np.ones(len(y)), X])
xtx = np.zeros((with_ones.shape[1],) * 2)
xty = np.zeros(with_ones.shape[1])
streaming_rows, streaming_test_rmse = [], []
for start in range(0, split, 500):
    batch = slice(start, min(start + 500, split))
    xtx += with_ones[batch].T @ with_ones[batch]
    xty += with_ones[batch].T @ y[batch]
    beta = np.linalg.pinv(xtx) @ xty
    streaming_rows.append(batch.stop)
    streaming_test_rmse.append(rmse(with_ones[split:] @ beta, y_test))
least_squares_objective = objective(with_ones[:split] @ beta, y_train)
least_squares_rmse = streaming_test_rmse[-1]
print(
    f"least squares on all training hours: objective {least_squares_objective:.1f}, "
    f"test RMSE {least_squares_rmse:.1f}"
)

# %%
# OGD and FTRL-Proximal, pass by pass
# -----------------------------------
# The counts reach hundreds, so FTRL-Proximal's weights must too: it uses
# ``learning_rate=10`` (see :ref:`hyperparameters`), a step of up to about 10
# per update and coordinate, shrinking as its squared gradients add up. OGD's
# one step must instead be small enough for every row: a row has 13 non-zeros,
# and a step above about ``2 / 13`` diverges. ``learning_rate=0.1`` gives the
# step ``0.1 / (1 + 1) = 0.05``. Each pass goes over the training hours in a
# new random order.
learners = {
    "OGD (FTRL, l1=l2=0, learning_rate_power=0)": FTRLRegressor(
        learning_rate=0.1, learning_rate_power=0.0
    ),
    "FTRL-Proximal (per-coordinate rates)": FTRLRegressor(learning_rate=10.0),
}
n_passes = 20
rng = np.random.RandomState(0)
curves = {name: ([], []) for name in learners}
for _ in range(n_passes):
    order = rng.permutation(split)
    for name, learner in learners.items():
        learner.partial_fit(X_train[order], y_train[order])
        train_objective, test_rmse = curves[name]
        train_objective.append(objective(learner.predict(X_train), y_train))
        test_rmse.append(rmse(learner.predict(X_test), y_test))
for name, (train_objective, test_rmse) in curves.items():
    print(
        f"{name}: objective after 1 / {n_passes} passes {train_objective[0]:.1f} / "
        f"{train_objective[-1]:.1f}, test RMSE {test_rmse[0]:.1f} / {test_rmse[-1]:.1f}"
    )

# %%
# The curves
# ----------
passes = np.arange(1, n_passes + 1)
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
for name, (train_objective, test_rmse) in curves.items():
    left.plot(passes, train_objective, marker="o", markersize=3, label=name)
    right.plot(passes, test_rmse, marker="o", markersize=3, label=name)
left.axhline(least_squares_objective, color="black", linestyle="--", label="exact least squares")
right.axhline(least_squares_rmse, color="black", linestyle="--", label="exact least squares")
right.plot(
    np.array(streaming_rows) / split,
    streaming_test_rmse,
    color="gray",
    linewidth=1,
    label="streaming least squares, within pass 1",
)
left.set_ylabel("training objective (half the mean squared error)")
right.set_ylabel("test RMSE (rentals an hour)")
right.set_ylim(top=1.5 * max(max(c[1]) for c in curves.values()))
for ax in (left, right):
    ax.set_xlabel("passes over the training hours")
    ax.grid(True, alpha=0.3)
left.legend()
right.legend(fontsize="small")
fig.suptitle("Bike sharing: online learners approaching the least-squares optimum")
fig.tight_layout()
plt.show()

# %%
# What to conclude
# ----------------
# * Streaming least squares is exact at every batch, for a
#   :math:`p \times p` matrix of memory and a solve per update: the right
#   tool when the features are few and dense. With the millions of hashed
#   columns of click data, :math:`X^T X` cannot be stored, and the online
#   learners' cost per row is proportional to its non-zeros.
# * FTRL-Proximal's training objective falls towards the least-squares
#   optimum pass after pass, but slowly: its per-coordinate rates
#   :math:`\alpha/(\beta+\sqrt{n_i})` shrink as the squared gradients
#   accumulate, over all passes, so later passes take ever smaller steps.
#   One pass already gets within a few percent of the optimum.
# * OGD's single step has to suit the largest rows, so it is too small for
#   rare columns and too large to settle: its objective keeps jumping well
#   above the optimum from pass to pass (a decaying step would settle, more
#   slowly). Per-coordinate rates are what make one pass of FTRL-Proximal
#   good.
# * Held-out error is what matters, and ``fit`` chooses the number of passes
#   on it (see :ref:`fit-passes`); on these dense, low-dimensional data more
#   passes help, unlike on hashed click data.
