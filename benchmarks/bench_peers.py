"""One online pass on the same data: skftrl vs SGDClassifier and other FTRL learners.

Every learner sees the training rows once, in order, in this process, and is
scored on held-out rows. Per dataset, a table gives rows per second (median of
--repeats runs, timing only the learning calls; skftrl's configurations and
SGDClassifier take turns in each repeat), the ratio to SGDClassifier,
held-out log loss and AUC, the number of non-zero weights and the tracemalloc
peak of one extra, untimed run; a line then compares predict_proba speed
(again with a model's kept weights, and on the first call after learning). The
peers (river, Vowpal Wabbit, datatable) are optional and skipped when not
installed; river and VW learn from the first --peer-rows rows only, as they take
one Python call per row. A last section checks that partial_fit's peak memory
stays near the size of the state plus one chunk on a 2^24-column stream.

    python benchmarks/bench_peers.py [--datasets a9a,w8a,synthetic] [--repeats 3]
        [--chunk-size 10000] [--peer-rows 50000] [--learners numba,SGD]
        [--synthetic-rows 1000000] [--synthetic-features-log2 20] [--data-dir DIR]
        [--memory-check | --no-memory-check] [--memory-features-log2 24]
"""

import argparse
import os
import platform
import re
import tempfile
import time
import tracemalloc
from collections import namedtuple
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from scipy.special import expit
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import log_loss, roc_auc_score

import skftrl
from skftrl import FTRLClassifier
from skftrl.datasets import load_a9a

try:
    import numba
except ImportError:
    numba = None
try:
    import river
    from river import linear_model as river_linear_model
    from river import optim as river_optim
except ImportError:
    river = None
try:
    import vowpalwabbit
except ImportError:
    vowpalwabbit = None
try:
    import datatable
    from datatable.models import Ftrl as DatatableFtrl
except ImportError:
    datatable = None

# The same FTRL-Proximal hyper-parameters for every FTRL learner.
ALPHA, BETA, L1, L2 = 0.1, 1.0, 1.0, 0.0
COMMON = {"learning_rate": ALPHA, "beta": BETA, "l1": L1, "l2": L2}
F32 = {"dtype": np.float32}
SKFTRL_CONFIGS = [
    ("skftrl numpy b=1", {"engine": "numpy", "batch_size": 1}),
    ("skftrl numpy b=64", {"engine": "numpy", "batch_size": 64}),
    ("skftrl numpy b=256", {"engine": "numpy", "batch_size": 256}),
    ("skftrl numba b=1", {"engine": "numba", "batch_size": 1}),
    ("skftrl numba b=1 f32", {"engine": "numba", "batch_size": 1, **F32}),
]
MEMORY_CONFIGS = [
    ("skftrl numpy b=64", {"engine": "numpy", "batch_size": 64}),
    ("skftrl numpy b=64 f32", {"engine": "numpy", "batch_size": 64, **F32}),
    ("skftrl numba b=1 f32", {"engine": "numba", "batch_size": 1, **F32}),
]
WARMUP_ROWS = 16
SGD_LABEL = "SGDClassifier"
CLASSES = np.array([0, 1])

# In --ftrl mode VW uses --l1/--l2 as the paper's lambda1/lambda2 in the proximal
# closed form (w = 0 where |z| <= l1; reductions/ftrl.cc), not the per-example
# truncated-gradient scaling of its default optimizer: the same values apply as
# they are. VW's own constant feature is the intercept, which FTRL regularizes
# like any weight. -b 24: a few hundred or 2^20 columns barely collide in 2^24.
VW_BITS = 24
VW_ARGS = (
    f"--ftrl --ftrl_alpha {ALPHA} --ftrl_beta {BETA} --l1 {L1} --l2 {L2} "
    f"--loss_function logistic --link logistic -b {VW_BITS} --holdout_off --quiet"
)
VW_CONSTANT = 11650396  # VW's hash of the constant feature, before the -b mask
# river's LogisticRegression updates its intercept by plain SGD: that is turned
# off (intercept_lr=0) and a constant feature added to every row instead, so FTRL
# learns it with a per-coordinate rate, like skftrl (but river applies L1 to it).
RIVER_BIAS = "bias"

