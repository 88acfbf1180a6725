"""Sphinx configuration of the skftrl documentation.

Build with ``python -m sphinx -W --keep-going -b html docs docs/_build/html``
(``pip install ".[docs]"``); every example in ``examples/`` runs during the build.
"""

import ast
import importlib.util
import os
import re
import sys

import skftrl

# gallery_order.py (the order of the examples) sits beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

project = "skftrl"
author = "The skftrl developers"
copyright = "The skftrl developers, BSD-3-Clause"
version = release = skftrl.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax copied into the built pages, so that formulas render offline.
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",  # docs/changelog.md, the single source of the changelog
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py"]
templates_path = ["_templates"]
default_role = "literal"

autosummary_generate = True
# skftrl.dask imports dask and distributed (the dask extra), which the documentation's
# build does not need.
autodoc_mock_imports = ["dask", "distributed"]
# The docs extra has no torch (several GB with CUDA): without it, the pages of
# skftrl.torch are built from its docstrings, torch mocked, and the gallery's
# PyTorch example is shown without being run.
HAVE_TORCH = importlib.util.find_spec("torch") is not None
if not HAVE_TORCH:
    autodoc_mock_imports.append("torch")
# The numpydoc Parameters sections give the types; the signatures show the
# parameters and their defaults as written in the source (dtype=np.float64).
autodoc_typehints = "none"
autodoc_preserve_defaults = True
# numpydoc renders each class's methods and attributes from its docstring;
# autosummary's own member tables would repeat them.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Check the docstrings of the public API; these checks are style preferences
# the project does not follow (a See Also and an extended summary everywhere,
# an Examples section in each method).
numpydoc_validation_checks = {"all", "ES01", "EX01", "SA01", "GL08", "RT02"}
# Methods inherited from scikit-learn keep scikit-learn's docstrings.
numpydoc_validation_exclude = {
    r"\.get_params$",
    r"\.set_params$",
    r"\.set_\w+_request$",
    r"\.get_metadata_routing$",
    r"\.score$",
    r"\.__init__$",
}

html_theme = "pydata_sphinx_theme"
html_title = f"skftrl {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    # Every page of the root toctree in the top bar, in one row at 1,400 px.
    "header_links_before_dropdown": 8,
    "navigation_depth": 2,
}
# Pages without pages of their own below them: no left sidebar (it would be
# empty), the text wider.
html_sidebars = {
    page: [] for page in ("install", "quickstart", "cli", "benchmarks", "changelog", "developers")
}
html_static_path = ["_static"]
html_css_files = ["skftrl.css"]
html_show_sourcelink = False

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # Every example runs, but the PyTorch one without torch (see above).
    "filename_pattern": r"/plot_" if HAVE_TORCH else r"/plot_(?!torch_)",
    "within_subsection_order": "gallery_order.ExampleOrder",
    "doc_module": ("skftrl",),
    "backreferences_dir": "generated",
    "reference_url": {"skftrl": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    # An example that fails must fail the build.
    "abort_on_example_error": True,
    # Figures at twice the resolution too, for high-density screens.
    "image_srcset": ["2x"],
}


# No intersphinx: its inventories (objects.inv of scikit-learn, numpy, scipy,
# joblib, dask) are fetched over the network at build time, which this build
# does not have, and no package on PyPI ships them for offline use (the
# intersphinx-registry package gives their addresses only). A missing
# inventory is a warning, and the build runs with -W.
#
# Cross-references of scikit-learn's docstrings (inherited methods such as
# score and set_params) point into scikit-learn's own documentation, which
# this build cannot link to. Keep their text and drop the link.
_SKLEARN_ROLE = re.compile(r":(?:ref|term):`([^`<]*?)\s*(?:<[^`>]*>)?`")


def _unlink_sklearn_references(app, what, name, obj, options, lines):
    if (getattr(obj, "__module__", None) or "").startswith("sklearn."):
        lines[:] = [_SKLEARN_ROLE.sub(r"\1", line) for line in lines]


_NOT_RUN = """

.. note::

   This site was built without PyTorch: the code below is shown, not run,
   and the page has no figures. Install torch (:ref:`install-torch`) and
   build again to see them.
"""


def _say_torch_example_not_run(app, docname, source):
    if not HAVE_TORCH and docname == "auto_examples/plot_torch_wide_and_deep":
        # After the title: its overline, text and underline, at the top of
        # the page sphinx-gallery writes.
        title = re.search(r"^(=+)\n.+\n\1\n", source[0], re.M)
        if title is not None:
            end = title.end()
            source[0] = source[0][:end] + _NOT_RUN + source[0][end:]


def _torch_signature(app, what, name, obj, options, signature, return_annotation):
    """Without torch, the mocked optimizers lose their ``__init__``: read its
    parameters in the source, so that their pages show the real signature."""
    if HAVE_TORCH or what != "class" or not name.startswith("skftrl.torch."):
        return None
    path = os.path.join(os.path.dirname(skftrl.__file__), "torch", "_optimizers.py")
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name.rsplit(".", 1)[1]:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    arguments = item.args
                    arguments.args = arguments.args[1:]  # self
                    for argument in [*arguments.args, *arguments.kwonlyargs]:
                        argument.annotation = None
                    return f"({ast.unparse(arguments)})", None
    return None


def setup(app):
    app.connect("autodoc-process-signature", _torch_signature)
    app.connect("autodoc-process-docstring", _unlink_sklearn_references)
    app.connect("source-read", _say_torch_example_not_run)
