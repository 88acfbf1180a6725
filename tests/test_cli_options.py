"""The command line's options as a user coming from Vowpal Wabbit types them.

Each of Vowpal Wabbit's option names that skftrl accepts gives what the
skftrl spelling gives (the same model, ``==``, or the same output); the
model file is taken positionally or by a flag in every command; ``predict``
writes probabilities, labels or margins, and a CSV row's id; indices beyond
a model's width are an error unless left out on request; ``--classes -1,1``
reads as written. Outputs are checked against the estimators' own
``predict_proba``, ``predict`` and ``decision_function`` on the same rows, and
deviances against scikit-learn's ``mean_poisson_deviance``.
"""

import argparse
import csv
import io
import re
import subprocess

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.metrics import mean_poisson_deviance
from test_cli import (
    CLICK_LINES,
    assert_same_state,
    chunked_partial_fit,
    command,
    environment,
    read_numbers,
    run,
    run_here,
    shipped_lines,
    write,
)

from skftrl import FMClassifier, FTRLClassifier, FTRLRegressor
from skftrl._cli._parser import build_parser

A9A = shipped_lines("a9a.gz")[:1500]


def trained(tmp_path, *args, name="m"):
    """The model ``skftrl train *args`` writes to ``name`` (in ``tmp_path``), and its output."""
    result = run_here("train", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return joblib.load(tmp_path / name), result.stdout


@pytest.fixture
def a9a_dir(tmp_path):
    write(tmp_path / "a.svm", A9A)
    write(tmp_path / "b.svm", shipped_lines("a9a.gz")[1500:2500])
    return tmp_path


# ------------------------------------------------------ VW's option names
# (Vowpal Wabbit's spelling, skftrl's), each after "train a.svm" and with a model file "m".
TRAIN_ALIASES = {
    "-d, -f": (["-d", "a.svm", "-f", "m"], ["a.svm", "--model", "m"]),
    "--data, --final_regressor": (
        ["--data", "a.svm", "--final_regressor", "m"],
        ["a.svm", "--model", "m"],
    ),
    "-b": (["a.svm", "m", "-b", "10"], ["a.svm", "m", "--hash-bits", "10"]),
    "--bit_precision": (
        ["a.svm", "m", "--bit_precision", "10"],
        ["a.svm", "m", "--hash-bits", "10"],
    ),
    "--ftrl_alpha, --ftrl_beta": (
        ["a.svm", "m", "--ftrl_alpha", "0.3", "--ftrl_beta", "0.5"],
        ["a.svm", "m", "--learning-rate", "0.3", "--beta", "0.5"],
    ),
    "--holdout_period, --early_terminate": (
        ["a.svm", "m", "--passes", "4", "--holdout_period", "5", "--early_terminate", "1"],
        ["a.svm", "m", "--passes", "4", "--holdout-period", "5", "--n-iter-no-change", "1"],
    ),
    "--loss_function logistic": (
        ["a.svm", "m", "--loss_function", "logistic"],
        ["a.svm", "m", "--task", "classify"],
    ),
    "--loss_function squared": (
        ["a.svm", "m", "--loss_function", "squared"],
        ["a.svm", "m", "--task", "regress", "--loss", "squared_error"],
    ),
    "--loss_function poisson": (
        ["b.svm", "m", "--loss_function", "poisson"],
        ["b.svm", "m", "--task", "regress", "--loss", "poisson"],
    ),
    "--random_seed": (
        ["a.svm", "m", "--factors", "2", "--random_seed", "3"],
        ["a.svm", "m", "--factors", "2", "--random-state", "3"],
    ),
    "--noconstant": (["a.svm", "m", "--noconstant"], ["a.svm", "m", "--no-intercept"]),
    "VW's options that are always so here": (
        ["a.svm", "m", "--ftrl", "-c", "-k", "--save_resume", "--holdout_off", "--passes", "2"],
        ["a.svm", "m", "--passes", "2"],
    ),
    "--cache, --kill_cache": (
        ["a.svm", "m", "--cache", "--kill_cache", "--passes", "2"],
        ["a.svm", "m", "--passes", "2"],
    ),
}


@pytest.mark.parametrize("case", TRAIN_ALIASES)
def test_vw_option_names_train_the_same_model(a9a_dir, case):
    vw_args, skftrl_args = TRAIN_ALIASES[case]
    if case == "--loss_function poisson":  # counts: the labels of b.svm made non-negative
        write(a9a_dir / "b.svm", [b"3" + line[2:] for line in shipped_lines("a9a.gz")[:500]])
    vw_model, vw_out = trained(a9a_dir, *vw_args)
    (a9a_dir / "m").unlink()
    model, out = trained(a9a_dir, *skftrl_args)
    assert vw_model.get_params() == model.get_params()
    assert_same_state(vw_model, model)
    assert without_times(vw_out) == without_times(out)


def without_times(out):
    """What a run printed, without its durations and speeds (nor what says
    how long numba compiled, which only a run that compiles prints: a line,
    and a note of the scan's)."""
    out = re.sub(r"^numba compiled .*\n", "", out, flags=re.MULTILINE)
    out = re.sub(r" \(of which numba compiling [^)]*\)", "", out)
    return re.sub(r" in (< )?\S+ s\b( \([0-9,]+ rows/s)?", "", out)


def test_vw_options_set_what_they_say(a9a_dir):
    """The aliases above are not equal by doing nothing: each sets its parameter."""
    model, _ = trained(
        a9a_dir,
        "-d",
        "a.svm",
        "-f",
        "m",
        "--ftrl_alpha",
        "0.3",
        "--ftrl_beta",
        "0.5",
        "--noconstant",
        "-b",
        "10",
    )
    assert (model.learning_rate, model.beta, model.fit_intercept) == (0.3, 0.5, False)
    assert model.n_features_in_ == 2**10 and np.all(model.intercept_ == 0)
    # Hashed LIBSVM indices are their own columns, modulo 2**10: index i in column i.
    X, y = load_svmlight_file(str(a9a_dir / "a.svm"), n_features=124, zero_based=True)
    reference = FTRLClassifier(learning_rate=0.3, beta=0.5, fit_intercept=False)
    X_hashed = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], 2**10))
    chunked_partial_fit(reference, X_hashed, y, 10_000, classes=[-1, 1])
    assert_same_state(model, reference)
    regressor, _ = trained(a9a_dir, "a.svm", "m", "--loss_function", "squared")
    assert isinstance(regressor, FTRLRegressor) and regressor.loss == "squared_error"
    fm, _ = trained(a9a_dir, "a.svm", "m", "--factors", "2", "--random_seed", "3")
    assert isinstance(fm, FMClassifier) and fm.random_state == 3


