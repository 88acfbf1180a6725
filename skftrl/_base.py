"""Logic shared by every estimator: parameters, the state and its persistence,
the training passes and their transaction, early stopping, and the scores.

A model family's estimators (the factorization machines, :mod:`._fm`) add to
:class:`BaseFTRL` their family's name, state record, parameters, fresh state
and the initial values of what they save compactly (docs: developers,
"Adding a model family")."""

import dataclasses
import functools
import warnings
from numbers import Integral, Real
from typing import Any, Callable, TypeVar

import joblib
import numpy as np
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ._engines import (
    ColumnCopy,
    LinearState,
    Parameters,
    get_engine,
    learn_in_rounds,
    new_state,
    prediction_engine,
    undo_record,
)
from ._engines._math import LARGEST, intercept_weights, z_of_weights
from ._engines._prediction import PredictionCache
from ._engines._rounds import apply_changes, state_of_columns
from ._engines._undo import writable
from ._persistence import SavedState, linear_layout, read_only
from ._shards import ColumnsRecord, ShardWork
from ._sklearn_compat import Interval, Options, StrOptions
from ._stopping import EarlyStopping
from ._transaction import _TRAINING_CALL, learning_lock, unchanged_on_error
from ._typing import FloatArray
from ._validation import (
    FLOAT_DTYPES,
    as_canonical_csr,
    check_no_bool_counts,
    check_sparse_indices,
    check_state,
    checked_initial_weights,
    checked_sample_weight,
    finite_check_of_huge_values,
    stored_starting_z,
)

# What fit and partial_fit return: the estimator they are called on.
Estimator = TypeVar("Estimator", bound="BaseFTRL")


@functools.cache
def _param_names(estimator_class):
    """The class's hyper-parameter names (``get_params`` inspects them on each call)."""
    return tuple(estimator_class._get_param_names())


class StateCheckpoint:
    """A copy of an estimator's state for the features ``columns`` and of its
    records of training (:class:`~._engines.ColumnCopy`), made once and copied
    into in place. Restoring it is right when only those columns were learned
    from since."""

    def __init__(self, estimator, columns):
        self.estimator = estimator
        self.copy = ColumnCopy(estimator._state(), columns)
        self.n_samples_seen = estimator.n_samples_seen_
        self.n_loss_curve = len(estimator.loss_curve_)

    def keep(self):
        """Copy the estimator's current state into the checkpoint."""
        self.copy.keep(self.estimator._state())
        self.n_samples_seen = self.estimator.n_samples_seen_
        self.n_loss_curve = len(self.estimator.loss_curve_)

    def restore(self):
        """Put the estimator back as it was when the state was kept."""
        estimator = self.estimator
        estimator._cache().clear()  # the kept weights are those of another state
        self.copy.restore(estimator._writable_state())
        estimator.n_samples_seen_ = self.n_samples_seen
        del estimator.loss_curve_[self.n_loss_curve :]


def early_stopping_of(estimator, columns, *, tie=0.0, keep_best=True):
    """An :class:`~skftrl._stopping.EarlyStopping` of a fitted estimator's
    passes, with its ``tol`` and ``n_iter_no_change``, a checkpoint of the
    state of ``columns`` (the only features the passes learn from) and the
    held-out loss of rows as ``fit`` scores them.

    The estimators' internal interface of early stopping: ``fit`` and the
    command line's ``--holdout-period`` both use it.
    """
    return EarlyStopping(
        estimator.tol,
        estimator.n_iter_no_change,
        tie=tie,
        checkpoint=StateCheckpoint(estimator, columns),
        keep_best=keep_best,
        held_out_loss=estimator._held_out_loss,
    )


