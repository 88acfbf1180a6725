"""Each formula of skftrl/_engines (the factorization machine's too, at the
end) is written once per form: as a scalar function (which the numpy engines
call on Python floats and the numba engine compiles) and over numpy arrays.
The forms must give identical bits; the loss records' array and scalar forms
agree to rounding. The formulas
themselves are checked against the paper's in tests/test_reference.py.

The scalar forms' ``**`` and ``exp`` are the C library's. numpy's are too,
except on a CPU with AVX-512, where its own vectorized loops can differ in
the last bit: the array forms are computed on an AVX2 CPU's loops
(tests/avx2_loops.py)."""

import math

import avx2_loops
import numpy as np
import pytest
from numpy.testing import assert_allclose

from conftest import HAS_NUMBA
from skftrl._engines import Parameters, _losses, _math, get_loss

POWERS = [-0.5, -0.3, -1.0, 0.0]
HYPER = [
    dict(learning_rate=0.1, beta=1.0, l1=0.0, l2=0.0),
    dict(learning_rate=0.3, beta=0.0, l1=0.0, l2=0.0),  # a zero denominator where n = 0
    dict(learning_rate=0.7, beta=0.5, l1=0.2, l2=0.3),
    dict(learning_rate=2.0, beta=1e-320, l1=1e-3, l2=0.0),  # beta / rate underflows
    # Rates at the ends of the float range: sigma, weights and z would overflow
    # (to inf, or inf * 0 = NaN) unclipped.
    dict(learning_rate=1e-300, beta=1.0, l1=0.0, l2=0.0),
    dict(learning_rate=1e300, beta=1e-300, l1=0.0, l2=0.0),
]


def coordinates(seed=0, size=400):
    """z, n and gradients over many magnitudes, with zeros and tiny values."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=size) * 10.0 ** rng.integers(-8, 8, size=size)
    n = rng.exponential(size=size) * 10.0 ** rng.integers(-12, 12, size=size)
    gradient = rng.normal(size=size) * 10.0 ** rng.integers(-170, 40, size=size)
    z[:20] = n[:20] = 0.0
    gradient[20:30] = 0.0
    n[30:40] = 1e-320
    # Near the largest floats (of float64 and float32): z beyond them is clipped.
    z[40:50] = rng.choice([-1.0, 1.0], size=10) * 10.0 ** rng.integers(37, 308, size=10)
    gradient[40:60] = rng.choice([-1.0, 1.0], size=20) * 1e100
    return z, n, gradient


def scalar_forms():
    """The scalar formulas in Python, and compiled by numba when it is installed."""
    forms = {"python": (_math.rate_root_scalar, _math.weight, _math.step)}
    if HAS_NUMBA:
        from skftrl._engines import _compile as compiled

        forms["numba"] = (compiled.rate_root, compiled.weight, compiled.step)
    return forms


# The bounds of a stored n and z: a float64 state's, a float32 state's.
STORED_BOUNDS = ((0.0, _math.LARGEST), (_math.SMALLEST_N_FLOAT32, _math.LARGEST_FLOAT32))
DERIVATIVE_LOSSES = ["log_loss", "squared_error", "huber", "poisson"]


def derivative_inputs():
    """Margins over the range where the losses' exp saturate, and targets."""
    margins = np.concatenate([np.linspace(-800, 800, 161), np.linspace(-3, 3, 61)])
    return margins, np.resize([0.0, 1.0, 2.5], len(margins))


def array_forms():
    """The array forms' results, keyed ``hyper index/power/...`` and
    ``derivative/loss``, and their inputs (``z``, ``n``, ``gradient``), which
    the tests below give the scalar forms."""
    z, n, gradient = coordinates()
    result = {"z": z, "n": n, "gradient": gradient}
    with np.errstate(over="ignore"):
        for index, hyper in enumerate(HYPER):
            for power in POWERS:
                key = f"{index}/{power}"
                parameters = Parameters(
                    loss=get_loss("log_loss"), learning_rate_power=power, **hyper
                )
                rates = _math.constants(parameters)
                root_n = _math.rate_root(n, power)
                weights = _math.weights(z, root_n, rates)
                result[f"{key}/root_n"], result[f"{key}/weights"] = root_n, weights
                for smallest_n, largest in STORED_BOUNDS:
                    result[f"{key}/{smallest_n}/z"], result[f"{key}/{smallest_n}/n"] = (
                        _math.update_coordinates(
                            z.copy(),
                            n.copy(),
                            root_n,
                            weights,
                            gradient,
                            gradient * gradient,
                            rates,
                            smallest_n,
                            largest,
                        )
                    )
    margins, targets = derivative_inputs()
    for name in DERIVATIVE_LOSSES:
        loss = get_loss(name, epsilon=0.3)
        result[f"derivative/{name}"] = loss.derivative(margins[:, None], targets)[:, 0]
    return result


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    """:func:`array_forms` computed on the AVX2 loops."""
    return avx2_loops.arrays(
        "test_math", "array_forms", tmp_path_factory.mktemp("forms") / "f.npz"
    )


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("form", scalar_forms())
@pytest.mark.parametrize("power", POWERS)
@pytest.mark.parametrize("hyper", HYPER)
def test_scalar_and_array_weights_and_steps_are_identical(hyper, power, form, computed):
    rate_root_scalar, weight, step = scalar_forms()[form]
    key = f"{HYPER.index(hyper)}/{power}"
    compiled_power = _math.compiled_power(power)
    z, n, gradient = computed["z"], computed["n"], computed["gradient"]
    root_n, weights = computed[f"{key}/root_n"], computed[f"{key}/weights"]
    for i in range(len(z)):
        root = rate_root_scalar(n[i], compiled_power)
        assert root == root_n[i]
        assert weight(z[i], root, **hyper) == weights[i]
    for smallest_n, largest in STORED_BOUNDS:
        new_z, new_n = computed[f"{key}/{smallest_n}/z"], computed[f"{key}/{smallest_n}/n"]
        assert np.all(np.abs(new_z) <= largest) and np.all(np.abs(new_n) <= largest)
        for i in range(len(z)):
            expected = step(
                z[i],
                n[i],
                root_n[i],
                weights[i],
                gradient[i],
                gradient[i] ** 2,
                hyper["learning_rate"],
                compiled_power,
                smallest_n,
                largest,
            )
            assert expected == (new_z[i], new_n[i]), i


