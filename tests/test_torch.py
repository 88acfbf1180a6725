"""skftrl.torch: FTRL and FTRLAdam for PyTorch.

Every result is compared with a reference computed another way: skftrl's
numpy engine (exactness), the dense step (the sparse step), a slow loop over
coordinates in Python floats (FTRLAdam), the closed form written again here
in numpy (initial values), an uninterrupted run (resuming).

Skipped where torch is not installed, unless SKFTRL_REQUIRE_TORCH=1 (CI's
stage "every test"), which makes a missing torch a failure.
"""

import io
import math
import os

import numpy as np
import pytest
from numpy.testing import assert_allclose

if os.environ.get("SKFTRL_REQUIRE_TORCH") == "1":
    import torch
else:
    torch = pytest.importorskip(
        "torch", reason='PyTorch is not installed (pip install "skftrl[torch]")'
    )

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a
from skftrl.torch import FTRL, FTRLAdam

DTYPES = [torch.float64, torch.float32]
NUMPY_DTYPE = {torch.float64: np.float64, torch.float32: np.float32}
SAME_SIZE_INTEGER = {torch.float64: torch.int64, torch.float32: torch.int32}


# ------------------------------------------------------------------ exactness
EXACTNESS_ROWS = 2000

EXACTNESS_SETTINGS = [
    dict(lr=0.1),
    dict(lr=0.2, beta=0.5, l1=0.5, l2=0.3, lr_power=-0.3, initial_accumulator_value=0.1),
    dict(lr=0.05, beta=2.0, l1=1.0, l2=1.0, initial_accumulator_value=0.5),
    dict(lr=0.3, beta=0.0, l1=0.2, l2=0.0, lr_power=-1.0),
]


@pytest.fixture(scope="module")
def a9a_rows():
    X, y, _, _ = load_a9a()
    return X[:EXACTNESS_ROWS], (y[:EXACTNESS_ROWS] == 1).astype(np.float64)


def train_logistic_model(X, targets, sparse, settings):
    """A logistic model in torch, one row per step: an EmbeddingBag summing the
    row's weights times its values, plus a bias in a group of its own, unregularized."""
    embedding = torch.nn.EmbeddingBag(X.shape[1], 1, mode="sum", sparse=sparse).double()
    torch.nn.init.zeros_(embedding.weight)
    bias = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    optimizer = FTRL(
        [{"params": [embedding.weight]}, {"params": [bias], "l1": 0.0, "l2": 0.0}], **settings
    )
    offsets = torch.tensor([0])
    for row in range(X.shape[0]):
        start, end = X.indptr[row], X.indptr[row + 1]
        columns = torch.from_numpy(X.indices[start:end].astype(np.int64))
        values = torch.from_numpy(X.data[start:end])
        optimizer.zero_grad()
        margin = embedding(columns, offsets, per_sample_weights=values)[:, 0] + bias
        target = torch.tensor([targets[row]], dtype=torch.float64)
        torch.nn.functional.binary_cross_entropy_with_logits(
            margin, target, reduction="sum"
        ).backward()
        optimizer.step()
    return embedding.weight, bias, optimizer


@pytest.mark.parametrize("settings", EXACTNESS_SETTINGS)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_logistic_model_has_the_estimators_state(a9a_rows, sparse, settings):
    X, targets = a9a_rows
    weight, bias, optimizer = train_logistic_model(X, targets, sparse, settings)
    estimator = FTRLClassifier(
        engine="numpy",
        learning_rate=settings["lr"],
        beta=settings.get("beta", 1.0),
        l1=settings.get("l1", 0.0),
        l2=settings.get("l2", 0.0),
        learning_rate_power=settings.get("lr_power", -0.5),
        initial_accumulator_value=settings.get("initial_accumulator_value", 0.0),
    ).partial_fit(X, np.where(targets == 1, 1, -1), classes=[-1, 1])
    state, bias_state = optimizer.state[weight], optimizer.state[bias]
    assert_allclose(state["z"][:, 0].numpy(), estimator.z_[0], rtol=1e-12, atol=0)
    assert_allclose(state["n"][:, 0].numpy(), estimator.n_[0], rtol=1e-12, atol=0)
    assert_allclose(bias_state["z"].numpy(), estimator.z_intercept_, rtol=1e-12, atol=0)
    assert_allclose(bias_state["n"].numpy(), estimator.n_intercept_, rtol=1e-12, atol=0)
    assert_allclose(weight.detach()[:, 0].numpy(), estimator.coef_[0], rtol=1e-12, atol=0)
    assert_allclose(bias.detach().numpy(), estimator.intercept_, rtol=1e-12, atol=0)
    if settings.get("l1", 0.0) > 0:
        # L1 gives exact zeros, where the estimator has them.
        assert np.array_equal(weight.detach()[:, 0].numpy() == 0, estimator.coef_[0] == 0)
        assert (estimator.coef_[0] == 0).any()


# ----------------------------------------------- sparse step == dense step
def embedding_pair(dtype, initial, settings, n_rows=40, dim=4, seed=0):
    """An EmbeddingBag with sparse gradients and a parameter of the same
    initial values for the dense step, each with its FTRL."""
    generator = torch.Generator().manual_seed(seed)
    if initial == "zeros":
        start = torch.zeros(n_rows, dim, dtype=dtype)
    else:
        start = torch.randn(n_rows, dim, generator=generator, dtype=torch.float64).to(dtype)
    model = torch.nn.EmbeddingBag(n_rows, dim, mode="sum", sparse=True).to(dtype)
    with torch.no_grad():
        model.weight.copy_(start)
    dense = torch.nn.Parameter(start.clone())
    return start, model, dense, FTRL([model.weight], **settings), FTRL([dense], **settings)


