"""One record per loss: derivative, value, inverse link, derivative bound,
target domain, and the scalar derivative.

Passes, estimators, prediction and the command line all take the loss from
here (:func:`get_loss`, :data:`LOSSES`, :data:`REGRESSION_LOSSES`). Each
record's array methods work on margins of shape ``(n_rows, K)`` (``K = 1``
for every loss but multinomial). Its ``scalar_derivative`` is the same
derivative of one row, on floats: a plain function that the numpy per-row
pass calls and that numba compiles unchanged. A compiled pass cannot take a
function as an argument (numba would not cache it), so it chooses the
record's function by its ``code`` (:func:`scalar_derivative`).
"""

import math
from dataclasses import dataclass
from typing import Callable, ClassVar, Optional

import numpy as np
from scipy.special import expit, log_expit, log_softmax, logsumexp

from ._math import LARGEST, MAX_EXP_ARGUMENT, MAX_EXP_MARGIN

# The records' codes, for the compiled passes' choice of a scalar derivative.
LOG_LOSS, MULTINOMIAL, SQUARED_ERROR, HUBER, POISSON = range(5)


# ------------------------------------------------------------ scalar forms
# ``dloss/dm`` of one row, on floats (numba compiles them too); ``epsilon`` is
# the Huber threshold, which the others ignore.
def log_loss_derivative(margin, target, epsilon):
    """``sigmoid(m) - y``: 1 / (1 + exp(-m)), as scipy's expit; exp(-m) = inf gives 0."""
    exp_minus_margin = math.exp(-margin) if margin > -MAX_EXP_ARGUMENT else math.inf
    return 1.0 / (1.0 + exp_minus_margin) - target


def squared_error_derivative(margin, target, epsilon):
    """``m - y``."""
    return margin - target


def huber_derivative(margin, target, epsilon):
    """``m - y`` clipped to ``[-epsilon, epsilon]``."""
    return min(max(margin - target, -epsilon), epsilon)


def poisson_derivative(margin, target, epsilon):
    """``exp(m) - y``, the mean capped at ``exp(MAX_EXP_MARGIN)``."""
    return math.exp(min(margin, MAX_EXP_MARGIN)) - target


def softmax_derivative(margins, target, derivative):
    """The multinomial ``dloss/dm`` of one row, written into ``derivative``
    (shape (K,)); ``target`` is the class index. Plain loops, for numba."""
    top = margins.max()
    total = 0.0
    for k in range(margins.shape[0]):
        derivative[k] = math.exp(margins[k] - top)
        total += derivative[k]
    for k in range(margins.shape[0]):
        derivative[k] /= total
    derivative[int(target)] -= 1.0


def scalar_derivative(code, margin, target, epsilon):
    """The ``scalar_derivative`` of the one-output loss of ``code`` (its record's
    :attr:`Loss.code`): the one choice by code, for the compiled passes."""
    if code == LOG_LOSS:
        return log_loss_derivative(margin, target, epsilon)
    if code == SQUARED_ERROR:
        return squared_error_derivative(margin, target, epsilon)
    if code == HUBER:
        return huber_derivative(margin, target, epsilon)
    return poisson_derivative(margin, target, epsilon)  # POISSON


