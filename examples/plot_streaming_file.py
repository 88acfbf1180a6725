"""
==================================================
Streaming a file in chunks through ``partial_fit``
==================================================

An online learner never needs the whole training set in memory: it can read
a file a few thousand lines at a time, learn from each chunk with
``partial_fit``, and let the chunk go. This example streams the
gzip-compressed svmlight file of a9a that ships with skftrl, 1,000 lines at a
time, and follows two running metrics as the model learns:

* the **progressive validation** loss: each chunk is scored before it is
  learned from, so every score is on unseen rows, with no held-out data
  needed;
* the loss on the **held-out** file a9a.t, which a real stream would not
  have, shown here to check that the progressive loss tells the truth.

The ``skftrl train`` command (see :doc:`/cli`) streams files the same way.
"""

# %%
# Read the file chunk by chunk
# ----------------------------
# :func:`~sklearn.datasets.load_svmlight_file` parses any file-like object,
# so each chunk of lines is parsed on its own. ``n_features`` must be given:
# a chunk need not contain the highest feature index. Any svmlight file,
# compressed or not, can be streamed this way; here it is the one shipped in
# the package.
import gzip
import io
from importlib.resources import files
from itertools import islice

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.metrics import log_loss

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a


def svmlight_chunks(path, n_lines, n_features):
    """Yield (X, y) for each block of ``n_lines`` lines of an svmlight file."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as lines:
        while chunk := list(islice(lines, n_lines)):
            yield load_svmlight_file(io.BytesIO(b"".join(chunk)), n_features=n_features)


train_file = files("skftrl") / "_data" / "a9a.gz"
_, _, X_test, y_test = load_a9a()  # only to check the progressive loss
classes = np.array([-1.0, 1.0])  # the labels the stream may contain

# %%
# Learn, scoring each chunk first
# -------------------------------
model = FTRLClassifier(learning_rate=0.1, beta=1.0, l1=1.0)
rows_seen, progressive_sum, rows_scored = 0, 0.0, 0
curve = {"rows": [], "progressive": [], "held_out": [], "nonzero": []}
for X_chunk, y_chunk in svmlight_chunks(train_file, n_lines=1000, n_features=123):
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
