"""Dask: training over chunked collections (one worker after the other with
dask-ml's Incremental, every worker at once with skftrl.dask) and searching
on a real cluster.

Needs the "dask" extra (``pip install "skftrl[dask]"``); skipped without it.
A ``distributed.LocalCluster`` of two worker processes on loopback runs every
test here, so models, chunks and results really cross process boundaries
over TCP, as on a cluster of several machines.
"""

import copy

import joblib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from reference import ReferenceFTRL, rows_as_dicts
from reference_rounds import learn_in_rounds
from sklearn.base import clone
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV

from conftest import assert_same, snapshot
from skftrl import FMClassifier, FTRLClassifier
from skftrl.datasets import load_a9a, make_click_table
from skftrl.preprocessing import ColumnHasher

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
delayed = pytest.importorskip("dask").delayed
dask_ml_wrappers = pytest.importorskip("dask_ml.wrappers")
skftrl_dask = pytest.importorskip("skftrl.dask")

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]
CLASSES = [-1.0, 1.0]
CHUNK_ROWS = 10_000  # a9a's 32,561 rows make 4 chunks

# The chunks of a dask collection made from local data travel inside the task
# graph; dask warns about that, which is expected with local test data.
pytestmark = pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning")


@pytest.fixture(scope="module")
def client():
    """A real two-worker cluster on loopback, shut down after this module."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def a9a():
    X, y, _, _ = load_a9a()
    return X, y


def partial_fit_in_order(chunks):
    """The model that ``partial_fit`` over ``(X, y)`` chunks, in order, gives."""
    model = FTRLClassifier(engine="numpy")
    for X_chunk, y_chunk in chunks:
        model.partial_fit(X_chunk, y_chunk, classes=CLASSES)
    return model


def fit_incremental(X, y):
    """dask-ml's Incremental over the chunks in their order (not shuffled)."""
    incremental = dask_ml_wrappers.Incremental(
        FTRLClassifier(engine="numpy"), shuffle_blocks=False
    )
    return incremental.fit(X, y, classes=CLASSES)


def assert_same_predictions(got, expected, sparse):
    """Predictions made on the workers equal those made locally.

    Sparse input goes through scipy's own loop and is bit for bit the same.
    Dense input goes through BLAS, whose rounding depends on the memory
    layout and alignment of the chunk a worker unpickled (seen: 1 ulp), so
    dense predictions agree to rounding; the state itself is compared exactly.
    """
    if sparse:
        assert np.array_equal(got, expected)
    else:
        assert_allclose(got, expected, rtol=1e-12, atol=0)


def assert_same_state(got, expected):
    for name in STATE:
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name


def ran_on_workers(stream, client, name):
    """Whether tasks whose key holds ``name`` ran, all on the cluster's workers."""
    workers = {task["worker"] for task in stream.data if name in str(task["key"])}
    return bool(workers) and workers <= set(client.scheduler_info()["workers"])


