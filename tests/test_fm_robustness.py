"""The factorization machines at the edges: inputs and hyper-parameters up to
the ends of the float range, stored zeros, assigned and loaded states, every
random generator, the memory of wide models; property tests draw the scales
and hyper-parameters.

Each prediction is checked against the model's definition with the clipped
terms of docs/fm_math.rst (tests/reference_fm.py's explicit sum over pairs)
or against the margins a pass computes from the same state; each state
against the state of the same rows without what must change nothing.
"""

import copy
import io
import pickle
import tracemalloc
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from reference import rows_as_dicts
from reference_fm import clipped_term, explicit_pairwise
from sklearn.feature_extraction import FeatureHasher
from test_cli import run_here, write

from conftest import HAS_NUMBA, assert_same, needs_numba, snapshot
from skftrl import FMClassifier, FMRegressor, FTRLClassifier
from skftrl._sklearn_compat import InvalidParameterError

FM_STATE = ["z_", "n_", "z_intercept_", "n_intercept_", "z_factors_", "n_factors_"]
# Each FM pass: per row in numpy and numba, mini-batches in numpy.
FM_PASSES = [
    pytest.param(dict(engine="numpy"), id="numpy"),
    pytest.param(dict(engine="numba"), id="numba", marks=needs_numba),
    pytest.param(dict(engine="numpy", batch_size=4), id="numpy-mini-batches"),
]
EXACT_ENGINES = ["numpy", pytest.param("numba", marks=needs_numba)]
TASKS = ["binary", "multiclass", "squared_error", "poisson"]


def problem(task, scale=1.0, n_rows=40, n_features=8, seed=0):
    """Sparse rows of values of both signs up to ``scale``, and targets."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_features, density=0.5, format="csr", random_state=rng)
    X.data = rng.uniform(-1.0, 1.0, size=X.nnz) * scale
    if task == "binary":
        y = rng.integers(0, 2, size=n_rows)
    elif task == "multiclass":
        y = rng.integers(0, 3, size=n_rows)
    elif task == "poisson":
        y = rng.poisson(1.5, size=n_rows).astype(float)
    else:
        y = rng.normal(size=n_rows) * min(scale, 1e300)
    return X, y


def model_for(task, **params):
    if task in ("binary", "multiclass"):
        return FMClassifier(**params)
    return FMRegressor(loss=task, **params)


def learn(model, X, y, sample_weight=None):
    if isinstance(model, FMClassifier):
        classes = np.union1d(y, [0, 1])  # two classes at least, whatever a few rows hold
        return model.partial_fit(X, y, classes=classes, sample_weight=sample_weight)
    return model.partial_fit(X, y, sample_weight=sample_weight)


def margins_of(model, X):
    """The model's margins, shape (n_rows, n_outputs)."""
    if isinstance(model, FMClassifier):
        return model.decision_function(X).reshape(X.shape[0], -1)
    scores = model._decision_scores(X)  # predict is exp(margin) for the Poisson loss
    return scores.reshape(X.shape[0], -1)


def pass_margins(model, X):
    """The margins a pass over X computes from the model's state: a pass over
    rows of weight 0 with factor_l2 = 0 changes nothing, so every row's margin
    comes from the same state (the pass runs on a copy)."""
    state = copy.deepcopy(model)._writable_state()
    parameters = model._parameters()
    assert parameters.factor_l2 == 0
    targets = np.zeros(X.shape[0], dtype=np.intp)  # class indices, or regression targets
    weights = np.zeros(X.shape[0])
    return model._engine().learn(state, parameters, X, targets, weights, np.arange(X.shape[0]))


def definition_margins(model, X):
    """The margins of the docs' definition, from the model's public weights:
    ``b + sum_i w_i x_i + sum_{i<j} sum_f t_{i,f} t_{j,f}`` with the clipped
    terms ``t = clip(v x)``, and a bound on their rounding: 1e-12 of the
    magnitudes the identity adds and subtracts."""
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    coef, intercept, factors = model.coef_, model.intercept_, model.components_
    expected = np.empty((X.shape[0], len(intercept)))
    magnitude = np.empty_like(expected)
    for r, x in enumerate(rows):
        for o in range(len(intercept)):
            V = factors[o].tolist()
            linear = [coef[o, i] * value for i, value in x.items()]
            expected[r, o] = intercept[o] + sum(linear) + explicit_pairwise(x, V)
            terms = np.array(
                [[clipped_term(V[i][f], v) for f in range(len(V[i]))] for i, v in x.items()]
            )
            squares = (terms**2).sum() + (np.abs(terms).sum(axis=0) ** 2).sum() if x else 0.0
            magnitude[r, o] = abs(intercept[o]) + sum(map(abs, linear)) + squares
    return expected, magnitude


