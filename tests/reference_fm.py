"""A deliberately slow, independent factorization machine trained with FTRL,
written from docs/fm_math.rst.

Plain Python loops over rows, outputs, features and components; the pairwise
term as the explicit sum over pairs of features (not the O(k * nnz) identity
the package uses); the linear part exactly as tests/reference.py. Only the
initial factors are drawn with numpy, as the document specifies. It shares no
code with skftrl.
"""

import math

import numpy as np
from reference import _derivatives, _root, _weight


class ReferenceFM:
    """State per (output, feature[, component]) in nested lists; one row at a
    time (learn_one) or one mini-batch at a time (learn_batch).

    ``n_outputs`` is 1 for every loss but "multinomial". Targets are 0/1 for
    "log_loss", class indices for "multinomial", reals otherwise. Rows are
    dicts {feature: value} without zero values.
    """

    def __init__(
        self,
        n_outputs,
        n_features,
        n_components,
        *,
        loss,
        alpha,
        beta,
        l1,
        l2,
        fit_intercept,
        init_stdev,
        random_state,
        alpha_v=None,
        lambda_v=0.0,
        epsilon=0.1,
        power=-0.5,
        n_initial=0.0,
    ):
        self.K, self.F, self.k = n_outputs, n_features, n_components
        self.loss, self.epsilon = loss, epsilon
        self.alpha, self.beta, self.l1, self.l2 = alpha, beta, l1, l2
        self.alpha_v = alpha if alpha_v is None else alpha_v
        self.lambda_v = lambda_v
        self.fit_intercept = fit_intercept
        self.power, self.n_initial = power, n_initial
        K, F = n_outputs, n_features
        self.z = [[0.0] * F for _ in range(K)]
        self.n = [[n_initial] * F for _ in range(K)]
        self.z_bias = [0.0] * K
        self.n_bias = [n_initial] * K
        # docs/fm_math.rst, "Initial factors": v0 = init_stdev * N(0, 1), drawn
        # as default_rng(random_state).standard_normal((K, F, k)), stored as
        # z0 = -v0 * (beta + root(n0)) / alpha_v.
        draws = np.random.default_rng(random_state).standard_normal((K, F, n_components))
        scale = (beta + _root(n_initial, power)) / self.alpha_v
        self.z_v = [
            [
                [-(init_stdev * float(draws[o, i, f])) * scale for f in range(n_components)]
                for i in range(F)
            ]
            for o in range(K)
        ]
        self.n_v = [[[n_initial] * n_components for _ in range(F)] for _ in range(K)]

    # ------------------------------------------------------------- weights
    def weight(self, o, i):
        return _weight(
            self.z[o][i], self.n[o][i], self.alpha, self.beta, self.l1, self.l2, self.power
        )

    def bias(self, o):
        return _weight(self.z_bias[o], self.n_bias[o], self.alpha, self.beta, 0.0, 0.0, self.power)

    def factor(self, o, i, f):
        # v = -z / ((beta + sqrt(n)) / alpha_v): no l1, no l2.
        return -self.z_v[o][i][f] / (
            (self.beta + _root(self.n_v[o][i][f], self.power)) / self.alpha_v
        )

    def margins(self, x):
        """The model's definition: the pairwise term as the sum over pairs i < j
        of the clipped terms' products (docs: "Numerics")."""
        features = sorted(x)
        result = []
        for o in range(self.K):
            m = self.bias(o) + sum(self.weight(o, i) * x[i] for i in features)
            for a, i in enumerate(features):
                for j in features[a + 1 :]:
                    m += sum(
                        clipped_term(self.factor(o, i, f), x[i])
                        * clipped_term(self.factor(o, j, f), x[j])
                        for f in range(self.k)
                    )
            result.append(m)
        return result

    # ------------------------------------------------------------ learning
    def _step(self, z, n, g, weight, alpha):
        """The FTRL-Proximal step of one coordinate; returns the new (z, n)."""
        sigma = (_root(n + g * g, self.power) - _root(n, self.power)) / alpha
        return z + g - sigma * weight, n + g * g

    def learn_one(self, x, y, s=1.0):
        # Step 1: every weight from the state before the row.
        w = {(o, i): self.weight(o, i) for o in range(self.K) for i in x}
        v = {
            (o, i, f): self.factor(o, i, f)
            for o in range(self.K)
            for i in x
            for f in range(self.k)
        }
        b = [self.bias(o) for o in range(self.K)]
        # Step 2: the loss derivative.
        d = [s * dk for dk in _derivatives(self.loss, self.margins(x), y, self.epsilon)]
        for o in range(self.K):
            # Step 3: gradients; s_f - v_{i,f} x_i is the sum over the other features.
            for i, x_i in x.items():
                g = d[o] * x_i
                self.z[o][i], self.n[o][i] = self._step(
                    self.z[o][i], self.n[o][i], g, w[o, i], self.alpha
                )
                for f in range(self.k):
                    others = sum(clipped_term(v[o, j, f], x_j) for j, x_j in x.items() if j != i)
                    g = d[o] * x_i * others + self.lambda_v * v[o, i, f]
                    self.z_v[o][i][f], self.n_v[o][i][f] = self._step(
                        self.z_v[o][i][f], self.n_v[o][i][f], g, v[o, i, f], self.alpha_v
                    )
            if self.fit_intercept:
                self.z_bias[o], self.n_bias[o] = self._step(
                    self.z_bias[o], self.n_bias[o], d[o], b[o], self.alpha
                )

    def learn_batch(self, xs, ys, ss):
        """The mini-batch rule of docs/fm_math.rst ("Mini-batches"): every
        row's margin and s_f from the weights at the batch's start; each row's
        gradients as in learn_one (the penalty once per row that touches the
        factor); per coordinate the summed gradient G added to z and the
        summed squares Q to n, with sigma = (root(n + Q) - root(n)) / alpha.
        Returns the rows' margins (from the weights at the batch's start)."""
        touched = sorted({i for x in xs for i in x})
        w = {(o, i): self.weight(o, i) for o in range(self.K) for i in touched}
        v = {
            (o, i, f): self.factor(o, i, f)
            for o in range(self.K)
            for i in touched
            for f in range(self.k)
        }
        b = [self.bias(o) for o in range(self.K)]
        G, Q = {}, {}  # keyed by ("w", o, i), ("v", o, i, f) and ("b", o)

        def add(key, g):
            G[key] = G.get(key, 0.0) + g
            Q[key] = Q.get(key, 0.0) + g * g

        margins = []
        for x, y, s in zip(xs, ys, ss):
            m = self.margins(x)  # the state is not changed until the batch ends
            margins.append(m)
            d = [s * dk for dk in _derivatives(self.loss, m, y, self.epsilon)]
            for o in range(self.K):
                for i, x_i in x.items():
                    add(("w", o, i), d[o] * x_i)
                    for f in range(self.k):
                        others = sum(
                            clipped_term(v[o, j, f], x_j) for j, x_j in x.items() if j != i
                        )
                        add(("v", o, i, f), d[o] * x_i * others + self.lambda_v * v[o, i, f])
                add(("b", o), d[o])
        for o in range(self.K):
            for i in touched:
                if ("w", o, i) in G:
                    self.z[o][i], self.n[o][i] = self._batch_step(
                        self.z[o][i], self.n[o][i], G["w", o, i], Q["w", o, i], w[o, i], self.alpha
                    )
                for f in range(self.k):
                    if ("v", o, i, f) in G:
                        self.z_v[o][i][f], self.n_v[o][i][f] = self._batch_step(
                            self.z_v[o][i][f],
                            self.n_v[o][i][f],
                            G["v", o, i, f],
                            Q["v", o, i, f],
                            v[o, i, f],
                            self.alpha_v,
                        )
            if self.fit_intercept:
                self.z_bias[o], self.n_bias[o] = self._batch_step(
                    self.z_bias[o], self.n_bias[o], G["b", o], Q["b", o], b[o], self.alpha
                )
        return margins

    def _batch_step(self, z, n, G, Q, weight, alpha):
        """The step of one coordinate from its summed gradient G and squares Q."""
        sigma = (_root(n + Q, self.power) - _root(n, self.power)) / alpha
        return z + G - sigma * weight, n + Q

    # --------------------------------------------------------------- state
    def factors(self):
        """The factors v, nested lists of shape (K, F, k)."""
        return [
            [[self.factor(o, i, f) for f in range(self.k)] for i in range(self.F)]
            for o in range(self.K)
        ]

    def coef(self):
        return [[self.weight(o, i) for i in range(self.F)] for o in range(self.K)]

    def intercept(self):
        return [self.bias(o) for o in range(self.K)]


# docs/fm_math.rst, "Numerics": each term v_{i,f} x_i is clipped at 1e50, in
# training and in prediction alike.
MAX_ABS_FACTOR_TERM = 1e50


def clipped_term(factor, value):
    """The term ``v_{i,f} x_i``, clipped as the docs say."""
    return min(max(factor * value, -MAX_ABS_FACTOR_TERM), MAX_ABS_FACTOR_TERM)


def explicit_pairwise(x, V):
    """sum_{i<j} sum_f t_{i,f} t_{j,f} of a dict row ``x``, for the factors V
    (F, k), with the clipped terms ``t = clip(v x)``: where nothing is
    clipped, sum_{i<j} <V[i], V[j]> x_i x_j. Each pair's products are summed
    exactly (math.fsum)."""
    features = sorted(x)
    total = 0.0
    for a, i in enumerate(features):
        for j in features[a + 1 :]:
            total += math.fsum(
                clipped_term(V[i][f], x[i]) * clipped_term(V[j][f], x[j]) for f in range(len(V[i]))
            )
    return total
