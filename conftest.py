"""pytest collects doctests from skftrl/ too; the numba engines' modules need
numba, skftrl/dask.py needs distributed, skftrl/torch needs torch, and the
pyarrow readers (and the example of iter_parquet) need pyarrow."""

import importlib.util

import pytest

NUMBA_MODULES = [
    "skftrl/_engines/_compile.py",
    "skftrl/_engines/_linear_numba.py",
    "skftrl/_engines/_fm_numba.py",
    "skftrl/_engines/_rounds_numba.py",
    "skftrl/_readers/_libsvm_numba.py",
    "skftrl/_readers/_hashing_numba.py",
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
