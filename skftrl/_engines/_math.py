"""The FTRL-Proximal formulas, the factorization machine's, and the numeric
guards, each written once.

Every engine computes with these (docs: :doc:`algorithm`, :doc:`fm_math`):

- the state layouts (:func:`new_state`, :func:`new_factor_layout`) and their
  blocks (:func:`state_blocks`);
- the closed-form weight, as a scalar formula (:func:`weight`) and over numpy
  arrays (:func:`weights`);
- the per-coordinate step ``sigma``, ``z += g - sigma w``, ``n += g^2``, as a
  scalar formula (:func:`step`) and over numpy arrays (:func:`update_coordinates`);
- the rate's root ``n ** -learning_rate_power`` (:func:`rate_root_scalar`,
  :func:`rate_root`);
- the guards that keep a finite input's state finite (the constants below,
  :func:`max_abs_gradient`, :func:`smallest_stored_n`, :func:`clip`,
  :func:`rescaled_margin`);
- the intercepts' weights and steps (:func:`intercept_weights`,
  :func:`step_intercepts`);
- the factorization machine's clipped factor term ``v x``
  (:func:`factor_term`, :func:`factor_terms`), pairwise term
  (:func:`pairwise_term_of_sums`, :func:`pairwise_term`,
  :func:`pairwise_margins`) and factor gradient
  ``d x (s_f - v x) + factor_l2 v`` (:func:`factor_gradient`,
  :func:`factor_gradients`); a factor's weight and step are :func:`weight`
  and :func:`step` at the factors' rate, with no l1 or l2;
- the merge of the shards of a parallel pass (:func:`merged`,
  :func:`merged_values`).

The scalar formulas are plain Python on floats, calling nothing but ``math``
and ``min``/``max``: the numpy engines use them for the intercepts (a few
floats, for which Python arithmetic beats numpy calls), and the numba engine
compiles these same functions (:mod:`._compile`). The array
formulas make the same IEEE operations in the same order (up to negations,
which round symmetrically), so both give identical bits wherever numpy's
``power`` and ``exp`` are the C library's; tests/test_math.py checks it on
random and edge-case inputs. On a CPU with AVX-512, numpy computes them with
vectorized loops of its own, which can differ in the last bit. Sums are made
in order in both forms (:func:`sum_in_order`, :func:`pairwise_term`): numpy
sums 8 or more values along an axis pairwise, and clipped factor terms that
tie exactly then cancel differently in another order.

The paper's rate (``learning_rate_power = -0.5``) is passed to the scalar
formulas as ``None`` (see :func:`compiled_power`): numba then removes the
``is None`` branches when it compiles, and the inner loops keep only ``sqrt``.
"""

import functools
import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

# ------------------------------------------------------------------ guards
# exp() of a margin above this overflows float64 (exp(709.78) is the limit).
# The Poisson mean exp(margin) is capped here so that gradients stay finite.
MAX_EXP_MARGIN = 700.0

# math.exp overflows (raising OverflowError) beyond this.
MAX_EXP_ARGUMENT = 709.0

# A per-coordinate gradient is clipped to this magnitude, so that its square
# (1e200) and the sum of many squares stay finite. Only inputs near 1e100 or
# beyond ever reach it; for any realistic data it never takes effect.
MAX_ABS_GRADIENT = 1e100
# The same for a state stored in float32 (largest value 3.4e38): a squared
# gradient is at most 1e30, so n stays finite for over 1e8 saturated rows.
MAX_ABS_GRADIENT_FLOAT32 = 1e15

# The largest float64. A margin or a loss beyond it (finite input near it can
# give one) is clamped to it, and so is a row's weighted loss derivative, so
# that a stored zero of X times it is 0 rather than 0 * inf = NaN.
LARGEST = float(np.finfo(np.float64).max)

# The largest float32: a float32 state stores z and n of at most this magnitude.
LARGEST_FLOAT32 = float(np.finfo(np.float32).max)

