"""The estimators as the command line makes and uses them.

Through their public API (``partial_fit``, ``predict``, ``predict_proba``,
``get_params``/``set_params`` and the fitted attributes), and the engine
layer's face (:func:`skftrl._engines.get_engine`, :func:`~skftrl._engines.get_loss`);
the holdout uses their early stopping (:mod:`._holdout`) and ``inspect`` a
factorization machine's factors (:mod:`._inspect`), the two internal methods
made for the command line.
"""

import contextlib
import os
import sys

import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy
from sklearn.base import clone, is_classifier

from .._classifier import FTRLClassifier
from .._engines import get_engine, get_loss
from .._fm import FMClassifier, FMRegressor
from .._persistence import COMPACT_FRACTION
from .._readers._sources import DataError
from .._regressor import FTRLRegressor
from ._parser import UsageError

FACTOR_OPTIONS = {
    "--init-stdev": "init_stdev",
    "--factor-learning-rate": "factor_learning_rate",
    "--factor-l2": "factor_l2",
}
HOLDOUT_OPTIONS = {"--tol": "tol", "--n-iter-no-change": "n_iter_no_change"}


def format_label(label):
    """A class label as a user wrote it: 1 rather than 1.0."""
    return f"{label:g}" if isinstance(label, (float, np.floating)) else str(label)


