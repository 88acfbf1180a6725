"""Parallel passes (``n_jobs``): rounds of shards learned by threads, their
changes merged.

The compiled engine's parallel passes against the slow reference written
from docs/parallel.rst (tests/reference_rounds.py), on small data with short
rounds; the same bits on every run; ``n_jobs=1`` as the sequential pass; the
numpy engines ignoring ``n_jobs``; a failure inside a parallel pass leaving
the model as it was; and the held-out loss of a9a close to the sequential
pass's with the rounds as they are.
"""

import copy
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from reference import ReferenceFTRL, rows_as_dicts
from reference_fm import ReferenceFM
from reference_rounds import learn_in_rounds, rounds
from sklearn.metrics import log_loss
from threadpoolctl import threadpool_limits

from conftest import HAS_NUMBA, assert_same, snapshot
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor
from skftrl._engines import _rounds
from skftrl.datasets import load_a9a

needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="parallel passes need numba")
TOLERANCE = dict(rtol=1e-10, atol=1e-12)
# Short rounds, so that a few hundred rows make many: (growth for 2 and for
# more threads, smallest and largest shard).
SHORT = ({2: 3.0, 3: 2.0}, 2, 9)
HYPER = dict(learning_rate=0.3, beta=0.5, l1=0.05, l2=0.1)


@pytest.fixture
def short_rounds(monkeypatch):
    growth, smallest, largest = SHORT
    monkeypatch.setattr(_rounds, "GROWTH", growth)
    monkeypatch.setattr(_rounds, "SMALLEST_SHARD", smallest)
    monkeypatch.setattr(_rounds, "LARGEST_SHARD", largest)


def short_rounds_of(n_rows, n_jobs, seen):
    """The shards of each round of a pass with the short rounds."""
    growth, smallest, largest = SHORT
    return rounds(n_rows, n_jobs, seen, growth.get(n_jobs, growth[max(growth)]), smallest, largest)