Row = namedtuple("Row", "label speed loss auc nnz peak note")


@dataclass
class Dataset:
    name: str
    X_train: sp.csr_matrix
    y_train: np.ndarray  # labels 0/1
    X_test: sp.csr_matrix
    y_test: np.ndarray
    fields_train: np.ndarray = None  # synthetic only: each field's hashed column
    fields_test: np.ndarray = None


def _mix64(x):
    """splitmix64's finalizer: a cheap, well-mixing hash of uint64 arrays."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)  # uint64 arrays wrap mod 2^64, silently
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hidden_weight(columns):
    """The hidden model: a quarter of the columns weigh uniform in [-2, 2]."""
    h = _mix64(columns ^ np.uint64(0x5EED))
    uniform = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return np.where((h & np.uint64(3)) == 0, 4.0 * uniform - 2.0, 0.0)


def make_click_stream(n_rows, n_features_log2, n_fields=20, seed=0, chunk_rows=100_000):
    """A synthetic click log: rows of n_fields one-hot categorical fields, hashed.

    Field f has 10 to 10^6 categories (log-spaced over the fields), drawn with
    P(k) ~ 1/k: a few are very frequent, most are rare, as in ad logs. Each
    (field, category) is hashed into one of 2^n_features_log2 columns, value 1.
    Labels come from a hidden sparse logistic model over the hashed columns,
    with a bias giving 12-20% clicks. Made in chunks, so temporaries stay small.

    Returns X (canonical CSR, int32 indices), y (0/1) and each field's hashed
    column, shape (n_rows, n_fields), int32 (for datatable's frame).
    """
    rng = np.random.default_rng(seed)
    vocabulary = np.logspace(1, 6, n_fields)
    field_salt = _mix64(np.arange(1, n_fields + 1, dtype=np.uint64))
    shift = np.uint64(64 - n_features_log2)
    data, indices, indptr, labels, fields = [], [], [np.zeros(1, np.int64)], [], []
    for start in range(0, n_rows, chunk_rows):
        n = min(chunk_rows, n_rows - start)
        # vocabulary ** U is log-uniform: the 1/k power law, vectorized.
        category = (vocabulary ** rng.random((n, n_fields))).astype(np.uint64)
        columns = _mix64(category ^ field_salt) >> shift  # the top k bits
        margin = -3.4 + _hidden_weight(columns).sum(axis=1)
        labels.append((rng.random(n) < expit(margin)).astype(np.int64))
        # Two fields of a row may hash to one column: building CSR sums them.
        rows = np.repeat(np.arange(n), n_fields)
        chunk = sp.csr_matrix(
            (np.ones(n * n_fields), (rows, columns.ravel().astype(np.int64))),
            shape=(n, 2**n_features_log2),
        )
        data.append(chunk.data)
        indices.append(chunk.indices.astype(np.int32))
        indptr.append(chunk.indptr[1:] + indptr[-1][-1])
        fields.append(columns.astype(np.int32))
    indptr = np.concatenate(indptr).astype(np.int32)
    shape = (n_rows, 2**n_features_log2)
    X = sp.csr_matrix((np.concatenate(data), np.concatenate(indices), indptr), shape)
    return X, np.concatenate(labels), np.concatenate(fields)


def load_dataset(name, args):
    """The named dataset, labels 0/1, or None (with a note) if its file is missing."""
    if name == "a9a":
        X_train, y_train, X_test, y_test = load_a9a()
        return Dataset(name, X_train, (y_train > 0) * 1, X_test, (y_test > 0) * 1)
    if name == "w8a":
        path = args.data_dir / "w8a" / "w8a"
        if not path.exists():
            print(f"\nw8a: {path} not found: skipped")
            return None
        X, y = load_svmlight_file(str(path), n_features=300)
        # 32-bit indices, as skftrl's loaders give (SGDClassifier rejects 64-bit).
        X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
        # The file lists all its positives first, so its tail has none: shuffle
        # with a fixed seed, then hold out the last 20% (there is no test file).
        order = np.random.default_rng(0).permutation(X.shape[0])
        X, y, cut = X[order], (y[order] > 0) * 1, X.shape[0] - X.shape[0] // 5
        return Dataset(name, X[:cut], y[:cut], X[cut:], y[cut:])
    k = args.synthetic_features_log2
    X, y, fields = make_click_stream(args.synthetic_rows, k)
    cut = X.shape[0] - X.shape[0] // 10  # the last 10% is held out
    return Dataset(name, X[:cut], y[:cut], X[cut:], y[cut:], fields[:cut], fields[cut:])


def chunked(X, y, size):
    """(X, y) in consecutive chunks of size rows, sliced once, before any timing."""
    return [(X[i : i + size], y[i : i + size]) for i in range(0, X.shape[0], size)]


def supported(configs):
    """The skftrl configurations this installation runs; a note for the others."""
    known = FTRLClassifier().get_params()
    for label, params in configs:
        missing = ", ".join(key for key in params if key not in known)
        if missing:
            print(f"  {label}: skipped, FTRLClassifier has no parameter {missing}")
        elif params.get("engine") == "numba" and numba is None:
            print(f"  {label}: skipped, numba is not installed")
        else:
            yield label, {**COMMON, **params}


def warm_up(params, X, y):
    """An untimed partial_fit on a few rows: numba compiles or loads its cache."""
    FTRLClassifier(**params).partial_fit(X[:WARMUP_ROWS], y[:WARMUP_ROWS], CLASSES)


def partial_fit_pass(make, chunks):
    """A new model after one partial_fit pass, and the seconds spent in partial_fit."""
    model, seconds = make(), 0.0
    for X, y in chunks:
        began = time.perf_counter()
        model.partial_fit(X, y, classes=CLASSES)
        seconds += time.perf_counter() - began
    return model, seconds


def traced_peak(run):
    """Peak of Python/numpy allocations (tracemalloc) in run(); C/C++ heaps are unseen."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def make_row(label, speed, y_test, proba, nnz, peak, note=""):
    proba = np.asarray(proba, dtype=np.float64)
    loss, auc = log_loss(y_test, proba, labels=CLASSES), roc_auc_score(y_test, proba)
    return Row(label, speed, loss, auc, nnz, peak, note)


def run_sklearn_api(learners, ds, args):
    """skftrl configurations and SGDClassifier, partial_fit over the same chunks.

    Each repeat runs every learner once, in turn, so that a burst of load on
    this shared machine slows all of them alike and the ratios stay fair.
    ``learners`` is a list of (label, make); returns the table rows and the
    models, by label.
    """
    chunks = chunked(ds.X_train, ds.y_train, args.chunk_size)
    seconds, models = {label: [] for label, _ in learners}, {}
    for _ in range(args.repeats):
        for label, make in learners:
            models[label], spent = partial_fit_pass(make, chunks)
            seconds[label].append(spent)
    rows = []
    for label, make in learners:
        speed = len(ds.y_train) / np.median(seconds[label])
        peak = traced_peak(lambda make=make: partial_fit_pass(make, chunks))
        proba = models[label].predict_proba(ds.X_test)[:, 1]
        nnz = np.count_nonzero(models[label].coef_)
        rows.append(make_row(label, speed, ds.y_test, proba, nnz, peak))
    return rows, models


def capped(n, total, kind):
    return f"first {n:,} {kind} rows" if n < total else f"all {kind} rows"


def csr_to_dicts(X):
    """river's input: a {column: value} dict per row, plus the constant feature."""
    indptr, indices, data = X.indptr, X.indices.tolist(), X.data.tolist()
    return [
        {**dict(zip(indices[a:b], data[a:b])), RIVER_BIAS: 1.0}
        for a, b in zip(indptr[:-1], indptr[1:])
    ]


RIVER_RIVAL = "skftrl numpy b=1"


def run_river(ds, args):
    """river's FTRLProximal, taking turns with skftrl's per-row numpy engine on
    the same rows; prints their speed ratio and returns river's table row."""
    n_train = min(args.peer_rows, len(ds.y_train))
    n_test = min(args.peer_rows, len(ds.y_test))  # one Python call per row here too
    train, test = csr_to_dicts(ds.X_train[:n_train]), csr_to_dicts(ds.X_test[:n_test])
    labels = ds.y_train[:n_train].astype(bool).tolist()
    rival = dict(SKFTRL_CONFIGS)[RIVER_RIVAL]
    make_rival = partial(FTRLClassifier, **COMMON, **rival)
    rival_chunks = chunked(ds.X_train[:n_train], ds.y_train[:n_train], args.chunk_size)

    def learn():
        # river's FTRLProximal computes a weight from z before adding the row's
        # gradient, so its predictions lag one update behind the paper's.
        optimizer = river_optim.FTRLProximal(alpha=ALPHA, beta=BETA, l1=L1, l2=L2)
        model = river_linear_model.LogisticRegression(optimizer, intercept_lr=0.0)
        began = time.perf_counter()
        for x, y in zip(train, labels):
            model.learn_one(x, y)
        return model, time.perf_counter() - began

    runs, rival_seconds = [], []
    for _ in range(args.repeats):
        runs.append(learn())
        rival_seconds.append(partial_fit_pass(make_rival, rival_chunks)[1])
    model, speed = runs[-1][0], n_train / np.median([s for _, s in runs])
    rival_speed = n_train / np.median(rival_seconds)
    # Each repeat's pair ran back to back, under the same load: the median of
    # their ratios is steadier than the ratio of the medians on a shared machine.
    paired = np.median([river / ours for (_, river), ours in zip(runs, rival_seconds)])
    print(
        f"  {RIVER_RIVAL} and river on the same {n_train:,} rows, taking turns "
        f"{args.repeats} times: {rival_speed:,.0f} vs {speed:,.0f} rows/s (medians), "
        f"ratio {rival_speed / speed:.2f}; median of the paired ratios {paired:.2f}"
    )
    peak = traced_peak(learn)
    proba = [model.predict_proba_one(x)[True] for x in test]
    nnz = sum(w != 0 for key, w in model.weights.items() if key != RIVER_BIAS)
    note = capped(n_train, len(ds.y_train), "train")
    if n_test < len(ds.y_test):
        note += f", first {n_test:,} test rows"
    return make_row("river FTRLProximal", speed, ds.y_test[:n_test], proba, nnz, peak, note)


def vw_lines(X, y=None):
    """VW text, "1 |f 3:1 17:1" (labels -1/+1 for the logistic loss), or unlabelled."""
    indptr, indices, data = X.indptr, X.indices.tolist(), X.data.tolist()
    lines = []
    for i, (a, b) in enumerate(zip(indptr[:-1], indptr[1:])):
        features = " ".join(f"{j}:{v:g}" for j, v in zip(indices[a:b], data[a:b]))
        label = "" if y is None else ("1 " if y[i] else "-1 ")
        lines.append(f"{label}|f {features}")
    return lines


def vw_nonzeros(path):
    """Non-zero weights in VW's readable model ("index:w z n" lines), no intercept."""
    constant, count = VW_CONSTANT % 2**VW_BITS, 0
    for line in Path(path).read_text().splitlines():
        match = re.match(r"(\d+):(\S+)", line)
        count += bool(match and int(match[1]) != constant and float(match[2]) != 0)
    return count


def run_vw(ds, args):
    n_train = min(args.peer_rows, len(ds.y_train))
    train = vw_lines(ds.X_train[:n_train], ds.y_train[:n_train])
    test, seconds = vw_lines(ds.X_test), []
    with tempfile.TemporaryDirectory() as tmp:
        readable = os.path.join(tmp, "model.txt")
        for _ in range(args.repeats):
            # Built untimed: the workspace allocates its 2^24-slot weight table.
            ws = vowpalwabbit.Workspace(f"{VW_ARGS} --readable_model {readable}")
            began = time.perf_counter()
            for line in train:  # text is VW's normal input, so parsing is timed
                ws.learn(line)
            seconds.append(time.perf_counter() - began)
            proba = [ws.predict(line) for line in test]
            ws.finish()  # writes the readable model
        nnz = vw_nonzeros(readable)
    speed = n_train / np.median(seconds)
    note = capped(n_train, len(ds.y_train), "train") + ", text input"
    return make_row("VW --ftrl", speed, ds.y_test, proba, nnz, None, note)


def datatable_frames(ds):
    """datatable learns from a Frame: (train frame, test frame, hash bins)."""
    if ds.fields_train is not None:  # synthetic: one int column per field
        frames = (ds.fields_train, ds.fields_test)
        return *(datatable.Frame(f) for f in frames), ds.X_train.shape[1]
    # a9a, w8a: one dense 0/1 column per feature (123 or 300). datatable hashes
    # each (column, value) pair, so a 0 gets a weight too and every row updates
    # all columns, not only its non-zeros.
    frames = (ds.X_train, ds.X_test)
    return *(datatable.Frame(X.toarray() != 0) for X in frames), 2**20


def run_datatable(ds, args):
    X_train, X_test, nbins = datatable_frames(ds)
    y_train, seconds = datatable.Frame(ds.y_train.astype(bool)), []
    for _ in range(args.repeats):
        model = DatatableFtrl(
            alpha=ALPHA, beta=BETA, lambda1=L1, lambda2=L2, nbins=nbins, nepochs=1,
            double_precision=True,
        )  # fmt: skip
        began = time.perf_counter()
        model.fit(X_train, y_train)
        seconds.append(time.perf_counter() - began)
    proba = model.predict(X_test)["True"].to_numpy().ravel()
    z = model.model[:, 0].to_numpy().ravel()
    nnz = np.count_nonzero(np.abs(z) > L1)  # w = 0 exactly where |z| <= lambda1
    speed = len(ds.y_train) / np.median(seconds)
    note = f"one fit(), {datatable.options.nthreads} threads (Hogwild), hash bins"
    return make_row("datatable Ftrl", speed, ds.y_test, proba, nnz, None, note)


def print_table(rows):
    sgd = next((r.speed for r in rows if r.label == SGD_LABEL), None)
    print(
        f"  {'learner':<22} {'rows/s':>11} {'vs SGD':>6} {'log loss':>8} {'AUC':>6} "
        f"{'non-zeros':>10} {'peak MB':>8}  note"
    )
    for r in rows:
        ratio = f"{r.speed / sgd:.2f}" if sgd else "-"
        peak = "n/a" if r.peak is None else f"{r.peak / 2**20:.1f}"
        print(
            f"  {r.label:<22} {r.speed:>11,.0f} {ratio:>6} {r.loss:>8.4f} "
            f"{r.auc:>6.4f} {r.nnz:>10,} {peak:>8}  {r.note}"
        )


# predict_proba takes milliseconds: more repeats than training, at little cost.
PREDICT_REPEATS = 21


def forget_kept_weights(model):
    """Drop an skftrl model's record of its earlier predictions, with the
    weights they kept (skftrl's private cache: a benchmark's need only), so
    that its next prediction is as the first one after learning."""
    cache = getattr(model, "_prediction_cache", None)  # skftrl's only
    if cache is not None:
        cache.clear()


def seconds_to_predict(model, X):
    began = time.perf_counter()
    model.predict_proba(X)
    return time.perf_counter() - began


def predict_speeds(models, X, repeats):
    """Rows/s of each model's predict_proba on X, as (again, first): the models
    take turns in each repeat, so that a burst of load on this shared machine
    hits all of them. skftrl keeps the weights a prediction computed until the
    model learns again: "again" predicts with them, "first" is a call without
    them, as the first after learning."""
    again, first = [[] for _ in models], [[] for _ in models]
    for _ in range(repeats):
        for model, again_times, first_times in zip(models, again, first):
            forget_kept_weights(model)
            first_times.append(seconds_to_predict(model, X))
            again_times.append(seconds_to_predict(model, X))
    return [
        (X.shape[0] / np.median(again_times), X.shape[0] / np.median(first_times))
        for again_times, first_times in zip(again, first)
    ]


def bench_dataset(ds, args, wanted):
    print(
        f"\n{ds.name}: {len(ds.y_train):,} train rows, {len(ds.y_test):,} test rows, "
        f"{ds.X_train.shape[1]:,} features, "
        f"{ds.X_train.nnz / len(ds.y_train):.1f} non-zeros a row, "
        f"{ds.y_train.mean():.1%} positive"
    )
    learners, engines = [], {}
    for label, params in supported(SKFTRL_CONFIGS):
        if wanted(label):
            warm_up(params, ds.X_train, ds.y_train)
            learners.append((label, partial(FTRLClassifier, **params)))
            # Prediction depends on the engine only (numba computes the weights).
            engines.setdefault(params.get("engine", "auto"), label)
    if wanted(SGD_LABEL):
        learners.append((SGD_LABEL, partial(SGDClassifier, loss="log_loss", random_state=0)))
    rows, models = run_sklearn_api(learners, ds, args)
    ours = {engine: (label, models[label]) for engine, label in engines.items()}
    sgd = models.get(SGD_LABEL)
    peers = [("river", river, run_river), ("VW", vowpalwabbit, run_vw)]
    for name, module, run in [*peers, ("datatable", datatable, run_datatable)]:
        if module is not None and wanted(name):
            try:
                rows.append(run(ds, args))
            except Exception as error:
                print(f"  {name} failed on {ds.name}: {type(error).__name__}: {error}")
    print_table(rows)

    if sgd is None:
        return
    if not ours:  # no skftrl configuration ran: predict with the defaults
        model = FTRLClassifier(**COMMON).partial_fit(ds.X_train, ds.y_train, CLASSES)
        ours = {"auto": ("skftrl defaults", model)}
    repeats = max(args.repeats, PREDICT_REPEATS)
    labelled = list(ours.values())
    *speeds, (sgd_speed, _) = predict_speeds([m for _, m in labelled] + [sgd], ds.X_test, repeats)
    for (label, _), (speed, first_speed) in zip(labelled, speeds):
        print(
            f"  predict_proba on the test CSR, median of {repeats} alternating runs: "
            f"{label} {speed:,.0f} rows/s (first call after learning "
            f"{first_speed:,.0f}), {SGD_LABEL} {sgd_speed:,.0f} rows/s, "
            f"ratio {speed / sgd_speed:.2f} (first call {first_speed / sgd_speed:.2f})"
        )


def memory_check(args):
    """Traced peak of a partial_fit stream from an unfitted model, vs state + chunk."""
    k = args.memory_features_log2
    X, y, _ = make_click_stream(args.synthetic_rows, k)
    chunks = chunked(X, y, args.chunk_size)
    del X, y
    chunk = chunks[0][0]
    chunk_bytes = chunk.data.nbytes + chunk.indices.nbytes + chunk.indptr.nbytes
    print(
        f"\nmemory: partial_fit over {args.synthetic_rows:,} synthetic rows x 2^{k} "
        f"columns in chunks of {args.chunk_size:,} rows (sliced beforehand),\nfrom an "
        "unfitted model; tracemalloc sees Python/numpy allocations only (not numba's "
        "temporaries)\n"
        f"  {'learner':<22} {'peak MB':>8} {'state MB':>9} {'chunk MB':>9} "
        f"{'peak/(state+chunk)':>19}"
    )
    tracemalloc.start()  # after the data is generated
    try:
        for label, params in supported(MEMORY_CONFIGS):
            warm_up(params, *chunks[0])  # its state is freed before measuring
            model = FTRLClassifier(**params)
            tracemalloc.reset_peak()
            baseline = tracemalloc.get_traced_memory()[0]
            for X_chunk, y_chunk in chunks:
                model.partial_fit(X_chunk, y_chunk, classes=CLASSES)
            peak = tracemalloc.get_traced_memory()[1] - baseline
            state = model.z_, model.n_, model.z_intercept_, model.n_intercept_
            state_bytes = sum(a.nbytes for a in state)
            print(
                f"  {label:<22} {peak / 2**20:>8.1f} {state_bytes / 2**20:>9.1f} "
                f"{chunk_bytes / 2**20:>9.2f} {peak / (state_bytes + chunk_bytes):>19.2f}"
            )
            del model, state
    finally:
        tracemalloc.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="a9a,w8a,synthetic")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk-size", type=int, default=10_000, help="partial_fit rows")
    parser.add_argument("--peer-rows", type=int, default=50_000, help="for river, VW")
    parser.add_argument("--learners", default="", help="label substrings, comma-separated")
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--synthetic-features-log2", type=int, default=20)
    default_data = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    parser.add_argument("--data-dir", type=Path, default=default_data)
    parser.add_argument(
        "--memory-check", action=argparse.BooleanOptionalAction, default=None,
        help="default: on when the synthetic dataset is benchmarked",
    )  # fmt: skip
    parser.add_argument("--memory-features-log2", type=int, default=24)
    args = parser.parse_args()
    datasets = [name.strip() for name in args.datasets.split(",") if name.strip()]
    patterns = [p.strip().lower() for p in args.learners.split(",") if p.strip()]
    unknown = set(datasets) - {"a9a", "w8a", "synthetic"}
    if unknown:
        parser.error(f"unknown datasets {sorted(unknown)}: choose among a9a, w8a, synthetic")

    def wanted(label):
        return not patterns or any(p in label.lower() for p in patterns)

    peers = {"river": river, "vowpalwabbit": vowpalwabbit, "datatable": datatable}
    versions = [f"{m.__name__} {m.__version__}" for m in (np, scipy, sklearn, skftrl)]
    versions += [f"{m.__name__} {m.__version__}" for m in (numba, *peers.values()) if m]
    print(f"{platform.platform()}, {os.cpu_count()} CPUs; " + ", ".join(versions))
    for name, module in peers.items():
        if module is None:
            print(f"{name} not installed: skipped")
    print(
        f"FTRL alpha {ALPHA}, beta {BETA}, l1 {L1}, l2 {L2}. rows/s: median of "
        f"{args.repeats} runs of one pass, timing only the learning calls; data is "
        "chunked\n(partial_fit: chunks of "
        f"{args.chunk_size:,} rows) and converted to dicts, VW text or datatable "
        "frames beforehand. Each skftrl\nconfiguration first does one untimed "
        f"partial_fit on {WARMUP_ROWS} rows, so numba's compilation and cache load "
        "are not timed.\nskftrl and SGDClassifier take turns in each repeat, so "
        "that load on a shared machine hits them alike.\npeak MB: tracemalloc "
        "peak of one extra untimed run, "
        "Python/numpy allocations only (n/a: C++ peers it cannot see)."
    )
    for name in datasets:
        ds = load_dataset(name, args)
        if ds is not None:
            bench_dataset(ds, args, wanted)
        del ds
    if args.memory_check or (args.memory_check is None and "synthetic" in datasets):
        memory_check(args)


if __name__ == "__main__":
    main()
