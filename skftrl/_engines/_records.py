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

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ._losses import Loss
from ._math import (
    PAPER_LEARNING_RATE_POWER,
    compiled_power,
    new_factor_layout,
    rate_root_scalar,
    state_blocks,
)


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
    and the record from which :func:`initial_factor_blocks` makes ``z`` again.

    ``v0 = init_stdev * N(0, 1)``, drawn as
    ``np.random.default_rng(random_state).standard_normal((K, F, k))`` for an
    int or None ``random_state`` (a ``RandomState`` instance draws with its
    own ``standard_normal``), is stored as
    ``z0 = -v0 * (beta + rate_root(n0)) / factor_learning_rate`` with
    ``n0 = initial_n``, so that the closed form gives ``v0``. The draws are
    made a block at a time (:func:`._math.state_blocks`), in float64 whatever
    the state's dtype: the same numbers, without a float64 copy of the state.

    The record (a dict of arrays, or None for a generator other than
    ``RandomState``'s Mersenne twister and ``default_rng``'s PCG64) holds the
    generator's state before the draw and the scale: a saved model stores only
    the factors training has changed, and the others are drawn again when it
    is loaded. Raises a ValueError when ``z0`` overflows the state's dtype.
    """
    shape = (n_outputs, n_features, n_components)
    if isinstance(random_state, np.random.RandomState):
        generator = random_state
    else:
        generator = np.random.default_rng(random_state)
    root_n = rate_root_scalar(float(initial_n), compiled_power(parameters.learning_rate_power))
    with np.errstate(over="ignore"):
        denominator = (parameters.beta + root_n) / parameters.factor_learning_rate
    scale = np.array([init_stdev, denominator, initial_n], dtype=np.float64)
    record = _generator_record(generator)
    if record is not None:
        record["scale"] = scale
    z, n = new_factor_layout(shape, dtype)
    blocks = _initial_blocks(generator, shape, scale, dtype, parameters)
    for (output, features), initial in zip(state_blocks(shape), blocks):
        z[output, features] = initial
    if initial_n != 0:
        n[...] = initial_n
    return z, n, record


def initial_factor_blocks(record, shape, dtype):
    """The blocks of ``z`` (in :func:`._math.state_blocks` order) that
    :func:`new_factor_state` made with ``record``, bit for bit; ``n`` was
    ``initial_factor_n(record)``."""
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
    return _initial_blocks(generator, shape, record["scale"], dtype)


# The arrays of each kind of record of the initial factors: name, dtype, shape.
_FACTOR_RECORDS = (
    {"key": (np.uint32, (624,)), "position": (np.int64, (2,)), "gauss": (np.float64, (1,))},
    {"words": (np.uint64, (6,))},
)


def check_factor_record(record):
    """Refuse a saved record of the initial factors (see :func:`new_factor_state`)
    that is neither None nor a dict of exactly the arrays one holds, of their
    dtypes and shapes: a record whose generator state was cast (PCG64's words
    to float, say) would draw other factors. A ValueError names what is wrong."""
    if record is None:
        return

    def damaged(problem):
        return ValueError(
            f"the model's saved record of its initial factors {problem}: it is damaged"
        )

    if not isinstance(record, dict):
        raise damaged(f"is a {type(record).__name__}, not a dict of arrays")
    for arrays in _FACTOR_RECORDS:
        expected = {**arrays, "scale": (np.float64, (3,))}
        if set(record) == set(expected):
            break
    else:
        raise damaged(f"holds {sorted(record)}, not the arrays of a Mersenne twister or PCG64")
    for name, (dtype, shape) in expected.items():
        array = record[name]
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape != shape:
            got = (
                f"{array.dtype} {array.shape}"
                if isinstance(array, np.ndarray)
                else type(array).__name__
            )
            raise damaged(f"holds {name} as {got}, not {np.dtype(dtype).name} {shape}")


def initial_factor_n(record):
    """The ``n`` every factor started from, in the state made with ``record``."""
    return float(record["scale"][2])


def _initial_blocks(generator, shape, scale, dtype, parameters=None):
    """``z0`` of each block of the factors, from the standard normal draws of
    ``generator`` (see new_factor_state); ``parameters`` name the
    hyper-parameters in the error raised when ``z0`` overflows."""
    init_stdev, denominator, _ = (float(value) for value in scale)
    for _, features in state_blocks(shape):
        draws = generator.standard_normal((features.stop - features.start, *shape[2:]))
        if init_stdev == 0 and not math.isfinite(denominator):
            # 0 * inf: factors that start at 0 stay there whatever the rate.
            yield np.zeros(draws.shape, dtype=dtype)
            continue
        draws *= init_stdev
        np.negative(draws, out=draws)
        out = draws if np.dtype(dtype) == draws.dtype else np.empty(draws.shape, dtype=dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            z = np.multiply(draws, denominator, out=out, casting="same_kind")
        if not np.isfinite(z).all():
            raise ValueError(_overflow_message(init_stdev, denominator, dtype, parameters))
        yield z


def _overflow_message(init_stdev, denominator, dtype, parameters):
    """The error of initial factors beyond the float range of the state."""
    largest = float(np.finfo(dtype).max)
    if parameters is None:  # made again from a record: it was tampered with
        return "a saved record of the initial factors makes them overflow: it is damaged"
    return (
        f"init_stdev={init_stdev:g} with beta={parameters.beta:g} and "
        f"factor_learning_rate={parameters.factor_learning_rate:g} (learning_rate when "
        "None) gives initial factors that overflow the state: each is stored as "
        f"z = -v (beta + n ** -learning_rate_power) / factor_learning_rate, which must "
        f"stay below {largest:.4g} in {np.dtype(dtype).name} (here the scale is "
        f"{denominator:g}). Lower init_stdev or beta, or raise factor_learning_rate."
    )


def _generator_record(generator):
    """The state of ``generator`` as a dict of integer arrays, or None when it
    is neither a ``RandomState`` of the Mersenne twister nor a ``Generator``
    of ``PCG64`` (its factors are then saved whole)."""
    if isinstance(generator, np.random.RandomState):
        # A RandomState may run on any bit generator (PCG64, Philox, SFC64...):
        # the record holds the Mersenne twister's state only.
        state = generator.get_state(legacy=False)
        if state["bit_generator"] != "MT19937":
            return None
        return {
            "key": np.array(state["state"]["key"], dtype=np.uint32),
            "position": np.array([state["state"]["pos"], state["has_gauss"]], dtype=np.int64),
            "gauss": np.array([state["gauss"]], dtype=np.float64),
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
