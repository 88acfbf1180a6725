"""One online pass on the same data: skftrl's engines vs SGDClassifier and other FTRL learners.

Every learner sees the training rows once, in order, in this process, and is
scored on held-out rows. Per dataset, a table gives rows per second (median of
--repeats runs, timing only the learning calls), the ratio to SGDClassifier,
held-out log loss and AUC, the number of non-zero weights and the tracemalloc
peak of one extra, untimed run; then a line compares predict_proba speed. The
peers (river, Vowpal Wabbit, datatable) are optional, skipped when not
installed; river and VW learn from the first --peer-rows rows only, as they
take one Python call per row. A last section checks that partial_fit's peak
memory stays near the size of the state plus one chunk on a 2^24-column stream.

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
from dataclasses import dataclass
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
SKFTRL_CONFIGS = [
    ("skftrl numpy b=1", {"engine": "numpy", "batch_size": 1}),
    ("skftrl numpy b=64", {"engine": "numpy", "batch_size": 64}),
    ("skftrl numpy b=256", {"engine": "numpy", "batch_size": 256}),
    ("skftrl numba b=1", {"engine": "numba", "batch_size": 1}),
    ("skftrl numba b=1 f32", {"engine": "numba", "batch_size": 1, "dtype": np.float32}),
]
MEMORY_CONFIGS = [
    ("skftrl numpy b=64", {"engine": "numpy", "batch_size": 64}),
    (
        "skftrl numpy b=64 f32",
        {"engine": "numpy", "batch_size": 64, "dtype": np.float32},
    ),
    ("skftrl numba b=1 f32", {"engine": "numba", "batch_size": 1, "dtype": np.float32}),
]
WARMUP_ROWS = 16
SGD_LABEL = "SGDClassifier"

# VW in --ftrl mode uses --l1/--l2 as the paper's lambda1/lambda2 in the
# proximal closed form (|z| <= l1 gives w = 0; see reductions/ftrl.cc), not the
# per-example truncated-gradient scaling of its default optimizer, so the same
# values apply unchanged. VW adds its own constant feature as the intercept,
# which FTRL regularizes like any weight. -b 24: hashing a few hundred or 2^20
# columns into 2^24 slots leaves almost no collisions.
VW_BITS = 24
VW_ARGS = (
    f"--ftrl --ftrl_alpha {ALPHA} --ftrl_beta {BETA} --l1 {L1} --l2 {L2} "
    f"--loss_function logistic --link logistic -b {VW_BITS} --holdout_off --quiet"
)
VW_CONSTANT = 11650396  # VW's hash of its constant (intercept) feature
# river's LogisticRegression updates its intercept by plain SGD; instead it is
# turned off (intercept_lr=0) and a constant feature is added to every row, so
# FTRL learns it with its per-coordinate rate, like skftrl (though with L1).
RIVER_BIAS = "bias"


@dataclass
class Dataset:
    name: str
    X_train: sp.csr_matrix
    y_train: np.ndarray  # 0/1
    X_test: sp.csr_matrix
    y_test: np.ndarray
    fields_train: np.ndarray = None  # synthetic only: hashed column of each field
    fields_test: np.ndarray = None


def _mix64(x):
    """splitmix64's finalizer: a cheap, well-mixing hash of uint64 arrays (wraps mod 2^64)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hidden_weight(columns):
    """The hidden model: a quarter of the columns get a weight uniform in [-2, 2]."""
    h = _mix64(columns ^ np.uint64(0x5EED))
    active = (h & np.uint64(3)) == 0
    uniform = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return np.where(active, 4.0 * uniform - 2.0, 0.0)