@unchanged_on_error
def learn_in_shards(estimator, X, y, sample_weight, classes, rounds):
    """One pass of a fitted or new estimator in rounds of shards learned
    elsewhere: the estimators' internal interface of :mod:`skftrl.dask`.

    ``(X, y, sample_weight)``, first rows, are checked as ``partial_fit`` does
    (a first call makes the state), not learned. ``rounds(work, start)``
    yields each round's merged ``ShardChanges`` with its rows' count, summed
    loss and weight; ``work`` (a ``ShardWork``) is what workers need,
    ``start(columns)`` the state of ``columns`` as a round begins.
    """
    estimator._partial_fit_rows(X, y, classes, sample_weight)
    estimator._check_state_parameters()
    state = estimator._writable_state()
    # A copy without the state: the workers check rows and score them with it.
    template = type(estimator).__new__(type(estimator))
    template.__dict__.update(vars(estimator))
    for name in estimator._state_record._fields:
        delattr(template, f"{name}_")
    del template._prediction_cache
    work = ShardWork(
        template._prepare_rows,
        template._mean_loss,
        estimator._engine(),
        estimator._state_record,
        estimator._parameters(),
        [pair[3] for pair in estimator._SAVED_PAIRS],
    )
    call = _TRAINING_CALL.get()
    n_rows, loss, weight = 0, 0.0, 0.0
    for changes, (rows, round_loss, round_weight) in rounds(
        work, functools.partial(state_of_columns, state)
    ):
        if call.fresh_z is not estimator.z_:
            call.undo_records.append(ColumnsRecord(state, changes.columns))
        estimator._cache().clear()
        apply_changes(state, changes)
        n_rows, loss, weight = n_rows + rows, loss + round_loss, weight + round_weight
    estimator._cache().clear()
    estimator.n_samples_seen_ += n_rows
    estimator.loss_curve_.append(loss / weight if weight else 0.0)
    estimator.n_iter_ = 1
    return estimator


# BLAS computes a dot product of at most this many values on one thread.
DOT_BLOCK = 2048


def blocked_dot(a, b):
    """``a @ b`` of 1-d float64 arrays, their blocks of DOT_BLOCK values added
    in order. A longer dot product is split between BLAS's threads: their sum
    would depend on the number of cores, and the threads would spin on the
    other cores after it, taking them from a parallel pass or from other
    processes."""
    total = 0.0
    for start in range(0, len(a), DOT_BLOCK):
        total += float(a[start : start + DOT_BLOCK] @ b[start : start + DOT_BLOCK])
    return total


