"""pytest collects doctests from skftrl/ too; the numba engine's module needs numba."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("numba") else ["skftrl/_engines/_numba_exact.py"]
