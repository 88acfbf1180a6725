"""
=====================================================
Ratings: a factorization machine against linear FTRL
=====================================================

A rating depends on who rates what: each user has a taste, each item a
profile, and the rating is high when they match. With users and items
one-hot encoded, a linear model can only learn how generous each user is and
how good each item is on average; a factorization machine
(:class:`~skftrl.FMRegressor`) also learns a vector of factors per user and
per item whose inner product is the match.

The ratings here are generated from a known model, so we can check what the
FM recovers: 150 users and 100 items, each with a bias and a rank-3 vector of
tastes, ratings ``3.5 + b_user + b_item + <p_user, q_item>`` plus noise of
standard deviation 0.3. Both models learn the same 10,000 ratings pass after
pass and are scored on 5,000 held-out ratings.
"""

# %%
# The data
# --------
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.metrics import mean_squared_error

from skftrl import FMRegressor, FTRLRegressor

n_users, n_items, rank, noise = 150, 100, 3, 0.3
truth = np.random.default_rng(0)
P = truth.normal(scale=0.5, size=(n_users, rank))
Q = truth.normal(scale=0.5, size=(n_items, rank))
user_bias = truth.normal(scale=0.5, size=n_users)
item_bias = truth.normal(scale=0.5, size=n_items)


def ratings(n_rows, seed):
    """One-hot (user, item) rows and their ratings."""
    rng = np.random.default_rng(seed)
    users, items = rng.integers(n_users, size=n_rows), rng.integers(n_items, size=n_rows)
    y = 3.5 + user_bias[users] + item_bias[items] + (P[users] * Q[items]).sum(axis=1)
    y += rng.normal(scale=noise, size=n_rows)
    columns = np.column_stack([users, n_users + items]).ravel()
    X = sp.csr_matrix(
        (np.ones(2 * n_rows), columns, np.arange(0, 2 * n_rows + 1, 2)),
        shape=(n_rows, n_users + n_items),
    )
    return X, y, users, items


X_train, y_train, _, _ = ratings(10_000, seed=1)
X_test, y_test, test_users, test_items = ratings(5_000, seed=2)

# %%
# Learning pass after pass
# ------------------------
# Each pass is one ``partial_fit`` over the training ratings, in the same
# order. The linear model reaches its limit, the noise plus the whole
# interaction, within a few passes; the FM keeps improving towards the noise.
models = {
    "FTRLRegressor (linear)": FTRLRegressor(),
    "FMRegressor (n_components=8)": FMRegressor(n_components=8, random_state=0),
}
n_passes = 10
curves = {name: [] for name in models}
for _ in range(n_passes):
    for name, model in models.items():
        model.partial_fit(X_train, y_train)
        curves[name].append(mean_squared_error(y_test, model.predict(X_test)) ** 0.5)

for name, curve in curves.items():
    print(f"{name:30s} held-out RMSE after {n_passes} passes: {curve[-1]:.3f}")

# %%
# What the factors recovered
# --------------------------
# The FM's interaction of a user and an item is the inner product of their
# factor vectors. On the held-out pairs, it follows the true interaction
# ``<p_user, q_item>``, which no linear model can represent.
fm = models["FMRegressor (n_components=8)"]
V = fm.components_[0]  # (n_users + n_items, n_components)
learned = (V[test_users] * V[n_users + test_items]).sum(axis=1)
true = (P[test_users] * Q[test_items]).sum(axis=1)
correlation = np.corrcoef(learned, true)[0, 1]
print(f"correlation of the learned and true interactions: {correlation:.3f}")

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
for name, curve in curves.items():
    left.plot(range(1, n_passes + 1), curve, marker="o", label=name)
left.axhline(noise, color="grey", linestyle=":", label="noise (best possible)")
left.set_xlabel("passes over the training ratings")
left.set_ylabel("held-out RMSE")
left.set_title("Held-out error by pass")
left.legend()
right.scatter(true, learned, s=4, alpha=0.4)
right.set_xlabel("true interaction <p_user, q_item>")
right.set_ylabel("learned interaction <v_user, v_item>")
right.set_title(f"Recovered interactions (correlation {correlation:.2f})")
fig.tight_layout()
plt.show()
