"""FTRL-Proximal's closed-form weight and per-coordinate step, in torch operations.

These are the formulas of the documentation's "The algorithm" page
(``docs/algorithm.rst``), written with the same IEEE operations in the same
order as skftrl's numpy engine, so that a float64 model trained with
:class:`skftrl.torch.FTRL` has the state of an estimator trained on the same
rows. Every function works on tensors of one shape: a whole parameter and its
state, or the rows of them that a sparse gradient touches; each element is
computed alone, so both give the same bits.

The optimizers (:mod:`._optimizers`) only choose what to compute on and store
the results.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# The paper's per-coordinate rate alpha / (beta + n ** 0.5): the exponent of n
# is -lr_power, as TensorFlow's Ftrl names it.
PAPER_LR_POWER = -0.5

# A per-coordinate gradient is clipped to this magnitude, so that its square
# and the sum of many squares stay finite (as skftrl's estimators do). Only
# gradients near 1e100 (float64) or 1e15 (float32) ever reach it.
MAX_ABS_GRADIENT = {torch.float64: 1e100, torch.float32: 1e15}

# How far (in steps between adjacent floats) the initial state's z is searched
# around the inverse of the closed form; the inverse is computed with two
# roundings, so the best z lies within one or two steps of it.
INITIAL_Z_SEARCH_STEPS = 4


@dataclass(frozen=True)
class Settings:
    """The hyper-parameters of one parameter group, as the formulas take them."""

    lr: float
    beta: float
    l1: float
    l2: float
    lr_power: float
    initial_accumulator_value: float

    @classmethod
    def of_group(cls, group: dict) -> Settings:
        return cls(
            lr=float(group["lr"]),
            beta=float(group["beta"]),
            l1=float(group["l1"]),
            l2=float(group["l2"]),
            lr_power=float(group["lr_power"]),
            initial_accumulator_value=float(group["initial_accumulator_value"]),
        )


def rate_root(n: torch.Tensor, lr_power: float) -> torch.Tensor:
    """``n ** -lr_power``: ``sqrt(n)`` for the paper's ``lr_power = -0.5``.

    A sparse step gives the dense step's bits only if each root depends on
    its input alone. torch's ``sqrt`` does (though some builds round it
    differently from IEEE's square root in the last bit), but on the CPU its
    ``pow`` rounds the same value differently by its position in a tensor:
    SIMD code for most elements, the C library's ``pow`` for a tail. A tensor
    with a stride of 2 takes the C library's ``pow`` for every element.
    """
    if lr_power == PAPER_LR_POWER:
        return torch.sqrt(n)
    spaced = n.new_empty((*n.shape, 2))
    spaced[..., 0] = n
    return torch.pow(spaced[..., 0], -lr_power, out=spaced[..., 1])


def negated_denominator(root_n: torch.Tensor, settings: Settings) -> torch.Tensor:
    """``-((beta + root_n) / lr + l2)``, the closed form's denominator negated.

    Built as skftrl's engine builds it (``root_n / -lr``, then
    ``-(beta / lr + l2)`` added), so that one division gives the weight. It
    is 0 only where ``beta = l2 = 0`` and ``n = 0``, where ``z`` is 0 too (or
    a gradient whose square underflowed): it is then -1, so that ``0 / 0``
    never makes a NaN.
    """
    offset = settings.beta / settings.lr + settings.l2
    denominator = root_n / -settings.lr
    denominator -= offset
    if offset == 0:
        denominator.masked_fill_(denominator == 0, -1.0)
    return denominator


def closed_form_weight(z: torch.Tensor, root_n: torch.Tensor, settings: Settings) -> torch.Tensor:
    """The weight of each coordinate of a state ``(z, n)``, given ``root_n = rate_root(n)``::

    w = 0                                                    if |z| <= l1
    w = -(z - sign(z) * l1) / ((beta + root_n) / lr + l2)    otherwise
    """
    denominator = negated_denominator(root_n, settings)
    if settings.l1 > 0:
        # z - clamp(z, -l1, l1) is exactly sign(z) * max(|z| - l1, 0).
        shrunk = torch.clamp(z, -settings.l1, settings.l1)
        z = torch.sub(z, shrunk, out=shrunk)
    return torch.div(z, denominator, out=denominator)


def step_state(
    z: torch.Tensor,
    n: torch.Tensor,
    weight: torch.Tensor,
    direction: torch.Tensor,
    squared: torch.Tensor,
    settings: Settings,
) -> torch.Tensor:
    """The FTRL-Proximal step of each coordinate, in place on ``z`` and ``n``.

    ``weight`` is the coordinates' current weight, ``direction`` their
    gradient ``g`` and ``squared`` what ``n`` accumulates (``g ** 2``; Adam's
    second moment for :class:`~skftrl.torch.FTRLAdam`)::

        sigma = (root(n + squared) - root(n)) / lr
        z    += direction - sigma * weight
        n    += squared

    For the paper's ``lr_power``, ``sigma`` is computed as
    ``squared / (lr * (sqrt(n + squared) + sqrt(n)))``, the same value without
    cancellation, whose denominator is at least the smallest normal float:
    where it underflows ``squared`` is 0, and so is ``sigma``. Returns
    ``rate_root`` of the new ``n``, which the new weight needs.
    """
    # In place where a value is not needed again: a dense step over a large
    # table then allocates fewer temporaries of its size.
    sigma = rate_root(n, settings.lr_power)
    n += squared
    new_root = rate_root(n, settings.lr_power)
    if settings.lr_power == PAPER_LR_POWER:
        sigma += new_root
        sigma *= settings.lr
        sigma.clamp_(min=torch.finfo(sigma.dtype).tiny)
        torch.div(squared, sigma, out=sigma)
    else:
        torch.sub(new_root, sigma, out=sigma)
        sigma /= settings.lr
    sigma *= weight
    z += direction
    z -= sigma
    return new_root


def clip_gradient(gradient: torch.Tensor) -> torch.Tensor:
    """``gradient`` clipped to :data:`MAX_ABS_GRADIENT`, in place."""
    bound = MAX_ABS_GRADIENT[gradient.dtype]
    return gradient.clamp_(-bound, bound)


def initial_z(weight: torch.Tensor, n: torch.Tensor, settings: Settings) -> torch.Tensor:
    """The ``z`` whose closed-form weight, with ``n``, is nearest ``weight``.

    ``z`` is the closed form solved for ``z`` (``w * -D + sign(w * -D) * l1``
    with ``D`` the denominator), then moved by up to
    :data:`INITIAL_Z_SEARCH_STEPS` adjacent floats either way to the one
    whose closed form is nearest ``weight``: ``weight`` itself wherever some
    ``z`` gives it. The closed form is monotone in ``z``, so no ``z`` further
    away does better. The closed form cannot give every float, though: a
    rounded division skips some quotients (about one weight in eight without
    L1), and with L1, ``z`` lies near ``+-l1``, whose floats are coarser than
    the weight's, so that with an ``l1`` much larger than ``|w| * D`` most
    weights are out of reach. The best ``z`` then gives a weight next to it;
    the optimizers keep the parameter's own value until a gradient moves it,
    whatever its ``z``.

    Raises ``ValueError`` where ``z`` would be infinite: a weight near the
    float range times a large denominator.
    """
    z = torch.zeros_like(weight)
    if not bool(weight.any()):  # all zeros (-0.0 too): z = 0 gives them
        return z
    root_n = rate_root(n, settings.lr_power)
    shrunk = weight * negated_denominator(root_n, settings)
    z = shrunk + torch.sign(shrunk) * settings.l1
    if not bool(torch.isfinite(z).all()):
        raise ValueError(
            "an initial value is too large for FTRL's state with these "
            f"hyper-parameters (lr={settings.lr!r}, beta={settings.beta!r}, l2={settings.l2!r},"
            f" l1={settings.l1!r}): its accumulated gradient z would be infinite. The largest "
            f"|value| is {float(weight.abs().max())!r}."
        )

    def distance(candidate: torch.Tensor) -> torch.Tensor:
        return torch.abs(closed_form_weight(candidate, root_n, settings) - weight)

    best_z, best_distance = z, distance(z)
    for limit in (float("inf"), float("-inf")):
        candidate = z
        for _ in range(INITIAL_Z_SEARCH_STEPS):
            candidate = torch.nextafter(candidate, torch.full_like(candidate, limit))
            candidate_distance = distance(candidate)
            better = candidate_distance < best_distance
            best_z = torch.where(better, candidate, best_z)
            best_distance = torch.where(better, candidate_distance, best_distance)
    return best_z
