"""The compiled pass is given the same argument types for the same kind of
model and input, whatever the arrays' flags: numba compiles a form of it for
each combination of types, which takes seconds."""

import numpy as np
import pytest
import scipy.sparse as sp

from skftrl._engines import FMParameters, FMState, LinearState, Parameters, get_loss, new_state

numba = pytest.importorskip("numba")
_linear_numba = pytest.importorskip("skftrl._engines._linear_numba")


def parameters(loss="log_loss"):
    return Parameters(loss=get_loss(loss), learning_rate=0.1, beta=1.0, l1=0.5, l2=0.1)


def learned_with_types(state, X, targets, sample_weight, rows, loss="log_loss"):
    """The pass over ``rows`` learned into ``state``: its margins, and the numba
    types of the arguments the compiled pass was given."""
    given = []

    def spy(*arguments):
        given.append(tuple(numba.typeof(argument) for argument in arguments))
        return _linear_numba._pass(*arguments)

    margins = _linear_numba.learn(
        state, parameters(loss), X, targets, sample_weight, rows, compiled_pass=spy
    )
    return margins, given[0]


def rows_of(n_features, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(12, n_features, density=0.6, format="csr", random_state=rng)
    return X, (rng.random(12) < 0.5).astype(float), rng.random(12) + 0.5, np.arange(12)


def read_only(array):
    array = array.copy()
    array.flags.writeable = False
    return array


def linear_state(z, n):
    return LinearState(z, n, np.zeros(z.shape[0]), np.zeros(z.shape[0]))


def test_read_only_inputs_are_given_as_writable_ones(tmp_path):
    # Read-only arrays, and those of a read-only memory map (whose memory no
    # view can write: the pass is given a copy).
    X, targets, sample_weight, rows = rows_of(5)
    np.save(tmp_path / "targets.npy", targets)
    frozen_X = sp.csr_matrix(
        (read_only(X.data), read_only(X.indices), read_only(X.indptr)), shape=X.shape
    )
    writable_margins, writable_types = learned_with_types(
        linear_state(*new_state(1, 5, np.float64)), X, targets, sample_weight, rows
    )
    frozen_margins, frozen_types = learned_with_types(
        linear_state(*new_state(1, 5, np.float64)),
        frozen_X,
        np.load(tmp_path / "targets.npy", mmap_mode="r"),
        read_only(sample_weight),
        read_only(rows),
    )
    assert frozen_types == writable_types
    np.testing.assert_array_equal(frozen_margins, writable_margins)


@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("n_features", [0, 1, 2, 5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_contiguous_state_learns_as_the_estimators_strided_one(n_outputs, n_features, dtype):
    # The estimators' state (new_state's strided views) against the same
    # values in contiguous arrays, and a model of 5 features for the types.
    X, targets, sample_weight, rows = rows_of(n_features)
    loss = "log_loss"
    if n_outputs > 1:
        targets, loss = (np.arange(12) % n_outputs).astype(float), "multinomial"
    strided = linear_state(*new_state(n_outputs, n_features, dtype, 0.5))
    contiguous = linear_state(
        np.zeros((n_outputs, n_features), dtype), np.full((n_outputs, n_features), 0.5, dtype)
    )
    strided_margins, strided_types = learned_with_types(
        strided, X, targets, sample_weight, rows, loss
    )
    contiguous_margins, contiguous_types = learned_with_types(
        contiguous, X, targets, sample_weight, rows, loss
    )
    wide = linear_state(*new_state(n_outputs, 5, dtype))
    _, wide_types = learned_with_types(wide, rows_of(5)[0], targets, sample_weight, rows, loss)
    assert contiguous_types == strided_types == wide_types
    np.testing.assert_array_equal(contiguous_margins, strided_margins)
    for name in LinearState._fields:
        np.testing.assert_array_equal(getattr(contiguous, name), getattr(strided, name))


@pytest.mark.parametrize("n_features", [1, 5])
def test_the_factorization_machine_pass_has_one_form_for_any_number_of_factors(n_features):
    # Its record of the factors (the interactions) is typed alike for k = 1,
    # whose per-feature first factors are contiguous, and for k = 3.
    _fm_numba = pytest.importorskip("skftrl._engines._fm_numba")
    X, targets, sample_weight, rows = rows_of(n_features)
    parameters = FMParameters(
        loss=get_loss("log_loss"), learning_rate=0.1, beta=1.0, l1=0.5, l2=0.1
    )
    types = []
    for n_factors in (1, 3):
        z, n = new_state(1, n_features, np.float64)
        factors = np.random.default_rng(0).normal(size=(1, n_features, n_factors))
        state = FMState(z, n, np.zeros(1), np.zeros(1), factors, np.zeros_like(factors))
        interactions = _fm_numba.pass_factors(state, parameters, X, rows)
        given = []

        def spy(*arguments, given=given):
            given.append(tuple(numba.typeof(argument) for argument in arguments))
            return _fm_numba._pass(*arguments)

        _linear_numba.learn(
            state, parameters, X, targets, sample_weight, rows, None, interactions, spy
        )
        types.append(given[0])
    assert types[0] == types[1]
