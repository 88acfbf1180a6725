"""pytest collects doctests from skftrl/ too; the numba engines' modules need
numba, skftrl/dask.py needs distributed, skftrl/torch needs torch, and the
pyarrow readers (and the example of iter_parquet) need pyarrow. Each
pytest-xdist worker keeps numba's cache apart (below)."""

import importlib.util
import os
import tempfile

import pytest

# numba's on-disk cache is not safe for processes that compile one function
# for different argument types at the same moment: two of them can give their
# two compiled forms one cache file, and a later process then loads the wrong
# one ("can't unbox array from PyObject"; numba/numba#10128). pytest-xdist's
# workers do just that, so each caches in a directory of its own, under
# NUMBA_CACHE_DIR if it is set (CI sets it), else in the temporary directory.
# Set before anything imports numba, which reads it once.
_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    _cache_root = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "skftrl-numba-cache"
    )
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(_cache_root, _worker)

NUMBA_MODULES = [
    "skftrl/_engines/_compile.py",
    "skftrl/_engines/_linear_numba.py",
    "skftrl/_engines/_fm_numba.py",
    "skftrl/_engines/_rounds_numba.py",
    "skftrl/_readers/_libsvm_numba.py",
    "skftrl/_readers/_hashing_numba.py",
    "skftrl/_readers/_vw_numba.py",
]
PYARROW_MODULES = ["skftrl/_readers/_csv_arrow.py", "skftrl/_readers/_parquet.py"]
HAS_PYARROW = importlib.util.find_spec("pyarrow") is not None

collect_ignore = [] if importlib.util.find_spec("numba") else list(NUMBA_MODULES)
collect_ignore += [] if HAS_PYARROW else PYARROW_MODULES
if not importlib.util.find_spec("distributed"):
    collect_ignore.append("skftrl/dask.py")
collect_ignore_glob = [] if importlib.util.find_spec("torch") else ["skftrl/torch/*"]


def pytest_collection_modifyitems(config, items):
    if HAS_PYARROW:
        return
    skip = pytest.mark.skip(reason="pyarrow is not installed (pip install 'skftrl[readers]')")
    for item in items:
        if item.name == "skftrl.readers.iter_parquet":
            item.add_marker(skip)