def sparse_rows(seed, n_rows, n_features, density):
    """Sparse rows with an empty one; values of both signs."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_features, density=density, format="csr", random_state=rng)
    X.data = rng.normal(scale=1.5, size=X.nnz)
    keep = np.ones(n_rows)
    keep[5] = 0.0
    X = sp.csr_matrix(sp.diags(keep) @ X)
    X.eliminate_zeros()
    return X, rng


def test_rounds_follow_the_documented_rule():
    # Two threads: rows in order until 16 * sqrt(rows learned) reaches two
    # shards of 1024 rows, at 16384 rows learned; then rounds of 16 * sqrt(rows).
    assert list(_rounds.rounds(30_000, 2, 0))[:3] == [
        (0, 16_384, False),
        (16_384, 16_384 + 2048, True),
        (18_432, 18_432 + 2172, True),  # 16 * sqrt(18432) = 2172.2
    ]
    # Four threads: rounds of 4 * sqrt(rows), from 4 * 1024 rows.
    assert list(_rounds.rounds(10, 4, 2 * 10**6)) == [(0, 10, True)]
    assert next(_rounds.rounds(10**8, 4, 0)) == (0, 1024**2, False)
    # The largest shards bound the rounds; every row is in one round.
    rounds = list(_rounds.rounds(10**7, 2, 10**12))
    assert rounds[0] == (0, 2 * 2**14, True)
    assert all(a[1] == b[0] for a, b in zip(rounds[:-1], rounds[1:]))
    assert rounds[-1][1] == 10**7
    assert list(_rounds.rounds(0, 2, 0)) == []


def linear_reference(n_outputs, loss, **hyper):
    return ReferenceFTRL(
        n_outputs,
        loss=loss,
        alpha=hyper["learning_rate"],
        beta=hyper["beta"],
        l1=hyper["l1"],
        l2=hyper["l2"],
        fit_intercept=True,
    )


def assert_linear_state(model, reference):
    z, n, _ = reference.state(model.n_features_in_)
    assert_allclose(model.z_, z, **TOLERANCE)
    assert_allclose(model.n_, n, **TOLERANCE)
    assert_allclose(model.z_intercept_, reference.z_bias, **TOLERANCE)
    assert_allclose(model.n_intercept_, reference.n_bias, **TOLERANCE)


@needs_numba
@pytest.mark.parametrize("n_jobs", [2, 3])
@pytest.mark.parametrize(
    "n_features, density", [(12, 0.4), (3000, 0.004)], ids=["whole-copies", "renumbered"]
)
@pytest.mark.parametrize("task", ["binary", "multinomial", "regression"])
def test_linear_models_match_the_reference(short_rounds, n_jobs, n_features, density, task):
    X, rng = sparse_rows(0, 300, n_features, density)
    sample_weight = rng.uniform(0.5, 2.0, size=300)
    calls = [slice(0, 100), slice(100, 300)]  # the second starts from 100 rows learned
    if task == "regression":
        y = X @ rng.normal(size=n_features) + rng.normal(size=300)
        model, targets = FTRLRegressor(n_jobs=n_jobs, **HYPER), y
        reference = linear_reference(1, "squared_error", **HYPER)
        for rows in calls:
            model.partial_fit(X[rows], y[rows], sample_weight=sample_weight[rows])
    else:
        n_classes = 2 if task == "binary" else 3
        y = rng.integers(0, n_classes, size=300)
        model, targets = FTRLClassifier(n_jobs=n_jobs, **HYPER), y.astype(float)
        reference = linear_reference(
            1 if n_classes == 2 else 3, "log_loss" if n_classes == 2 else "multinomial", **HYPER
        )
        for rows in calls:
            model.partial_fit(X[rows], y[rows], np.arange(n_classes), sample_weight[rows])
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    for seen, part in zip([0, 100], calls):
        shards = short_rounds_of(part.stop - part.start, n_jobs, seen)
        learn_in_rounds(reference, rows[part], targets[part], sample_weight[part], shards)
    assert_linear_state(model, reference)


@needs_numba
@pytest.mark.parametrize("n_features, density", [(10, 0.4), (2000, 0.004)])
def test_factorization_machines_match_the_reference(short_rounds, n_features, density):
    X, rng = sparse_rows(1, 200, n_features, density)
    y = rng.integers(0, 2, size=200)
    model, reference = model_and_reference("fm", 2, n_features)
    model.partial_fit(X, y, classes=[0, 1])
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    learn_in_rounds(reference, rows, y.astype(float), np.ones(200), short_rounds_of(200, 2, 0))
    assert_allclose(model.z_, reference.z, **TOLERANCE)
    assert_allclose(model.n_, reference.n, **TOLERANCE)
    assert_allclose(model.z_factors_, reference.z_v, **TOLERANCE)
    assert_allclose(model.n_factors_, reference.n_v, **TOLERANCE)
    assert_allclose(model.z_intercept_, reference.z_bias, **TOLERANCE)


def model_and_reference(kind, n_jobs, n_features):
    """A model with ``n_jobs`` threads and its reference, both unfitted."""
    if kind == "linear":
        return FTRLClassifier(n_jobs=n_jobs, **HYPER), linear_reference(1, "log_loss", **HYPER)
    hyper = dict(HYPER, l1=0.0, n_components=3, init_stdev=0.1, factor_l2=0.01)
    model = FMClassifier(n_jobs=n_jobs, random_state=0, **hyper)
    reference = ReferenceFM(
        1,
        n_features,
        3,
        loss="log_loss",
        alpha=hyper["learning_rate"],
        beta=hyper["beta"],
        l1=0.0,
        l2=hyper["l2"],
        fit_intercept=True,
        init_stdev=0.1,
        random_state=0,
        lambda_v=0.01,
    )
    return model, reference


@needs_numba
@pytest.mark.parametrize("kind", ["linear", "fm"])
@pytest.mark.parametrize("n_jobs", [2, 3])
@pytest.mark.parametrize(
    "n_features, density",
    [(12, 0.4), (3000, 0.004)],
)
def test_calls_of_fewer_rows_than_threads_match_the_reference(
    short_rounds, kind, n_jobs, n_features, density
):
    # Once the rounds have begun, a call of one row (or of fewer rows than
    # threads, or whose first shard has no non-zeros) is a round with empty
    # shards: one row at a time is the sequential pass.
    X, rng = sparse_rows(5, 140, n_features, density)
    order = np.r_[0:5, 6:101, 5, 101:140]  # the empty row first in its call
    X, y = X[order], rng.integers(0, 2, size=140)
    calls = [slice(0, 100), *(slice(i, i + 1) for i in range(100, 110))]
    calls += [slice(110, 110 + n_jobs - 1), slice(110 + n_jobs - 1, 140)]
    model, reference = model_and_reference(kind, n_jobs, n_features)
    model.partial_fit(X[:100], y[:100], classes=[0, 1])
    sequential = copy.deepcopy(model).set_params(n_jobs=1)
    for rows in calls[1:11]:
        model.partial_fit(X[rows], y[rows])
        sequential.partial_fit(X[rows], y[rows])
        assert_same_state(learned_state(sequential), learned_state(model))
    for rows in calls[11:]:
        model.partial_fit(X[rows], y[rows])
    dicts = rows_as_dicts(X.indptr, X.indices, X.data)
    for rows in calls:
        shards = short_rounds_of(rows.stop - rows.start, n_jobs, rows.start)
        learn_in_rounds(reference, dicts[rows], y[rows].astype(float), np.ones(140), shards)
    if kind == "linear":
        assert_linear_state(model, reference)
    else:
        assert_allclose(model.z_, reference.z, **TOLERANCE)
        assert_allclose(model.z_factors_, reference.z_v, **TOLERANCE)
        assert_allclose(model.n_factors_, reference.n_v, **TOLERANCE)


@needs_numba
@pytest.mark.parametrize("n_jobs", [2, 3])
def test_one_row_rounds_of_models_in_turn_match_the_sequential_pass(short_rounds, n_jobs):
    # The compiled steps of the rounds take, in one process, a linear model's
    # strided z and n and a factorization machine's contiguous factors.
    # numba 0.59 and 0.60 could run the former with the code compiled for
    # the latter (see _rounds_numba), which read another column: a few
    # models of each in turn showed it.
    X, rng = sparse_rows(5, 140, 12, 0.4)
    X, y = X[np.r_[0:5, 6:101, 5, 101:140]], rng.integers(0, 2, size=140)
    for _ in range(5):
        for kind in ["linear", "fm"]:
            model, _ = model_and_reference(kind, n_jobs, 12)
            model.partial_fit(X[:100], y[:100], classes=[0, 1])
            sequential = copy.deepcopy(model).set_params(n_jobs=1)
            for row in range(100, 110):
                model.partial_fit(X[row : row + 1], y[row : row + 1])
                sequential.partial_fit(X[row : row + 1], y[row : row + 1])
                assert_same_state(learned_state(sequential), learned_state(model))


# Columns on both sides of 2**31 and of 2**32 (as a CSR matrix's int64 indices).
WIDE_COLUMNS = np.array([3, 1000, 2**31 - 1, 2**31, 2**31 + 5, 2**32 - 1, 2**32, 2**32 + 63])


def wide_rows(seed, n_rows, n_columns=8):
    """Rows of a few of the first ``n_columns`` of WIDE_COLUMNS each, repeated
    from row to row: as rows of the width they need and of a narrow model."""
    rng = np.random.default_rng(seed)
    rows = [np.unique(rng.choice(n_columns, size=3)) for _ in range(n_rows)]
    indptr = np.r_[0, np.cumsum([len(row) for row in rows])]
    values = rng.normal(size=indptr[-1])
    narrow = sp.csr_matrix((values, np.concatenate(rows), indptr), shape=(n_rows, n_columns))
    width = WIDE_COLUMNS[n_columns - 1] + 1
    wide = sp.csr_matrix((values, WIDE_COLUMNS[narrow.indices], indptr), shape=(n_rows, width))
    return wide, narrow, rng.integers(0, 2, size=n_rows)


@needs_numba
def test_a_model_wider_than_2_to_the_31_learns_in_rounds(short_rounds):
    # Its columns renumbered as a shard's: the same as the model of only the
    # columns the rows use. (The state of the columns no row uses is never
    # allocated: the model takes little memory.)
    wide, narrow, y = wide_rows(6, 60, n_columns=5)
    columns = WIDE_COLUMNS[:5]
    models = [FTRLClassifier(n_jobs=2, dtype=np.float32, **HYPER) for _ in range(2)]
    models[0].partial_fit(wide, y, classes=[0, 1])
    models[1].partial_fit(narrow, y, classes=[0, 1])
    assert np.array_equal(models[0].z_[:, columns], models[1].z_)
    assert np.array_equal(models[0].n_[:, columns], models[1].n_)
    assert np.array_equal(models[0].z_intercept_, models[1].z_intercept_)
    # The rounds ran: the model is not the sequential pass's.
    sequential = FTRLClassifier(dtype=np.float32, **HYPER).partial_fit(narrow, y, classes=[0, 1])
    assert not np.array_equal(sequential.z_, models[1].z_)


@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "numpy"])
def test_a_block_of_columns_beyond_2_to_the_32_is_renumbered(monkeypatch, compiled):
    # As skftrl.dask's workers renumber their rows' columns.
    if not compiled:
        monkeypatch.setitem(sys.modules, "skftrl._engines._rounds_numba", None)
    elif not HAS_NUMBA:
        pytest.skip("needs numba")
    wide, narrow, _ = wide_rows(7, 50)
    columns, renumbered = _rounds.compact_block(wide)
    assert np.array_equal(columns, WIDE_COLUMNS[np.unique(narrow.indices)])
    assert np.array_equal(renumbered.indptr, wide.indptr)
    assert np.array_equal(columns[renumbered.indices], wide.indices)
    assert np.array_equal(renumbered.data, wide.data)


def learned_state(model):
    return {
        name: value.copy()
        for name, value in vars(model).items()
        if isinstance(value, np.ndarray) and name.endswith("_") and value.dtype.kind == "f"
    }


def assert_same_state(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name


ESTIMATORS = [
    FTRLClassifier(**HYPER),
    FTRLClassifier(dtype=np.float32, **HYPER),
    FTRLRegressor(**HYPER),
    FMClassifier(random_state=0),
    FMRegressor(random_state=0, dtype=np.float32),
]


def is_classifier(estimator):
    return "Classifier" in type(estimator).__name__


def trained(estimator, method, X, y, **params):
    """The learned state of a copy of ``estimator`` with ``params``, trained by
    ``method`` (fit: three passes; partial_fit: two calls)."""
    model = estimator.__class__(**{**estimator.get_params(), **params})
    if method == "fit":
        return learned_state(model.set_params(max_iter=3, tol=None, random_state=0).fit(X, y))
    classes = {"classes": np.unique(y)} if is_classifier(estimator) else {}
    return learned_state(
        model.partial_fit(X[:150], y[:150], **classes).partial_fit(X[150:], y[150:])
    )


@needs_numba
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("n_jobs", [2, 3])
@pytest.mark.parametrize("method", ["partial_fit", "fit"])
def test_the_same_bits_on_every_run(short_rounds, estimator, n_jobs, method):
    X, rng = sparse_rows(2, 400, 600, 0.01)
    y = rng.integers(0, 3, size=400) if is_classifier(estimator) else X @ rng.normal(size=600)
    first = trained(estimator, method, X, y, n_jobs=n_jobs)
    for _ in range(3):
        assert_same_state(first, trained(estimator, method, X, y, n_jobs=n_jobs))
    # The rounds ran: the model is not the sequential pass's.
    assert not np.array_equal(first["z_"], trained(estimator, method, X, y, n_jobs=1)["z_"])


@pytest.mark.parametrize("threads", [2, 3])
def test_the_pass_loss_does_not_depend_on_blas_threads(threads):
    # The loss of a call is a dot product of its rows' losses and weights,
    # which BLAS would split between its threads: its last bits would then
    # depend on the number of cores.
    X, y, _, _ = load_a9a()
    for seed in range(4):
        weights = np.random.default_rng(seed).uniform(0.1, 3.0, size=len(y))
        losses = []
        for limit in (1, threads):
            with threadpool_limits(limits=limit, user_api="blas"):
                model = FTRLClassifier(batch_size=16).partial_fit(
                    X, y, classes=[-1, 1], sample_weight=weights
                )
            losses.append(model.loss_curve_[-1])
        assert losses[0] == losses[1]


@pytest.mark.parametrize("n_jobs", [None, 1])
def test_one_job_is_the_sequential_pass(n_jobs, engine):
    X, y, _, _ = load_a9a()
    default = FTRLClassifier(engine=engine).partial_fit(X[:3000], y[:3000], classes=[-1, 1])
    model = FTRLClassifier(engine=engine, n_jobs=n_jobs)
    model.partial_fit(X[:3000], y[:3000], classes=[-1, 1])
    assert_same_state(learned_state(default), learned_state(model))


@pytest.mark.parametrize("batch_size", [1, 8])
def test_the_numpy_engines_ignore_n_jobs(short_rounds, batch_size):
    X, rng = sparse_rows(3, 300, 20, 0.3)
    y = rng.integers(0, 2, size=300)
    runs = [
        FTRLClassifier(engine="numpy", batch_size=batch_size, n_jobs=n_jobs).partial_fit(
            X, y, classes=[0, 1]
        )
        for n_jobs in (1, 2)
    ]
    assert_same_state(*map(learned_state, runs))


def test_n_jobs_is_checked():
    X, y = np.eye(3), [0, 1, 0]
    with pytest.raises(ValueError, match="n_jobs"):
        FTRLClassifier(n_jobs=0).fit(X, y)
    FTRLClassifier(n_jobs=-1, max_iter=2).fit(X, y)


class Failure(Exception):
    pass


@needs_numba
@pytest.mark.parametrize("where", ["learn", "merge"])
@pytest.mark.parametrize("thread", ["this", "another"])
@pytest.mark.parametrize("learned", [1, 100])
def test_a_failure_in_a_parallel_pass_leaves_the_model_as_it_was(
    short_rounds, monkeypatch, undo_way, where, thread, learned
):
    # A model that has learned one row learns the next in order before the
    # rounds begin: the failing call records rows in order, then rounds.
    X, rng = sparse_rows(4, 400, 800, 0.01)
    y = rng.integers(0, 2, size=400)
    X, y = X[100 - learned :], y[100 - learned :]
    model = FMClassifier(n_jobs=2, random_state=0)
    model.partial_fit(X[:learned], y[:learned], classes=[0, 1])
    before = snapshot(model)
    # The shard of "this" thread is the first of its round, learned by the
    # thread that called partial_fit; the fifth round fails, after four were merged.
    calls = []
    original_learn, original_merge = _rounds.ShardLearner.learn, _rounds.ParallelPass.merge_part
    if where == "learn":
        original = _rounds.ShardLearner.learn

        def failing(learner, rows, narrow):
            first = learner is learner.run.learners[0]
            calls.append(first)
            if calls.count(first) == 5 and first == (thread == "this"):
                raise Failure
            return original(learner, rows, narrow)

        monkeypatch.setattr(_rounds.ShardLearner, "learn", failing)
    else:
        original = _rounds.ParallelPass.merge_part

        def failing(run, shards, part):
            calls.append(part)
            if calls.count(part) == 5 and (part == 0) == (thread == "this"):
                raise Failure
            return original(run, shards, part)

        monkeypatch.setattr(_rounds.ParallelPass, "merge_part", failing)
    with pytest.raises(Failure):
        model.partial_fit(X[learned:], y[learned:])
    assert_same(before, snapshot(model))
    # And it learns on as if the failed call had never been made.
    monkeypatch.setattr(_rounds.ShardLearner, "learn", original_learn)
    monkeypatch.setattr(_rounds.ParallelPass, "merge_part", original_merge)
    model.partial_fit(X[learned:], y[learned:])
    fresh = FMClassifier(n_jobs=2, random_state=0)
    fresh.partial_fit(X[:learned], y[:learned], classes=[0, 1])
    fresh.partial_fit(X[learned:], y[learned:])
    assert_same_state(learned_state(fresh), learned_state(model))


@needs_numba
@pytest.mark.parametrize("method", ["partial_fit", "fit"])
def test_two_threads_learn_a9a_close_to_one(method):
    # With the rounds as they are: a9a's 32,561 rows are learned in order
    # until 16,384 rows are learned, the rest (and fit's later passes) in rounds.
    X, y, X_test, y_test = load_a9a()
    losses = []
    for n_jobs in (1, 2):
        model = FTRLClassifier(n_jobs=n_jobs, random_state=0)
        if method == "fit":
            model.set_params(max_iter=5, tol=None).fit(X, y)
        else:
            model.partial_fit(X, y, classes=[-1, 1])
        losses.append(log_loss(y_test, model.predict_proba(X_test)))
    assert abs(losses[1] / losses[0] - 1) < 0.005
