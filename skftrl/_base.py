"""Logic shared by FTRLClassifier and FTRLRegressor: parameters, input
validation, the state, the training passes, and the linear scores."""

import functools
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from ._kernel import ftrl_minibatch_pass, ftrl_pass, loss_value, weights_from_state

# Feature matrices are accepted in these dtypes without conversion.
FLOAT_DTYPES = (np.float64, np.float32)


def unchanged_on_error(method):
    """Leave the estimator exactly as it was if ``method`` raises.

    Validation (scikit-learn's ``validate_data`` among it) sets attributes such
    as ``n_features_in_`` before it has checked everything. Restoring the
    attribute dictionary undoes that. Arrays of the state are only modified in
    place after all validation has passed, so a shallow restore is enough.
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

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


class BaseFTRL(BaseEstimator):
    """Hyper-parameters, state and training loop of both FTRL estimators."""

    # Whether validate_data should require (and convert) numeric targets.
    _numeric_targets = True

    _parameter_constraints: dict = {
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "l1": [Interval(Real, 0, None, closed="left")],
        "l2": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "engine": [StrOptions({"auto", "numpy", "numba"})],
        "dtype": [Options(type, {np.float64, np.float32})],
    }

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
        return weights_from_state(
            self.z_, self.n_, self.learning_rate, self.beta, self.l1, self.l2
        )

    @property
    def intercept_(self):
        """Intercept, shape (n_outputs,); 0 when ``fit_intercept=False``."""
        check_is_fitted(self)
        return weights_from_state(
            self.z_intercept_, self.n_intercept_, self.learning_rate, self.beta, 0.0, 0.0
        )

    def _init_state(self, n_outputs, n_features):
        """A fresh state: all zeros. Sets ``z_``, ``n_`` and the intercept's."""
        # Fortran order: each feature's outputs are contiguous, as the kernel reads them.
        self.z_ = np.zeros((n_outputs, n_features), dtype=self.dtype, order="F")
        self.n_ = np.zeros((n_outputs, n_features), dtype=self.dtype, order="F")
        self.z_intercept_ = np.zeros(n_outputs, dtype=np.float64)
        self.n_intercept_ = np.zeros(n_outputs, dtype=np.float64)
        self.n_samples_seen_ = 0
        self.loss_curve_ = []

    # ------------------------------------------------------------ validation
    def _validate_X_y(self, X, y, reset):
        """Validated canonical CSR X and 1-d y; ``reset`` starts a new model."""
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
        return validate_data(
            self, X, accept_sparse="csr", dtype=FLOAT_DTYPES, reset=False
        )

    def _validate_sample_weight(self, sample_weight, X):
        return _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )

    # -------------------------------------------------------------- training
    def _kernel_loss(self):
        """The kernel's loss name and Huber epsilon for this model."""
        raise NotImplementedError

    def _pass_function(self):
        """The kernel's pass for ``engine`` and ``batch_size``.

        ``"auto"`` runs the exact per-row algorithm compiled with numba when
        numba can be imported, and numpy otherwise; a mini-batch
        (``batch_size > 1``) always runs on numpy.
        """
        if self.engine == "numba" and self.batch_size > 1:
            raise ValueError(
                "engine='numba' runs the exact per-row algorithm and needs "
                f"batch_size=1; got batch_size={self.batch_size}. Use "
                "engine='numpy' (or 'auto') for mini-batches."
            )
        if self.batch_size > 1:
            return functools.partial(ftrl_minibatch_pass, batch_size=self.batch_size)
        if self.engine == "numpy":
            return ftrl_pass
        try:
            from . import _numba_kernel
        except ImportError as error:
            if self.engine == "auto":
                return ftrl_pass
            raise ImportError(
                "engine='numba' needs numba, which is not installed or failed "
                "to import; install it with: pip install 'skftrl[fast]'"
            ) from error
        return _numba_kernel.ftrl_pass

    def _pass(self, X, targets, sample_weight, rows):
        """One pass over ``rows``; returns each row's margin before it was learned."""
        loss, epsilon = self._kernel_loss()
        margins = self._pass_function()(
            X,
            targets,
            sample_weight,
            rows,
            (self.z_, self.n_, self.z_intercept_, self.n_intercept_),
            loss=loss,
            learning_rate=self.learning_rate,
            beta=self.beta,
            l1=self.l1,
            l2=self.l2,
            fit_intercept=self.fit_intercept,
            epsilon=epsilon,
        )
        self.n_samples_seen_ += len(rows)
        return margins

    def _learn(self, X, targets, sample_weight, rows):
        """One pass over ``rows``, recorded in ``loss_curve_``; returns its loss.

        The loss is the weighted mean over the rows, each scored before it was
        learned from (progressive validation), as Vowpal Wabbit reports it.
        """
        margins = self._pass(X, targets, sample_weight, rows)
        loss, epsilon = self._kernel_loss()
        weights = sample_weight[rows]
        largest_weight = weights.max()
        # All-zero weights (possible through class_weight) learn nothing.
        if largest_weight == 0:
            pass_loss = 0.0
        else:
            # Weights relative to the largest, so that their sums cannot
            # overflow (weights near 1e308 would give inf / inf).
            weights = weights / largest_weight
            row_losses = loss_value(loss, margins, targets[rows], epsilon)
            pass_loss = float(row_losses @ weights / weights.sum())
        # Appended last, so that an error earlier leaves the list as it was.
        self.loss_curve_.append(pass_loss)
        return pass_loss

    def _fit_passes(self, X, targets, sample_weight):
        """Up to ``max_iter`` shuffled passes, stopping on ``tol`` as SGDClassifier.

        Training stops when the mean progressive loss of a pass has not
        improved on the best one by at least ``tol`` for ``n_iter_no_change``
        passes in a row.
        """
        random_state = check_random_state(self.random_state)
        rows = np.arange(X.shape[0])
        best_loss = np.inf
        passes_without_improvement = 0
        for n_iter in range(1, self.max_iter + 1):
            if self.shuffle:
                random_state.shuffle(rows)
            pass_loss = self._learn(X, targets, sample_weight, rows)
            if self.tol is not None:
                if pass_loss > best_loss - self.tol:
                    passes_without_improvement += 1
                else:
                    passes_without_improvement = 0
                best_loss = min(best_loss, pass_loss)
                if passes_without_improvement >= self.n_iter_no_change:
                    break
        self.n_iter_ = n_iter
        if (
            self.tol is not None
            and self.max_iter > 1
            and passes_without_improvement < self.n_iter_no_change
        ):
            warnings.warn(
                f"Maximum number of passes ({self.max_iter}) reached before the "
                "training loss stopped improving; consider increasing max_iter.",
                ConvergenceWarning,
            )

    # ------------------------------------------------------------ prediction
    def _decision_scores(self, X):
        """Linear scores of shape (n_samples, n_outputs), from weights computed once."""
        X = self._validate_X_predict(X)
        return np.asarray(X @ self.coef_.T) + self.intercept_
