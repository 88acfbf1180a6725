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
)
from ._engines._math import LARGEST, intercept_weights
from ._engines._prediction import PredictionCache

# Feature matrices are accepted in these dtypes without conversion.
FLOAT_DTYPES = (np.float64, np.float32)


class _TrainingCall:
    """What a call of a method wrapped by :func:`unchanged_on_error` must undo."""

    def __init__(self):
        self.fresh_z = None  # z_ of a state the call made: nothing to restore in it
        self.undo_logs = []  # of the call's passes


_TRAINING_CALL = contextvars.ContextVar("skftrl_training_call", default=None)


def unchanged_on_error(method):
    """Leave the estimator exactly as it was if ``method`` raises.

    Any exception counts, KeyboardInterrupt and warnings turned into errors
    included, wherever it is raised. Validation (scikit-learn's
    ``validate_data`` among it) sets attributes such as ``n_features_in_``
    before it has checked everything: restoring the attribute dictionary
    undoes that. Lists (``loss_curve_``) are cut back to their length. A pass
    changes the state arrays in place: it records the old values of what it
    changes (:class:`~skftrl._engines.UndoLog`), which are written back.
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
            for undo_log in reversed(call.undo_logs):
                undo_log.restore()
            for value, length in lists:
                del value[length:]
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        finally:
            _TRAINING_CALL.reset(token)

    return wrapper


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
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "engine": [StrOptions({"auto", "numpy", "numba"})],
        "dtype": [Options(type, {np.float64, np.float32})],
    }

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_prediction_cache", None)  # not part of the model
        return state

    def __setstate__(self, state):
        # pickle, copy.deepcopy and skops store z_ and n_ as two separate
        # arrays: put them back into one buffer, as _init_state makes them.
        super().__setstate__(state)
        if "z_" in self.__dict__:
            self.z_, self.n_ = _stored_state(self.z_, self.n_)
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
        return self._cache().coef(
            self._state(), self._parameters(), prediction_engine(self.engine)
        )

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
        z, n = new_state(n_outputs, n_features, self.dtype, self.initial_accumulator_value)
        self.z_, self.n_ = _read_only(z), _read_only(n)
        self.z_intercept_ = np.zeros(n_outputs, dtype=np.float64)
        self.n_intercept_ = np.full(n_outputs, self.initial_accumulator_value, dtype=np.float64)
        self._prediction_cache = PredictionCache()
        self.n_samples_seen_ = 0
        self.loss_curve_ = []
        self.validation_scores_ = None
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
        return _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )

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

    def _pass(self, X, targets, sample_weight, rows):
        """One pass over ``rows``; returns each row's margin before it was learned."""
        engine = get_engine(self.engine, self.batch_size)
        if self.z_.dtype != np.dtype(self.dtype):
            raise ValueError(
                f"dtype={np.dtype(self.dtype).name} differs from the state's "
                f"{self.z_.dtype.name}: the state's storage type is set when it is "
                "created. Fit a new state (fit with warm_start=False), or set "
                "dtype back."
            )
        state = LinearState(
            _writable(self.z_), _writable(self.n_), self.z_intercept_, self.n_intercept_
        )
        undo = None
        call = _TRAINING_CALL.get()
        # A state made by this call is dropped on failure; a pass over rows
        # another log of the call covers changes nothing that log does not restore.
        if call is not None and call.fresh_z is not self.z_:
            if not any(undo_log.covers(X, rows) for undo_log in call.undo_logs):
                undo = UndoLog(state, X, rows)
                call.undo_logs.append(undo)
        # The weights kept for prediction go stale as the state changes; they
        # are dropped after the pass too, in case another thread predicted
        # during it.
        cache = self._cache()
        cache.clear()
        margins = engine.learn(state, self._parameters(), X, targets, sample_weight, rows, undo)
        cache.clear()
        self.n_samples_seen_ += len(rows)
        return margins

    def _learn(self, X, targets, sample_weight, rows):
        """One pass over ``rows``, recorded in ``loss_curve_``; returns its loss.

        The loss is the weighted mean over the rows, each scored before it was
        learned from (progressive validation), as Vowpal Wabbit reports it.
        """
        margins = self._pass(X, targets, sample_weight, rows)
        weights = sample_weight[rows]
        largest_weight = weights.max()
        # All-zero weights (possible through class_weight) learn nothing.
        if largest_weight == 0:
            pass_loss = 0.0
        else:
            # Weights relative to the largest, so that their sums cannot
            # overflow (weights near 1e308 would give inf / inf).
            weights = weights / largest_weight
            row_losses = self._loss().value(margins, targets[rows])
            with np.errstate(over="ignore", invalid="ignore"):
                pass_loss = float(row_losses @ weights / weights.sum())
            if not np.isfinite(pass_loss):
                # Losses near the largest float: their weighted sum overflowed.
                pass_loss = float(row_losses @ (weights / weights.sum()))
                pass_loss = min(max(pass_loss, -LARGEST), LARGEST)
        # Appended last, so that an error earlier leaves the list as it was.
        self.loss_curve_.append(pass_loss)
        return pass_loss

    def _validation_split(self, targets, random_state):
        """Training and validation rows for ``early_stopping``, as SGDClassifier.

        Stratified by class for classifiers; raises a ValueError naming the
        problem when either set would be empty.
        """
        n_rows = len(targets)
        if n_rows < 2:
            raise ValueError(
                f"early_stopping needs at least 2 samples to split off a "
                f"validation set; got n_samples={n_rows}."
            )
        splitter = StratifiedShuffleSplit if is_classifier(self) else ShuffleSplit
        cv = splitter(test_size=self.validation_fraction, random_state=random_state)
        training_rows, validation_rows = next(cv.split(np.zeros((n_rows, 1)), targets))
        # In their original order, which fit keeps when shuffle=False.
        return np.sort(training_rows), np.sort(validation_rows)

    def _validation_score(self, X, targets, sample_weight):
        """The score of ``early_stopping`` (accuracy or R^2), on encoded targets."""
        raise NotImplementedError

    def _fit_passes(self, X, targets, sample_weight):
        """Up to ``max_iter`` shuffled passes, stopping on ``tol`` as SGDClassifier.

        Without ``early_stopping``, training stops when the mean progressive
        loss of a pass has not improved on the best one by at least ``tol``
        for ``n_iter_no_change`` passes in a row. With it, the criterion is
        the score on a held-out ``validation_fraction`` of the rows, which
        are then not learned from.
        """
        random_state = check_random_state(self.random_state)
        rows = np.arange(X.shape[0])
        if self.early_stopping:
            rows, validation_rows = self._validation_split(targets, random_state)
            X_validation = X[validation_rows]
            validation_scores = []
        best = np.inf  # of the criterion, lower is better
        passes_without_improvement = 0
        for n_iter in range(1, self.max_iter + 1):
            if self.shuffle:
                random_state.shuffle(rows)
            criterion = self._learn(X, targets, sample_weight, rows)
            if self.early_stopping:
                score = self._validation_score(
                    X_validation, targets[validation_rows], sample_weight[validation_rows]
                )
                validation_scores.append(score)
                criterion = -score
            if self.tol is not None:
                if criterion > best - self.tol:
                    passes_without_improvement += 1
                else:
                    passes_without_improvement = 0
                best = min(best, criterion)
                if passes_without_improvement >= self.n_iter_no_change:
                    break
        self.n_iter_ = n_iter
        self.validation_scores_ = validation_scores if self.early_stopping else None
        if (
            self.tol is not None
            and self.max_iter > 1
            and passes_without_improvement < self.n_iter_no_change
        ):
            warnings.warn(
                f"Maximum number of passes ({self.max_iter}) reached before the "
                f"{'validation score' if self.early_stopping else 'training loss'} "
                "stopped improving; consider increasing max_iter.",
                ConvergenceWarning,
            )

    # ------------------------------------------------------------ prediction
    def _decision_scores(self, X):
        """Linear scores of shape (n_samples, n_outputs), from weights computed once."""
        return self._linear_scores(self._validate_X_predict(X))

    def _linear_scores(self, X):
        """:meth:`_decision_scores` of an already validated X, with the weights
        the prediction cache keeps or computes (skftrl._engines._prediction)."""
        return self._cache().margins(
            X, self._state(), self._parameters(), prediction_engine(self.engine)
        )
