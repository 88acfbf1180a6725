"""The factorization machine's exact per-row pass in numpy, and what its
engines add to the linear ones (docs: :doc:`fm_math`).

An FM is the linear model plus, per output, a vector of ``k`` factors per
feature (:class:`~._records.FMState`). Its per-row pass is the linear model's
(:func:`._linear_numpy.learn`) with the factors as its ``interactions``
(:class:`RowFactors`): the same rows, weights, margins, loss derivatives,
linear and intercept steps, with the pairwise term added to each margin and
each factor stepped from the same gradients. Every formula is :mod:`._math`'s.

The FM engines have the linear engines' interface (``learn``, ``weights``,
``margins``) plus ``factors`` (:class:`FactorizationEngine`).
"""

import numpy as np
import scipy.sparse as sp

from . import _linear_numpy
from ._linear_numpy import LinearNumpyEngine
from ._math import (
    constants,
    factor_gradients,
    factor_terms,
    gather,
    largest_stored,
    max_abs_gradient,
    pairwise_margins,
    pairwise_term,
    rate_root,
    smallest_stored_n,
    sum_in_order,
    update_coordinates,
    weights,
    weights_from_state,
)


class PassFactors:
    """The factors of a state as a pass's ``interactions`` read and step them:
    the base of :class:`RowFactors` and of the mini-batch pass's
    :class:`~._fm_batch.BatchFactors`."""

    def __init__(self, state, parameters):
        # Feature-major views: the columns of a row or batch are then rows of these.
        self.z_by_feature = state.z_factors.transpose(1, 0, 2)
        self.n_by_feature = state.n_factors.transpose(1, 0, 2)
        self.power = parameters.learning_rate_power
        self.rates = constants(parameters.of_factors())
        self.factor_l2 = parameters.factor_l2
        self.bound = max_abs_gradient(state.z_factors.dtype)
        self.smallest_n = smallest_stored_n(state.z_factors.dtype)
        self.largest = largest_stored(state.z_factors.dtype)

    def read(self, columns):
        """The factors of ``columns`` (distinct), shape (m, K, k), kept with
        their z, n and rate roots for :meth:`update`."""
        self.columns = columns
        self.z, self.n = gather(self.z_by_feature, columns), gather(self.n_by_feature, columns)
        self.root_n = rate_root(self.n, self.power)
        self.factors = weights(self.z, self.root_n, self.rates)
        return self.factors

    def gathered(self):
        """The factors' z and n as :meth:`read` gathered them (columns first)."""
        return self.z, self.n

    def update(self, gradient_sum, squared_sum):
        """The FTRL-Proximal step of the factors :meth:`read` read, with their
        summed gradients and squared gradients (m, K, k)."""
        self.z_by_feature[self.columns], self.n_by_feature[self.columns] = update_coordinates(
            self.z,
            self.n,
            self.root_n,
            self.factors,
            gradient_sum,
            squared_sum,
            self.rates,
            self.smallest_n,
            self.largest,
        )


class RowFactors(PassFactors):
    """The factors as the per-row pass's ``interactions``: the pairwise term of
    a row's margins, then the step of the row's factors."""

    def row_margins(self, columns, values):
        """The row's pairwise term for each output, shape (K,), keeping its
        factors' terms and sums ``s_f`` for :meth:`step`."""
        self.terms = factor_terms(values, self.read(columns))
        self.sums = sum_in_order(self.terms)  # s_f, (K, k)
        return pairwise_term(self.sums, sum_in_order(self.terms * self.terms))

    def step(self, gradient):
        """The step of the row's factors, from each non-zero's clipped
        ``gradient`` ``d x_i`` (m, K)."""
        factor_gradient = factor_gradients(
            gradient, self.sums, self.terms, self.factors, self.factor_l2, self.bound
        )
        self.update(factor_gradient, factor_gradient * factor_gradient)


def factors_from_state(state, parameters):
    """The factors ``v`` of shape (K, F, k) from the state, in closed form."""
    return weights_from_state(state.z_factors, state.n_factors, parameters.of_factors())


class FactorizationEngine:
    """What an FM engine adds to a linear engine (a mixin): the factors, and
    the pairwise term in the margins."""

    def factors(self, state, parameters):
        """The whole state's factors, float64 of shape (K, F, k)."""
        return factors_from_state(state, parameters)

    def margins(self, X, state, parameters, coef=None):
        X = sp.csr_matrix(X)  # see LinearNumpyEngine.margins
        margins = super().margins(X, state, parameters, coef)
        if X.nnz < X.shape[1]:
            # Only the factors of the columns X reads: a few rows of a wide
            # model need far fewer than all K * F * k. X is renumbered to
            # those columns; each row's products are summed in the same order.
            columns, renumbered = np.unique(X.indices, return_inverse=True)
            X = sp.csr_matrix((X.data, renumbered, X.indptr), shape=(X.shape[0], len(columns)))
            factors = weights_from_state(
                state.z_factors[:, columns], state.n_factors[:, columns], parameters.of_factors()
            )
        else:
            factors = self.factors(state, parameters)
        margins += pairwise_margins(X, factors)
        return margins


class FMNumpyEngine(FactorizationEngine, LinearNumpyEngine):
    """The FM's exact per-row pass in numpy: the reference FM engine."""

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        interactions = RowFactors(state, parameters)
        return _linear_numpy.learn(
            state, parameters, X, targets, sample_weight, rows, undo, interactions
        )


ENGINE = FMNumpyEngine()
