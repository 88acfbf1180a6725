"""The factorization machine's exact per-row pass compiled with numba.

It is the linear model's compiled pass (:mod:`._linear_numba`) made with
this module's functions as its hooks (``_pass``, by
:func:`~._linear_numba.pass_with_interactions`) and given the factors as its
``interactions`` (:class:`PassFactors`): the pairwise term added to each
row's margins, and each factor's step from the same loss derivatives. The
formulas are :mod:`._math`'s, compiled (:mod:`._compile`). Importing this
module needs numba.
"""

from typing import NamedTuple

import numpy as np

from ._compile import (
    clip,
    compile_inline,
    compiled_rates,
    factor_gradient,
    factor_term,
    pairwise_term_of_sums,
    prefetch_row,
    rate_root,
    step,
    weight,
)
from ._fm_numpy import FactorizationEngine
from ._linear_numba import LinearNumbaEngine, learn, pass_with_interactions


class PassFactors(NamedTuple):
    """The factors as the compiled pass's ``interactions``: the state, rates and
    penalty of the factors, and the buffers of a row's."""

    z: np.ndarray  # z_factors (K, F, k)
    n: np.ndarray  # n_factors (K, F, k)
    rates: tuple  # the factors' (learning_rate, beta, 0, 0, learning_rate_power)
    factor_l2: float
    row_root_n: np.ndarray  # the row's factors' rate roots (longest row, K, k)
    row_factors: np.ndarray  # and the factors, kept for the step
    sums: np.ndarray  # the row's s_f = sum_i v_{i,f} x_i (K, k)
    squares: np.ndarray  # the row's sum_i (v_{i,f} x_i)^2 (K, k)
    # The first output's factors (F, k) of z and n, whose first of each
    # feature is prefetched (a feature's others neighbour it). Not the 1-d
    # view of the first factors: that one is contiguous for k = 1 or at most
    # one feature and strided otherwise, two types, so two compiled passes.
    first_z: np.ndarray
    first_n: np.ndarray


def pass_factors(state, parameters, X, rows):
    """The :class:`PassFactors` of a pass over ``rows`` of ``X``."""
    # The rows' own lengths only: a shard of a parallel pass is a few rows of X.
    rows = np.asarray(rows, dtype=np.intp)
    longest = int((X.indptr[rows + 1] - X.indptr[rows]).max()) if len(rows) else 0
    shape = (longest, *state.z_factors.shape[::2])
    return PassFactors(
        state.z_factors,
        state.n_factors,
        compiled_rates(parameters.of_factors()),
        float(parameters.factor_l2),
        np.empty(shape),
        np.empty(shape),
        np.empty(shape[1:]),
        np.empty(shape[1:]),
        state.z_factors[0],
        state.n_factors[0],
    )


@compile_inline
def add_pairwise_margin(interactions, K, start, end, indices, data, margin, undo, recorded):
    """Add the row's pairwise term to each of its ``margin``, in O(k * nnz),
    keeping the factors, their rate roots and the sums ``s_f`` for the step;
    the factors' old z and n recorded in ``undo``'s third and fourth arrays
    (K, size, k) as they are read."""
    learning_rate, beta, _, _, power = interactions.rates
    z_factors, n_factors = interactions.z, interactions.n
    row_root_n, row_factors = interactions.row_root_n, interactions.row_factors
    total, squares = interactions.sums, interactions.squares
    total[:] = 0.0
    squares[:] = 0.0
    for j in range(start, end):
        column = indices[j]
        for k in range(K):
            for f in range(z_factors.shape[2]):
                z_old, n_old = z_factors[k, column, f], n_factors[k, column, f]
                if undo is not None:
                    undo[2][k, recorded + j - start, f] = z_old
                    undo[3][k, recorded + j - start, f] = n_old
                root_n = rate_root(np.float64(n_old), power)
                factor = weight(np.float64(z_old), root_n, learning_rate, beta, 0.0, 0.0)
                row_root_n[j - start, k, f] = root_n
                row_factors[j - start, k, f] = factor
                term = factor_term(data[j], factor)
                total[k, f] += term
                squares[k, f] += term * term
    for k in range(K):
        margin[k] += pairwise_term_of_sums(total[k], squares[k])


@compile_inline
def step_factors(
    interactions, K, start, end, indices, data, derivative, bound, smallest_n, largest
):
    """The z/n step of each factor of the row."""
    learning_rate, _, _, _, power = interactions.rates
    z_factors, n_factors = interactions.z, interactions.n
    row_root_n, row_factors = interactions.row_root_n, interactions.row_factors
    sums, factor_l2 = interactions.sums, interactions.factor_l2
    for j in range(start, end):
        column = indices[j]
        value = data[j]
        for k in range(K):
            gradient = clip(value * derivative[k], bound)
            for f in range(z_factors.shape[2]):
                factor = row_factors[j - start, k, f]
                factor_step = factor_gradient(
                    gradient, sums[k, f], factor_term(value, factor), factor, factor_l2, bound
                )
                z_factors[k, column, f], n_factors[k, column, f] = step(
                    np.float64(z_factors[k, column, f]),
                    np.float64(n_factors[k, column, f]),
                    row_root_n[j - start, k, f],
                    factor,
                    factor_step,
                    factor_step * factor_step,
                    learning_rate,
                    power,
                    smallest_n,
                    largest,
                )


@compile_inline
def prefetch_factors(interactions, indptr, indices, rows, position, rows_ahead):
    """Prefetch the first output's first factor's z and n of each feature of a
    later row (a feature's other factors neighbour them)."""
    prefetch_row(indptr, indices, rows, position, interactions.first_z, rows_ahead)
    prefetch_row(indptr, indices, rows, position, interactions.first_n, rows_ahead)


_pass = pass_with_interactions(
    "fm",
    add_interactions=add_pairwise_margin,
    step_interactions=step_factors,
    prefetch_interactions=prefetch_factors,
)


class FMNumbaEngine(FactorizationEngine, LinearNumbaEngine):
    """The factorization machine's exact per-row pass, compiled; the linear
    weights as the linear numba engine computes them."""

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        interactions = pass_factors(state, parameters, X, rows)
        return learn(state, parameters, X, targets, sample_weight, rows, undo, interactions, _pass)


ENGINE = FMNumbaEngine()