def make_click_stream(n_rows, n_features_log2, n_fields=20, seed=0, chunk_rows=100_000):
    """A synthetic click log: rows of n_fields one-hot categorical fields, hashed.

    Field f has 10 to 10^6 categories (log-spaced over the fields), drawn with
    P(k) ~ 1/k: a few are very frequent, most are rare, as in ad logs. Each
    (field, category) is hashed into 2^n_features_log2 columns with value 1.
    Labels come from a hidden sparse logistic model over the hashed columns,
    with a bias giving about 15% clicks. Generated in chunks of chunk_rows so
    that temporaries stay small.

    Returns X (canonical CSR, int32 indices), y (0/1) and the hashed column of
    each field, shape (n_rows, n_fields), int32 (datatable's frame).
    """
    rng = np.random.default_rng(seed)
    vocabulary = np.logspace(1, 6, n_fields)
    field_salt = _mix64(np.arange(1, n_fields + 1, dtype=np.uint64))
    shift = np.uint64(64 - n_features_log2)
    data, indices, indptr, labels, fields = [], [], [np.zeros(1, np.int64)], [], []
    for start in range(0, n_rows, chunk_rows):
        n = min(chunk_rows, n_rows - start)
        # vocabulary ** U is log-uniform: the discrete 1/k power law, vectorized.
        category = (vocabulary ** rng.random((n, n_fields))).astype(np.uint64)
        columns = _mix64(category ^ field_salt) >> shift  # the top bits: [0, 2^k)
        margin = -3.4 + _hidden_weight(columns).sum(axis=1)
        labels.append((rng.random(n) < expit(margin)).astype(np.int64))
        # Two fields may hash to the same column: CSR construction sums them.
        rows = np.repeat(np.arange(n), n_fields)
        chunk = sp.csr_matrix(
            (np.ones(n * n_fields), (rows, columns.ravel().astype(np.int64))),
            shape=(n, 2**n_features_log2),
        )
        data.append(chunk.data)
        indices.append(chunk.indices.astype(np.int32))
        indptr.append(chunk.indptr[1:] + indptr[-1][-1])
        fields.append(columns.astype(np.int32))
    X = sp.csr_matrix(
        (
            np.concatenate(data),
            np.concatenate(indices),
            np.concatenate(indptr).astype(np.int32),
        ),
        shape=(n_rows, 2**n_features_log2),
    )
    return X, np.concatenate(labels), np.concatenate(fields)


def load_dataset(name, args):
    """The named dataset with 0/1 labels, or None (with a note) when its file is missing."""
    if name == "a9a":
        X_train, y_train, X_test, y_test = load_a9a()
        y_train, y_test = (y_train > 0).astype(np.int64), (y_test > 0).astype(np.int64)
        return Dataset(name, X_train, y_train, X_test, y_test)
    if name == "w8a":
        path = args.data_dir / "w8a" / "w8a"
        if not path.exists():
            print(f"\nw8a: {path} not found: skipped")
            return None
        X, y = load_svmlight_file(str(path), n_features=300)
        # 32-bit indices, as skftrl's loaders give (SGDClassifier rejects 64-bit ones).
        X = sp.csr_matrix(
            (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), X.shape
        )
        # The file lists all positives first, so its tail has none: shuffle the
        # rows with a fixed seed, then hold out the last 20% (no test file).
        order = np.random.default_rng(0).permutation(X.shape[0])
        X, y = X[order], (y[order] > 0).astype(np.int64)
        cut = X.shape[0] - X.shape[0] // 5
        return Dataset(name, X[:cut], y[:cut], X[cut:], y[cut:])
    if name == "synthetic":
        X, y, fields = make_click_stream(
            args.synthetic_rows, args.synthetic_features_log2
        )
        cut = X.shape[0] - X.shape[0] // 10  # the last 10% is held out
        return Dataset(
            name, X[:cut], y[:cut], X[cut:], y[cut:], fields[:cut], fields[cut:]
        )
    raise SystemExit(f"unknown dataset {name!r}: choose among a9a, w8a, synthetic")


def chunked(X, y, size):
    """(X, y) in consecutive chunks of size rows, sliced once, before any timing."""
    return [(X[i : i + size], y[i : i + size]) for i in range(0, X.shape[0], size)]


def supported(configs):
    """The skftrl configurations this installation can run, with a note for the others."""
    known = FTRLClassifier().get_params()
    for label, params in configs:
        missing = [key for key in params if key not in known]
        if missing:
            print(
                f"  {label}: skipped, FTRLClassifier has no parameter {', '.join(missing)}"
            )
        elif params.get("engine") == "numba" and numba is None:
            print(f"  {label}: skipped, numba is not installed")
        else:
            yield label, {**COMMON, **params}


def partial_fit_pass(make, chunks, classes):
    """A new model after one partial_fit pass, and the seconds spent in partial_fit."""
    model, seconds = make(), 0.0
    for X, y in chunks:
        began = time.perf_counter()
        model.partial_fit(X, y, classes=classes)
        seconds += time.perf_counter() - began
    return model, seconds


