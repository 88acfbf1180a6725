"""The package's layout: no import cycle, no package's face (its ``__init__``)
imported by a module of its own, no module too long to read in one sitting.

Every ``import`` and ``from ... import`` counts, at the top of a module or
inside a function, in every module of skftrl.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skftrl"


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
# The subpackages, whose faces re-export their modules' names. (skftrl's own
# face imports nothing until a name is asked for: its __version__ is for all.)
PACKAGES = sorted(
    name for name, path in MODULES.items() if path.stem == "__init__" and name != "skftrl"
)
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
    assert {"skftrl._engines", "skftrl._engines._math", "skftrl._base", "skftrl._cli"} <= set(
        GRAPH
    )
    assert "skftrl._engines._math" in GRAPH["skftrl._engines._linear_numpy"]
    assert "skftrl._readers._sources" in GRAPH["skftrl._cli"]


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


@pytest.mark.parametrize(
    ("package", "name"),
    [
        (package, name)
        for package in PACKAGES
        for name in MODULES
        if name.startswith(f"{package}.")
    ],
)
def test_modules_never_import_from_their_package_face(package, name):
    assert not GRAPH[name].get(package, False), f"{name} imports from {package}/__init__.py"


@pytest.mark.parametrize("name", list(MODULES))
def test_modules_are_at_most_about_700_lines(name):
    # A module a reader can hold in one sitting.
    assert len(MODULES[name].read_text().splitlines()) <= LONGEST_MODULE


# The modules of the estimators; every other module uses them through their
# public API and the functions these modules offer.
ESTIMATOR_MODULES = {"skftrl._base", "skftrl._classifier", "skftrl._regressor", "skftrl._fm"}


def estimators_private_methods():
    """The private (single underscore) methods and properties of the
    estimator modules' classes."""
    names = set()
    for name in ESTIMATOR_MODULES:
        for node in ast.walk(ast.parse(MODULES[name].read_text())):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        if item.name.startswith("_") and not item.name.startswith("__"):
                            names.add(item.name)
    return names


PRIVATE_METHODS = estimators_private_methods()


def test_private_methods_are_found():
    assert {"_prepare_rows", "_held_out_loss", "_parameters", "_state"} <= PRIVATE_METHODS


@pytest.mark.parametrize("name", sorted(set(MODULES) - ESTIMATOR_MODULES))
def test_no_module_outside_the_estimators_calls_their_private_methods(name):
    # Any object's attribute of such a name other than its own class's
    # (self, cls, super()): a module whose own classes name a method alike
    # must choose another name.
    used = [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(ast.parse(MODULES[name].read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr in PRIVATE_METHODS
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        and not (
            isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "super"
        )
    ]
    assert not used, f"{name} uses estimators' private methods: {used}"
