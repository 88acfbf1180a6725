"""Property tests: hypothesis draws sparse data, sample weights, losses and
hyper-parameters, and each property must hold for every draw.

The settings are the "ci" profile of tests/conftest.py: a fixed number of
derandomized examples. ``--hypothesis-profile=deep`` explores more.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose
from test_reference import TOLERANCE, run_reference

from conftest import HAS_NUMBA, assert_same, snapshot
from skftrl import FTRLClassifier, FTRLRegressor

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]
TASKS = ["binary", "multiclass", "squared_error", "huber", "poisson"]
# Every way to run the training: exact engines, a mini-batch, a float32 state.
ENGINE_PARAMS = [
    {"engine": "numpy"},
    {"batch_size": 4},
    {"engine": "numpy", "dtype": np.float32},
] + ([{"engine": "numba"}, {"engine": "numba", "dtype": np.float32}] if HAS_NUMBA else [])


@dataclass
class Problem:
    """A drawn learning problem: data, targets, weights and a model's parameters."""

    task: str
    X: sp.csr_matrix
    y: np.ndarray
    sample_weight: object  # None or an array
    params: dict

    @property
    def classes(self):
        """Every class the stream may hold (a batch may miss some)."""
        return np.arange(4 if self.task == "multiclass" else 2)

    def model(self, **extra):
        params = {**self.params, **extra}
        if self.task in ("binary", "multiclass"):
            return FTRLClassifier(**params)
        return FTRLRegressor(loss=self.task, **params)

    def learn(self, model, rows=slice(None)):
        """``partial_fit`` on ``rows``; classes are passed to a classifier."""
        weights = None if self.sample_weight is None else self.sample_weight[rows]
        if isinstance(model, FTRLClassifier):
            return model.partial_fit(
                self.X[rows], self.y[rows], classes=self.classes, sample_weight=weights
            )
        return model.partial_fit(self.X[rows], self.y[rows], sample_weight=weights)

    def kernel_targets(self):
        """Targets as the reference takes them: class indices or real values."""
        if self.task in ("binary", "multiclass"):
            return np.searchsorted(self.classes, self.y).astype(float)
        return self.y


hyper_parameters = st.fixed_dictionaries(
    {
        "learning_rate": st.floats(1e-3, 10.0),
        "beta": st.one_of(st.just(0.0), st.floats(0.0, 2.0)),
        "l1": st.one_of(st.just(0.0), st.floats(0.0, 2.0)),
        "l2": st.one_of(st.just(0.0), st.floats(0.0, 2.0)),
        "fit_intercept": st.booleans(),
    }
)


def reals(low, high, min_abs=0.0):
    """Floats in [low, high]; with ``min_abs``, 0 or at least ``min_abs`` in magnitude."""
    if min_abs == 0:
        return st.floats(low, high)
    parts = [st.just(0.0)]
    if high >= min_abs:
        parts.append(st.floats(min_abs, high))
    if low <= -min_abs:
        parts.append(st.floats(low, -min_abs))
    return st.one_of(parts)


@st.composite
def sparse_matrices(draw, max_rows, max_features, max_abs, exponents=(0, 0), min_abs=0.0):
    """CSR of random shape and pattern (empty rows and columns included);
    values up to ``max_abs`` times 10**e, e drawn from ``exponents``."""
    n_rows = draw(st.integers(1, max_rows))
    n_features = draw(st.integers(1, max_features))
    shape = (n_rows, n_features)
    present = draw(arrays(np.bool_, shape))
    values = draw(arrays(np.float64, shape, elements=reals(-max_abs, max_abs, min_abs)))
    scale = 10.0 ** draw(st.integers(*exponents))
    return sp.csr_matrix(np.where(present, values * scale, 0.0))


