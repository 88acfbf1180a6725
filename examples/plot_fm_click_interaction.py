"""
=========================================================================
Clicks: a factorization machine finds an interaction a linear model can't
=========================================================================

Click logs are rows of categorical fields: the site, the ad slot, the
device, the hour. Some effects exist only in combination: here, an ad slot
that draws clicks on some sites and repels them on others, with no effect
on average. A linear model, one weight per (field, value), cannot see it; a
factorization machine (:class:`~skftrl.FMClassifier`) learns a vector of
factors per value, and the interaction of two values is the inner product of
their vectors.

The data are generated with main effects for every field and one planted
interaction, site x slot, ``2 * u_site * u_slot`` with random signs ``u``.
Both models learn the same 6,000 rows, pass after pass, and are scored on
6,000 held-out rows; then we ask the FM which pair of fields interacts.
"""

# %%
# The data
# --------
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.metrics import log_loss

from skftrl import FMClassifier, FTRLClassifier

fields = {"site": 30, "slot": 12, "device": 4, "hour": 24}
names = list(fields)
sizes = np.array(list(fields.values()))
offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
truth = np.random.default_rng(0)
main_effects = [truth.normal(scale=0.5, size=size) for size in sizes]
site_sign = truth.choice([-1.0, 1.0], size=fields["site"])
slot_sign = truth.choice([-1.0, 1.0], size=fields["slot"])


def clicks(n_rows, seed):
    """One-hot rows of the four fields, and whether each was clicked."""
    rng = np.random.default_rng(seed)
    values = np.column_stack([rng.integers(size, size=n_rows) for size in sizes])
    logit = -1.0 + sum(effect[values[:, f]] for f, effect in enumerate(main_effects))
    logit += 2.0 * site_sign[values[:, 0]] * slot_sign[values[:, 1]]
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    columns = (values + offsets).ravel()
    X = sp.csr_matrix(
        (np.ones(columns.size), columns, np.arange(0, columns.size + 1, len(sizes))),
        shape=(n_rows, sizes.sum()),
    )
    return X, y


X_train, y_train = clicks(6_000, seed=1)
X_test, y_test = clicks(6_000, seed=2)

# %%
# Learning pass after pass
# ------------------------
models = {
    "FTRLClassifier (linear)": FTRLClassifier(),
    "FMClassifier (n_components=4)": FMClassifier(n_components=4, random_state=0),
}
n_passes = 6
curves = {name: [] for name in models}
for _ in range(n_passes):
    for name, model in models.items():
        model.partial_fit(X_train, y_train, classes=[0, 1])
        curves[name].append(log_loss(y_test, model.predict_proba(X_test)))
for name, curve in curves.items():
    print(f"{name:32s} held-out log loss after {n_passes} passes: {curve[-1]:.4f}")

# %%
# Which fields interact?
# ----------------------
# The strength of the interaction of two fields: the mean absolute inner
# product ``|<v_a, v_b>|`` over every value ``a`` of one and ``b`` of the
# other. The planted pair stands out; the other pairs stay near 0.
V = models["FMClassifier (n_components=4)"].components_[0]
strength = np.zeros((len(sizes), len(sizes)))
for i in range(len(sizes)):
    for j in range(len(sizes)):
        if i != j:
            block_i = V[offsets[i] : offsets[i] + sizes[i]]
            block_j = V[offsets[j] : offsets[j] + sizes[j]]
            strength[i, j] = np.abs(block_i @ block_j.T).mean()
strongest = np.unravel_index(np.argmax(strength), strength.shape)
print(f"strongest interaction: {names[strongest[0]]} x {names[strongest[1]]}")

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
for name, curve in curves.items():
    left.plot(range(1, n_passes + 1), curve, marker="o", label=name)
left.set_xlabel("passes over the training rows")
left.set_ylabel("held-out log loss")
left.set_title("Held-out log loss by pass")
left.legend()
image = right.imshow(strength, cmap="viridis")
right.set_xticks(range(len(names)), names)
right.set_yticks(range(len(names)), names)
right.set_title("Learned interaction strength between fields")
fig.colorbar(image, ax=right, label="mean |<v_a, v_b>|")
fig.tight_layout()
plt.show()
