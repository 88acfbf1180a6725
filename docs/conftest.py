"""pytest runs the Python blocks of the quick start and of the user guide's
pages as doctests (``--doctest-glob='*.rst'`` in pyproject.toml). A page whose
blocks need an extra runs where the extra is installed and is skipped where
it is not (CI's numpy-only stages); each page runs in a temporary directory,
so that the files its blocks write go there."""

import importlib.util

import pytest

# Sphinx's configuration and the files the build writes are not tests.
collect_ignore = ["conf.py", "gallery_order.py"]
collect_ignore_glob = ["_build/*", "auto_examples/*", "generated/*", "api/*"]

# The modules each page's blocks import, beyond skftrl's requirements.
NEEDS = {
    "quickstart.rst": ["pandas"],
    "guide/hashing.rst": ["pandas"],
    "guide/files.rst": ["pandas"],
    "guide/pipelines.rst": ["pandas"],
    "guide/fm.rst": ["pandas"],
    "guide/persistence.rst": ["skops"],
    "guide/parallel.rst": ["dask", "distributed", "dask_ml"],
}


def _missing(path):
    for page, modules in NEEDS.items():
        if path.as_posix().endswith("docs/" + page):
            return [name for name in modules if importlib.util.find_spec(name) is None]
    return []


def pytest_collection_modifyitems(config, items):
    for item in items:
        missing = _missing(item.path)
        if missing:
            reason = f"needs {', '.join(missing)} (not installed)"
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _in_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
