"""pytest collects doctests from skftrl/ too; the numba engines' modules need
numba, skftrl/dask.py needs distributed, and skftrl/torch needs torch."""

import importlib.util

NUMBA_MODULES = [
    "skftrl/_engines/_compile.py",
    "skftrl/_engines/_linear_numba.py",
    "skftrl/_engines/_fm_numba.py",
    "skftrl/_engines/_rounds_numba.py",
    "skftrl/_readers/_libsvm_numba.py",
]

collect_ignore = [] if importlib.util.find_spec("numba") else list(NUMBA_MODULES)
if not importlib.util.find_spec("distributed"):
    collect_ignore.append("skftrl/dask.py")
collect_ignore_glob = [] if importlib.util.find_spec("torch") else ["skftrl/torch/*"]