def traced_peak(run):
    """Peak of Python/numpy allocations (tracemalloc) during run(); C/C++ heaps are invisible."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def result(label, rows_per_second, y_test, proba, nnz, peak, note=""):
    proba = np.asarray(proba, dtype=np.float64)
    return {
        "label": label,
        "speed": rows_per_second,
        "loss": log_loss(y_test, proba, labels=[0, 1]),
        "auc": roc_auc_score(y_test, proba),
        "nnz": nnz,
        "peak": peak,
        "note": note,
    }


def run_sklearn_api(label, make, ds, args):
    """skftrl or SGDClassifier: partial_fit over the chunks; returns (result row, model)."""
    chunks, classes = chunked(ds.X_train, ds.y_train, args.chunk_size), np.array([0, 1])
    seconds = []
    for _ in range(args.repeats):
        model, spent = partial_fit_pass(make, chunks, classes)
        seconds.append(spent)
    peak = traced_peak(lambda: partial_fit_pass(make, chunks, classes))
    proba = model.predict_proba(ds.X_test)[:, 1]
    speed = ds.X_train.shape[0] / np.median(seconds)
    return result(
        label, speed, ds.y_test, proba, np.count_nonzero(model.coef_), peak
    ), model


def csr_to_dicts(X):
    """river's input: one {column: value} dict per row, plus the constant feature."""
    indptr, indices, data = X.indptr, X.indices.tolist(), X.data.tolist()
    return [
        {**dict(zip(indices[a:b], data[a:b])), RIVER_BIAS: 1.0}
        for a, b in zip(indptr[:-1], indptr[1:])
    ]


def run_river(ds, args):
    n_train, n_test = (
        min(args.peer_rows, ds.X_train.shape[0]),
        min(args.peer_rows, len(ds.y_test)),
    )
    train, y_train = (
        csr_to_dicts(ds.X_train[:n_train]),
        ds.y_train[:n_train].astype(bool).tolist(),
    )
    test = csr_to_dicts(ds.X_test[:n_test])

    def learn():
        # river's FTRLProximal computes a weight from z before the row's
        # gradient is added, so predictions lag one update behind the paper's.
        model = river_linear_model.LogisticRegression(
            optimizer=river_optim.FTRLProximal(alpha=ALPHA, beta=BETA, l1=L1, l2=L2),
            intercept_lr=0.0,
        )
        began = time.perf_counter()
        for x, y in zip(train, y_train):
            model.learn_one(x, y)
        return model, time.perf_counter() - began

    runs = [learn() for _ in range(args.repeats)]
    model, seconds = runs[-1][0], np.median([spent for _, spent in runs])
    peak = traced_peak(learn)
    proba = [model.predict_proba_one(x)[True] for x in test]
    nnz = sum(1 for key, w in model.weights.items() if w != 0 and key != RIVER_BIAS)
    note = f"first {n_train:,} train rows" + (
        f", {n_test:,} test rows" if n_test < len(ds.y_test) else ""
    )
    return result(
        "river FTRLProximal",
        n_train / seconds,
        ds.y_test[:n_test],
        proba,
        nnz,
        peak,
        note,
    )


def vw_lines(X, y=None):
    """VW text: "1 |f 3:1 17:1" (labels -1/+1 for the logistic loss), or no label to predict."""
    indptr, indices, data = X.indptr, X.indices.tolist(), X.data.tolist()
    lines = []
    for i, (a, b) in enumerate(zip(indptr[:-1], indptr[1:])):
        features = " ".join(f"{j}:{v:g}" for j, v in zip(indices[a:b], data[a:b]))
        label = "" if y is None else ("1 " if y[i] else "-1 ")
        lines.append(f"{label}|f {features}")
    return lines


def vw_nonzeros(readable_model_path):
    """Non-zero weights in VW's readable model ("index:weight z n" lines), intercept excluded."""
    constant = VW_CONSTANT % 2**VW_BITS
    count = 0
    for line in Path(readable_model_path).read_text().splitlines():
        match = re.match(r"(\d+):(\S+)", line)
        if match and int(match[1]) != constant and float(match[2]) != 0.0:
            count += 1
    return count


def run_vw(ds, args):
    n_train = min(args.peer_rows, ds.X_train.shape[0])
    train, test = (
        vw_lines(ds.X_train[:n_train], ds.y_train[:n_train]),
        vw_lines(ds.X_test),
    )
    with tempfile.TemporaryDirectory() as tmp:
        readable = os.path.join(tmp, "model.txt")
        seconds = []
        for _ in range(args.repeats):
            # The workspace (and its 2^24-slot weight table) is built untimed.
            ws = vowpalwabbit.Workspace(f"{VW_ARGS} --readable_model {readable}")
            began = time.perf_counter()
            for line in train:  # parsing text is VW's normal input path, so it is timed
                ws.learn(line)
            seconds.append(time.perf_counter() - began)
            proba = [ws.predict(line) for line in test]
            ws.finish()  # writes the readable model
        nnz = vw_nonzeros(readable)
    note = f"first {n_train:,} train rows, text input"
    return result(
        "VW --ftrl", n_train / np.median(seconds), ds.y_test, proba, nnz, None, note
    )