def test_continuing_with_vw_names_equals_initial_model(a9a_dir):
    trained(a9a_dir, "a.svm", "first", "--n-features", "123", name="first")
    vw_model, _ = trained(a9a_dir, "-d", "b.svm", "-i", "first", "-f", "m")
    (a9a_dir / "m").unlink()
    long_model, _ = trained(a9a_dir, "b.svm", "--initial_regressor", "first", "m")
    (a9a_dir / "m").unlink()
    model, _ = trained(a9a_dir, "b.svm", "--initial-model", "first", "--model", "m")
    assert_same_state(vw_model, model)
    assert_same_state(long_model, model)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-t"], "-t (test only): skftrl train always learns; use skftrl test DATA MODEL"),
        (["--holdout_off", "--holdout-period", "3"], "--holdout_off and --holdout-period"),
        (["-c", "--no-cache"], "-c (--cache) and --no-cache: one or the other"),
        (["--loss_function", "logistic", "--task", "regress"], "is --task classify"),
        (["--loss_function", "poisson", "--loss", "huber"], "is --loss poisson"),
        (["--loss_function", "hinge"], "'hinge' has no counterpart here"),
    ],
)
def test_vw_options_that_cannot_apply_are_refused(a9a_dir, args, expected):
    result = run_here("train", "a.svm", "m", *args, cwd=a9a_dir)
    assert result.returncode == 2
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert not (a9a_dir / "m").exists()


