"""The factorization machine's mini-batch pass in numpy (``batch_size > 1``).

It is the linear model's mini-batch pass (:mod:`._linear_batch`: the same
batches, column grouping, loss derivatives, linear and intercept steps) with
the factors as its ``interactions`` (:class:`BatchFactors`; docs:
:doc:`fm_math`, "Mini-batches"): every row's ``s_f`` and pairwise term from
the factors at the start of the batch; then each non-zero's factor gradient,
summed per touched coordinate into ``G`` and its squares into ``Q``, and one
FTRL-Proximal step of each touched factor with ``G`` and ``Q``. Only the
batch's non-zero features are read and written. The formulas are
:mod:`._math`'s.
"""

from . import _linear_batch
from ._fm_numpy import FactorizationEngine, PassFactors
from ._linear_batch import LinearBatchEngine, sum_by_group
from ._math import factor_gradients, factor_terms, pairwise_term


class BatchFactors(PassFactors):
    """The factors as the mini-batch pass's ``interactions``: for each batch,
    :meth:`batch_margins`, then :meth:`step`, which reuses what it read."""

    def batch_margins(self, touched, group_of_value, row_of_value, values, n_batch):
        """The pairwise term of each of the batch's rows, shape (n_batch, K),
        from the factors of the ``touched`` columns at the batch's start.

        ``group_of_value`` and ``row_of_value`` give each non-zero's position
        in ``touched`` and its row in the batch (see ``_linear_batch``).
        """
        self.group_of_value = group_of_value
        self.factors_of_value = self.read(touched)[group_of_value]  # (m, K, k)
        self.terms = factor_terms(values, self.factors_of_value)
        sums = sum_by_group(self.terms, row_of_value, n_batch)  # s_f of each row
        self.sums_of_value = sums[row_of_value]
        return pairwise_term(sums, sum_by_group(self.terms * self.terms, row_of_value, n_batch))

    def step(self, gradient):
        """The step of every touched factor, from each non-zero's clipped
        ``gradient`` ``d x_i`` (m, K): each one's summed gradients ``G`` and
        squared gradients ``Q``."""
        factor_gradient = factor_gradients(
            gradient,
            self.sums_of_value,
            self.terms,
            self.factors_of_value,
            self.factor_l2,
            self.bound,
        )
        n_touched = len(self.columns)
        gradient_sum = sum_by_group(factor_gradient, self.group_of_value, n_touched)
        factor_gradient *= factor_gradient
        self.update(gradient_sum, sum_by_group(factor_gradient, self.group_of_value, n_touched))


class FMBatchEngine(FactorizationEngine, LinearBatchEngine):
    """The FM's mini-batch pass; weights as ``weights_engine`` computes them."""

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        interactions = BatchFactors(state, parameters)
        return _linear_batch.learn(
            state, parameters, X, targets, sample_weight, rows, self.batch_size, undo, interactions
        )
