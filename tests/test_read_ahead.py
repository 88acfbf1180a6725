"""The readers' read ahead: the next chunks parsed in a background thread
(``read_ahead=True``, the default) or in the consumer's (``False``).

Each reader gets a file of many blocks (the byte sources' block size made
small), so that the thread has more to read than it may keep ready: the same
chunks either way, no thread left running however the consumer leaves the
loop, an error past the first chunk raised with its line, and no more than
the queue's depth read ahead of a slow consumer.
"""

import csv
import gc
import threading
import time

import numpy as np
import pytest

from conftest import needs_readers_extra
from skftrl._readers import _libsvm, _sources
from skftrl.preprocessing import ColumnHasher
from skftrl.readers import iter_csv, iter_libsvm, iter_parquet, iter_vw

N_ROWS = 3000
CHUNK_ROWS = 100
BAD_ROW = 2345  # a row far past the first chunk (0-based)
READERS = [
    "csv",
    "libsvm",
    "vw",
    pytest.param("parquet", marks=needs_readers_extra),
]
# The readers that read ahead in a thread: CSV with pyarrow only (the csv
# module's parser holds the interpreter's lock, so it reads in the caller's
# thread whatever read_ahead says).
THREADED_READERS = [
    pytest.param("csv", marks=needs_readers_extra),
    "libsvm",
    "vw",
    pytest.param("parquet", marks=needs_readers_extra),
]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Blocks of 2 KiB of text (a file of many pieces), and LIBSVM chunks
    4 KiB ahead: the thread has more to read than it may hold."""
    monkeypatch.setattr(_sources, "BLOCK_SIZE", 2048)
    monkeypatch.setattr(_libsvm, "CHUNK_BYTES_AHEAD", 4096)


def write_file(directory, kind, bad=False):
    """A file of N_ROWS rows of the format ``kind``, written here (not by
    skftrl); with ``bad``, row BAD_ROW holds a value its reader refuses.
    Returns the path and the line (or row) that names the bad value."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, N_ROWS)
    prices = np.round(rng.uniform(0.5, 9.5, N_ROWS), 2)
    sites = [f"s{k}" for k in rng.integers(0, 50, N_ROWS)]
    path = directory / f"rows.{kind}"
    if kind == "csv":
        with open(path, "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["click", "site", "price"])
            for i in range(N_ROWS):
                price = "abc" if bad and i == BAD_ROW else prices[i]
                writer.writerow([labels[i], sites[i], price])
        return path, BAD_ROW + 2  # after the header line
    if kind == "libsvm":
        lines = [f"{labels[i]} {1 + i % 7}:{prices[i]} 9:1" for i in range(N_ROWS)]
        if bad:
            lines[BAD_ROW] = f"{labels[BAD_ROW]} 3:abc"
        path.write_text("\n".join(lines) + "\n")
        return path, BAD_ROW + 1
    if kind == "vw":
        lines = [f"{2 * labels[i] - 1} |s {sites[i]} price:{prices[i]}" for i in range(N_ROWS)]
        if bad:
            lines[BAD_ROW] = "abc |s x"
        path.write_text("\n".join(lines) + "\n")
        return path, BAD_ROW + 1
    import pyarrow as pa
    import pyarrow.parquet as pq

    weights = np.ones(N_ROWS)
    if bad:
        weights[BAD_ROW] = -1.0
    table = pa.table({"click": labels, "site": sites, "price": prices, "weight": weights})
    pq.write_table(table, path, row_group_size=150)
    return path, BAD_ROW + 1  # rows are named from 1


def chunks_of(kind, path, read_ahead):
    """The reader of ``kind`` over ``path``, chunks of CHUNK_ROWS rows."""
    if kind == "csv":
        return iter_csv(
            path,
            label_column="click",
            hasher=ColumnHasher(hash_bits=12),
            chunk_size=CHUNK_ROWS,
            read_ahead=read_ahead,
        )
    if kind == "libsvm":
        return iter_libsvm(path, n_features=9, chunk_size=CHUNK_ROWS, read_ahead=read_ahead)
    if kind == "vw":
        return iter_vw(path, hash_bits=12, chunk_size=CHUNK_ROWS, read_ahead=read_ahead)
    return iter_parquet(
        path,
        label_column="click",
        weight_column="weight",
        hasher=ColumnHasher(hash_bits=12),
        chunk_size=CHUNK_ROWS,
        read_ahead=read_ahead,
    )


def reading_threads():
    return [thread for thread in threading.enumerate() if thread.name.startswith("skftrl-")]


def threads_left():
    """The names of skftrl's threads still running a while after being told to stop."""
    for thread in reading_threads():
        thread.join(timeout=10)
    return [thread.name for thread in reading_threads()]


def assert_same_chunks(got, expected):
    assert len(got) == len(expected)
    for chunk, other in zip(got, expected):
        assert len(chunk) == len(other)
        X, X_other = chunk[0], other[0]
        assert X.shape == X_other.shape
        for name in ("data", "indices", "indptr"):
            assert np.array_equal(getattr(X, name), getattr(X_other, name)), name
        for value, other_value in zip(chunk[1:], other[1:]):
            if value is None or other_value is None:
                assert value is None and other_value is None
            else:
                assert np.array_equal(value, other_value)


@pytest.mark.parametrize("kind", READERS)
def test_the_same_chunks_with_and_without_the_thread(tmp_path, kind):
    path, _ = write_file(tmp_path, kind)
    ahead = list(chunks_of(kind, path, True))
    here = []
    for chunk in chunks_of(kind, path, False):
        assert not reading_threads()  # read in this thread
        here.append(chunk)
    assert sum(chunk[0].shape[0] for chunk in here) == N_ROWS
    assert_same_chunks(here, ahead)


def leave_by_break(chunks):
    for _ in chunks:
        break


def leave_by_an_error(chunks):
    with pytest.raises(RuntimeError, match="the consumer's own"):
        for _ in chunks:
            raise RuntimeError("the consumer's own error")


def leave_by_close(chunks):
    next(chunks)
    chunks.close()


def leave_to_the_garbage_collector(chunks):
    next(chunks)
    # A cycle: only the garbage collector frees the reader.
    cycle = {"chunks": chunks}
    cycle["self"] = cycle


LEAVINGS = [leave_by_break, leave_by_an_error, leave_by_close, leave_to_the_garbage_collector]


@pytest.mark.parametrize("leave", LEAVINGS, ids=lambda leave: leave.__name__)
@pytest.mark.parametrize("kind", THREADED_READERS)
def test_a_reader_left_early_leaves_no_thread_running(tmp_path, kind, leave):
    path, _ = write_file(tmp_path, kind)
    chunks = chunks_of(kind, path, True)
    first = next(chunks)
    assert reading_threads()  # reading ahead, more to read than it may hold
    assert first[0].shape[0] == CHUNK_ROWS
    leave(chunks)
    del chunks
    gc.collect()
    assert not threads_left()


@pytest.mark.parametrize("kind", READERS)
def test_an_error_past_the_first_chunk_reaches_the_consumer_with_its_line(tmp_path, kind):
    path, where = write_file(tmp_path, kind, bad=True)
    # A line of a text file; the row and row group of a Parquet file.
    named = f"{path}:{where}:"
    if kind == "parquet":
        named = rf"{path}: row {where:,} \(row group {BAD_ROW // 150}\)"
    rows = {}
    for read_ahead in (True, False):
        rows[read_ahead] = 0
        with pytest.raises(ValueError, match=named) as error:
            for X, *_ in chunks_of(kind, path, read_ahead):
                rows[read_ahead] += X.shape[0]
        assert str(path) in str(error.value)
    # Whole chunks before the bad row's, the same with the thread and without
    # (a parser that reads a block of lines at once may stop a chunk sooner).
    assert rows[True] == rows[False]
    assert 0 < rows[True] <= BAD_ROW // CHUNK_ROWS * CHUNK_ROWS
    assert rows[True] % CHUNK_ROWS == 0


class CountedReadAhead:
    """``read_ahead`` counting what its thread has produced and what the
    consumer has taken (in items, or in what ``weigh`` weighs them)."""

    def __init__(self):
        self.produced = self.taken = self.most_ahead = self.heaviest = 0
        self.depth = None

    def __call__(self, items, depth=_sources.READ_AHEAD, weigh=None):
        weigh = weigh or (lambda item: 1)
        self.depth = depth

        def counted():
            for item in items:
                weight = weigh(item)
                self.heaviest = max(self.heaviest, weight)
                self.produced += weight
                self.most_ahead = max(self.most_ahead, self.produced - self.taken)
                yield item

        for item in READ_AHEAD(counted(), depth, weigh):
            self.taken += weigh(item)
            yield item


class CountedReadAheads(list):
    """``read_ahead`` counting each of its queues (a reader may read ahead
    in stages: Parquet's batches are decoded ahead of their hashing) in a
    :class:`CountedReadAhead` of its own, in the order they are made."""

    def __call__(self, items, depth=_sources.READ_AHEAD, weigh=None):
        self.append(CountedReadAhead())
        return self[-1](items, depth, weigh)


READ_AHEAD = _sources.read_ahead


@pytest.mark.parametrize("kind", THREADED_READERS)
def test_a_slow_consumer_holds_no_more_than_the_queue_ahead(tmp_path, monkeypatch, kind):
    path, _ = write_file(tmp_path, kind)
    queues = CountedReadAheads()
    monkeypatch.setattr(_sources, "read_ahead", queues)
    rows = 0
    for X, *_ in chunks_of(kind, path, True):
        rows += X.shape[0]
        time.sleep(0.02)  # the thread reads far faster
    assert rows == N_ROWS
    # The chunks' queue: the thread ran ahead, and held the queue's depth at
    # most (one item more on its way in, one on its way out), not the file.
    # A queue before it holds its own depth at most.
    assert queues
    for counted in queues:
        whole = counted.produced
        assert counted.most_ahead <= counted.depth + 2 * counted.heaviest < whole
    assert queues[0].most_ahead > queues[0].heaviest
