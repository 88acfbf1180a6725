"""A deliberately slow, independent FTRL-Proximal, written from the
documentation page docs/algorithm.rst ("The algorithm").

Plain Python loops over rows and coordinates, dictionaries for the state, the
formulas exactly as the document states them. It shares no code with skftrl.
"""

import math


def _root(n, power):
    """The rate's n ** -power: sqrt(n) for the paper's power -0.5."""
    return math.sqrt(n) if power == -0.5 else n**-power


def _weight(z, n, alpha, beta, l1, l2, power=-0.5):
    if abs(z) <= l1:
        return 0.0
    sign = 1.0 if z > 0 else -1.0
    return -(z - sign * l1) / ((beta + _root(n, power)) / alpha + l2)


def _sigmoid(m):
    # Each side in the form whose exp() cannot overflow (docs/algorithm.rst, "Numerics").
    if m >= 0:
        return 1.0 / (1.0 + math.exp(-m))
    return math.exp(m) / (1.0 + math.exp(m))


def _derivatives(loss, margins, y, epsilon):
    """dloss/dm for each output, unweighted."""
    if loss == "log_loss":
        return [_sigmoid(margins[0]) - y]
    if loss == "multinomial":
        top = max(margins)
        exps = [math.exp(m - top) for m in margins]
        total = sum(exps)
        return [e / total - (1.0 if k == y else 0.0) for k, e in enumerate(exps)]
    residual = margins[0] - y
    if loss == "squared_error":
        return [residual]
    if loss == "huber":
        return [min(max(residual, -epsilon), epsilon)]
    if loss == "poisson":
        return [math.exp(margins[0]) - y]
    raise ValueError(loss)


class ReferenceFTRL:
    """State per (output, feature) in dicts; one example at a time.

    ``n_outputs`` is 1 for every loss but "multinomial". Targets are 0/1 for
    "log_loss", class indices for "multinomial", reals otherwise.
    """

    def __init__(
        self,
        n_outputs,
        *,
        loss,
        alpha,
        beta,
        l1,
        l2,
        fit_intercept,
        epsilon=0.1,
        power=-0.5,
        n_initial=0.0,
    ):
        self.n_outputs = n_outputs
        self.loss = loss
        self.alpha, self.beta, self.l1, self.l2 = alpha, beta, l1, l2
        self.fit_intercept = fit_intercept
        self.epsilon = epsilon
        # TensorFlow's generalization: the rate alpha / (beta + n ** -power),
        # and n starting at n_initial instead of 0 (for the intercept too).
        self.power = power
        self.n_initial = n_initial
        self.z = [dict() for _ in range(n_outputs)]
        self.n = [dict() for _ in range(n_outputs)]
        self.z_bias = [0.0] * n_outputs
        self.n_bias = [n_initial] * n_outputs

    def weight(self, k, i):
        return _weight(
            self.z[k].get(i, 0.0),
            self.n[k].get(i, self.n_initial),
            self.alpha,
            self.beta,
            self.l1,
            self.l2,
            self.power,
        )

    def bias(self, k):
        # The intercept: never regularized.
        return _weight(self.z_bias[k], self.n_bias[k], self.alpha, self.beta, 0.0, 0.0, self.power)

    def margins(self, x):
        """``x`` is a dict {feature: value} with no zero values."""
        return [
            sum(self.weight(k, i) * v for i, v in x.items()) + self.bias(k)
            for k in range(self.n_outputs)
        ]

    def _sigma(self, n_old, squared):
        """sigma = (root(n + g^2) - root(n)) / alpha, as docs/algorithm.rst, "Learning from
        one row", step 4."""
        return (_root(n_old + squared, self.power) - _root(n_old, self.power)) / self.alpha

    def learn_one(self, x, y, s=1.0):
        weights = {i: [self.weight(k, i) for k in range(self.n_outputs)] for i in x}
        bias = [self.bias(k) for k in range(self.n_outputs)]
        m = self.margins(x)
        d = [s * dk for dk in _derivatives(self.loss, m, y, self.epsilon)]
        for k in range(self.n_outputs):
            for i, v in x.items():
                g = d[k] * v
                n_old = self.n[k].get(i, self.n_initial)
                sigma = self._sigma(n_old, g * g)
                self.z[k][i] = self.z[k].get(i, 0.0) + g - sigma * weights[i][k]
                self.n[k][i] = n_old + g * g
            if self.fit_intercept:
                g = d[k]
                sigma = self._sigma(self.n_bias[k], g * g)
                self.z_bias[k] += g - sigma * bias[k]
                self.n_bias[k] += g * g

    def learn_batch(self, xs, ys, ss):
        """The mini-batch rule of docs/algorithm.rst ("Mini-batches"): every margin from the
        weights at
        the batch's start, then per coordinate the summed gradient G added to z
        and the summed squared gradients Q to n, with
        sigma = (sqrt(n + Q) - sqrt(n)) / alpha."""
        weights = {i: [self.weight(k, i) for k in range(self.n_outputs)] for x in xs for i in x}
        bias = [self.bias(k) for k in range(self.n_outputs)]
        G = [dict() for _ in range(self.n_outputs)]
        Q = [dict() for _ in range(self.n_outputs)]
        G_bias = [0.0] * self.n_outputs
        Q_bias = [0.0] * self.n_outputs
        for x, y, s in zip(xs, ys, ss):
            m = self.margins(x)  # the state is not updated until the batch ends
            d = [s * dk for dk in _derivatives(self.loss, m, y, self.epsilon)]
            for k in range(self.n_outputs):
                for i, v in x.items():
                    G[k][i] = G[k].get(i, 0.0) + d[k] * v
                    Q[k][i] = Q[k].get(i, 0.0) + (d[k] * v) ** 2
                G_bias[k] += d[k]
                Q_bias[k] += d[k] ** 2
        for k in range(self.n_outputs):
            for i in G[k]:
                n_old = self.n[k].get(i, self.n_initial)
                sigma = self._sigma(n_old, Q[k][i])
                self.z[k][i] = self.z[k].get(i, 0.0) + G[k][i] - sigma * weights[i][k]
                self.n[k][i] = n_old + Q[k][i]
            if self.fit_intercept:
                sigma = self._sigma(self.n_bias[k], Q_bias[k])
                self.z_bias[k] += G_bias[k] - sigma * bias[k]
                self.n_bias[k] += Q_bias[k]

    def state(self, n_features):
        """(z, n, coef) as lists of lists of shape (n_outputs, n_features)."""
        z = [[self.z[k].get(i, 0.0) for i in range(n_features)] for k in range(self.n_outputs)]
        n = [
            [self.n[k].get(i, self.n_initial) for i in range(n_features)]
            for k in range(self.n_outputs)
        ]
        coef = [[self.weight(k, i) for i in range(n_features)] for k in range(self.n_outputs)]
        return z, n, coef


def rows_as_dicts(indptr, indices, data):
    """CSR arrays (possibly with duplicate indices) to dicts, summing duplicates."""
    rows = []
    for r in range(len(indptr) - 1):
        x = {}
        for p in range(indptr[r], indptr[r + 1]):
            x[int(indices[p])] = x.get(int(indices[p]), 0.0) + float(data[p])
        rows.append({i: v for i, v in x.items() if v != 0.0})
    return rows
