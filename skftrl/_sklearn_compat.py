"""scikit-learn's private helpers that skftrl uses, imported here and nowhere else.

scikit-learn promises nothing about names that start with an underscore: a
release may move or change one. Each is imported once, in this module, so that
such a change is met in one place; CI runs the tests with the oldest releases
``pyproject.toml`` admits and with the newest (docs: install, "Versions").
"""

from typing import Callable

from sklearn.base import _fit_context as _sklearn_fit_context
from sklearn.utils._missing import is_pandas_na
from sklearn.utils._optional_dependencies import check_pandas_support
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_params,
)
from sklearn.utils.multiclass import _check_partial_fit_first_call
from sklearn.utils.validation import _check_sample_weight

from ._typing import Function


def _fit_context(*, prefer_skip_nested_validation: bool) -> Callable[[Function], Function]:
    """scikit-learn's ``_fit_context`` (parameter validation and configuration
    for ``fit`` and ``partial_fit``), typed: the method keeps its signature."""
    return _sklearn_fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)


__all__ = [
    "Interval",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "_check_partial_fit_first_call",
    "_check_sample_weight",
    "_fit_context",
    "check_pandas_support",
    "is_pandas_na",
    "validate_params",
]
