"""
====================================================
Multiclass: splice junctions in DNA, a softmax model
====================================================

With three or more classes, :class:`~skftrl.FTRLClassifier` learns a
multinomial (softmax) model: one weight vector per class, all updated from
every row by the gradient of the softmax log loss, each coordinate with its
own learning rate (see :ref:`multiclass`). This example classifies the
Statlog DNA sequences shipped with skftrl (:func:`~skftrl.datasets.load_dna`):
60 nucleotides around a possible splice junction, each one-hot encoded in 3
binary columns (A = 100, C = 010, G = 001, T = 000), and three classes: an
exon/intron boundary ("EI", label 1), an intron/exon boundary ("IE", label 2),
or neither ("N", label 3).
"""

# %%
# Fit and score
# -------------
# ``fit`` makes 10 shuffled passes over the 2,000 training sequences
# (``max_iter=10, tol=None, early_stopping=False``: a fixed number of
# passes over all the rows), and ``l1=20`` lets
# only the coordinates whose accumulated gradients exceed 20 in absolute
# value have a weight. A batch multinomial
# :class:`~sklearn.linear_model.LogisticRegression`, fitted to convergence,
# gives the reference a linear model can reach on these features.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import ConfusionMatrixDisplay, accuracy_score, log_loss

from skftrl import FTRLClassifier
from skftrl.datasets import load_dna

X_train, y_train, X_test, y_test = load_dna()
class_names = ["EI", "IE", "N"]

clf = FTRLClassifier(l1=20.0, max_iter=10, tol=None, early_stopping=False, random_state=0)
clf.fit(X_train, y_train)
reference = LogisticRegression(max_iter=1000).fit(X_train, y_train)

print(
    f"FTRLClassifier: {clf.n_iter_} passes, coef_ of shape {clf.coef_.shape}, "
    f"{np.count_nonzero(clf.coef_)} non-zero weights of {clf.coef_.size}"
)
for name, model in [("FTRLClassifier", clf), ("LogisticRegression", reference)]:
    print(
        f"{name:<19} held-out accuracy {accuracy_score(y_test, model.predict(X_test)):.4f}, "
        f"log loss {log_loss(y_test, model.predict_proba(X_test)):.4f}"
    )

# %%
# Where the errors are
# --------------------
# The confusion matrix of the held-out sequences, normalized by true class:
# each row shows where the sequences of one class went.
fig, ax = plt.subplots(figsize=(5.5, 4.5))
ConfusionMatrixDisplay.from_estimator(
    clf,
    X_test,
    y_test,
    display_labels=class_names,
    normalize="true",
    values_format=".3f",
    cmap="Blues",
    ax=ax,
)
ax.set_title("FTRLClassifier on DNA (held-out, rows sum to 1)")
fig.tight_layout()
plt.show()

# %%
# What the model looks at
# -----------------------
# ``coef_`` has one row per class and one column per binary feature; with
# the encoding above, it reshapes into a weight for each class, position and
# nucleotide (T, encoded 000, is the baseline with weight 0). The junction
# lies between positions 30 and 31.
weights = clf.coef_.reshape(3, 60, 3)
limit = np.abs(weights).max()
fig, axes = plt.subplots(3, 1, figsize=(10, 5.5), sharex=True, layout="constrained")
for ax, class_weights, name in zip(axes, weights, class_names):
    image = ax.imshow(
        class_weights.T,
        cmap="RdBu_r",
        vmin=-limit,
        vmax=limit,
        aspect="auto",
        extent=(0.5, 60.5, 2.5, -0.5),
    )
    ax.set_yticks([0, 1, 2], ["A", "C", "G"])
    ax.set_ylabel(f"class {name}")
    ax.axvline(30.5, color="black", linewidth=0.8, linestyle="--")
axes[-1].set_xlabel("position in the sequence (junction between 30 and 31)")
axes[0].set_title("FTRLClassifier weights per class, position and nucleotide")
fig.colorbar(image, ax=axes, label="weight (T = 0)")
plt.show()
# sphinx_gallery_thumbnail_number = 2

# %%
# What to conclude
# ----------------
# * A linear softmax model trained online, in a few passes, does as well as
#   the batch logistic regression on these features (compare the printed
#   scores), with a large part of its weights exactly zero thanks to ``l1``:
#   the positions far from the junction carry little information.
# * The diagonal of the confusion matrix is each class's recall: "IE", the
#   intron/exon boundary, is the hardest class to recognize, and its errors
#   go both to "EI" and to "N".
# * The weights recover the biology: the EI class puts a large positive
#   weight on G just after the junction and negative weights on A, C and G
#   at the next position, that is, on the "GT" that starts an intron (T is
#   the baseline, encoded 000). The IE class weighs the "AG" that ends an
#   intron, just before the junction, and, upstream, puts negative weights
#   on A and G: the run of pyrimidines (C and T) that precedes an acceptor
#   site. Far from the junction, most weights are small or exactly zero.
