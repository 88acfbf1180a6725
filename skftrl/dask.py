"""One model learned by every worker of a Dask cluster.

:func:`partial_fit` learns one pass over a chunked ``dask.array`` or
``dask.dataframe`` with all the workers at once (a dataframe of raw columns
hashed on the workers by a :class:`~skftrl.preprocessing.ColumnHasher`), by
the rounds of a parallel pass (:ref:`parallel`): each round, every worker
learns one block of rows from the state of that block's columns as the round
began, and the blocks' changes are merged on the cluster, in a tree, into the model. Only the
touched coordinates travel. For the exact sequential pass over the blocks,
one worker after the other, use :class:`dask_ml.wrappers.Incremental`.

Needs the ``dask`` extra (``pip install "skftrl[dask]"``), and skftrl on
every worker.
"""

from numbers import Integral

import pandas as pd
from dask import is_dask_collection
from distributed import default_client
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from ._base import learn_in_shards
from ._engines._rounds import merge_changes
from ._sklearn_compat import Interval, validate_params
from ._validation import check_no_bool_counts
from .preprocessing import ColumnHasher

__all__ = ["partial_fit"]

N_SHARDS = {"n_shards": [Interval(Integral, 1, None, closed="left"), None]}


@validate_params({**N_SHARDS, "hasher": [ColumnHasher, None]}, prefer_skip_nested_validation=True)
def partial_fit(
    estimator,
    X,
    y,
    classes=None,
    sample_weight=None,
    *,
    hasher=None,
    client=None,
    n_shards=None,
):
    """Learn one pass over chunked Dask collections with every worker at once.

    The blocks of rows (the chunks of a ``dask.array``, the partitions of a
    ``dask.dataframe``) are learned in rounds: the first block alone, as
    ``partial_fit`` learns it, then ``n_shards`` blocks a round, each by a
    worker, from the state of its columns as the round began; the blocks'
    changes are merged in their order (those of ``z`` and of ``n`` add up),
    in a tree of merges on the cluster, and the merged coordinates written
    into ``estimator``. The result depends on the blocks and ``n_shards``
    only, never on which worker learns which block or when; it is close to
    the sequential pass, not equal to it (see :ref:`parallel` for the size
    of the blocks). A failure leaves ``estimator`` as it was.

    Parameters
    ----------
    estimator : FTRLClassifier, FTRLRegressor, FMClassifier or FMRegressor
        The model, new or fitted: it learns on from its state, as with
        ``partial_fit``.
    X : dask.array.Array or dask.dataframe.DataFrame of shape (n_samples, n_features)
        Training data, in blocks of rows (a dask array chunked only along
        the rows, or it is rechunked so; CSR chunks stay sparse). With
        ``hasher``, a dask dataframe of raw columns (strings, integer codes,
        numbers), such as ``dd.read_parquet`` or ``dd.read_csv`` gives.
    y : dask.array.Array or dask.dataframe.Series of shape (n_samples,)
        Targets (class labels for a classifier), in blocks of the same rows.
    classes : array-like of shape (n_classes,), default=None
        A classifier's classes, required on its first call, as for ``partial_fit``.
    sample_weight : dask.array.Array or dask.dataframe.Series, default=None
        Non-negative weights of the rows, in blocks of the same rows.
    hasher : ColumnHasher, default=None
        What hashes the raw columns of a dataframe ``X``, on the workers,
        each partition as ``hasher.transform`` hashes it: integer columns
        are categories unless the hasher names them ``numeric``. None takes
        ``X`` as it is: numbers, already hashed.
    client : distributed.Client, default=None
        The cluster's client; None takes the default client.
    n_shards : int, default=None
        Blocks learned in a round, one per worker at most at a time; None is
        the number of the cluster's workers. Range [1, inf).

    Returns
    -------
    estimator : object
        ``estimator``, a plain fitted estimator, after the pass.

    Examples
    --------
    >>> import dask.array as da
    >>> from distributed import Client, LocalCluster
    >>> import skftrl.dask
    >>> from skftrl import FTRLClassifier
    >>> from skftrl.datasets import load_a9a
    >>> X, y, _, _ = load_a9a()
    >>> X = da.from_array(X, chunks=(10_000, X.shape[1]), asarray=False)
    >>> y = da.from_array(y, chunks=10_000)
    >>> with LocalCluster(n_workers=2, processes=False) as cluster:  # doctest: +SKIP
    ...     with Client(cluster) as client:
    ...         model = skftrl.dask.partial_fit(FTRLClassifier(), X, y, classes=[-1, 1])
    >>> model.n_samples_seen_  # doctest: +SKIP
    32561
    """
    check_hashing(X, hasher)
    if hasattr(X, "divisions") and hasattr(y, "divisions"):
        if X.known_divisions and y.known_divisions and X.divisions != y.divisions:
            raise ValueError(
                "X and y must come in the same partitions of rows; their divisions differ: "
                f"{X.divisions} and {y.divisions}"
            )
    blocks = [
        _blocks(X, "X", "DataFrame"),
        _blocks(y, "y", "Series"),
        _blocks(sample_weight, "sample_weight", "Series"),
    ]
    check_no_bool_counts(N_SHARDS, {"n_shards": n_shards}, "partial_fit")
    client = default_client() if client is None else client
    if blocks[2] is None:
        blocks[2] = [None] * len(blocks[0])
    if not len(blocks[0]) == len(blocks[1]) == len(blocks[2]):
        raise ValueError(
            f"X, y and sample_weight must come in the same blocks of rows; got "
            f"{len(blocks[0])}, {len(blocks[1])} and {len(blocks[2])} blocks."
        )
    if n_shards is None:
        n_shards = len(client.scheduler_info()["workers"])
    n_shards = int(n_shards)
    first = _computed(client, _blocks_of(blocks, 0))
    head = client.gather(
        [
            client.submit(_head, block, hasher if part == 0 else None)
            for part, block in enumerate(first)
            if block is not None
        ]
    )
    X_head, y_head, *weight_head = head

    def rounds(work, start):
        [work_future] = client.scatter([work], broadcast=True)
        groups = [[0]] + [
            list(range(b, min(b + n_shards, len(blocks[0]))))
            for b in range(1, len(blocks[0]), n_shards)
        ]

        def prepare(group):
            """The group's blocks prepared on the workers, and their columns."""
            shards = [
                client.submit(
                    _prepare,
                    work_future,
                    hasher,
                    b,
                    *(first if b == 0 else _computed(client, _blocks_of(blocks, b))),
                    pure=False,
                )
                for b in group
            ]
            return shards, [client.submit(_columns, shard, pure=False) for shard in shards]

        prepared = prepare(groups[0])
        for g in range(len(groups)):
            # The next round's blocks are read and checked, and their columns
            # found, while this one learns.
            following = prepare(groups[g + 1]) if g + 1 < len(groups) else None
            columns = client.gather(prepared[1])
            # The state of each shard's columns goes with its task, to the
            # worker that holds its rows.
            learned = [
                client.submit(_learn, work_future, shard, start(shard_columns), pure=False)
                for shard, shard_columns in zip(prepared[0], columns)
            ]
            yield _tree(client, learned).result()
            prepared = following

    return learn_in_shards(
        estimator, X_head, y_head, weight_head[0] if weight_head else None, classes, rounds
    )


