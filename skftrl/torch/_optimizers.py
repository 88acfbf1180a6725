"""The optimizers :class:`FTRL` and :class:`FTRLAdam`.

Both keep the paper's per-coordinate ``z`` and ``n`` in ``self.state[p]``; the
parameter tensor is their closed-form weight, written after each step where
the step moved the coordinate. The formulas are in :mod:`._formulas`; this
module validates, chooses the coordinates to compute on (a whole tensor, or
the rows a sparse gradient touches) and stores the results.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real
from typing import Any, Callable, Union

import torch

from ._formulas import (
    Settings,
    clip_gradient,
    closed_form_weight,
    initial_z,
    step_state,
)

ParamsT = Union[Iterable[torch.Tensor], Iterable[dict[str, Any]]]

SUPPORTED_DTYPES = (torch.float32, torch.float64)

# (name, test, the range as the error message states it)
_FTRL_CHECKS = (
    ("lr", lambda v: 0 < v < math.inf, "a finite number > 0, in (0, inf)"),
    ("beta", lambda v: 0 <= v < math.inf, "a finite number >= 0, in [0, inf)"),
    ("l1", lambda v: 0 <= v < math.inf, "a finite number >= 0, in [0, inf)"),
    ("l2", lambda v: 0 <= v < math.inf, "a finite number >= 0, in [0, inf)"),
    ("lr_power", lambda v: -1 <= v <= 0, "a number in [-1, 0]"),
    (
        "initial_accumulator_value",
        lambda v: 0 <= v < math.inf,
        "a finite number >= 0, in [0, inf)",
    ),
)


# At a step, a group's lr may also be 0, the last value of a learning-rate
# scheduler such as PolynomialLR: the group is then not stepped.
_STEP_LR_CHECK = (
    "lr",
    lambda v: 0 <= v < math.inf,
    "a finite number >= 0, in [0, inf) (a step with lr = 0 changes nothing)",
)

_UNCHANGED = "No parameter or state was changed."


def _is_real(value: Any) -> bool:
    # float first: every step checks each group's values, most often floats.
    return type(value) is float or (isinstance(value, Real) and not isinstance(value, bool))


def _check_number(owner: str, name: str, value: Any, test, expected: str, where: str = "") -> None:
    """Raise ``ValueError`` unless ``value`` is a real number passing ``test``.

    ``where`` places a value read at a step (`` of parameter group 1``); the
    message then also says that nothing changed.
    """
    if not _is_real(value) or math.isnan(value) or not test(value):
        unchanged = f" {_UNCHANGED}" if where else ""
        raise ValueError(f"{owner}: {name}{where} must be {expected}; got {value!r}.{unchanged}")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


class _FTRLBase(torch.optim.Optimizer):
    """What :class:`FTRL` and :class:`FTRLAdam` share: validation, the loop over
    the parameters, and the initial state."""

    _accepts_sparse_gradients = True
    # The tensors of a parameter's state, each of the parameter's shape.
    _state_tensors: tuple[str, ...] = ("z", "n")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group, its hyper-parameters checked.

        Parameters
        ----------
        param_group : dict
            ``"params"``, a tensor or an iterable of tensors (float32 or
            float64, strided), and any hyper-parameter of the optimizer
            overriding its default for this group.

        Raises
        ------
        ValueError
            If a hyper-parameter is outside its range, or a parameter is not
            a floating-point tensor of a supported dtype.
        """
        owner = type(self).__name__
        settings = {**self.defaults, **param_group}
        self._check_settings(owner, settings)
        params = param_group["params"]
        params = [params] if isinstance(params, torch.Tensor) else list(params)
        for param in params:
            if not isinstance(param, torch.Tensor):
                raise TypeError(f"{owner}: parameters must be tensors; got {type(param)!r}.")
            if param.dtype not in SUPPORTED_DTYPES or param.layout != torch.strided:
                raise ValueError(
                    f"{owner} optimizes float32 and float64 dense tensors (their gradients may "
                    f"be sparse); got a parameter of dtype {param.dtype} and layout "
                    f"{param.layout}."
                )
        super().add_param_group({**param_group, "params": params})

    @staticmethod
    def _check_settings(owner: str, settings: dict[str, Any], where: str = "") -> None:
        """Check a group's hyper-parameters: when it is added (``where``
        empty), or at a step (``where``: `` of parameter group i``), where a
        scheduler may have changed them and ``lr`` may be 0."""
        for name, test, expected in _FTRL_CHECKS:
            if where and name == "lr":
                name, test, expected = _STEP_LR_CHECK
            _check_number(owner, name, settings.get(name), test, expected, where)
        maximize = settings.get("maximize")
        if not isinstance(maximize, bool):
            unchanged = f" {_UNCHANGED}" if where else ""
            raise ValueError(
                f"{owner}: maximize{where} must be True or False; got {maximize!r}.{unchanged}"
            )

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Make one optimization step from the parameters' gradients.

        Parameters whose ``grad`` is None are skipped, and so is every
        parameter of a group whose ``lr`` is 0 (the last value of a
        learning-rate scheduler such as ``PolynomialLR``): its value and its
        state do not change, and a later step with ``lr > 0`` continues from
        them. Every hyper-parameter, gradient and state is checked, and every
        new state made, before any parameter or state changes.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss (called with
            gradients enabled, before the step).

        Returns
        -------
        loss : object
            What ``closure`` returned, or None without one.

        Raises
        ------
        ValueError
            If a hyper-parameter of a group is outside its range, a gradient
            has a NaN or an infinite value, a parameter is no longer float32
            or float64 or no longer fits its state (its shape, dtype or
            device changed after its first step), or a new state cannot
            start from a parameter's value: the state and the parameters are
            then left unchanged.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for param, rows, gradient, settings, group, new_state in self._checked_steps():
            state = self.state[param]
            state.update(new_state)
            if rows is None:
                self._update_dense(param, state, gradient, settings, group)
            else:
                self._update_rows(param, state, rows, gradient, settings)
        return loss

    def _checked_steps(self) -> list[tuple]:
        """The steps to make, ``(param, rows, gradient, settings, group,
        new_state)``, with ``new_state`` the state to create (empty where the
        parameter has one); raises ``ValueError`` before anything changes."""
        owner = type(self).__name__
        steps = []
        for group_index, group in enumerate(self.param_groups):
            self._check_settings(owner, group, f" of parameter group {group_index}")
            settings = Settings.of_group(group)
            for param_index, param in enumerate(group["params"]):
                if param.grad is None:
                    continue
                where = f"parameter {param_index} of parameter group {group_index}"
                if param.dtype not in SUPPORTED_DTYPES or param.layout != torch.strided:
                    raise ValueError(
                        f"{owner}: {where} is {_dtype_name(param.dtype)} (layout "
                        f"{param.layout}): it was converted after the optimizer was built "
                        f"(model.half(), for example). {owner} optimizes float32 and float64 "
                        f"dense tensors only. {_UNCHANGED}"
                    )
                rows, gradient = self._gradient(param, group["maximize"], where)
                # .get: indexing the state (a defaultdict) would add an entry.
                state = self.state.get(param)
                if state:
                    self._check_state(state, param, f"{owner}: {where}")
                if settings.lr == 0:
                    continue
                new_state = {} if state else self._new_state(param, settings, where)
                steps.append((param, rows, gradient, settings, group, new_state))
        return steps

    def _check_state(self, state: dict, param: torch.Tensor, subject: str) -> None:
        """Raise ``ValueError`` unless ``state`` is a state of ``param``: its
        tensors of the parameter's shape, dtype and device."""
        for key in self._state_tensors:
            value = state.get(key)
            if not isinstance(value, torch.Tensor):
                raise ValueError(
                    f"{subject} has a state without the tensor {key!r} (got {value!r}); "
                    f"it is not a state of {type(self).__name__}. {_UNCHANGED}"
                )
            if value.shape != param.shape:
                raise ValueError(
                    f"{subject} has the shape {tuple(param.shape)} but its state's {key!r} "
                    f"has the shape {tuple(value.shape)}: a state of another parameter. "
                    f"{_UNCHANGED}"
                )
            if value.dtype != param.dtype or value.device != param.device:
                raise ValueError(
                    f"{subject} is {_dtype_name(param.dtype)} on {param.device} but its state "
                    f"is {_dtype_name(value.dtype)} on {value.device}: the model was converted "
                    "or moved after the optimizer's first step. To continue, load the "
                    "optimizer's state again, which converts it to the parameters' dtype and "
                    f"device: optimizer.load_state_dict(optimizer.state_dict()). {_UNCHANGED}"
                )

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state saved by :meth:`state_dict`, checked to fit the parameters.

        As ``torch.optim.Optimizer.load_state_dict``: the state's tensors
        take each parameter's dtype and device, and the saved parameter
        groups' hyper-parameters replace the current ones.

        Raises
        ------
        ValueError
            If a loaded state does not fit its parameter (a state of a
            parameter of another shape, or not of this optimizer): the
            optimizer is then left as it was.
        """
        previous = self.state, self.param_groups
        super().load_state_dict(state_dict)
        try:
            for group_index, group in enumerate(self.param_groups):
                for param_index, param in enumerate(group["params"]):
                    state = self.state.get(param)
                    if state:
                        where = f"parameter {param_index} of parameter group {group_index}"
                        self._check_state(
                            state, param, f"{type(self).__name__}: loading a state, {where}"
                        )
        except ValueError:
            # Put back the objects torch's load replaced (set through __dict__,
            # as torch's own __setstate__ sets them).
            self.__dict__.update(state=previous[0], param_groups=previous[1])
            raise

    def _gradient(self, param: torch.Tensor, maximize: bool, where: str):
        """``(rows, gradient)``: the gradient's touched rows (None for a dense
        gradient) and its values there, a new tensor (negated for ``maximize``,
        clipped), checked to be finite."""
        owner = type(self).__name__
        grad = param.grad
        assert grad is not None  # step() passes only parameters with a gradient
        rows = None
        if grad.is_sparse:
            if not self._accepts_sparse_gradients:
                raise RuntimeError(
                    f"{owner} does not support sparse gradients ({where}); FTRL does."
                )
            grad = grad.coalesce()  # duplicate rows summed, rows sorted
            if grad.sparse_dim() == 1:
                rows, values = grad.indices()[0], grad.values()
            else:
                # Not an embedding's gradient: as dense, where the rows with
                # no gradient are left unchanged all the same.
                values = grad.to_dense()
        elif grad.layout != torch.strided:
            raise RuntimeError(f"{owner}: unsupported gradient layout {grad.layout} ({where}).")
        else:
            values = grad
        # A copy, which clipping may change.
        values = torch.neg(values) if maximize else values.clone()
        if not bool(torch.isfinite(values).all()):
            raise ValueError(
                f"{owner}: the gradient of {where} has NaN or infinite values; no parameter "
                "or state was changed."
            )
        return rows, clip_gradient(values)

    def _new_state(self, param: torch.Tensor, settings: Settings, where: str) -> dict:
        """``n = initial_accumulator_value`` and the ``z`` whose closed form is
        nearest the parameter's current value (see :func:`._formulas.initial_z`)."""
        owner = type(self).__name__
        weight = param.detach()
        if not bool(torch.isfinite(weight).all()):
            raise ValueError(
                f"{owner}: {where} has NaN or infinite values, from which no state can "
                f"start. {_UNCHANGED}"
            )
        n = torch.full_like(
            param, settings.initial_accumulator_value, memory_format=torch.preserve_format
        )
        try:
            z = initial_z(weight, n, settings)
        except ValueError as error:
            raise ValueError(f"{owner}: {where}: {error} {_UNCHANGED}") from None
        return {"z": z, "n": n}

    def _update_dense(self, param, state, gradient, settings, group) -> None:
        raise NotImplementedError

    def _update_rows(self, param, state, rows, gradient, settings) -> None:
        raise NotImplementedError