def validated(estimator):
    """The estimator, its hyper-parameters and engine checked before any data is read.

    A clone learns one row through the public API: whatever the estimator
    refuses (a hyper-parameter out of range, ``engine="numba"`` without numba
    or with ``batch_size > 1``) is refused before the input is opened. The
    engine is checked as the estimator checks it, and the clone then learns
    in numpy: numba would compile a pass for its one-feature state, which
    no later pass uses, and compiling it took seconds of a first run.
    """
    probe = clone(estimator)
    X = sp.csr_matrix((1, 1))
    try:
        if estimator.engine in ("auto", "numba"):
            get_engine(family(estimator), estimator.engine, estimator.batch_size)
            probe.set_params(engine="numpy")
        if is_classifier(probe):
            probe.partial_fit(X, np.zeros(1), classes=[0, 1])
        else:
            probe.partial_fit(X, np.zeros(1))
    except (ValueError, TypeError, ImportError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return estimator


@contextlib.contextmanager
def compile_timer():
    """A timer of numba's compilations within the context (from numba's event
    API: ``done`` once numba compiled rather than loaded from its cache,
    ``duration`` the seconds it took), or None where no compiled engine is
    loaded or numba cannot cache what it compiles (a warning then says so)."""
    compiled = sys.modules.get("skftrl._engines._compile")
    if compiled is None or not compiled.CACHE:
        yield None
        return
    with numba_compiling() as timer:
        yield timer


@contextlib.contextmanager
def numba_compiling():
    """A timer of numba's compilations within the context, as compile_timer's,
    or None where numba is not imported (nothing is compiled then)."""
    if "numba" not in sys.modules:
        yield None
        return
    from numba.core.event import install_timer

    with install_timer("numba:compile", lambda seconds: None) as timer:
        yield timer


def engine_name(estimator):
    """The engine of the estimator's passes, as the engine layer chooses it:
    numba when it loads (and ``engine`` is not ``"numpy"``); numpy for a
    mini-batch (``batch_size > 1``), whose pass runs in numpy."""
    if estimator.batch_size > 1:
        return "numpy"
    return get_engine(family(estimator), estimator.engine, estimator.batch_size).name


def family(estimator):
    """The engine layer's name of the estimator's model family."""
    return "fm" if isinstance(estimator, (FMClassifier, FMRegressor)) else "linear"


def make_estimator(args, initial):
    """The estimator the options ask for; options left unset keep its defaults
    (or, with ``-i``, the continued model's).

    ``--factors K`` makes a factorization machine (FMClassifier or
    FMRegressor) with ``n_components=K``; its initial factors are drawn with
    ``--random-state`` (default 0, so that a run is repeatable).
    """
    given = {
        "learning_rate": args.learning_rate,
        "beta": args.beta,
        "l1": args.l1,
        "l2": args.l2,
        "batch_size": args.batch_size,
        "engine": args.engine,
        "fit_intercept": args.fit_intercept,
        **{name: getattr(args, name) for name in FACTOR_OPTIONS.values()},
        **{name: getattr(args, name) for name in HOLDOUT_OPTIONS.values()},
    }
    params = {name: value for name, value in given.items() if value is not None}
    if args.loss is not None:
        params["loss"] = args.loss
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    classify = args.task == "classify"
    if classify and ("loss" in params or "epsilon" in params):
        raise UsageError(
            "--loss and --epsilon are for --task regress; classification "
            "uses the log loss (two classes) or the multinomial loss (more)"
        )
    check_holdout_options(args)
    is_fm = isinstance(initial, (FMClassifier, FMRegressor))
    if not is_fm and args.factors is None:
        factor_options = [option for option, name in FACTOR_OPTIONS.items() if name in params]
        if args.random_state is not None:
            factor_options.append("--random-state")
        if factor_options:
            raise UsageError(
                f"{', '.join(factor_options)} {'are' if len(factor_options) > 1 else 'is'} for "
                "factorization machines: add --factors K"
            )
    if initial is not None:
        if isinstance(initial, FTRLClassifier) != classify:
            kind = "a classifier" if isinstance(initial, FTRLClassifier) else "a regressor"
            raise UsageError(
                f"--initial-model {args.initial_model} is {kind}: use "
                f"--task {'classify' if isinstance(initial, FTRLClassifier) else 'regress'}"
            )
        if args.factors is not None and (not is_fm or args.factors != initial.n_components):
            what = f"{initial.n_components} factors a feature" if is_fm else "a linear model"
            raise UsageError(
                f"--initial-model {args.initial_model} is {what}: a model continued with -i "
                "keeps its factors (leave out --factors)"
            )
        if args.random_state is not None:
            raise UsageError(
                f"--random-state draws the initial factors of a new model; those of "
                f"--initial-model {args.initial_model} are drawn already"
            )
        validated(initial.__class__(**{**initial.get_params(), **params}))
        return initial.set_params(**params)
    if args.factors is not None:
        params["n_components"] = args.factors
        params["random_state"] = 0 if args.random_state is None else args.random_state
        Estimator = FMClassifier if classify else FMRegressor
    else:
        Estimator = FTRLClassifier if classify else FTRLRegressor
    return validated(Estimator(**params))


def check_holdout_options(args):
    """``--tol`` and ``--n-iter-no-change`` stop on the held-out loss: they need it."""
    if args.holdout_period is None:
        given = [
            option for option, name in HOLDOUT_OPTIONS.items() if getattr(args, name) is not None
        ]
        if given:
            raise UsageError(
                f"{' and '.join(given)} stop{'' if len(given) > 1 else 's'} the passes on the "
                "held-out loss: add --holdout-period K"
            )


def state_size(estimator, n_features, classes):
    """``(n_outputs, bytes)`` of the estimator's state ``n_features`` wide for
    ``classes``: z and n of the weights, and of the factors of a
    factorization machine."""
    n_outputs = 1 if classes is None or len(classes) == 2 else len(classes)
    n_components = getattr(estimator, "n_components", 0)
    itemsize = np.dtype(estimator.dtype).itemsize
    return n_outputs, 2 * n_outputs * n_features * (1 + n_components) * itemsize


def run_size(estimator, n_features, classes):
    """``(n_outputs, state bytes, peak bytes)`` of a training run: at its peak
    it holds the state and the larger of the weights it reports at the end
    (float64, and a byte each to find them) and what saving the model takes
    besides the state (the records of its touched coordinates, at most
    COMPACT_FRACTION of the state: a model touched more is saved whole)."""
    n_outputs, state = state_size(estimator, n_features, classes)
    weights = n_outputs * n_features * (np.dtype(np.float64).itemsize + 1)
    return n_outputs, state, state + max(weights, int(COMPACT_FRACTION * state))


def check_memory(estimator, n_features, classes):
    """Refuse a width whose run cannot fit in memory, saying what it needs."""
    _, _, needed = run_size(estimator, n_features, classes)
    try:
        available = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        available = None
    if n_features > 2**62 or (available is not None and needed > available):
        raise memory_error(estimator, n_features, classes, available)


def memory_error(estimator, n_features, classes, available=None):
    """The UsageError of a run too large for memory (``available`` bytes, if known)."""
    n_outputs, state, needed = run_size(estimator, n_features, classes)
    n_components = getattr(estimator, "n_components", 0)
    have = "" if available is None else f", more than this machine's {available / 2**30:,.1f} GiB"
    factors = f", {n_components} factors a feature" if n_components else ""
    return UsageError(
        f"a model {n_features:,} features wide needs {needed / 2**30:,.1f} GiB: "
        f"{state / 2**30:,.1f} GiB for its state (z and n, {n_outputs} "
        f"output{'s' if n_outputs > 1 else ''}{factors}) and the rest to compute its "
        f"weights or save it{have}: use --hash-bits B to hash the features into 2**B columns"
    )


# FTRL moves a weight at most learning_rate * sqrt(t) in t rows, at the
# default learning_rate_power (|z| is at most the sum of the |g|, and sqrt(n)
# at least that sum over sqrt(t)). A new squared-error or Huber model whose
# intercept would need more rows than this many first chunks to reach the
# label's mean is warned about.
LABEL_REACH_CHUNKS = 100


def slow_intercept_warning(estimator, y, label):
    """The warning (or None) for a new regression model, about to learn the
    labels ``y`` of the first chunk, whose intercept would take too many rows
    to reach their mean at its learning rate (see LABEL_REACH_CHUNKS)."""
    if (
        is_classifier(estimator)
        or estimator.loss not in ("squared_error", "huber")
        or not estimator.fit_intercept
        or estimator.learning_rate_power != -0.5
    ):
        return None
    mean, rate, rows = abs(float(np.mean(y))), estimator.learning_rate, len(y)
    needed = (mean / rate) ** 2
    if needed <= LABEL_REACH_CHUNKS * rows:
        return None
    return (
        f"{label} averages {mean:,.4g} over the first {rows:,} rows, but FTRL moves a weight "
        f"at most --learning-rate x the square root of its rows: at {rate:g}, the intercept "
        f"needs about {float(f'{needed:.2g}'):,.0f} rows to reach that mean. Raise "
        f"--learning-rate (to {mean / np.sqrt(rows):.2g} or more) or center and scale the label"
    )


def learn(estimator, chunk, classes, path):
    """``partial_fit`` on one chunk; a refusal is reported with the chunk's lines."""
    if not is_classifier(estimator):
        loss = get_loss(estimator.loss)
        invalid = loss.invalid_targets(chunk.y)
        if invalid is not None and invalid.any():
            line = chunk.lines[np.flatnonzero(invalid)[0]]
            raise DataError(path, int(line), f"--loss {estimator.loss} needs {loss.target_domain}")
    if classes is not None:
        check_known_labels(path, chunk, classes)
    extra = {} if chunk.sample_weight is None else {"sample_weight": chunk.sample_weight}
    try:
        if classes is None or hasattr(estimator, "classes_"):
            estimator.partial_fit(chunk.X, chunk.y, **extra)
        else:
            estimator.partial_fit(chunk.X, chunk.y, classes=classes, **extra)
    except ValueError as error:
        first, last = int(chunk.lines[0]), int(chunk.lines[-1])
        raise DataError(path, first, f"in the rows of lines {first}-{last}: {error}") from None


def check_known_labels(path, chunk, classes):
    """Every label of a file must be one of the model's classes."""
    unknown = np.flatnonzero(~np.isin(chunk.y, classes))
    if unknown.size:
        raise DataError(
            path,
            int(chunk.lines[unknown[0]]),
            f"the label {format_label(chunk.y[unknown[0]])} is not one of the model's "
            f"classes ({', '.join(map(format_label, classes))})",
        )


def reported_loss(estimator):
    """``(name, floor)``: what the command line calls the loss it reports, and
    for the Poisson loss, the function giving the rows' summed loss at its
    floor, which the report subtracts (None for the other losses).

    The Poisson loss ``exp(m) - y m`` leaves out ``log(y!)``, so that it is
    negative for many counts; the report gives the mean deviance instead, twice
    the loss less its floor over the margins, ``y - y log y`` (0 at ``y =
    0``): 0 for a perfect prediction, and never below.
    """
    if is_classifier(estimator):
        return "log loss", None
    if estimator.loss == "poisson":
        return "poisson deviance", poisson_floor
    return f"{estimator.loss} loss", None


def poisson_floor(y, sample_weight=None):
    """The summed smallest Poisson loss of rows with targets ``y``: ``y - y log y`` each."""
    rows = y - xlogy(y, y)
    return float(rows.sum() if sample_weight is None else rows @ sample_weight)