def check_hashing(X, hasher):
    """A clear error where ``X`` and ``hasher`` do not go together: raw
    columns without a hasher, hashed rows with one; the hasher's parameters
    and the columns it names checked on ``X``'s columns (no rows read)."""
    is_frame = is_dask_collection(X) and hasattr(X, "dtypes") and hasattr(X, "columns")
    if hasher is None:
        if is_frame:
            raw = [
                f"{name!r} ({dtype})"
                for name, dtype in X.dtypes.items()
                if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype))
            ]
            if raw:
                raise ValueError(
                    f"X has columns of raw values: {', '.join(raw[:5])}"
                    f"{', ...' if len(raw) > 5 else ''}. Hash them on the workers with "
                    "hasher=ColumnHasher(...)."
                )
        return
    if not is_dask_collection(X):
        return  # refused with the other arguments that are not dask collections
    if not is_frame:
        kind = type(X)
        raise TypeError(
            "hasher hashes the raw columns of a dask.dataframe.DataFrame; got X of type "
            f"{kind.__module__}.{kind.__qualname__}. Rows already hashed are learned "
            "without a hasher."
        )
    sparse = [name for name, dtype in X.dtypes.items() if isinstance(dtype, pd.SparseDtype)]
    if sparse:
        raise ValueError(
            f"X has sparse columns ({', '.join(map(repr, sparse[:5]))}"
            f"{', ...' if len(sparse) > 5 else ''}): rows already hashed are learned "
            "without a hasher."
        )
    # The hasher's parameters and the columns it names, checked on no rows:
    # the empty frame of X's columns and dtypes that dask keeps.
    hasher.transform(X._meta)


