"""The types of the public API's annotations.

Written with ``typing``'s ``Optional`` and ``Union``, so that the
annotations evaluate at run time on every Python the package supports.
"""

from collections.abc import Mapping
from typing import Any, Callable, Literal, Optional, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import spmatrix

try:
    from scipy.sparse import sparray
except ImportError:  # scipy < 1.11 has sparse matrices only
    sparray = spmatrix

__all__ = [
    "ArrayLike",
    "ClassWeight",
    "EarlyStopping",
    "Engine",
    "FloatArray",
    "FloatType",
    "Function",
    "MatrixLike",
    "RandomStateLike",
    "RegressionLoss",
]

# Training or prediction rows: an array-like (a list, a numpy array, a
# pandas DataFrame) or a scipy sparse matrix or array.
MatrixLike = Union[ArrayLike, spmatrix, sparray]
FloatArray = NDArray[np.float64]
# The storage type of a model's state.
FloatType = Union[type[np.float64], type[np.float32]]
RandomStateLike = Optional[Union[int, np.random.RandomState]]
EarlyStopping = Union[bool, Literal["refit"]]
Engine = Literal["auto", "numpy", "numba"]
ClassWeight = Optional[Union[Mapping[Any, float], Literal["balanced"]]]
RegressionLoss = Literal["squared_error", "huber", "poisson"]
# A function or method that a decorator returns with its own signature.
Function = TypeVar("Function", bound=Callable[..., Any])