# ----------------------------------------------------- the model file
def test_every_command_takes_the_model_file_positionally_or_by_flag(a9a_dir):
    by_flag, _ = trained(
        a9a_dir, "a.svm", "--model", "flag.joblib", "--n-features", "123", name="flag.joblib"
    )
    # Positionally, with options before, between and after the files.
    positional, _ = trained(
        a9a_dir,
        "--l1",
        "0",
        "a.svm",
        "--quiet",
        "pos.joblib",
        "--chunk-size",
        "10000",
        "--n-features",
        "123",
        name="pos.joblib",
    )
    assert_same_state(positional, by_flag)
    spellings = {
        "test": [
            ["b.svm", "pos.joblib"],
            ["b.svm", "--model", "pos.joblib"],
            ["b.svm", "-i", "pos.joblib"],
            ["-t", "-d", "b.svm", "-i", "pos.joblib"],
            ["--data", "b.svm", "pos.joblib"],
        ],
        "predict": [
            ["b.svm", "pos.joblib"],
            ["--model", "pos.joblib", "b.svm"],
            ["-t", "-d", "b.svm", "--initial_regressor", "pos.joblib"],
        ],
        "inspect": [["pos.joblib"], ["--model", "pos.joblib"], ["-i", "pos.joblib"]],
    }
    for name, variants in spellings.items():
        outputs = set()
        for args in variants:
            result = run_here(name, *args, cwd=a9a_dir)
            assert result.returncode == 0, (args, result.stderr)
            outputs.add(result.stdout)
        assert len(outputs) == 1, name
    X, _ = load_svmlight_file(str(a9a_dir / "b.svm"), n_features=123)
    result = run_here("predict", "b.svm", "pos.joblib", cwd=a9a_dir)
    assert np.array_equal(read_numbers(result.stdout)[:, 0], by_flag.predict_proba(X)[:, 1])


def test_predictions_file_by_every_spelling(a9a_dir):
    trained(a9a_dir, "a.svm", "m", "--n-features", "123")
    written = set()
    for flag in ("--output", "-p", "--predictions"):
        result = run_here("predict", "--testonly", "b.svm", "m", flag, f"out{flag}", cwd=a9a_dir)
        assert result.returncode == 0 and result.stdout == "", result.stderr
        written.add((a9a_dir / f"out{flag}").read_text())
    assert written == {run_here("predict", "b.svm", "m", cwd=a9a_dir).stdout}


def test_inspect_model_positionally_in_a_subprocess(a9a_dir):
    trained(a9a_dir, "a.svm", "m")
    result = run("inspect", "m", cwd=a9a_dir)
    assert result.returncode == 0, result.stderr
    assert "estimator:        FTRLClassifier" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["train", "a.svm"], "train needs MODEL, the model file to write: after DATA, or "),
        (["train"], "train needs DATA: a file, or - for standard input"),
        (["predict", "a.svm"], "predict needs MODEL, the model file: after DATA, or --model"),
        (["inspect"], "inspect needs MODEL"),
        (["train", "a.svm", "m", "extra"], "unexpected file arguments: extra"),
        (["train", "-d", "a.svm", "m", "--model", "n"], "unexpected file arguments: m"),
        (["inspect", "m", "--model", "m"], "unexpected file arguments: m"),
    ],
)
def test_a_missing_or_extra_file_is_a_usage_error(a9a_dir, args, expected):
    result = run_here(*args, cwd=a9a_dir)
    assert result.returncode == 2
    assert expected in result.stderr and "Traceback" not in result.stderr


def test_an_unknown_option_among_the_files_is_still_refused(a9a_dir):
    result = run_here("train", "a.svm", "m", "--no-such-option", cwd=a9a_dir)
    assert result.returncode == 2
    assert "unrecognized arguments: --no-such-option" in result.stderr


# ------------------------------------------------------ negative classes
@pytest.mark.parametrize(
    ("spelling", "classes"),
    [
        (["--classes", "-1,1"], [-1, 1]),
        (["--classes=-1,1"], [-1, 1]),
        (["--classes", "-1,0,1"], [-1, 0, 1]),
        (["--classes", "-2,-1,1"], [-2, -1, 1]),
    ],
)
def test_negative_classes_read_as_written(a9a_dir, spelling, classes):
    # Every third row of class -1 is of the first class.
    lines = [
        str(classes[0]).encode() + line[2:] if i % 3 == 0 and line.startswith(b"-1") else line
        for i, line in enumerate(A9A)
    ]
    write(a9a_dir / "c.svm", lines)
    model, _ = trained(a9a_dir, "c.svm", "m", "--n-features", "123", *spelling)
    assert np.array_equal(model.classes_, classes)
    X, y = load_svmlight_file(str(a9a_dir / "c.svm"), n_features=123)
    reference = chunked_partial_fit(FTRLClassifier(), X, y, 10_000, classes=classes)
    assert_same_state(model, reference)


