"""
===================================================================
Raw click data: hashed columns and feature crosses, streamed
===================================================================

Click logs arrive as tables of raw categorical values: a site, an app, a
device, an hour. :class:`~skftrl.preprocessing.ColumnHasher` turns each batch
of such rows into sparse features, ``column=value`` hashed into a fixed
number of columns, and adds *crosses*: one feature per combination of values
of two columns, such as ``site=news^app=chat``, which lets a linear model
learn an effect that exists only for that pair.

The rows here are generated with main effects for every column and two
planted interactions: some (site, app) pairs click far more or far less than
their site and app would say, and the hour's effect depends on the device.
The stream is learned batch by batch with ``partial_fit``, each batch scored
before it is learned (progressive validation), by three models:

* :class:`~skftrl.FTRLClassifier` on the columns alone;
* the same with the two crosses (``interactions``);
* :class:`~skftrl.FMClassifier` on the columns alone, which learns a vector
  of factors per value and every pairwise interaction from them.
"""

# %%
# The stream of raw rows
# ----------------------
# Each batch is a pandas DataFrame of strings, as a log reader would give it;
# the transformer is stateless, so each batch is hashed on its own.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.metrics import log_loss

from skftrl import FMClassifier, FTRLClassifier
from skftrl.preprocessing import ColumnHasher

cardinality = {"site": 40, "app": 60, "device": 4, "hour": 24, "slot": 8}
truth = np.random.default_rng(0)
main_effect = {column: truth.normal(scale=0.5, size=n) for column, n in cardinality.items()}
# 40 (site, app) pairs with a strong effect of their own, the rest none.
pair_effect = np.zeros((cardinality["site"], cardinality["app"]))
pairs = truth.choice(pair_effect.size, size=40, replace=False)
pair_effect.flat[pairs] = truth.choice([-2.5, 2.5], size=40)
# The hour's effect, device by device.
device_hour = truth.normal(scale=1.0, size=(cardinality["device"], cardinality["hour"]))


def batch(n_rows, rng):
    """A DataFrame of raw rows and whether each was clicked."""
    codes = {column: rng.integers(n, size=n_rows) for column, n in cardinality.items()}
    # Popular sites and apps come first: the planted pairs are seen often.
    codes["site"] = np.minimum(rng.zipf(1.6, n_rows) - 1, cardinality["site"] - 1)
    codes["app"] = np.minimum(rng.zipf(1.6, n_rows) - 1, cardinality["app"] - 1)
    logit = -1.5 + sum(main_effect[column][codes[column]] for column in cardinality)
    logit += pair_effect[codes["site"], codes["app"]]
    logit += device_hour[codes["device"], codes["hour"]]
    probability = 1 / (1 + np.exp(-logit))
    clicked = (rng.random(n_rows) < probability).astype(int)
    rows = pd.DataFrame({column: [f"{column}{c}" for c in codes[column]] for column in codes})
    return rows, clicked, probability


crosses = [("site", "app"), ("device", "hour")]
models = {
    "FTRL, columns only": (ColumnHasher(hash_bits=16), FTRLClassifier(l1=0.5)),
    "FTRL with the two crosses": (
        ColumnHasher(hash_bits=16, interactions=crosses),
        FTRLClassifier(l1=0.5),
    ),
    "FM, columns only (8 factors)": (
        ColumnHasher(hash_bits=16),
        FMClassifier(n_components=8, batch_size=16, random_state=0),
    ),
}

# %%
# What one row becomes: its features and the columns they are hashed into.
row, _, _ = batch(1, np.random.default_rng(2))
print(row.iloc[0].to_dict())
for column, names in ColumnHasher(hash_bits=16, interactions=crosses).hashed_names(row).items():
    print(f"column {column:>6}: {', '.join(names)}")

# %%
# Progressive validation over the stream
# --------------------------------------
# 30 batches of 5,000 rows; the log loss of the true probabilities is the
# best any model can do.
rng = np.random.default_rng(1)
n_batches, batch_size = 30, 5_000
seen, curves = [], {name: [] for name in [*models, "the true probabilities"]}
sums = dict.fromkeys(curves, 0.0)
for number in range(n_batches):
    rows, clicked, probability = batch(batch_size, rng)
    for name, (hasher, model) in models.items():
        X = hasher.transform(rows)
        if number > 0:  # scored before it is learned
            sums[name] += log_loss(clicked, model.predict_proba(X)[:, 1], normalize=False)
        model.partial_fit(X, clicked, classes=[0, 1])
    if number > 0:
        sums["the true probabilities"] += log_loss(clicked, probability, normalize=False)
        seen.append((number + 1) * batch_size)
        for name in curves:
            curves[name].append(sums[name] / (number * batch_size))

for name, curve in curves.items():
    print(f"{name:<30} progressive log loss {curve[-1]:.4f}")

# %%
# The figure
# ----------
fig, ax = plt.subplots(figsize=(8, 5.5))
for name, curve in curves.items():
    style = "--" if name == "the true probabilities" else "-"
    ax.plot(seen, curve, style, label=name)
ax.set_xlabel("rows streamed")
ax.set_ylabel("progressive log loss (running mean)")
ax.set_title("Raw click rows hashed by ColumnHasher, learned by partial_fit")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
ax.grid(True, alpha=0.3)
fig.tight_layout()
plt.show()

# %%
# What to conclude
# ----------------
# * The columns alone cannot express an effect that belongs to a pair of
#   values: the linear model without crosses stays well above the best
#   possible loss however many rows it sees.
# * With the two crosses, each (site, app) pair and each (device, hour) pair
#   has a weight of its own, and the model closes most of the gap: a cross is
#   one line of ``interactions``, hashed like any other feature, with no
#   preprocessing of the data.
# * The factorization machine finds interactions without being told which
#   columns to cross, at the price of a factor vector per value and a slower
#   start; where the interacting columns are known, a cross is the cheaper
#   and sharper tool, and the two combine (an FM on crossed features).
