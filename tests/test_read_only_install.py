"""The default engine on a read-only install (system packages, containers with
a read-only root, shared clusters): numba cannot cache its compiled code on
disk, and skftrl must still train and predict with the default engine.

numba caches next to the package (``__pycache__``), in ``NUMBA_CACHE_DIR``, or
in the user's cache directory. The test makes each of these impossible to
create or write for anyone, root included (tests run as root in CI, where
permission bits stop nothing): a regular file stands where each directory
would be. The package is a copy of this checkout, and a subprocess imports it.
"""

import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import skftrl
import skftrl._cli
from conftest import HAS_NUMBA
from skftrl import FTRLClassifier, FTRLRegressor

pytestmark = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")

RNG = np.random.RandomState(0)
X = RNG.normal(size=(40, 5))
Y = (X[:, 0] + 0.5 * RNG.normal(size=40) > 0).astype(int)

# Run in the subprocess: check that no cache location is writable, then train
# and predict through the public API, recording every warning.
SCRIPT = r"""
import contextlib, io, json, os, pickle, sys, tempfile, warnings
import numpy as np

arguments = json.loads(sys.argv[1])
for path in arguments["locations"]:
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        continue
    sys.exit(f"the test's premise fails: {path} is writable")

import skftrl
import skftrl._cli
from skftrl import FTRLClassifier, FTRLRegressor

X, y = np.array(arguments["X"]), np.array(arguments["y"])
with open(arguments["pickled"], "rb") as file:
    pickled = pickle.load(file)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    auto = FTRLClassifier().partial_fit(X, y, classes=[0, 1])
    numba = FTRLRegressor(engine="numba").partial_fit(X, y.astype(float))
    proba = pickled.predict_proba(X)
    # The command line's predict, in this process (the executable's own
    # end, without Python's teardown, would end it).
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = skftrl._cli.main(["predict", "--model", arguments["model"], arguments["data"]])
        assert code == 0, code
print(json.dumps({
    "package": skftrl.__file__,
    "auto": [auto.z_.tolist(), auto.n_.tolist(), auto.z_intercept_.tolist()],
    "numba": [numba.z_.tolist(), numba.n_.tolist(), numba.z_intercept_.tolist()],
    "proba": proba.tolist(),
    "predicted": output.getvalue(),
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
}))
"""


