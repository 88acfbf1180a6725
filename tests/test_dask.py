"""Dask: training over chunked collections and searching on a real cluster.

Needs the "dask" extra (``pip install "skftrl[dask]"``); skipped without it.
A ``distributed.LocalCluster`` of two worker processes on loopback runs every
test here, so models, chunks and results really cross process boundaries
over TCP, as on a cluster of several machines.
"""

import joblib
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sklearn.model_selection import GridSearchCV

from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
dask_ml_wrappers = pytest.importorskip("dask_ml.wrappers")

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