class BaseFTRL(SavedState, BaseEstimator):
    """Hyper-parameters, state and training loop of every estimator."""

    # Whether validate_data should require (and convert) numeric targets.
    _numeric_targets = True
    # The model family (a key of skftrl._engines.FAMILIES) and its state
    # record, whose field ``name`` is the attribute ``name_``.
    _family = "linear"
    _state_record: Any = LinearState

    _parameter_constraints: dict = {
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "learning_rate_power": [Interval(Real, -1, 0, closed="both")],
        "initial_accumulator_value": [Interval(Real, 0, None, closed="left")],
        "l1": [Interval(Real, 0, None, closed="left")],
        "l2": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "early_stopping": ["boolean", StrOptions({"refit"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "engine": [StrOptions({"auto", "numpy", "numba"})],
        "n_jobs": [
            None,
            Interval(Integral, 1, None, closed="left"),
            Interval(Integral, None, -1, closed="right"),
        ],
        "dtype": [Options(type, {np.float64, np.float32})],
    }
    # Parameters read only when a state is created (besides dtype, which the
    # state's arrays record): _fresh_state records them, each pass checks them.
    _STATE_PARAMETERS: tuple[str, ...] = ("initial_accumulator_value",)

    # The state's pairs of per-feature arrays as a saved model keeps them: the
    # attributes of z and n, the saved entry of their touched coordinates, and
    # their layout ``(shape, dtype) -> new (z, n)`` in one buffer.
    _SAVED_PAIRS: tuple[tuple[str, str, str, Callable[..., Any]], ...] = (
        ("z_", "n_", "_touched_state", linear_layout),
    )

    def _untouched(self, entry, shape, dtype):
        """The ``(z0, n0)`` of the untouched coordinates of the pair saved as
        ``entry``: ``n0`` a number, ``z0`` a number or an iterable of one array
        a block of ``state_blocks(shape)`` (see skftrl._persistence); None when
        this model cannot make them again."""
        with np.errstate(over="ignore"):
            return 0, np.dtype(dtype).type(self.initial_accumulator_value)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "z_")

    # A pickle or a copy made while another thread's learning call runs waits
    # for it to end: it holds the model as a call left it, never a pass part
    # way through (a checkpoint can always be loaded, and learns on from there).
    def __getstate__(self):
        with learning_lock(self):
            return super().__getstate__()

    def __copy__(self):
        with learning_lock(self):
            return super().__copy__()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ----------------------------------------------------------------- state
    @property
    def coef_(self) -> FloatArray:
        """Weights, shape (n_outputs, n_features), from the state in closed form."""
        check_is_fitted(self)
        return self._cache().coef(self._state(), self._parameters(), self._prediction_engine())

    @property
    def intercept_(self) -> FloatArray:
        """Intercept, shape (n_outputs,); 0 when ``fit_intercept=False``."""
        check_is_fitted(self)
        weights, _ = intercept_weights(
            self.z_intercept_.tolist(), self.n_intercept_.tolist(), self._parameters()
        )
        return np.array(weights, dtype=np.float64)

    def _loss(self):
        """The model's :class:`~skftrl._engines.Loss` record."""
        raise NotImplementedError

    def _parameters(self):
        """The hyper-parameters of the passes and weights, as the engines take them."""
        return Parameters(
            loss=self._loss(),
            learning_rate=self.learning_rate,
            beta=self.beta,
            l1=self.l1,
            l2=self.l2,
            learning_rate_power=self.learning_rate_power,
            fit_intercept=self.fit_intercept,
        )

    def _state(self):
        """The learned state, as the engines take it (read-only arrays), each
        array checked against the model's shapes (:meth:`_state_shapes`) and
        dtypes: an array assigned to an attribute of the state can then never
        make a pass read or write outside it."""
        state = self._state_record(
            *(getattr(self, f"{name}_") for name in self._state_record._fields)
        )
        check_state(state, self._state_shapes())
        return state

    def _n_outputs(self):
        """The number of outputs of the fitted model (its classifier's differs)."""
        return 1

    def _state_shapes(self):
        """The shape of each array of the fitted model's state, by field."""
        outputs, features = self._n_outputs(), self.n_features_in_
        return {
            "z": (outputs, features),
            "n": (outputs, features),
            "z_intercept": (outputs,),
            "n_intercept": (outputs,),
        }

    def _cache(self):
        """The model's prediction cache (a throwaway one for a state set by hand)."""
        return self.__dict__.get("_prediction_cache") or PredictionCache()

    def _fresh_state(self, n_outputs, n_features):
        """The attributes of a fresh state, not set yet: ``z = 0`` and
        ``n = initial_accumulator_value`` (``z_``, ``n_``, the intercept's),
        the prediction cache and the records of training."""
        z, n = new_state(n_outputs, n_features, self.dtype, self.initial_accumulator_value)
        return {
            "_state_parameters": {name: getattr(self, name) for name in self._STATE_PARAMETERS},
            "z_": read_only(z),
            "n_": read_only(n),
            "z_intercept_": np.zeros(n_outputs, dtype=np.float64),
            "n_intercept_": np.full(n_outputs, self.initial_accumulator_value, dtype=np.float64),
            "_prediction_cache": PredictionCache(),
            "n_samples_seen_": 0,
            "loss_curve_": [],
            "validation_scores_": None,
            "best_validation_score_": None,
            "best_iteration_": None,
        }

    def _new_state(self, n_outputs, n_features, coef_init=None, intercept_init=None):
        """Set a fresh state (:meth:`_fresh_state`), with ``z`` set where
        ``coef_init`` and ``intercept_init`` are given so that the weights are
        theirs (docs: "Starting from given weights"). They are checked first."""
        meaning = "1 for two classes, one per class for more" if is_classifier(self) else "1"
        coef, intercept = checked_initial_weights(
            coef_init, intercept_init, (n_outputs, n_features), meaning, self.fit_intercept
        )
        self._check_initial_accumulator_value()
        fresh = self._fresh_state(n_outputs, n_features)
        parameters = self._parameters()
        if coef is not None:
            # Only the non-zero weights are written: the untouched pages of a
            # wide state stay unallocated.
            outputs, features = np.nonzero(coef)
            n = fresh["n_"][outputs, features].astype(np.float64)
            z = z_of_weights(coef[outputs, features], n, parameters, self.dtype)
            writable(fresh["z_"])[outputs, features] = stored_starting_z(
                z, "coef_init", self.dtype
            )
        if intercept is not None:
            unregularized = dataclasses.replace(parameters, l1=0.0, l2=0.0)
            z = z_of_weights(intercept, fresh["n_intercept_"], unregularized, np.float64)
            fresh["z_intercept_"][:] = stored_starting_z(z, "intercept_init", np.float64)
        # Set at once: another thread (a prediction, a pickle) sees the model
        # unfitted or with its whole state, never with part of it.
        self.__dict__.update(fresh)
        call = _TRAINING_CALL.get()
        if call is not None:
            call.fresh_z = self.z_

    # ------------------------------------------------------------ validation
    def _check_initial_accumulator_value(self):
        """Reject an ``initial_accumulator_value`` that ``dtype`` rounds to infinity.

        A float32 ``n`` holds at most 3.4e38: beyond, it would start as inf
        and the model would never learn.
        """
        try:
            with np.errstate(over="ignore"):
                fits = np.isfinite(np.array(self.initial_accumulator_value, dtype=self.dtype))
        except OverflowError:  # an int beyond every float
            fits = False
        if not fits:
            float32 = self.dtype == np.float32
            hint = "; use a smaller value or dtype=numpy.float64" if float32 else ""
            raise ValueError(
                f"initial_accumulator_value={self.initial_accumulator_value!r} does "
                f"not fit in a {np.dtype(self.dtype).name} state (at most "
                f"{np.finfo(self.dtype).max:.4g}){hint}."
            )

    def _validate_X_y(self, X, y, reset):
        """Validated canonical CSR X and 1-d y; ``reset`` starts a new model."""
        check_sparse_indices(X)
        with finite_check_of_huge_values():
            X, y = validate_data(
                self,
                X,
                y,
                accept_sparse="csr",
                dtype=FLOAT_DTYPES,
                reset=reset,
                y_numeric=self._numeric_targets,
            )
        return as_canonical_csr(X), y

    def _validate_X_predict(self, X):
        check_is_fitted(self)
        check_sparse_indices(X)
        with finite_check_of_huge_values():
            return validate_data(self, X, accept_sparse="csr", dtype=FLOAT_DTYPES, reset=False)

    def _validate_sample_weight(self, sample_weight, X):
        return checked_sample_weight(sample_weight, X)

    # -------------------------------------------------------------- training
    def _validate_params_if_changed(self):
        """partial_fit's check of the hyper-parameters, skipped when unchanged.

        scikit-learn's ``_fit_context`` checks them only on the first
        ``partial_fit``, yet ``set_params`` may change them between calls;
        checking every call would cost as much as learning a small batch of
        rows. So the values last checked are kept, and a changed one is
        checked again (:meth:`_validate_params` keeps them).
        """
        if getattr(self, "_checked_params", None) != self._param_values():
            self._validate_params()

    def _param_values(self):
        """The hyper-parameters' values, each with its type: 64.0 equals 64,
        but is not a valid ``batch_size``."""
        values = [getattr(self, name) for name in _param_names(type(self))]
        return tuple(zip(map(type, values), values))

    def _validate_params(self):
        """scikit-learn's check of each parameter, then of the engine with the
        batch size (a ValueError) and of numba for ``engine="numba"`` (an
        ImportError). The values checked are kept: a first ``partial_fit``,
        which ``_fit_context`` has just checked, does not check them again.
        (``fit`` and ``partial_fit`` are wrapped by ``unchanged_on_error``
        outside ``_fit_context``, so that a call that fails keeps no record of
        this check either.)"""
        super()._validate_params()
        constraints = self._parameter_constraints
        params = {name: getattr(self, name) for name in constraints}
        check_no_bool_counts(constraints, params, type(self).__name__)
        self._engine()
        self._checked_params = self._param_values()

    def _engine(self):
        """The engine of the training passes."""
        return get_engine(self._family, self.engine, self.batch_size)

    def _n_threads(self):
        """The threads of a pass: ``n_jobs``; None is 1, -1 all the CPUs, -2 all but one."""
        n_jobs = 1 if self.n_jobs is None else self.n_jobs
        return max(1, joblib.cpu_count() + 1 + n_jobs) if n_jobs < 0 else n_jobs

    def _prediction_engine(self):
        """The engine whose weights and margins predictions use."""
        return prediction_engine(self._family, self.engine)

    def _writable_state(self):
        """The learned state with writable views of its per-feature arrays, for
        a pass (the per-output arrays are writable)."""
        state = self._state()
        return state._make(writable(array) if array.ndim > 1 else array for array in state)

    def _check_state_parameters(self):
        """Refuse, before a pass, a parameter changed since the state was
        created that applies only when a state is created (``dtype`` and
        those of ``_STATE_PARAMETERS``): ignoring it would be silent."""
        if self.z_.dtype != np.dtype(self.dtype):
            raise ValueError(
                f"dtype={np.dtype(self.dtype).name} differs from the state's "
                f"{self.z_.dtype.name}: the state's storage type is set when it is "
                "created. Fit a new state (fit with warm_start=False), or set "
                "dtype back."
            )
        # A model pickled before this record existed has none to check.
        for name, created_with in getattr(self, "_state_parameters", {}).items():
            if getattr(self, name) != created_with:
                raise ValueError(
                    f"{name}={getattr(self, name)!r} differs from {created_with!r}, the "
                    f"value the state was created with: {name} applies only when a state "
                    f"is created. Fit a new state (fit with warm_start=False), or set "
                    f"{name} back."
                )

    def _pass(self, X, targets, sample_weight, rows):
        """One pass over ``rows``; returns each row's margin before it was learned."""
        engine = self._engine()
        state = self._writable_state()  # each array checked first
        self._check_state_parameters()
        undo = None
        call = _TRAINING_CALL.get()
        # A state made by this call is dropped on failure; a pass over rows
        # another record of the call covers changes nothing that record does
        # not restore.
        if call is not None and call.fresh_z is not self.z_:
            if not any(record.covers(X, rows) for record in call.undo_records):
                record, undo = undo_record(state, X, rows)
                call.undo_records.append(record)
        # The weights kept for prediction go stale as the state changes; they
        # are dropped after the pass too, in case another thread predicted
        # during it.
        cache = self._cache()
        cache.clear()
        n_jobs = self._n_threads()
        arguments = (state, self._parameters(), X, targets, sample_weight, rows, undo)
        if n_jobs > 1 and engine.learns_without_gil:
            layouts = [pair[3] for pair in self._SAVED_PAIRS]
            seen = self.n_samples_seen_
            margins = learn_in_rounds(
                engine, *arguments, n_jobs=n_jobs, seen=seen, layouts=layouts
            )
        else:
            margins = engine.learn(*arguments)
        cache.clear()
        self.n_samples_seen_ += len(rows)
        return margins

    def _mean_loss(self, margins, targets, weights):
        """The sample-weighted mean of the model's loss over rows with these margins."""
        largest_weight = weights.max()
        # All-zero weights (possible through class_weight) weigh nothing.
        if largest_weight == 0:
            return 0.0
        # Weights relative to the largest, so that their sums cannot
        # overflow (weights near 1e308 would give inf / inf).
        weights = weights / largest_weight
        row_losses = self._loss().value(margins, targets)
        with np.errstate(over="ignore", invalid="ignore"):
            mean = blocked_dot(row_losses, weights) / float(weights.sum())
        if not np.isfinite(mean):
            # Losses near the largest float: their weighted sum overflowed.
            # Averaged relative to the largest, no partial sum can overflow,
            # in whatever order the dot product's kernel adds them (a mean of
            # losses at the largest float can round up past it: clamped).
            largest_loss = float(np.abs(row_losses).max())
            relative = blocked_dot(row_losses / largest_loss, weights) / float(weights.sum())
            mean = min(max(relative * largest_loss, -LARGEST), LARGEST)
        return mean

    def _learn(self, X, targets, sample_weight, rows):
        """One pass over ``rows``, recorded in ``loss_curve_``; returns its loss.

        The loss is the weighted mean over the rows, each scored before it was
        learned from (progressive validation), as Vowpal Wabbit reports it.
        """
        margins = self._pass(X, targets, sample_weight, rows)
        pass_loss = self._mean_loss(margins, targets[rows], sample_weight[rows])
        # Appended last, so that an error earlier leaves the list as it was.
        self.loss_curve_.append(pass_loss)
        return pass_loss

    def _validation_split(self, targets, random_state):
        """Training and validation rows for ``early_stopping``, as SGDClassifier.

        Stratified by class for classifiers, unless a class has a single row
        or a set would be smaller than the number of classes; raises a
        ValueError naming the problem when either set would be empty.
        """
        n_rows = len(targets)
        if n_rows < 2:
            raise ValueError(
                f"early_stopping needs at least 2 samples to split off a "
                f"validation set; got n_samples={n_rows}. Pass "
                "early_stopping=False to fit on fewer."
            )
        # Imported here: sklearn.model_selection brings scipy.stats, which the
        # command line defers (skftrl._cli.lean_imports).
        from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

        splitter = ShuffleSplit
        if is_classifier(self):
            counts = np.unique(targets, return_counts=True)[1]
            n_validation = int(np.ceil(self.validation_fraction * n_rows))
            # Stratification needs each class in both sets.
            if counts.min() >= 2 and len(counts) <= min(n_validation, n_rows - n_validation):
                splitter = StratifiedShuffleSplit
        cv = splitter(test_size=self.validation_fraction, random_state=random_state)
        training_rows, validation_rows = next(cv.split(np.zeros((n_rows, 1)), targets))
        # In their original order, which fit keeps when shuffle=False.
        return np.sort(training_rows), np.sort(validation_rows)

    def _held_out_loss(self, X, y, sample_weight):
        """The summed loss of rows of a fitted model and their summed weight,
        each row's loss as early stopping scores it; the rows are validated
        as :meth:`partial_fit` validates them."""
        X, targets, sample_weight = self._prepare_rows(X, y, sample_weight)
        total = float(sample_weight.sum())
        return self._mean_loss(self._linear_scores(X), targets, sample_weight) * total, total

    def _prepare_rows(self, X, y, sample_weight):
        """Validated rows for the fitted model: canonical CSR X, the passes'
        targets and per-row weights."""
        raise NotImplementedError

    def _fit_passes(self, X, targets, sample_weight):
        """The passes of :meth:`fit`, by ``early_stopping``.

        ``"refit"`` and ``True`` learn the rows outside a held-out
        ``validation_fraction``, score the held-out rows' mean loss after
        each pass (kept negated in ``validation_scores_``), and stop when it
        has not improved on the best by at least ``tol`` for
        ``n_iter_no_change`` passes in a row. ``True`` then restores the
        state of the pass with the lowest held-out loss; ``"refit"`` restores
        the state fit started from and learns all the rows in as many passes
        as the last pass within ``tol`` of that loss had.
        ``False`` stops on the progressive loss of the passes over all rows.
        """
        if not sample_weight.any():
            # As scikit-learn's estimators refuse it; a stream's chunk may weigh nothing.
            raise ValueError(
                "fit needs a row of non-zero weight: the sample weights of all "
                f"{len(sample_weight)} rows are 0 (class_weight applied). partial_fit "
                "takes rows that all weigh nothing, and learns nothing from them."
            )
        random_state = check_random_state(self.random_state)
        if not self.early_stopping:
            stopping = EarlyStopping(self.tol, self.n_iter_no_change)
            self.validation_scores_ = self.best_validation_score_ = None
            self.n_iter_ = self.best_iteration_ = self._passes_until_no_change(
                X, targets, sample_weight, np.arange(X.shape[0]), random_state, stopping
            )
            return
        rows, validation_rows = self._validation_split(targets, random_state)
        held_out = (X[validation_rows], targets[validation_rows], sample_weight[validation_rows])
        # True returns the pass of the lowest held-out loss, the model that
        # scored best, as MLPClassifier, LightGBM and Vowpal Wabbit keep
        # theirs. "refit" takes only a number of passes from it: the last
        # whose loss is within tol of the lowest, since passes closer than tol
        # count as equal and the later one has learned more, which matters
        # when refit learns 10% more rows; it starts again from the state fit
        # started from. Only the columns of X change during fit, so a
        # checkpoint of theirs is one of the state.
        keep_best = self.early_stopping is True
        stopping = early_stopping_of(
            self,
            np.unique(X.indices),
            tie=0.0 if keep_best else (self.tol or 0.0),
            keep_best=keep_best,
        )
        self.n_iter_ = self._passes_until_no_change(
            X, targets, sample_weight, rows, random_state, stopping, held_out
        )
        self.best_iteration_ = stopping.best_pass
        self.validation_scores_ = [-loss for loss in stopping.losses]
        self.best_validation_score_ = -stopping.best_loss
        stopping.restore()
        if self.early_stopping == "refit":
            all_rows = np.arange(X.shape[0])
            for _ in range(self.best_iteration_):
                if self.shuffle:
                    random_state.shuffle(all_rows)
                self._learn(X, targets, sample_weight, all_rows)

    def _passes_until_no_change(
        self, X, targets, sample_weight, rows, random_state, stopping, held_out=None
    ):
        """Passes over ``rows`` (shuffled when ``shuffle``) until ``stopping``
        stops them, or ``max_iter`` passes; returns the number of passes made.

        Each pass's loss is the mean loss of the ``held_out`` rows
        ``(X, targets, sample_weight)`` after it, or without them its
        progressive loss.
        """
        for n_iter in range(1, self.max_iter + 1):
            if self.shuffle:
                random_state.shuffle(rows)
            loss = self._learn(X, targets, sample_weight, rows)
            if held_out is not None:
                held_out_X, *held_out_rows = held_out
                loss = self._mean_loss(self._linear_scores(held_out_X), *held_out_rows)
            stopping.end_pass(loss)
            if stopping.stopped:
                return n_iter
        if self.tol is not None and self.max_iter > 1:
            warnings.warn(
                f"Maximum number of passes ({self.max_iter}) reached before the "
                f"{'held-out' if held_out is not None else 'training'} loss "
                "stopped improving; consider increasing max_iter.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self.max_iter

    # ------------------------------------------------------------ prediction
    def _decision_scores(self, X):
        """Linear scores of shape (n_samples, n_outputs), from weights computed once."""
        return self._linear_scores(self._validate_X_predict(X))

    def _linear_scores(self, X):
        """:meth:`_decision_scores` of an already validated X, with the weights
        the prediction cache keeps or computes (skftrl._engines._prediction)."""
        return self._cache().margins(
            X, self._state(), self._parameters(), self._prediction_engine()
        )
