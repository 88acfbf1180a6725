"""The factorization machine's mini-batch pass in numpy (``batch_size > 1``).

It is the linear model's mini-batch pass (:mod:`._numpy_batch`: the same
batches, column grouping, loss derivatives, linear and intercept steps) plus
the factors, which :class:`BatchFactors` adds (docs: :doc:`fm_math`,
"Mini-batches"): every row's ``s_f`` and pairwise term from the factors at
the start of the batch; then each non-zero's factor gradient
``d x_i (s_f - v_{i,f} x_i) + factor_l2 v_{i,f}``, summed per touched
coordinate into ``G`` and its squares into ``Q``, and one FTRL-Proximal step
of each touched factor with ``G`` and ``Q``. Only the batch's non-zero
features are read and written. The formulas are :mod:`._fm_numpy`'s and
:mod:`._math`'s.
"""

from . import NumpyBatchEngine, _numpy_batch
from ._fm_numpy import FactorizationEngine, factor_gradients, factor_terms, pairwise_term
from ._math import (
    constants,
    gather,
    max_abs_gradient,
    rate_root,
    smallest_stored_n,
    update_coordinates,
    weights,
)
from ._numpy_batch import sum_by_group


class BatchFactors:
    """The factors' part of one mini-batch pass over an FM's state.

    For each batch, :func:`._numpy_batch.learn` calls :meth:`margins`, then
    :meth:`old_state` (when it keeps an undo log) and :meth:`step`, which
    reuse what :meth:`margins` read.
    """

    def __init__(self, state, parameters):
        # Feature-major views: a batch's columns are then rows of these.
        self.z_by_feature = state.z_factors.transpose(1, 0, 2)
        self.n_by_feature = state.n_factors.transpose(1, 0, 2)
        self.power = parameters.learning_rate_power
        self.rates = constants(parameters.of_factors())
        self.factor_l2 = parameters.factor_l2
        self.bound = max_abs_gradient(state.z_factors.dtype)
        self.smallest_n = smallest_stored_n(state.z_factors.dtype)

    def margins(self, touched, group_of_value, row_of_value, values, n_batch):
        """The pairwise term of each of the batch's rows, shape (n_batch, K),
        from the factors of the ``touched`` columns at the batch's start.

        ``group_of_value`` and ``row_of_value`` give each non-zero's position
        in ``touched`` and its row in the batch (see ``_numpy_batch``).
        """
        self.touched, self.group_of_value = touched, group_of_value
        self.z = gather(self.z_by_feature, touched)
        self.n = gather(self.n_by_feature, touched)
        self.root_n = rate_root(self.n, self.power)
        self.factors = weights(self.z, self.root_n, self.rates)  # (touched, K, k)
        self.factors_of_value = self.factors[group_of_value]  # (m, K, k)
        self.terms = factor_terms(values, self.factors_of_value)
        sums = sum_by_group(self.terms, row_of_value, n_batch)  # s_f of each row
        self.sums_of_value = sums[row_of_value]
        return pairwise_term(sums, sum_by_group(self.terms * self.terms, row_of_value, n_batch))

    def old_state(self):
        """The touched factors' ``z`` and ``n`` before :meth:`step`, (touched, K, k)."""
        return self.z, self.n

    def step(self, gradient):
        """The FTRL-Proximal step of every touched factor, from each non-zero's
        clipped ``gradient`` ``d x_i`` (m, K)."""
        factor_gradient = factor_gradients(
            gradient,
            self.sums_of_value,
            self.terms,
            self.factors_of_value,
            self.factor_l2,
            self.bound,
        )
        n_touched = len(self.touched)
        gradient_sum = sum_by_group(factor_gradient, self.group_of_value, n_touched)
        factor_gradient *= factor_gradient
        squared_sum = sum_by_group(factor_gradient, self.group_of_value, n_touched)
        self.z_by_feature[self.touched], self.n_by_feature[self.touched] = update_coordinates(
            self.z,
            self.n,
            self.root_n,
            self.factors,
            gradient_sum,
            squared_sum,
            self.rates,
            self.smallest_n,
        )


class FMNumpyBatchEngine(FactorizationEngine, NumpyBatchEngine):
    """The FM's mini-batch pass; weights as ``weights_engine`` computes them."""

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        factors = BatchFactors(state, parameters)
        return _numpy_batch.learn(
            state, parameters, X, targets, sample_weight, rows, self.batch_size, undo, factors
        )
