"""The engine layer: how a model learns from rows and computes its weights.

Nothing here knows about estimators or scikit-learn. This module is the
layer's face: the engine choice of every family (:func:`get_engine`,
:func:`prediction_engine`) and the names the estimators use. An estimator
talks to an engine through three calls (four for a factorization machine),
all taking a state record and a parameters record (:mod:`._records`), never
an argument order:

``engine.learn(state, parameters, X, targets, sample_weight, rows, undo=None)``
    One pass over ``rows`` of the canonical CSR ``X`` (sorted, summed
    indices, no stored zeros), in the order given, updating ``state`` in place (its arrays
    must be writable); returns each row's margins *before* it was learned
    from, shape ``(len(rows), K)`` (progressive validation). ``targets`` are
    0/1 for ``log_loss``, class indices for ``multinomial``, reals otherwise;
    ``sample_weight`` multiplies each row's loss derivative. With an
    :class:`~._undo.UndoLog` as ``undo``, the pass records in it the old
    values of every coordinate before changing it.
``engine.weights(state, parameters)``
    The closed-form weights of the whole state, float64 of shape ``(K, F)``.
``engine.margins(X, state, parameters, coef=None)``
    The margins of the rows of ``X``, shape ``(n_rows, K)``; without
    ``coef`` (the weights), from only the weights the non-zeros of a CSR
    ``X`` read (for a few rows of a wide model, far fewer than all), with
    identical results.
``engine.factors(state, parameters)``
    A factorization machine's factors, float64 of shape ``(K, F, k)``.

Where things are (docs: developers, "Adding a model family"):

- :mod:`._records`: each family's parameters and state records;
- :mod:`._math`: every formula and numeric guard, once, as a scalar function
  (which numba compiles) and over arrays, proven identical by
  tests/test_math.py;
- :mod:`._losses`: one record per loss;
- :mod:`._undo`: undo logs, state copies and column copies, for any state;
- :mod:`._rows`: the non-zeros of a pass's rows, a block at a time;
- :mod:`._linear_numpy`, :mod:`._linear_batch`, :mod:`._linear_numba`: the
  linear model's exact per-row pass in numpy (the reference engine), its
  mini-batch pass, and its exact pass compiled with numba (optional);
- :mod:`._fm_numpy`, :mod:`._fm_batch`, :mod:`._fm_numba`: the same for
  the factorization machine;
- :mod:`._rounds`, :mod:`._rounds_numba`: parallel passes, in rounds of
  shards learned by threads with a compiled engine, their changes merged
  (:func:`learn_in_rounds`);
- :mod:`._compile`: the numba set-up the compiled passes share;
- :mod:`._prediction`: the cache of the weights between predictions.
"""

import functools
import importlib
import warnings

from . import _fm_batch, _fm_numpy, _linear_batch, _linear_numpy
from ._losses import LOSSES, REGRESSION_LOSSES, Loss, get_loss
from ._math import new_state
from ._records import Family, FMParameters, FMState, LinearState, Parameters
from ._rounds import learn_in_rounds
from ._undo import ColumnCopy, StateCopy, UndoLog, undo_record

__all__ = [
    "FAMILIES",
    "LOSSES",
    "REGRESSION_LOSSES",
    "ColumnCopy",
    "FMParameters",
    "FMState",
    "LinearState",
    "Loss",
    "Parameters",
    "StateCopy",
    "UndoLog",
    "get_engine",
    "get_loss",
    "learn_in_rounds",
    "new_state",
    "prediction_engine",
    "undo_record",
]

# Every model family, by the name its estimators give (one registration each).
FAMILIES = {
    "linear": Family(
        numpy=_linear_numpy.ENGINE,
        batch=_linear_batch.LinearBatchEngine,
        compiled="_linear_numba",
    ),
    "fm": Family(numpy=_fm_numpy.ENGINE, batch=_fm_batch.FMBatchEngine, compiled="_fm_numba"),
}


@functools.cache
def _compiled_engine(family):
    """The compiled engine of ``family``, or None when numba cannot be imported.

    Cached: a failing import is slow, and prediction asks on every call.
    numba installed but failing in another way (an incompatible version, a
    broken install) warns once, and the numpy engine is used.
    """
    try:
        module = importlib.import_module(f".{FAMILIES[family].compiled}", __name__)
    except ImportError:
        return None
    except Exception as error:
        warnings.warn(
            f"numba is installed, but skftrl's numba engine failed to load "
            f"({error!r}); the numpy engine is used instead.",
            stacklevel=2,
        )
        return None
    return module.ENGINE


def get_engine(family, name, batch_size=1):
    """The engine of the model ``family`` (a key of :data:`FAMILIES`) for
    ``engine=name`` and ``batch_size``.

    ``"auto"`` runs the exact per-row algorithm compiled with numba when numba
    can be imported, and numpy otherwise; a mini-batch (``batch_size > 1``)
    always runs on numpy, with the weights computed by numba unless
    ``name="numpy"``. Raises the estimators' ``ValueError`` for ``"numba"``
    with ``batch_size > 1`` and ``ImportError`` for ``"numba"`` without numba.
    """
    if name == "numba" and batch_size > 1:
        raise ValueError(
            "engine='numba' runs the exact per-row algorithm and needs "
            f"batch_size=1; got batch_size={batch_size}. Use "
            "engine='numpy' (or 'auto') for mini-batches."
        )
    compiled = None if name == "numpy" else _compiled_engine(family)
    if name == "numba" and compiled is None:
        raise ImportError(
            "engine='numba' needs numba, which is not installed or failed "
            "to import; install it with: pip install 'skftrl[fast]'"
        )
    exact = compiled or FAMILIES[family].numpy
    if batch_size > 1:
        return FAMILIES[family].batch(batch_size, exact)
    return exact


def prediction_engine(family, name):
    """The engine whose weights predictions use: numba's when it can be
    imported, unless ``name="numpy"``. Never raises: a model trained with
    numba predicts where numba is not installed."""
    return get_engine(family, "numpy" if name == "numpy" else "auto")
