"""The command line's output files, the options of a continued model, and what a run prints.

- Model and prediction files: a regular file (or a new one) is replaced
  atomically, through its symlinks, which stay; a device, a FIFO, a terminal
  or ``/dev/stdout`` is written through, never replaced.
- ``train -i MODEL`` refuses reading options and classes that are not the
  model's, and takes those that are.
- Losses and scores print with a sensible number of digits; a model fitted
  on a DataFrame predicts without scikit-learn's warning about feature names.

The tests that write to devices name only the devices every user may write
(``/dev/null``, ``/dev/full``, a terminal of their own): they import
``output_target``, so that code without it, which replaced such paths with a
regular file, never runs them.
"""

import os
import re
import stat
import subprocess
import threading
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from test_cli import (
    A9A_HEAD,
    CLICK_LINES,
    assert_same_state,
    command,
    environment,
    read_numbers,
    run_here,
    write,
)

from conftest import needs_numba, needs_readers_extra
from skftrl import FTRLClassifier
from skftrl._cli._model_files import output_target  # see the module's docstring

TRAIN = ["train", "train.svm", "--n-features", 123]


@pytest.fixture
def workdir(tmp_path):
    """A directory with a LIBSVM training file and a model trained on it."""
    write(tmp_path / "train.svm", A9A_HEAD)
    assert run_here(*TRAIN, "--model", "model", cwd=tmp_path).returncode == 0
    return tmp_path


def predictions_of(workdir):
    result = run_here("predict", "--model", "model", "train.svm", cwd=workdir)
    assert result.returncode == 0, result.stderr
    return result.stdout


