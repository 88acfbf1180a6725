"""The command line, driven in a subprocess as a user runs it.

Every subcommand, and each kind of bad input, runs in a subprocess. Each
subprocess pays Python's and scikit-learn's start-up (1 to 2 s), so variants
of the same path run ``main()`` in this process instead (``run_here``),
which is what the console script calls.

Models trained by ``skftrl train`` are compared with ``partial_fit`` over the
same file loaded in memory (``load_svmlight_file``, or an independent
``FeatureHasher`` encoding of the CSV) in the same chunks: the states must
be equal, not close.
"""

import contextlib
import copy
import csv
import fcntl
import gzip
import io
import os
import pickle
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.feature_extraction import FeatureHasher
from sklearn.metrics import log_loss, roc_auc_score

import skftrl._cli
import skftrl._cli._inspect
import skftrl._cli._train
from conftest import needs_numba, needs_readers_extra
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor
from skftrl._cli import main
from skftrl.datasets import load_a9a

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]
FM_STATE = [*STATE, "z_factors_", "n_factors_"]


def command(*args):
    """The command line ``skftrl *args`` with this checkout's package."""
    return [sys.executable, "-m", "skftrl", *map(str, args)]


def environment():
    """This checkout's package first on the path of a subprocess."""
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def run(*args, cwd=None):
    """``skftrl *args`` in a subprocess."""
    return subprocess.run(
        command(*args), capture_output=True, text=True, timeout=300, cwd=cwd, env=environment()
    )


def run_here(*args, cwd=None):
    """``skftrl *args`` through ``main()`` in this process: the same result as ``run``."""
    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    try:
        os.chdir(cwd or previous)
        with contextlib.redirect_stderr(err):
            try:
                code = main([str(arg) for arg in args], out=out)
            except SystemExit as exit:  # argparse's usage errors
                code = exit.code
    finally:
        os.chdir(previous)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def shipped_lines(name):
    """The lines of a LIBSVM file shipped in skftrl/_data, as bytes."""
    return gzip.decompress((files("skftrl") / "_data" / name).read_bytes()).splitlines(
        keepends=True
    )