def assert_margins_agree(got, expected, magnitude):
    """``got`` equals ``expected`` to 1e-12 of ``magnitude``, elementwise (clamped
    to the largest float, as margins are)."""
    largest = np.finfo(np.float64).max
    expected = np.clip(expected, -largest, largest)
    bound = 1e-12 * np.minimum(magnitude + np.abs(expected), largest)
    assert np.all(np.abs(got - expected) <= bound), np.max(np.abs(got - expected) / bound)


# ------------------------------------------------------------- predictions
@pytest.mark.parametrize("fm_pass", FM_PASSES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scale", [1.0, 1e60, 1e154, 1e200, 1e300])
def test_predictions_use_the_clipped_terms_of_the_passes(scale, task, dtype, fm_pass):
    """Regression: prediction did not clip the terms v x as the passes do:
    from about 1e154 it gave NaN (finite state and loss), and from about
    1e60 a margin unlike the pass's on the same state. Now both are the
    definition's, with the clipped terms."""
    X, y = problem(task, scale)
    model = model_for(task, factor_l2=0.0, dtype=dtype, random_state=0, **fm_pass)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow or 0/0 inside
        learn(model, X, y)
        learn(model, X, y)
        margins = margins_of(model, X)
        predictions = model.predict_proba(X) if task in TASKS[:2] else model.predict(X)
    assert np.all(np.isfinite(margins)) and np.all(np.isfinite(predictions))
    expected, magnitude = definition_margins(model, X)
    assert_margins_agree(margins, expected, magnitude)
    assert_margins_agree(margins, pass_margins(model, X), magnitude)


@pytest.mark.parametrize("fm_pass", FM_PASSES)
@pytest.mark.parametrize("task", TASKS)
def test_rows_of_huge_values_predict_the_clipped_definition_without_a_warning(task, fm_pass):
    """Regression: a model learned at scale 1 predicting rows near the float
    range warned of an overflow (in v x, before the clip to 1e50). The result
    is the definition's with the clipped terms; for the Poisson loss, the
    mean of the capped margin, exp(min(m, 700)), as the linear model's."""
    X, y = problem(task)
    model = model_for(task, factor_l2=0.0, random_state=0, init_stdev=10.0, **fm_pass)
    learn(model, X, y)
    huge, _ = problem(task, scale=1.7e308, seed=1)  # times factors near 10: inf
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        margins = margins_of(model, huge)
        predictions = model.predict_proba(huge) if task in TASKS[:2] else model.predict(huge)
    expected, magnitude = definition_margins(model, huge)
    assert_margins_agree(margins, expected, magnitude)
    if task == "poisson":
        assert np.array_equal(predictions, np.exp(np.minimum(margins[:, 0], 700.0)))
    assert np.all(np.isfinite(predictions))


def test_the_command_line_predicts_and_tests_a_model_of_huge_values(tmp_path):
    """Regression: ``skftrl predict`` printed nan with exit 0 and ``skftrl
    test`` died with a traceback for a model trained on values of 1e200."""
    lines = [
        f"{1 if i % 3 else -1} 1:{i + 1}e200 2:{i % 5}e199 3:1 {4 + i % 4}:2e200\n"
        for i in range(40)
    ]
    write(tmp_path / "huge.svm", lines)
    trained = run_here("train", "huge.svm", "--model", "m", "--factors", 3, cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    predicted = run_here("predict", "huge.svm", "--model", "m", cwd=tmp_path)
    assert predicted.returncode == 0, predicted.stderr
    values = np.array(predicted.stdout.split(), dtype=float)
    assert len(values) == 40 and np.all(np.isfinite(values))
    tested = run_here("test", "huge.svm", "--model", "m", cwd=tmp_path)
    assert tested.returncode == 0, tested.stderr
    assert "accuracy" in tested.stdout and "nan" not in tested.stdout.lower()


@pytest.mark.parametrize("model", [FMRegressor(random_state=0), FTRLClassifier()])
def test_a_dense_matrix_predicts_the_same_bits_in_any_memory_layout(model):
    """Regression: a dense X's predictions (a BLAS product) differed in the
    last bit between C and Fortran order and its CSR."""
    X, y = problem("binary", n_rows=60, n_features=40)
    model.fit(X, y)
    dense = X.toarray()
    expected = (
        model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X)
    )
    predict = model.decision_function if hasattr(model, "decision_function") else model.predict
    for layout in (
        np.ascontiguousarray(dense),
        np.asfortranarray(dense),
        np.hstack([dense, dense])[:, :40],
    ):
        assert np.array_equal(predict(layout), expected)


# --------------------------------------------------------- numba and numpy
@needs_numba
@pytest.mark.parametrize("n_components", [1, 9, 16])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scale", [1.0, 1e100, 1e154, 1e250])
def test_engines_agree_where_clipped_terms_tie(scale, task, n_components):
    """Regression: near 1e154 the numpy engine summed a row's 8 or more
    components pairwise and numba in order; clipped terms that tie exactly
    then cancel differently. Both now sum in order."""
    for seed in range(3):
        X, y = problem(task, scale, seed=seed)
        models = [
            model_for(task, n_components=n_components, engine=engine, random_state=0)
            for engine in ("numpy", "numba")
        ]
        for model in models:
            for _ in range(3):
                learn(model, X, y)
        assert_engines_agree(models, 3 * X.shape[0])
        assert_allclose(*(margins_of(model, X) for model in models), rtol=1e-9)


@needs_numba
def test_engines_agree_on_the_rows_where_they_were_242_times_apart():
    # The case found: three classes, 16 components, values of 1e154.
    rng = np.random.RandomState(2)
    X = sp.random(60, 8, density=0.6, format="csr", random_state=rng)
    X.data = rng.uniform(-1, 1, size=X.nnz) * 1e154
    rng.randint(2, size=60)
    y = rng.randint(3, size=60)
    models = [FMClassifier(engine=e, n_components=16, random_state=0) for e in ("numpy", "numba")]
    for model in models:
        for _ in range(3):
            model.partial_fit(X, y, classes=[0, 1, 2])
    assert_engines_agree(models, 180)


# ------------------------------------------------------------ stored zeros
def with_explicit_zeros(X, seed=0):
    """X with a stored 0 in about a third of its rows (canonical, sorted)."""
    rng = np.random.default_rng(seed)
    dense_pattern = X.toarray()
    rows, columns = np.nonzero(dense_pattern == 0)
    chosen = rng.choice(len(rows), size=len(rows) // 3, replace=False)
    coo = X.tocoo()
    data = np.concatenate([coo.data, np.zeros(len(chosen))])
    zeros = sp.csr_matrix(
        (
            data,
            (np.concatenate([coo.row, rows[chosen]]), np.concatenate([coo.col, columns[chosen]])),
        ),
        shape=X.shape,
    )
    zeros.sort_indices()
    assert zeros.nnz == X.nnz + len(chosen) and zeros.has_canonical_format
    return zeros


@pytest.mark.parametrize("fm_pass", FM_PASSES)
@pytest.mark.parametrize("task", TASKS)
def test_stored_zeros_change_nothing(task, fm_pass):
    """Regression: a stored 0 made factor_l2 shrink that feature's factors, in
    every engine; the docs say a feature whose value is 0 is not touched.
    Explicit zeros, dense input and a model learned without them give the
    same state."""
    X, y = problem(task)
    zeros = with_explicit_zeros(X)
    states = []
    for data in (X, zeros, X.toarray()):
        model = model_for(task, factor_l2=0.1, random_state=0, **fm_pass)
        learn(model, data, y)
        learn(model, data, y)
        states.append([getattr(model, name) for name in FM_STATE])
    for name, arrays in zip(FM_STATE, zip(*states)):
        assert np.array_equal(arrays[1], arrays[0]) and np.array_equal(arrays[2], arrays[0]), name


def test_a_hashed_matrix_whose_collisions_cancel_learns_as_its_non_zeros():
    """FeatureHasher (alternate_sign=True) stores 0 where two features of a
    row cancel in one column: the FM learns as if the 0 were not stored."""
    rows = [{f"a{i}": 1.0, f"b{i}": 1.0, f"c{i % 7}": 2.0} for i in range(300)]
    X = FeatureHasher(n_features=16).transform(rows).tocsr()
    assert np.count_nonzero(X.data == 0) > 0  # some collisions cancel
    y = np.arange(300) % 2
    cleaned = X.copy()
    cleaned.eliminate_zeros()
    models = [
        FMClassifier(factor_l2=0.1, random_state=0).partial_fit(data, y, classes=[0, 1])
        for data in (X, cleaned)
    ]
    for name in FM_STATE:
        assert np.array_equal(getattr(models[0], name), getattr(models[1], name)), name


def test_the_command_line_learns_a_libsvm_zero_as_no_feature(tmp_path):
    """LIBSVM's ``j:0`` entries are stored zeros: the model learned from a
    file with them is the one learned from the file without them."""
    lines = [f"{1 if i % 3 else -1} {1 + i % 4}:1 {5 + i % 3}:0.5 9:{i % 2}\n" for i in range(60)]
    write(tmp_path / "zeros.svm", lines)
    write(tmp_path / "plain.svm", [line.replace(" 9:0", "") for line in lines])
    for name in ("zeros", "plain"):
        result = run_here(
            "train",
            f"{name}.svm",
            "--model",
            name,
            "--factors",
            2,
            "--factor-l2",
            0.1,
            "--n-features",
            9,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
    with_zeros, without = (joblib.load(tmp_path / name) for name in ("zeros", "plain"))
    for name in FM_STATE:
        assert np.array_equal(getattr(with_zeros, name), getattr(without, name)), name


# --------------------------------------------------------- assigned states
def wrong_arrays(array):
    """Arrays that cannot replace ``array``: narrower, of another dtype, not an array."""
    narrower = array[:, : array.shape[1] // 2] if array.ndim > 1 else array[:0]
    return {
        "narrower": np.array(narrower),
        "wider": np.zeros((array.shape[0] + 1, *array.shape[1:]), dtype=array.dtype),
        "int64": array.astype(np.int64),
        "float16": array.astype(np.float16),
        "list": array.tolist(),
    }


@pytest.mark.parametrize("fm_pass", FM_PASSES)
@pytest.mark.parametrize("name", FM_STATE)
def test_an_assigned_state_of_the_wrong_shape_or_dtype_is_refused(name, fm_pass):
    """Regression: the docs allow assigning the state's arrays; one narrower
    than the model made the numba pass write past it (heap corruption) and
    the numpy pass raise an IndexError. Every array is now checked before a
    pass and a prediction: a ValueError names it, and the model is unchanged."""
    X, y = problem("multiclass")
    model = FMClassifier(random_state=0, **fm_pass).partial_fit(X, y, classes=[0, 1, 2])
    for wrong in wrong_arrays(getattr(model, name)).values():
        broken = copy.deepcopy(model)
        setattr(broken, name, wrong)
        before = snapshot(broken)
        for method, args in ((broken.partial_fit, (X, y)), (broken.predict, (X,))):
            with pytest.raises(ValueError, match=f"^{name} must be a numpy array"):
                method(*args)
            assert_same(before, snapshot(broken))


def test_an_assigned_state_of_the_right_shape_and_dtype_is_learned_from():
    X, y = problem("binary")
    model = FMClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])
    again = copy.deepcopy(model)
    model.z_factors_ = np.array(model.z_factors_)  # writable, of the model's shape
    model.partial_fit(X, y)
    again.partial_fit(X, y)
    for name in FM_STATE:
        assert np.array_equal(getattr(model, name), getattr(again, name)), name


# ------------------------------------------------------- random generators
def skops_round_trip(model):
    sio = pytest.importorskip("skops.io")
    if model.random_state.get_state(legacy=False)["bit_generator"] != "MT19937":
        # skops makes a RandomState parameter again on the Mersenne twister only.
        pytest.skip("skops saves a RandomState parameter of the Mersenne twister only")
    return sio.loads(sio.dumps(model), trusted=[type(model)])


@pytest.mark.parametrize(
    "round_trip",
    [lambda m: pickle.loads(pickle.dumps(m)), lambda m: joblib.load(dump(m)), skops_round_trip],
    ids=["pickle", "joblib", "skops"],
)
@pytest.mark.parametrize("bit_generator", ["MT19937", "PCG64", "Philox", "SFC64"])
def test_every_random_state_instance_is_accepted_and_saved(bit_generator, round_trip):
    """Regression: a RandomState of another bit generator than the Mersenne
    twister crashed fit ("too many values to unpack"). Any is accepted; where
    the compact save cannot draw its factors again, they are saved whole."""
    generator = np.random.RandomState(getattr(np.random, bit_generator)(0))
    X = sp.random(60, 2**12, density=4 / 2**12, format="csr", random_state=0)
    y = np.arange(60) % 2
    model = FMClassifier(n_components=4, random_state=generator)
    model.partial_fit(X[:40], y[:40], classes=[0, 1])
    expected = 0.01 * np.random.RandomState(getattr(np.random, bit_generator)(0)).standard_normal(
        (1, 2**12, 4)
    )
    untouched = np.setdiff1d(np.arange(2**12), X[:40].indices)
    assert_allclose(model.components_[:, untouched], expected[:, untouched], rtol=1e-15)
    resumed = round_trip(model)
    for name in FM_STATE:
        assert np.array_equal(getattr(resumed, name), getattr(model, name)), name
    assert (len(pickle.dumps(model)) < 60_000) == (bit_generator == "MT19937")
    model.partial_fit(X[40:], y[40:])
    resumed.partial_fit(X[40:], y[40:])
    for name in FM_STATE:
        assert np.array_equal(getattr(resumed, name), getattr(model, name)), name


def dump(model):
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    return buffer


# --------------------------------------------------------- hyper-parameters
EXTREME_HYPER_PARAMETERS = [
    {"learning_rate": 1e-310},
    {"factor_learning_rate": 1e-310},
    {"learning_rate": 1e-300},
    {"beta": 1e308},
    {"init_stdev": 1e300},
    {"init_stdev": 1e308},
    {"init_stdev": 1e200, "learning_rate_power": -1.0},
    {"learning_rate": 1e300, "beta": 1e-300},
    {"factor_learning_rate": 1e300, "learning_rate_power": 0.0},
    {"learning_rate": 1e-250, "learning_rate_power": -1.0},
    {"factor_l2": 1e308},
    {"initial_accumulator_value": 1e308},
]


def fit_or_refusal(model, X, y):
    """``("refused", message)`` or ``("fitted", model)`` after two partial_fit calls."""
    try:
        with np.errstate(all="ignore"):
            learn(model, X, y)
            learn(model, X, y)
    except ValueError as error:
        return "refused", str(error)
    return "fitted", model


def assert_engines_agree(models, n_rows):
    """The states of two models to 1e-9: each n relatively; each z relatively,
    or within 1e-9 of the gradients it has summed (at most sqrt(n * rows)),
    which cancel to a z far smaller than them as the engines' margins differ
    in rounding."""
    for z_name, n_name in (("z_", "n_"), ("z_intercept_", "n_intercept_")) + (
        (("z_factors_", "n_factors_"),) if hasattr(models[0], "z_factors_") else ()
    ):
        (z, z_other), (n, n_other) = (
            (getattr(m, name) for m in models) for name in (z_name, n_name)
        )
        assert_allclose(n, n_other, rtol=1e-9, atol=0, err_msg=n_name)
        gradients = np.sqrt(np.maximum(n, n_other).astype(np.float64)) * np.sqrt(n_rows)
        bound = 1e-9 * (np.abs(z_other.astype(np.float64)) + gradients)
        assert np.all(np.abs(z.astype(np.float64) - z_other) <= bound), z_name


def assert_finite_or_refused_alike(task, X, y, params, hyper):
    """Two partial_fit calls of the numpy and numba engines with ``params``:
    both refuse them with the same message, naming one of ``hyper``, or both
    give a finite model, the same to rounding."""
    results = [
        fit_or_refusal(model_for(task, engine=engine, **params), X, y)
        for engine in ("numpy", "numba")
    ]
    assert results[0][0] == results[1][0]
    if results[0][0] == "refused":
        assert results[0][1] == results[1][1]
        assert any(name in results[0][1] for name in hyper), results[0][1]
        return
    for _, model in results:
        assert_finite_model(model, X)
    assert_engines_agree([model for _, model in results], 2 * X.shape[0])


def assert_finite_model(model, X):
    for name in FM_STATE:
        assert np.all(np.isfinite(getattr(model, name))), name
    assert np.all(np.isfinite(model.components_)) and np.all(np.isfinite(model.coef_))
    assert np.all(np.isfinite(model.loss_curve_))
    assert np.all(np.isfinite(margins_of(model, X)))
    predictions = model.predict_proba(X) if isinstance(model, FMClassifier) else model.predict(X)
    assert np.all(np.isfinite(predictions))


@needs_numba
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scale", [1.0, 1e100, 1e300])
@pytest.mark.parametrize("task", ["multiclass", "squared_error"])
@pytest.mark.parametrize("hyper", EXTREME_HYPER_PARAMETERS, ids=str)
def test_extreme_hyper_parameters_give_a_finite_model_or_a_clear_refusal(
    hyper, task, scale, dtype
):
    """Regression: tiny rates (1e-310), beta=1e308 and init_stdev >= 1e300
    overflowed the initial factors, and the numpy engine made the state NaN
    where numba kept it finite. Now both engines refuse the same parameters,
    naming them, or give the same finite model."""
    X, y = problem(task, scale)
    assert_finite_or_refused_alike(task, X, y, dict(dtype=dtype, random_state=0, **hyper), hyper)


def test_the_command_line_saves_no_model_of_overflowing_factors(tmp_path):
    """Regression: the command line saved a NaN model with exit 0."""
    write(tmp_path / "a.svm", [f"{1 if i % 2 else -1} 1:1 {2 + i % 3}:1\n" for i in range(20)])
    result = run_here(
        "train", "a.svm", "--model", "m", "--factors", 2, "--learning-rate", "1e-310", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "initial factors that overflow" in result.stderr
    assert not (tmp_path / "m").exists()


def test_a_bool_is_refused_as_a_number_of_components():
    """Regression: n_components=True passed validation, then failed in numpy."""
    X, y = problem("binary")
    with pytest.raises(InvalidParameterError, match="'n_components' parameter .* not a bool"):
        FMClassifier(n_components=True).fit(X, y)


@pytest.mark.parametrize("make", [FMClassifier, FTRLClassifier])
def test_a_batch_size_beyond_the_rows_is_one_batch_of_them_all(make):
    """Regression: batch_size >= 2**64 raised an OverflowError."""
    X, y = problem("binary")
    huge = make(batch_size=2**64, random_state=0).partial_fit(X, y, classes=[0, 1])
    whole = make(batch_size=len(y), random_state=0).partial_fit(X, y, classes=[0, 1])
    for name in ("z_", "n_", "z_intercept_", "n_intercept_"):
        assert np.array_equal(getattr(huge, name), getattr(whole, name)), name


# ------------------------------------------------------------ saved files
def skops_file(model, tmp_path, tamper, monkeypatch):
    """The model saved by skops with its saved state changed by ``tamper(state)``."""
    sio = pytest.importorskip("skops.io")
    getstate = type(model).__getstate__
    path = tmp_path / "model.skops"
    with monkeypatch.context() as patched:
        patched.setattr(type(model), "__getstate__", lambda self: tamper(getstate(self)))
        sio.dump(model, path)
    return sio, path


def wide_model():
    X = sp.random(50, 2**12, density=3 / 2**12, format="csr", random_state=0)
    return FMClassifier(n_components=4, random_state=0).partial_fit(X, np.arange(50) % 2, [0, 1])


def enlarged_shape(state):
    state["_touched_factors"]["shape"] = np.array([1, 2**22, 8])
    return state


def narrower_state(state):
    state["n_features_in_"] = state["n_features_in_"] - 1
    return state


def longer_positions(state):
    state["_touched_factors"]["positions"][-1] = 10**12
    return state


def misshapen_intercept(state):
    state["z_intercept_"] = np.zeros(3)
    return state


@pytest.mark.parametrize(
    "tamper, message",
    [
        (enlarged_shape, "has the shape .* not the model's"),
        (narrower_state, "has the shape .* not the model's"),
        (longer_positions, "holds positions outside"),
        (misshapen_intercept, "z_intercept_ must be a numpy array"),
    ],
)
def test_a_tampered_skops_file_is_refused_before_anything_is_allocated(
    tamper, message, tmp_path, monkeypatch
):
    """Regression: a skops file whose record of touched factors claimed a
    larger shape made loading allocate it (gigabytes), and one inconsistent
    with the model loaded and failed at predict with a broadcast error. The
    records are checked against the model first."""
    model = wide_model()
    sio, path = skops_file(model, tmp_path, tamper, monkeypatch)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=message):
            sio.load(path, trusted=[FMClassifier])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20


def cast_words(state):
    state["_initial_factors"] = dict(state["_initial_factors"])  # not the model's own
    state["_initial_factors"]["words"] = state["_initial_factors"]["words"].astype(np.float64)
    return state


def cast_key(state):
    state["_initial_factors"] = dict(state["_initial_factors"])  # not the model's own
    state["_initial_factors"]["key"] = state["_initial_factors"]["key"].astype(np.int64)
    return state


def list_of_words(state):
    state["_initial_factors"] = dict(state["_initial_factors"])  # not the model's own
    state["_initial_factors"]["words"] = state["_initial_factors"]["words"].tolist()
    return state


def no_scale(state):
    state["_initial_factors"] = dict(state["_initial_factors"])  # not the model's own
    del state["_initial_factors"]["scale"]
    return state


def no_record(state):
    del state["_initial_factors"]
    return state


@pytest.mark.parametrize(
    "random_state, tamper, message",
    [
        (0, cast_words, r"holds words as float64 \(6,\), not uint64 \(6,\)"),
        (0, list_of_words, r"holds words as list, not uint64"),
        (0, no_scale, r"holds \['words'\], not the arrays of"),
        (np.random.RandomState(0), cast_key, r"holds key as int64 \(624,\), not uint32"),
        (0, no_record, r"saved state has no _initial_factors"),
    ],
)
def test_a_damaged_record_of_the_initial_factors_is_refused(
    random_state, tamper, message, tmp_path, monkeypatch
):
    """Regression: a record of PCG64 whose words were cast to float (as a
    format without unsigned 64-bit integers keeps them) loaded, and drew
    other initial factors from the rounded words. Each file: skops, pickle."""
    X = sp.random(50, 2**12, density=3 / 2**12, format="csr", random_state=0)
    model = FMClassifier(n_components=4, random_state=random_state)
    model.partial_fit(X, np.arange(50) % 2, [0, 1])
    assert "_touched_factors" in model.__getstate__()  # the untouched factors drawn again
    sio, path = skops_file(model, tmp_path, tamper, monkeypatch)
    with pytest.raises(ValueError, match=message):
        sio.load(path, trusted=[FMClassifier])
    getstate = FMClassifier.__getstate__
    monkeypatch.setattr(FMClassifier, "__getstate__", lambda self: tamper(getstate(self)))
    data = pickle.dumps(model)
    with pytest.raises(ValueError, match=message):
        pickle.loads(data)


# ------------------------------------------------------------------ memory
def state_bytes(model):
    return sum(getattr(model, name).nbytes for name in FM_STATE)


def allocated_peak(operation):
    """The peak of the memory Python and numpy allocate during ``operation()``,
    from what they held before it, and its result."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = operation()
        return tracemalloc.get_traced_memory()[1] - before, result
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_wide_fm_learns_saves_and_loads_in_little_more_than_its_state(dtype, tmp_path):
    """Regression: the first partial_fit of 2**18 columns x 8 factors
    allocated at its peak 1.9 (float64) and 2.8 (float32) times the state
    (its initial factors drawn whole in float64, then a scaled copy), saving
    2.8 and 3.7 times, loading 2.8 and 3.7 times (the initial factors drawn
    again whole). Now about 1.05 times. The figures of 2**24 columns are on
    the benchmarks page (benchmarks/bench_memory.py)."""
    X = sp.random(50, 2**18, density=20 / 2**18, format="csr", random_state=0)
    y = np.arange(50) % 2
    model = FMClassifier(n_components=8, dtype=dtype, random_state=0, engine="numpy")
    peak, _ = allocated_peak(lambda: model.partial_fit(X, y, classes=[0, 1]))
    state = state_bytes(model)
    assert peak <= 1.3 * state
    path = tmp_path / "model.pickle"
    with open(path, "wb") as file:  # pickle protocol 5 writes the arrays as they are
        peak, _ = allocated_peak(lambda: pickle.dump(model, file, protocol=5))
    assert state + peak <= 1.3 * state
    with open(path, "rb") as file:
        peak, loaded = allocated_peak(lambda: pickle.load(file))
    assert peak <= 1.3 * state
    for name in FM_STATE:
        assert np.array_equal(getattr(loaded, name), getattr(model, name)), name


def test_saving_a_wide_linear_model_takes_memory_for_its_touched_coordinates_only(tmp_path):
    """Regression: saving a wide, barely trained model took about 2 bytes a
    column (2**31 float32 columns: past 3.5 GiB for a 1.2 KB file). Here
    2**25 columns: 64 MiB before."""
    X = sp.csr_matrix(
        (np.ones(300), np.arange(300) * 2**15, np.arange(0, 301, 3)), shape=(100, 2**25)
    )
    model = FTRLClassifier(dtype=np.float32, engine="numpy").partial_fit(
        X, np.arange(100) % 2, [0, 1]
    )
    with open(tmp_path / "model.pickle", "wb") as file:
        peak, _ = allocated_peak(lambda: pickle.dump(model, file, protocol=5))
    assert peak < 2**20  # the state is 2**28 bytes, nearly all never written
    with open(tmp_path / "model.pickle", "rb") as file:
        loaded = pickle.load(file)
    assert np.array_equal(loaded.z_, model.z_) and np.array_equal(loaded.n_, model.n_)


# ------------------------------------------------------------------ properties
@st.composite
def fm_problems(draw, exponents=(-300, 300)):
    """A task, sparse rows of values up to 10**e (e drawn from ``exponents``),
    targets, and an FM's parameters."""
    task = draw(st.sampled_from(TASKS))
    n_rows, n_features = draw(st.integers(1, 12)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = sp.random(
        n_rows, n_features, density=draw(st.floats(0.2, 1.0)), format="csr", random_state=rng
    )
    X.data = rng.uniform(-1.0, 1.0, size=X.nnz) * 10.0 ** draw(st.integers(*exponents))
    if task == "binary":
        y = np.resize([0, 1], n_rows)
    elif task == "multiclass":
        y = np.resize([0, 1, 2], n_rows)
    elif task == "poisson":
        y = rng.poisson(2.0, size=n_rows).astype(float)
    else:
        y = rng.normal(size=n_rows) * 10.0 ** draw(st.integers(-3, 300))
    params = dict(
        n_components=draw(st.integers(1, 10)),
        init_stdev=draw(st.floats(0.0, 1.0)),
        dtype=draw(st.sampled_from([np.float64, np.float32])),
        random_state=0,
    )
    return task, X, y, params


@given(
    drawn=fm_problems(),
    fm_pass=st.sampled_from([p.values[0] for p in FM_PASSES if not p.marks or HAS_NUMBA]),
)
def test_predictions_are_the_definitions_at_every_scale(drawn, fm_pass):
    task, X, y, params = drawn
    model = model_for(task, factor_l2=0.0, **params, **fm_pass)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        learn(model, X, y)
        margins = margins_of(model, X)
    expected, magnitude = definition_margins(model, X)
    assert np.all(np.isfinite(margins))
    assert_margins_agree(margins, expected, magnitude)
    assert_margins_agree(margins, pass_margins(model, X), magnitude)


@given(
    drawn=fm_problems(exponents=(-5, 5)),
    factor_l2=st.floats(1e-6, 10.0),
    fm_pass=st.sampled_from([p.values[0] for p in FM_PASSES if not p.marks or HAS_NUMBA]),
    seed=st.integers(0, 1000),
)
def test_stored_zeros_never_change_a_model(drawn, factor_l2, fm_pass, seed):
    task, X, y, params = drawn
    states = []
    for data in (X, with_explicit_zeros(X, seed) if X.nnz < X.shape[0] * X.shape[1] else X):
        model = learn(model_for(task, factor_l2=factor_l2, **params, **fm_pass), data, y)
        states.append([getattr(model, name) for name in FM_STATE])
    for name, (got, expected) in zip(FM_STATE, zip(*states)):
        assert np.array_equal(got, expected), name


def positive_log_uniform(low, high):
    """10**e for e uniform in [low, high]."""
    return st.floats(low, high).map(lambda e: 10.0**e)


def log_uniform(low, high):
    """0, or 10**e for e uniform in [low, high]."""
    return st.one_of(st.just(0.0), positive_log_uniform(low, high))


@needs_numba
@given(
    drawn=fm_problems(),
    learning_rate=positive_log_uniform(-320, 308),
    factor_learning_rate=st.one_of(st.none(), positive_log_uniform(-320, 308)),
    beta=positive_log_uniform(-320, 308),
    init_stdev=log_uniform(-320, 308),
    factor_l2=log_uniform(-320, 308),
    l1=log_uniform(-320, 308),
    l2=log_uniform(-320, 308),
    learning_rate_power=st.one_of(st.just(-0.5), st.floats(-1.0, 0.0)),
)
def test_any_hyper_parameters_give_a_finite_model_or_a_clear_refusal(drawn, **hyper):
    task, X, y, params = drawn
    assert_finite_or_refused_alike(task, X, y, dict(params, **hyper), hyper)
