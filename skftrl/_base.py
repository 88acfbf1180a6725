"""Logic shared by FTRLClassifier and FTRLRegressor: parameters, input
validation, the state, the training passes, and the linear scores."""

import contextvars
import functools
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
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
    LinearState,
    Parameters,
    UndoLog,
    check_engine,
    get_engine,
    new_state,
    prediction_engine,
    undo_record,
)
from ._engines._math import LARGEST, intercept_weights
from ._engines._prediction import PredictionCache

# Feature matrices are accepted in these dtypes without conversion.
FLOAT_DTYPES = (np.float64, np.float32)


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


def as_canonical_csr(X):
    """CSR with sorted, summed column indices; the caller's matrix is never modified.

    Dense input becomes CSR so that training touches only non-zero values.
    """
    if not sp.issparse(X):
        return sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


# scikit-learn checks that input is finite by summing it first: values of
# both signs near the largest float sum to inf - inf, which warns of an
# invalid value although every value is finite.
_FINITE_CHECK_OF_HUGE_VALUES = functools.partial(np.errstate, over="ignore", invalid="ignore")

# The unsigned integer type of each size in bytes, to see indices as unsigned.
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def check_sparse_indices(X):
    """Raise a ValueError if the index arrays of a sparse ``X`` point outside it.

    scipy checks a matrix's ``indptr`` only when it is built, and never the
    range of its indices; they can also be assigned afterwards. An index
    outside ``[0, n_features)`` would make a pass write outside the state
    (numba) or update the wrong feature (numpy's negative indexing), and
    scipy's own conversion of a CSC or COO matrix would read outside its
    arrays. So this runs before anything else reads them: one pass over the
    stored indices (O(nnz)), and one over ``indptr``.
    """
    if not sp.issparse(X):
        return
    fmt = X.format
    if fmt == "coo":
        n_stored = len(X.data)
        # Row and column indices, each with the dimension it indexes.
        bounds = zip(X.coords, X.shape)
    elif fmt in ("csr", "csc", "bsr"):
        n_major, n_minor = X.shape if fmt != "csc" else X.shape[::-1]
        if fmt == "bsr":
            n_major, n_minor = n_major // X.blocksize[0], n_minor // X.blocksize[1]
        indptr = X.indptr
        n_stored = min(len(X.indices), len(X.data))
        if (
            indptr.dtype.kind not in "iu"
            or indptr.shape != (n_major + 1,)
            or indptr[0] != 0
            or indptr[-1] > n_stored
            or (indptr[1:] < indptr[:-1]).any()
        ):
            raise ValueError(
                f"X is a malformed {fmt.upper()} matrix: its indptr must be "
                f"{n_major + 1} non-decreasing integers from 0 to at most {n_stored}, "
                "the length of its indices and data; fix it, or check it with "
                "X.check_format()."
            )
        n_stored = int(indptr[-1])
        bounds = [(X.indices, n_minor)]
    else:
        return  # lil, dok, dia: converted by scipy through checked indexing
    for indices, size in bounds:
        if indices.dtype.kind not in "iu":
            raise ValueError(
                f"X is a malformed {fmt.upper()} matrix: its indices must be "
                f"integers; got dtype {indices.dtype}."
            )
        indices = indices[:n_stored]
        # Seen as unsigned, a negative index is above any size: one reduction.
        if indices.size and indices.view(_UNSIGNED[indices.itemsize]).max() >= size:
            raise ValueError(
                f"X is a malformed {fmt.upper()} matrix: its indices must lie in "
                f"[0, {size}), and range from {indices.min()} to {indices.max()}; "
                "fix it, or check it with X.check_format()."
            )


def _read_only(array):
    """``array``, made read-only: the exposed state, which the kept weights
    were computed from, can then change only through a training pass."""
    array.flags.writeable = False
    return array


def _writable(array):
    """A writable view of the state array ``array``, for a training pass."""
    view = array.view()
    view.flags.writeable = True
    return view


def _stored_state(z, n):
    """Read-only copies of ``z`` and ``n`` in one buffer, as ``new_state`` lays them out."""
    z_copy, n_copy = new_state(*z.shape, z.dtype)
    z_copy[...], n_copy[...] = z, n
    return _read_only(z_copy), _read_only(n_copy)


@functools.cache
def _param_names(estimator_class):
    """The class's hyper-parameter names (``get_params`` inspects them on each call)."""
    return tuple(estimator_class._get_param_names())


