"""
==================================================
Streaming a file in chunks through ``partial_fit``
==================================================

An online learner never needs the whole training set in memory: it can read
a file a few thousand lines at a time, learn from each chunk with
``partial_fit``, and let the chunk go. This example streams the
gzip-compressed svmlight file of a9a that ships with skftrl, 1,000 lines at a
time, with :func:`skftrl.readers.iter_libsvm`, and follows two running
metrics as the model learns:

* the **progressive validation** loss: each chunk is scored before it is
  learned from, so every score is on unseen rows, with no held-out data
  needed;
* the loss on the **held-out** file a9a.t, which a real stream would not
  have, shown here to check that the progressive loss tells the truth.

The readers of :mod:`skftrl.readers` (LIBSVM, CSV, Parquet and Vowpal
Wabbit's text) are what the ``skftrl train`` command (see :doc:`/cli`) reads
its files with.
"""

# %%
# Read the file chunk by chunk
# ----------------------------
# :func:`~skftrl.readers.iter_libsvm` yields ``(X, y, sample_weight)`` for
# each chunk of ``chunk_size`` lines of a file, plain or compressed (gzip,
# bz2, xz, zstd). ``n_features`` fixes the width of every chunk: a chunk
# need not contain the highest feature index, and a stream cannot be read
# twice to find it. Here the file is the one shipped in the package.
from importlib.resources import files

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import log_loss

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a
from skftrl.readers import iter_libsvm

train_file = files("skftrl") / "_data" / "a9a.gz"
_, _, X_test, y_test = load_a9a()  # only to check the progressive loss
classes = np.array([-1.0, 1.0])  # the labels the stream may contain

# %%
# Learn, scoring each chunk first
# -------------------------------
model = FTRLClassifier(learning_rate=0.1, beta=1.0, l1=1.0)
rows_seen, progressive_sum, rows_scored = 0, 0.0, 0
curve = {"rows": [], "progressive": [], "held_out": [], "nonzero": []}
for X_chunk, y_chunk, _ in iter_libsvm(train_file, n_features=123, chunk_size=1000):
    if rows_seen > 0:  # score the chunk before learning it
        proba = model.predict_proba(X_chunk)
        progressive_sum += log_loss(y_chunk, proba, labels=classes, normalize=False)
        rows_scored += X_chunk.shape[0]
    model.partial_fit(X_chunk, y_chunk, classes=classes)
    rows_seen += X_chunk.shape[0]
    if rows_scored:
        curve["rows"].append(rows_seen)
        curve["progressive"].append(progressive_sum / rows_scored)
        curve["held_out"].append(log_loss(y_test, model.predict_proba(X_test)))
        curve["nonzero"].append(np.count_nonzero(model.coef_))

print(f"rows streamed: {rows_seen:,} in {len(model.loss_curve_)} partial_fit calls")
print(f"progressive log loss at the end: {curve['progressive'][-1]:.4f}")
print(f"held-out log loss at the end:    {curve['held_out'][-1]:.4f}")
print(f"non-zero weights: {curve['nonzero'][-1]} of {model.coef_.size}")

# %%
# The running metrics
# -------------------
fig, (ax_loss, ax_nonzero) = plt.subplots(
    2, 1, figsize=(8, 6.5), sharex=True, height_ratios=[2, 1]
)
ax_loss.plot(curve["rows"], curve["progressive"], label="progressive validation (running mean)")
ax_loss.plot(curve["rows"], curve["held_out"], label="held-out a9a.t, after each chunk")
ax_loss.set_ylabel("log loss")
ax_loss.set_title("Streaming a9a.gz through partial_fit, 1,000 lines at a time")
ax_loss.legend()
ax_loss.grid(True, alpha=0.3)
ax_nonzero.plot(curve["rows"], curve["nonzero"], color="tab:green")
ax_nonzero.set_ylabel("non-zero weights")
ax_nonzero.set_xlabel("training rows read from the file")
ax_nonzero.grid(True, alpha=0.3)
fig.tight_layout()
plt.show()

# %%
# What to conclude
# ----------------
# * The held-out loss falls fastest in the first few thousand rows; after
#   that, each new chunk improves the model a little.
# * The progressive loss, which only needs the stream itself, follows the
#   held-out loss from above: it averages the model's scores over the whole
#   stream, including the early chunks scored by a model that had seen
#   little, so it is a pessimistic but honest estimate, and the gap closes as
#   the stream goes on. It is what to monitor in production, where no
#   held-out data comes with the stream.
# * With ``l1=1`` a feature's weight stays exactly zero until its
#   accumulated gradient exceeds 1 in absolute value: the number of non-zero
#   weights grows as features earn their place, falls back when later rows
#   bring a weight's ``z`` back under the threshold, and stays below the
#   width of the data.