def datatable_frames(ds):
    """datatable needs a Frame, and the number of hash bins to give its Ftrl."""
    if ds.fields_train is not None:  # synthetic: one int column per field
        nbins = ds.X_train.shape[1]
        return datatable.Frame(ds.fields_train), datatable.Frame(ds.fields_test), nbins
    # a9a, w8a: one 0/1 column per feature, dense (123 or 300 columns).
    train, test = (datatable.Frame(X.toarray() != 0) for X in (ds.X_train, ds.X_test))
    return train, test, 2**20


def run_datatable(ds, args):
    X_train, X_test, nbins = datatable_frames(ds)
    y_train = datatable.Frame(ds.y_train.astype(bool))
    seconds = []
    for _ in range(args.repeats):
        model = DatatableFtrl(
            alpha=ALPHA,
            beta=BETA,
            lambda1=L1,
            lambda2=L2,
            nbins=nbins,
            nepochs=1,
            double_precision=True,
        )
        began = time.perf_counter()
        model.fit(X_train, y_train)
        seconds.append(time.perf_counter() - began)
    proba = model.predict(X_test)["True"].to_numpy().ravel()
    z = model.model[:, 0].to_numpy().ravel()
    nnz = int(np.count_nonzero(np.abs(z) > L1))  # w = 0 exactly where |z| <= lambda1
    note = (
        f"one fit() call, {datatable.options.nthreads} threads (Hogwild); hashed bins"
    )
    speed = ds.X_train.shape[0] / np.median(seconds)
    return result("datatable Ftrl", speed, ds.y_test, proba, nnz, None, note)


def print_table(results):
    sgd = next((r["speed"] for r in results if r["label"] == SGD_LABEL), None)
    print(
        f"  {'learner':<22} {'rows/s':>11} {'vs SGD':>6} {'log loss':>8} {'AUC':>6} "
        f"{'non-zeros':>10} {'peak MB':>8}  note"
    )
    for r in results:
        ratio = f"{r['speed'] / sgd:.2f}" if sgd else "-"
        peak = "n/a" if r["peak"] is None else f"{r['peak'] / 2**20:.1f}"
        print(
            f"  {r['label']:<22} {r['speed']:>11,.0f} {ratio:>6} {r['loss']:>8.4f} "
            f"{r['auc']:>6.4f} {r['nnz']:>10,} {peak:>8}  {r['note']}"
        )


def median_rows_per_second(predict, X, repeats):
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        predict(X)
        seconds.append(time.perf_counter() - began)
    return X.shape[0] / np.median(seconds)


def bench_dataset(ds, args, wanted):
    nnz_per_row = ds.X_train.nnz / ds.X_train.shape[0]
    print(
        f"\n{ds.name}: {ds.X_train.shape[0]:,} train rows, {len(ds.y_test):,} test rows, "
        f"{ds.X_train.shape[1]:,} features, {nnz_per_row:.1f} non-zeros a row, "
        f"{ds.y_train.mean():.1%} positive"
    )
    results, skftrl_model, sgd_model = [], None, None
    for label, params in supported(SKFTRL_CONFIGS):
        if not wanted(label):
            continue
        # Untimed warm-up, so that numba's compilation or cache load is not timed.
        FTRLClassifier(**params).partial_fit(
            ds.X_train[:WARMUP_ROWS], ds.y_train[:WARMUP_ROWS], classes=[0, 1]
        )
        row, model = run_sklearn_api(
            label, lambda p=params: FTRLClassifier(**p), ds, args
        )
        results.append(row)
        skftrl_model = skftrl_model or (label, model)
    if wanted(SGD_LABEL):
        row, sgd_model = run_sklearn_api(
            SGD_LABEL, lambda: SGDClassifier(loss="log_loss", random_state=0), ds, args
        )
        results.append(row)
    peers = [
        ("river", river, run_river),
        ("VW", vowpalwabbit, run_vw),
        ("datatable", datatable, run_datatable),
    ]
    for name, module, run in peers:
        if module is not None and wanted(name):
            try:
                results.append(run(ds, args))
            except Exception as error:  # noqa: BLE001 (a failing peer must not stop the rest)
                print(f"  {name} failed on {ds.name}: {type(error).__name__}: {error}")
    print_table(results)

    if sgd_model is None:
        return
    if skftrl_model is None:  # no configuration ran: predict with the defaults instead
        model = FTRLClassifier(**COMMON).partial_fit(
            ds.X_train, ds.y_train, classes=[0, 1]
        )
        skftrl_model = ("skftrl defaults", model)
    label, model = skftrl_model
    ours = median_rows_per_second(model.predict_proba, ds.X_test, args.repeats)
    theirs = median_rows_per_second(sgd_model.predict_proba, ds.X_test, args.repeats)
    print(
        f"  predict_proba on the test CSR: {label} {ours:,.0f} rows/s, "
        f"{SGD_LABEL} {theirs:,.0f} rows/s, ratio {ours / theirs:.2f}"
    )