# The smallest positive normal float64.
TINY = np.finfo(np.float64).tiny
# The smallest positive float32. A float32 state stores a positive n as at
# least this: n below it would round to 0 while z kept the gradient
# (|g| < 2.6e-23), and with beta / learning_rate + l2 tiny but not 0, z over
# that tiny denominator overflowed float32 and made the state inf and NaN.
SMALLEST_N_FLOAT32 = float(np.finfo(np.float32).smallest_subnormal)

# A factorization machine's term v_{i,f} x_i is clipped to this magnitude
# before it is summed and squared, so that the pairwise term of any finite row
# stays far inside float64 (its squares are at most 1e100 times the row's
# non-zeros squared), and so do the margin and the squared-error loss of the row.
MAX_ABS_FACTOR_TERM = 1e50

FLOAT64 = np.dtype(np.float64)

# The paper's per-coordinate rate alpha / (beta + n ** 0.5): the exponent of n is
# -learning_rate_power, as TensorFlow's Ftrl names it.
PAPER_LEARNING_RATE_POWER = -0.5


def max_abs_gradient(state_dtype):
    """The clipping bound of per-coordinate gradients for a state of this dtype."""
    return MAX_ABS_GRADIENT_FLOAT32 if state_dtype == np.float32 else MAX_ABS_GRADIENT


def smallest_stored_n(state_dtype):
    """The least positive n a state of this dtype stores (0: no bound)."""
    return SMALLEST_N_FLOAT32 if state_dtype == np.float32 else 0.0


def largest_stored(state_dtype):
    """The largest magnitude of a z or n a state of this dtype stores: a step
    beyond it (with extreme hyper-parameters and inputs) stores it instead."""
    return LARGEST_FLOAT32 if state_dtype == np.float32 else LARGEST


def clip(value, bound):
    """``value`` clipped to ``[-bound, bound]`` (a float; compiled by numba too)."""
    return min(max(value, -bound), bound)


def clip_gradient(gradient, bound):
    """:func:`clip` of an array, in place (np.clip's wrapper is slow on tiny arrays)."""
    np.minimum(gradient, bound, out=gradient)
    return np.maximum(gradient, -bound, out=gradient)


# ------------------------------------------------------------ state layout
def new_state(n_outputs, n_features, dtype, initial_n=0.0):
    """A fresh ``(z, n)`` of shape ``(K, F)``: ``z = 0`` and ``n = initial_n``.

    Both are views of one buffer of shape ``(F, K, 2)``, so that a feature's
    ``z`` and ``n`` for every output are adjacent in memory: updating a
    coordinate of a wide hashed model, where most coordinates are not in the
    CPU's cache, then costs one cache miss rather than two. The passes accept
    any layout; this one is only faster.
    """
    # np.zeros leaves untouched pages unallocated: a wide hashed model costs
    # memory only for the features it sees.
    buffer = np.zeros((n_features, n_outputs, 2), dtype=dtype)
    z, n = buffer[:, :, 0].T, buffer[:, :, 1].T
    if initial_n != 0:
        n[...] = initial_n
    return z, n


def new_factor_layout(shape, dtype):
    """Zero ``(z, n)`` of the factors, each of ``shape`` (K, F, k), as views of
    one buffer (as :func:`new_state`'s, so that the estimator can keep the
    arrays read-only and still hand a writable view to a pass). As in
    :func:`new_state`, the pages of ``n`` that stay 0 are never allocated."""
    buffer = np.zeros((2, *shape), dtype=dtype)
    return buffer[0], buffer[1]


# The values of a per-feature array that one of its blocks holds, at most (a
# feature's are never split): drawing, comparing or copying a state a block at
# a time needs this much memory besides it.
STATE_BLOCK_VALUES = 2**16


