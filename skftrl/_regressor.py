"""FTRLRegressor: FTRL-Proximal with squared, Huber or Poisson loss."""

from numbers import Real
from typing import Optional

import numpy as np
from sklearn.base import RegressorMixin

from ._base import BaseFTRL, Estimator
from ._engines import get_loss
from ._engines._losses import REGRESSION_LOSSES
from ._sklearn_compat import Interval, StrOptions, _fit_context
from ._transaction import unchanged_on_error
from ._typing import (
    ArrayLike,
    EarlyStopping,
    Engine,
    FloatArray,
    FloatType,
    MatrixLike,
    RandomStateLike,
    RegressionLoss,
)
from ._validation import check_start_is_first


class FTRLRegressor(RegressorMixin, BaseFTRL):
    """Linear regression trained online with FTRL-Proximal.

    Follow-The-Regularized-Leader Proximal (McMahan et al., KDD 2013,
    Algorithm 1) with per-coordinate learning rates and L1/L2
    regularization, for a squared, Huber or Poisson (log link) loss. Each
    update touches only the non-zero features of a row; the intercept is
    never regularized. By default rows are processed one at a time, in
    order: this is the exact algorithm, compiled with numba when it is
    installed (``engine``). ``batch_size > 1`` trades exactness for speed in
    pure numpy.

    Parameters
    ----------
    loss : {"squared_error", "huber", "poisson"}, default="squared_error"
        ``"squared_error"``: ``(m - y)^2 / 2``. ``"huber"``: quadratic for
        residuals up to ``epsilon``, linear beyond, robust to outliers.
        ``"poisson"``: negative Poisson log-likelihood with a log link, for
        counts; predictions are ``exp(m)`` and ``y`` must be non-negative.

    epsilon : float, default=0.1
        Residual beyond which the Huber loss becomes linear (as in
        :class:`~sklearn.linear_model.SGDRegressor`). Used only by
        ``loss="huber"``. Range (0, inf).

    learning_rate : float, default=0.1
        The paper's ``alpha``, the scale of the per-coordinate learning rate
        ``alpha / (beta + sqrt(n_i))``. Range (0, inf).

    beta : float, default=1.0
        Smooths the learning rate of rarely seen coordinates. Range [0, inf).

    l1 : float, default=0.0
        L1 regularization strength; larger values give sparser weights. It is
        an absolute threshold on the accumulated gradient ``|z_i|``.
        Range [0, inf).

    l2 : float, default=0.0
        L2 regularization strength. Range [0, inf).

    learning_rate_power : float, default=-0.5
        The exponent ``p`` of the per-coordinate learning rate
        ``alpha / (beta + n_i ** -p)``, as TensorFlow's ``Ftrl`` names it.
        The paper's -0.5 (``sqrt(n_i)``) is the default and the fastest;
        values nearer 0 decay the rates more slowly, and 0 gives every
        coordinate the constant rate ``alpha / (beta + 1)``. Range [-1, 0].

    initial_accumulator_value : float, default=0.0
        The value ``n_i`` starts from when the state is created (the paper:
        0). A positive value lowers the first steps' rates as if each
        coordinate had already seen that sum of squared gradients, like
        TensorFlow's ``initial_accumulator_value`` (0.1 there). Range [0, inf).

    fit_intercept : bool, default=True
        Whether to learn an (unregularized) intercept.

    max_iter : int, default=100
        Maximum number of passes over the data in :meth:`fit`.
        :meth:`partial_fit` always makes exactly one pass. Range [1, inf).

    tol : float or None, default=1e-4
        :meth:`fit` stops when the mean loss it watches (see
        ``early_stopping``) has not improved on the best pass by at least
        ``tol`` for ``n_iter_no_change`` passes in a row. ``None`` makes all
        ``max_iter`` passes (and with early stopping still keeps the best).
        Range [0, inf).

    n_iter_no_change : int, default=5
        Passes without improvement before :meth:`fit` stops. Range [1, inf).

    early_stopping : {"refit", True, False}, default="refit"
        How :meth:`fit` chooses the number of passes. With ``True`` and
        ``"refit"`` it holds out ``validation_fraction`` of the rows
        (at random), learns the others pass by pass, scores the held-out rows'
        mean training loss (``loss``) after each pass, and stops by ``tol`` and
        ``n_iter_no_change``. ``True`` then **restores the state of the
        pass with the lowest held-out loss**, as Keras'
        ``restore_best_weights`` and :class:`~sklearn.neural_network.MLPRegressor`:
        the model is the one that scored best, and never learns the held-out
        rows. ``"refit"`` starts again from the state :meth:`fit` started
        from and learns *all* the rows in as many passes as the last pass
        whose held-out loss is within ``tol`` of the lowest had, so that no
        row is wasted; on sparse data
        where one pass is best, that is one pass over every row. ``False``
        learns all the rows and stops on the progressive loss of each pass
        (each row's loss before it is learned), as
        :class:`~sklearn.linear_model.SGDClassifier` does; on hashed, mostly
        rare features that loss keeps falling while the model memorizes
        them and the held-out loss rises. Saving the best pass copies the
        state of the columns the data uses, not of the whole width of a
        hashed model. :meth:`partial_fit` ignores it.

    validation_fraction : float, default=0.1
        The fraction of the rows held out by early stopping. Range (0, 1).

    shuffle : bool, default=True
        Whether :meth:`fit` shuffles the rows before each pass.

    random_state : int, RandomState instance or None, default=None
        Seeds the shuffling in :meth:`fit`.

    warm_start : bool, default=False
        If True, :meth:`fit` continues from the current state.

    batch_size : int, default=1
        Rows per update. ``1`` is the exact algorithm: each row is learned
        from before the next is scored. Larger values run the vectorized
        numpy mini-batch engine: the margins of a batch come from the
        weights at its start, and each touched coordinate receives the
        batch's summed gradient and summed squared gradient. Without numba,
        moderate batches (such as 64) are much faster than the exact numpy
        engine at a small cost in held-out loss; very large ones can diverge
        on frequent features. See :ref:`benchmarks` for measurements.
        Range [1, inf).

    engine : {"auto", "numpy", "numba"}, default="auto"
        Implementation of the exact per-row algorithm (``batch_size=1``).
        ``"numba"`` compiles it (install ``skftrl[fast]``): the same state as
        ``"numpy"`` to rounding, at the speed of compiled code (see
        :ref:`benchmarks`). ``"auto"`` uses numba when it can be imported,
        else numpy; ``"numba"`` rejects ``batch_size > 1``.
        Mini-batches always run on numpy.

    n_jobs : int or None, default=None
        Threads that learn a pass together (``-1``: one per CPU). With more
        than one, the compiled engine learns the rows in rounds: each thread
        learns a contiguous shard of a round from the state as the round
        began, and the shards' changes are then added up, in order. The
        model is close to the sequential one, not equal to it, and the same
        for the same ``n_jobs``, bit for bit. A model's first rows, and
        rounds too short to pay, are learned in order. The numpy engines
        (no numba, ``engine="numpy"``, ``batch_size > 1``) ignore it. On a
        few cores it seldom makes a linear model faster (see
        :ref:`parallel`). None and 1: one thread, the exact algorithm.

    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Storage type of ``z_`` and ``n_``, set when the state is created (a
        later change is refused until a ``fit`` without ``warm_start``).
        ``numpy.float32`` halves the memory of wide (e.g. 2**24 hashed
        features) models; arithmetic is done in float64 either way, and
        gradients are clipped to 1e15 so that the state stays finite. A
        float32 ``n`` keeps 24 bits: it stops growing near 2**24 times the
        squared gradients (about 17 million similar updates of a coordinate).

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        The weights, computed in closed form from ``z_`` and ``n_``. A new
        array on each access. Prediction keeps the weights it computes until
        the model learns again or its hyper-parameters change.

    intercept_ : ndarray of shape (1,)
        The intercept, computed in closed form from ``z_intercept_`` and
        ``n_intercept_``.

    z_ : ndarray of shape (1, n_features)
        The paper's ``z`` per feature (accumulated gradients minus proximal
        corrections). Read-only (assign a new array of its shape and dtype
        to replace it).

    n_ : ndarray of shape (1, n_features)
        The paper's ``n`` per feature (sum of squared gradients). Read-only.

    z_intercept_ : ndarray of shape (1,)
        ``z`` of the intercept.

    n_intercept_ : ndarray of shape (1,)
        ``n`` of the intercept.

    n_iter_ : int
        Passes made by the last :meth:`fit` (with early stopping, the passes
        over the rows not held out, including those after the best; 1 after
        :meth:`partial_fit`).

    best_iteration_ : int or None
        The number of passes the returned model has made in the last
        :meth:`fit`: the best pass (early stopping restored its state, or
        ``"refit"`` made as many over all rows), else ``n_iter_``. None
        before any :meth:`fit`.

    n_samples_seen_ : int
        Rows learned from since the state was created, counting every pass.

    loss_curve_ : list of float
        The progressive validation loss of each pass of :meth:`fit` and of
        each :meth:`partial_fit` call, in order since the state was created:
        the sample-weighted mean loss of the rows, each scored *before* it was
        learned from (as Vowpal Wabbit's "average loss"). The loss is the
        training loss (half the squared error for ``"squared_error"``).

    validation_scores_ : list of float or None
        With early stopping, the score of the held-out rows after each pass
        of the last :meth:`fit`: minus their mean training loss (``loss``),
        so that higher is better, as for every scikit-learn score (``-validation_scores_[k]``
        is the held-out loss after pass ``k + 1``). None otherwise.

    best_validation_score_ : float or None
        Minus the held-out loss of the returned model's pass: the highest of
        ``validation_scores_`` with ``True``; with ``"refit"`` that of the last
        pass within ``tol`` of it. None
        without early stopping.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    FTRLClassifier : FTRL-Proximal for classification.
    FMRegressor : A factorization machine: this model plus pairwise interactions.
    sklearn.linear_model.SGDRegressor : Linear regression trained with SGD.

    Examples
    --------
    >>> import numpy as np
    >>> from skftrl import FTRLRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(size=(200, 3))
    >>> y = X @ np.array([1.0, -2.0, 0.5]) + 3.0
    >>> reg = FTRLRegressor(learning_rate=0.5, random_state=0).fit(X, y)
    >>> round(reg.score(X, y), 3)
    1.0
    """

    _parameter_constraints: dict = {
        **BaseFTRL._parameter_constraints,
        "loss": [StrOptions(set(REGRESSION_LOSSES))],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        loss: RegressionLoss = "squared_error",
        epsilon: float = 0.1,
        learning_rate: float = 0.1,
        beta: float = 1.0,
        l1: float = 0.0,
        l2: float = 0.0,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.0,
        fit_intercept: bool = True,
        max_iter: int = 100,
        tol: Optional[float] = 1e-4,
        n_iter_no_change: int = 5,
        early_stopping: EarlyStopping = "refit",
        validation_fraction: float = 0.1,
        shuffle: bool = True,
        random_state: RandomStateLike = None,
        warm_start: bool = False,
        batch_size: int = 1,
        engine: Engine = "auto",
        n_jobs: Optional[int] = None,
        dtype: FloatType = np.float64,
    ) -> None:
        self.loss = loss
        self.epsilon = epsilon
        self.learning_rate = learning_rate
        self.beta = beta
        self.l1 = l1
        self.l2 = l2
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.batch_size = batch_size
        self.engine = engine
        self.n_jobs = n_jobs
        self.dtype = dtype

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = self.loss == "poisson"
        return tags

    def _loss(self):
        return get_loss(self.loss, self.epsilon)

    def _prepare(self, X, y, sample_weight, reset):
        """Validate a batch: canonical X, float targets, per-row weights."""
        X, y = self._validate_X_y(X, y, reset=reset)
        y = y.astype(np.float64, copy=False)
        loss = self._loss()
        invalid = loss.invalid_targets(y)
        if invalid is not None and invalid.any():
            raise ValueError(
                f"loss={self.loss!r} requires {loss.target_domain}; "
                f"got {y[invalid][0]!r} at row {np.flatnonzero(invalid)[0]}."
            )
        return X, y, self._validate_sample_weight(sample_weight, X)

    def _prepare_rows(self, X, y, sample_weight):
        return self._prepare(X, y, sample_weight, reset=False)

    @unchanged_on_error
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(
        self: Estimator,
        X: MatrixLike,
        y: ArrayLike,
        sample_weight: Optional[ArrayLike] = None,
        *,
        coef_init: Optional[ArrayLike] = None,
        intercept_init: Optional[ArrayLike] = None,
    ) -> Estimator:
        """Fit the model with up to ``max_iter`` passes over the data.

        Starts from a fresh state (at ``coef_init`` and ``intercept_init``
        when given) unless ``warm_start=True`` and the model is already
        fitted.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; CSR is used as it is, other formats are converted.
        y : array-like of shape (n_samples,)
            Targets (non-negative for ``loss="poisson"``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each row's gradient.
        coef_init : array-like of shape (n_outputs, n_features), default=None
            Finite weights to start from instead of zeros (a factorization
            machine's linear weights; its factors start as usual): the new
            state is set so that its weights are these, as if training had
            led there, and learning goes on from them. Each weight is the
            given one exactly wherever a ``z`` of the state's ``dtype`` gives
            it, else the nearest such weight: an ulp away, or with ``l1 > 0``
            a weight much smaller than ``l1`` can be further off, or start at
            0 (in float32 notably; see "Starting from given weights" in the
            documentation's algorithm page). The accumulators
            ``n`` start at ``initial_accumulator_value`` as usual, so the
            first rows move the weights as far as a new model's; a larger
            ``initial_accumulator_value`` makes those steps smaller.
            ``n_outputs`` is 1: shape ``(n_features,)`` is taken too.
            A fit given ``coef_init`` or ``intercept_init`` starts a new
            state, even with ``warm_start=True``.
        intercept_init : float or array-like of shape (n_outputs,), default=None
            Finite intercepts to start from instead of 0 (with
            ``fit_intercept=True``).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        given = coef_init is not None or intercept_init is not None
        keep_state = self.warm_start and self.__sklearn_is_fitted__() and not given
        X, y, sample_weight = self._prepare(X, y, sample_weight, reset=not keep_state)
        if not keep_state:
            self._new_state(1, X.shape[1], coef_init, intercept_init)
        self._fit_passes(X, y, sample_weight)
        return self

    @unchanged_on_error
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(
        self: Estimator,
        X: MatrixLike,
        y: ArrayLike,
        sample_weight: Optional[ArrayLike] = None,
        *,
        coef_init: Optional[ArrayLike] = None,
        intercept_init: Optional[ArrayLike] = None,
    ) -> Estimator:
        """Learn from the rows of ``X`` in one pass, in order, from the current state.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each row's gradient.
        coef_init : array-like of shape (n_outputs, n_features), default=None
            Weights to start from, as :meth:`fit` takes them (each the
            given one exactly where the state can hold it, else the nearest
            it can), in the first call (the one that makes the model's
            state); a later call refuses them.
        intercept_init : float or array-like of shape (n_outputs,), default=None
            Intercepts to start from, as :meth:`fit` takes them, in the
            first call.

        Returns
        -------
        self : object
            The updated estimator.
        """
        X, y, sample_weight = self._partial_fit_rows(
            X, y, None, sample_weight, coef_init, intercept_init
        )
        self._learn(X, y, sample_weight, np.arange(X.shape[0]))
        self.n_iter_ = 1
        return self

    def _partial_fit_rows(self, X, y, classes, sample_weight, coef_init=None, intercept_init=None):
        """partial_fit's checks of its arguments (``classes``: None, for a
        regressor), and its first call's new state: the rows as the passes take them."""
        # _fit_context skips validation in partial_fit once fitted, but
        # set_params may have changed the parameters since the last call.
        self._validate_params_if_changed()
        first_call = not self.__sklearn_is_fitted__()
        X, y, sample_weight = self._prepare(X, y, sample_weight, reset=first_call)
        check_start_is_first(first_call, coef_init, intercept_init)
        if first_call:
            self._new_state(1, X.shape[1], coef_init, intercept_init)
        return X, y, sample_weight

    def predict(self, X: MatrixLike) -> FloatArray:
        """Predict targets: the margin, or ``exp(margin)`` for ``loss="poisson"``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions, always finite.
        """
        return self._loss().inverse_link(self._decision_scores(X))