def write(path, lines):
    data = b"".join(line if isinstance(line, bytes) else line.encode() for line in lines)
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def chunked_partial_fit(estimator, X, y, chunk_size, passes=1, **kwargs):
    for _ in range(passes):
        for start in range(0, X.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            estimator.partial_fit(X[rows], y[rows], **kwargs)
    return estimator


def assert_same_state(trained, reference):
    assert type(trained) is type(reference)
    for name in FM_STATE if hasattr(reference, "n_components") else STATE:
        assert np.array_equal(getattr(trained, name), getattr(reference, name)), name
    assert trained.n_samples_seen_ == reference.n_samples_seen_


def read_numbers(text):
    return np.array([[float(v) for v in line.split()] for line in text.splitlines()])


def held_out(out, name):
    return float(re.search(rf"held-out {name} \([^)]*\): ([0-9.]+)", out).group(1))


# ----------------------------------------------------------------- demo
def test_demo_trains_on_the_shipped_data_and_reaches_the_bar(tmp_path):
    result = run("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "each row is scored before it is learned" in out
    progressive = [float(v) for v in re.findall(r"progressive log loss ([0-9.]+)", out)]
    assert len(progressive) == 5  # every 8 chunks of 1,000 rows, and the end
    # The final progressive loss is the mean of every row's loss before it
    # was learned: computed here from loss_curve_ of the same chunks.
    X, y, _, _ = load_a9a()
    reference = chunked_partial_fit(FTRLClassifier(l1=1.0), X, y, 1000, classes=np.unique(y))
    sizes = np.diff(np.r_[np.arange(0, X.shape[0], 1000), X.shape[0]])
    assert progressive[-1] == round(np.dot(reference.loss_curve_, sizes) / X.shape[0], 4)
    held_out_loss = float(re.search(r"held-out log loss \(a9a.t\): ([0-9.]+)", out).group(1))
    auc = float(re.search(r"held-out AUC \(a9a.t\): +([0-9.]+)", out).group(1))
    nonzero, total = map(int, re.search(r"non-zero weights: +(\d+) of (\d+)", out).groups())
    assert held_out_loss <= 0.3245
    assert auc >= 0.902
    assert 0 < nonzero < total == 123
    assert re.search(r"training speed: +[0-9,]+ rows/s", out)


@needs_numba
def test_a_run_that_compiles_says_so_and_the_next_loads_the_cache(tmp_path):
    # A new numba cache: the first run compiles, and says so; the second
    # loads what the first cached, and says nothing of it.
    write(tmp_path / "a.svm", A9A_HEAD)
    env = {**environment(), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run(
            command("train", "a.svm", "--model", "m"),
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env=env,
        )
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    first, second = (run.stdout.splitlines() for run in runs)
    assert re.fullmatch(
        r"numba compiled skftrl's code for this kind of run in [0-9.]+ s: later runs of "
        r"this kind load it from numba's cache",
        first[-1],
    )
    assert first[-2] == second[-1] == "model saved to m"
    assert len(first) == len(second) + 1


# ---------------------------------------------------------------- train
@pytest.fixture(scope="module")
def a9a_run(tmp_path_factory):
    """``skftrl train`` on 3,000 a9a rows, gzip-compressed, two passes, with a test file."""
    directory = tmp_path_factory.mktemp("a9a")
    lines = shipped_lines("a9a.gz")[:3000]
    # A comment and a blank line hold no row: chunks are counted in rows.
    lines[100:100] = [b"# a comment line\n"]
    lines[1500:1500] = [b"\n"]
    train = write(directory / "train.svm.gz", lines)
    test = write(directory / "test.svm", shipped_lines("a9a.t.gz")[:2000])
    model_path = directory / "model.joblib"
    result = run(
        "train",
        train,
        "--test",
        test,
        "--model",
        model_path,
        "--chunk-size",
        700,
        "--passes",
        2,
        "--l1",
        1,
        "--learning-rate",
        0.2,
        "--n-features",
        123,  # the test file has index 123, these rows do not
    )
    assert result.returncode == 0, result.stderr
    X, y = load_svmlight_file(str(train), n_features=123)
    reference = chunked_partial_fit(
        FTRLClassifier(l1=1.0, learning_rate=0.2), X, y, 700, passes=2, classes=[-1, 1]
    )
    return train, test, model_path, result, reference


def test_train_libsvm_equals_partial_fit_in_the_same_chunks(a9a_run):
    train, test, model_path, result, reference = a9a_run
    model = joblib.load(model_path)
    assert isinstance(model, FTRLClassifier)
    assert_same_state(model, reference)
    assert model.input_spec_ == {
        "format": "libsvm",
        "n_features": 123,
        "zero_based": False,
        "hash_bits": None,
    }
    assert result.stderr == ""  # no progress display when stderr is not a terminal

    # Each pass reports the mean loss of its rows, each scored before it was learned.
    sizes = np.diff(np.r_[np.arange(0, 3000, 700), 3000])
    losses = np.reshape(reference.loss_curve_, (2, -1)) @ sizes / 3000
    reported = re.findall(r"pass (\d)/2: progressive log loss ([0-9.]+)", result.stdout)
    assert [float(loss) for _, loss in reported] == list(np.round(losses, 4))

    X_test, y_test = load_svmlight_file(str(test), n_features=123)
    proba = reference.predict_proba(X_test)
    assert held_out(result.stdout, "log loss") == round(log_loss(y_test, proba), 4)
    assert held_out(result.stdout, "AUC") == round(roc_auc_score(y_test, proba[:, 1]), 4)
    accuracy = np.mean(reference.predict(X_test) == y_test)
    assert held_out(result.stdout, "accuracy") == round(accuracy, 4)


def test_predict_binary_writes_the_positive_probability(a9a_run, tmp_path):
    _, test, model_path, _, reference = a9a_run
    output = tmp_path / "predictions.txt"
    result = run("predict", "--model", model_path, test, "--output", output)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    X_test, _ = load_svmlight_file(str(test), n_features=123)
    expected = reference.predict_proba(X_test)[:, 1]
    assert np.array_equal(read_numbers(output.read_text())[:, 0], expected)
    assert os.listdir(tmp_path) == ["predictions.txt"]  # no temporary file left


def test_inspect_lists_the_largest_weights_with_libsvm_indices(a9a_run):
    _, _, model_path, _, reference = a9a_run
    result = run("inspect", "--model", model_path, "--top", 7)
    assert result.returncode == 0, result.stderr
    coef = reference.coef_[0]
    assert f"non-zero weights: {np.count_nonzero(coef)} of 123 (" in result.stdout
    assert "rows seen:        6,000 (2 passes over the 3,000 rows" in result.stdout
    assert "l1=1.0" in result.stdout and "classes:          -1, 1" in result.stdout
    top = np.argsort(-np.abs(coef), kind="stable")[:7]
    listed = re.findall(r"^ +([-+][0-9.]+)  feature (\d+)$", result.stdout, flags=re.M)
    # LIBSVM indices as written in the file: one more than the column.
    assert [(float(w), int(i)) for w, i in listed] == [(round(coef[i], 6), i + 1) for i in top]


def shown_on_a_terminal(args, columns, cwd=None):
    """What ``skftrl *args`` draws on stderr when it is a terminal ``columns`` wide."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    process = subprocess.Popen(
        command(*args), stdout=subprocess.DEVNULL, stderr=terminal, env=environment(), cwd=cwd
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            data = os.read(controller, 4096)
        except OSError:  # the terminal is closed when the process ends
            break
        if not data:
            break
        shown += data
    os.close(controller)
    assert process.wait(timeout=300) == 0
    return shown.decode()


def test_progress_on_a_narrow_terminal_keeps_the_rate_and_the_loss(tmp_path):
    pytest.importorskip("tqdm")  # the display's library: in the test extra
    # Passes of a few seconds, so that the display has drawn a rate and the
    # time left during each, however fast the machine.
    write(tmp_path / "train.svm", shipped_lines("a9a.gz") * 5)
    args = (
        "train",
        "train.svm",
        "--model",
        "m",
        "--chunk-size",
        50,
        "--passes",
        2,
        "--n-features",
        123,
        "--classes=-1,1",
    )
    shown = shown_on_a_terminal(args, columns=60, cwd=tmp_path)
    frames = [frame for frame in re.split(r"[\r\n]", shown) if "pass" in frame]
    # The first pass, before the total is known: rows, rate and running loss.
    assert any(
        re.search(r"pass 1/2 loss 0\.\d{4} \| [0-9.]+k? rows/s \| [0-9.]+k? rows", f)
        for f in frames
    ), shown
    # The second: the percentage and the time left too.
    assert any(
        re.search(r"pass 2/2 loss 0\.\d{4} \| [0-9.]+k? rows/s \| \d+% ETA \d\d:\d\d", f)
        for f in frames
    ), shown
    visible = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", frame) for frame in frames]
    assert max(len(frame) for frame in visible) <= 60


def test_train_multiclass_and_predict_every_probability(tmp_path):
    train = write(tmp_path / "dna.svm", shipped_lines("dna.scale.gz"))
    test_lines = shipped_lines("dna.scale.t.gz")[:300]
    test = write(tmp_path / "dna.t.svm.gz", test_lines)
    model_path = tmp_path / "dna.model"
    result = run_here("train", train, "--model", model_path, "--test", test, "--chunk-size", 512)
    assert result.returncode == 0, result.stderr
    X, y = load_svmlight_file(str(train))
    reference = chunked_partial_fit(FTRLClassifier(), X, y, 512, classes=[1, 2, 3])
    assert_same_state(joblib.load(model_path), reference)
    X_test, y_test = load_svmlight_file(str(test), n_features=X.shape[1])
    assert held_out(result.stdout, "log loss") == round(
        log_loss(y_test, reference.predict_proba(X_test)), 4
    )
    assert "AUC" not in result.stdout

    # Labels are optional for prediction: drop them from every other line.
    unlabelled = [line.split(b" ", 1)[1] if i % 2 else line for i, line in enumerate(test_lines)]
    predict_file = write(tmp_path / "to_predict.svm", unlabelled)
    predicted = run_here("predict", "--model", model_path, predict_file)
    assert predicted.returncode == 0, predicted.stderr
    assert np.array_equal(read_numbers(predicted.stdout), reference.predict_proba(X_test))


def test_regression_train_test_and_predict(tmp_path):
    rng = np.random.RandomState(0)
    X = sp.random(1200, 30, density=0.2, format="csr", random_state=rng)
    y = X @ rng.normal(size=30) + 0.1 * rng.normal(size=1200)
    train = tmp_path / "reg.svm"
    dump_svmlight_file(X[:1000], y[:1000], str(train), zero_based=False)
    test = tmp_path / "reg.t.svm"
    dump_svmlight_file(X[1000:], y[1000:], str(test), zero_based=False)
    model_path = tmp_path / "reg.model"
    result = run_here(
        "train",
        train,
        "--test",
        test,
        "--model",
        model_path,
        "--task",
        "regress",
        "--loss",
        "huber",
        "--epsilon",
        0.5,
        "--n-features",
        30,
        "--chunk-size",
        300,
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    # --quiet: only the held-out scores.
    assert [line.split(" (")[0] for line in result.stdout.splitlines()] == [
        "held-out RMSE",
        "held-out MAE",
    ]
    X_train, y_train = load_svmlight_file(str(train), n_features=30)
    reference = chunked_partial_fit(
        FTRLRegressor(loss="huber", epsilon=0.5), X_train, y_train, 300
    )
    assert_same_state(joblib.load(model_path), reference)
    X_test, y_test = load_svmlight_file(str(test), n_features=30)
    residuals = reference.predict(X_test) - y_test
    assert held_out(result.stdout, "RMSE") == round(np.sqrt(np.mean(residuals**2)), 4)
    assert held_out(result.stdout, "MAE") == round(np.mean(np.abs(residuals)), 4)
    predicted = run_here("predict", "--model", model_path, test)
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], reference.predict(X_test))


# ------------------------------------------------------------------ CSV
MISSING = {"", "na", "nan", "n/a", "null"}
CSV_KINDS = {
    "age": "categorical",
    "color": "categorical",
    "score": "numeric",
    "city": "categorical",
}


def click_rows(n_rows, seed):
    """Click-style records: two numeric and two categorical columns, some missing."""
    rng = np.random.RandomState(seed)
    cities = [f"city{i}" for i in range(60)] + ["NA", ""]
    rows = []
    for _ in range(n_rows):
        age = "" if rng.rand() < 0.1 else str(rng.randint(18, 80))
        color = ["red", "green", "blue"][rng.randint(3)]
        score = f"{rng.normal():.3f}"
        city = cities[rng.randint(len(cities))]
        margin = 0.8 * (color == "red") - 0.5 * float(score) + (city == "city3")
        clicked = "yes" if rng.rand() < 1 / (1 + np.exp(-margin)) else "no"
        rows.append({"age": age, "color": color, "clicked": clicked, "score": score, "city": city})
    return rows


def csv_lines(rows, columns, delimiter=","):
    """CSV text of ``rows`` (dicts), with only ``columns``, as lines."""
    text = io.StringIO()
    writer = csv.DictWriter(
        text, columns, extrasaction="ignore", delimiter=delimiter, lineterminator="\n"
    )
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue().splitlines(keepends=True)


def write_csv(path, rows, columns):
    return write(path, csv_lines(rows, columns))


def names_by_column(names, hash_bits):
    """The columns of feature ``names`` hashed independently (FeatureHasher
    into ``2**hash_bits`` columns): column -> its names, sorted."""
    hasher = FeatureHasher(2**hash_bits, input_type="pair", alternate_sign=False)
    by_column = {}
    for name in names:
        column = int(hasher.transform([[(name, 1.0)]]).indices[0])
        by_column.setdefault(column, []).append(name)
    return {column: sorted(found) for column, found in by_column.items()}


def hashed_reference(rows, hash_bits, kinds=CSV_KINDS):
    """The CSV rows encoded independently: FeatureHasher on (name, value) pairs."""
    pairs = []
    for row in rows:
        features = []
        for name, kind in kinds.items():
            value = row[name]
            if value.strip().lower() in MISSING:
                continue
            if kind == "numeric":
                features.append((name, float(value)))
            else:
                features.append((f"{name}={value}", 1.0))
        pairs.append(features)
    hasher = FeatureHasher(2**hash_bits, input_type="pair", alternate_sign=False)
    return hasher.transform(pairs)


def test_train_csv_equals_partial_fit_on_hashed_features(tmp_path):
    rows = click_rows(2500, seed=0)
    columns = ["age", "color", "clicked", "score", "city"]
    train = write_csv(tmp_path / "clicks.csv.gz", rows, columns)
    model_path = tmp_path / "clicks.model"
    result = run(
        "train",
        train,
        "--label-column",
        "clicked",
        "--hash-bits",
        12,
        "--chunk-size",
        600,
        "--passes",
        2,
        "--l1",
        0.5,
        "--model",
        model_path,
    )
    assert result.returncode == 0, result.stderr
    # The ages, whole numbers, are categories; the scores numbers.
    assert "1 numeric and 3 categorical columns" in result.stdout

    X = hashed_reference(rows, 12)
    y = np.array([row["clicked"] for row in rows])
    reference = chunked_partial_fit(
        FTRLClassifier(l1=0.5), X, y, 600, passes=2, classes=["no", "yes"]
    )
    model = joblib.load(model_path)
    assert_same_state(model, reference)
    assert list(model.classes_) == ["no", "yes"]

    # Prediction: columns in another order, no label column.
    new_rows = click_rows(700, seed=1)
    to_predict = write_csv(tmp_path / "new.csv", new_rows, ["city", "score", "color", "age"])
    predicted = run_here("predict", "--model", model_path, to_predict)
    assert predicted.returncode == 0, predicted.stderr
    expected = reference.predict_proba(hashed_reference(new_rows, 12))[:, 1]
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], expected)

    # inspect names hashed features by their column and value.
    shown = run_here("inspect", "--model", model_path, "--top", 5)
    assert shown.returncode == 0, shown.stderr
    coef = reference.coef_[0]
    names = {}
    for name in (
        ["score"]
        + [f"color={c}" for c in ("red", "green", "blue")]
        + [
            f"{f}={row[f]}"
            for row in rows
            for f in ("age", "city")
            if row[f].lower() not in MISSING
        ]
    ):
        index = FeatureHasher(2**12, input_type="string").transform([[name]]).indices[0]
        names.setdefault(index, set()).add(name)
    top = np.argsort(-np.abs(coef), kind="stable")[:5]
    listed = re.findall(r"^ +([-+][0-9.]+)  (.+)$", shown.stdout, flags=re.M)
    assert [float(weight) for weight, _ in listed] == [round(coef[i], 6) for i in top]
    assert [set(name.split(" | ")) for _, name in listed] == [names[i] for i in top]


@pytest.mark.parametrize("contradiction", [None, "label", "word", "error"])
def test_a_binary_csv_is_learned_in_one_pass_unless_a_row_contradicts_its_first_rows(
    tmp_path, contradiction
):
    # Labels 0 and 1 in the first chunk: classes and kinds taken from it, no
    # first pass. A later label 2, or a word in the numeric column "score",
    # makes the run start over with one; the model is then the one of the
    # whole file's classes and kinds. A row wrong either way stays an error.
    rows = click_rows(1500, seed=4)
    for row in rows:
        row["clicked"] = "1" if row["clicked"] == "yes" else "0"
    kinds, classes = dict(CSV_KINDS), [0.0, 1.0]
    if contradiction == "label":
        rows[1200]["clicked"] = "2"
        classes = [0.0, 1.0, 2.0]
    elif contradiction == "word":
        rows[1200]["score"] = "high"
        kinds["score"] = "categorical"
    elif contradiction == "error":
        rows[1200]["clicked"] = ""
    columns = ["age", "color", "clicked", "score", "city"]
    train = write_csv(tmp_path / "clicks.csv", rows, columns)
    model_path = tmp_path / "clicks.model"
    options = "--label-column clicked --hash-bits 12 --chunk-size 500".split()
    result = run_here("train", train, *options, "--model", model_path)
    assert f"reading {train} in one pass, as its first rows show it" in result.stdout
    again = f"clicks.csv:1202: .*; reading {re.escape(str(train))} again, after a scan of the file"
    assert bool(re.search(again, result.stdout)) == (contradiction is not None)
    assert ("scanned" in result.stdout) == (contradiction in ("label", "word"))
    if contradiction == "error":
        assert result.returncode == 1
        assert "clicks.csv:1202: missing label ''" in result.stderr
        assert not model_path.exists()
        return
    assert result.returncode == 0, result.stderr
    X = hashed_reference(rows, 12, kinds)
    y = np.array([float(row["clicked"]) for row in rows])
    reference = chunked_partial_fit(FTRLClassifier(), X, y, 500, classes=classes)
    model = joblib.load(model_path)
    assert_same_state(model, reference)
    assert list(model.classes_) == classes
    assert model.input_spec_["kinds"] == kinds


@pytest.mark.parametrize(
    "name, options, delimiter",
    [("clicks.tsv.gz", [], "\t"), ("clicks.csv", ["--delimiter", ";"], ";")],
)
def test_fields_separated_by_tabs_or_another_delimiter_train_the_same_model(
    tmp_path, name, options, delimiter
):
    # A .tsv file is read with tabs, another delimiter is named; test and
    # predict read files as the model's were; a city holds the delimiter.
    rows = click_rows(1500, seed=4)
    rows[7]["city"] = f"a{delimiter}b"
    columns = ["age", "color", "clicked", "score", "city"]
    train = write(tmp_path / name, csv_lines(rows, columns, delimiter))
    model_path = tmp_path / "model"
    common = ["--label-column", "clicked", "--hash-bits", 12, "--chunk-size", 400]
    result = run_here("train", train, *common, *options, "--model", model_path)
    assert result.returncode == 0, result.stderr
    X = hashed_reference(rows, 12)
    y = np.array([row["clicked"] for row in rows])
    reference = chunked_partial_fit(FTRLClassifier(), X, y, 400, classes=["no", "yes"])
    assert_same_state(joblib.load(model_path), reference)
    assert f"fields separated by {delimiter!r}" in run_here("inspect", model_path).stdout

    new_rows = click_rows(300, seed=5)
    new = write(tmp_path / f"new_{name}", csv_lines(new_rows, columns, delimiter))
    predicted = run_here("predict", "--model", model_path, new)
    assert predicted.returncode == 0, predicted.stderr
    expected = reference.predict_proba(hashed_reference(new_rows, 12))[:, 1]
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], expected)
    tested = run_here("test", "--model", model_path, new)
    assert tested.returncode == 0, tested.stderr
    # Continued with -i, it reads its own delimiter; another is refused.
    more = ["train", new, "-i", model_path, "--model", tmp_path / "more"]
    assert run_here(*more).returncode == 0
    refused = run_here(*more, "--delimiter", ",")
    assert refused.returncode == 2
    assert "--delimiter ',' conflicts with --initial-model" in refused.stderr


@pytest.mark.parametrize("passes", [["--passes", 1], ["--passes", 2, "--no-cache"]])
def test_a_file_without_a_header_line_trains_the_same_model_by_its_column_names(tmp_path, passes):
    # Each command reads a headerless file by the names it is given: train
    # (its scan, its passes over the text, its --test file), test and predict
    # (whose file has no label column).
    rows = click_rows(1500, seed=4)
    columns = ["age", "color", "clicked", "score", "city"]
    names = ",".join(columns)
    train = write(tmp_path / "clicks.tsv", csv_lines(rows, columns, "\t")[1:])
    model_path = tmp_path / "model"
    common = ["--label-column", "clicked", "--hash-bits", 12, "--chunk-size", 400, *passes]
    result = run_here(
        "train", train, *common, "--column-names", names, "--test", train, "--model", model_path
    )
    assert result.returncode == 0, result.stderr
    assert "held-out log loss" in result.stdout
    X = hashed_reference(rows, 12)
    y = np.array([row["clicked"] for row in rows])
    reference = chunked_partial_fit(FTRLClassifier(), X, y, 400, passes[1], classes=["no", "yes"])
    assert_same_state(joblib.load(model_path), reference)

    new_rows = click_rows(300, seed=5)
    features = [name for name in columns if name != "clicked"]
    new = write(tmp_path / "new.tsv", csv_lines(new_rows, features, "\t")[1:])
    given = ["--column-names", ",".join(features)]
    predicted = run_here("predict", "--model", model_path, new, *given)
    assert predicted.returncode == 0, predicted.stderr
    expected = reference.predict_proba(hashed_reference(new_rows, 12))[:, 1]
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], expected)
    labelled = write(tmp_path / "labelled.tsv", csv_lines(new_rows, columns, "\t")[1:])
    tested = run_here("test", "--model", model_path, labelled, "--column-names", names)
    assert tested.returncode == 0, tested.stderr
    assert "rows: 300" in tested.stdout
    # Without the names, the first row would be a header: its values are no columns.
    unnamed = run_here("predict", "--model", model_path, new)
    assert unnamed.returncode == 1
    assert "is the first line a row? A file without a header line needs" in unnamed.stderr
    # A file with a header line given names: its header would be a row.
    headed = write(tmp_path / "headed.tsv", csv_lines(new_rows, features, "\t"))
    refused = run_here("predict", "--model", model_path, headed, *given)
    assert refused.returncode == 1
    assert "headed.tsv:1: this line is the column names given" in refused.stderr


def click_table(rows):
    """The click rows as a Parquet table of typed columns (nulls where
    missing) and a row id: the same features as their CSV text."""
    import pyarrow as pa

    def missing(value):
        return value.strip().lower() in MISSING

    return pa.table(
        {
            "id": pa.array([f"r{i}" for i in range(len(rows))]),
            "age": pa.array([None if missing(r["age"]) else int(r["age"]) for r in rows]),
            "color": pa.array([r["color"] for r in rows]),
            "clicked": pa.array([r["clicked"] for r in rows]),
            "score": pa.array([float(r["score"]) for r in rows]),
            "city": pa.array([None if missing(r["city"]) else r["city"] for r in rows]),
        }
    )


@needs_readers_extra
def test_parquet_trains_the_model_of_its_hashed_rows_and_predicts_with_ids(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    rows = click_rows(1500, seed=4)
    train = tmp_path / "clicks.parquet"
    pq.write_table(click_table(rows), train, row_group_size=700)  # chunks across groups
    model_path = tmp_path / "model"
    # The ages, integers, read as categories as --categorical says.
    options = ["--label-column", "clicked", "--ignore", "id", "--categorical", "age"]
    options += ["--hash-bits", 12]
    kinds = {**CSV_KINDS, "age": "categorical"}
    result = run_here("train", train, *options, "--chunk-size", 400, "--model", model_path)
    assert result.returncode == 0, result.stderr
    assert "1,500 rows; Parquet, label column 'clicked', 4 feature columns" in result.stdout
    X = hashed_reference(rows, 12, kinds)
    y = np.array([row["clicked"] for row in rows])
    reference = chunked_partial_fit(FTRLClassifier(), X, y, 400, classes=["no", "yes"])
    assert_same_state(joblib.load(model_path), reference)
    assert "input:            Parquet" in run_here("inspect", model_path).stdout
    # The names of the hashed features, hashed independently, by column.
    names = {"score"} | {f"color={row['color']}" for row in rows}
    names |= {f"{field}={row[field]}" for row in rows for field in ("age", "city")}
    names -= {"age=", "city=", "city=NA"}
    recorded = joblib.load(model_path).hashed_feature_names_
    assert {column: sorted(found) for column, found in recorded.items()} == names_by_column(
        names, 12
    )

    new_rows = click_rows(300, seed=5)
    new = tmp_path / "new.pq"
    pq.write_table(click_table(new_rows).drop_columns(["clicked"]), new)
    expected = reference.predict_proba(hashed_reference(new_rows, 12, kinds))[:, 1]
    predicted = run_here("predict", new, model_path, "--id-column", "id")
    assert predicted.returncode == 0, predicted.stderr
    lines = [line.split() for line in predicted.stdout.splitlines()]
    assert np.array_equal([float(line[0]) for line in lines], expected)
    assert [line[1] for line in lines] == [f"r{i}" for i in range(300)]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(new.read_bytes())))
    from_stdin = run_here("predict", "-", model_path)
    assert np.array_equal(read_numbers(from_stdin.stdout)[:, 0], expected)
    labelled = tmp_path / "labelled.parquet"
    pq.write_table(click_table(new_rows), labelled)
    tested = run_here("test", labelled, model_path)
    assert tested.returncode == 0, tested.stderr
    assert "rows: 300" in tested.stdout
    more = run_here("train", labelled, "-i", model_path, "--model", tmp_path / "more")
    assert more.returncode == 0, more.stderr
    y_new = np.array([row["clicked"] for row in new_rows])
    continued = reference.partial_fit(hashed_reference(new_rows, 12, kinds), y_new)
    assert_same_state(joblib.load(tmp_path / "more"), continued)
    # Refused: a stream (read from its end), labels of the other type, a CSV option.
    options += ["--model", tmp_path / "refused"]
    stdin = run_here("train", "-", "--format", "parquet", *options, "--classes", "no,yes")
    assert stdin.returncode == 2 and "train reads one by its path" in stdin.stderr
    numbers = run_here("train", train, *options, "--classes", "0,1")
    assert numbers.returncode == 2
    assert "--classes 0,1: the label column 'clicked' holds strings" in numbers.stderr
    delimiter = run_here("train", train, *options, "--delimiter", ";")
    assert delimiter.returncode == 2
    assert "is read as Parquet, which takes no --delimiter" in delimiter.stderr
    assert not (tmp_path / "refused").exists()


def test_column_names_are_for_csv_files_only(tmp_path):
    a9a_train = write(tmp_path / "train.svm", shipped_lines("a9a.gz")[:200])
    given = ["--column-names", "a,b"]
    result = run_here("train", a9a_train, *given, "--model", tmp_path / "m")
    assert result.returncode == 2
    assert "which takes no --column-names" in result.stderr
    assert run_here("train", a9a_train, "--model", tmp_path / "m").returncode == 0
    result = run_here("predict", a9a_train, tmp_path / "m", *given)
    assert result.returncode == 2
    assert "--column-names is for CSV models" in result.stderr
    result = run_here("train", a9a_train, "--column-names", "a,,b")
    assert result.returncode == 2
    assert "a column name is empty in 'a,,b'" in result.stderr


@pytest.mark.parametrize("value", ["ab", '"', ""])
def test_a_delimiter_of_other_than_one_character_is_refused(tmp_path, value):
    train = write_csv(tmp_path / "t.csv", click_rows(20, seed=0), ["color", "clicked"])
    result = run_here("train", train, "--label-column", "clicked", "--delimiter", value)
    assert result.returncode == 2
    message = "--delimiter: the delimiter must be one character other than a quote or a line end"
    assert message in result.stderr


def test_train_csv_regression_with_numeric_labels(tmp_path):
    rows = click_rows(800, seed=2)
    for row in rows:
        row["clicked"] = f"{float(row['score']) * 2 + (row['color'] == 'red'):.3f}"
    train = write_csv(tmp_path / "reg.csv", rows, ["age", "color", "score", "city", "clicked"])
    model_path = tmp_path / "reg.model"
    result = run_here(
        "train",
        train,
        "--label-column",
        "clicked",
        "--task",
        "regress",
        "--hash-bits",
        10,
        "--model",
        model_path,
        "--test",
        train,
    )
    assert result.returncode == 0, result.stderr
    X = hashed_reference(rows, 10)
    y = np.array([float(row["clicked"]) for row in rows])
    reference = chunked_partial_fit(FTRLRegressor(), X, y, 10_000)
    assert_same_state(joblib.load(model_path), reference)
    rmse = np.sqrt(np.mean((reference.predict(X) - y) ** 2))
    assert held_out(result.stdout, "RMSE") == round(rmse, 4)


# ------------------------------------------------------------ bad input
A9A_HEAD = shipped_lines("a9a.gz")[:40]


def with_line(lines, number, new):
    """``lines`` with line ``number`` (counted from 1) replaced by ``new``."""
    lines = list(lines)
    lines[number - 1] = new
    return lines


CLICKS = click_rows(30, seed=3)
CLICK_LINES = csv_lines(CLICKS, ["age", "color", "clicked", "score", "city"])
NOT_A_PICKLE = [b"\x80\x04 not a pickle"]

# name: (files to write, arguments, the expected message after "skftrl: error: ")
BAD_INPUT = {
    "malformed value": (
        {"train.svm": with_line(A9A_HEAD, 7, "-1 4:1 6:one 20:1\n")},
        ["train", "train.svm", "--model", "model"],
        "train.svm:7: the feature value in '6:one' is not a number",
    ),
    "feature without a value": (
        {"train.svm.gz": with_line(A9A_HEAD, 12, "+1 2:1 11\n")},
        ["train", "train.svm.gz", "--model", "model"],
        "train.svm.gz:12: '11' is not index:value",
    ),
    "label not a number": (
        {"train.svm": with_line(A9A_HEAD, 21, "yes 3:1 6:1\n")},
        ["train", "train.svm", "--model", "model"],
        "train.svm:21: the label 'yes' is not a number",
    ),
    "indices out of order": (
        {"train.svm": with_line(A9A_HEAD, 3, "-1 6:1 3:1\n")},
        ["train", "train.svm", "--model", "model"],
        "train.svm:3: feature index 3 after 6: indices must be in ascending order, "
        "without repeats",
    ),
    "value not finite": (
        {"train.svm": with_line(A9A_HEAD, 9, "+1 2:1 6:inf\n")},
        ["train", "train.svm", "--model", "model"],
        "train.svm:9: the feature value inf is not finite",
    ),
    "test index beyond the model's width": (
        {"train.svm": A9A_HEAD, "test.svm": with_line(A9A_HEAD, 5, "-1 2:1 124:1\n")},
        ["train", "train.svm", "--test", "test.svm", "--model", "model", "--n-features", 123],
        "test.svm:5: feature index 124 is beyond the model's 123 features (indices 1 to 123; "
        "train with --n-features for a wider model, or --hash-bits; --drop-extra-features "
        "leaves such indices out)",
    ),
    "test label not a class": (
        {"train.svm": A9A_HEAD, "test.svm": with_line(A9A_HEAD, 8, "2 5:1 7:1\n")},
        ["train", "train.svm", "--test", "test.svm", "--model", "model"],
        "test.svm:8: the label 2 is not one of the model's classes (-1, 1)",
    ),
    "a single class": (
        {"train.svm": [line for line in A9A_HEAD if line.startswith(b"-1")]},
        ["train", "train.svm", "--model", "model"],
        "train.svm: every label is -1: a classifier needs two classes or more",
    ),
    "truncated gzip": (
        {"train.svm.gz": "truncated gzip"},
        ["train", "train.svm.gz", "--model", "model"],
        re.compile(
            r"train\.svm\.gz: unreadable after line \d+: the gzip data is damaged: "
            r"it ends before its end-of-stream marker \(a file cut short\?\)"
        ),
    ),
    "missing training file": (
        {},
        ["train", "absent.svm", "--model", "model"],
        "absent.svm: No such file or directory",
    ),
    "missing test file": (
        {"train.svm": A9A_HEAD},
        ["train", "train.svm", "--test", "absent.svm", "--model", "model"],
        "absent.svm: No such file or directory",
    ),
    "csv row with a missing field": (
        {"train.csv": with_line(CLICK_LINES, 11, "31,red,yes,0.5\n")},
        ["train", "train.csv", "--label-column", "clicked", "--model", "model"],
        "train.csv:11: 4 fields, but the header has 5",
    ),
    "csv missing label column": (
        {"train.csv": CLICK_LINES},
        ["train", "train.csv", "--label-column", "click", "--model", "model"],
        "train.csv:1: no label column 'click' in the header (the columns are: "
        "age, color, clicked, score, city)",
    ),
    "csv text in a numeric column": (
        {
            "train.csv": CLICK_LINES,
            "test.csv": with_line(CLICK_LINES, 6, "12,red,yes,lots,city1\n"),
        },
        [
            "train",
            "train.csv",
            "--label-column",
            "clicked",
            "--test",
            "test.csv",
            "--model",
            "model",
        ],
        "test.csv:6: column 'score' holds numbers, but this value is 'lots' "
        "(--categorical score reads every value as a category)",
    ),
    "predict index beyond the model's width": (
        {"model": "libsvm model", "new.svm": with_line(A9A_HEAD, 4, "-1 5:1 200:1\n")},
        ["predict", "--model", "model", "new.svm", "--output", "out.txt"],
        "new.svm:4: feature index 200 is beyond the model's 123 features (indices 1 to 123; "
        "train with --n-features for a wider model, or --hash-bits; --drop-extra-features "
        "leaves such indices out)",
    ),
    "predict csv without a feature column": (
        {"model": "csv model", "new.csv": csv_lines(CLICKS, ["age", "color", "city"])},
        ["predict", "--model", "model", "new.csv", "--output", "out.txt"],
        "new.csv:1: no feature column 'score' in the header (the columns are: age, color, city)",
    ),
    # A lone quote opens a field that swallows the lines after it: an error
    # at its line, whichever command reads the file, with nothing written.
    "csv unterminated quote": (
        {"train.csv": with_line(CLICK_LINES, 11, '31,"red,yes,0.5,city3\n')},
        ["train", "train.csv", "--label-column", "clicked", "--model", "model"],
        "train.csv:11: unterminated quote: the quoted field that opens on this line is "
        "never closed",
    ),
    "csv unterminated quote, one pass": (
        {"train.csv": with_line(CLICK_LINES, 11, '31,red,yes,0.5,"city3\n')},
        ["train", "train.csv", "--label-column", "clicked", "--classes", "no,yes"]
        + ["--model", "model", "--chunk-size", 4],
        "train.csv:11: unterminated quote: the quoted field that opens on this line is "
        "never closed",
    ),
    "csv unterminated quote (test)": (
        {"model": "csv model", "test.csv": with_line(CLICK_LINES, 7, '31,red,"yes,0.5,city3\n')},
        ["test", "--model", "model", "test.csv"],
        "test.csv:7: unterminated quote: the quoted field that opens on this line is never closed",
    ),
    "csv unterminated quote (predict)": (
        {"model": "csv model", "new.csv": with_line(CLICK_LINES, 25, '31,red,yes,0.5,"city3\n')},
        ["predict", "--model", "model", "new.csv", "--output", "out.txt"],
        "new.csv:25: unterminated quote: the quoted field that opens on this line is never closed",
    ),
    "csv lone quote closed by another field's": (
        {
            "train.csv": with_line(
                with_line(CLICK_LINES, 11, '31,"red,yes,0.5,city3\n'), 20, '40,red,no,1.5,"a"\n'
            )
        },
        ["train", "train.csv", "--label-column", "clicked", "--model", "model"],
        "train.csv:11: unterminated quote? The quoted field that opens on this line ends on "
        'line 20 at a quote followed by text (a quote inside a quoted field is written twice: "")',
    ),
    "corrupt model file (predict)": (
        {"model": NOT_A_PICKLE, "new.svm": A9A_HEAD},
        ["predict", "--model", "model", "new.svm"],
        re.compile(r"model: not a readable skftrl model file \(\w+.*\)"),
    ),
    "data where the model goes (predict)": (
        {"new.csv": CLICK_LINES, "model": "csv model"},
        ["predict", "model", "new.csv"],
        "new.csv: not a skftrl model file: it holds text ('age,color,clicked,score,city'...), "
        "data perhaps: the model is the file after the data, or --model",
    ),
    "corrupt model file (inspect)": (
        {"model": NOT_A_PICKLE},
        ["inspect", "--model", "model"],
        re.compile(r"model: not a readable skftrl model file \(\w+.*\)"),
    ),
    "not a skftrl model": (
        {"model": "a joblib list"},
        ["inspect", "--model", "model"],
        "model: not a skftrl model file: it holds a list, not a fitted FTRLClassifier or "
        "FTRLRegressor",
    ),
}


# name: (arguments, what stderr says)
USAGE_ERRORS = {
    "option value": (["demo", "--learning-rate", "fast"], "invalid float value: 'fast'"),
    "hyper-parameter": (
        ["demo", "--learning-rate", "-1"],
        "skftrl: error: The 'learning_rate' parameter of FTRLClassifier must be",
    ),
    "train hyper-parameter": (
        ["train", "d.svm", "--model", "m", "--l1", -1],
        "skftrl: error: The 'l1' parameter of FTRLClassifier must be",
    ),
    "csv without a label column": (
        ["train", "d.csv", "--model", "m"],
        "skftrl: error: d.csv is read as CSV, which needs --label-column NAME",
    ),
    "a loss for classification": (
        ["train", "d.svm", "--model", "m", "--loss", "huber"],
        "skftrl: error: --loss and --epsilon are for --task regress",
    ),
    "label column for libsvm": (
        ["train", "d.svm", "--model", "m", "--label-column", "y"],
        "skftrl: error: d.svm is read as LIBSVM, which takes no --label-column",
    ),
    "numba for mini-batches": (
        ["train", "d.svm", "--model", "m", "--engine", "numba", "--batch-size", 4],
        "skftrl: error: engine='numba' runs the exact per-row algorithm and needs "
        "batch_size=1; got batch_size=4",
    ),
}


@needs_numba
def test_a_train_run_that_fails_leaves_no_thread_reading_its_file(tmp_path, monkeypatch):
    """Regression: a LIBSVM run that failed before it took the result of the
    labels' scan returned with the scan still reading the file in a thread
    (and compiling it, on a first run) beside whatever the process did next."""
    from skftrl._readers import _libsvm_numba, _sources

    # Blocks of 64 bytes, each scanned in 10 ms: the scan of the whole file
    # would take seconds.
    monkeypatch.setattr(_sources, "BLOCK_SIZE", 64)
    scanned, scan_block = [], _libsvm_numba.scan_block

    def slow_scan_block(*args):
        scanned.append(1)
        time.sleep(0.01)
        return scan_block(*args)

    monkeypatch.setattr(_libsvm_numba, "scan_block", slow_scan_block)
    write(tmp_path / "a.svm", [f"{1 if i % 2 else -1} 1:1 {2 + i % 3}:1\n" for i in range(8000)])
    threads = set(threading.enumerate())
    result = run_here(
        "train", "a.svm", "--model", "m", "--factors", 2, "--learning-rate", "1e-310", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "initial factors that overflow" in result.stderr
    # A thread told to stop ends after its current block, which on a loaded
    # machine may be in numba's first compile: wait for that, then check the
    # scan stopped early rather than read the whole file (about 25 s).
    for thread in set(threading.enumerate()) - threads:
        thread.join(timeout=30)
    assert set(threading.enumerate()) - threads == set()
    assert len(scanned) < (tmp_path / "a.svm").stat().st_size // 64  # stopped, not waited for


@needs_numba
def test_options_are_checked_before_reading_without_compiling_a_pass(tmp_path):
    # The check learns one row through partial_fit, in numpy once the engine
    # asked for is known to load: a pass compiled for its one-feature state
    # would serve no later pass, and cost seconds of a first run.
    checked = subprocess.run(
        [
            sys.executable,
            "-c",
            "from skftrl import FMRegressor, FTRLClassifier\n"
            "from skftrl._cli._estimators import validated\n"
            "from skftrl._engines import _fm_numba, _linear_numba\n"
            "for estimator in [FTRLClassifier(), FTRLClassifier(engine='numba'), "
            "FMRegressor(n_components=2, engine='numba')]:\n"
            "    validated(estimator)\n"
            "print(len(_linear_numba._pass.signatures), len(_fm_numba._pass.signatures))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == "0 0\n"
    # Without numba, asking for it is still refused before reading.
    refused = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['numba'] = None\n"
            "from skftrl._cli import main\n"
            "sys.exit(main(['train', 'd.svm', '--model', 'm', '--engine', 'numba']))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert refused.returncode == 2
    assert refused.stderr == (
        "skftrl: error: engine='numba' needs numba, which is not installed or failed to "
        "import; install it with: pip install 'skftrl[fast]'\n"
    )
    assert os.listdir(tmp_path) == []


def prepare_bad_input(directory, written):
    """Write a case's files; models are trained in this process (faster)."""
    for name, content in written.items():
        path = directory / name
        if content == "truncated gzip":
            path.write_bytes(gzip.compress(b"".join(shipped_lines("a9a.gz")[:3000]))[:-200])
        elif content == "libsvm model":
            write(directory / "good.svm", A9A_HEAD)
            args = ["train", str(directory / "good.svm"), "--model", str(path)]
            assert main([*args, "--n-features", "123"], out=io.StringIO()) == 0
        elif content == "csv model":
            write(directory / "good.csv", CLICK_LINES)
            args = ["train", str(directory / "good.csv"), "--model", str(path)]
            assert main([*args, "--label-column", "clicked"], out=io.StringIO()) == 0
        elif content == "a joblib list":
            joblib.dump([1, 2], path)
        else:
            write(path, content)


# The issue's kinds of bad input (a malformed line, a missing label column, an
# index beyond the model's width, an unreadable model file, a missing or
# corrupt file) also run in a subprocess; every case runs in this process.
IN_A_SUBPROCESS = [
    "malformed value",
    "truncated gzip",
    "missing training file",
    "test index beyond the model's width",
    "csv missing label column",
    "corrupt model file (predict)",
    "option value",
]


@pytest.fixture(scope="module")
def subprocess_failures(tmp_path_factory):
    """The IN_A_SUBPROCESS cases, each in its own directory, run four at a time.

    Returns, for each case: the completed process, its directory, and the
    files that were there before it ran.
    """
    jobs = {}
    for case in IN_A_SUBPROCESS:
        directory = tmp_path_factory.mktemp("bad")
        if case in BAD_INPUT:
            written, args, _ = BAD_INPUT[case]
            prepare_bad_input(directory, written)
        else:
            args = USAGE_ERRORS[case][0]
        jobs[case] = (args, directory, set(os.listdir(directory)))
    with ThreadPoolExecutor(max_workers=4) as pool:
        running = {case: pool.submit(run, *args, cwd=cwd) for case, (args, cwd, _) in jobs.items()}
        return {case: (running[case].result(), *jobs[case][1:]) for case in jobs}


def check_bad_input(case, result, directory, before):
    expected = BAD_INPUT[case][2]
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    message = result.stderr.rstrip("\n")
    if isinstance(expected, re.Pattern):
        assert expected.fullmatch(message.removeprefix("skftrl: error: ")), message
    else:
        assert message == f"skftrl: error: {expected}"
    # Nothing written: no model, no output, no temporary file.
    assert set(os.listdir(directory)) == before


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_ends_with_one_line_naming_file_and_line(tmp_path, case):
    written, args, _ = BAD_INPUT[case]
    prepare_bad_input(tmp_path, written)
    before = set(os.listdir(tmp_path))
    check_bad_input(case, run_here(*args, cwd=tmp_path), tmp_path, before)


@pytest.mark.parametrize("case", [case for case in IN_A_SUBPROCESS if case in BAD_INPUT])
def test_bad_input_in_a_subprocess(subprocess_failures, case):
    check_bad_input(case, *subprocess_failures[case])


def test_failed_training_leaves_an_existing_model_untouched(tmp_path):
    write(tmp_path / "bad.svm", with_line(A9A_HEAD, 30, "-1 4:1 6:x\n"))
    (tmp_path / "model").write_bytes(b"the previous model")
    result = run_here("train", "bad.svm", "--model", "model", cwd=tmp_path)
    assert result.returncode == 1
    assert (tmp_path / "model").read_bytes() == b"the previous model"
    assert sorted(os.listdir(tmp_path)) == ["bad.svm", "model"]


def check_usage_error(case, result, directory):
    assert result.returncode == 2
    assert USAGE_ERRORS[case][1] in result.stderr
    assert "Traceback" not in result.stderr
    assert os.listdir(directory) == []


@pytest.mark.parametrize("case", USAGE_ERRORS)
def test_usage_errors_exit_with_2(tmp_path, case):
    check_usage_error(case, run_here(*USAGE_ERRORS[case][0], cwd=tmp_path), tmp_path)


@pytest.mark.parametrize("case", [case for case in IN_A_SUBPROCESS if case in USAGE_ERRORS])
def test_usage_errors_in_a_subprocess(subprocess_failures, case):
    result, directory, _ = subprocess_failures[case]
    check_usage_error(case, result, directory)


def test_terminated_training_leaves_nothing_behind(tmp_path):
    # Training reads a FIFO that stays open, so it is certainly still running
    # when SIGTERM arrives, whatever the machine's speed.
    fifo = tmp_path / "train.fifo"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        command("train", "train.fifo", "--model", "model", "--classes=-1,1", "--n-features", 123),
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with open(fifo, "wb") as writer:  # opens once the command opens the FIFO
        writer.write(b"".join(shipped_lines("a9a.gz")[:2000]))
        writer.flush()
        time.sleep(1.0)
        process.terminate()
        _, stderr = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.endswith("skftrl: interrupted\n"), stderr
    assert sorted(os.listdir(tmp_path)) == ["train.fifo"]


def test_a_signal_inside_the_compiler_is_sent_again_after_it(monkeypatch):
    # An exception raised in llvmlite's callbacks from LLVM is lost and the
    # process crashes: the handler sends the signal again instead of raising.
    sent = threading.Event()
    monkeypatch.setattr(os, "kill", lambda pid, signum: sent.set())
    compiler_code = {"__name__": "llvmlite.binding.executionengine"}
    exec("def callback(handler):\n    return handler(15, sys._getframe())", compiler_code)
    compiler_code["sys"] = sys
    assert compiler_code["callback"](skftrl._cli.interrupt) is None
    assert sent.wait(timeout=5)
    with pytest.raises(KeyboardInterrupt):
        skftrl._cli.interrupt(15, sys._getframe())


def test_an_interrupted_model_write_removes_its_temporary_file(tmp_path, monkeypatch):
    write(tmp_path / "train.svm", shipped_lines("a9a.gz")[:500])
    seen = []

    def interrupted_save(estimator, path, file):
        file.write(b"part of a model")
        seen.extend(name for name in os.listdir(tmp_path) if name.endswith(".tmp"))
        raise KeyboardInterrupt

    monkeypatch.setattr(skftrl._cli._train, "save_model", interrupted_save)
    result = run_here("train", "train.svm", "--model", "model", cwd=tmp_path)
    assert seen, "the model is written to a temporary file first"
    assert result.returncode == 128 + signal.SIGINT, result.stderr
    assert os.listdir(tmp_path) == ["train.svm"]


# ------------------------------------------------- streams: stdin and FIFOs
A9A_3000 = shipped_lines("a9a.gz")[:3000]


def a9a_reference(lines, chunk_size, **params):
    X, y = load_svmlight_file(io.BytesIO(b"".join(lines)), n_features=123)
    return X, y, chunked_partial_fit(FTRLClassifier(**params), X, y, chunk_size, classes=[-1, 1])


def test_train_from_stdin_reads_every_row_once(tmp_path):
    data = b"".join(A9A_3000)
    result = subprocess.run(
        command(
            "train",
            "-",
            "--model",
            "m",
            "--n-features",
            123,
            "--classes=-1,1",
            "--chunk-size",
            700,
            "--l1",
            1,
        ),
        input=data,
        capture_output=True,
        cwd=tmp_path,
        env=environment(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    _, _, reference = a9a_reference(A9A_3000, 700, l1=1.0)
    assert_same_state(joblib.load(tmp_path / "m"), reference)
    assert reference.n_samples_seen_ == 3000


def test_predict_from_a_fifo_and_from_stdin_writes_every_row(tmp_path):
    X, _, reference = a9a_reference(A9A_3000[:1000], 300)
    reference.input_spec_ = {"format": "libsvm", "n_features": 123, "zero_based": False}
    joblib.dump(reference, tmp_path / "model")
    lines = shipped_lines("a9a.t.gz")[:2500]
    expected = reference.predict_proba(
        load_svmlight_file(io.BytesIO(b"".join(lines)), n_features=123)[0]
    )[:, 1]
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        command("predict", "--model", "model", "rows.fifo"),
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with open(fifo, "wb") as writer:  # opens once the command opens the FIFO
        for start in range(0, len(lines), 100):  # in pieces, as a slow producer writes
            writer.write(b"".join(lines[start : start + 100]))
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert np.array_equal(read_numbers(stdout.decode())[:, 0], expected)

    piped = subprocess.run(
        command("predict", "--model", "model", "-"),
        input=gzip.compress(b"".join(lines)),
        capture_output=True,
        cwd=tmp_path,
        env=environment(),
        timeout=300,
    )
    assert piped.returncode == 0, piped.stderr
    assert np.array_equal(read_numbers(piped.stdout.decode())[:, 0], expected)


def test_a_stream_without_the_classes_is_refused_before_reading(tmp_path):
    result = subprocess.run(
        command("train", "-", "--model", "m", "--n-features", 123),
        input=b"".join(A9A_3000),
        capture_output=True,
        cwd=tmp_path,
        env=environment(),
        timeout=300,
    )
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "skftrl: error: - is not a regular file and cannot be read twice: give "
        "--classes A,B,... so that no scan of the file is needed (or continue a model with -i)\n"
    )
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------ the model file
def test_resume_with_initial_model_equals_uninterrupted_partial_fit(tmp_path):
    write(tmp_path / "a.svm", A9A_3000[:1700])
    write(tmp_path / "b.svm.gz", A9A_3000[1700:])
    first = run_here(
        "train",
        "a.svm",
        "--model",
        "a.model",
        "--chunk-size",
        500,
        "--n-features",
        123,
        "--l1",
        0.5,
        cwd=tmp_path,
    )
    assert first.returncode == 0, first.stderr
    second = run_here(
        "train",
        "b.svm.gz",
        "-i",
        "a.model",
        "--model",
        "b.model",
        "--chunk-size",
        500,
        cwd=tmp_path,
    )
    assert second.returncode == 0, second.stderr
    assert "scanned" not in second.stdout  # the model says all: one pass
    X, y = load_svmlight_file(io.BytesIO(b"".join(A9A_3000)), n_features=123)
    reference = FTRLClassifier(l1=0.5)
    for part in (slice(0, 1700), slice(1700, 3000)):
        chunked_partial_fit(reference, X[part], y[part], 500, classes=[-1, 1])
    resumed = joblib.load(tmp_path / "b.model")
    assert_same_state(resumed, reference)
    assert resumed.loss_curve_ == reference.loss_curve_
    assert [run["rows"] for run in resumed.training_log_] == [1700, 1300]

    wrong_task = run_here(
        "train",
        "b.svm.gz",
        "-i",
        "a.model",
        "--model",
        "c.model",
        "--task",
        "regress",
        cwd=tmp_path,
    )
    assert wrong_task.returncode == 2
    assert "a.model is a classifier: use --task classify" in wrong_task.stderr


def test_the_model_file_is_the_estimator_and_a_python_model_is_accepted(a9a_run, tmp_path):
    _, test, model_path, _, reference = a9a_run
    model = joblib.load(model_path)
    X_test, y_test = load_svmlight_file(str(test), n_features=123)
    predicted = run_here("predict", "--model", model_path, test)
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], model.predict_proba(X_test)[:, 1])

    # A model trained and saved in Python: LIBSVM indices from 1 by default.
    X, y = load_svmlight_file(io.BytesIO(b"".join(A9A_3000)), n_features=123)
    python_model = FTRLClassifier(l1=1.0).partial_fit(X, y, classes=[-1, 1])
    joblib.dump(python_model, tmp_path / "python.joblib")
    predicted = run_here("predict", "--model", tmp_path / "python.joblib", test)
    assert predicted.returncode == 0, predicted.stderr
    assert np.array_equal(
        read_numbers(predicted.stdout)[:, 0], python_model.predict_proba(X_test)[:, 1]
    )
    scored = run_here("test", "--model", tmp_path / "python.joblib", test)
    proba = python_model.predict_proba(X_test)
    assert f"log loss: {log_loss(y_test, proba):.4f}" in scored.stdout
    assert f"AUC: {roc_auc_score(y_test, proba[:, 1]):.4f}" in scored.stdout
    shown = run_here("inspect", "--model", tmp_path / "python.joblib", "--all")
    assert shown.returncode == 0, shown.stderr
    listed = re.findall(r"^ +([-+][0-9.]+)  feature (\d+)$", shown.stdout, flags=re.M)
    coef = python_model.coef_[0]
    assert [(float(w), int(i)) for w, i in listed] == [
        (round(coef[j], 6), j + 1) for j in np.flatnonzero(coef)
    ]


def test_skops_model_file(tmp_path):
    sio = pytest.importorskip("skops.io")
    write(tmp_path / "a.svm", A9A_3000)
    result = run_here("train", "a.svm", "--model", "m.skops", "--n-features", 123, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    loaded = sio.load(tmp_path / "m.skops", trusted=["skftrl._classifier.FTRLClassifier"])
    _, _, reference = a9a_reference(A9A_3000, 10_000)
    assert_same_state(loaded, reference)
    predicted = run_here("predict", "--model", "m.skops", "a.svm", cwd=tmp_path)
    X, _ = load_svmlight_file(str(tmp_path / "a.svm"), n_features=123)
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], reference.predict_proba(X)[:, 1])


def test_hashed_names_load_as_the_same_dict_from_joblib_pickle_and_skops(tmp_path):
    sio = pytest.importorskip("skops.io")
    rows = click_rows(400, seed=6)
    write_csv(tmp_path / "c.csv", rows, ["age", "color", "clicked", "score", "city"])
    for name in ("m.joblib", "m.skops"):
        options = ["--label-column", "clicked", "--hash-bits", 10, "--model", name]
        result = run_here("train", "c.csv", *options, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    # The names of the hashed features, hashed independently, by column.
    names = {"score"} | {f"{f}={row[f]}" for row in rows for f in ("age", "color", "city")}
    names -= {"age=", "city=", "city=NA"}
    expected = names_by_column(names, 10)
    from_joblib = joblib.load(tmp_path / "m.joblib")
    # skops files hold skftrl's estimator type only: they load trusting it alone.
    trusted = ["skftrl._classifier.FTRLClassifier"]
    assert sio.get_untrusted_types(file=tmp_path / "m.skops") == trusted
    from_skops = sio.load(tmp_path / "m.skops", trusted=trusted)
    for model in (
        from_joblib,
        from_skops,
        pickle.loads(pickle.dumps(from_joblib)),
        copy.deepcopy(from_joblib),
        joblib.load(joblib.dump(from_joblib, tmp_path / "again.joblib")[0]),
    ):
        recorded = model.hashed_feature_names_
        assert isinstance(recorded, dict)
        assert {column: sorted(found) for column, found in recorded.items()} == expected
    assert "color=red" in run_here("inspect", "m.skops", cwd=tmp_path).stdout


def test_a_hashed_model_file_grows_with_its_non_zero_state(tmp_path):
    rows = click_rows(500, seed=5)
    write_csv(tmp_path / "c.csv", rows, ["age", "color", "clicked", "score", "city"])
    result = run_here(
        "train",
        "c.csv",
        "--label-column",
        "clicked",
        "--model",
        "m",
        "--hash-bits",
        22,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    # 2**22 columns of float64 z and n are 64 MiB; about 70 features are touched.
    assert os.path.getsize(tmp_path / "m") < 50_000


def test_rows_of_importance_zero_learn_nothing_in_any_chunk(tmp_path):
    # A chunk (of one row) or a held-out part that weighs nothing is valid:
    # it learns nothing, and its loss is 0.
    rows = ["0 0 |a y", "1 1 |a x y", "0 0 |a y z", "1 0 |a x", "0 2 |a z", "1 0 |a w"]
    (tmp_path / "all.vw").write_text("\n".join(rows) + "\n")
    (tmp_path / "weighed.vw").write_text("\n".join(rows[1:2] + rows[4:5]) + "\n")
    for name in ("all", "weighed"):
        args = ["train", f"{name}.vw", "--chunk-size", 1, "--classes", "0,1", "-f", name]
        result = run_here(*args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    model, reference = joblib.load(tmp_path / "all"), joblib.load(tmp_path / "weighed")
    for name in STATE:
        assert np.array_equal(getattr(model, name), getattr(reference, name)), name
    assert model.n_samples_seen_ == 6 and model.loss_curve_[0] == 0.0
    # Rows 2, 4 and 6 held out: they weigh nothing.
    rows[1] = "0 0 |a x y"
    (tmp_path / "all.vw").write_text("\n".join(rows) + "\n")
    result = run_here(
        "train", "all.vw", "--holdout-period", 2, "--passes", 2, "-f", "held", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "pass 1/2: progressive log loss" in result.stdout
    assert "held-out log loss 0.000000" in result.stdout
    assert np.isfinite(joblib.load(tmp_path / "held").z_).all()


# ---------------------------------------------------------- CSV options
def test_weight_ignore_keep_and_categorical_columns(tmp_path):
    rows = click_rows(1500, seed=6)
    rng = np.random.RandomState(0)
    for row in rows:
        row["weight"] = f"{rng.choice([0, 0.5, 1, 3])}"
        row["zip"] = str(rng.randint(5))  # a numeric code: a category
        row["id"] = str(rng.randint(10**6))
    columns = ["age", "color", "clicked", "score", "city", "weight", "zip", "id"]
    write_csv(tmp_path / "c.csv", rows, columns)
    result = run_here(
        "train",
        "c.csv",
        "--label-column",
        "clicked",
        "--weight-column",
        "weight",
        "--ignore",
        "id",
        "--categorical",
        "zip",
        "--numeric",
        "age",  # whole numbers, read as numbers
        "--hash-bits",
        12,
        "--chunk-size",
        400,
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    pairs = []
    for row in rows:
        features = [
            (name, float(row[name]))
            for name in ("age", "score")
            if row[name].strip().lower() not in MISSING
        ]
        features += [
            (f"{name}={row[name]}", 1.0)
            for name in ("color", "city", "zip")
            if row[name].strip().lower() not in MISSING
        ]
        pairs.append(features)
    X = FeatureHasher(2**12, input_type="pair", alternate_sign=False).transform(pairs)
    y = np.array([row["clicked"] for row in rows])
    weights = np.array([float(row["weight"]) for row in rows])
    reference = FTRLClassifier()
    for start in range(0, 1500, 400):
        part = slice(start, start + 400)
        reference.partial_fit(X[part], y[part], classes=["no", "yes"], sample_weight=weights[part])
    model = joblib.load(tmp_path / "m")
    assert_same_state(model, reference)
    assert model.input_spec_["ignored"] == ["id"]
    assert model.input_spec_["kinds"]["zip"] == "categorical"

    kept = run_here(
        "train",
        "c.csv",
        "--label-column",
        "clicked",
        "--keep",
        "color,zip",
        "--hash-bits",
        12,
        "--model",
        "k",
        "--classes",
        "no,yes",
        cwd=tmp_path,
    )
    assert kept.returncode == 0, kept.stderr
    assert sorted(joblib.load(tmp_path / "k").input_spec_["kinds"]) == ["color", "zip"]


@pytest.mark.parametrize("numeric", [None, "age"])
@pytest.mark.parametrize(
    "reading",
    ["first pass", "first chunk", "one pass", pytest.param("parquet", marks=needs_readers_extra)],
)
def test_whole_numbers_are_categories_unless_named_numeric(tmp_path, reading, numeric):
    # Ids and codes are written as whole numbers: read as numbers, an id of
    # 14,102,100 would swamp a row's margin. A column with a fraction is
    # numeric. Whether a column's numbers are whole is its first chunk's, in a
    # first pass too (so that one pass and a first pass learn one model).
    rows = click_rows(900, seed=9)
    classes = ["no", "yes"]
    for i, row in enumerate(rows):
        row["code"] = str(14_102_100 + i % 7)
        row["late"] = "2.5" if i == 700 else str(i % 3)
        if reading == "one pass":  # labels 0 and 1: classes and kinds from the first chunk
            row["clicked"] = str(classes.index(row["clicked"]))
    if reading == "one pass":
        classes = [0.0, 1.0]
    columns = ["age", "color", "clicked", "score", "city", "code", "late"]
    options = ["--label-column", "clicked", "--hash-bits", 12, "--chunk-size", 300]
    if reading == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = click_table(rows).drop_columns(["id"])
        table = table.append_column("code", pa.array([int(r["code"]) for r in rows]))
        table = table.append_column("late", pa.array([float(r["late"]) for r in rows]))
        pq.write_table(table, tmp_path / "c.parquet")
        data = "c.parquet"
    else:
        data = write_csv(tmp_path / "c.csv", rows, columns).name
    if reading == "first chunk":
        options.append("--classes=no,yes")
    if numeric:
        options += ["--numeric", numeric]
    result = run_here("train", data, *options, "--model", "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert ("scanned" in result.stdout) == (reading in ("first pass", "parquet"))
    assert ("in one pass, as its first rows show it" in result.stdout) == (reading == "one pass")
    # The first chunk's "late" values are whole; in Parquet they are floats.
    late = "numeric" if reading == "parquet" else "categorical"
    kinds = {**CSV_KINDS, "code": "categorical", "late": late}
    if numeric:
        kinds[numeric] = "numeric"
    reference = FTRLClassifier()
    X = hashed_reference(rows, 12, kinds)
    y = np.array([row["clicked"] for row in rows]).astype(type(classes[0]))
    for start in range(0, len(rows), 300):
        part = slice(start, start + 300)
        reference.partial_fit(X[part], y[part], classes=classes)
    assert_same_state(joblib.load(tmp_path / "m"), reference)
    # predict reads the file as the model was trained to.
    predicted = run_here("predict", data, "m", cwd=tmp_path)
    assert predicted.returncode == 0, predicted.stderr
    expected = reference.predict_proba(X)[:, 1]
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], expected)
    # Continued with -i, the model reads its columns as it was trained to:
    # an option that says otherwise is refused, one that agrees is taken.
    disagreeing = "--categorical" if numeric else "--numeric"
    refused = run_here("train", data, "-i", "m", "--model", "m2", disagreeing, "age", cwd=tmp_path)
    assert refused.returncode == 2
    assert f"{disagreeing} age conflicts with --initial-model m" in refused.stderr
    agreeing = "--numeric" if numeric else "--categorical"
    taken = run_here("train", data, "-i", "m", "--model", "m2", agreeing, "age", cwd=tmp_path)
    assert taken.returncode == 0, taken.stderr


def test_numeric_and_categorical_name_different_columns(tmp_path):
    write_csv(tmp_path / "c.csv", click_rows(50, seed=1), ["age", "clicked", "score"])
    both = run_here(
        "train",
        "c.csv",
        "--label-column",
        "clicked",
        "--numeric",
        "age",
        "--categorical",
        "age",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert both.returncode == 2 and "--numeric and --categorical both name 'age'" in both.stderr
    absent = run_here(
        "train",
        "c.csv",
        "--label-column",
        "clicked",
        "--numeric",
        "height",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert absent.returncode != 0 and "--numeric: no column 'height'" in absent.stderr
    assert not (tmp_path / "m").exists()


def test_a_numeric_column_that_reproduces_the_label_is_warned_about(tmp_path):
    rng = np.random.RandomState(1)
    lines = ["hour,temp,casual,registered,cnt\n"]
    for _ in range(600):
        casual, registered = rng.randint(0, 50), rng.randint(0, 300)
        lines.append(
            f"{rng.randint(24)},{rng.rand():.2f},{casual},{registered},{casual + registered}\n"
        )
    write(tmp_path / "bike.csv", lines)
    result = run_here(
        "train",
        "bike.csv",
        "--label-column",
        "cnt",
        "--task",
        "regress",
        "--learning-rate",  # the intercept reaches the label's mean (no other warning)
        10,
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "skftrl: warning: the columns 'casual', 'registered' reproduce the label "
        "'cnt' almost exactly (R^2 = 1.0000 over the first 600 rows): derived from it? "
        "Leave them out with --ignore casual,registered\n"
    ) == result.stderr
    clean = run_here(
        "train",
        "bike.csv",
        "--label-column",
        "cnt",
        "--task",
        "regress",
        "--learning-rate",  # the intercept reaches the label's mean (no other warning)
        10,
        "--ignore",
        "casual,registered",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert clean.returncode == 0 and clean.stderr == ""


def test_features_of_large_values_are_warned_about_in_every_format(tmp_path):
    # LIBSVM names its features by index as written; VW text's and hashed
    # LIBSVM's are counted, with the largest value. Values up to 10,000 in
    # size are not warned about.
    write(tmp_path / "one.svm", ["1 1:1 3:25000\n", "0 2:1 3:-12.5 7:10000\n", "1 1:1\n"])
    write(
        tmp_path / "many.svm",
        ["1 " + " ".join(f"{i}:{20000 + i}" for i in range(2, 9)) + "\n", "0 1:-30000.5\n"],
    )
    write(tmp_path / "big.vw", ["1 |a x:25000 y\n", "0 |a x:3 z:-40000\n", "1 |b w:9999\n"])
    tail = (
        ": a feature is one weight times its value, and values this large spoil FTRL's "
        "steps. Scale {} (a logarithm, a division) before training\n"
    )
    cases = [
        (
            ["one.svm"],
            "the feature index 3 holds values up to 25,000 in the first 3 rows"
            + tail.format("it"),
        ),
        (
            ["one.svm", "--zero-based"],
            "the feature index 3 holds values up to 25,000 in the first 3 rows"
            + tail.format("it"),
        ),
        (
            ["many.svm"],
            "the feature indices 1 (up to 30,000.5), 2 (up to 20,002), 3 (up to 20,003), "
            "4 (up to 20,004), 5 (up to 20,005) and 3 more hold values beyond 10,000 in the "
            "first 2 rows" + tail.format("them"),
        ),
        (
            ["many.svm", "--hash-bits", 4],
            "8 features hold values beyond 10,000 in the first 2 rows (up to 30,000.5)"
            + tail.format("them"),
        ),
        (
            ["big.vw", "--classes=0,1"],
            "2 features hold values beyond 10,000 in the first 3 rows (up to 40,000)"
            + tail.format("them"),
        ),
    ]
    for options, expected in cases:
        result = run_here("train", *options, "--model", "m", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stderr == "skftrl: warning: " + expected, options


@needs_readers_extra
def test_parquet_columns_of_large_values_or_reproducing_the_label_are_warned_about(tmp_path):
    # As in CSV: the numeric columns named, those read as categories (whole
    # numbers are ids) left alone; the columns of numbers, whatever they are
    # read as, that reproduce the label named.
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "price": pa.array([12.5, 25000.25, -3.0]),
            "temp": pa.array([0.5, -0.25, 1.0]),
            "user": pa.array([123456, 2, 3]),
            "clicked": pa.array([1, 0, 1]),
        }
    )
    pq.write_table(table, tmp_path / "c.parquet")
    result = run_here(
        "train", "c.parquet", "--label-column", "clicked", "--model", "m", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "skftrl: warning: the numeric column 'price' holds values up to 25,000.25 in the "
        "first 3 rows: a numeric column is one weight times its value, and values this large "
        "spoil FTRL's steps. Scale it (a logarithm, a division) or read it as categories "
        "with --categorical price\n"
    )
    rng = np.random.RandomState(1)
    casual, registered = rng.randint(0, 50, 600), rng.randint(0, 300, 600)
    bike = pa.table(
        {
            "hour": pa.array(rng.randint(24, size=600)),
            "temp": pa.array(rng.rand(600).round(2)),
            "casual": pa.array(casual),
            "registered": pa.array(registered),
            "cnt": pa.array((casual + registered).astype(float)),
        }
    )
    pq.write_table(bike, tmp_path / "bike.parquet")
    options = ["--label-column", "cnt", "--task", "regress", "--learning-rate", 10]
    result = run_here("train", "bike.parquet", *options, "--model", "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "skftrl: warning: the columns 'casual', 'registered' reproduce the label "
        "'cnt' almost exactly (R^2 = 1.0000 over the first 600 rows): derived from it? "
        "Leave them out with --ignore casual,registered\n"
    )
    options += ["--ignore", "casual,registered"]
    clean = run_here("train", "bike.parquet", *options, "--model", "m", cwd=tmp_path)
    assert clean.returncode == 0 and clean.stderr == ""


def test_a_new_regression_model_whose_intercept_cannot_reach_the_label_is_warned_about(tmp_path):
    # FTRL moves a weight at most learning_rate * sqrt(t) in t rows: at 0.1,
    # an intercept reaching a mean of 150 needs (150 / 0.1)**2 = 2,250,000
    # rows, beyond a hundred first chunks of 500 rows; at 7 it needs 459.
    rng = np.random.RandomState(3)
    rows = 500
    counts = rng.randint(100, 201, rows)
    hours = rng.randint(24, size=rows)
    write(tmp_path / "bike.csv", ["hr,cnt\n"] + [f"{h},{c}\n" for h, c in zip(hours, counts)])
    write(tmp_path / "bike.svm", [f"{c} {h + 1}:1\n" for h, c in zip(hours, counts)])
    mean = counts.mean()
    assert (mean / 0.1) ** 2 > 100 * rows and (mean / 7) ** 2 < rows

    def train(data, *options):
        return run_here(
            "train", data, "--task", "regress", "--chunk-size", rows, *options, cwd=tmp_path
        )

    expected = (
        f"averages {mean:,.4g} over the first {rows} rows, but FTRL moves a weight at most "
        "--learning-rate x the square root of its rows: at 0.1, the intercept needs about "
        f"{float(f'{(mean / 0.1) ** 2:.2g}'):,.0f} rows to reach that mean. Raise "
        f"--learning-rate (to {mean / np.sqrt(rows):.2g} or more) or center and scale the label\n"
    )
    from_csv = train("bike.csv", "--label-column", "cnt", "--model", "m")
    assert from_csv.returncode == 0, from_csv.stderr
    assert from_csv.stderr == "skftrl: warning: the label 'cnt' " + expected
    from_libsvm = train("bike.svm", "--model", "m2")
    assert from_libsvm.returncode == 0, from_libsvm.stderr
    assert from_libsvm.stderr == "skftrl: warning: the label " + expected
    quiet = [
        ("bike.csv", "--label-column", "cnt", "--learning-rate", 7, "--model", "m3"),
        ("bike.csv", "--label-column", "cnt", "--loss", "poisson", "--model", "m4"),
        ("bike.csv", "--label-column", "cnt", "-i", "m", "--model", "m5"),  # not a new model
    ]
    for options in quiet:
        result = train(*options)
        assert result.returncode == 0 and result.stderr == "", (options, result.stderr)


def test_numeric_columns_of_large_values_are_warned_about(tmp_path):
    # FTRL's steps grow with a feature's value: the warning names the numeric
    # columns with a value beyond 10,000 in the first chunk, whether numeric
    # for their fractions or by --numeric; whole numbers read as categories,
    # and columns within the bound, are not named.
    rng = np.random.RandomState(2)
    rows = 300
    price = np.round(rng.uniform(0, 20_000, rows), 2)
    temp = np.round(rng.uniform(-1, 1, rows), 2)
    hour = 14102100 + rng.randint(0, 24, rows)
    small = np.round(rng.uniform(-10_000, 10_000, rows), 1)
    lines = ["clicked,price,temp,hour,small\n"]
    lines += [
        f"{rng.randint(2)},{p:.2f},{t:.2f},{h},{v:.1f}\n"
        for p, t, h, v in zip(price, temp, hour, small)
    ]
    write(tmp_path / "c.csv", lines)

    def train(*options):
        return run_here(
            "train", "c.csv", "--label-column", "clicked", *options, "--model", "m", cwd=tmp_path
        )

    one = train()  # hour's whole numbers are categories
    assert one.returncode == 0, one.stderr
    assert one.stderr == (
        f"skftrl: warning: the numeric column 'price' holds values up to {price.max():,.10g} "
        f"in the first {rows} rows: a numeric column is one weight times its value, and values "
        "this large spoil FTRL's steps. Scale it (a logarithm, a division) or read it as "
        "categories with --categorical price\n"
    )
    two = train("--numeric", "hour")
    assert two.returncode == 0, two.stderr
    assert two.stderr == (
        f"skftrl: warning: the numeric columns 'price' (up to {price.max():,.10g}), 'hour' "
        f"(up to {hour.max():,}) hold values beyond 10,000 in the first {rows} rows: a numeric "
        "column is one weight times its value, and values this large spoil FTRL's steps. Scale "
        "them (a logarithm, a division) or read them as categories with --categorical price,hour\n"
    )
    # Read as categories, its 300 distinct values are those of an id.
    clean = train("--categorical", "price")
    assert clean.returncode == 0 and clean.stderr.startswith(
        "skftrl: warning: the categorical column 'price' holds a different value in 300 of "
        "its first 300 rows"
    )
    assert clean.stderr.count("\n") == 1


# ------------------------------------------ issue 16: crash-free edges
def test_an_empty_test_file_still_saves_the_model(tmp_path):
    write(tmp_path / "a.svm", A9A_3000[:500])
    write(tmp_path / "empty.svm", [])
    result = run_here("train", "a.svm", "--test", "empty.svm", "--model", "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "skftrl: warning: empty.svm has no data rows: no held-out scores\n"
    assert isinstance(joblib.load(tmp_path / "m"), FTRLClassifier)


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["train", "big.svm", "--model", "m"],
            "skftrl: error: a model 2,147,483,647 features wide needs 50.0 GiB: 32.0 GiB for "
            "its state (z and n, 1 output) and the rest to compute its weights or save it",
        ),
        (
            ["train", "a.svm", "--model", "m", "--n-features", "1e19"],
            "skftrl: error: a model 10,000,000,000,000,000,000 features wide needs "
            "232,830,643,653.9 GiB: 149,011,611,938.5 GiB for its state (z and n, 1 output)",
        ),
    ],
)
def test_a_width_beyond_memory_says_what_it_needs_and_suggests_hashing(tmp_path, args, expected):
    write(tmp_path / "a.svm", A9A_3000[:50])
    write(tmp_path / "big.svm", A9A_3000[:50] + [b"+1 3:1 2147483647:1\n"])
    result = run_here(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(expected)
    assert result.stderr.rstrip().endswith(
        "use --hash-bits B to hash the features into 2**B columns"
    )
    hashed = run_here("train", "big.svm", "--model", "h", "--hash-bits", 10, cwd=tmp_path)
    assert hashed.returncode == 0, hashed.stderr


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["train", "a.svm", "--model", "a.svm"],
            "the model file a.svm is the DATA file: it would be overwritten",
        ),
        (
            ["train", "a.svm", "--test", "t.svm", "--model", "./t.svm"],
            "the model file ./t.svm is the --test file: it would be overwritten",
        ),
        (
            ["predict", "--model", "m", "a.svm", "--output", "m"],
            "--output m is the model file: it would be overwritten",
        ),
        (
            ["train", "a.svm", "--model", "m", "--classes", "1"],
            "--classes needs two distinct labels or more, comma-separated: '1'",
        ),
        (
            ["train", "a.svm", "--model", "m", "--classes", "yes,no"],
            "LIBSVM labels are numbers: --classes yes,no",
        ),
        (
            ["train", "a.svm", "--model", "m", "--weight-column", "w"],
            "a.svm is read as LIBSVM, which takes no --weight-column",
        ),
        (
            ["train", "a.svm", "--model", "m", "--n-features", "1.5"],
            "argument --n-features: not an integer: '1.5'",
        ),
        (
            ["train", "c.csv", "--model", "m", "--label-column", "clicked", "--n-features", "9"],
            "--n-features, --zero-based and --drop-extra-features are for LIBSVM data",
        ),
    ],
)
def test_options_that_cannot_work_are_refused_and_nothing_is_written(tmp_path, args, expected):
    write(tmp_path / "a.svm", A9A_3000[:50])
    write(tmp_path / "t.svm", A9A_3000[50:80])
    write(tmp_path / "c.csv", CLICK_LINES)
    (tmp_path / "m").write_bytes(b"a model")
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    result = run_here(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


@pytest.mark.parametrize(
    "files, args, expected",
    [
        (
            {"model": "a damaged dict"},
            ["inspect", "--model", "model"],
            "model: a damaged skftrl model file: no 'input', 'training' in it",
        ),
        (
            {"c.csv": with_line(CLICK_LINES, 20, b"31,r\xe9d,yes,0.5,city1\n")},
            ["train", "c.csv", "--label-column", "clicked", "--model", "m"],
            "c.csv:20: byte 0xe9 at column 5 is not UTF-8 text (invalid continuation byte)",
        ),
        (
            {"c.csv": CLICK_LINES},
            ["train", "c.csv", "--label-column", "clicked", "--ignore", "colour", "--model", "m"],
            "c.csv:1: --ignore: no column 'colour' in the header (the columns are: age, color, "
            "clicked, score, city)",
        ),
        (
            {
                "c.csv": [CLICK_LINES[0].replace("\n", ",w\n")]
                + [line.replace("\n", ",1\n") for line in CLICK_LINES[1:6]]
                + ["30,red,no,0.1,x,-2\n"]
            },
            [
                "train",
                "c.csv",
                "--label-column",
                "clicked",
                "--weight-column",
                "w",
                "--model",
                "m",
            ],
            "c.csv:7: the weight '-2' is negative",
        ),
    ],
)
def test_bad_files_of_the_new_options(tmp_path, files, args, expected):
    for name, content in files.items():
        if content == "a damaged dict":
            joblib.dump({"kind": "skftrl model", "estimator": FTRLClassifier()}, tmp_path / name)
        else:
            write(tmp_path / name, content)
    before = set(os.listdir(tmp_path))
    result = run_here(*args, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == f"skftrl: error: {expected}\n"
    assert set(os.listdir(tmp_path)) == before


def test_a_model_whose_input_spec_is_damaged_is_refused_with_a_message(tmp_path):
    _, _, model = a9a_reference(A9A_3000[:100], 100)
    model.input_spec_ = {"format": "libsvm", "zero_based": False}  # no n_features
    joblib.dump(model, tmp_path / "model")
    result = run_here("inspect", "--model", "model", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("skftrl: error: model: a damaged skftrl model file: ")
    assert "input_spec_" in result.stderr and "Traceback" not in result.stderr


def python_code(code, *args, cwd=None, env=None):
    """``python -c code *args`` in a new process, with this checkout's package
    (and the environment ``env``, by default this one)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=environment() if env is None else env,
        cwd=cwd,
        timeout=300,
    )


def test_help_and_version_start_without_scientific_imports():
    code = (
        "import sys; from skftrl._cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'sklearn', 'joblib') if m in sys.modules))"
    )
    result = python_code(code)
    assert result.stdout.splitlines()[-1] == "[]", result.stderr


def test_commands_import_no_pandas_and_execute_scipy_stats_only_to_score(tmp_path):
    # scikit-learn imports pandas when it is installed, and pyarrow at its
    # first conversion to numpy: the command needs no DataFrames. scikit-learn
    # also imports scipy.stats, a large part of a command's start-up time:
    # train and predict never use it, test (its AUC) does.
    rows = ["clicked,site,hour"] + [f"{i % 2},s{i % 7},{i % 24}" for i in range(500)]
    write(tmp_path / "clicks.csv", [row + "\n" for row in rows])
    code = (
        "import sys; from skftrl._cli import main\n"
        "codes = [main(['train', 'clicks.csv', 'model', '--label-column', 'clicked',"
        " '--categorical', 'site', '--hash-bits', '10', '--quiet'])]\n"
        "codes.append(main(['predict', 'clicks.csv', 'model', '-p', 'p.txt']))\n"
        "print(*codes, 'pandas' in sys.modules, 'scipy.stats._stats_py' in sys.modules)\n"
        "print(main(['test', 'clicks.csv', 'model']), 'scipy.stats._stats_py' in sys.modules)\n"
        "import scipy.stats; print(scipy.stats.rankdata([3.0, 1.0, 2.0]).tolist())"
    )
    result = python_code(code, cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[0] == "0 0 False False", result.stderr
    assert lines[-2] == "0 True", result.stderr
    assert lines[-1] == "[3.0, 1.0, 2.0]"
    assert joblib.load(tmp_path / "model").n_features_in_ == 2**10
    assert len((tmp_path / "p.txt").read_text().split()) == 500


def test_the_executable_ends_after_flushing_its_output_and_running_exit_handlers(tmp_path):
    # command() ends the process without Python's teardown: what the command
    # wrote must all be there, exit handlers must run, exit codes stay.
    X, y, _, _ = load_a9a()
    n_rows = 20_000  # far more output than a pipe's buffer holds
    dump_svmlight_file(X[:n_rows], y[:n_rows], str(tmp_path / "a9a.svm"))
    assert run("train", "a9a.svm", "m", "--quiet", cwd=tmp_path).returncode == 0
    code = (
        "import atexit, sys; from skftrl._cli import command\n"
        "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
        "sys.argv = ['skftrl', *sys.argv[1:]]\n"
        "command()"
    )

    # Buffered output, as a user's shell gives it.
    env = {name: value for name, value in environment().items() if name != "PYTHONUNBUFFERED"}

    def executable(*args):
        return python_code(code, *args, cwd=tmp_path, env=env)

    result = executable("predict", "a9a.svm", "m")
    expected = run_here("predict", "a9a.svm", "m", cwd=tmp_path)
    assert (result.returncode, expected.returncode) == (0, 0), result.stderr
    assert result.stdout == expected.stdout
    assert len(result.stdout.splitlines()) == n_rows
    assert "exit handler ran" in result.stderr
    result = executable("inspect", "m")
    assert result.stdout == run_here("inspect", "m", cwd=tmp_path).stdout
    result = executable("predict", "a9a.svm", "m", "--no-such-option")
    assert result.returncode == 2 and "exit handler ran" in result.stderr
    result = executable("predict", "missing.svm", "m")
    assert result.returncode == 1 and "missing.svm" in result.stderr


# ---------------------------------- factorization machines (issue 13)
FM_OPTIONS = [
    "--factors",
    3,
    "--init-stdev",
    0.05,
    "--factor-learning-rate",
    0.2,
    "--factor-l2",
    0.01,
    "--random-state",
    7,
    "--engine",
    "numpy",
]
FM_PARAMS = {
    "n_components": 3,
    "init_stdev": 0.05,
    "factor_learning_rate": 0.2,
    "factor_l2": 0.01,
    "random_state": 7,
    "engine": "numpy",
}


def test_factors_train_the_fm_of_partial_fit_and_every_command_reads_it(tmp_path):
    lines = A9A_3000[:900]
    write(tmp_path / "a.svm", lines[:600])
    write(tmp_path / "b.svm", lines[600:])
    test = write(tmp_path / "t.svm", shipped_lines("a9a.t.gz")[:300])
    result = run(
        "train",
        "a.svm",
        "--model",
        "fm.joblib",
        "--n-features",
        123,
        "--chunk-size",
        250,
        *FM_OPTIONS,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    X, y = load_svmlight_file(io.BytesIO(b"".join(lines)), n_features=123)
    reference = chunked_partial_fit(
        FMClassifier(**FM_PARAMS), X[:600], y[:600], 250, classes=[-1, 1]
    )
    assert_same_state(joblib.load(tmp_path / "fm.joblib"), reference)

    # -i continues the factorization machine as partial_fit does.
    resumed = run_here(
        "train",
        "b.svm",
        "-i",
        "fm.joblib",
        "--model",
        "fm2.joblib",
        "--chunk-size",
        250,
        cwd=tmp_path,
    )
    assert resumed.returncode == 0, resumed.stderr
    chunked_partial_fit(reference, X[600:], y[600:], 250)
    model = joblib.load(tmp_path / "fm2.joblib")
    assert_same_state(model, reference)
    assert model.loss_curve_ == reference.loss_curve_

    X_test, y_test = load_svmlight_file(str(test), n_features=123)
    proba = reference.predict_proba(X_test)
    predicted = run_here("predict", "--model", tmp_path / "fm2.joblib", test)
    assert np.array_equal(read_numbers(predicted.stdout)[:, 0], proba[:, 1])
    scored = run_here("test", "--model", tmp_path / "fm2.joblib", test)
    assert f"log loss: {log_loss(y_test, proba):.4f}" in scored.stdout

    # A regression FM, and the skops format with only skftrl's types in it.
    sio = pytest.importorskip("skops.io")
    # Without --random-state, the initial factors are those of random_state=0.
    regress = run_here(
        "train",
        "a.svm",
        "--model",
        "fm.skops",
        "--n-features",
        123,
        "--task",
        "regress",
        "--chunk-size",
        250,
        "--factors",
        2,
        "--engine",
        "numpy",
        cwd=tmp_path,
    )
    assert regress.returncode == 0, regress.stderr
    loaded = sio.load(tmp_path / "fm.skops", trusted=["skftrl._fm.FMRegressor"])
    regressor = FMRegressor(n_components=2, random_state=0, engine="numpy")
    assert_same_state(loaded, chunked_partial_fit(regressor, X[:600], y[:600], 250))
    assert run_here("inspect", "--model", tmp_path / "fm.skops").returncode == 0


def listed_interactions(text):
    """inspect's interactions: (value, class or None, first name, second name)."""
    section = text.split("strongest interactions")[1]
    return [
        (float(value), where or None, first, second)
        for value, where, first, second in re.findall(
            r"^ +([-+][0-9.]+)  (?:class (\S+)  )?(.+) x (.+)$", section, flags=re.MULTILINE
        )
    ]


def brute_force_interactions(model, X, top, name, paired=lambda i, j: True):
    """The ``top`` strongest <v_i, v_j> of every pair of features i < j with a
    non-zero value in the training rows ``X`` (and ``paired(i, j)``), from
    components_."""
    X = X.copy()
    X.eliminate_zeros()
    columns = np.unique(X.indices).tolist()
    V = model.components_
    pairs = []
    for output in range(V.shape[0]):
        for a, i in enumerate(columns):
            for j in columns[a + 1 :]:
                if not paired(i, j):
                    continue
                value = float(np.dot(V[output, i], V[output, j]))
                pairs.append((-abs(value), output, i, j, value))
    where = (lambda output: f"{model.classes_[output]:g}") if V.shape[0] > 1 else (lambda _: None)
    return [
        (round(value, 6), where(output), name(i), name(j))
        for _, output, i, j, value in sorted(pairs)[:top]
    ]


@pytest.mark.parametrize("data", ["a9a", "dna"])
def test_inspect_lists_the_strongest_interactions_of_every_pair(tmp_path, data):
    if data == "a9a":  # two classes, 118 features learned: the bound prunes candidates
        lines, options = A9A_3000[:600], ["--n-features", 123]
    else:  # three classes: one set of factors per class
        lines, options = shipped_lines("dna.scale.gz")[:300], []
    train = write(tmp_path / "train.svm", lines)
    result = run_here(
        "train", train, "--model", tmp_path / "m", *options, *FM_OPTIONS, "--init-stdev", 0.3
    )
    assert result.returncode == 0, result.stderr
    model = joblib.load(tmp_path / "m")
    X, _ = load_svmlight_file(str(train), n_features=model.n_features_in_)
    shown = run_here("inspect", "--model", tmp_path / "m", "--top", 12)
    assert shown.returncode == 0, shown.stderr
    expected = brute_force_interactions(model, X, 12, lambda column: f"feature {column + 1}")
    assert listed_interactions(shown.stdout) == expected
    learned = len(np.unique(X.indices))
    assert f"factors:          3 a feature; {learned:,} features learned" in shown.stdout


def test_inspect_names_interactions_of_hashed_csv_features(tmp_path):
    rows = click_rows(400, seed=8)
    write_csv(tmp_path / "c.csv", rows, ["age", "color", "clicked", "score", "city"])
    result = run_here(
        "train",
        "c.csv",
        "--label-column",
        "clicked",
        "--hash-bits",
        16,
        "--model",
        "m",
        *FM_OPTIONS,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    # The names, hashed independently (no two share a column at 2**16).
    names = {"score", "color=red", "color=green", "color=blue"}
    names |= {f"{f}={row[f]}" for row in rows for f in ("age", "city") if row[f] not in ("", "NA")}
    hasher = FeatureHasher(2**16, input_type="pair", alternate_sign=False)
    column_of = {name: int(hasher.transform([[(name, 1.0)]]).indices[0]) for name in names}
    assert len(set(column_of.values())) == len(names)
    name_of = {column: name for name, column in column_of.items()}
    model = joblib.load(tmp_path / "m")
    shown = run_here("inspect", "--model", "m", "--top", 8, cwd=tmp_path)

    def paired(i, j):  # two values of one column are never in the same row
        first, second = name_of[i].partition("="), name_of[j].partition("=")
        return not (first[1] and second[1] and first[0] == second[0])

    expected = brute_force_interactions(model, hashed_reference(rows, 16), 8, name_of.get, paired)
    assert listed_interactions(shown.stdout) == expected


def test_inspect_bounds_the_interactions_it_leaves_out(tmp_path, monkeypatch):
    write(tmp_path / "train.svm", A9A_3000[:400])
    result = run_here(
        "train",
        "train.svm",
        "--model",
        "m",
        "--n-features",
        123,
        *FM_OPTIONS,
        "--init-stdev",
        0.3,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    monkeypatch.setattr(skftrl._cli._inspect, "MAX_INTERACTION_CANDIDATES", 20)
    shown = run_here("inspect", "--model", "m", "--top", 300, cwd=tmp_path)
    # Every pair of the 20 features of largest factor norm is listed (190 <
    # 300), with the bound of the pairs left out: the 21st norm times the first.
    model = joblib.load(tmp_path / "m")
    X, _ = load_svmlight_file(str(tmp_path / "train.svm"), n_features=123)
    V = model.components_[0]
    columns = np.unique(X.indices)
    norms = np.linalg.norm(V[columns], axis=1)
    order = np.argsort(-norms, kind="stable")
    kept = np.zeros(123, dtype=bool)
    kept[columns[order[:20]]] = True
    X_kept = X.multiply(kept[np.newaxis, :]).tocsr()
    expected = brute_force_interactions(model, X_kept, 300, lambda c: f"feature {c + 1}")
    assert listed_interactions(shown.stdout) == expected
    bound = norms[order[20]] * norms[order[0]]
    assert f"a pair with another feature is at most {bound:.6g})" in shown.stdout


def test_the_strongest_interactions_are_found_beyond_the_largest_norms():
    # 100 orthogonal factors of norm 10 interact with nothing; the strongest
    # pairs are among 100 small random ones, which the first candidates
    # (by norm) leave out: the bound must make the search go on.
    rng = np.random.RandomState(0)
    factors = np.vstack([10 * np.eye(100), rng.normal(size=(100, 100)) / 10])
    pairs, left_out = skftrl._cli._inspect.strongest_interactions(factors, 5)
    gram = factors @ factors.T
    a, b = np.triu_indices(200, 1)
    strongest = np.argsort(-np.abs(gram[a, b]), kind="stable")[:5]
    assert [(first, second) for _, first, second in pairs] == [(a[i], b[i]) for i in strongest]
    assert np.allclose(
        [value for value, _, _ in pairs], gram[a[strongest], b[strongest]], rtol=1e-12, atol=0
    )
    assert left_out is None


# ----------------------------------------- the held-out rows (issue 14)
def by_hand_holdout(
    model, X, y, chunk_size, period, passes, n_iter_no_change, tol=1e-4, weights=None, **fit_params
):
    """Learn the rows not held out (rows period, 2 period, ... counted from 1 are)
    chunk by chunk, pass by pass; after each pass the held-out log loss. Stop
    when it has not improved on the lowest by tol for n_iter_no_change passes;
    the best pass is the one of the lowest loss. Returns a copy of the
    best pass's model and the held-out losses."""
    held = np.arange(1, X.shape[0] + 1) % period == 0
    losses, best = [], None
    passes_without_improvement = 0
    for _ in range(passes):
        for start in range(0, X.shape[0], chunk_size):
            rows = np.arange(start, min(start + chunk_size, X.shape[0]))
            rows = rows[~held[rows]]
            if weights is not None:
                fit_params["sample_weight"] = weights[rows]
            model.partial_fit(X[rows], y[rows], **fit_params)
        loss = log_loss(
            y[held],
            model.predict_proba(X[held]),
            labels=model.classes_,
            sample_weight=None if weights is None else weights[held],
        )
        improved = loss < min(losses, default=np.inf) - tol
        passes_without_improvement = 0 if improved else passes_without_improvement + 1
        losses.append(loss)
        if loss <= min(losses):
            best = copy.deepcopy(model)
        if passes_without_improvement >= n_iter_no_change:
            break
    return best, losses


def check_holdout(result, model_path, best, losses, passes):
    assert result.returncode == 0, result.stderr
    text = result.stdout if isinstance(result.stdout, str) else result.stdout.decode()
    printed = re.findall(
        rf"pass \d+/{passes}: progressive log loss [0-9.]+, "
        r"held-out log loss ([0-9.]+)",
        text,
    )
    assert [float(loss) for loss in printed] == list(np.round(losses, 6))
    model = joblib.load(model_path)
    assert_same_state(model, best)
    assert model.loss_curve_ == best.loss_curve_
    log = model.training_log_[-1]
    assert np.allclose(log["held_out_losses"], losses, rtol=1e-12, atol=0)
    best_pass = log["passes"]
    assert f"kept the model of pass {best_pass} of {len(losses)} " in text
    # The cases are chosen so that the best pass is neither the first nor the last.
    assert 1 < best_pass < len(losses) < passes


def test_holdout_keeps_the_best_pass_on_a_file_and_on_stdin(tmp_path):
    lines = A9A_3000[:500]
    write(tmp_path / "a.svm", lines)
    X, y = load_svmlight_file(io.BytesIO(b"".join(lines)), n_features=123)
    best, losses = by_hand_holdout(
        FTRLClassifier(learning_rate=0.5), X, y, 150, 4, 10, 2, classes=[-1, 1]
    )
    args = [
        "--chunk-size",
        150,
        "--learning-rate",
        0.5,
        "--passes",
        10,
        "--holdout-period",
        4,
        "--n-features",
        123,
    ]
    # A file: a first pass finds the classes, its chunks cached.
    trained = run("train", "a.svm", *args, "--n-iter-no-change", 2, "--model", "m", cwd=tmp_path)
    check_holdout(trained, tmp_path / "m", best, losses, 10)
    # Standard input: the first pass reads the text, the next ones the cache.
    # With this tol, passes whose loss is above the lowest by less than tol
    # do not count as improvements; the kept pass is still the lowest's.
    best, losses = by_hand_holdout(
        FTRLClassifier(learning_rate=0.5), X, y, 150, 4, 10, 3, tol=0.005, classes=[-1, 1]
    )
    piped = subprocess.run(
        command(
            "train",
            "-",
            *args,
            "--classes=-1,1",
            "--model",
            "s",
            "--tol",
            0.005,
            "--n-iter-no-change",
            3,
        ),
        input=b"".join(lines),
        capture_output=True,
        cwd=tmp_path,
        env=environment(),
        timeout=300,
    )
    check_holdout(piped, tmp_path / "s", best, losses, 10)
    assert np.argmin(losses) + 1 == joblib.load(tmp_path / "s").training_log_[-1]["passes"]


def test_holdout_continues_a_model_and_trains_a_factorization_machine(tmp_path):
    write(tmp_path / "first.svm", A9A_3000[500:800])
    write(tmp_path / "a.svm", A9A_3000[:500])
    X, y = load_svmlight_file(io.BytesIO(b"".join(A9A_3000[:800])), n_features=123)
    first = run_here(
        "train",
        "first.svm",
        "--model",
        "first",
        "--n-features",
        123,
        "--learning-rate",
        0.5,
        cwd=tmp_path,
    )
    assert first.returncode == 0, first.stderr
    initial = FTRLClassifier(learning_rate=0.5).partial_fit(X[500:], y[500:], classes=[-1, 1])
    best, losses = by_hand_holdout(initial, X[:500], y[:500], 200, 5, 10, 2)
    resumed = run_here(
        "train",
        "a.svm",
        "-i",
        "first",
        "--model",
        "m",
        "--chunk-size",
        200,
        "--passes",
        10,
        "--holdout-period",
        5,
        "--n-iter-no-change",
        2,
        cwd=tmp_path,
    )
    check_holdout(resumed, tmp_path / "m", best, losses, 10)

    fm = FMClassifier(**{**FM_PARAMS, "init_stdev": 0.3}, learning_rate=0.5)
    best, losses = by_hand_holdout(fm, X[:500], y[:500], 200, 4, 8, 1, classes=[-1, 1])
    trained = run_here(
        "train",
        "a.svm",
        "--model",
        "fm",
        "--n-features",
        123,
        *FM_OPTIONS,
        "--init-stdev",
        0.3,
        "--learning-rate",
        0.5,
        "--chunk-size",
        200,
        "--passes",
        8,
        "--holdout-period",
        4,
        "--n-iter-no-change",
        1,
        cwd=tmp_path,
    )
    check_holdout(trained, tmp_path / "fm", best, losses, 8)


def test_holdout_of_weighted_csv_rows(tmp_path):
    # The held-out loss weighs each row by its --weight-column weight.
    rows = click_rows(700, seed=9)
    rng = np.random.RandomState(1)
    for row in rows:
        row["weight"] = f"{rng.choice([0, 0.5, 1, 3])}"
    write_csv(tmp_path / "c.csv", rows, ["age", "color", "clicked", "score", "city", "weight"])
    result = run_here(
        "train",
        "c.csv",
        "--label-column",
        "clicked",
        "--weight-column",
        "weight",
        "--hash-bits",
        12,
        "--chunk-size",
        200,
        "--learning-rate",
        2,
        "--passes",
        6,
        "--holdout-period",
        3,
        "--n-iter-no-change",
        1,
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    weights = np.array([float(row["weight"]) for row in rows])
    y = np.array([row["clicked"] for row in rows])
    best, losses = by_hand_holdout(
        FTRLClassifier(learning_rate=2.0),
        hashed_reference(rows, 12),
        y,
        200,
        3,
        6,
        1,
        weights=weights,
        classes=["no", "yes"],
    )
    model = joblib.load(tmp_path / "m")
    assert_same_state(model, best)
    assert np.allclose(model.training_log_[-1]["held_out_losses"], losses, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--factors", "0"], "argument --factors: must be 1 or more, got 0"),
        (["--factors", "two"], "argument --factors: not an integer: 'two'"),
        (
            ["--factors", "2", "--init-stdev", "-1"],
            "The 'init_stdev' parameter of FMClassifier must be",
        ),
        (
            ["--factors", "2", "--factor-learning-rate", "0"],
            "The 'factor_learning_rate' parameter of FMClassifier must be",
        ),
        (
            ["--factors", "2", "--factor-l2", "-0.5"],
            "The 'factor_l2' parameter of FMClassifier must be",
        ),
        (
            ["--factor-l2", "0.1", "--random-state", "3"],
            "--factor-l2, --random-state are for factorization machines: add --factors K",
        ),
        (
            ["--factors", "2", "-i", "linear"],
            (
                "--initial-model linear is a linear model: a model continued with -i keeps its "
                "factors (leave out --factors)"
            ),
        ),
        (
            ["--factors", "5", "-i", "fm"],
            (
                "--initial-model fm is 3 factors a feature: a model continued with -i keeps its "
                "factors"
            ),
        ),
        (
            ["-i", "fm", "--random-state", "1"],
            (
                "--random-state draws the initial factors of a new model; those of "
                "--initial-model fm are drawn already"
            ),
        ),
        (
            ["--holdout-period", "1"],
            "argument --holdout-period/--holdout_period: must be 2 or more (every K-th row is "
            "held out",
        ),
        (
            ["--holdout-period", "0.5"],
            "argument --holdout-period/--holdout_period: not an integer: '0.5'",
        ),
        (
            ["--n-iter-no-change", "3"],
            "--n-iter-no-change stops the passes on the held-out loss: add --holdout-period K",
        ),
        (
            ["--holdout-period", "3", "--n-iter-no-change", "0"],
            "argument --n-iter-no-change/--early_terminate: must be 1 or more, got 0",
        ),
        (
            ["--holdout-period", "3", "--tol", "-1"],
            "The 'tol' parameter of FTRLClassifier must be",
        ),
    ],
)
def test_bad_factor_and_holdout_options_exit_with_2_and_write_nothing(tmp_path, args, expected):
    write(tmp_path / "a.svm", A9A_3000[:50])
    X, y = load_svmlight_file(io.BytesIO(b"".join(A9A_3000[:50])), n_features=123)
    joblib.dump(FTRLClassifier().partial_fit(X, y, classes=[-1, 1]), tmp_path / "linear")
    joblib.dump(FMClassifier(**FM_PARAMS).partial_fit(X, y, classes=[-1, 1]), tmp_path / "fm")
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    result = run_here("train", "a.svm", "--model", "m", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_holdout_period_longer_than_the_file_is_an_error(tmp_path):
    write(tmp_path / "a.svm", A9A_3000[:40])
    result = run_here("train", "a.svm", "--model", "m", "--holdout-period", 41, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        "skftrl: error: a.svm: --holdout-period 41 holds out no row: the "
        "file has 40 data rows, fewer than 41\n"
    )
    assert os.listdir(tmp_path) == ["a.svm"]