def state_blocks(shape):
    """The blocks of a per-feature array of ``shape`` (K, F, ...), in its C
    order: ``(output, features)`` pairs, ``features`` a slice, each block
    ``array[output, features]`` of about :data:`STATE_BLOCK_VALUES` values."""
    n_outputs, n_features = shape[:2]
    per_feature = math.prod(shape[2:])
    step = max(1, STATE_BLOCK_VALUES // max(per_feature, 1))
    for output in range(n_outputs):
        for first in range(0, n_features, step):
            yield output, slice(first, min(first + step, n_features))


def flat_state_and_weights(z, n):
    """Flat views of ``z`` and ``n``, and zero weights of their shape with a flat view.

    The views follow the state's own memory order (outputs first for the
    estimators', made by :func:`new_state`), so that none of them copies.
    """
    z, n = np.asarray(z), np.asarray(n)
    # Outputs first in memory (Fortran order) when their stride is the smaller;
    # with one output, either order flattens without a copy.
    order = "F" if z.ndim == 2 and z.strides[0] < z.strides[1] else "C"
    weights = np.zeros(z.shape, dtype=np.float64, order=order)
    return (
        z.reshape(-1, order=order),
        n.reshape(-1, order=order),
        weights,
        weights.reshape(-1, order=order),
    )


def gather(state_by_feature, columns):
    """The state of ``columns`` as float64: a float32 state is computed on in float64.

    Always a copy (``columns`` is an index array), which the update may modify.
    """
    gathered = state_by_feature[columns]
    # A dtype compared with a dtype, not with np.float64, which costs a conversion.
    return gathered if gathered.dtype == FLOAT64 else gathered.astype(np.float64)


# ------------------------------------------------- the scalar formulas
def compiled_power(learning_rate_power):
    """The scalar formulas' ``learning_rate_power``: None for the paper's -0.5."""
    if learning_rate_power == PAPER_LEARNING_RATE_POWER:
        return None
    return float(learning_rate_power)


def rate_root_scalar(n, learning_rate_power):
    """``n ** -learning_rate_power`` of a float; ``None`` is the paper's ``sqrt(n)``."""
    if learning_rate_power is None:
        return math.sqrt(n)
    return n**-learning_rate_power


def weight(z, root_n, learning_rate, beta, l1, l2, saturate=True):
    """The closed-form FTRL-Proximal weight of one coordinate, given
    ``root_n = rate_root(n)``:

    ``w = 0`` where ``|z| <= l1``, else
    ``w = -(z - sign(z) l1) / ((beta + root_n) / learning_rate + l2)``,
    clipped to the largest float (a denominator near 0, with a learning rate
    near the largest float, would give inf) unless ``saturate`` is False (see
    :func:`update_coordinates`).
    """
    denominator = root_n / learning_rate
    denominator += beta / learning_rate + l2
    # beta / learning_rate + l2 is 0 when beta = l2 = 0, and also when a tiny
    # beta over the rate underflows. The denominator can then be 0, only where
    # n = 0, and there z is 0 too (or a gradient so small that its square
    # underflowed): divide by 1 rather than make 0 / 0.
    if denominator == 0:
        denominator = 1.0
    if l1 > 0:
        # z - clip(z, -l1, l1) is exactly sign(z) * max(|z| - l1, 0).
        z = z - min(max(z, -l1), l1)
    if not saturate:
        return -(z / denominator)
    return clip(-(z / denominator), LARGEST)


def step(
    z,
    n,
    root_n,
    weight,
    gradient,
    squared,
    learning_rate,
    learning_rate_power,
    smallest_n,
    largest,
    saturate=True,
):
    """The FTRL-Proximal step of one coordinate; returns the new ``(z, n)``.

    ``weight`` is the coordinate's current weight and ``root_n = rate_root(n)``;
    ``squared`` is ``gradient ** 2`` for one row, the summed squares ``Q`` for a
    mini-batch. ``sigma = (sqrt(n + Q) - sqrt(n)) / alpha`` is computed as
    ``Q / (alpha (sqrt(n + Q) + sqrt(n)))``, free of cancellation; for another
    ``learning_rate_power``, as ``(rate_root(n + Q) - rate_root(n)) / alpha``.
    A new positive ``n`` is at least ``smallest_n`` (:func:`smallest_stored_n`),
    and the new ``z`` and ``n`` at most ``largest`` in magnitude
    (:func:`largest_stored`), unless ``saturate`` is False (a float64
    coordinate: see :func:`update_coordinates`).
    """
    new_n = n + squared
    if learning_rate_power is None:
        # 0 only where n = 0 and g^2 is 0 (or underflowed), and sigma must be
        # 0 there: the smallest normal float gives 0 / tiny = 0.
        sigma = squared / max((math.sqrt(new_n) + root_n) * learning_rate, TINY)
    else:
        sigma = (new_n**-learning_rate_power - root_n) / learning_rate
    # A learning rate near 0 can make sigma overflow where the weight is 0,
    # and inf * 0 is NaN: clipped, sigma * 0 stays 0.
    if saturate:
        sigma = min(sigma, LARGEST)
    new_z = z + gradient - sigma * weight
    if squared > 0 and new_n < smallest_n:
        new_n = smallest_n
    if not saturate:
        return new_z, new_n
    return clip(new_z, largest), min(new_n, largest)


def rescaled_margin(values, weights, intercept):
    """The margin ``values @ weights + intercept`` of a row whose float64 sum
    overflowed (to inf, or to inf - inf = NaN), clamped to +-LARGEST.

    Each value is scaled by the power of two of the largest |value| (at least
    1, for the intercept's input) and each weight by that of the largest
    |weight|, so that no product exceeds 1 and the sum cannot overflow; the
    sum is then scaled back. The result is the exact sum to rounding (terms
    below 2**-1074 of the largest are lost). ``values`` and ``weights`` are
    1-d arrays; numba compiles this function unchanged, so the engines give
    the same bits.
    """
    largest_value, largest_weight = 1.0, abs(intercept)
    for i in range(values.shape[0]):
        largest_value = max(largest_value, abs(float(values[i])))
        largest_weight = max(largest_weight, abs(weights[i]))
    if largest_weight == 0.0:
        return 0.0
    value_exponent = math.frexp(largest_value)[1]
    weight_exponent = math.frexp(largest_weight)[1]
    total = math.ldexp(intercept, -weight_exponent) * math.ldexp(1.0, -value_exponent)
    for i in range(values.shape[0]):
        scaled_value = math.ldexp(float(values[i]), -value_exponent)
        total += scaled_value * math.ldexp(weights[i], -weight_exponent)
    if total == 0.0:
        return 0.0
    exponent = value_exponent + weight_exponent
    if math.frexp(total)[1] + exponent > 1024:  # beyond LARGEST
        return LARGEST if total > 0 else -LARGEST
    return math.ldexp(total, exponent)


def intercept_weights(z_intercept, n_intercept, parameters):
    """The weights and rate roots of the K intercepts (never regularized), as lists."""
    power = compiled_power(parameters.learning_rate_power)
    roots = [rate_root_scalar(n, power) for n in n_intercept]
    weights = [
        weight(z, root, parameters.learning_rate, parameters.beta, 0.0, 0.0)
        for z, root in zip(z_intercept, roots)
    ]
    return weights, roots


def step_intercepts(z_intercept, n_intercept, roots, weights, gradients, squared, parameters):
    """:func:`step` of each of the K intercepts; the lists are updated in place.

    ``roots`` and ``weights`` are :func:`intercept_weights`' of the same state;
    ``squared`` are the gradients' squares (for a mini-batch, sums of squares).
    """
    power = compiled_power(parameters.learning_rate_power)
    for k, (gradient, square) in enumerate(zip(gradients, squared)):
        z_intercept[k], n_intercept[k] = step(
            z_intercept[k],
            n_intercept[k],
            roots[k],
            weights[k],
            gradient,
            square,
            parameters.learning_rate,
            power,
            0.0,  # the intercept's state is float64
            LARGEST,
        )


def step_intercepts_by_derivatives(
    z_intercept, n_intercept, roots, weights, derivatives, bound, parameters
):
    """:func:`step_intercepts` of one row: each output's loss derivative (the
    intercept's gradient, its input being 1) clipped to ``bound``."""
    clipped = [clip(d, bound) for d in derivatives]
    step_intercepts(
        z_intercept, n_intercept, roots, weights, clipped, [d * d for d in clipped], parameters
    )


def factor_term(value, factor):
    """A factorization machine's term ``v_{i,f} x_i``, clipped to
    :data:`MAX_ABS_FACTOR_TERM`."""
    return clip(value * factor, MAX_ABS_FACTOR_TERM)


def pairwise_term_of_sums(sums, squares):
    """``1/2 sum_f (s_f^2 - sum_i v_{i,f}^2 x_i^2)`` of one output, in this order
    (Rendle 2010, lemma 3.1), from the row's ``sums`` ``s_f`` and ``squares``
    ``sum_i (v_{i,f} x_i)^2``, 1-d arrays of the k components."""
    total = 0.0
    for f in range(sums.shape[0]):
        total += sums[f] * sums[f] - squares[f]
    return 0.5 * total


def factor_gradient(gradient, sum_f, term, factor, factor_l2, bound):
    """``g_{v_{i,f}} = d x_i (s_f - v_{i,f} x_i) + factor_l2 v_{i,f}``, clipped to
    ``bound``; ``gradient`` is the clipped ``d x_i``, ``term`` the
    :func:`factor_term` of ``factor`` ``v_{i,f}``."""
    result = gradient * (sum_f - term)
    if factor_l2:
        result += factor_l2 * factor
    return clip(result, bound)


def merged(current, start, value):
    """A coordinate after the merge of one shard of a parallel round (docs:
    :doc:`parallel`): the shard moved it from ``start``, its value when the
    round began, to ``value``; ``current`` holds the shards merged before.
    Their changes and the shard's add up: a coordinate only one shard
    changed is that shard's value, bit for bit."""
    if value == start:
        return current
    if current == start:
        return value
    return current + (value - start)


# --------------------------------------------------- the array formulas
def rate_root(n, learning_rate_power=PAPER_LEARNING_RATE_POWER):
    """:func:`rate_root_scalar` elementwise: ``sqrt(n)`` for the paper's -0.5 (or None)."""
    if learning_rate_power is None or learning_rate_power == PAPER_LEARNING_RATE_POWER:
        return np.sqrt(n)
    return np.power(n, -learning_rate_power)


class Constants(NamedTuple):
    """A pass's hyper-parameters as the array formulas use them, made once.

    The floats are 0-d arrays: on the few values of a row, a numpy call with
    a Python float operand spends more time converting it than computing.
    """

    negated_rate: np.ndarray  # -learning_rate
    negated_offset: np.ndarray  # -(beta / learning_rate + l2)
    lower: np.ndarray  # -l1
    upper: np.ndarray  # l1
    rate: np.ndarray  # learning_rate
    tiny: np.ndarray  # TINY
    shrink: bool  # l1 > 0
    zero_offset: bool  # beta / learning_rate + l2 == 0
    learning_rate_power: float


def constants(parameters):
    """The :class:`Constants` of a :class:`~skftrl._engines.Parameters`."""
    learning_rate = parameters.learning_rate
    smallest_denominator = parameters.beta / learning_rate + parameters.l2
    as_array = functools.partial(np.array, dtype=np.float64)
    return Constants(
        negated_rate=as_array(-learning_rate),
        negated_offset=as_array(-smallest_denominator),
        lower=as_array(-parameters.l1),
        upper=as_array(parameters.l1),
        rate=as_array(learning_rate),
        tiny=as_array(TINY),
        shrink=parameters.l1 > 0,
        zero_offset=smallest_denominator == 0,
        learning_rate_power=parameters.learning_rate_power,
    )


def weights(z, root_n, constants, saturate=True):
    """:func:`weight` elementwise, given ``root_n = rate_root(n)``, which the update reuses.

    ``saturate=False`` leaves out the clip to the largest float, which acts
    only on infinite weights: a pass that checks for them afterwards (see
    :func:`update_coordinates`) skips its cost.

    The denominator is built negated, so that one division gives
    ``-(z / denominator)``: IEEE rounding is symmetric, so every step is the
    exact negation of :func:`weight`'s and the weights are identical.
    """
    negated_denominator = root_n / constants.negated_rate
    negated_denominator += constants.negated_offset
    if constants.zero_offset:  # see weight()
        negated_denominator -= negated_denominator == 0
    if constants.shrink:
        # z itself is left as it is, for the update.
        shrunk = np.maximum(z, constants.lower)
        np.minimum(shrunk, constants.upper, out=shrunk)
        z = np.subtract(z, shrunk, out=shrunk)
    result = np.divide(z, negated_denominator, out=negated_denominator)
    return clip_gradient(result, LARGEST) if saturate else result


# How far (in steps between adjacent floats) a starting z is searched around
# the inverse of the closed form: the inverse is computed with two roundings
# (three in float32), so the best z lies within one or two steps of it.
STARTING_Z_SEARCH_STEPS = 4


def z_of_weights(coef, n, parameters, dtype):
    """The ``z``, in the state's ``dtype``, whose closed-form weight
    (:func:`weights`) at the accumulators ``n`` (float64) is nearest each of
    ``coef`` (float64): the state a fit starts from when given its weights
    (docs: "Starting from given weights").

    ``z`` is the closed form solved for it,
    ``z = -(w ((beta + root_n) / learning_rate + l2) + sign(w) l1)`` (``z = 0``
    where ``w = 0``), then moved by up to :data:`STARTING_Z_SEARCH_STEPS`
    adjacent floats of ``dtype`` either way to the one whose weight is nearest
    ``w``: ``w`` itself wherever some ``z`` gives it. The closed form is
    monotone in ``z``, so no ``z`` further away does better. Where ``z`` is
    too large for ``dtype`` (a weight too large for its denominator), it is
    inf, unsearched.
    """
    root_n = rate_root(n, parameters.learning_rate_power)
    denominator = root_n / parameters.learning_rate
    denominator += parameters.beta / parameters.learning_rate + parameters.l2
    denominator[denominator == 0] = 1.0  # as weight() divides where it is 0
    with np.errstate(over="ignore"):
        z = -(coef * denominator + np.sign(coef) * parameters.l1).astype(dtype)
    finite = np.flatnonzero(np.isfinite(z))
    z[finite] = nearest_z(z[finite], coef[finite], root_n[finite], constants(parameters))
    return z


def nearest_z(z, coef, root_n, rates):
    """The floats (of ``z``'s dtype) at most :data:`STARTING_Z_SEARCH_STEPS`
    steps from the finite ``z`` whose weights are nearest ``coef``: the first
    found, searching up then down, where several are as near."""

    def distance(candidate):
        return np.abs(weights(candidate.astype(np.float64), root_n, rates) - coef)

    best_z, best_distance = z, distance(z)
    # A z near the largest float gives a weight that overflows (and is
    # clipped); its neighbour inf is never taken.
    with np.errstate(over="ignore"):
        for limit in (np.inf, -np.inf):
            candidate = z
            for _ in range(STARTING_Z_SEARCH_STEPS):
                candidate = np.nextafter(candidate, z.dtype.type(limit))
                candidate_distance = distance(candidate)
                better = (candidate_distance < best_distance) & np.isfinite(candidate)
                best_z = np.where(better, candidate, best_z)
                best_distance = np.where(better, candidate_distance, best_distance)
    return best_z


def update_coordinates(
    z,
    n,
    root_n,
    weights,
    gradient,
    squared,
    constants,
    smallest_n,
    largest,
    guard=True,
    saturate=True,
):
    """:func:`step` elementwise; returns the new ``(z, n)``.

    ``z``, ``n``, ``root_n = rate_root(n)`` and ``weights`` are the
    coordinates' state and current weights, of the same shape as
    ``gradient``; ``z`` and ``n`` are float64 copies gathered from the state
    (see :func:`gather`): they are updated in place, which spares two
    allocations. ``guard=False`` promises that every ``learning_rate *
    |gradient|`` is at least 1e-300, and every ``|gradient|`` at least 1e-150,
    so that the denominator is above ``TINY`` without the guard.

    ``saturate=False`` (a float64 state only) leaves out the clips of sigma
    and z to the largest float: they act only where sigma or the new z is
    infinite, and then the unclipped new z is inf or NaN (as it stays through
    later steps), so a pass that finds its new z finite has the bits of the
    clipped steps; one that does not repeats its rows with them.
    """
    n += squared
    rate = constants.rate
    if constants.learning_rate_power == PAPER_LEARNING_RATE_POWER:
        denominator = np.sqrt(n)
        denominator += root_n
        denominator *= rate
        if guard:
            np.maximum(denominator, constants.tiny, out=denominator)
        sigma_times_weights = np.divide(squared, denominator, out=denominator)
    else:
        sigma_times_weights = rate_root(n, constants.learning_rate_power)
        sigma_times_weights -= root_n
        sigma_times_weights /= rate
    if saturate:
        np.minimum(sigma_times_weights, LARGEST, out=sigma_times_weights)  # see step()
    sigma_times_weights *= weights
    z += gradient
    z -= sigma_times_weights
    if saturate:
        clip_gradient(z, largest)
    if largest < LARGEST:  # a float32 state: n too (a float64 n cannot overflow)
        np.minimum(n, largest, out=n)
    # One reduction per call in the float32 case; the mask only when needed.
    if smallest_n and n.size and n.min() < smallest_n:
        n[(squared > 0) & (n < smallest_n)] = smallest_n
    return z, n


def weights_from_state(z, n, parameters):
    """Closed-form weights of a whole state ``(z, n)`` (float64 or float32), in float64.

    Only the coordinates with ``|z| > l1`` are computed: in a wide hashed
    model most ``z`` are 0, so this is a few cheap passes over the state.
    """
    flat_z, flat_n, coef, flat_coef = flat_state_and_weights(z, n)
    # w = 0 exactly where z = 0: without L1, that comparison alone is cheaper.
    # An l1 beyond float32's range would overflow (and warn) when compared
    # with a float32 state; no finite z exceeds the largest float anyway.
    l1 = parameters.l1
    threshold = min(l1, float(np.finfo(flat_z.dtype).max))
    if flat_z.dtype == np.float32:
        # numpy compares a float32 array with l1 rounded to float32; |z| > l1
        # exactly (as the scalar weight() compares, in float64) is |z| above
        # l1 rounded down to float32.
        threshold = np.float32(threshold)
        if float(threshold) > l1:
            threshold = np.nextafter(threshold, np.float32(0))
    active = np.flatnonzero(flat_z != 0 if l1 == 0 else np.abs(flat_z) > threshold)
    flat_coef[active] = weights(
        flat_z[active].astype(np.float64, copy=False),
        rate_root(flat_n[active].astype(np.float64, copy=False), parameters.learning_rate_power),
        constants(parameters),
    )
    return coef


def merged_values(current, start, value):
    """:func:`merged` of each coordinate, in float64 (arrays of one shape)."""
    current, start, value = (
        np.asarray(array, dtype=np.float64) for array in (current, start, value)
    )
    added = np.where(current == start, value, current + (value - start))
    return np.where(value == start, current, added)


# ------------------------------------------ the factorization machine's
def factor_terms(values, factors):
    """:func:`factor_term` of non-zeros ``values`` (m,) with their factors
    (m, K, k): shape (m, K, k)."""
    # A product beyond the float range is inf, then clipped: as factor_term's,
    # without numpy's warning (a huge row predicts the clipped definition).
    with np.errstate(over="ignore"):
        terms = values[:, None, None] * factors
    return clip_gradient(terms, MAX_ABS_FACTOR_TERM)


def pairwise_term(sums, squares):
    """:func:`pairwise_term_of_sums` over the last axis of ``sums`` and
    ``squares`` (..., k): shape (...), summed in order as the scalar form sums."""
    differences = sums * sums
    differences -= squares
    # A running sum adds in order: ndarray.sum adds 8 or more values pairwise.
    np.add.accumulate(differences, axis=-1, out=differences)
    return 0.5 * differences[..., -1]


def sum_in_order(values):
    """``values.sum(axis=0)`` (shape (m, ...)), each cell's values added in
    order, as the scalar loops add them: numpy adds a single column of 8 or
    more values pairwise (and several columns row by row, in order)."""
    if len(values) and values[0].size == 1:
        return np.add.accumulate(values, axis=0)[-1]
    return values.sum(axis=0)


def factor_gradients(gradient, sums, terms, factors, factor_l2, bound):
    """:func:`factor_gradient` of each non-zero, shape (m, K, k).

    ``gradient`` is each non-zero's clipped ``d x_i`` (m, K); ``sums`` the
    ``s_f`` of its row (broadcast to (m, K, k)); ``terms`` and ``factors``
    its :func:`factor_terms` and ``v`` (m, K, k).
    """
    factor_gradient = gradient[:, :, None] * (sums - terms)
    if factor_l2:
        factor_gradient += factor_l2 * factors
    return clip_gradient(factor_gradient, bound)


# The non-zeros of the rows whose pairwise terms pairwise_margins computes at
# a time, times the outputs and components: it allocates a few arrays of this
# many float64 values (8 MiB each).
PAIRWISE_BLOCK_VALUES = 2**20


def pairwise_margins(X, factors):
    """The pairwise term of each row of the CSR ``X`` for each output: shape
    (n_samples, K), from the factors ``factors`` (K, n_features, k).

    The terms are the passes' (:func:`factor_terms`, clipped), and each row's
    sums ``s_f`` and squares are added in the order of its non-zeros, as the
    passes add them: a row's pairwise term is the one its pass computed from
    the same state, bit for bit. The rows are taken a block at a time, so that
    the terms of many rows never fill memory.
    """
    n_rows = X.shape[0]
    n_outputs, _, n_components = factors.shape
    cells = n_outputs * n_components
    pairwise = np.empty((n_rows, n_outputs), dtype=np.float64)
    by_feature = factors.transpose(1, 0, 2)
    indptr = X.indptr
    rows_per_block = max(1, PAIRWISE_BLOCK_VALUES * n_rows // max(X.nnz * cells, 1))
    for first in range(0, n_rows, rows_per_block):
        last = min(first + rows_per_block, n_rows)
        start, end = int(indptr[first]), int(indptr[last])
        terms = factor_terms(X.data[start:end], by_feature[X.indices[start:end]])
        terms = terms.reshape(end - start, cells)
        # Each non-zero in a column of its own: the product adds each row's
        # terms in order, from 0.
        apart = sp.csr_matrix(
            (np.ones(end - start), np.arange(end - start), indptr[first : last + 1] - start),
            shape=(last - first, end - start),
        )
        shape = (last - first, n_outputs, n_components)
        sums = np.asarray(apart @ terms).reshape(shape)
        terms *= terms
        squares = np.asarray(apart @ terms).reshape(shape)
        pairwise[first:last] = pairwise_term(sums, squares)
    return pairwise