# ------------------------------------------------------ predict's outputs
@pytest.fixture
def models(a9a_dir):
    """A binary, a multiclass, a squared-error and a Poisson model of a9a_dir's files."""
    lines = [f"{i % 3} ".encode() + line.split(b" ", 1)[1] for i, line in enumerate(A9A)]
    write(a9a_dir / "three.svm", lines)
    counts = [f"{i % 4} ".encode() + line.split(b" ", 1)[1] for i, line in enumerate(A9A)]
    write(a9a_dir / "counts.svm", counts)
    trained(a9a_dir, "a.svm", "binary", "--n-features", "123", name="binary")
    trained(a9a_dir, "three.svm", "multi", "--n-features", "123", name="multi")
    trained(
        a9a_dir,
        "counts.svm",
        "squared",
        "--task",
        "regress",
        "--n-features",
        "123",
        name="squared",
    )
    trained(
        a9a_dir,
        "counts.svm",
        "poisson",
        "--loss_function",
        "poisson",
        "--n-features",
        "123",
        name="poisson",
    )
    return a9a_dir


def predicted(directory, model, *args):
    result = run_here("predict", "b.svm", model, *args, cwd=directory)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("model_name", ["binary", "multi"])
def test_predict_output_types_of_a_classifier(models, model_name):
    model = joblib.load(models / model_name)
    X, _ = load_svmlight_file(str(models / "b.svm"), n_features=123)
    proba = model.predict_proba(X)
    expected_proba = proba[:, 1:] if proba.shape[1] == 2 else proba
    for args in ([], ["--output-type", "probability"], ["--link", "logistic"]):
        assert np.array_equal(read_numbers(predicted(models, model_name, *args)), expected_proba)
    margins = model.decision_function(X).reshape(X.shape[0], -1)
    for args in (["--output-type", "raw"], ["--link", "identity"]):
        assert np.array_equal(read_numbers(predicted(models, model_name, *args)), margins)
    labels = [f"{label:g}" for label in model.predict(X)]
    for args in (["--output-type", "label"], ["--binary"]):
        assert predicted(models, model_name, *args).splitlines() == labels


def test_predict_output_types_of_a_regressor(models):
    X, _ = load_svmlight_file(str(models / "b.svm"), n_features=123)
    squared, poisson = joblib.load(models / "squared"), joblib.load(models / "poisson")
    for args in ([], ["--output-type", "label"], ["--output-type", "raw"]):
        assert np.array_equal(
            read_numbers(predicted(models, "squared", *args))[:, 0], squared.predict(X)
        )
    assert np.array_equal(read_numbers(predicted(models, "poisson"))[:, 0], poisson.predict(X))
    raw = read_numbers(predicted(models, "poisson", "--output-type", "raw"))[:, 0]
    assert np.array_equal(raw, np.log(poisson.predict(X)))
    result = run_here("predict", "b.svm", "squared", "--output-type", "probability", cwd=models)
    assert result.returncode == 2 and "is a regressor" in result.stderr


def test_conflicting_output_types_are_refused(models):
    result = run_here("predict", "b.svm", "binary", "--link", "identity", "--binary", cwd=models)
    assert result.returncode == 2
    assert "--link and --binary ask for different outputs" in result.stderr