def read_only_copy_of_the_package(root):
    """This checkout's package copied under ``root/site``, with a regular file
    named ``__pycache__`` in each of its directories, and no write permission."""
    package = root / "site" / "skftrl"
    shutil.copytree(
        Path(skftrl.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__")
    )
    directories = [package] + [path for path in package.rglob("*") if path.is_dir()]
    for directory in directories:
        (directory / "__pycache__").write_text("not a directory\n")
    for path in [*package.rglob("*"), package]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return package, directories


def state(model):
    return [model.z_.tolist(), model.n_.tolist(), model.z_intercept_.tolist()]


def run_command_line(*args):
    """``skftrl *args`` in this process (the executable's own end, without
    Python's teardown, would end it)."""
    code = skftrl._cli.main(list(args))
    assert code == 0, code


def test_the_default_engine_works_where_numba_cannot_cache(tmp_path, capsys):
    """Regression: numba's cache=True raised "RuntimeError: cannot cache
    function ... no locator available" when no cache location was writable,
    and only an ImportError was caught: engine="auto" failed in partial_fit
    and predict, a pickled auto model could not predict, and `skftrl
    predict` printed a traceback. Now numba compiles without caching, with
    one warning saying how to enable the cache, and every result is the one
    of the cached engine."""
    package, directories = read_only_copy_of_the_package(tmp_path)
    blocker = tmp_path / "a-file"  # paths under it cannot be directories
    blocker.write_text("")
    home = blocker / "home"
    environment = {
        **os.environ,
        "PYTHONPATH": str(package.parent),
        "NUMBA_CACHE_DIR": str(blocker / "numba"),
        "XDG_CACHE_HOME": str(blocker / "cache"),
        "HOME": str(home),
    }
    locations = [
        environment["NUMBA_CACHE_DIR"],
        str(blocker / "cache" / "numba"),
        str(home / ".cache" / "numba"),
        *(str(directory / "__pycache__") for directory in directories),
    ]

    # A model trained here (numba caching as usual), to predict there.
    fitted = FTRLClassifier().partial_fit(X, Y, classes=[0, 1])
    with open(tmp_path / "auto.pkl", "wb") as file:
        pickle.dump(fitted, file)
    data = tmp_path / "data.svm"
    data.write_text(
        "".join(
            f"{label} "
            + " ".join(f"{j + 1}:{float(value)!r}" for j, value in enumerate(row))
            + "\n"
            for label, row in zip(Y, X)
        )
    )
    model_file = tmp_path / "model.pkl"
    run_command_line("train", "--quiet", "--model", str(model_file), str(data))
    capsys.readouterr()
    run_command_line("predict", "--model", str(model_file), str(data))
    expected_prediction = capsys.readouterr().out

    arguments = {
        "locations": locations,
        "X": X.tolist(),
        "y": Y.tolist(),
        "pickled": str(tmp_path / "auto.pkl"),
        "model": str(model_file),
        "data": str(data),
    }
    process = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(arguments)],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert process.returncode == 0, process.stderr
    result = json.loads(process.stdout)
    assert Path(result["package"]).parent == package

    # The same compiled algorithm as here: the same bits.
    assert result["auto"] == state(
        FTRLClassifier(engine="numba").partial_fit(X, Y, classes=[0, 1])
    )
    assert result["numba"] == state(FTRLRegressor(engine="numba").partial_fit(X, Y.astype(float)))
    assert np.array_equal(result["proba"], fitted.predict_proba(X))
    assert result["predicted"] == expected_prediction

    # One warning, saying why and what to do.
    assert len(result["warnings"]) == 1, result["warnings"]
    assert "cannot cache" in result["warnings"][0]
    assert "NUMBA_CACHE_DIR" in result["warnings"][0]


def test_auto_falls_back_to_numpy_with_one_warning_when_numba_fails_to_load(monkeypatch):
    """numba installed but failing in another way than an ImportError (here
    its compiler raising an OSError when the engine's module is loaded):
    engine="auto" uses numpy with one warning naming the error, and
    engine="numba" raises an ImportError."""
    import warnings

    import numba

    import skftrl._engines
    from skftrl._engines import _compiled_engine

    def failing_njit(*args, **kwargs):
        raise OSError("no executable memory")

    # The engine's module is loaded again, with numba's compiler failing.
    monkeypatch.delitem(sys.modules, "skftrl._engines._linear_numba", raising=False)
    monkeypatch.delitem(sys.modules, "skftrl._engines._compile", raising=False)
    monkeypatch.delattr(skftrl._engines, "_linear_numba", raising=False)
    monkeypatch.setattr(numba, "njit", failing_njit)
    _compiled_engine.cache_clear()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            auto = FTRLClassifier().partial_fit(X, Y, classes=[0, 1])
            proba = auto.predict_proba(X)
            FTRLRegressor().partial_fit(X, Y.astype(float)).predict(X)
        with pytest.raises(ImportError, match="engine='numba' needs numba"):
            FTRLClassifier(engine="numba").partial_fit(X, Y, classes=[0, 1])
    finally:
        _compiled_engine.cache_clear()
    assert [str(w.message) for w in caught] == [
        "numba is installed, but skftrl's numba engine failed to load "
        "(OSError('no executable memory')); the numpy engine is used instead."
    ]
    expected = FTRLClassifier(engine="numpy").partial_fit(X, Y, classes=[0, 1])
    assert state(auto) == state(expected)
    assert np.array_equal(proba, expected.predict_proba(X))