# ------------------------------------------------------ files that are not files
def test_the_target_of_a_new_or_regular_path_is_replaced_and_others_written_through(tmp_path):
    (tmp_path / "file").write_text("")
    os.symlink("file", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert output_target(tmp_path / "new") == (str(tmp_path / "new"), True)
    assert output_target(tmp_path / "link") == (str(tmp_path / "file"), True)
    assert output_target(tmp_path / "fifo") == (tmp_path / "fifo", False)
    assert output_target("/dev/null") == ("/dev/null", False)
    assert output_target("/dev/stdout") == ("/dev/stdout", False)


def test_predictions_to_a_fifo_reach_its_reader(workdir):
    fifo = workdir / "predictions.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    result = run_here("predict", "--model", "model", "train.svm", "--output", fifo, cwd=workdir)
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO
    assert received == [predictions_of(workdir)]
    assert sorted(os.listdir(workdir)) == ["model", "predictions.fifo", "train.svm"]


def test_a_model_to_a_fifo_reaches_its_reader(workdir):
    fifo = workdir / "model.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run_here(*TRAIN, "--model", fifo, cwd=workdir)
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    (workdir / "received").write_bytes(received[0])
    reference = joblib.load(workdir / "model")
    assert np.array_equal(joblib.load(workdir / "received").z_, reference.z_)


def test_a_symlinked_model_is_replaced_at_its_target_and_the_link_stays(workdir):
    (workdir / "models").mkdir()
    (workdir / "models" / "current").write_bytes(b"the previous model")
    os.chmod(workdir / "models" / "current", 0o600)
    os.symlink("models/current", workdir / "link")
    os.symlink("link", workdir / "link-to-link")
    result = run_here(*TRAIN, "--model", "link-to-link", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert os.readlink(workdir / "link-to-link") == "link"
    assert os.readlink(workdir / "link") == "models/current"
    target = workdir / "models" / "current"
    assert not target.is_symlink()
    assert np.array_equal(joblib.load(target).z_, joblib.load(workdir / "model").z_)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600  # the replaced file's permissions
    assert sorted(os.listdir(workdir / "models")) == ["current"]  # no temporary file left


def test_a_dangling_symlink_gets_its_target_written(workdir):
    os.symlink("out/predictions.txt", workdir / "link")
    (workdir / "out").mkdir()
    args = ["predict", "--model", "model", "train.svm", "--output", "link"]
    assert run_here(*args, cwd=workdir).returncode == 0
    assert (workdir / "link").is_symlink()
    assert (workdir / "out" / "predictions.txt").read_text() == predictions_of(workdir)


def test_a_failed_write_through_a_symlink_leaves_link_and_target(workdir):
    (workdir / "target").write_text("the previous predictions\n")
    os.symlink("target", workdir / "link")
    bad = workdir / "bad.svm"
    write(bad, A9A_HEAD[:5] + [b"-1 4:1 6:x\n"])
    args = ["predict", "--model", "model", "bad.svm", "--output", "link"]
    result = run_here(*args, cwd=workdir)
    assert result.returncode == 1
    assert os.readlink(workdir / "link") == "target"
    assert (workdir / "target").read_text() == "the previous predictions\n"
    assert sorted(os.listdir(workdir)) == ["bad.svm", "link", "model", "target", "train.svm"]


def test_dev_null_takes_a_model_and_predictions_and_stays_a_device(workdir):
    assert run_here(*TRAIN, "--model", "/dev/null", cwd=workdir).returncode == 0
    args = ["predict", "--model", "model", "train.svm", "--output", "/dev/null"]
    assert run_here(*args, cwd=workdir).returncode == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_full_device_is_a_clear_error(workdir):
    result = run_here(*TRAIN, "--model", "/dev/full", cwd=workdir)
    assert result.returncode == 1
    assert result.stderr == "skftrl: error: /dev/full: cannot write: No space left on device\n"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_predictions_to_a_terminal_are_written_to_it(workdir):
    controller, terminal = os.openpty()
    try:
        name = os.ttyname(terminal)
        args = ["predict", "--model", "model", "train.svm", "--output", name]
        assert run_here(*args, cwd=workdir).returncode == 0
        assert stat.S_ISCHR(os.stat(name).st_mode)
        expected = predictions_of(workdir)
        shown = b""
        while len(shown.replace(b"\r\n", b"\n")) < len(expected):
            shown += os.read(controller, 65536)
        assert shown.replace(b"\r\n", b"\n").decode() == expected
    finally:
        os.close(terminal)
        os.close(controller)


def test_dev_stdout_writes_to_the_pipe_or_file_it_is(workdir):
    expected = predictions_of(workdir)
    args = ["predict", "--model", "model", "train.svm", "--output", "/dev/stdout"]
    piped = subprocess.run(
        command(*args), capture_output=True, text=True, cwd=workdir, env=environment()
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == expected
    # Redirected to a file, as `> out.txt` does: that file, not a new one.
    with open(workdir / "out.txt", "w") as out:
        out.write("a first line of the shell's\n")
        out.flush()
        inode = os.fstat(out.fileno()).st_ino
        subprocess.run(command(*args), stdout=out, check=True, cwd=workdir, env=environment())
    assert os.stat(workdir / "out.txt").st_ino == inode
    assert (workdir / "out.txt").read_text() == expected  # opened for writing, as tee does


def test_a_directory_is_refused(workdir):
    (workdir / "directory").mkdir()
    result = run_here(*TRAIN, "--model", "directory", cwd=workdir)
    assert result.returncode == 1
    assert result.stderr == "skftrl: error: directory: cannot write: Is a directory\n"


# ------------------------------------------------- the options of a continued model
def continued(workdir, *options):
    return run_here(*TRAIN[:2], "-i", "model", "--model", "continued", *options, cwd=workdir)


@pytest.mark.parametrize(
    "options, message",
    [
        (
            ["--n-features", 200],
            "--n-features 200 conflicts with --initial-model model, which reads LIBSVM, "
            "123 features (indices from 1)",
        ),
        (
            ["--hash-bits", 7],
            "--hash-bits 7 conflicts with --initial-model model, which reads LIBSVM, "
            "123 features (indices from 1)",
        ),
        (
            ["--zero-based"],
            "--zero-based conflicts with --initial-model model, which reads LIBSVM, "
            "123 features (indices from 1)",
        ),
        (
            ["--classes", "0,1"],
            "--classes 0,1 conflicts with --initial-model model, whose classes are -1, 1",
        ),
    ],
    ids=["n-features", "hash-bits", "zero-based", "classes"],
)
def test_continuing_refuses_options_that_are_not_the_models(workdir, options, message):
    result = continued(workdir, *options)
    assert result.returncode == 2
    assert result.stderr.startswith(f"skftrl: error: {message}"), result.stderr
    assert not (workdir / "continued").exists()


@pytest.mark.parametrize(
    "options",
    [[], ["--n-features", 123], ["--classes=-1,1"], ["--classes=1.0,-1"]],
    ids=["none", "n-features", "classes", "classes-reordered"],
)
def test_continuing_takes_options_that_are_the_models(workdir, options):
    result = continued(workdir, *options)
    assert result.returncode == 0, result.stderr
    model = joblib.load(workdir / "continued")
    assert model.n_features_in_ == 123 and model.classes_.tolist() == [-1.0, 1.0]


def test_continuing_a_hashed_model(workdir):
    args = ["train", "train.svm", "--model", "hashed", "--hash-bits", 10]
    assert run_here(*args, cwd=workdir).returncode == 0
    again = ["train", "train.svm", "-i", "hashed", "--model", "continued"]
    assert run_here(*again, "--hash-bits", 10, "--zero-based", cwd=workdir).returncode == 0
    for options in (["--hash-bits", 11], ["--n-features", 1024]):
        result = run_here(*again, *options, cwd=workdir)
        assert result.returncode == 2
        assert "which reads LIBSVM, indices hashed into 2**10 features" in result.stderr


def test_continuing_a_csv_model(tmp_path):
    write(tmp_path / "train.csv", CLICK_LINES)
    args = ["train", "train.csv", "--label-column", "clicked", "--model", "model"]
    assert run_here(*args, cwd=tmp_path).returncode == 0
    again = ["train", "train.csv", "-i", "model", "--model", "continued"]
    agreeing = run_here(*again, "--hash-bits", 20, "--classes", "yes,no", cwd=tmp_path)
    assert agreeing.returncode == 0, agreeing.stderr
    for options, message in [
        (["--hash-bits", 18], "--hash-bits 18 conflicts with --initial-model model, which reads "),
        (["--classes", "yes,maybe"], "whose classes are no, yes"),
    ]:
        result = run_here(*again, *options, cwd=tmp_path)
        assert result.returncode == 2
        assert message in result.stderr


@pytest.mark.parametrize("kind", ["csv", "vw"])
@pytest.mark.parametrize("data", ["-", "more.txt"], ids=["stdin", "unknown suffix"])
def test_continuing_reads_a_stream_or_an_unnamed_format_as_the_model_does(
    tmp_path, monkeypatch, kind, data
):
    import io
    import sys

    lines = CLICK_LINES if kind == "csv" else [b"1 |a x y\n", b"-1 |a z\n", b"1 |b x\n"] * 20
    options = ["--label-column", "clicked"] if kind == "csv" else []
    write(tmp_path / f"train.{kind}", lines)
    first = run_here("train", f"train.{kind}", *options, "--model", "model", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    # The reference: the same rows, in a file whose name says their format.
    named = run_here("train", f"train.{kind}", "-i", "model", "--model", "named", cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    write(tmp_path / "more.txt", lines)
    data_bytes = (tmp_path / "more.txt").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data_bytes)))
    result = run_here("train", data, "-i", "model", "--model", "continued", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_same_state(joblib.load(tmp_path / "continued"), joblib.load(tmp_path / "named"))


def test_continuing_a_model_made_in_python(tmp_path):
    X = np.random.RandomState(0).rand(20, 5)
    y = np.arange(20) % 2
    joblib.dump(FTRLClassifier().fit(X, y), tmp_path / "model")
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=True)
    again = ["train", "train.svm", "-i", "model", "--model", "continued"]
    assert run_here(*again, "--zero-based", "--n-features", 5, cwd=tmp_path).returncode == 0
    assert run_here(*again, "--zero-based", "--n-features", 6, cwd=tmp_path).returncode == 2


@pytest.mark.parametrize("cache", [[], ["--no-cache"]])
def test_zero_based_reads_a_file_without_index_0_from_0(tmp_path, cache):
    # a9a's indices start at 1: read from 0, the model needs a column more
    # than their largest, as load_svmlight_file(zero_based=True) reads them.
    write(tmp_path / "a.svm", A9A_HEAD)
    result = run_here("train", "a.svm", "--zero-based", *cache, "--model", "m", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    model = joblib.load(tmp_path / "m")
    X, y = load_svmlight_file(str(tmp_path / "a.svm"), zero_based=True)
    largest = max(int(pair.split(b":")[0]) for line in A9A_HEAD for pair in line.split()[1:])
    assert model.n_features_in_ == X.shape[1] == largest + 1
    assert_same_state(model, FTRLClassifier().partial_fit(X, y, classes=[-1, 1]))


# ------------------------------------------------------------ what a run prints
def test_a_huge_loss_prints_in_scientific_notation(tmp_path):
    rng = np.random.RandomState(0)
    X, y = rng.rand(50, 4), 1e60 * rng.rand(50)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"))
    args = ["train", "train.svm", "--task", "regress", "--model", "model", "--test", "train.svm"]
    trained = run_here(*args, "--holdout-period", 5, cwd=tmp_path)
    tested = run_here("test", "--model", "model", "train.svm", cwd=tmp_path)
    for result in (trained, tested):
        assert result.returncode == 0, result.stderr
        assert re.search(r"\d{12}", result.stdout) is None, result.stdout
    losses = re.findall(r"progressive squared_error loss ([^\s,]+)", trained.stdout)
    assert losses and all(re.fullmatch(r"\d\.\d{4}e\+1[12]\d", loss) for loss in losses)
    rmse = float(re.search(r"RMSE: (\S+)", tested.stdout).group(1))
    expected = np.sqrt(np.mean((joblib.load(tmp_path / "model").predict(X) - y) ** 2))
    assert rmse == pytest.approx(expected, rel=1e-4)


def test_ordinary_losses_keep_their_four_decimals(workdir):
    result = continued(workdir)
    assert re.search(r"progressive log loss 0\.\d{4}\n", result.stdout), result.stdout


def test_a_model_fitted_on_a_dataframe_predicts_without_a_feature_name_warning(tmp_path):
    X = pd.DataFrame(np.random.RandomState(0).rand(30, 3), columns=["a", "b", "c"])
    y = np.arange(30) % 2
    joblib.dump(FTRLClassifier().fit(X, y), tmp_path / "model")
    dump_svmlight_file(X.to_numpy(), y, str(tmp_path / "data.svm"), zero_based=False)
    runs = [
        ["predict", "--model", "model", "data.svm"],
        ["test", "--model", "model", "data.svm"],
        ["train", "data.svm", "-i", "model", "--model", "continued"],
    ]
    for args in runs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run_here(*args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert [str(warning.message) for warning in caught] == []
    predicted = read_numbers(run_here(*runs[0], cwd=tmp_path).stdout)[:, 0]
    assert np.allclose(predicted, joblib.load(tmp_path / "model").predict_proba(X)[:, 1])


# ------------------------------------------------------------- damaged input
@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_damaged_compressed_file_is_one_line_naming_it(tmp_path, suffix):
    import bz2
    import gzip
    import lzma

    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    data = bytearray(compress(b"".join(A9A_HEAD)))
    data[len(data) // 2 : len(data) // 2 + 8] = b"\xff" * 8
    (tmp_path / f"train.svm{suffix}").write_bytes(bytes(data))
    result = run_here("train", f"train.svm{suffix}", "--n-features", 123, "m", cwd=tmp_path)
    assert result.returncode == 1
    assert re.fullmatch(
        rf"skftrl: error: train\.svm\{suffix}: the \w+ data is damaged \(.+\)\n", result.stderr
    ), result.stderr
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------- Parquet files
@pytest.fixture
def nested_parquet(tmp_path):
    """A Parquet file with a column of lists and one of structs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "y": [0, 1, 0, 1] * 5,
            "a": [1.5, 2.5, 3.5, 0.5] * 5,
            "tags": [["x"], ["y", "z"], [], None] * 5,
            "place": [{"lat": 1.0}, {"lat": 2.0}, None, {"lat": 3.0}] * 5,
        }
    )
    pq.write_table(table, tmp_path / "nested.parquet")
    pq.write_table(table.slice(0, 0), tmp_path / "empty.parquet")
    return tmp_path


@needs_readers_extra
def test_a_parquet_column_of_lists_or_structs_is_refused_by_name(nested_parquet):
    train = ["train", "nested.parquet", "m", "--label-column", "y"]
    result = run_here(*train, cwd=nested_parquet)
    assert result.returncode == 1
    assert re.fullmatch(
        r"skftrl: error: nested\.parquet: the columns 'tags' \(list<.*>\) and 'place' "
        r"\(struct<.*>\) hold neither numbers nor text: leave them out with "
        r"--ignore tags,place\n",
        result.stderr,
    ), result.stderr
    left_out = run_here(*train, "--ignore", "tags,place", cwd=nested_parquet)
    assert left_out.returncode == 0, left_out.stderr
    assert joblib.load(nested_parquet / "m").input_spec_["features"] == ["a"]


@needs_readers_extra
@pytest.mark.parametrize("given", [[], ["--classes", "0,1"]])
def test_a_parquet_file_without_rows_has_no_data_rows(nested_parquet, given):
    train = ["train", "empty.parquet", "m", "--label-column", "y", "--ignore", "tags,place"]
    result = run_here(*train, *given, cwd=nested_parquet)
    assert (result.returncode, result.stderr) == (
        1,
        "skftrl: error: empty.parquet: no data rows\n",
    )


# ------------------------------------------- what a CSV run says of its columns
def id_table(tmp_path, rows=300):
    """A click table whose first column is a row id, as Avazu's, written as CSV."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": [f"r{i:05d}" for i in range(rows)],
            "clicked": rng.integers(0, 2, rows),
            "site": rng.choice(["news", "shop", "mail"], rows),
            "app": rng.choice(["a1", "a2"], rows),
            "price": rng.random(rows).round(3),
        }
    )
    frame.to_csv(tmp_path / "clicks.csv", index=False)
    return frame


@pytest.fixture(params=["pyarrow", "python"])
def csv_parser(request, monkeypatch):
    """Each CSV parser: pyarrow's, and the csv module's."""
    import functools

    import skftrl._cli._column_warnings as cli_warnings
    import skftrl._cli._input as cli_input

    if request.param == "python":
        opener = functools.partial(cli_input.open_csv_input, parser="python")
        monkeypatch.setattr(cli_input, "open_csv_input", opener)
        monkeypatch.setattr(cli_warnings, "open_csv_input", opener)
    return request.param


def test_a_categorical_column_of_distinct_values_is_named_as_an_id(tmp_path, csv_parser):
    id_table(tmp_path)
    result = run_here("train", "clicks.csv", "m", "--label-column", "clicked", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, result.stderr
    assert "'id' holds a different value in 300 of its first 300 rows" in warnings[0]
    assert "--ignore id" in warnings[0] and "--id-column id" in warnings[0]
    # The summary names the categorical columns.
    assert "3 categorical columns" in result.stdout
    assert "(categorical: id, site, app)" in result.stdout
    ignored = run_here(
        "train", "clicks.csv", "m", "--label-column", "clicked", "--ignore", "id", cwd=tmp_path
    )
    assert ignored.returncode == 0 and "warning" not in ignored.stderr, ignored.stderr
    assert "(categorical: site, app)" in ignored.stdout


@needs_readers_extra
def test_a_parquet_column_of_distinct_values_is_named_as_an_id(tmp_path):
    id_table(tmp_path).to_parquet(tmp_path / "clicks.parquet")
    result = run_here("train", "clicks.parquet", "m", "--label-column", "clicked", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "'id' holds a different value in 300 of its first 300 rows" in result.stderr
    assert result.stderr.count("warning") == 1, result.stderr


# ---------------------------------------- an FM's interactions, by column
def test_inspect_leaves_out_pairs_of_values_of_one_column(tmp_path):
    rng = np.random.default_rng(1)
    rows = 400
    frame = pd.DataFrame(
        {
            "site": rng.choice([f"s{i}" for i in range(5)], rows),
            "app": rng.choice([f"a{i}" for i in range(4)], rows),
            "clicked": rng.integers(0, 2, rows),
        }
    )
    frame.to_csv(tmp_path / "clicks.csv", index=False)
    train = run_here(
        "train", "clicks.csv", "m", "--label-column", "clicked", "--factors", "2", cwd=tmp_path
    )
    assert train.returncode == 0, train.stderr
    out = run_here("inspect", "m", "--top", "1000", cwd=tmp_path).stdout
    pairs = re.findall(r"^ +[-+][0-9.]+  (\S+) x (\S+)$", out, re.MULTILINE)
    # Every value of each column is learned: 5 x 4 pairs of a site and an app,
    # none of two sites nor of two apps (no row holds both).
    assert sorted(tuple(sorted((a, b))) for a, b in pairs) == sorted(
        (f"app=a{j}", f"site=s{i}") for i in range(5) for j in range(4)
    )
    assert "(20 of 20 pairs of learned features" in out


# ---------------------------------------------- a scan's time and compiling
@needs_numba
def test_a_scan_that_compiles_says_how_long_compiling_took(tmp_path, monkeypatch):
    import numba

    import skftrl._cli._input as cli_input

    write(tmp_path / "clicks.vw", [b"1 |u a b\n", b"-1 |u c\n"] * 50)
    scan = cli_input.vw_input

    def compiling_scan(*args):
        # A function new to numba: compiled during the scan, never cached.
        numba.njit(lambda x: x + 1)(1)
        return scan(*args)

    monkeypatch.setattr(cli_input, "vw_input", compiling_scan)
    first = run_here("train", "clicks.vw", "m", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    found = re.search(
        r"scanned clicks.vw in (\S+) s \(of which numba compiling (\S+) s\): ", first.stdout
    )
    assert found, first.stdout
    assert 0 < float(found[2]) <= float(found[1])
    monkeypatch.setattr(cli_input, "vw_input", scan)
    second = run_here("train", "clicks.vw", "m", cwd=tmp_path)
    assert re.search(r"^scanned clicks.vw in \S+ s: 100 rows", second.stdout, re.MULTILINE)
