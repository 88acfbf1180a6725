"""Logic shared by every estimator: parameters, the state and its persistence,
the training passes and their transaction, early stopping, and the scores.

A model family's estimators (the factorization machines, :mod:`._fm`) add to
:class:`BaseFTRL` their family's name, state record, parameters, fresh state
and the initial values of what they save compactly (docs: developers,
"Adding a model family")."""

import contextvars
import functools
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from ._engines import (
    ColumnCopy,
    LinearState,
    Parameters,
    get_engine,
    new_state,
    prediction_engine,
    undo_record,
)
from ._engines._math import LARGEST, intercept_weights
from ._engines._prediction import PredictionCache
from ._engines._undo import writable
from ._stopping import EarlyStopping
from ._validation import (
    FLOAT_DTYPES,
    as_canonical_csr,
    check_sparse_indices,
    finite_check_of_huge_values,
)


class _TrainingCall:
    """What a call of a method wrapped by :func:`unchanged_on_error` must undo."""

    def __init__(self):
        self.fresh_z = None  # z_ of a state the call made: nothing to restore in it
        self.undo_records = []  # of the call's passes (see undo_record)


_TRAINING_CALL = contextvars.ContextVar("skftrl_training_call", default=None)


def unchanged_on_error(method):
    """Leave the estimator exactly as it was if ``method`` raises.

    Any exception counts, KeyboardInterrupt and warnings turned into errors
    included, wherever it is raised. Validation (scikit-learn's
    ``validate_data`` among it) sets attributes such as ``n_features_in_``
    before it has checked everything: restoring the attribute dictionary
    undoes that. Lists (``loss_curve_``) are cut back to their length. A pass
    changes the state arrays in place: a copy of the state made before it, or
    a log of the old values of what it changes
    (:func:`~skftrl._engines.undo_record`), is written back.
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)
        lists = [(value, len(value)) for value in saved.values() if type(value) is list]
        call = _TrainingCall()
        token = _TRAINING_CALL.set(call)
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            for record in reversed(call.undo_records):
                record.restore()
            for value, length in lists:
                del value[length:]
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        finally:
            _TRAINING_CALL.reset(token)

    return wrapper


def touched_coordinates(z, n, z0, n0):
    """The coordinates where ``z`` or ``n`` differ from their initial values
    ``z0`` and ``n0`` (arrays of the same shape, or scalars), compared bit for
    bit: a dict of the shape, their flat positions and values, to save a
    model compactly. None when that would not be smaller than the arrays."""
    bits = np.dtype(f"u{z.dtype.itemsize}")

    def differs(array, initial):
        return array.view(bits) != np.asarray(initial, dtype=array.dtype).view(bits)

    touched = differs(z, z0) | differs(n, n0)
    if np.count_nonzero(touched) * (8 + 2 * z.dtype.itemsize) >= 2 * z.nbytes:
        return None
    return {
        "shape": np.array(z.shape, dtype=np.int64),
        "positions": np.flatnonzero(touched),
        "z": z[touched],
        "n": n[touched],
    }


def put_touched_coordinates(touched, z, n):
    """Write the coordinates of :func:`touched_coordinates` into the initial ``z`` and ``n``."""
    where = np.unravel_index(touched["positions"], z.shape)
    z[where], n[where] = touched["z"], touched["n"]


def _read_only(array):
    """``array``, made read-only: the exposed state, which the kept weights
    were computed from, can then change only through a training pass."""
    array.flags.writeable = False
    return array


def _linear_layout(shape, dtype):
    """A new ``(z, n)`` of ``shape`` (K, F) as :func:`new_state` lays them out."""
    return new_state(*shape, dtype)


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


class BaseFTRL(BaseEstimator):
    """Hyper-parameters, state and training loop of every estimator."""

    # Whether validate_data should require (and convert) numeric targets.
    _numeric_targets = True
    # The model family (a key of skftrl._engines.FAMILIES) and its state
    # record, whose field ``name`` is the attribute ``name_``.
    _family = "linear"
    _state_record = LinearState

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
        "dtype": [Options(type, {np.float64, np.float32})],
    }
    # Parameters read only when a state is created (besides dtype, which the
    # state's arrays record): _init_state records them, each pass checks them.
    _STATE_PARAMETERS = ("initial_accumulator_value",)

    # The state's pairs of per-feature arrays as a saved model keeps them: the
    # attributes of z and n, the saved entry of their touched coordinates, and
    # their layout ``(shape, dtype) -> new (z, n)`` in one buffer.
    _SAVED_PAIRS = (("z_", "n_", "_touched_state", _linear_layout),)

    def _untouched(self, entry, shape, dtype):
        """The ``(z, n)`` of the untouched coordinates of the pair saved as
        ``entry``: scalars, or arrays of ``shape``; None when this model
        cannot make them again."""
        with np.errstate(over="ignore"):
            return 0, np.dtype(dtype).type(self.initial_accumulator_value)

    def __getstate__(self):
        # A saved (pickled, joblib, skops) or deep-copied model keeps only the
        # coordinates training has touched, when that is smaller: its file
        # grows with the model's non-zero state, not with its width (2**20
        # hashed columns are 16 MB of float64 state, most of it untouched).
        # Untouched means z and n equal the values they started from, compared
        # bit for bit, so that loading restores the exact state.
        # A copy: object.__getstate__ may return the instance's own __dict__.
        state = dict(super().__getstate__())
        # Not part of the model: the kept weights, and the record of the
        # hyper-parameters last validated (which holds types: a loaded model
        # validates its parameters again on its first partial_fit).
        state.pop("_prediction_cache", None)
        state.pop("_checked_params", None)
        for z_name, n_name, entry, _ in self._SAVED_PAIRS:
            if z_name not in state:
                continue
            z, n = state[z_name], state[n_name]
            untouched = self._untouched(entry, z.shape, z.dtype)
            touched = None if untouched is None else touched_coordinates(z, n, *untouched)
            if touched is not None:
                del state[z_name], state[n_name]
                if np.ndim(untouched[1]) == 0:  # the untouched n, as saved models hold it
                    touched["fill"] = np.asarray([untouched[1]], dtype=z.dtype)
                state[entry] = touched
        return state

    def __setstate__(self, state):
        # pickle, copy.deepcopy and skops store each z and n as two separate
        # arrays, or only their touched coordinates (see __getstate__): put
        # them back into one buffer, as _init_state makes them.
        state = dict(state)
        saved = {pair[2]: state.pop(pair[2]) for pair in self._SAVED_PAIRS if pair[2] in state}
        super().__setstate__(state)
        for z_name, n_name, entry, layout in self._SAVED_PAIRS:
            if entry in saved:
                touched = saved[entry]
                shape = tuple(int(size) for size in touched["shape"])
                z, n = layout(shape, touched["z"].dtype)
                z[...], n[...] = self._untouched(entry, shape, z.dtype)
                put_touched_coordinates(touched, z, n)
                setattr(self, z_name, _read_only(z))
                setattr(self, n_name, _read_only(n))
            elif z_name in self.__dict__:
                self._store_copy(z_name, n_name, layout)
        if "z_" in self.__dict__:
            self._prediction_cache = PredictionCache()

    def _store_copy(self, z_name, n_name, layout):
        """Replace the arrays ``z_name`` and ``n_name`` with read-only copies in
        one buffer of ``layout``."""
        z, n = getattr(self, z_name), getattr(self, n_name)
        z_copy, n_copy = layout(z.shape, z.dtype)
        z_copy[...], n_copy[...] = z, n
        setattr(self, z_name, _read_only(z_copy))
        setattr(self, n_name, _read_only(n_copy))

    def __copy__(self):
        """A shallow copy that shares no learned array or list with the original,
        so that training the copy never changes the original."""
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        for name, value in self.__dict__.items():
            if type(value) is list:
                copied.__dict__[name] = list(value)
        if "z_" in self.__dict__:
            for z_name, n_name, _, layout in self._SAVED_PAIRS:
                copied._store_copy(z_name, n_name, layout)
            copied.z_intercept_ = self.z_intercept_.copy()
            copied.n_intercept_ = self.n_intercept_.copy()
            copied._prediction_cache = PredictionCache()
        return copied

    def __sklearn_is_fitted__(self):
        return hasattr(self, "z_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ----------------------------------------------------------------- state
    @property
    def coef_(self):
        """Weights, shape (n_outputs, n_features), from the state in closed form."""
        check_is_fitted(self)
        return self._cache().coef(self._state(), self._parameters(), self._prediction_engine())

    @property
    def intercept_(self):
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
        """The learned state, as the engines take it (read-only arrays)."""
        return self._state_record(
            *(getattr(self, f"{name}_") for name in self._state_record._fields)
        )

    def _cache(self):
        """The model's prediction cache (a throwaway one for a state set by hand)."""
        return self.__dict__.get("_prediction_cache") or PredictionCache()

    def _init_state(self, n_outputs, n_features):
        """A fresh state: ``z = 0`` and ``n = initial_accumulator_value``.

        Sets ``z_``, ``n_``, the intercept's, the prediction cache and the
        records of training.
        """
        self._check_initial_accumulator_value()
        self._state_parameters = {name: getattr(self, name) for name in self._STATE_PARAMETERS}
        z, n = new_state(n_outputs, n_features, self.dtype, self.initial_accumulator_value)
        self.z_, self.n_ = _read_only(z), _read_only(n)
        self.z_intercept_ = np.zeros(n_outputs, dtype=np.float64)
        self.n_intercept_ = np.full(n_outputs, self.initial_accumulator_value, dtype=np.float64)
        self._prediction_cache = PredictionCache()
        self.n_samples_seen_ = 0
        self.loss_curve_ = []
        self.validation_scores_ = self.best_validation_score_ = self.best_iteration_ = None
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
        return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)

    # -------------------------------------------------------------- training
    def _validate_params_if_changed(self):
        """partial_fit's check of the hyper-parameters, skipped when unchanged.

        scikit-learn's ``_fit_context`` checks them only on the first
        ``partial_fit``, yet ``set_params`` may change them between calls;
        checking every call would cost as much as learning a small batch of
        rows. So the values last checked are kept, and a changed one is
        checked again. Values are compared with their types: 64.0 equals 64,
        but is not a valid ``batch_size``.
        """
        names = _param_names(type(self))
        values = [getattr(self, name) for name in names]
        values = tuple(zip(map(type, values), values))
        if getattr(self, "_checked_params", None) != values:
            self._validate_params()
            self._checked_params = values

    def _validate_params(self):
        """scikit-learn's check of each parameter, then of the engine with the
        batch size (a ValueError) and of numba for ``engine="numba"`` (an
        ImportError)."""
        super()._validate_params()
        self._engine()

    def _engine(self):
        """The engine of the training passes."""
        return get_engine(self._family, self.engine, self.batch_size)

    def _prediction_engine(self):
        """The engine whose weights and margins predictions use."""
        return prediction_engine(self._family, self.engine)

    def _writable_state(self):
        """The learned state with writable views of its per-feature arrays, for
        a pass (the per-output arrays are writable)."""
        return self._state()._make(
            writable(array) if array.ndim > 1 else array for array in self._state()
        )

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
        self._check_state_parameters()
        state = self._writable_state()
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
        margins = engine.learn(state, self._parameters(), X, targets, sample_weight, rows, undo)
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
            mean = float(row_losses @ weights / weights.sum())
        if not np.isfinite(mean):
            # Losses near the largest float: their weighted sum overflowed.
            # Averaged relative to the largest, no partial sum can overflow,
            # in whatever order the dot product's kernel adds them (a mean of
            # losses at the largest float can round up past it: clamped).
            largest_loss = float(np.abs(row_losses).max())
            relative = float((row_losses / largest_loss) @ weights / weights.sum())
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