def random_bags(generator, n_rows, n_bags=6, length=5):
    """Bags of rows (a few rows repeated across and within bags), per-sample
    weights with exact zeros among them, and offsets."""
    indices = torch.randint(0, n_rows // 2, (n_bags * length,), generator=generator)
    indices[::7] = indices[0]  # a row several times
    weights = torch.randn(n_bags * length, generator=generator, dtype=torch.float64)
    weights[::5] = 0.0  # occurrences that contribute no gradient
    return indices, weights, torch.arange(0, n_bags * length, length)


SPARSE_SETTINGS = [
    dict(lr=0.5),
    dict(lr=0.3, beta=0.5, l1=0.4, l2=0.2),
    dict(lr=0.3, beta=1.0, l1=0.1, l2=0.5, lr_power=-0.3, initial_accumulator_value=0.1),
    dict(lr=0.2, beta=0.0, l1=0.0, l2=0.0, lr_power=0.0),
    dict(lr=0.2, beta=2.0, l1=0.3, lr_power=-1.0),
]


@pytest.mark.parametrize("settings", SPARSE_SETTINGS)
@pytest.mark.parametrize("initial", ["zeros", "random"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sparse_step_equals_dense_step(dtype, initial, settings):
    start, model, dense, sparse_optimizer, dense_optimizer = embedding_pair(
        dtype, initial, settings
    )
    generator = torch.Generator().manual_seed(1)
    touched = torch.zeros(start.shape[0], dtype=torch.bool)
    for _ in range(12):
        indices, weights, offsets = random_bags(generator, start.shape[0])
        target = torch.randn(len(offsets), start.shape[1], generator=generator, dtype=dtype)
        before = model.weight.detach().clone()
        sparse_optimizer.zero_grad()
        output = model(indices, offsets, per_sample_weights=weights.to(dtype))
        ((output - target) ** 2).sum().backward()
        gradient = model.weight.grad
        assert gradient.is_sparse and not gradient.is_coalesced()
        # The same gradient, dense: autograd's dense backward sums a row's
        # occurrences in another order, which rounds differently.
        dense.grad = gradient.coalesce().to_dense()
        sparse_optimizer.step()
        dense_optimizer.step()
        assert torch.equal(model.weight, dense)
        for key in ("z", "n"):
            assert torch.equal(
                sparse_optimizer.state[model.weight][key], dense_optimizer.state[dense][key]
            )
        # Rows without gradient did not change.
        untouched = torch.ones(start.shape[0], dtype=torch.bool)
        untouched[indices[weights != 0]] = False
        assert torch.equal(model.weight.detach()[untouched], before[untouched])
        touched |= ~untouched
    # Never-touched rows still hold their initial values; the others moved.
    assert (~touched).any() and touched.any()
    assert torch.equal(model.weight.detach()[~touched], start[~touched])
    assert not torch.equal(model.weight.detach()[touched], start[touched])


def test_sparse_gradient_of_several_sparse_dimensions_is_stepped_as_dense():
    settings = dict(lr=0.4, l1=0.1, l2=0.2)
    start = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    sparse_param = torch.nn.Parameter(start.clone())
    dense_param = torch.nn.Parameter(start.clone())
    gradient = torch.sparse_coo_tensor(
        torch.tensor([[0, 2, 2], [1, 0, 2]]),
        torch.tensor([0.5, -1.0, 2.0]),
        (5, 3),
        check_invariants=True,
    ).double()
    for param, grad in ((sparse_param, gradient), (dense_param, gradient.to_dense())):
        optimizer = FTRL([param], **settings)
        for _ in range(3):
            param.grad = grad.clone()
            optimizer.step()
    assert torch.equal(sparse_param, dense_param)
    assert torch.equal(sparse_param.detach()[1], start[1])  # no gradient there


# ------------------------------------------------------------ initial values
def reference_weight(z, root_n, lr, beta, l1, l2):
    """The closed form of docs/algorithm.rst in numpy, with the engine's order
    of operations: the denominator negated, ``-1`` where it is 0."""
    dtype = z.dtype.type
    negated = dtype(root_n) / dtype(-lr) - dtype(beta / lr + l2)
    if negated == 0:
        negated = dtype(-1.0)
    shrunk = z - np.clip(z, dtype(-l1), dtype(l1)) if l1 > 0 else z
    return shrunk / negated


def next_different_weight(z, weight, towards, hyper, limit=64):
    """The closed form of the first float after ``z`` towards ``towards``
    whose closed form differs from ``weight``."""
    candidate, found = z.copy(), weight.copy()
    pending = np.ones(z.shape, dtype=bool)
    for _ in range(limit):
        candidate = np.nextafter(candidate, towards.astype(z.dtype))
        candidate_weight = reference_weight(candidate, **hyper)
        changed = pending & (candidate_weight != weight)
        found[changed] = candidate_weight[changed]
        pending &= ~changed
    assert not pending[weight != 0].any()
    return found


def initial_values(dtype, seed):
    """Random values over many magnitudes and edge values: zeros of both
    signs, subnormals, the smallest and largest normal floats, powers of two
    and their neighbours."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(seed)
    spread = rng.normal(size=3000) * 10.0 ** rng.integers(-30, 10, size=3000)
    scales = rng.normal(scale=0.1, size=3000)  # a layer's initialization
    twos = np.array([2.0**k for k in range(-20, 20)])
    edges = [
        0.0,
        -0.0,
        float(info.smallest_subnormal),
        -float(info.smallest_subnormal),
        float(info.tiny),
        float(info.tiny) * 3,
        1.0,
        -1.0,
        1e6,
        -3e8,
        float(info.max) / 1e12,
    ]
    values = np.concatenate([spread, scales, twos, -twos, edges]).astype(dtype)
    neighbours = np.concatenate(
        [np.nextafter(twos.astype(dtype), dtype(0)), np.nextafter(twos.astype(dtype), dtype(9))]
    )
    return np.concatenate([values, neighbours])


INITIAL_SETTINGS = [
    dict(lr=0.1),
    dict(lr=0.1, beta=1.0, l1=0.5, l2=0.3),
    dict(lr=0.7, beta=0.3, l1=2.0, l2=1.5, lr_power=-0.3, initial_accumulator_value=0.1),
    dict(lr=1.0, beta=3.0, l1=1e-3, l2=0.0, lr_power=0.0),
    dict(lr=0.2, beta=0.5, l1=0.1, l2=2.0, lr_power=-1.0, initial_accumulator_value=2.0),
    dict(lr=0.3, beta=0.0, l1=0.01, l2=0.0),  # a zero denominator where n = 0
    dict(lr=0.05, beta=1.0, l1=100.0, l2=0.1, initial_accumulator_value=0.5),  # large l1
]


@pytest.mark.parametrize("settings", INITIAL_SETTINGS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_initial_values_are_kept(dtype, settings):
    values = initial_values(NUMPY_DTYPE[dtype], seed=3)
    start = torch.from_numpy(values.copy())
    param = torch.nn.Parameter(start.clone())
    optimizer = FTRL([param], **settings)
    # A step whose gradient is 0 everywhere, then steps touching a few coordinates.
    param.grad = torch.zeros_like(param)
    optimizer.step()
    # The same bits, zeros' signs included.
    assert torch.equal(
        param.detach().view(SAME_SIZE_INTEGER[dtype]), start.view(SAME_SIZE_INTEGER[dtype])
    )
    moved = torch.zeros_like(param, dtype=torch.bool)
    moved[::97] = True
    for _ in range(3):
        param.grad = torch.where(moved, torch.full_like(param, 0.25), torch.zeros_like(param))
        optimizer.step()
    assert torch.equal(param.detach()[~moved], start[~moved])
    assert not torch.equal(param.detach()[moved], start[moved])
    assert torch.isfinite(optimizer.state[param]["z"]).all()


@pytest.mark.parametrize("settings", INITIAL_SETTINGS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_initial_state_gives_the_initial_values(dtype, settings):
    """The initial z's closed form is the initial value wherever any z gives
    it; where none does, z's neighbours' closed forms lie on both sides of
    it, and by monotonicity no float z gives it."""
    np_dtype = NUMPY_DTYPE[dtype]
    values = initial_values(np_dtype, seed=4)
    param = torch.nn.Parameter(torch.from_numpy(values.copy()))
    optimizer = FTRL([param], **settings)
    param.grad = torch.zeros_like(param)
    optimizer.step()
    z = optimizer.state[param]["z"].numpy()
    n = optimizer.state[param]["n"].numpy()
    iav = settings.get("initial_accumulator_value", 0.0)
    assert np.all(n == np_dtype(iav))
    # The root of n, computed alone (one element: the C library's pow).
    power = settings.get("lr_power", -0.5)
    root = torch.tensor([iav], dtype=dtype)
    root = torch.sqrt(root) if power == -0.5 else torch.pow(root, -power)
    hyper = dict(
        lr=settings["lr"],
        beta=settings.get("beta", 1.0),
        l1=settings.get("l1", 0.0),
        l2=settings.get("l2", 0.0),
        root_n=root.numpy()[0],
    )
    weight = reference_weight(z, **hyper)
    exact = weight == values
    # w decreases as z increases (several z can give the same w): a weight
    # above the value needs a larger z, and the first larger z whose weight
    # differs must give a weight below the value; and the other way round.
    larger = weight > values
    beyond = next_different_weight(z, weight, np.where(larger, np.inf, -np.inf), hyper)
    skipped = np.where(larger, beyond < values, beyond > values)
    assert np.all(exact | skipped)
    assert exact[values == 0].all()
    if hyper["l1"] == 0:
        # Most values are quotients; with L1, z is near +-l1, whose floats are
        # coarser than the weight's, and fewer are.
        assert exact.mean() > 0.8


def test_no_z_gives_some_initial_values():
    """Why the parameter keeps its own value rather than its state's closed
    form: with the defaults (weight = -z / 10 for n = 0), 0.11 is no quotient
    of a float by 10, so no initial state gives it."""
    value = np.float64(0.11)
    z = np.float64(-1.1)
    candidates = [z]
    for _ in range(20):
        candidates += [np.nextafter(candidates[-1], np.inf)]
    candidates += [z]
    for _ in range(20):
        candidates += [np.nextafter(candidates[-1], -np.inf)]
    weights = np.array(
        [reference_weight(np.array([c]), 0.0, 0.1, 1.0, 0.0, 0.0)[0] for c in candidates]
    )
    assert not (weights == value).any()
    assert (weights < value).any() and (weights > value).any()
    param = torch.nn.Parameter(torch.tensor([value]))
    optimizer = FTRL([param])
    param.grad = torch.zeros(1, dtype=torch.float64)
    optimizer.step()
    assert param.item() == value


def test_initial_value_too_large_for_the_state_raises_before_any_change():
    first = torch.nn.Parameter(torch.tensor([0.5, 0.0], dtype=torch.float64))
    param = torch.nn.Parameter(torch.tensor([1e300, 0.0], dtype=torch.float64))
    optimizer = FTRL([first, param], lr=1e-10)
    first.grad = torch.ones(2, dtype=torch.float64)
    param.grad = torch.ones(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="too large for FTRL's state"):
        optimizer.step()
    assert torch.equal(first.detach(), torch.tensor([0.5, 0.0], dtype=torch.float64))
    assert torch.equal(param.detach(), torch.tensor([1e300, 0.0], dtype=torch.float64))


# ------------------------------------------------------------- state_dict
def wide_and_deep(dtype, seed):
    torch.manual_seed(seed)
    wide = torch.nn.EmbeddingBag(30, 1, mode="sum", sparse=True).to(dtype)
    deep = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    return torch.nn.ModuleDict({"wide": wide, "deep": deep.to(dtype)})


def make_optimizer(kind, model):
    groups = [
        {"params": [model["wide"].weight], "l1": 0.05, "l2": 0.1},
        {"params": list(model["deep"].parameters()), "lr_power": -0.3},
    ]
    if kind == "FTRL":
        return FTRL(groups, lr=0.2)
    groups[0]["params"] = [model["wide"].weight]
    model["wide"].sparse = False
    return FTRLAdam(groups, lr=0.2, betas=(0.8, 0.99))


def train(model, optimizer, batches):
    for indices, offsets, dense, target in batches:
        optimizer.zero_grad()
        output = model["wide"](indices, offsets)[:, 0] + model["deep"](dense)[:, 0]
        torch.nn.functional.binary_cross_entropy_with_logits(output, target).backward()
        optimizer.step()


def batches(dtype, count, seed):
    generator = torch.Generator().manual_seed(seed)
    made = []
    for _ in range(count):
        indices = torch.randint(0, 30, (40,), generator=generator)
        dense = torch.randn(8, 6, generator=generator, dtype=torch.float64).to(dtype)
        target = (torch.rand(8, generator=generator) < 0.3).to(dtype)
        made.append((indices, torch.arange(0, 40, 5), dense, target))
    return made


@pytest.mark.parametrize("kind", ["FTRL", "FTRLAdam"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_state_dict_resumes_bit_for_bit(kind, dtype):
    first, second = batches(dtype, 6, seed=5), batches(dtype, 6, seed=6)
    uninterrupted = wide_and_deep(dtype, seed=7)
    optimizer = make_optimizer(kind, uninterrupted)
    train(uninterrupted, optimizer, first + second)

    interrupted = wide_and_deep(dtype, seed=7)
    stopped = make_optimizer(kind, interrupted)
    train(interrupted, stopped, first)
    saved = io.BytesIO()
    torch.save({"model": interrupted.state_dict(), "optimizer": stopped.state_dict()}, saved)
    saved.seek(0)
    checkpoint = torch.load(saved, weights_only=True)

    resumed = wide_and_deep(dtype, seed=8)  # other initial values, replaced by the loaded ones
    resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer = make_optimizer(kind, resumed)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    train(resumed, resumed_optimizer, second)

    for name, param in uninterrupted.named_parameters():
        other = dict(resumed.named_parameters())[name]
        assert other.dtype == dtype
        assert torch.equal(param, other), name
        state, other_state = optimizer.state[param], resumed_optimizer.state[other]
        assert state.keys() == other_state.keys()
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                assert value.dtype == dtype
                assert torch.equal(value, other_state[key]), (name, key)
            else:
                assert value == other_state[key]


# ---------------------------------------------------------------- FTRLAdam
def reference_ftrl_adam(start, gradients, lr, beta, l1, l2, lr_power, iav, betas, eps):
    """FTRLAdam over Python floats, one coordinate at a time, from its formula."""
    beta1, beta2 = betas

    def root(n):
        return math.sqrt(n) if lr_power == -0.5 else n**-lr_power

    def denominator(n):
        return (beta + root(n)) / lr + l2

    def weight(z, n):
        if abs(z) <= l1:
            return 0.0
        return -(z - math.copysign(l1, z)) / denominator(n)

    results = []
    for i, w0 in enumerate(start):
        # The initial state whose weight is w0: the closed form solved for z.
        z = -(w0 * denominator(iav) + math.copysign(l1, w0)) if w0 != 0 else 0.0
        n, m, v, w, moved = iav, 0.0, 0.0, w0, False
        for t, gradient in enumerate(gradients, start=1):
            g = gradient[i]
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
            direction = m_hat / (math.sqrt(v_hat) + eps)
            sigma = (root(n + v_hat) - root(n)) / lr
            z += direction - sigma * w
            n += v_hat
            moved = moved or direction != 0 or v_hat != 0
            if moved:
                w = weight(z, n)
        results.append((w, z, n, m, v))
    return np.array(results)


ADAM_SETTINGS = [
    dict(lr=0.1, beta=1.0, l1=0.0, l2=0.0, lr_power=-0.5, iav=0.0, betas=(0.9, 0.999), eps=1e-8),
    dict(lr=0.3, beta=0.5, l1=0.7, l2=0.4, lr_power=-0.3, iav=0.1, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.05, beta=2.0, l1=2.0, l2=0.0, lr_power=-0.5, iav=0.0, betas=(0.0, 0.5), eps=1e-3),
]


@pytest.mark.parametrize("settings", ADAM_SETTINGS)
def test_ftrl_adam_follows_its_formula(settings):
    rng = np.random.default_rng(9)
    start = rng.normal(scale=0.5, size=24)
    start[:6] = 0.0
    gradients = rng.normal(size=(30, 24)) * rng.choice([0.0, 0.01, 1.0, 10.0], size=(30, 24))
    gradients[:, 6:9] = 0.0  # never moved: keep their initial values
    gradients[:10, 9:12] = 0.0  # moved only later
    expected = reference_ftrl_adam(start.tolist(), gradients.tolist(), **settings)

    param = torch.nn.Parameter(torch.from_numpy(start.copy()))
    optimizer = FTRLAdam(
        [param],
        lr=settings["lr"],
        beta=settings["beta"],
        l1=settings["l1"],
        l2=settings["l2"],
        lr_power=settings["lr_power"],
        initial_accumulator_value=settings["iav"],
        betas=settings["betas"],
        eps=settings["eps"],
    )
    for gradient in gradients:
        param.grad = torch.from_numpy(gradient.copy())
        optimizer.step()
    state = optimizer.state[param]
    assert state["step"] == len(gradients)
    assert_allclose(param.detach().numpy(), expected[:, 0], rtol=1e-12, atol=1e-15)
    for column, key in enumerate(["z", "n", "exp_avg", "exp_avg_sq"], start=1):
        assert_allclose(state[key].numpy(), expected[:, column], rtol=1e-12, atol=1e-15)
    assert torch.equal(param.detach()[6:9], torch.from_numpy(start[6:9]))
    if settings["l1"] > 0:
        assert (param.detach() == 0).any()


def test_ftrl_adam_rejects_sparse_gradients():
    model = torch.nn.Embedding(10, 2, sparse=True)
    optimizer = FTRLAdam(model.parameters())
    model(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="FTRLAdam does not support sparse gradients"):
        optimizer.step()


# ------------------------------------------------------------- behaviour
@pytest.mark.parametrize("dtype", DTYPES)
def test_maximize_steps_along_the_gradient(dtype):
    generator = torch.Generator().manual_seed(10)
    start = torch.randn(7, 3, generator=generator, dtype=torch.float64).to(dtype)
    gradients = [torch.randn(7, 3, generator=generator, dtype=torch.float64).to(dtype)]
    gradients += [torch.randn(7, 3, generator=generator, dtype=torch.float64).to(dtype)]
    maximizing, minimizing = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    up = FTRL([maximizing], l1=0.1, maximize=True)
    down = FTRL([minimizing], l1=0.1)
    for gradient in gradients:
        maximizing.grad, minimizing.grad = gradient.clone(), -gradient
        up.step()
        down.step()
    assert torch.equal(maximizing, minimizing)
    assert not torch.equal(maximizing.detach(), start)


@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_gradients_give_a_finite_state(dtype):
    info = torch.finfo(dtype)
    gradient = torch.tensor([info.max, -info.max, info.tiny, 1e-30, 0.0, 1e30], dtype=dtype)
    for settings in (dict(), dict(beta=0.0, l2=0.0), dict(l1=1.0, l2=1.0)):
        param = torch.nn.Parameter(torch.zeros(6, dtype=dtype))
        optimizer = FTRL([param], **settings)
        for _ in range(5):
            param.grad = gradient.clone()
            optimizer.step()
        assert_finite_state(optimizer, param, settings)


def assert_finite_state(optimizer, param, settings):
    state = optimizer.state[param]
    for tensor in (param.detach(), state["z"], state["n"]):
        assert torch.isfinite(tensor).all(), settings


# Hyper-parameters at the ends of their ranges, by the dtype's range.
EXTREME_SETTINGS = {
    torch.float64: [
        dict(lr=1e300),
        dict(lr=1e300, beta=0.0),
        dict(lr=1e-300),
        dict(beta=1e300),
        dict(l1=1e300),
        dict(l2=1e300),
        dict(initial_accumulator_value=1e300),
        dict(lr=2.0, beta=1e-320),  # beta / lr underflows
    ],
    torch.float32: [
        dict(lr=1e30),
        dict(lr=1e30, beta=0.0),
        dict(lr=1e-30),
        dict(beta=1e30),
        dict(l1=1e30),
        dict(l2=1e30),
        dict(initial_accumulator_value=1e30),
        dict(lr=2.0, beta=1e-44),
    ],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("optimizer_class", [FTRL, FTRLAdam])
def test_extreme_hyper_parameters_give_a_finite_state(dtype, optimizer_class):
    generator = torch.Generator().manual_seed(11)
    for settings in EXTREME_SETTINGS[dtype]:
        param = torch.nn.Parameter(torch.zeros(20, dtype=dtype))
        optimizer = optimizer_class([param], **settings)
        for _ in range(5):
            param.grad = torch.randn(20, generator=generator, dtype=torch.float64).to(dtype)
            optimizer.step()
        assert_finite_state(optimizer, param, settings)
        if "l1" in settings:
            assert (param == 0).all()  # |z| never reaches l1


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_gradient_raises_before_any_change(bad):
    first = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    second = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))
    optimizer = FTRL([first, second])
    first.grad = torch.ones(3, dtype=torch.float64)
    second.grad = torch.ones(2, dtype=torch.float64)
    optimizer.step()
    state = {key: value.clone() for key, value in optimizer.state[first].items()}
    first.grad = torch.ones(3, dtype=torch.float64)
    second.grad = torch.tensor([1.0, bad], dtype=torch.float64)
    before = first.detach().clone()
    with pytest.raises(ValueError, match="parameter 1 of parameter group 0 has NaN or infinite"):
        optimizer.step()
    assert torch.equal(first.detach(), before)
    for key, value in state.items():
        assert torch.equal(optimizer.state[first][key], value)


def test_parameters_without_gradient_and_group_settings():
    used, unused = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.ones(2))
    optimizer = FTRL([{"params": [used], "l1": 0.0}, {"params": [unused], "lr": 0.3}], l1=5.0)
    assert optimizer.param_groups[0]["l1"] == 0.0 and optimizer.param_groups[1]["l1"] == 5.0
    assert optimizer.param_groups[1]["lr"] == 0.3 and optimizer.param_groups[0]["lr"] == 0.1
    used.grad = torch.ones(2)
    optimizer.step()
    assert unused not in optimizer.state and torch.equal(unused.detach(), torch.ones(2))
    # One step of gradient 1 from 0: z = 1, n = 1, w = -1 / ((beta + 1) / lr).
    assert torch.allclose(used.detach(), torch.full((2,), -0.1 / 2.0))


# --------------------------------------------------------- bad parameters
BAD_SETTINGS = [
    ("lr", 0.0),
    ("lr", -0.1),
    ("lr", float("inf")),
    ("lr", float("nan")),
    ("lr", "0.1"),
    ("lr", True),
    ("beta", -1.0),
    ("beta", float("inf")),
    ("l1", -0.5),
    ("l2", -1e-9),
    ("l2", None),
    ("lr_power", 0.5),
    ("lr_power", -1.5),
    ("initial_accumulator_value", -0.1),
    ("maximize", "yes"),
]


@pytest.mark.parametrize("optimizer_class", [FTRL, FTRLAdam])
@pytest.mark.parametrize(("name", "value"), BAD_SETTINGS)
def test_bad_hyper_parameters_raise(optimizer_class, name, value):
    param = torch.nn.Parameter(torch.zeros(2))
    message = f"{optimizer_class.__name__}: {name} must be"
    with pytest.raises(ValueError, match=message):
        optimizer_class([param], **{name: value})
    optimizer = optimizer_class([param])
    with pytest.raises(ValueError, match=message):
        optimizer.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1))], name: value})
    assert len(optimizer.param_groups) == 1


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("betas", (1.0, 0.9), r"betas\[0\] must be a number in \[0, 1\)"),
        ("betas", (0.9, -0.1), r"betas\[1\] must be"),
        ("betas", (0.9,), "betas must be a pair"),
        ("eps", 0.0, "eps must be a finite number > 0"),
        ("eps", -1e-8, "eps must be"),
    ],
)
def test_bad_adam_hyper_parameters_raise(name, value, message):
    with pytest.raises(ValueError, match=message):
        FTRLAdam([torch.nn.Parameter(torch.zeros(2))], **{name: value})


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64])
def test_unsupported_parameter_dtype_raises(dtype):
    with pytest.raises(ValueError, match="FTRL optimizes float32 and float64"):
        FTRL([torch.zeros(2, dtype=dtype)])


# ------------------------------------------- hyper-parameters changed between steps
def reference_ftrl(gradients, lrs, beta, l1, l2):
    """FTRL over Python floats, one coordinate at a time, from docs/algorithm.rst,
    starting at 0, with the learning rate of each step; a step whose learning
    rate is 0 changes nothing."""
    results = []
    for i in range(len(gradients[0])):
        z, n, w = 0.0, 0.0, 0.0
        for gradient, lr in zip(gradients, lrs):
            g = gradient[i]
            if lr == 0:
                continue
            sigma = (math.sqrt(n + g * g) - math.sqrt(n)) / lr
            z += g - sigma * w
            n += g * g
            if g != 0:
                shrunk = 0.0 if abs(z) <= l1 else z - math.copysign(l1, z)
                w = -shrunk / ((beta + math.sqrt(n)) / lr + l2)
        results.append((w, z, n))
    return np.array(results)


@pytest.mark.parametrize("scheduler", ["PolynomialLR", "LinearLR"])
def test_a_step_with_lr_0_changes_nothing_and_later_steps_continue(scheduler):
    rng = np.random.default_rng(12)
    gradients = rng.normal(size=(12, 8)) * rng.choice([0.0, 0.5, 2.0], size=(12, 8))
    param = torch.nn.Parameter(torch.zeros(8, dtype=torch.float64))
    optimizer = FTRL([param], lr=0.3, beta=0.5, l1=0.2, l2=0.1)
    if scheduler == "PolynomialLR":
        schedule = torch.optim.lr_scheduler.PolynomialLR(optimizer, total_iters=4, power=2.0)
    else:
        schedule = torch.optim.lr_scheduler.LinearLR(
            optimizer, start_factor=1.0, end_factor=0.0, total_iters=4
        )
    lrs = []
    for step, gradient in enumerate(gradients):
        if step == 8:  # a new schedule after the old one ended at 0
            optimizer.param_groups[0]["lr"] = 0.25
        lrs.append(optimizer.param_groups[0]["lr"])
        param.grad = torch.from_numpy(gradient.copy())
        before = param.detach().clone()
        optimizer.step()
        if lrs[-1] == 0:
            assert torch.equal(param.detach(), before)
        if step < 8:
            schedule.step()
    assert lrs[4:8] == [0.0] * 4 and lrs[8:] == [0.25] * 4
    expected = reference_ftrl(gradients.tolist(), lrs, beta=0.5, l1=0.2, l2=0.1)
    state = optimizer.state[param]
    assert_allclose(param.detach().numpy(), expected[:, 0], rtol=1e-12, atol=1e-15)
    assert_allclose(state["z"].numpy(), expected[:, 1], rtol=1e-12, atol=1e-15)
    assert_allclose(state["n"].numpy(), expected[:, 2], rtol=1e-12, atol=1e-15)
    assert torch.isfinite(state["z"]).all()


def test_ftrl_adam_step_with_lr_0_changes_nothing():
    settings = ADAM_SETTINGS[1]
    rng = np.random.default_rng(13)
    start = rng.normal(scale=0.5, size=10)
    gradients = rng.normal(size=(9, 10))
    zero_steps = {3, 4, 7}
    kept = [gradient for step, gradient in enumerate(gradients) if step not in zero_steps]
    expected = reference_ftrl_adam(start.tolist(), [g.tolist() for g in kept], **settings)
    param = torch.nn.Parameter(torch.from_numpy(start.copy()))
    optimizer = FTRLAdam(
        [param],
        lr=settings["lr"],
        beta=settings["beta"],
        l1=settings["l1"],
        l2=settings["l2"],
        lr_power=settings["lr_power"],
        initial_accumulator_value=settings["iav"],
        betas=settings["betas"],
        eps=settings["eps"],
    )
    for step, gradient in enumerate(gradients):
        optimizer.param_groups[0]["lr"] = 0.0 if step in zero_steps else settings["lr"]
        param.grad = torch.from_numpy(gradient.copy())
        optimizer.step()
    state = optimizer.state[param]
    assert state["step"] == len(kept)
    assert_allclose(param.detach().numpy(), expected[:, 0], rtol=1e-12, atol=1e-15)
    for column, key in enumerate(["z", "n", "exp_avg", "exp_avg_sq"], start=1):
        assert_allclose(state[key].numpy(), expected[:, column], rtol=1e-12, atol=1e-15)


def test_a_first_step_with_lr_0_makes_no_state():
    param = torch.nn.Parameter(torch.tensor([0.5, -0.25], dtype=torch.float64))
    optimizer = FTRL([param], lr=0.1)
    optimizer.param_groups[0]["lr"] = 0.0
    param.grad = torch.ones(2, dtype=torch.float64)
    optimizer.step()
    assert param not in optimizer.state
    assert torch.equal(param.detach(), torch.tensor([0.5, -0.25], dtype=torch.float64))


def snapshot(optimizer, params):
    """Copies of the parameters and of every tensor and number in the state."""
    values = [param.detach().clone() for param in params]
    state = {
        index: {
            key: value.clone() if isinstance(value, torch.Tensor) else value
            for key, value in optimizer.state[param].items()
        }
        for index, param in enumerate(params)
        if param in optimizer.state
    }
    return values, state


def assert_unchanged(optimizer, params, before):
    values, state = snapshot(optimizer, params)
    assert all(torch.equal(a, b) for a, b in zip(values, before[0]))
    assert state.keys() == before[1].keys()
    for index, entries in before[1].items():
        assert state[index].keys() == entries.keys()
        for key, value in entries.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(state[index][key], value), (index, key)
            else:
                assert state[index][key] == value


BAD_STEP_SETTINGS = [
    ("lr", -0.1),
    ("lr", float("inf")),
    ("lr", float("nan")),
    ("beta", -1.0),
    ("l1", -0.5),
    ("l2", -1e-9),
    ("lr_power", 0.5),
    ("initial_accumulator_value", -0.1),
    ("maximize", "yes"),
]


@pytest.mark.parametrize("optimizer_class", [FTRL, FTRLAdam])
@pytest.mark.parametrize(("name", "value"), BAD_STEP_SETTINGS)
def test_bad_hyper_parameters_set_between_steps_raise_before_any_change(
    optimizer_class, name, value
):
    first = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    second = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    fresh = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    params = [first, second, fresh]
    optimizer = optimizer_class([{"params": [first]}, {"params": [second, fresh]}])
    first.grad = torch.ones(3, dtype=torch.float64)
    second.grad = torch.ones(2, dtype=torch.float64)
    optimizer.step()
    fresh.grad = torch.ones(2, dtype=torch.float64)
    optimizer.param_groups[1][name] = value
    before = snapshot(optimizer, params)
    message = f"{optimizer_class.__name__}: {name} of parameter group 1 must be"
    with pytest.raises(ValueError, match=message):
        optimizer.step()
    assert_unchanged(optimizer, params, before)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("betas", (1.0, 0.9), r"betas\[0\] of parameter group 0 must be"),
        ("betas", (0.9,), "betas of parameter group 0 must be a pair"),
        ("eps", 0.0, "eps of parameter group 0 must be a finite number > 0"),
    ],
)
def test_bad_adam_hyper_parameters_set_between_steps_raise(name, value, message):
    param = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    optimizer = FTRLAdam([param])
    param.grad = torch.ones(2, dtype=torch.float64)
    optimizer.step()
    optimizer.param_groups[0][name] = value
    before = snapshot(optimizer, [param])
    with pytest.raises(ValueError, match=message):
        optimizer.step()
    assert_unchanged(optimizer, [param], before)


# ------------------------------------------------------ atomic steps and loads
@pytest.mark.parametrize("optimizer_class", [FTRL, FTRLAdam])
def test_a_bad_gradient_makes_no_state_for_the_parameters_before_it(optimizer_class):
    first = torch.nn.Parameter(torch.tensor([0.5, 0.0], dtype=torch.float64))
    second = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    optimizer = optimizer_class([first, second])
    first.grad = torch.ones(2, dtype=torch.float64)
    second.grad = torch.tensor([1.0, float("nan")], dtype=torch.float64)
    with pytest.raises(ValueError, match="parameter 1 of parameter group 0 has NaN"):
        optimizer.step()
    assert len(optimizer.state) == 0
    assert optimizer.state_dict()["state"] == {}


def test_initial_value_too_large_makes_no_state_for_the_parameters_before_it():
    first = torch.nn.Parameter(torch.tensor([0.5, 0.0], dtype=torch.float64))
    param = torch.nn.Parameter(torch.tensor([1e300, 0.0], dtype=torch.float64))
    optimizer = FTRL([first, param], lr=1e-10)
    first.grad = torch.ones(2, dtype=torch.float64)
    param.grad = torch.ones(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="parameter 1 of parameter group 0.*too large"):
        optimizer.step()
    assert len(optimizer.state) == 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_initial_value_is_named_as_such(bad):
    first = torch.nn.Parameter(torch.tensor([0.5, 0.0], dtype=torch.float64))
    param = torch.nn.Parameter(torch.tensor([1.0, bad], dtype=torch.float64))
    optimizer = FTRL([first, param])
    first.grad = torch.ones(2, dtype=torch.float64)
    param.grad = torch.ones(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="parameter 1 of parameter group 0 has NaN or infinite"):
        optimizer.step()
    assert len(optimizer.state) == 0
    assert torch.equal(first.detach(), torch.tensor([0.5, 0.0], dtype=torch.float64))


@pytest.mark.parametrize("optimizer_class", [FTRL, FTRLAdam])
def test_loading_a_state_of_another_shape_raises_before_any_change(optimizer_class):
    def stepped(shapes):
        params = [torch.nn.Parameter(torch.zeros(shape, dtype=torch.float64)) for shape in shapes]
        optimizer = optimizer_class(params)
        for param in params:
            param.grad = torch.full_like(param, 0.5)
        optimizer.step()
        return params, optimizer

    _, saved = stepped([(3,), (2, 2)])
    params, optimizer = stepped([(3,), (2, 3)])
    before = snapshot(optimizer, params)
    groups = [dict(group) for group in optimizer.param_groups]
    with pytest.raises(
        ValueError, match=r"parameter 1 of parameter group 0 has the shape \(2, 3\).*\(2, 2\)"
    ):
        optimizer.load_state_dict(saved.state_dict())
    assert_unchanged(optimizer, params, before)
    assert optimizer.param_groups == groups
    # The next step then works.
    for param in params:
        param.grad = torch.ones_like(param)
    optimizer.step()


def test_a_state_of_another_shape_raises_at_the_step_before_any_change():
    first = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    second = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    optimizer = FTRL([first, second])
    first.grad, second.grad = (
        torch.ones(3, dtype=torch.float64),
        torch.ones(2, dtype=torch.float64),
    )
    optimizer.step()
    second.data = torch.zeros(4, dtype=torch.float64)  # replaced by a tensor of another shape
    first.grad, second.grad = (
        torch.ones(3, dtype=torch.float64),
        torch.ones(4, dtype=torch.float64),
    )
    before = snapshot(optimizer, [first, second])
    with pytest.raises(ValueError, match=r"parameter 1 of parameter group 0.*shape"):
        optimizer.step()
    assert_unchanged(optimizer, [first, second], before)


@pytest.mark.parametrize("optimizer_class", [FTRL, FTRLAdam])
def test_a_model_converted_to_float16_after_building_the_optimizer_raises(optimizer_class):
    model = torch.nn.Linear(3, 1)
    optimizer = optimizer_class(model.parameters())
    model.half()
    model(torch.ones(2, 3, dtype=torch.float16)).sum().backward()
    before = snapshot(optimizer, list(model.parameters()))
    with pytest.raises(ValueError, match="parameter 0 of parameter group 0 is float16"):
        optimizer.step()
    assert_unchanged(optimizer, list(model.parameters()), before)


@pytest.mark.parametrize("optimizer_class", [FTRL, FTRLAdam])
def test_a_model_converted_to_float64_after_a_step_says_how_to_continue(optimizer_class):
    model = torch.nn.Linear(3, 1)
    optimizer = optimizer_class(model.parameters())
    model(torch.ones(2, 3)).sum().backward()
    optimizer.step()
    state32 = snapshot(optimizer, [model.weight])[1][0]
    model.double()
    model.zero_grad()
    model(torch.ones(2, 3, dtype=torch.float64)).sum().backward()
    before = snapshot(optimizer, list(model.parameters()))
    with pytest.raises(ValueError, match=r"float64.*its state is float32.*load_state_dict"):
        optimizer.step()
    assert_unchanged(optimizer, list(model.parameters()), before)
    # What the message advises: the state, loaded again, takes the parameters'
    # dtype (exactly: float64 holds every float32), and the steps continue.
    optimizer.load_state_dict(optimizer.state_dict())
    for key, value in state32.items():
        loaded = optimizer.state[model.weight][key]
        if isinstance(value, torch.Tensor):
            assert loaded.dtype == torch.float64 and torch.equal(loaded, value.double())
    optimizer.step()
    assert optimizer.state[model.weight]["z"].dtype == torch.float64


def test_loading_a_state_of_the_other_optimizer_raises_before_any_change():
    saved_param = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    saved = FTRL([saved_param])
    saved_param.grad = torch.ones(3, dtype=torch.float64)
    saved.step()
    param = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    optimizer = FTRLAdam([param], lr=0.3)
    with pytest.raises(ValueError, match="parameter 0 of parameter group 0.*'exp_avg'"):
        optimizer.load_state_dict(saved.state_dict())
    assert len(optimizer.state) == 0 and optimizer.param_groups[0]["lr"] == 0.3