def memory_check(args):
    """Peak traced memory of a partial_fit stream from an unfitted model vs state + one chunk."""
    k = args.memory_features_log2
    X, y, _ = make_click_stream(args.synthetic_rows, k)
    chunks = chunked(X, y, args.chunk_size)
    del X, y
    first = chunks[0][0]
    chunk_bytes = first.data.nbytes + first.indices.nbytes + first.indptr.nbytes
    print(
        f"\nmemory: partial_fit over {args.synthetic_rows:,} synthetic rows x 2^{k} columns, "
        f"chunks of {args.chunk_size:,} rows sliced beforehand, from an unfitted model\n"
        "  (tracemalloc: Python/numpy allocations only; numba's own temporaries are not seen)"
    )
    print(
        f"  {'learner':<22} {'peak MB':>8} {'state MB':>9} {'chunk MB':>9} {'peak/(state+chunk)':>19}"
    )
    tracemalloc.start()  # after the data is generated
    try:
        for label, params in supported(MEMORY_CONFIGS):
            # The warm-up allocates a 2^k state too; it is freed before measuring.
            FTRLClassifier(**params).partial_fit(
                chunks[0][0][:WARMUP_ROWS], chunks[0][1][:WARMUP_ROWS], classes=[0, 1]
            )
            model = FTRLClassifier(**params)
            tracemalloc.reset_peak()
            baseline = tracemalloc.get_traced_memory()[0]
            for X_chunk, y_chunk in chunks:
                model.partial_fit(X_chunk, y_chunk, classes=[0, 1])
            peak = tracemalloc.get_traced_memory()[1] - baseline
            state = sum(
                a.nbytes
                for a in (model.z_, model.n_, model.z_intercept_, model.n_intercept_)
            )
            print(
                f"  {label:<22} {peak / 2**20:>8.1f} {state / 2**20:>9.1f} "
                f"{chunk_bytes / 2**20:>9.2f} {peak / (state + chunk_bytes):>19.2f}"
            )
            del model
    finally:
        tracemalloc.stop()


def version(module):
    return "not installed" if module is None else module.__version__


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="a9a,w8a,synthetic")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--chunk-size", type=int, default=10_000, help="rows per partial_fit call"
    )
    parser.add_argument(
        "--peer-rows", type=int, default=50_000, help="rows for river and VW"
    )
    parser.add_argument(
        "--learners", default="", help="comma-separated label substrings"
    )
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--synthetic-features-log2", type=int, default=20)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(__file__).resolve().parents[1].parent / "shared" / "data",
    )
    parser.add_argument(
        "--memory-check",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="default: on when the synthetic dataset is benchmarked",
    )
    parser.add_argument("--memory-features-log2", type=int, default=24)
    args = parser.parse_args()
    datasets = [name.strip() for name in args.datasets.split(",") if name.strip()]
    patterns = [p.strip().lower() for p in args.learners.split(",") if p.strip()]

    def wanted(label):
        return not patterns or any(p in label.lower() for p in patterns)

    print(
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}, skftrl {version(skftrl)}, numba {version(numba)}; "
        f"river {version(river)}, vowpalwabbit {version(vowpalwabbit)}, "
        f"datatable {version(datatable)}"
    )
    for name, module in [
        ("river", river),
        ("vowpalwabbit", vowpalwabbit),
        ("datatable", datatable),
    ]:
        if module is None:
            print(f"{name} not installed: skipped")
    print(
        f"FTRL: alpha {ALPHA}, beta {BETA}, l1 {L1}, l2 {L2}. rows/s: median of {args.repeats} "
        f"runs of one pass, timing only the learning calls (data is chunked, converted to\n"
        f"dicts, VW text or datatable frames beforehand); partial_fit in chunks of "
        f"{args.chunk_size:,} rows; skftrl does one untimed warm-up\npartial_fit on "
        f"{WARMUP_ROWS} rows per configuration first (excludes numba's compilation and cache "
        f"load). peak MB: tracemalloc peak of one\nextra untimed run, Python/numpy allocations "
        f"only (n/a: C++ peers, whose memory tracemalloc cannot see)."
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