@st.composite
def problems(
    draw,
    max_rows=20,
    max_features=6,
    max_abs=10.0,
    exponents=(0, 0),
    min_abs=0.0,
    tasks=TASKS,
    betas=None,
    target_exponents=(0, 0),
):
    """A Problem; ``min_abs`` keeps every value, target and weight either 0 or
    at least that large in magnitude; ``betas``, a strategy, replaces beta's;
    regression targets are scaled by 10**e, e drawn from ``target_exponents``."""
    task = draw(st.sampled_from(tasks))
    X = draw(sparse_matrices(max_rows, max_features, max_abs, exponents, min_abs))
    n_rows = X.shape[0]
    if task == "binary":
        y = draw(arrays(np.int64, n_rows, elements=st.integers(0, 1)))
    elif task == "multiclass":
        y = draw(arrays(np.int64, n_rows, elements=st.integers(0, 3)))
    elif task == "poisson":
        y = draw(arrays(np.float64, n_rows, elements=reals(0.0, 20.0, min_abs)))
    else:
        y = draw(arrays(np.float64, n_rows, elements=reals(-100.0, 100.0, min_abs)))
    if task not in ("binary", "multiclass"):
        y = y * 10.0 ** draw(st.integers(*target_exponents))
    # Zero weights included, but not all zero: scikit-learn rejects a batch
    # whose weights are all 0 (tests/test_extreme_inputs.py checks that).
    sample_weight = draw(
        st.one_of(
            st.none(),
            arrays(np.float64, n_rows, elements=reals(0.0, 10.0, min_abs)).filter(np.any),
        )
    )
    params = draw(hyper_parameters)
    if betas is not None:
        params["beta"] = draw(betas)
    if task == "huber":
        params["epsilon"] = draw(st.floats(0.01, 5.0))
    return Problem(task, X, y, sample_weight, params)