def test_the_unguarded_update_is_identical_where_its_promise_holds():
    # update_coordinates(guard=False) is allowed when every |gradient| >= 1e-150
    # and learning_rate * |gradient| >= 1e-300: then it gives the same bits.
    parameters = Parameters(loss=get_loss("log_loss"), learning_rate=1e-140, beta=0.0, l1=0, l2=0)
    rates = _math.constants(parameters)
    z, n, gradient = coordinates(seed=1)
    gradient = np.where(np.abs(gradient) < 1e-150, 1e-150, gradient)
    root_n = _math.rate_root(n)
    weights = _math.weights(z, root_n, rates)
    guarded = _math.update_coordinates(
        z.copy(), n.copy(), root_n, weights, gradient, gradient**2, rates, 0.0, _math.LARGEST
    )
    unguarded = _math.update_coordinates(
        *(z.copy(), n.copy(), root_n, weights, gradient, gradient**2, rates),
        *(0.0, _math.LARGEST),
        guard=False,
    )
    assert np.array_equal(guarded[0], unguarded[0]) and np.array_equal(guarded[1], unguarded[1])


def scalar_derivatives():
    forms = {"python": (_losses.scalar_derivative, _losses.softmax_derivative)}
    if HAS_NUMBA:
        from skftrl._engines import _compile as compiled

        forms["numba"] = (compiled.scalar_derivative, compiled.softmax_derivative)
    return forms