@dataclass(frozen=True)
class Loss:
    """A loss of the margin ``m``: the base of the records below.

    ``epsilon`` is the Huber threshold (0 for the other losses). Records
    compare by value, so a :class:`~skftrl._engines.Parameters` holding one does.
    """

    epsilon: float = 0.0
    name: ClassVar[str]
    code: ClassVar[int]
    # dloss/dm of one row on floats, ``(margin, target, epsilon) -> float``;
    # the multinomial's writes its K values: ``(margins, target, out)``.
    scalar_derivative: ClassVar[Callable]
    # The largest |dloss/dm|: gradients of a bounded loss need no clipping
    # when no weight times input can reach the clipping bound.
    derivative_bound: ClassVar[float] = math.inf
    # The targets a regression loss accepts, in words (None: every real).
    target_domain: ClassVar[Optional[str]] = None

    def invalid_targets(self, targets):
        """Where ``targets`` (a float array) lie outside :attr:`target_domain`:
        a boolean array, or None when every real is valid."""
        return None

    def derivative(self, margins, targets):
        """``dloss/dm``, shape (n_rows, K), finite for finite input."""
        raise NotImplementedError

    def value(self, margins, targets):
        """The loss of each row, shape (n_rows,), clamped to +-LARGEST: a loss
        beyond the float range (finite margins and targets near it can give
        one) does not warn (of np.where's branches, both are computed)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return np.clip(self._value(margins, targets), -LARGEST, LARGEST)

    def _value(self, margins, targets):
        """:meth:`value` before clamping."""
        raise NotImplementedError

    def inverse_link(self, margins):
        """The prediction the margins stand for: class probabilities of shape
        (n_rows, n_classes) for the log losses, the mean (n_rows,) for regression."""
        return margins[:, 0]


@dataclass(frozen=True)
class ProbabilityLoss(Loss):
    """A log loss of predicted probabilities: its derivative in each margin
    is a probability minus a 0/1 target, within [-1, 1]."""

    derivative_bound: ClassVar[float] = 1.0


@dataclass(frozen=True)
class LogLoss(ProbabilityLoss):
    """Binary log loss; targets 0/1, one margin, ``p = sigmoid(m)``."""

    name: ClassVar[str] = "log_loss"
    code: ClassVar[int] = LOG_LOSS
    scalar_derivative: ClassVar[Callable] = staticmethod(log_loss_derivative)

    def derivative(self, margins, targets):
        return expit(margins) - targets[:, None]

    def _value(self, margins, targets):
        # -(t log(expit(m)) + (1 - t) log(expit(-m))), with
        # log(expit(-m)) = log(expit(m)) - m: one log_expit instead of two.
        m = margins[:, 0]
        return (1.0 - targets) * m - log_expit(m)

    def inverse_link(self, margins):
        # The smaller probability is expit(-|m|), accurate even when tiny
        # (1 - expit(|m|) would round it); the larger is 1 minus it. Written
        # as two contiguous rows, returned transposed (as SGDClassifier's
        # vstack(...).T is).
        positive = margins[:, 0] > 0
        smaller = expit(-np.abs(margins[:, 0]))
        larger = 1.0 - smaller
        proba = np.empty((2, margins.shape[0]))
        np.copyto(proba[0], np.where(positive, smaller, larger))
        np.copyto(proba[1], np.where(positive, larger, smaller))
        return proba.T

    def log_inverse_link(self, margins):
        """The logarithm of :meth:`inverse_link`, without underflow."""
        return np.column_stack([log_expit(-margins[:, 0]), log_expit(margins[:, 0])])


def softmax(margins):
    """Each row's softmax, ``exp(m - max) / sum(exp(m - max))``: the operations
    of :func:`softmax_derivative`, in this order whatever scipy's version
    (scipy's softmax computed ``exp(m - logsumexp(m))`` before 1.10)."""
    shifted = np.exp(margins - margins.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Multinomial(ProbabilityLoss):
    """Softmax cross-entropy; targets are class indices, one margin per class."""

    name: ClassVar[str] = "multinomial"
    code: ClassVar[int] = MULTINOMIAL
    scalar_derivative: ClassVar[Callable] = staticmethod(softmax_derivative)

    def derivative(self, margins, targets):
        derivative = softmax(margins)
        derivative[np.arange(len(targets)), targets] -= 1.0
        return derivative

    def _value(self, margins, targets):
        return logsumexp(margins, axis=1) - margins[np.arange(len(targets)), targets]

    def inverse_link(self, margins):
        with np.errstate(over="ignore"):  # margins near +-1.8e308: exp(-inf) is 0
            return softmax(margins)

    def log_inverse_link(self, margins):
        """The logarithm of :meth:`inverse_link`, without underflow; clamped
        to -LARGEST, as the margins are."""
        with np.errstate(over="ignore"):
            return np.maximum(log_softmax(margins, axis=1), -LARGEST)


@dataclass(frozen=True)
class SquaredError(Loss):
    """``(m - y)^2 / 2``."""

    name: ClassVar[str] = "squared_error"
    code: ClassVar[int] = SQUARED_ERROR
    scalar_derivative: ClassVar[Callable] = staticmethod(squared_error_derivative)

    def derivative(self, margins, targets):
        return margins - targets[:, None]

    def _value(self, margins, targets):
        return 0.5 * (margins[:, 0] - targets) ** 2


@dataclass(frozen=True)
class Huber(Loss):
    """Quadratic for residuals up to ``epsilon``, linear beyond."""

    name: ClassVar[str] = "huber"
    code: ClassVar[int] = HUBER
    scalar_derivative: ClassVar[Callable] = staticmethod(huber_derivative)

    @property
    def derivative_bound(self):
        return self.epsilon

    def derivative(self, margins, targets):
        return np.clip(margins - targets[:, None], -self.epsilon, self.epsilon)

    def _value(self, margins, targets):
        epsilon = self.epsilon
        residual = margins[:, 0] - targets
        absolute = np.abs(residual)
        return np.where(
            absolute <= epsilon,
            0.5 * residual**2,
            epsilon * absolute - 0.5 * epsilon**2,
        )


@dataclass(frozen=True)
class Poisson(Loss):
    """Poisson negative log-likelihood with a log link, without ``log(y!)``;
    the mean ``exp(m)`` is capped at ``exp(MAX_EXP_MARGIN)``."""

    name: ClassVar[str] = "poisson"
    code: ClassVar[int] = POISSON
    scalar_derivative: ClassVar[Callable] = staticmethod(poisson_derivative)
    target_domain: ClassVar[Optional[str]] = "non-negative y (counts or rates)"

    def invalid_targets(self, targets):
        return targets < 0

    def derivative(self, margins, targets):
        return np.exp(np.minimum(margins, MAX_EXP_MARGIN)) - targets[:, None]

    def _value(self, margins, targets):
        m = np.minimum(margins[:, 0], MAX_EXP_MARGIN)
        return np.exp(m) - targets * m

    def inverse_link(self, margins):
        return np.exp(np.minimum(margins[:, 0], MAX_EXP_MARGIN))


LOSSES = {loss.name: loss for loss in (LogLoss, Multinomial, SquaredError, Huber, Poisson)}
# The losses of regression, for FTRLRegressor's ``loss`` and the command line's ``--loss``.
REGRESSION_LOSSES = tuple(
    name for name, loss in LOSSES.items() if not issubclass(loss, ProbabilityLoss)
)


def get_loss(name, epsilon=0.0):
    """The record of the loss ``name`` (a key of :data:`LOSSES`)."""
    try:
        record = LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; expected one of {tuple(LOSSES)}.") from None
    return record(epsilon=float(epsilon) if record is Huber else 0.0)
