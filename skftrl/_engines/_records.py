"""The records of each model family: its hyper-parameters and its learned state,
and the factorization machine's initial factors.

A state record is a NamedTuple of arrays. Its learned arrays are floats:
those of more than one dimension are per feature, with the features on axis
1 (``(K, F)`` or ``(K, F, k)``), the one-dimensional ones per output
(``(K,)``); an integer array is a constant of the state, which no pass
changes. The undo logs, state copies and checkpoints of :mod:`._undo` rely on
that alone, whatever the family. A :class:`Family` names the engines of one family; the package's
``FAMILIES`` registers each (docs: developers, "Adding a model family").
"""

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ._losses import Loss
from ._math import PAPER_LEARNING_RATE_POWER, compiled_power, empty_factor_state, rate_root_scalar


@dataclass(frozen=True)
class Parameters:
    """The hyper-parameters of a pass and of the weights, one frozen record.

    Compared by value: the prediction cache keeps weights while it is equal.
    """

    loss: Loss
    learning_rate: float
    beta: float
    l1: float
    l2: float
    learning_rate_power: float = PAPER_LEARNING_RATE_POWER
    fit_intercept: bool = True


class LinearState(NamedTuple):
    """The learned state of a linear model with ``K`` outputs over ``F`` features.

    ``z``, ``n`` of shape ``(K, F)`` (float64 or float32, computed on in
    float64; fastest as :func:`._math.new_state` lays them out) and the
    intercepts' ``z_intercept``, ``n_intercept`` of shape ``(K,)`` (float64).
    """

    z: np.ndarray
    n: np.ndarray
    z_intercept: np.ndarray
    n_intercept: np.ndarray


@dataclass(frozen=True)
class FMParameters(Parameters):
    """:class:`Parameters` plus the factors' rate scale and penalty."""

    factor_learning_rate: float = 0.1
    factor_l2: float = 0.0

    def of_factors(self):
        """The parameters of the factors' closed form: their rate, no l1 or l2
        (the factors' penalty is ``factor_l2``, in their gradient)."""
        return replace(self, learning_rate=self.factor_learning_rate, l1=0.0, l2=0.0)


class FMState(NamedTuple):
    """The learned state of a factorization machine: the linear model's four
    arrays, and the factors' ``z_factors``, ``n_factors`` of shape (K, F, k),
    features on axis 1."""

    z: np.ndarray
    n: np.ndarray
    z_intercept: np.ndarray
    n_intercept: np.ndarray
    z_factors: np.ndarray
    n_factors: np.ndarray


# ------------------------------------------ the factorization machine's initial factors
def new_factor_state(
    n_outputs,
    n_features,
    n_components,
    dtype,
    parameters,
    *,
    init_stdev,
    random_state,
    initial_n=0.0,
):
    """The factors' fresh ``(z, n)``, each of shape (K, F, k) (docs: "Initial factors"),
    and the record from which :func:`initial_factor_state` makes them again.

    ``v0 = init_stdev * N(0, 1)``, drawn as
    ``np.random.default_rng(random_state).standard_normal((K, F, k))`` for an
    int or None ``random_state`` (a ``RandomState`` instance draws with its
    own ``standard_normal``), is stored as
    ``z0 = -v0 * (beta + rate_root(n0)) / factor_learning_rate`` with
    ``n0 = initial_n``, so that the closed form gives ``v0``.

    The record (a dict of arrays, or None for a generator other than
    ``RandomState``'s and ``default_rng``'s) holds the generator's state before
    the draw and the scale: a saved model stores only the factors training has
    changed, and the others are drawn again when it is loaded.
    """
    shape = (n_outputs, n_features, n_components)
    if isinstance(random_state, np.random.RandomState):
        generator = random_state
    else:
        generator = np.random.default_rng(random_state)
    root_n = rate_root_scalar(float(initial_n), compiled_power(parameters.learning_rate_power))
    denominator = (parameters.beta + root_n) / parameters.factor_learning_rate
    record = _generator_record(generator)
    if record is not None:
        record["scale"] = np.array([init_stdev, denominator, initial_n], dtype=np.float64)
    z, n = _scaled_factor_state(
        generator.standard_normal(shape), init_stdev, denominator, initial_n, dtype
    )
    return z, n, record


def initial_factor_state(record, shape, dtype):
    """The ``(z, n)`` that :func:`new_factor_state` made with ``record``, bit for bit."""
    if "key" in record:  # a RandomState's Mersenne twister
        position, has_gauss = (int(value) for value in record["position"])
        generator = np.random.RandomState()
        generator.set_state(
            ("MT19937", record["key"], position, has_gauss, float(record["gauss"][0]))
        )
    else:  # PCG64, default_rng's
        state_high, state_low, inc_high, inc_low, has_uint32, uinteger = (
            int(word) for word in record["words"]
        )
        bit_generator = np.random.PCG64()
        bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": state_high << 64 | state_low, "inc": inc_high << 64 | inc_low},
            "has_uint32": has_uint32,
            "uinteger": uinteger,
        }
        generator = np.random.Generator(bit_generator)
    init_stdev, denominator, initial_n = (float(value) for value in record["scale"])
    return _scaled_factor_state(
        generator.standard_normal(shape), init_stdev, denominator, initial_n, dtype
    )


def _scaled_factor_state(draws, init_stdev, denominator, initial_n, dtype):
    """``z0`` and ``n0`` from the standard normal ``draws`` (see new_factor_state)."""
    z, n = empty_factor_state(draws.shape, dtype)
    np.multiply(-(init_stdev * draws), denominator, out=z, casting="same_kind")
    n[...] = initial_n
    return z, n


def _generator_record(generator):
    """The state of ``generator`` as a dict of integer arrays, or None when it
    is neither a ``RandomState`` nor a ``Generator`` of ``PCG64``."""
    if isinstance(generator, np.random.RandomState):
        name, key, position, has_gauss, gauss = generator.get_state()
        if name != "MT19937":
            return None
        return {
            "key": np.array(key, dtype=np.uint32),
            "position": np.array([position, has_gauss], dtype=np.int64),
            "gauss": np.array([gauss], dtype=np.float64),
        }
    if not isinstance(generator.bit_generator, np.random.PCG64):
        return None
    state = generator.bit_generator.state
    words = (
        state["state"]["state"] >> 64,
        state["state"]["state"] & (2**64 - 1),
        state["state"]["inc"] >> 64,
        state["state"]["inc"] & (2**64 - 1),
        state["has_uint32"],
        state["uinteger"],
    )
    return {"words": np.array(words, dtype=np.uint64)}


@dataclass(frozen=True)
class Family:
    """The engines of one model family, as the package's engine choice takes them.

    ``numpy``: its exact per-row engine in numpy (an engine object);
    ``batch``: the class of its mini-batch engine, made as
    ``batch(batch_size, weights_engine)``; ``compiled``: the name of the
    module (in this package) whose ``ENGINE`` is its exact per-row engine
    compiled with numba, imported only when numba is used.
    """

    numpy: object
    batch: type
    compiled: str
