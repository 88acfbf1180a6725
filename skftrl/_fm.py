"""FMClassifier and FMRegressor: factorization machines trained with FTRL-Proximal.

Each is its FTRL estimator plus the factors: the validation, the passes of
fit and partial_fit, early stopping, warm start, loss_curve_ and persistence
are the linear estimators' (:mod:`._base`); this module adds the model family
(``"fm"``, whose engines learn and score, docs/fm_math.rst), the factors'
parameters, their fresh state and their initial values for compact saving.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._base import BaseFTRL, _read_only
from ._classifier import FTRLClassifier
from ._engines import FMParameters, FMState
from ._engines._math import empty_factor_state, weights_from_state
from ._engines._records import initial_factor_state, new_factor_state
from ._regressor import FTRLRegressor


class _FactorizationMachine:
    """What a factorization machine adds to an FTRL estimator (a mixin): the
    family's name and records, the factors' parameters, their fresh state and
    their initial values for compact saving."""

    _fm_parameter_constraints: dict = {
        # The initial factors are stored through z with the proximal strength
        # beta / factor_learning_rate (docs/fm_math.rst): beta = 0 would lose them.
        "beta": [Interval(Real, 0, None, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "init_stdev": [Interval(Real, 0, None, closed="left")],
        "factor_learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "factor_l2": [Interval(Real, 0, None, closed="left")],
    }
    _family = "fm"
    _state_record = FMState
    # The factors are saved as the coordinates training has changed, when
    # that is smaller: the untouched ones hold the random initial factors,
    # drawn again on loading from the generator's state kept when they were
    # first drawn.
    _SAVED_PAIRS = (
        *BaseFTRL._SAVED_PAIRS,
        ("z_factors_", "n_factors_", "_touched_factors", empty_factor_state),
    )
    _STATE_PARAMETERS = ("initial_accumulator_value", "n_components", "init_stdev")

    def _untouched(self, entry, shape, dtype):
        if entry != "_touched_factors":
            return super()._untouched(entry, shape, dtype)
        record = self._initial_factors
        return None if record is None else initial_factor_state(record, shape, dtype)

    @property
    def components_(self):
        """Factors, shape (n_outputs, n_features, n_components), from the state in closed form."""
        check_is_fitted(self)
        return self._prediction_engine().factors(self._state(), self._parameters())

    def _factors(self, columns):
        """The factors of the features ``columns`` in closed form, shape
        (n_outputs, len(columns), n_components), computing only theirs.

        With ``_early_stopping``, the estimators' internal interface for the
        command line (its ``inspect`` shows the learned columns' interactions).
        """
        return weights_from_state(
            self.z_factors_[:, columns],
            self.n_factors_[:, columns],
            self._parameters().of_factors(),
        )

    def _parameters(self):
        linear = super()._parameters()
        factor_learning_rate = self.factor_learning_rate
        if factor_learning_rate is None:
            factor_learning_rate = self.learning_rate
        return FMParameters(
            **vars(linear), factor_learning_rate=factor_learning_rate, factor_l2=self.factor_l2
        )

    def _init_state(self, n_outputs, n_features):
        """The linear model's fresh state, and the factors' (docs: "Initial factors")."""
        super()._init_state(n_outputs, n_features)
        z, n, self._initial_factors = new_factor_state(
            n_outputs,
            n_features,
            self.n_components,
            self.dtype,
            self._parameters(),
            init_stdev=self.init_stdev,
            random_state=self.random_state,
            initial_n=self.initial_accumulator_value,
        )
        self.z_factors_, self.n_factors_ = _read_only(z), _read_only(n)


# The docstring entries of the parameters both FM estimators add.
_FM_PARAMETERS = """
    n_components : int, default=8
        The number ``k`` of latent components of each feature's factor
        vector. The model holds ``k + 1`` times the linear model's state.
        Range [1, inf); for ``k = 0`` use the FTRL estimator, which is that
        model.

    init_stdev : float, default=0.01
        Standard deviation of the initial factors, drawn from a normal
        distribution once when the state is created (seeded by
        ``random_state``). 0 leaves the factors at 0 forever, which is the
        linear model. Range [0, inf).

    factor_learning_rate : float or None, default=None
        The rate scale ``alpha_v`` of the factors' per-coordinate learning
        rate ``alpha_v / (beta + sqrt(n))``. None uses ``learning_rate``.
        Range (0, inf).

    factor_l2 : float, default=0.03
        L2 penalty on the factors of each row's features, applied per row
        (a term ``factor_l2 * v`` in each factor's gradient, as libFM and
        Wordbatch's FM_FTRL apply it). Range [0, inf).
"""


# The docstring entries of the FTRL parameters both FM estimators share.
_RATE_PARAMETERS = """    learning_rate : float, default=0.1
        The rate scale ``alpha`` of the weights and the intercept.
        Range (0, inf).

    beta : float, default=1.0
        Smooths the rates of rarely seen coordinates, and is the initial
        factors' proximal strength (with ``factor_learning_rate``): it must
        be positive. Range (0, inf).

    l1 : float, default=0.0
        L1 strength of the linear weights (not of the factors). Range [0, inf).

    l2 : float, default=0.0
        L2 strength of the linear weights (not of the factors, see
        ``factor_l2``). Range [0, inf).

    learning_rate_power : float, default=-0.5
        The exponent ``p`` of every coordinate's rate
        ``alpha / (beta + n ** -p)``. Range [-1, 0].

    initial_accumulator_value : float, default=0.0
        The value every coordinate's ``n`` starts from. Range [0, inf).

    fit_intercept : bool, default=True
        Whether to learn an (unregularized) intercept.

    max_iter : int, default=100
        Maximum number of passes over the data in :meth:`fit`. Range [1, inf).

"""

_TRAINING_PARAMETERS = """    validation_fraction : float, default=0.1
        The fraction of rows held out by ``early_stopping``. Range (0, 1).

    shuffle : bool, default=True
        Whether :meth:`fit` shuffles the rows before each pass.

    random_state : int, RandomState instance or None, default=None
        Seeds the initial factors (an int draws them with
        ``numpy.random.default_rng(random_state)``) and the shuffling of
        :meth:`fit`. Pass an int for reproducible results.

    warm_start : bool, default=False
        If True, :meth:`fit` continues from the current state.

    batch_size : int, default=1
        Rows per update. 1 is the exact per-row algorithm. Larger values run
        the numpy mini-batch pass: every margin of a batch (and its factor
        sums) from the state at the batch's start, then one FTRL step per
        touched coordinate with the batch's summed gradients and squared
        gradients (the factor penalty counted once per row). Range [1, inf).

    engine : {"auto", "numpy", "numba"}, default="auto"
        Implementation of the exact per-row pass (``batch_size=1``).
        ``"numba"`` compiles it (install ``skftrl[fast]``) and rejects
        ``batch_size > 1``; it gives the same state as ``"numpy"`` to
        rounding. ``"auto"`` uses numba when it can be imported, else numpy.
        Mini-batches always run on numpy.

    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Storage type of the state (weights' and factors' ``z`` and ``n``).

"""


class FMClassifier(_FactorizationMachine, FTRLClassifier):
    __doc__ = (
        """Factorization machine classifier trained online with FTRL-Proximal.

    A factorization machine (Rendle, ICDM 2010) adds to the linear model a
    pairwise interaction of every two features of a row, ``<v_i, v_j> x_i
    x_j``, through a vector ``v_i`` of ``n_components`` factors per feature:
    it learns that a user likes an item, or that a site and an ad slot go
    together, which a linear model cannot. Every coordinate (intercept,
    weight, factor) is learned by FTRL-Proximal with its own rate, exactly
    as :class:`FTRLClassifier` learns its weights; a row costs
    ``O(n_components * nnz)``. Two classes use one logistic output; three or
    more a softmax with one set of weights and factors per class. The exact
    semantics are in the documentation's page "Factorization machines
    trained with FTRL".

    Everything else is :class:`FTRLClassifier`'s: ``fit``, ``partial_fit``,
    early stopping, warm start, ``loss_curve_``, persistence that resumes
    bit for bit.

    Parameters
    ----------"""
        + _FM_PARAMETERS
        + """
"""
        + _RATE_PARAMETERS
        + """    tol : float or None, default=1e-4
        Stopping criterion of :meth:`fit`, as in :class:`FTRLClassifier`.
        Range [0, inf).

    n_iter_no_change : int, default=5
        Passes without improvement before :meth:`fit` stops. Range [1, inf).

    early_stopping : {"refit", True, False}, default="refit"
        How :meth:`fit` chooses the number of passes, as in
        :class:`FTRLClassifier`: on the held-out log loss of
        ``validation_fraction`` of the rows, then learning all rows in as
        many passes (``"refit"``) or restoring the best pass's state
        (``True``), factors included; ``False`` stops on the training loss.

"""
        + _TRAINING_PARAMETERS
        + """    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplying ``sample_weight``, as in
        :class:`FTRLClassifier`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.

    coef_ : ndarray of shape (n_outputs, n_features)
        The linear weights, in closed form from ``z_`` and ``n_``;
        ``n_outputs`` is 1 for two classes, else ``n_classes``.

    intercept_ : ndarray of shape (n_outputs,)
        The intercept, in closed form from ``z_intercept_`` and ``n_intercept_``.

    components_ : ndarray of shape (n_outputs, n_features, n_components)
        The factors ``v``, in closed form from ``z_factors_`` and
        ``n_factors_``. The interaction of features ``i`` and ``j`` for output
        ``o`` is ``components_[o, i] @ components_[o, j]``.

    z_, n_ : ndarray of shape (n_outputs, n_features)
        The linear weights' ``z`` and ``n``. Read-only.

    z_intercept_, n_intercept_ : ndarray of shape (n_outputs,)
        The intercept's ``z`` and ``n``.

    z_factors_, n_factors_ : ndarray of shape (n_outputs, n_features, n_components)
        The factors' ``z`` and ``n``: with the four arrays above, the whole
        learned state. Read-only (assign a new array to replace one).

    n_iter_ : int
        Passes made by the last :meth:`fit` (1 after :meth:`partial_fit`).

    n_samples_seen_ : int
        Rows learned from since the state was created, counting every pass.

    loss_curve_ : list of float
        The progressive validation log loss of each pass and each
        :meth:`partial_fit` call, as in :class:`FTRLClassifier`.

    validation_scores_ : list of float or None
        With early stopping, minus the held-out mean loss after each pass of
        the last :meth:`fit` (higher is better); None otherwise.

    best_validation_score_ : float or None
        Minus the held-out loss of the returned model's pass; None without
        early stopping.

    best_iteration_ : int or None
        The passes the returned model has made in the last :meth:`fit`.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    FTRLClassifier : The linear model, without factors.
    FMRegressor : The factorization machine for regression.

    References
    ----------
    S. Rendle, "Factorization Machines", ICDM 2010.
    H. B. McMahan et al., "Ad Click Prediction: a View from the Trenches",
    KDD 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from skftrl import FMClassifier
    >>> # y is the exclusive or of two features: no linear model can learn it.
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]] * 50)
    >>> y = np.array([1, 1, 0, 0] * 50)
    >>> clf = FMClassifier(n_components=2, learning_rate=0.5, random_state=0)
    >>> clf.fit(X, y).predict([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    array([1, 1, 0, 0])
    >>> clf.components_.shape
    (1, 2, 2)
    """
    )

    _parameter_constraints: dict = {
        **FTRLClassifier._parameter_constraints,
        **_FactorizationMachine._fm_parameter_constraints,
    }

    def __init__(
        self,
        *,
        n_components=8,
        init_stdev=0.01,
        factor_learning_rate=None,
        factor_l2=0.03,
        learning_rate=0.1,
        beta=1.0,
        l1=0.0,
        l2=0.0,
        learning_rate_power=-0.5,
        initial_accumulator_value=0.0,
        fit_intercept=True,
        max_iter=100,
        tol=1e-4,
        n_iter_no_change=5,
        early_stopping="refit",
        validation_fraction=0.1,
        shuffle=True,
        random_state=None,
        warm_start=False,
        batch_size=1,
        engine="auto",
        dtype=np.float64,
        class_weight=None,
    ):
        super().__init__(
            learning_rate=learning_rate,
            beta=beta,
            l1=l1,
            l2=l2,
            learning_rate_power=learning_rate_power,
            initial_accumulator_value=initial_accumulator_value,
            fit_intercept=fit_intercept,
            max_iter=max_iter,
            tol=tol,
            n_iter_no_change=n_iter_no_change,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            shuffle=shuffle,
            random_state=random_state,
            warm_start=warm_start,
            batch_size=batch_size,
            engine=engine,
            dtype=dtype,
            class_weight=class_weight,
        )
        self.n_components = n_components
        self.init_stdev = init_stdev
        self.factor_learning_rate = factor_learning_rate
        self.factor_l2 = factor_l2


class FMRegressor(_FactorizationMachine, FTRLRegressor):
    __doc__ = (
        """Factorization machine regression trained online with FTRL-Proximal.

    A factorization machine (Rendle, ICDM 2010) adds to the linear model a
    pairwise interaction of every two features of a row, ``<v_i, v_j> x_i
    x_j``, through a vector ``v_i`` of ``n_components`` factors per feature:
    with one-hot users and items, it learns each user's taste for each item
    from the ratings of similar users and items. Every coordinate is learned
    by FTRL-Proximal with its own rate, exactly as :class:`FTRLRegressor`
    learns its weights, for a squared, Huber or Poisson (log link) loss; a
    row costs ``O(n_components * nnz)``. The exact semantics are in the
    documentation's page "Factorization machines trained with FTRL".

    Everything else is :class:`FTRLRegressor`'s: ``fit``, ``partial_fit``,
    early stopping, warm start, ``loss_curve_``, persistence that resumes
    bit for bit.

    Parameters
    ----------
    loss : {"squared_error", "huber", "poisson"}, default="squared_error"
        The loss, as in :class:`FTRLRegressor`; predictions are ``exp`` of
        the margin for ``"poisson"``.

    epsilon : float, default=0.1
        Residual beyond which the Huber loss becomes linear. Range (0, inf).
"""
        + _FM_PARAMETERS
        + """
"""
        + _RATE_PARAMETERS
        + """    tol : float or None, default=1e-4
        Stopping criterion of :meth:`fit`, as in :class:`FTRLRegressor`.
        Range [0, inf).

    n_iter_no_change : int, default=5
        Passes without improvement before :meth:`fit` stops. Range [1, inf).

    early_stopping : {"refit", True, False}, default="refit"
        How :meth:`fit` chooses the number of passes, as in
        :class:`FTRLRegressor`: on the held-out training loss of
        ``validation_fraction`` of the rows, then learning all rows in as
        many passes (``"refit"``) or restoring the best pass's state
        (``True``), factors included; ``False`` stops on the training loss.

"""
        + _TRAINING_PARAMETERS
        + """    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        The linear weights, in closed form from ``z_`` and ``n_``.

    intercept_ : ndarray of shape (1,)
        The intercept, in closed form from ``z_intercept_`` and ``n_intercept_``.

    components_ : ndarray of shape (1, n_features, n_components)
        The factors ``v``, in closed form from ``z_factors_`` and
        ``n_factors_``. The interaction of features ``i`` and ``j`` is
        ``components_[0, i] @ components_[0, j]``.

    z_, n_ : ndarray of shape (1, n_features)
        The linear weights' ``z`` and ``n``. Read-only.

    z_intercept_, n_intercept_ : ndarray of shape (1,)
        The intercept's ``z`` and ``n``.

    z_factors_, n_factors_ : ndarray of shape (1, n_features, n_components)
        The factors' ``z`` and ``n``: with the four arrays above, the whole
        learned state. Read-only (assign a new array to replace one).

    n_iter_ : int
        Passes made by the last :meth:`fit` (1 after :meth:`partial_fit`).

    n_samples_seen_ : int
        Rows learned from since the state was created, counting every pass.

    loss_curve_ : list of float
        The progressive validation loss of each pass and each
        :meth:`partial_fit` call, as in :class:`FTRLRegressor`.

    validation_scores_ : list of float or None
        With early stopping, minus the held-out mean loss after each pass of
        the last :meth:`fit` (higher is better); None otherwise.

    best_validation_score_ : float or None
        Minus the held-out loss of the returned model's pass; None without
        early stopping.

    best_iteration_ : int or None
        The passes the returned model has made in the last :meth:`fit`.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    FTRLRegressor : The linear model, without factors.
    FMClassifier : The factorization machine for classification.

    References
    ----------
    S. Rendle, "Factorization Machines", ICDM 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from skftrl import FMRegressor, FTRLRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(500, 3))
    >>> y = X[:, 0] * X[:, 1]  # an interaction alone: no linear model fits it
    >>> reg = FMRegressor(max_iter=20, tol=None, early_stopping=False, random_state=0)
    >>> reg = reg.fit(X, y)
    >>> round(reg.score(X, y), 2)
    0.92
    >>> abs(round(FTRLRegressor(random_state=0).fit(X, y).score(X, y), 2))
    0.0
    """
    )

    _parameter_constraints: dict = {
        **FTRLRegressor._parameter_constraints,
        **_FactorizationMachine._fm_parameter_constraints,
    }

    def __init__(
        self,
        *,
        loss="squared_error",
        epsilon=0.1,
        n_components=8,
        init_stdev=0.01,
        factor_learning_rate=None,
        factor_l2=0.03,
        learning_rate=0.1,
        beta=1.0,
        l1=0.0,
        l2=0.0,
        learning_rate_power=-0.5,
        initial_accumulator_value=0.0,
        fit_intercept=True,
        max_iter=100,
        tol=1e-4,
        n_iter_no_change=5,
        early_stopping="refit",
        validation_fraction=0.1,
        shuffle=True,
        random_state=None,
        warm_start=False,
        batch_size=1,
        engine="auto",
        dtype=np.float64,
    ):
        super().__init__(
            loss=loss,
            epsilon=epsilon,
            learning_rate=learning_rate,
            beta=beta,
            l1=l1,
            l2=l2,
            learning_rate_power=learning_rate_power,
            initial_accumulator_value=initial_accumulator_value,
            fit_intercept=fit_intercept,
            max_iter=max_iter,
            tol=tol,
            n_iter_no_change=n_iter_no_change,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            shuffle=shuffle,
            random_state=random_state,
            warm_start=warm_start,
            batch_size=batch_size,
            engine=engine,
            dtype=dtype,
        )
        self.n_components = n_components
        self.init_stdev = init_stdev
        self.factor_learning_rate = factor_learning_rate
        self.factor_l2 = factor_l2