def assert_agree_to_rounding(actual, desired, magnitude):
    """|actual - desired| <= 1e-12 * (|desired| + magnitude + 1), elementwise."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    bound = 1e-12 * (np.abs(desired) + magnitude + 1.0)
    assert np.all(np.abs(actual - desired) <= bound), np.max(np.abs(actual - desired) / bound)


def assert_same_state(got, expected):
    for name in STATE:
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
        assert getattr(got, name).dtype == getattr(expected, name).dtype, name
    assert got.n_samples_seen_ == expected.n_samples_seen_


# ------------------------------------------------------------------ ranges
@given(
    # Values up to 10 * 1e307 and targets up to 100 * 1e306: near the largest float.
    problem=problems(max_abs=10.0, exponents=(-300, 307), target_exponents=(-300, 306)),
    engine_params=st.sampled_from(ENGINE_PARAMS),
)
def test_predictions_are_finite_and_in_range(problem, engine_params):
    model = problem.model(**engine_params)
    X = problem.X
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or 0/0 inside
        problem.learn(model)
        problem.learn(model)  # a second pass, from a state that is no longer zero
        for name in STATE:
            assert np.all(np.isfinite(getattr(model, name))), name
        assert np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(model.intercept_))
        assert np.all(np.isfinite(model.loss_curve_))
        if isinstance(model, FTRLClassifier):
            proba = model.predict_proba(X)
            assert np.all((proba >= 0) & (proba <= 1))
            assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
            log_proba = model.predict_log_proba(X)
            assert np.all(np.isfinite(log_proba)) and np.all(log_proba <= 0)
            assert np.all(np.isfinite(model.decision_function(X)))
            assert np.all(np.isin(model.predict(X), model.classes_))
        else:
            predictions = model.predict(X)
            assert np.all(np.isfinite(predictions))
            if problem.task == "poisson":
                assert np.all(predictions >= 0)


# --------------------------------------------------------------- streaming
@st.composite
def problems_and_cuts(draw, **problem_options):
    """A problem and the sorted positions where its stream is cut."""
    problem = draw(problems(**problem_options))
    n_rows = problem.X.shape[0]
    cuts = draw(st.lists(st.integers(1, n_rows - 1), unique=True)) if n_rows > 1 else []
    return problem, sorted(cuts)


def pieces(problem, cuts):
    """The stream cut at ``cuts``; each piece has a non-zero weight, as a batch must."""
    bounds = [0] + cuts + [problem.X.shape[0]]
    slices = [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
    if problem.sample_weight is not None:
        assume(all(np.any(problem.sample_weight[rows]) for rows in slices))
    return slices


@given(
    drawn=problems_and_cuts(max_rows=25, exponents=(-3, 3)),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_any_split_of_the_stream_gives_the_state_of_one_call(drawn, dtype, engine):
    problem, cuts = drawn
    one_call = problem.learn(problem.model(engine=engine, dtype=dtype))
    split = problem.model(engine=engine, dtype=dtype)
    for rows in pieces(problem, cuts):
        problem.learn(split, rows)
    assert_same_state(split, one_call)
    assert len(split.loss_curve_) == len(cuts) + 1


@given(
    drawn=problems_and_cuts(max_rows=25, exponents=(-3, 3)),
    batch_size=st.integers(2, 6),
)
def test_mini_batches_split_at_batch_boundaries_give_the_state_of_one_call(drawn, batch_size):
    # A batch never spans two partial_fit calls, so a stream cut only at
    # multiples of batch_size is batched the same way as in one call.
    problem, cuts = drawn
    cuts = sorted({cut * batch_size for cut in cuts if cut * batch_size < problem.X.shape[0]})
    one_call = problem.learn(problem.model(batch_size=batch_size))
    split = problem.model(batch_size=batch_size)
    for rows in pieces(problem, cuts):
        problem.learn(split, rows)
    assert_same_state(split, one_call)


# ------------------------------------------------------------- permutation
@st.composite
def problems_and_permutations(draw, **problem_options):
    problem = draw(problems(**problem_options))
    permutation = draw(st.permutations(range(problem.X.shape[1])))
    return problem, np.array(permutation)


def permuted(problem, permutation):
    """The same problem with the columns of X in the order ``permutation``."""
    return Problem(
        problem.task, problem.X[:, permutation], problem.y, problem.sample_weight, problem.params
    )


def first_non_zero_of_each_row(X):
    """X keeping only the first non-zero of each row."""
    X = X.tolil()
    for row in range(X.shape[0]):
        X.rows[row], X.data[row] = X.rows[row][:1], X.data[row][:1]
    return X.tocsr()


# A difference in the last bit of a margin must stay small. It may not where
# the stream diverges (the squared and Poisson losses at a large learning
# rate), so the losses here have a bounded derivative (|d| <= 1, or epsilon);
# nor with beta = 0, where the first gradient of a coordinate, however small,
# sets its weight to -learning_rate * sign(g): the sign of a rounding residue
# (1e-16 or 0) decides a weight of the size of the learning rate.
BOUNDED_DERIVATIVE_TASKS = ["binary", "multiclass", "huber"]


@given(
    drawn=problems_and_permutations(
        max_rows=25,
        max_features=8,
        exponents=(-3, 3),
        tasks=BOUNDED_DERIVATIVE_TASKS,
        betas=st.floats(0.1, 2.0),
    )
)
def test_permuting_columns_permutes_the_state(drawn, engine):
    # A row's margin sums its terms in column order (and BLAS may fuse a
    # multiply with the add), so permuted columns may change the last bit of
    # a margin: the state agrees to rounding; the next test has it exact.
    problem, permutation = drawn
    original = problem.learn(problem.model(engine=engine))
    other = permuted(problem, permutation)
    permuted_model = other.learn(other.model(engine=engine))
    for name in ["z_", "n_", "coef_"]:
        assert_allclose(
            getattr(permuted_model, name),
            getattr(original, name)[:, permutation],
            rtol=1e-9,
            atol=1e-12,
            err_msg=name,
        )
    for name in ["z_intercept_", "n_intercept_"]:
        assert_allclose(
            getattr(permuted_model, name), getattr(original, name), rtol=1e-9, atol=1e-12
        )


@given(drawn=problems_and_permutations(max_rows=25, max_features=8, exponents=(-3, 3)))
def test_permuting_columns_of_one_non_zero_rows_permutes_the_state_exactly(drawn, engine):
    # With a single non-zero a row's margin is one product plus the
    # intercept whatever the column order: every bit must follow the permutation.
    problem, permutation = drawn
    problem.X = first_non_zero_of_each_row(problem.X)
    original = problem.learn(problem.model(engine=engine))
    other = permuted(problem, permutation)
    permuted_model = other.learn(other.model(engine=engine))
    for name in ["z_", "n_", "coef_"]:
        assert np.array_equal(
            getattr(permuted_model, name), getattr(original, name)[:, permutation]
        ), name
    for name in ["z_intercept_", "n_intercept_"]:
        assert np.array_equal(getattr(permuted_model, name), getattr(original, name)), name


# ---------------------------------------------------------- sample weights
# beta >= 0.1: with beta = 0 the first gradient of a coordinate sets its
# weight to -learning_rate * sign(g) however small g is, so a margin that is 0
# in the reference and a rounding residue (1e-26) here give weights apart by
# the whole learning rate. tests/test_reference.py checks beta = 0 on data
# away from such ties. Values, targets and weights are 0 or at least 1e-6, so
# that no square underflows (tests/test_extreme_inputs.py has tiny values).
@given(
    problem=problems(
        max_rows=20, max_features=5, max_abs=3.0, min_abs=1e-6, betas=st.floats(0.1, 2.0)
    )
)
def test_sample_weights_scale_the_gradient_as_the_reference_does(problem, engine):
    weights = problem.sample_weight
    if weights is None:
        weights = np.ones(problem.X.shape[0])
    model = problem.learn(problem.model(engine=engine))
    loss = {"binary": "log_loss", "multiclass": "multinomial"}.get(problem.task, problem.task)
    reference, rows = run_reference(
        problem.X,
        problem.kernel_targets(),
        weights,
        model.z_.shape[0],
        dict(problem.params, loss=loss),
    )
    z, n, coef = (np.array(part) for part in reference.state(problem.X.shape[1]))
    assert_allclose(model.n_, n, **TOLERANCE)
    assert_allclose(model.n_intercept_, reference.n_bias, **TOLERANCE)
    # z adds gradients and corrections as large as sqrt(n) that may cancel
    # (with beta = 0, a gradient 1e8 times the previous one leaves z near the
    # smaller), so z agrees to 1e-12 of sqrt(n); the weight, z over
    # (beta + sqrt(n)) / learning_rate + l2, to 1e-12 of the learning rate.
    assert_agree_to_rounding(model.z_, z, np.sqrt(n))
    assert_agree_to_rounding(model.z_intercept_, reference.z_bias, np.sqrt(reference.n_bias))
    assert_agree_to_rounding(model.coef_, coef, problem.params["learning_rate"])
    intercept = [reference.bias(k) for k in range(len(reference.z_bias))]
    assert_agree_to_rounding(model.intercept_, intercept, problem.params["learning_rate"])


def test_a_sample_weight_is_not_the_row_repeated(engine):
    """Weight s multiplies the row's gradient (docs/algorithm.rst, step 3), so from a
    zero state z = s * d * x and n = (s * d * x)^2; repeating the row instead
    updates twice, the second time from the weights the first step learned."""
    X = np.array([[2.0, 0.0, -1.0]])
    y = np.array([1])
    weighted = FTRLClassifier(engine=engine).partial_fit(X, y, classes=[0, 1], sample_weight=[2.0])
    # margin 0, d = sigmoid(0) - 1 = -0.5; with s = 2 the gradients are
    # 2 * -0.5 * x = -x for the features and -1 for the intercept.
    assert np.array_equal(weighted.z_, [[-2.0, 0.0, 1.0]])
    assert np.array_equal(weighted.n_, [[4.0, 0.0, 1.0]])
    assert np.array_equal(weighted.z_intercept_, [-1.0])
    assert np.array_equal(weighted.n_intercept_, [1.0])

    repeated = FTRLClassifier(engine=engine).partial_fit(np.vstack([X, X]), [1, 1], classes=[0, 1])
    assert not np.array_equal(repeated.z_, weighted.z_)
    assert not np.array_equal(repeated.n_, weighted.n_)
    # Both steps' gradients are smaller than the weighted one (the first is
    # -0.5 x, the second -(1 - p) x with p > 1/2), so n = sum of squares < 4 x^2.
    assert np.all(repeated.n_[0, [0, 2]] < weighted.n_[0, [0, 2]])


# --------------------------------------------------------------- prediction
# score is R^2 for a regressor, which warns on a single row.
@pytest.mark.filterwarnings("ignore:R.2 score is not well-defined")
@given(problem=problems(exponents=(-3, 3)), engine_params=st.sampled_from(ENGINE_PARAMS))
def test_predicting_never_changes_the_model(problem, engine_params):
    model = problem.learn(problem.model(**engine_params))
    before = snapshot(model)
    X, y = problem.X, problem.y
    methods = ["predict", "score"]
    if isinstance(model, FTRLClassifier):
        methods += ["predict_proba", "predict_log_proba", "decision_function"]
    for method in methods:
        args = (X, y) if method == "score" else (X,)
        getattr(model, method)(*args)
        _ = model.coef_, model.intercept_
        assert_same(before, snapshot(model))
