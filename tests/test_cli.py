"""The command line, driven in a subprocess as a user runs it."""

import re
import subprocess
import sys


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "skftrl", *args], capture_output=True, text=True, timeout=300
    )


def test_demo_trains_on_the_shipped_data_and_reaches_the_bar(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "skftrl", "demo"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "progressive log loss" in out
    held_out = float(re.search(r"held-out log loss \(a9a.t\): ([0-9.]+)", out).group(1))
    auc = float(re.search(r"held-out AUC \(a9a.t\): +([0-9.]+)", out).group(1))
    nonzero, total = map(int, re.search(r"non-zero weights: +(\d+) of (\d+)", out).groups())
    assert held_out <= 0.3245
    assert auc >= 0.902
    assert 0 < nonzero < total == 123
    assert re.search(r"training speed: +[0-9,]+ rows/s", out)


def test_bad_option_fails_with_usage():
    result = run("demo", "--learning-rate", "fast")
    assert result.returncode == 2
    assert "invalid float value: 'fast'" in result.stderr


def test_invalid_hyper_parameter_is_named():
    result = run("demo", "--learning-rate", "-1")
    assert result.returncode == 2
    assert result.stderr.startswith("skftrl: error: The 'learning_rate' parameter")
    assert "Traceback" not in result.stderr
