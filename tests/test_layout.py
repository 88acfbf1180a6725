"""The package's layout: no import cycle, the engine layer's face imported by
no module of its own, no module too long to read in one sitting.

Every ``import`` and ``from ... import`` counts, at the top of a module or
inside a function. Checked over the engine layer (skftrl/_engines) and the
estimators' modules; the command line and its readers are not covered yet.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skftrl"
ESTIMATOR_MODULES = (
    "__init__",
    "_base",
    "_classifier",
    "_fm",
    "_regressor",
    "_stopping",
    "_validation",
)
MODULES = {
    **{f"skftrl.{name}": PACKAGE / f"{name}.py" for name in ESTIMATOR_MODULES},
    **{
        "skftrl._engines" + ("" if path.stem == "__init__" else f".{path.stem}"): path
        for path in sorted((PACKAGE / "_engines").glob("*.py"))
    },
}
ENGINES = "skftrl._engines"
# About 700 lines: the estimators' modules carry long docstrings besides.
LONGEST_MODULE = 750


def is_package(name):
    return MODULES[name].stem == "__init__"


def imported_modules(name):
    """The modules of MODULES that module ``name`` imports anywhere in it, and
    whether each import takes names from a package's ``__init__`` rather than
    from a module: ``{module: takes from the face}``."""
    tree = ast.parse(MODULES[name].read_text())
    package = name if is_package(name) else name.rpartition(".")[0]
    imported = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    imported[alias.name] = False
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = node.module or ""
            if node.level:
                source = f"{base}.{source}" if source else base
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in MODULES:
                    imported[submodule] = False
                elif source in MODULES:
                    imported[source] = imported.get(source, False) or is_package(source)
    imported.pop(name, None)
    return imported


GRAPH = {name: imported_modules(name) for name in MODULES}


def test_the_checked_modules_are_found():
    assert {"skftrl._engines", "skftrl._engines._math", "skftrl._base"} <= GRAPH.keys()
    assert "skftrl._engines._math" in GRAPH["skftrl._engines._linear_numpy"]


def test_no_import_cycle():
    finished, path = set(), []

    def visit(name):
        if name in path:
            cycle = path[path.index(name) :] + [name]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if name in finished:
            return
        path.append(name)
        for imported in GRAPH[name]:
            visit(imported)
        path.pop()
        finished.add(name)

    for name in GRAPH:
        visit(name)


@pytest.mark.parametrize("name", [name for name in MODULES if name.startswith(f"{ENGINES}.")])
def test_engine_modules_never_import_from_the_package_face(name):
    assert not GRAPH[name].get(ENGINES, False), f"{name} imports from {ENGINES}/__init__.py"


@pytest.mark.parametrize("name", list(MODULES))
def test_modules_are_at_most_about_700_lines(name):
    # A module a reader can hold in one sitting.
    assert len(MODULES[name].read_text().splitlines()) <= LONGEST_MODULE