@pytest.mark.parametrize("form", scalar_derivatives())
@pytest.mark.parametrize("name", DERIVATIVE_LOSSES)
def test_scalar_loss_derivatives_equal_the_records(name, form, computed):
    scalar_derivative, _ = scalar_derivatives()[form]
    loss = get_loss(name, epsilon=0.3)
    margins, targets = derivative_inputs()
    expected = computed[f"derivative/{name}"]
    got = [scalar_derivative(loss.code, m, t, loss.epsilon) for m, t in zip(margins, targets)]
    assert np.all(np.isfinite(got))
    assert_allclose(got, expected, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("form", scalar_derivatives())
def test_the_softmax_derivative_equals_the_multinomial_record(form):
    _, softmax_derivative = scalar_derivatives()[form]
    rng = np.random.default_rng(0)
    margins = rng.normal(scale=30.0, size=(50, 4))
    targets = rng.integers(0, 4, size=50)
    expected = get_loss("multinomial").derivative(margins, targets)
    for row, target in enumerate(targets):
        derivative = np.empty(4)
        softmax_derivative(margins[row], float(target), derivative)
        assert_allclose(derivative, expected[row], rtol=1e-13, atol=1e-16)


def test_loss_values_and_inverse_links_from_the_definitions():
    m = np.array([[-2.0], [0.0], [3.0]])
    y = np.array([1.0, 0.0, 2.0])
    sigmoid = 1.0 / (1.0 + np.exp(-m[:, 0]))
    assert_allclose(
        get_loss("log_loss").value(m, np.array([1.0, 0.0, 1.0])),
        -np.log([sigmoid[0], 1 - sigmoid[1], sigmoid[2]]),
        rtol=1e-14,
    )
    assert_allclose(get_loss("log_loss").inverse_link(m)[:, 1], sigmoid, rtol=1e-15)
    assert_allclose(get_loss("squared_error").value(m, y), 0.5 * (m[:, 0] - y) ** 2)
    huber = get_loss("huber", epsilon=1.0)
    assert_allclose(huber.value(m, y), [2.5, 0.0, 0.5])
    assert huber.derivative_bound == 1.0 and get_loss("poisson").derivative_bound == math.inf
    assert_allclose(get_loss("poisson").value(m, y), np.exp(m[:, 0]) - y * m[:, 0])
    assert_allclose(get_loss("poisson").inverse_link(m), np.exp(m[:, 0]))
    three = np.array([[1.0, 2.0, 3.0]])
    softmax = np.exp(three) / np.exp(three).sum()
    assert_allclose(get_loss("multinomial").inverse_link(three), softmax, rtol=1e-15)
    assert_allclose(get_loss("multinomial").value(three, np.array([0])), -np.log(softmax[0, 0]))
    with pytest.raises(ValueError, match="Unknown loss 'hinge'"):
        get_loss("hinge")


# --------------------------------------------- the factorization machine's
def fm_scalar_forms():
    """The FM's scalar formulas in Python, and compiled by numba when installed."""
    forms = {"python": (_math.factor_term, _math.pairwise_term_of_sums, _math.factor_gradient)}
    if HAS_NUMBA:
        from skftrl._engines import _compile as compiled

        forms["numba"] = (
            compiled.factor_term,
            compiled.pairwise_term_of_sums,
            compiled.factor_gradient,
        )
    return forms


def fm_row(seed, n_components, size=30, n_outputs=2):
    """A row's values and factors over many magnitudes (some terms clipped)."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=size) * 10.0 ** rng.integers(-5, 30, size=size)
    values[:3] = [0.0, 1e60, -1e60]
    factors = rng.normal(size=(size, n_outputs, n_components)) * 10.0 ** rng.integers(
        -8, 30, size=(size, n_outputs, n_components)
    )
    return values, factors


@pytest.mark.parametrize("form", fm_scalar_forms())
def test_scalar_and_array_factor_terms_are_identical(form):
    factor_term, _, _ = fm_scalar_forms()[form]
    values, factors = fm_row(0, 5)
    terms = _math.factor_terms(values, factors)
    assert np.abs(terms).max() == _math.MAX_ABS_FACTOR_TERM  # some are clipped
    for i, k, f in np.ndindex(terms.shape):
        assert factor_term(values[i], factors[i, k, f]) == terms[i, k, f]


@pytest.mark.parametrize("form", fm_scalar_forms())
@pytest.mark.parametrize("n_components", [1, 3, 7, 8, 9, 20])
def test_scalar_and_array_pairwise_terms_are_identical(n_components, form):
    # Identical bits for any number of components: the array form sums in
    # order, as the scalar loop (numpy's own sum of 8 or more values is
    # pairwise, and the engines then disagreed where clipped terms tie).
    _, pairwise_term_of_sums, _ = fm_scalar_forms()[form]
    values, factors = fm_row(1, n_components)
    terms = _math.factor_terms(values, factors)
    sums, squares = _math.sum_in_order(terms), _math.sum_in_order(terms * terms)
    expected = _math.pairwise_term(sums, squares)
    got = np.array([pairwise_term_of_sums(sums[k], squares[k]) for k in range(len(sums))])
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("n_outputs", [1, 2])
@pytest.mark.parametrize("n_components", [1, 9])
def test_a_rows_sums_are_added_in_order(n_components, n_outputs):
    # One output and one component make the terms a single column, which
    # numpy's sum adds pairwise: sum_in_order adds every cell in order.
    rng = np.random.default_rng(4)
    terms = rng.normal(size=(40, n_outputs, n_components)) * 10.0 ** rng.integers(
        -5, 30, size=(40, n_outputs, n_components)
    )
    expected = np.zeros((n_outputs, n_components))
    for row in terms:
        expected = expected + row
    assert np.array_equal(_math.sum_in_order(terms), expected)


@pytest.mark.parametrize("form", fm_scalar_forms())
@pytest.mark.parametrize("factor_l2", [0.0, 0.03])
@pytest.mark.parametrize("bound", [_math.MAX_ABS_GRADIENT, _math.MAX_ABS_GRADIENT_FLOAT32])
def test_scalar_and_array_factor_gradients_are_identical(bound, factor_l2, form):
    factor_term, _, factor_gradient = fm_scalar_forms()[form]
    values, factors = fm_row(2, 4)
    rng = np.random.default_rng(3)
    derivative = rng.normal(size=factors.shape[1]) * 10.0 ** rng.integers(-3, 60, size=2)
    with np.errstate(over="ignore"):
        gradient = _math.clip_gradient(values[:, None] * derivative, bound)
    terms = _math.factor_terms(values, factors)
    sums = terms.sum(axis=0)
    expected = _math.factor_gradients(gradient, sums, terms, factors, factor_l2, bound)
    assert np.abs(expected).max() == bound  # some are clipped
    for i, k, f in np.ndindex(expected.shape):
        got = factor_gradient(
            gradient[i, k],
            sums[k, f],
            factor_term(values[i], factors[i, k, f]),
            factors[i, k, f],
            factor_l2,
            bound,
        )
        assert got == expected[i, k, f], (i, k, f)