class FTRL(_FTRLBase):
    r"""FTRL-Proximal: per-coordinate learning rates, L1 and L2, sparse gradients.

    The optimizer of McMahan et al., "Ad Click Prediction: a View from the
    Trenches" (KDD 2013, Algorithm 1), as skftrl's estimators compute it
    (see the documentation's "The algorithm" page). Each coordinate of a
    parameter keeps two numbers in ``self.state[param]``: ``"z"``, the
    accumulated gradient less the proximal corrections, and ``"n"``, the sum
    of squared gradients. The parameter is their closed-form weight::

        w = 0                                                    if |z| <= l1
        w = -(z - sign(z) * l1) / ((beta + n ** -lr_power) / lr + l2)   otherwise

    For a gradient ``g`` the step is
    ``sigma = (n_new ** -lr_power - n ** -lr_power) / lr``,
    ``z += g - sigma * w``, ``n += g ** 2``, then the weight of each
    coordinate whose gradient is non-zero is written into the parameter. L1
    makes weights exactly 0, not merely small.

    Sparse gradients (``nn.Embedding(sparse=True)``,
    ``nn.EmbeddingBag(sparse=True)``) update only the rows they touch, with
    the same result as the dense step; rows with no gradient never change.
    A parameter that starts non-zero (a layer's random initialization) keeps
    its exact value until a non-zero gradient reaches it.

    Parameters
    ----------
    params : iterable of tensors or of dicts
        The parameters to optimize (float32 or float64), or parameter groups:
        dicts with ``"params"`` and any hyper-parameter below, which then
        overrides the default for that group (for example an unregularized
        bias: ``{"params": [bias], "l1": 0.0, "l2": 0.0}``).
    lr : float, default=0.1
        The paper's ``alpha``: the scale of the per-coordinate learning rate
        ``lr / (beta + n ** -lr_power)``. skftrl's ``learning_rate``.
        Range (0, inf). A learning-rate scheduler may later take a group's
        ``lr`` to 0: a step then leaves that group as it is.
    beta : float, default=1.0
        Smooths the learning rate of rarely seen coordinates. Range [0, inf).
    l1 : float, default=0.0
        L1 regularization strength (the paper's ``lambda_1``): a coordinate
        whose ``|z|`` is at most ``l1`` has weight exactly 0. Range [0, inf).
    l2 : float, default=0.0
        L2 regularization strength (the paper's ``lambda_2``, twice Keras'
        ``l2_regularization_strength``). Range [0, inf).
    lr_power : float, default=-0.5
        The exponent ``p`` of the learning rate ``lr / (beta + n ** -p)``, as
        in TensorFlow; the paper's -0.5 is the fastest. skftrl's
        ``learning_rate_power``. Range [-1, 0].
    initial_accumulator_value : float, default=0.0
        The value ``n`` starts from (Keras: 0.1). Range [0, inf).
    maximize : bool, default=False
        Maximize the objective (step along the gradient) instead of minimizing it.

    Raises
    ------
    ValueError
        If a hyper-parameter is outside its range or a parameter is not a
        float32 or float64 tensor.

    See Also
    --------
    FTRLAdam : The same closed form, stepped with Adam's moments.
    skftrl.FTRLClassifier : The estimator these formulas come from.

    Notes
    -----
    Gradients are clipped per coordinate to 1e100 (float64) or 1e15
    (float32), so that their squares stay finite; a gradient with a NaN or an
    infinite value raises ``ValueError`` before anything changes, as does a
    hyper-parameter set out of its range in ``param_groups``. The state is in
    the parameter's dtype and device; ``state_dict()`` and
    ``load_state_dict()`` save and restore it, and a resumed run continues
    exactly as an uninterrupted one. The state holds ``z`` and ``n`` for
    every coordinate: twice the parameter's memory.

    Examples
    --------
    >>> import torch
    >>> from skftrl.torch import FTRL
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Linear(3, 1)
    >>> _ = torch.nn.init.zeros_(model.weight)  # weights meant to be sparse start at 0
    >>> optimizer = FTRL(
    ...     [
    ...         {"params": [model.weight], "l1": 5.0},
    ...         {"params": [model.bias], "l1": 0.0, "l2": 0.0},
    ...     ],
    ...     lr=0.5,
    ... )
    >>> X = torch.randn(256, 3)
    >>> y = (X[:, :1] > 0).float()  # only the first input matters
    >>> for _ in range(200):
    ...     optimizer.zero_grad()
    ...     loss = torch.nn.functional.binary_cross_entropy_with_logits(model(X), y)
    ...     loss.backward()
    ...     _ = optimizer.step()
    >>> bool(model.weight[0, 0] > 1)
    True
    >>> (model.weight[0, 1:] == 0).tolist()
    [True, True]
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 0.1,
        beta: float = 1.0,
        l1: float = 0.0,
        l2: float = 0.0,
        lr_power: float = -0.5,
        initial_accumulator_value: float = 0.0,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            beta=beta,
            l1=l1,
            l2=l2,
            lr_power=lr_power,
            initial_accumulator_value=initial_accumulator_value,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _update_dense(self, param, state, gradient, settings, group) -> None:
        z, n = state["z"], state["n"]
        new_root = step_state(z, n, param, gradient, gradient * gradient, settings)
        weight = closed_form_weight(z, new_root, settings)
        # Coordinates without gradient keep their value: the closed form of
        # their unchanged state, or the initial value they have not left.
        param.copy_(torch.where(gradient != 0, weight, param, out=weight))

    def _update_rows(self, param, state, rows, gradient, settings) -> None:
        # The touched rows' state and weights (copies), stepped as by the
        # dense step, then written back.
        z, n = state["z"].index_select(0, rows), state["n"].index_select(0, rows)
        old_weight = param.index_select(0, rows)
        new_root = step_state(z, n, old_weight, gradient, gradient * gradient, settings)
        weight = closed_form_weight(z, new_root, settings)
        torch.where(gradient != 0, weight, old_weight, out=weight)
        state["z"].index_copy_(0, rows, z)
        state["n"].index_copy_(0, rows, n)
        param.index_copy_(0, rows, weight)


class FTRLAdam(_FTRLBase):
    r"""FTRL-Proximal stepped with Adam's bias-corrected moments.

    The closed-form weight and the state ``z``, ``n`` of :class:`FTRL`, with
    Adam's moments in place of the gradient: at step ``t``, with
    ``m = beta1 * m + (1 - beta1) * g`` and ``v = beta2 * v + (1 - beta2) * g ** 2``,
    ``m_hat = m / (1 - beta1 ** t)`` and ``v_hat = v / (1 - beta2 ** t)``::

        direction = m_hat / (sqrt(v_hat) + eps)
        sigma     = (sqrt(n + v_hat) - sqrt(n)) / lr      (n ** -lr_power in general)
        z        += direction - sigma * w
        n        += v_hat

    then ``w`` is the closed form of ``(z, n)``, as for :class:`FTRL`. The
    direction is Adam's normalized step, of size about 1 per coordinate, so
    ``l1`` here is measured in steps rather than in gradient units. Dense
    gradients only. See the user guide for when it helps (mostly it does
    not, against :class:`FTRL`).

    Parameters
    ----------
    params : iterable of tensors or of dicts
        The parameters to optimize (float32 or float64), or parameter groups
        (dicts with ``"params"`` and hyper-parameters overriding the defaults).
    lr : float, default=0.1
        The scale of the per-coordinate learning rate
        ``lr / (beta + n ** -lr_power)``. Range (0, inf); a scheduler may
        later take it to 0, as for :class:`FTRL`.
    beta : float, default=1.0
        Smooths the learning rate of the first steps. Range [0, inf).
    l1 : float, default=0.0
        L1 regularization strength, a threshold on ``|z|``. Range [0, inf).
    l2 : float, default=0.0
        L2 regularization strength. Range [0, inf).
    lr_power : float, default=-0.5
        The exponent ``p`` of the learning rate ``lr / (beta + n ** -p)``.
        Range [-1, 0].
    initial_accumulator_value : float, default=0.0
        The value ``n`` starts from. Range [0, inf).
    betas : tuple of two floats, default=(0.9, 0.999)
        Adam's decay rates of the first and second moments. Each in [0, 1).
    eps : float, default=1e-8
        Added to ``sqrt(v_hat)`` in the direction's denominator. Range (0, inf).
    maximize : bool, default=False
        Maximize the objective instead of minimizing it.

    Raises
    ------
    ValueError
        If a hyper-parameter is outside its range or a parameter is not a
        float32 or float64 tensor.

    See Also
    --------
    FTRL : FTRL-Proximal with the gradient itself, sparse gradients included.

    Notes
    -----
    The state of each parameter holds ``z``, ``n``, ``exp_avg`` (``m``),
    ``exp_avg_sq`` (``v``) and ``step`` (``t``). A parameter that starts
    non-zero keeps its value until a gradient moves it, as with :class:`FTRL`.

    Examples
    --------
    >>> import torch
    >>> from skftrl.torch import FTRLAdam
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Linear(3, 1)
    >>> optimizer = FTRLAdam(model.parameters(), lr=1.0)
    >>> X = torch.randn(64, 3)
    >>> y = X @ torch.tensor([[1.0], [-2.0], [0.0]])
    >>> for _ in range(300):
    ...     optimizer.zero_grad()
    ...     loss = torch.nn.functional.mse_loss(model(X), y)
    ...     loss.backward()
    ...     _ = optimizer.step()
    >>> bool(loss < 1e-6)
    True
    """

    _accepts_sparse_gradients = False
    _state_tensors = ("z", "n", "exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 0.1,
        beta: float = 1.0,
        l1: float = 0.0,
        l2: float = 0.0,
        lr_power: float = -0.5,
        initial_accumulator_value: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            beta=beta,
            l1=l1,
            l2=l2,
            lr_power=lr_power,
            initial_accumulator_value=initial_accumulator_value,
            betas=betas,
            eps=eps,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    @staticmethod
    def _check_settings(owner: str, settings: dict[str, Any], where: str = "") -> None:
        _FTRLBase._check_settings(owner, settings, where)
        betas = settings.get("betas")
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
            unchanged = f" {_UNCHANGED}" if where else ""
            raise ValueError(
                f"{owner}: betas{where} must be a pair of numbers in [0, 1); got "
                f"{betas!r}.{unchanged}"
            )
        for index, value in enumerate(betas):
            _check_number(
                owner, f"betas[{index}]", value, lambda v: 0 <= v < 1, "a number in [0, 1)", where
            )
        _check_number(
            owner,
            "eps",
            settings.get("eps"),
            lambda v: 0 < v < math.inf,
            "a finite number > 0",
            where,
        )

    def _check_state(self, state: dict, param: torch.Tensor, subject: str) -> None:
        super()._check_state(state, param, subject)
        step = state.get("step")
        if not (isinstance(step, int) and not isinstance(step, bool) and step >= 0):
            raise ValueError(
                f"{subject} has a state whose 'step' is not a whole number >= 0 (got "
                f"{step!r}). {_UNCHANGED}"
            )

    def _new_state(self, param: torch.Tensor, settings: Settings, where: str) -> dict:
        return {
            **super()._new_state(param, settings, where),
            "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
            "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
            "step": 0,
        }

    def _update_dense(self, param, state, gradient, settings, group) -> None:
        beta1, beta2 = (float(b) for b in group["betas"])
        state["step"] += 1
        step = state["step"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg *= beta1
        exp_avg += (1 - beta1) * gradient
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * (gradient * gradient)
        first = exp_avg / (1 - beta1**step)
        second = exp_avg_sq / (1 - beta2**step)
        direction = torch.sqrt(second)
        direction += float(group["eps"])
        torch.div(first, direction, out=direction)
        z, n = state["z"], state["n"]
        new_root = step_state(z, n, param, direction, second, settings)
        weight = closed_form_weight(z, new_root, settings)
        moved = (direction != 0) | (second != 0)
        param.copy_(torch.where(moved, weight, param, out=weight))