# -------------------------------------------------------- a CSV row's id
def test_predict_writes_each_rows_id_from_a_csv_column(tmp_path):
    write(tmp_path / "train.csv", CLICK_LINES)
    trained(tmp_path, "train.csv", "m", "--label-column", "clicked", "--ignore", "city")
    header, *rows = CLICK_LINES
    # The id column is one the model was not trained on, with the ignored one.
    ids = [f"row-{i}" for i in range(len(rows))]
    lines = [f"id,{header}"] + [f"{row_id},{row}" for row_id, row in zip(ids, rows)]
    write(tmp_path / "new.csv", lines)
    result = run_here("predict", "new.csv", "m", "--id-column", "id", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    plain = run_here("predict", "train.csv", "m", cwd=tmp_path).stdout.splitlines()
    assert result.stdout.splitlines() == [f"{p} {row_id}" for p, row_id in zip(plain, ids)]
    labelled = run_here(
        "predict", "new.csv", "m", "--id-column", "id", "--output-type", "label", cwd=tmp_path
    )
    assert [line.split()[1] for line in labelled.stdout.splitlines()] == ids
    assert {line.split()[0] for line in labelled.stdout.splitlines()} <= {"yes", "no"}


def test_an_id_holding_a_line_end_stays_on_its_rows_line(tmp_path):
    write(tmp_path / "train.csv", CLICK_LINES)
    trained(tmp_path, "train.csv", "m", "--label-column", "clicked")
    header, *rows = CLICK_LINES
    ids = ["a", "b\nc", "d\r\ne", "f\rg"]
    quoted = ['"' + row_id + '"' for row_id in ids]
    lines = [f"id,{header}"] + [f"{q},{row}" for q, row in zip(quoted, rows)]
    write(tmp_path / "new.csv", lines)
    text = "".join(lines)
    assert [row[0] for row in csv.reader(io.StringIO(text, newline=""))][1:] == ids
    result = run_here("predict", "new.csv", "m", "--id-column", "id", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    plain = run_here("predict", "train.csv", "m", cwd=tmp_path).stdout.split("\n")[: len(ids)]
    escaped = ["a", "b\\nc", "d\\r\\ne", "f\\rg"]
    assert result.stdout.split("\n") == [f"{p} {e}" for p, e in zip(plain, escaped)] + [""]


def test_id_column_errors(tmp_path, a9a_dir):
    write(tmp_path / "train.csv", CLICK_LINES)
    trained(tmp_path, "train.csv", "m", "--label-column", "clicked")
    result = run_here("predict", "train.csv", "m", "--id-column", "nope", cwd=tmp_path)
    assert result.returncode == 1
    assert "train.csv:1: no id column 'nope' in the header" in result.stderr
    trained(a9a_dir, "a.svm", "m")
    result = run_here("predict", "b.svm", "m", "--id-column", "id", cwd=a9a_dir)
    assert result.returncode == 2 and "LIBSVM rows have no id column" in result.stderr


# ---------------------------------------------- indices beyond the width
def test_drop_extra_features_leaves_out_indices_beyond_the_width(a9a_dir):
    result = run_here("train", "a.svm", "m", "--n-features", "100", cwd=a9a_dir)
    assert result.returncode == 1 and "is beyond --n-features 100" in result.stderr
    model, _ = trained(a9a_dir, "a.svm", "m", "--n-features", "100", "--drop-extra-features")
    X, y = load_svmlight_file(str(a9a_dir / "a.svm"), n_features=123)
    reference = chunked_partial_fit(FTRLClassifier(), X[:, :100], y, 10_000, classes=[-1, 1])
    assert_same_state(model, reference)  # training on a fixed width leaves them out too
    result = run_here("predict", "b.svm", "m", cwd=a9a_dir)
    assert result.returncode == 1 and "--drop-extra-features leaves such indices out" in (
        result.stderr
    )
    X_new, y_new = load_svmlight_file(str(a9a_dir / "b.svm"), n_features=123)
    dropped = predicted(a9a_dir, "m", "--drop-extra-features")
    expected = model.predict_proba(X_new[:, :100])[:, 1]
    assert np.array_equal(read_numbers(dropped)[:, 0], expected)
    scores = run_here("test", "b.svm", "m", "--drop-extra-features", cwd=a9a_dir)
    assert scores.returncode == 0 and "rows: 1,000" in scores.stdout
    # Continuing the model on the wider file, and scoring a wider --test file.
    continued, out = trained(
        a9a_dir, "b.svm", "m2", "-i", "m", "--drop-extra-features", "--test", "b.svm", name="m2"
    )
    chunked_partial_fit(reference, X_new[:, :100], y_new, 10_000)
    assert_same_state(continued, reference)
    assert "held-out log loss (b.svm)" in out


def test_drop_extra_features_is_for_libsvm(tmp_path):
    write(tmp_path / "train.csv", CLICK_LINES)
    trained(tmp_path, "train.csv", "m", "--label-column", "clicked")
    result = run_here("predict", "train.csv", "m", "--drop-extra-features", cwd=tmp_path)
    assert result.returncode == 2 and "--drop-extra-features is for LIBSVM models" in (
        result.stderr
    )
    result = run_here(
        "train",
        "train.csv",
        "n",
        "--label-column",
        "clicked",
        "--drop-extra-features",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "are for LIBSVM data" in result.stderr


# ------------------------------------------------------ what runs print
def progressive_poisson_deviance(X, y):
    """Each row's Poisson mean predicted before the row is learned, one row at
    a time, and their mean deviance (independent of the command's sums)."""
    model, means = FTRLRegressor(loss="poisson"), []
    for row in range(X.shape[0]):
        means.append(model.predict(X[row]) if row else np.ones(1))
        model.partial_fit(X[row], y[row : row + 1])
    return mean_poisson_deviance(y, np.concatenate(means))


def test_poisson_runs_report_the_deviance(tmp_path):
    counts = [f"{i % 5} ".encode() + line.split(b" ", 1)[1] for i, line in enumerate(A9A[:600])]
    write(tmp_path / "counts.svm", counts)
    model, out = trained(
        tmp_path,
        "counts.svm",
        "m",
        "--loss_function",
        "poisson",
        "--n-features",
        "123",
        "--chunk-size",
        "100",
    )
    X, y = load_svmlight_file(str(tmp_path / "counts.svm"), n_features=123)
    reported = float(re.search(r"progressive poisson deviance ([0-9.]+)", out).group(1))
    # Printed with 4 decimals; the reference's predictions may differ in the last bits.
    assert reported == pytest.approx(progressive_poisson_deviance(X, y), abs=6e-5)
    result = run_here("test", "counts.svm", "m", cwd=tmp_path)
    expected = mean_poisson_deviance(y, model.predict(X))
    assert f"mean Poisson deviance: {expected:.4f}" in result.stdout
    # The held-out rows' deviance, with the best pass's model.
    model, out = trained(
        tmp_path,
        "counts.svm",
        "m",
        "--loss_function",
        "poisson",
        "--n-features",
        "123",
        "--passes",
        "3",
        "--holdout-period",
        "4",
    )
    held = np.arange(1, X.shape[0] + 1) % 4 == 0
    kept = float(re.search(r"held-out poisson deviance ([0-9.]+)\)", out).group(1))
    assert kept == pytest.approx(mean_poisson_deviance(y[held], model.predict(X[held])), abs=1e-6)
    assert "loss" not in out


def test_durations_have_two_significant_digits(a9a_dir):
    _, out = trained(a9a_dir, "a.svm", "m")
    durations = re.findall(r" in ((?:< )?\S+) s[ :]", out)
    assert len(durations) == 2, out  # the scan and the training
    for text in durations:
        assert re.fullmatch(r"0\.0*[1-9][0-9]|[1-9]\.[0-9]|[1-9][0-9]+|< 0\.001", text), text


def test_every_option_of_every_command_has_help():
    parser = build_parser()
    commands = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    for name, subcommand in commands.choices.items():
        assert subcommand.description, name
        for action in subcommand._actions:
            assert action.help, (name, action.option_strings or action.dest)
    help_text = io.StringIO()
    commands.choices["demo"].print_help(help_text)
    assert "--chunk-size N        rows per partial_fit call" in help_text.getvalue()


# ------------------------------------------- reading while importing
# Three copies of a9a (97,683 rows, 11 MB): several blocks of text and many
# chunks, so that the parsing thread is far ahead of the learning.
A9A_X3 = shipped_lines("a9a.gz") * 3


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        # A value the compiled scan skips: the parse that learns refuses it.
        ("-1 4:1 6:one 20:1\n", "the feature value in '6:one' is not a number"),
        # A form the compiled scan leaves to the parsing scan, which refuses it.
        ("yes 3:1 6:1\n", "the label 'yes' is not a number"),
    ],
)
def test_an_error_late_in_a_large_file_leaves_no_model(tmp_path, bad_line, message):
    lines = list(A9A_X3)
    lines[79_999] = bad_line.encode()
    write(tmp_path / "big.svm", lines)
    (tmp_path / "m").write_bytes(b"the previous model")
    for hints in ([], ["--n-features", "123", "--classes", "-1,1"]):
        result = run_here("train", "big.svm", "m", *hints, cwd=tmp_path)
        assert result.returncode == 1
        assert result.stderr == f"skftrl: error: big.svm:80000: {message}\n"
        assert (tmp_path / "m").read_bytes() == b"the previous model"
        assert sorted(path.name for path in tmp_path.iterdir()) == ["big.svm", "m"]


def test_a_large_file_trains_the_model_of_partial_fit_with_and_without_hints(tmp_path):
    lines = [b"# a comment line\n", *A9A_X3[:50_000], b"\n", *A9A_X3[50_000:]]
    write(tmp_path / "big.svm", lines)
    X, y = load_svmlight_file(str(tmp_path / "big.svm"), n_features=123)
    reference = chunked_partial_fit(FTRLClassifier(l1=1.0), X, y, 10_000, classes=[-1, 1])
    hints = ["--n-features", "123", "--classes", "-1,1"]
    for given in ([], hints[:2], hints[2:], hints):  # the last needs no first pass
        model, out = trained(tmp_path, "big.svm", "m", "--l1", "1", *given)
        assert_same_state(model, reference)
        assert model.loss_curve_ == reference.loss_curve_
        assert model.training_log_[-1]["rows"] == len(A9A_X3)
        assert ("scanned big.svm" in out) == (given != hints)
    # The parsing scan (without the compiled one) finds the same, with its cache.
    lines[10] = b"+1 qid:3 " + lines[10].split(b" ", 1)[1]
    write(tmp_path / "big.svm", lines)
    model, out = trained(tmp_path, "big.svm", "m", "--l1", "1", "--passes", "2")
    chunked_partial_fit(reference, X, y, 10_000)
    assert_same_state(model, reference)


def test_standard_input_of_many_blocks_loses_no_row(tmp_path):
    data = b"".join(A9A_X3)
    result = subprocess.run(
        command("train", "-", "m", "--n-features", 123, "--classes", "-1,1", "--passes", 2),
        input=data,
        capture_output=True,
        cwd=tmp_path,
        env=environment(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    X, y = load_svmlight_file(io.BytesIO(data), n_features=123)
    reference = chunked_partial_fit(FTRLClassifier(), X, y, 10_000, passes=2, classes=[-1, 1])
    model = joblib.load(tmp_path / "m")
    assert_same_state(model, reference)
    assert model.n_samples_seen_ == 2 * len(A9A_X3)


# ------------------------------------------------- a column named --numeric
@pytest.mark.parametrize("labels", [2, 3], ids=["binary, guessed", "three classes, scanned"])
@pytest.mark.parametrize("classes", [False, True], ids=["found", "--classes"])
@pytest.mark.parametrize("where", [5, 42], ids=["first chunk", "later chunk"])
def test_a_numeric_column_keeps_its_kind_or_the_run_fails(tmp_path, labels, classes, where):
    rows = ["y,a,b\n"] + [f"{i % labels},{i % 4},{i * 0.5}\n" for i in range(60)]
    rows[where - 1] = "1,2,n/a?\n"
    write(tmp_path / "d.csv", rows)
    given = ["--classes", ",".join(map(str, range(labels)))] if classes else []
    result = run_here(
        "train", "d.csv", "m", "--label-column", "y", "--numeric", "b", "--chunk-size", 10,
        "--quiet", *given, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert re.search(rf"skftrl: error: d\.csv:{where}: .*'n/a\?'", result.stderr), result.stderr
    assert not (tmp_path / "m").exists()


def test_a_numeric_column_of_whole_numbers_is_read_as_numbers_after_a_scan(tmp_path):
    rows = ["y,a,b\n"] + [f"{i % 3},{i % 4},{i}\n" for i in range(60)]
    write(tmp_path / "d.csv", rows)
    args = ["d.csv", "--label-column", "y", "--numeric", "b", "--chunk-size", 10]
    for name, given in (("scanned", []), ("given", ["--classes", "0,1,2"])):
        model, _ = trained(tmp_path, *args, name, *given, name=name)
        assert model.input_spec_["kinds"] == {"a": "categorical", "b": "numeric"}


@pytest.mark.parametrize("delimiter", ["é", "\0", "ab", '"'])
def test_a_delimiter_neither_parser_takes_is_a_usage_error(tmp_path, delimiter):
    write(tmp_path / "d.csv", ["y,a\n", "1,2\n", "0,3\n"])
    result = run_here(
        "train", "d.csv", "m", "--label-column", "y", "--delimiter", delimiter, cwd=tmp_path
    )
    assert result.returncode == 2
    assert "a line end, ASCII and not NUL" in result.stderr, result.stderr
    assert not (tmp_path / "m").exists()


# ------------------------------------------------- grouped --help
# Every option of train, as its help listed them before they were grouped.
TRAIN_OPTIONS = (
    "-d --data --model -f --final_regressor --initial-model -i --initial_regressor --test "
    "--task --format --classes --label-column --weight-column --delimiter --column-names "
    "--ignore --keep --categorical --numeric --hash-bits -b --bit_precision -q --quadratic "
    "--cubic --interactions --n-features --zero-based --drop-extra-features --chunk-size "
    "--passes --holdout-period --holdout_period --holdout_off --tol --n-iter-no-change "
    "--early_terminate --no-cache --quiet -t --testonly --learning-rate --ftrl_alpha --beta "
    "--ftrl_beta --l1 --l2 --loss --loss_function --epsilon --batch-size --engine "
    "--no-intercept --noconstant --factors --init-stdev --factor-learning-rate --factor-l2 "
    "--random-state --random_seed --ftrl -c --cache -k --kill_cache --save_resume"
).split()
# Where a user looks for each kind of option.
GROUP_OF = {
    "--format": "input",
    "--label-column": "input",
    "--ignore": "input",
    "--hash-bits": "input",
    "--chunk-size": "input",
    "--task": "model",
    "--classes": "model",
    "--factors": "model",
    "-i": "model",
    "--learning-rate": "learning",
    "--l1": "learning",
    "--passes": "learning",
    "--holdout-period": "learning",
    "--quiet": "output",
}


def subcommands():
    parser = build_parser()
    return next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    ).choices


def option_groups(subcommand):
    """``{option string: the first word of its group's title}``."""
    return {
        option: group.title.split(":")[0]
        for group in subcommand._action_groups
        for action in group._group_actions
        for option in action.option_strings
    }


def test_train_help_groups_every_option_in_input_model_learning_and_output():
    train = subcommands()["train"]
    groups = option_groups(train)
    assert set(groups) == set(TRAIN_OPTIONS) | {"-h", "--help"}
    assert {groups[option] for option in TRAIN_OPTIONS} == {"input", "model", "learning", "output"}
    assert {option: groups[option] for option in GROUP_OF} == GROUP_OF
    text = io.StringIO()
    train.print_help(text)
    assert len(text.getvalue().splitlines()) <= 170
    for title in ("input", "model", "learning", "output"):
        assert re.search(rf"^{title}: .*:$", text.getvalue(), re.MULTILINE), title


def test_test_predict_and_inspect_group_the_options_they_share():
    commands = subcommands()
    for name in ("test", "predict"):
        groups = option_groups(commands[name])
        assert groups["-d"] == groups["--zero-based"] == groups["--column-names"] == "input"
        assert groups["--model"] == "model", name
    assert option_groups(commands["predict"])["--output-type"] == "output"
    inspect = option_groups(commands["inspect"])
    assert (inspect["--model"], inspect["--top"], inspect["--all"]) == (
        "model",
        "output",
        "output",
    )


# -------------------------------------------- VW's options with another name
def vw_table_options():
    """The options of Vowpal Wabbit in the first column of the documentation's table."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "cli.rst").read_text()
    table = text[text.index(".. _cli-vw:") :]
    options = set()
    for row in re.findall(r"^   \* - (.*)$", table, re.MULTILINE):
        options.update(re.findall(r"``(-{1,2}[A-Za-z_0-9]+)", row))
    return sorted(options)


def usage_error(*args):
    result = run_here(*args)
    assert result.returncode == 2, result
    return result.stderr


@pytest.mark.parametrize("option", vw_table_options())
def test_every_option_of_the_vw_table_is_accepted_or_named_with_its_equivalent(option):
    commands = ("train", "test", "predict")
    errors = [usage_error(name, "a.svm", "m", option, "1", "--bad-sentinel") for name in commands]
    # Accepted by some command (its value may be refused there), or refused
    # by each with what to write instead.
    unknown = re.compile(rf"unrecognized arguments: (.* )?{re.escape(option)}( |$)", re.MULTILINE)
    hint = f"{option} (Vowpal Wabbit's) is not an option here: "
    accepted = any(not unknown.search(error) and hint not in error for error in errors)
    named = all(hint in error for error in errors)
    assert accepted or named, (option, errors)


def test_oaa_and_readable_model_name_their_equivalents():
    assert "--classes 1,2,...,K" in usage_error("train", "a.svm", "m", "--oaa", "3")
    assert "skftrl inspect MODEL --all" in usage_error(
        "train", "a.svm", "m", "--readable_model", "w.txt"
    )
    assert "skftrl inspect MODEL --all" in usage_error("train", "a.svm", "m", "--invert_hash=w")


def test_inspect_lists_the_settings_the_command_line_sets(a9a_dir):
    trained(a9a_dir, "a.svm", "m", "--factors", "2", "--l1", "0.5")
    out = run_here("inspect", "m", cwd=a9a_dir).stdout
    line = next(line for line in out.splitlines() if line.startswith("hyper-parameters:"))
    listed = dict(item.split("=") for item in line.split(": ", 1)[1].split(", "))
    assert (listed["l1"], listed["n_components"], listed["random_state"]) == ("0.5", "2", "0")
    for unused in ("max_iter", "early_stopping", "validation_fraction", "shuffle", "warm_start"):
        assert unused not in listed, line
    assert "tol" not in listed  # only --holdout-period uses it
    trained(a9a_dir, "a.svm", "m", "--passes", "2", "--holdout-period", "4")
    out = run_here("inspect", "m", cwd=a9a_dir).stdout
    assert "tol=0.0001" in out and "n_iter_no_change=5" in out and "random_state" not in out