@pytest.mark.parametrize("sparse", [False, True], ids=["dense-chunks", "csr-chunks"])
def test_incremental_over_a_dask_array_equals_partial_fit_over_its_chunks(client, a9a, sparse):
    X, y = a9a
    X_local = X if sparse else X.toarray()
    # asarray=False keeps each chunk a scipy CSR matrix.
    X_dask = da.from_array(X_local, chunks=(CHUNK_ROWS, X.shape[1]), asarray=False)
    y_dask = da.from_array(y, chunks=CHUNK_ROWS)
    assert X_dask.numblocks[0] == 4

    with distributed.get_task_stream(client) as stream:
        incremental = fit_incremental(X_dask, y_dask)
    assert ran_on_workers(stream, client, "fit-")  # dask-ml's partial_fit tasks

    bounds = np.cumsum((0,) + X_dask.chunks[0])
    slices = [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
    expected = partial_fit_in_order((X_local[rows], y[rows]) for rows in slices)
    model = incremental.estimator_
    assert_same_state(model, expected)
    assert model.n_samples_seen_ == X.shape[0]
    assert len(model.loss_curve_) == 4  # one partial_fit call per chunk

    # Prediction over the chunks, on the workers, matches local prediction.
    assert_same_predictions(
        incremental.predict_proba(X_dask).compute(), expected.predict_proba(X_local), sparse
    )
    assert np.array_equal(incremental.predict(X_dask).compute(), expected.predict(X_local))


def test_incremental_over_a_dask_dataframe_equals_partial_fit_over_its_partitions(client, a9a):
    X, y = a9a
    columns = [f"feature_{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X.toarray(), columns=columns)
    target = pd.Series(y, name="income")
    X_dask = dd.from_pandas(frame, npartitions=4, sort=False)
    y_dask = dd.from_pandas(target, npartitions=4, sort=False)
    assert X_dask.npartitions == 4

    incremental = fit_incremental(X_dask, y_dask)

    lengths = X_dask.map_partitions(len).compute().tolist()
    assert lengths == y_dask.map_partitions(len).compute().tolist()
    bounds = np.cumsum([0] + lengths)
    slices = [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
    expected = partial_fit_in_order((frame.iloc[rows], target.iloc[rows]) for rows in slices)
    model = incremental.estimator_
    assert_same_state(model, expected)
    assert model.n_samples_seen_ == X.shape[0]
    assert list(model.feature_names_in_) == columns
    assert_same_predictions(
        incremental.predict_proba(X_dask).compute(), expected.predict_proba(frame), sparse=False
    )
    assert np.array_equal(incremental.predict(X_dask).compute(), expected.predict(frame))


def test_grid_search_on_the_cluster_equals_the_sequential_search(client, a9a):
    X, y = a9a
    X, y = X[:3000], y[:3000]

    def search(n_jobs):
        return GridSearchCV(
            FTRLClassifier(max_iter=2, tol=None, random_state=0, engine="numpy"),
            {"learning_rate": [0.05, 0.2, 1.0], "l1": [0.0, 1.0]},
            cv=3,
            scoring="neg_log_loss",
            n_jobs=n_jobs,
        )

    with distributed.get_task_stream(client) as stream:
        with joblib.parallel_backend("dask"):
            on_cluster = search(n_jobs=-1).fit(X, y)
    assert ran_on_workers(stream, client, "batch_of__fit_and_score")

    sequential = search(n_jobs=None).fit(X, y)
    assert on_cluster.cv_results_["params"] == sequential.cv_results_["params"]
    for key in ["mean_test_score", "std_test_score", "rank_test_score"] + [
        f"split{i}_test_score" for i in range(3)
    ]:
        assert np.array_equal(on_cluster.cv_results_[key], sequential.cv_results_[key]), key
    assert on_cluster.best_params_ == sequential.best_params_
    assert_same_state(on_cluster.best_estimator_, sequential.best_estimator_)


# ------------------------------------------- one model learned by every worker
def shards_of_blocks(bounds, n_shards):
    """The rounds of skftrl.dask.partial_fit over blocks of rows: the first
    block alone, then n_shards blocks a round, each block a shard."""
    blocks = list(zip(bounds[:-1], bounds[1:]))
    return [blocks[:1]] + [blocks[b : b + n_shards] for b in range(1, len(blocks), n_shards)]


@pytest.mark.parametrize("n_shards", [2, 3])
def test_rounds_on_the_cluster_match_the_reference(client, a9a, n_shards):
    X, y = a9a
    X, y = X[:2400], (y[:2400] > 0).astype(int)
    sample_weight = np.random.default_rng(0).uniform(0.5, 2.0, size=2400)
    X_dask = da.from_array(X, chunks=(300, X.shape[1]), asarray=False)
    y_dask = da.from_array(y, chunks=300)
    weight_dask = da.from_array(sample_weight, chunks=300)
    hyper = dict(learning_rate=0.3, beta=0.5, l1=0.05, l2=0.1)

    def learn():
        return skftrl_dask.partial_fit(
            FTRLClassifier(**hyper), X_dask, y_dask, [0, 1], weight_dask, n_shards=n_shards
        )

    with distributed.get_task_stream(client) as stream:
        model = learn()
    assert ran_on_workers(stream, client, "_learn")
    assert ran_on_workers(stream, client, "_merge")

    reference = ReferenceFTRL(
        1,
        loss="log_loss",
        alpha=0.3,
        beta=0.5,
        l1=0.05,
        l2=0.1,
        fit_intercept=True,
    )
    rows = rows_as_dicts(X.indptr, X.indices, X.data)
    bounds = np.cumsum((0,) + X_dask.chunks[0])
    learn_in_rounds(
        reference, rows, y.astype(float), sample_weight, shards_of_blocks(bounds, n_shards)
    )
    z, n, _ = reference.state(X.shape[1])
    assert_allclose(model.z_, z, rtol=1e-10, atol=1e-12)
    assert_allclose(model.n_, n, rtol=1e-10, atol=1e-12)
    assert_allclose(model.z_intercept_, reference.z_bias, rtol=1e-10, atol=1e-12)
    assert model.n_samples_seen_ == 2400 and len(model.loss_curve_) == 1 and model.n_iter_ == 1
    # Every run gives the same bits, whichever worker learns which block.
    assert_same_state(learn(), model)


def test_a_wide_factorization_machine_on_a_dataframe(client):
    # Hashed-like columns, far more than a block's non-zeros: each block's
    # columns are renumbered; the frame's column names are checked.
    rng = np.random.default_rng(0)
    X = sp.random(1200, 3000, density=0.003, format="csr", random_state=rng)
    y = rng.integers(0, 2, size=1200)
    columns = [f"c{i}" for i in range(3000)]
    frame = pd.DataFrame.sparse.from_spmatrix(X, columns=columns).sparse.to_dense()
    X_dask = dd.from_pandas(frame, npartitions=5, sort=False)
    y_dask = dd.from_pandas(pd.Series(y), npartitions=5, sort=False)
    model = skftrl_dask.partial_fit(
        FMClassifier(n_components=3, random_state=0), X_dask, y_dask, classes=[0, 1]
    )
    assert list(model.feature_names_in_) == columns
    local = FMClassifier(n_components=3, random_state=0).partial_fit(frame, y, classes=[0, 1])
    proba, local_proba = model.predict_proba(frame)[:, 1], local.predict_proba(frame)[:, 1]
    assert abs(log_loss(y, proba) / log_loss(y, local_proba) - 1) < 0.05
    # The factors no row touched keep their initial values.
    untouched = np.flatnonzero(np.asarray(X.sum(axis=0)).ravel() == 0)
    assert np.array_equal(model.z_factors_[:, untouched], local.z_factors_[:, untouched])


def test_a_failure_on_the_cluster_leaves_the_model_as_it_was(client, a9a):
    X, y = a9a
    X, y = X[:1500], y[:1500].copy()
    model = FTRLClassifier().partial_fit(X[:100], y[:100], classes=CLASSES)
    before = snapshot(model)
    y[1200] = 7.0  # a class the model does not know, in the last round's block
    X_dask = da.from_array(X, chunks=(300, X.shape[1]), asarray=False)
    with pytest.raises(ValueError, match="not in classes"):
        skftrl_dask.partial_fit(model, X_dask, da.from_array(y, chunks=300))
    assert_same(before, snapshot(model))


def merged(current, start, value):
    """The documented merge of a shard's change into ``current`` (docs/parallel.rst)."""
    return np.where(
        value == start, current, np.where(current == start, value, current + (value - start))
    )


def learned_arrays(model):
    return {
        name: value.copy()
        for name, value in vars(model).items()
        if isinstance(value, np.ndarray) and name.endswith("_") and value.dtype.kind == "f"
    }


def rounds_of_blocks(model, blocks, n_shards):
    """The state of ``model`` after the rounds of skftrl.dask.partial_fit over
    ``blocks`` (``(X, y)`` pairs): each block learned by ``partial_fit`` of a
    copy of the model as its round began, the copies' changes merged in order."""
    model.partial_fit(*blocks[0], classes=[0, 1])
    state = learned_arrays(model)
    for b in range(1, len(blocks), n_shards):
        began = copy.deepcopy(model)
        for block in blocks[b : b + n_shards]:
            shard = learned_arrays(copy.deepcopy(began).partial_fit(*block))
            for name, value in shard.items():
                state[name] = merged(state[name], getattr(began, name), value)
        for name, value in state.items():
            setattr(model, name, value.copy())
    return state


@pytest.mark.parametrize(
    "estimator, wide",
    [
        (FTRLClassifier(engine="numpy", l1=0.05), False),
        (FTRLClassifier(batch_size=4, l1=0.05), True),
        (FMClassifier(engine="numpy", n_components=3, random_state=0), True),
    ],
    ids=["numpy-engine", "batches", "numpy-fm-renumbered"],
)
def test_rounds_of_numpy_passes_on_the_cluster(client, a9a, estimator, wide):
    # The numpy passes (engine="numpy", batch_size > 1, or no numba) learn the
    # workers' blocks, whether their columns are renumbered or not.
    if wide:
        rng = np.random.default_rng(1)
        X = sp.random(1200, 3000, density=0.003, format="csr", random_state=rng)
        y = rng.integers(0, 2, size=1200)
    else:
        X, y = a9a[0][:1200], (a9a[1][:1200] > 0).astype(int)
    X_dask = da.from_array(X, chunks=(300, X.shape[1]), asarray=False)
    model = skftrl_dask.partial_fit(
        clone(estimator), X_dask, da.from_array(y, chunks=300), [0, 1], n_shards=np.int64(2)
    )
    blocks = [(X[b : b + 300], y[b : b + 300]) for b in range(0, 1200, 300)]
    expected = rounds_of_blocks(clone(estimator), blocks, 2)
    assert expected.keys() == learned_arrays(model).keys()
    for name, value in expected.items():
        assert_allclose(getattr(model, name), value, rtol=1e-10, atol=1e-12, err_msg=name)
    assert model.n_samples_seen_ == 1200


@pytest.mark.parametrize("name", ["X", "y", "sample_weight"])
def test_data_not_in_dask_collections_is_refused(client, a9a, name):
    X, y = a9a[0][:600], a9a[1][:600]
    data = {
        "X": da.from_array(X, chunks=(300, X.shape[1]), asarray=False),
        "y": da.from_array(y, chunks=300),
        "sample_weight": da.ones(600, chunks=300),
    }
    data[name] = {"X": X, "y": y, "sample_weight": np.ones(600)}[name]
    model = FTRLClassifier()
    got = type(data[name]).__module__
    with pytest.raises(TypeError, match=f"^{name} must be a dask.array.Array or .*; got {got}"):
        skftrl_dask.partial_fit(model, **data, classes=CLASSES)
    assert not hasattr(model, "z_")


@pytest.mark.parametrize("n_shards", [True, 0, 2.0, "2"])
def test_n_shards_is_checked(client, a9a, n_shards):
    X, y = a9a[0][:600], a9a[1][:600]
    X_dask = da.from_array(X, chunks=(300, X.shape[1]), asarray=False)
    with pytest.raises(ValueError, match="n_shards"):
        skftrl_dask.partial_fit(
            FTRLClassifier(), X_dask, da.from_array(y, chunks=300), CLASSES, n_shards=n_shards
        )


# ------------------------------------- raw columns hashed on the workers
@pytest.fixture(scope="module")
def clicks():
    """A raw click table (strings and integer codes) and its hasher: integer
    columns are categories, but C15, named numeric, and a cross."""
    table = make_click_table(2000, random_state=0)
    hasher = ColumnHasher(
        hash_bits=16, numeric=["C15"], interactions=[("banner_pos", "app_category")]
    )
    return table, hasher


def partitions_in_order(table, frame):
    """The rows of ``table`` (pandas) in the partitions of the dask ``frame``, in order."""
    bounds = np.cumsum([0] + frame.map_partitions(len).compute().tolist())
    return [table.iloc[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]


def test_raw_columns_hashed_on_the_workers_in_one_shard_rounds_equal_partial_fit(client, clicks):
    # One block a round is the sequential pass: the model equals partial_fit
    # over the pandas partitions in order, each hashed by hasher.transform.
    table, hasher = clicks
    frame = dd.from_pandas(table, npartitions=4, sort=False)
    weight = pd.Series(np.random.default_rng(0).uniform(0.5, 2.0, len(table)))
    with distributed.get_task_stream(client) as stream:
        model = skftrl_dask.partial_fit(
            FTRLClassifier(l1=0.1),
            frame.drop(columns="click"),
            frame["click"],
            classes=[0, 1],
            sample_weight=dd.from_pandas(weight, npartitions=4, sort=False),
            hasher=hasher,
            n_shards=1,
        )
    assert ran_on_workers(stream, client, "_prepare")  # where the rows are hashed
    expected = FTRLClassifier(l1=0.1)
    parts = partitions_in_order(table, frame)
    assert len(parts) == 4
    for part in parts:
        expected.partial_fit(
            hasher.transform(part.drop(columns="click")),
            part["click"],
            classes=[0, 1],
            sample_weight=weight[part.index],
        )
    assert_same_state(model, expected)
    assert model.n_samples_seen_ == len(table) and model.n_features_in_ == 2**16


def test_raw_columns_hashed_on_the_workers_match_the_rounds_reference(client, clicks):
    table, hasher = clicks
    frame = dd.from_pandas(table, npartitions=5, sort=False)
    estimator = FTRLClassifier(engine="numpy", l1=0.05)
    model = skftrl_dask.partial_fit(
        clone(estimator),
        frame.drop(columns="click"),
        frame["click"],
        [0, 1],
        hasher=hasher,
        n_shards=2,
    )
    blocks = [
        (hasher.transform(part.drop(columns="click")), part["click"])
        for part in partitions_in_order(table, frame)
    ]
    expected = rounds_of_blocks(clone(estimator), blocks, 2)
    for name, value in expected.items():
        assert_allclose(getattr(model, name), value, rtol=1e-10, atol=1e-12, err_msg=name)
    assert model.n_samples_seen_ == len(table)


def test_raw_columns_without_a_hasher_are_refused(client, clicks):
    table, _ = clicks
    frame = dd.from_pandas(table, npartitions=2, sort=False)
    model = FTRLClassifier()
    with pytest.raises(ValueError, match=r"X has columns of raw values: 'site_id' .*hasher="):
        skftrl_dask.partial_fit(model, frame.drop(columns="click"), frame["click"], [0, 1])
    assert not hasattr(model, "z_")


def test_a_hasher_with_hashed_rows_is_refused(client, a9a, clicks):
    X, y = a9a[0][:600], a9a[1][:600]
    _, hasher = clicks
    model = FTRLClassifier()
    with pytest.raises(TypeError, match="^hasher hashes the raw columns of a dask.dataframe"):
        skftrl_dask.partial_fit(
            model,
            da.from_array(X, chunks=(300, X.shape[1]), asarray=False),
            da.from_array(y, chunks=300),
            CLASSES,
            hasher=hasher,
        )
    sparse = pd.DataFrame.sparse.from_spmatrix(X, columns=[f"c{i}" for i in range(X.shape[1])])
    with pytest.raises(ValueError, match="^X has sparse columns .*without a hasher"):
        skftrl_dask.partial_fit(
            model,
            dd.from_pandas(sparse, npartitions=2, sort=False),
            dd.from_pandas(pd.Series(y), npartitions=2, sort=False),
            CLASSES,
            hasher=ColumnHasher(),
        )
    assert not hasattr(model, "z_")


def test_a_hasher_naming_an_absent_column_is_refused_before_any_work(client, clicks):
    table, _ = clicks
    frame = dd.from_pandas(table, npartitions=2, sort=False)
    with distributed.get_task_stream(client) as stream:
        with pytest.raises(ValueError, match="numeric: no column 'price' in X"):
            skftrl_dask.partial_fit(
                FTRLClassifier(),
                frame.drop(columns="click"),
                frame["click"],
                [0, 1],
                hasher=ColumnHasher(numeric=["price"]),
            )
    assert not stream.data


def test_partitions_of_x_and_y_of_other_rows_are_refused(client, clicks):
    table, hasher = clicks
    X, y = table.drop(columns="click"), table["click"]
    model = FTRLClassifier().partial_fit(hasher.transform(X[:100]), y[:100], classes=[0, 1])
    before = snapshot(model)
    # As many partitions, of other lengths: the first block's are 500 and 400 rows.
    X_frame = dd.from_pandas(X, npartitions=4, sort=False)
    bounds = [0, 400, 1000, 1500, 2000]
    y_series = dd.from_delayed(
        [delayed(y.iloc[a:b]) for a, b in zip(bounds[:-1], bounds[1:])], meta=y.iloc[:0]
    )
    with pytest.raises(ValueError, match="their block 0 has 500 and 400 rows"):
        skftrl_dask.partial_fit(model, X_frame, y_series, hasher=hasher)
    assert_same(before, snapshot(model))
    # Known divisions that differ are refused before any work.
    X_sorted = dd.from_pandas(X, npartitions=4)
    y_sorted = dd.from_pandas(y, npartitions=4).repartition(divisions=[0, 400, 1000, 1500, 1999])
    with pytest.raises(ValueError, match="same partitions of rows; their divisions differ"):
        skftrl_dask.partial_fit(model, X_sorted, y_sorted, hasher=hasher)
    assert_same(before, snapshot(model))