def _blocks_of(blocks, b):
    """The ``b``-th block of X, y and sample_weight (None for no weights)."""
    return [parts[b] if parts is not None else None for parts in blocks]


def _computed(client, parts):
    """Futures of the parts of a block (None stays None)."""
    return [None if part is None else client.compute(part) for part in parts]


def _blocks(collection, name, frame_type):
    """The blocks of rows of a dask collection, as delayed objects; None for
    None. Anything else is refused, naming ``name``, the argument, and what it
    takes: a dask array or a dask dataframe's ``frame_type``."""
    if collection is None:
        return None
    if not (is_dask_collection(collection) and hasattr(collection, "to_delayed")):
        kind = type(collection)
        raise TypeError(
            f"{name} must be a dask.array.Array or a dask.dataframe.{frame_type}; got "
            f"{kind.__module__}.{kind.__qualname__}. Data in memory is learned by "
            "the estimator's own partial_fit."
        )
    if not hasattr(collection, "numblocks"):  # a dask dataframe or series
        return list(collection.to_delayed())
    if collection.ndim == 2 and collection.numblocks[1] != 1:
        collection = collection.rechunk({1: -1})
    return list(collection.to_delayed().ravel())


def _head(block, hasher=None):
    """The first row of a block (a dataframe's, a series', an array's),
    hashed by ``hasher`` if not None."""
    head = block.iloc[:1] if hasattr(block, "iloc") else block[:1]
    return head if hasher is None else hasher.transform(head)


def _prepare(work, hasher, b, X, y, sample_weight=None):
    """The ``b``-th block's rows, hashed by ``hasher`` if not None, prepared
    by ``work``; a ValueError naming the block where X, y and sample_weight
    have different numbers of rows."""
    lengths = [part.shape[0] for part in (X, y, sample_weight) if part is not None]
    if len(set(lengths)) > 1:
        raise ValueError(
            f"X, y and sample_weight must come in the same blocks of rows; their block {b} "
            f"has {' and '.join(map(str, lengths))} rows."
        )
    if hasher is not None:
        X = hasher.transform(X)
    return work.prepare(X, y, sample_weight)


def _columns(prepared):
    return prepared.columns


def _learn(work, prepared, start):
    return work.learn(prepared, start)


def _merge(first, then):
    """The changes of two shards' (or merged shards') learning, in order, and their counts."""
    (changes, counts), (then_changes, then_counts) = first, then
    return merge_changes(changes, then_changes), tuple(a + b for a, b in zip(counts, then_counts))


def _tree(client, futures):
    """The merge of ``futures`` (in their order) as a tree of merges on the cluster."""
    while len(futures) > 1:
        futures = [
            client.submit(_merge, *futures[i : i + 2], pure=False)
            if i + 1 < len(futures)
            else futures[i]
            for i in range(0, len(futures), 2)
        ]
    return futures[0]