class NoImprovementRule:
    """The passes' stopping rule: stop once a loss (lower is better) has not
    improved on the lowest so far by ``tol`` for ``n_iter_no_change`` passes
    in a row; never with ``tol=None``. Used by ``fit`` and by the command
    line's held-out passes."""

    def __init__(self, tol, n_iter_no_change):
        self.tol, self.n_iter_no_change = tol, n_iter_no_change
        self.lowest = np.inf
        self.passes_without_improvement = 0

    def should_stop(self, loss):
        """Record a pass's loss; whether to stop after it."""
        if self.tol is None:
            return False
        if loss > self.lowest - self.tol:
            self.passes_without_improvement += 1
        else:
            self.passes_without_improvement = 0
        self.lowest = min(self.lowest, loss)
        return self.passes_without_improvement >= self.n_iter_no_change


class BaseFTRL(BaseEstimator):
    """Hyper-parameters, state and training loop of both FTRL estimators."""

    # Whether validate_data should require (and convert) numeric targets.
    _numeric_targets = True

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

    def __getstate__(self):
        # A saved (pickled, joblib, skops) or deep-copied model keeps only the
        # coordinates training has touched, when that is smaller: its file
        # grows with the model's non-zero state, not with its width (2**20
        # hashed columns are 16 MB of float64 state, most of it untouched).
        # Untouched means z = 0 and n = the value every n started from, both
        # compared bit for bit, so that loading restores the exact state.
        # A copy: object.__getstate__ may return the instance's own __dict__.
        state = dict(super().__getstate__())
        # Not part of the model: the kept weights, and the record of the
        # hyper-parameters last validated (which holds types: a loaded model
        # validates its parameters again on its first partial_fit).
        state.pop("_prediction_cache", None)
        state.pop("_checked_params", None)
        if "z_" not in state:
            return state
        with np.errstate(over="ignore"):
            fill = self.n_.dtype.type(self.initial_accumulator_value)
        touched = touched_coordinates(self.z_, self.n_, 0, fill)
        if touched is not None:
            del state["z_"], state["n_"]
            state["_touched_state"] = {**touched, "fill": np.asarray([fill], dtype=fill.dtype)}
        return state

    def __setstate__(self, state):
        # pickle, copy.deepcopy and skops store z_ and n_ as two separate
        # arrays, or only their touched coordinates (see __getstate__): put
        # them back into one buffer, as _init_state makes them.
        state = dict(state)
        touched = state.pop("_touched_state", None)
        super().__setstate__(state)
        if touched is not None:
            shape = tuple(int(size) for size in touched["shape"])
            z, n = new_state(*shape, touched["z"].dtype)
            n[...] = touched["fill"][0]
            put_touched_coordinates(touched, z, n)
            self.z_, self.n_ = _read_only(z), _read_only(n)
        elif "z_" in self.__dict__:
            self.z_, self.n_ = _stored_state(self.z_, self.n_)
        if "z_" in self.__dict__:
            self._prediction_cache = PredictionCache()

    def __copy__(self):
        """A shallow copy that shares no learned array or list with the original,
        so that training the copy never changes the original."""
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        for name, value in self.__dict__.items():
            if type(value) is list:
                copied.__dict__[name] = list(value)
        if "z_" in self.__dict__:
            copied.z_, copied.n_ = _stored_state(self.z_, self.n_)
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
        return LinearState(self.z_, self.n_, self.z_intercept_, self.n_intercept_)

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
        with _FINITE_CHECK_OF_HUGE_VALUES():
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
        with _FINITE_CHECK_OF_HUGE_VALUES():
            return validate_data(self, X, accept_sparse="csr", dtype=FLOAT_DTYPES, reset=False)

    def _validate_sample_weight(self, sample_weight, X):
        return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)

    # -------------------------------------------------------------- training
    def _validate_params_if_changed(self):
        """partial_fit's check of the hyper-parameters, skipped when unchanged.

        scikit-learn's ``_fit_context`` checks them only on the first
        ``partial_fit``, yet ``set_params`` may change them between calls;
        checking every call costs about 1 ms, as much as learning thousands
        of rows. So the values last checked are kept, and a changed one is
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
        check_engine(self.engine, self.batch_size)

    def _engine(self):
        """The engine of the training passes."""
        return get_engine(self.engine, self.batch_size)

    def _prediction_engine(self):
        """The engine whose weights and margins predictions use."""
        return prediction_engine(self.engine)

    def _writable_state(self):
        """The learned state with writable views of its arrays, for a pass."""
        return LinearState(
            _writable(self.z_), _writable(self.n_), self.z_intercept_, self.n_intercept_
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

    # The log a pass records its steps in (see undo_record).
    _undo_log_type = UndoLog

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
                record, undo = undo_record(state, X, rows, self._undo_log_type)
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

    def _validation_score(self, X, targets, sample_weight):
        """The held-out score of ``early_stopping``: minus the mean loss of the
        rows (log loss, or the regressor's training loss), so higher is better."""
        return -self._mean_loss(self._linear_scores(X), targets, sample_weight)

    def _snapshot_state(self, columns):
        """A copy of the state of the features ``columns`` (every per-feature
        array of :meth:`_state`, features on axis 1), of the per-output arrays
        and of the records of training (see :meth:`_restore_state`)."""
        return {
            "columns": columns,
            "arrays": [
                array[:, columns] if array.ndim > 1 else array.copy() for array in self._state()
            ],
            "n_samples_seen": self.n_samples_seen_,
            "n_loss_curve": len(self.loss_curve_),
        }

    def _copy_state_into(self, snapshot):
        """Copy the current state of ``snapshot``'s columns into it, in place
        (a snapshot is allocated once per fit, however often it is updated)."""
        columns = snapshot["columns"]
        for kept, array in zip(snapshot["arrays"], self._state()):
            # Not np.take(..., out=): on strided state views it copies the
            # whole array first.
            kept[...] = array[:, columns] if array.ndim > 1 else array
        snapshot["n_samples_seen"] = self.n_samples_seen_
        snapshot["n_loss_curve"] = len(self.loss_curve_)

    def _restore_state(self, snapshot):
        """Put the model back as it was when ``snapshot`` was taken, provided
        that only its columns were learned from since."""
        self._cache().clear()  # the kept weights are those of another state
        columns = snapshot["columns"]
        for kept, array in zip(snapshot["arrays"], self._writable_state()):
            if array.ndim > 1:
                array[:, columns] = kept
            else:
                array[...] = kept
        self.n_samples_seen_ = snapshot["n_samples_seen"]
        del self.loss_curve_[snapshot["n_loss_curve"] :]

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
            self.validation_scores_ = self.best_validation_score_ = None
            self.n_iter_ = self.best_iteration_ = self._passes_until_no_change(
                X, targets, sample_weight, np.arange(X.shape[0]), random_state
            )
            return
        rows, validation_rows = self._validation_split(targets, random_state)
        X_validation = X[validation_rows]
        validation = (targets[validation_rows], sample_weight[validation_rows])
        # Only the columns of X change during fit, so a copy of theirs is a
        # copy of the state: its size is the distinct columns X uses, never
        # more than one pass reads, not the whole width of a hashed model.
        kept = self._snapshot_state(np.unique(X.indices))
        validation_scores = []
        # True returns the pass of the lowest held-out loss, the model that
        # scored best, as MLPClassifier, LightGBM and Vowpal Wabbit keep
        # theirs. "refit" takes only a number of passes from it: the last
        # whose loss is within tol of the lowest, since passes closer than tol
        # count as equal and the later one has learned more, which matters
        # when refit learns 10% more rows.
        tie = 0.0 if self.early_stopping is True else (self.tol or 0.0)
        best_iteration = 0

        def held_out_loss():
            nonlocal best_iteration
            score = self._validation_score(X_validation, *validation)
            validation_scores.append(score)
            # Within tol of the best so far is within tol of the best of all
            # passes to come, unless a later one is best: then it is kept.
            if score >= max(validation_scores) - tie:
                best_iteration = len(validation_scores)
                if self.early_stopping is True:
                    self._copy_state_into(kept)
            return -score

        self.n_iter_ = self._passes_until_no_change(
            X, targets, sample_weight, rows, random_state, held_out_loss
        )
        self.best_iteration_ = best_iteration
        self.validation_scores_ = validation_scores
        self.best_validation_score_ = validation_scores[self.best_iteration_ - 1]
        self._restore_state(kept)
        if self.early_stopping == "refit":
            all_rows = np.arange(X.shape[0])
            for _ in range(self.best_iteration_):
                if self.shuffle:
                    random_state.shuffle(all_rows)
                self._learn(X, targets, sample_weight, all_rows)

    def _passes_until_no_change(
        self, X, targets, sample_weight, rows, random_state, criterion=None
    ):
        """Passes over ``rows`` (shuffled when ``shuffle``) until ``criterion()``
        after a pass (default: the pass's progressive loss; lower is better)
        has not improved on the best by ``tol`` for ``n_iter_no_change`` passes
        in a row, or ``max_iter`` passes; returns the number of passes made."""
        rule = NoImprovementRule(self.tol, self.n_iter_no_change)
        for n_iter in range(1, self.max_iter + 1):
            if self.shuffle:
                random_state.shuffle(rows)
            value = self._learn(X, targets, sample_weight, rows)
            if criterion is not None:
                value = criterion()
            if rule.should_stop(value):
                return n_iter
        if self.tol is not None and self.max_iter > 1:
            warnings.warn(
                f"Maximum number of passes ({self.max_iter}) reached before the "
                f"{'held-out' if criterion is not None else 'training'} loss "
                "stopped improving; consider increasing max_iter.",
                ConvergenceWarning,
                stacklevel=3,
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
