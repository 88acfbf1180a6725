"""FMClassifier and FMRegressor: factorization machines trained with FTRL-Proximal.

Each is its FTRL estimator plus the factors: the validation, the passes of
fit and partial_fit, early stopping, warm start, loss_curve_ and persistence
are the linear estimators' (:mod:`._base`); this module adds the model family
(``"fm"``, whose engines learn and score, docs/fm_math.rst), the factors'
parameters, their fresh state and their initial values for compact saving.
"""

from numbers import Integral, Real
from typing import Optional

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._base import BaseFTRL
from ._classifier import FTRLClassifier
from ._engines import FMParameters, FMState
from ._engines._math import new_factor_layout, weights_from_state
from ._engines._records import (
    check_factor_record,
    initial_factor_blocks,
    initial_factor_n,
    new_factor_state,
)
from ._persistence import read_only
from ._regressor import FTRLRegressor
from ._sklearn_compat import Interval
from ._typing import (
    ClassWeight,
    EarlyStopping,
    Engine,
    FloatArray,
    FloatType,
    RandomStateLike,
    RegressionLoss,
)


def factors_of_columns(estimator, columns):
    """The factors of a fitted factorization machine's features ``columns``,
    shape (n_outputs, len(columns), n_components), computing only theirs: the
    estimators' internal interface for the command line's ``inspect``."""
    return weights_from_state(
        estimator.z_factors_[:, columns],
        estimator.n_factors_[:, columns],
        estimator._parameters().of_factors(),
    )


class _FactorizationMachine(BaseFTRL):
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
        ("z_factors_", "n_factors_", "_touched_factors", new_factor_layout),
    )
    _STATE_PARAMETERS = ("initial_accumulator_value", "n_components", "init_stdev")

    def _untouched(self, entry, shape, dtype):
        if entry != "_touched_factors":
            return super()._untouched(entry, shape, dtype)
        record = self._initial_factors
        if record is None:
            return None
        return initial_factor_blocks(record, shape, dtype), dtype.type(initial_factor_n(record))

    def _check_saved_state(self, state):
        super()._check_saved_state(state)
        if "z_factors_" in state or "_touched_factors" in state:
            if "_initial_factors" not in state:
                raise ValueError(
                    "the model's saved state has no _initial_factors: the file is damaged"
                )
            check_factor_record(state["_initial_factors"])
            created = state.get("_state_parameters", {}).get("n_components", 1)
            if not isinstance(created, Integral) or isinstance(created, bool) or created < 1:
                raise ValueError(
                    f"the model's saved n_components is {created!r}, not a positive "
                    "integer: the file is damaged"
                )

    def _state_shapes(self):
        shapes = super()._state_shapes()
        # The n_components the state was made with (a later one is refused by
        # the next pass, and predictions use the state's).
        created = getattr(self, "_state_parameters", {}).get("n_components", self.n_components)
        shapes["z_factors"] = shapes["n_factors"] = (*shapes["z"], created)
        return shapes

    @property
    def components_(self) -> FloatArray:
        """Factors, shape (n_outputs, n_features, n_components), from the state in closed form."""
        check_is_fitted(self)
        return self._prediction_engine().factors(self._state(), self._parameters())

    def _parameters(self):
        linear = super()._parameters()
        factor_learning_rate = self.factor_learning_rate
        if factor_learning_rate is None:
            factor_learning_rate = self.learning_rate
        return FMParameters(
            **vars(linear), factor_learning_rate=factor_learning_rate, factor_l2=self.factor_l2
        )

    def _fresh_state(self, n_outputs, n_features):
        """The linear model's fresh state, and the factors' (docs: "Initial factors")."""
        fresh = super()._fresh_state(n_outputs, n_features)
        z, n, fresh["_initial_factors"] = new_factor_state(
            n_outputs,
            n_features,
            self.n_components,
            self.dtype,
            self._parameters(),
            init_stdev=self.init_stdev,
            random_state=self.random_state,
            initial_n=self.initial_accumulator_value,
        )
        fresh["z_factors_"], fresh["n_factors_"] = read_only(z), read_only(n)
        return fresh


class FMClassifier(_FactorizationMachine, FTRLClassifier):
    """Factorization machine classifier trained online with FTRL-Proximal.

    A factorization machine (Rendle, ICDM 2010) is the linear model plus an
    interaction ``<v_i, v_j> x_i x_j`` of every two features of a row,
    through a vector ``v_i`` of ``n_components`` factors per feature. It
    learns effects that exist only in combination, such as a site and an ad
    slot that go together, which a linear model cannot. Every coordinate
    (the intercept, each weight, each factor) is learned by FTRL-Proximal
    with its own rate, as :class:`FTRLClassifier` learns its weights, and a
    row costs ``O(n_components * nnz)``. Two classes use one logistic output;
    three or more a softmax, with intercept, weights and factors per class
    (semantics: the documentation page "Factorization machines trained with
    FTRL"). Otherwise it has :class:`FTRLClassifier`'s contract.

    Parameters
    ----------
    n_components : int, default=8
        The number ``k`` of factors per feature (and per output). More
        components fit richer interactions and overfit sooner on small
        data; 4 to 16 is the usual range. The state is ``k + 1`` times the
        linear model's. Range [1, inf); without factors, use
        :class:`FTRLClassifier`.

    init_stdev : float, default=0.01
        Standard deviation of the initial factors, drawn from a normal
        distribution once, when the state is created, from
        ``random_state``. Factors that all start at 0 never move: 0 gives
        exactly the linear model. Large values add noise the model must
        first unlearn. Range [0, inf).

    factor_learning_rate : float or None, default=None
        The rate scale ``alpha_v`` of the factors: each factor coordinate's
        learning rate is ``alpha_v / (beta + sqrt(n))``. None uses
        ``learning_rate``. Range (0, inf).

    factor_l2 : float, default=0.03
        L2 penalty on the factors of each row's features, applied per row:
        a term ``factor_l2 * v`` in each factor's gradient, as libFM and
        Wordbatch's ``FM_FTRL`` apply it. It keeps the factors from
        overfitting over several passes; a row of sample weight 0 still
        applies it. Range [0, inf).

    learning_rate : float, default=0.1
        The paper's ``alpha``: the rate scale of the weights and the
        intercept, whose per-coordinate learning rate is
        ``alpha / (beta + sqrt(n_i))``. Range (0, inf).

    beta : float, default=1.0
        Smooths the learning rate of rarely seen coordinates. It is also the
        initial factors' proximal strength (``beta / alpha_v``), so it must
        be positive. Range (0, inf).

    l1 : float, default=0.0
        L1 strength of the linear weights (not of the factors): a weight is
        exactly 0 while ``|z_i| <= l1``. Range [0, inf).

    l2 : float, default=0.0
        L2 strength of the linear weights (for the factors, see
        ``factor_l2``). Range [0, inf).

    learning_rate_power : float, default=-0.5
        The exponent ``p`` of every coordinate's learning rate
        ``alpha / (beta + n ** -p)``, weights and factors alike, as
        TensorFlow's ``Ftrl`` names it; -0.5 is the paper's
        ``sqrt(n)``. Range [-1, 0].

    initial_accumulator_value : float, default=0.0
        The value every coordinate's ``n`` starts from when the state is
        created, as TensorFlow's ``Ftrl`` names it. Range [0, inf).

    fit_intercept : bool, default=True
        Whether to learn an (unregularized) intercept.

    max_iter : int, default=100
        Maximum number of passes over the data in :meth:`fit`.
        :meth:`partial_fit` always makes exactly one pass. Range [1, inf).

    tol : float or None, default=1e-4
        :meth:`fit` stops when the mean loss it watches (see
        ``early_stopping``) has not improved on the best pass by at least
        ``tol`` for ``n_iter_no_change`` passes in a row. None makes all
        ``max_iter`` passes (and with early stopping still keeps the best).
        Range [0, inf).

    n_iter_no_change : int, default=5
        Passes without improvement before :meth:`fit` stops. Range [1, inf).

    early_stopping : {"refit", True, False}, default="refit"
        How :meth:`fit` chooses the number of passes. With ``True`` and
        ``"refit"`` it holds out ``validation_fraction`` of the rows
        (stratified by class, or at random when that is impossible), learns
        the others pass by pass, scores the held-out rows' mean log loss
        after each pass, and stops by ``tol`` and ``n_iter_no_change``.
        ``True`` then restores the state of the pass with the lowest
        held-out loss, factors included. ``"refit"`` starts again from the
        state :meth:`fit` started from and learns all the rows in as many
        passes as the last pass whose held-out loss is within ``tol`` of the
        lowest. ``False`` learns all the rows and stops on the progressive
        loss of each pass. :meth:`partial_fit` ignores it.

    validation_fraction : float, default=0.1
        The fraction of the rows held out by early stopping. Range (0, 1).

    shuffle : bool, default=True
        Whether :meth:`fit` shuffles the rows before each pass.

    random_state : int, RandomState instance or None, default=None
        Draws the initial factors (an int draws them with
        ``numpy.random.default_rng(random_state)``) and seeds the shuffling
        of :meth:`fit`. Pass an int for reproducible results.

    warm_start : bool, default=False
        If True, :meth:`fit` continues from the current state instead of
        starting afresh. :meth:`partial_fit` always continues.

    batch_size : int, default=1
        Rows per update. ``1`` is the exact per-row algorithm. Larger values
        run the numpy mini-batch pass: every margin of a batch (and its
        factor sums) comes from the state at the batch's start, then each
        touched coordinate takes one FTRL step with the batch's summed
        gradients and summed squared gradients (the factor penalty counted
        once per row). Without numba it is the fast choice; see
        :ref:`benchmarks` for its speed and held-out loss. Range [1, inf).

    engine : {"auto", "numpy", "numba"}, default="auto"
        Implementation of the exact per-row pass (``batch_size=1``).
        ``"numba"`` compiles it (install ``skftrl[fast]``) and gives the same
        state as ``"numpy"`` to rounding; it rejects ``batch_size > 1``.
        ``"auto"`` uses numba when it can be imported, else numpy.
        Mini-batches always run on numpy.

    n_jobs : int or None, default=None
        Threads that learn a pass together (``-1``: one per CPU). With more
        than one, the compiled engine learns the rows in rounds: each thread
        learns a contiguous shard of a round from the state as the round
        began, and the shards' changes are then added up, in order. The
        model is close to the sequential one, not equal to it, and the same
        for the same ``n_jobs``, bit for bit. A model's first rows, and
        rounds too short to pay, are learned in order. The numpy engines
        (no numba, ``engine="numpy"``, ``batch_size > 1``) ignore it. See
        :ref:`parallel`. None and 1: one thread, the exact algorithm.

    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Storage type of the state (the ``z`` and ``n`` of the intercept,
        weights and factors), set when the state is created (a later change
        is refused until a :meth:`fit` without ``warm_start``).
        ``numpy.float32`` halves its memory; arithmetic is done in float64
        either way.

    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplying ``sample_weight``. ``"balanced"`` uses
        ``n_samples / (n_classes * np.bincount(y))`` and is supported by
        :meth:`fit` only.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.

    coef_ : ndarray of shape (n_outputs, n_features)
        The linear weights, in closed form from ``z_`` and ``n_``;
        ``n_outputs`` is 1 for two classes, else ``n_classes``.

    intercept_ : ndarray of shape (n_outputs,)
        The intercept, in closed form from ``z_intercept_`` and
        ``n_intercept_``.

    components_ : ndarray of shape (n_outputs, n_features, n_components)
        The factors ``v``, in closed form from ``z_factors_`` and
        ``n_factors_``. The interaction of features ``i`` and ``j`` for
        output ``o`` is ``components_[o, i] @ components_[o, j]``.

    z_ : ndarray of shape (n_outputs, n_features)
        The linear weights' ``z``: the accumulated gradients minus the
        proximal corrections. Read-only (assign a new array of its shape
        and dtype to replace it).

    n_ : ndarray of shape (n_outputs, n_features)
        The linear weights' ``n``: the sums of squared gradients. Read-only.

    z_intercept_ : ndarray of shape (n_outputs,)
        ``z`` of the intercept.

    n_intercept_ : ndarray of shape (n_outputs,)
        ``n`` of the intercept.

    z_factors_ : ndarray of shape (n_outputs, n_features, n_components)
        The factors' ``z``. Read-only.

    n_factors_ : ndarray of shape (n_outputs, n_features, n_components)
        The factors' ``n``: with the five arrays above, the whole learned
        state. Read-only.

    n_iter_ : int
        Passes made by the last :meth:`fit` (with early stopping, the passes
        over the rows not held out, including those after the best; 1 after
        :meth:`partial_fit`).

    best_iteration_ : int or None
        The number of passes the returned model has made in the last
        :meth:`fit`: the best pass with early stopping, else ``n_iter_``.
        None before any :meth:`fit`.

    n_samples_seen_ : int
        Rows learned from since the state was created, counting every pass.

    loss_curve_ : list of float
        The progressive validation log loss of each pass of :meth:`fit` and
        of each :meth:`partial_fit` call, in order since the state was
        created: the sample-weighted mean loss of the rows, each scored
        before it was learned from.

    validation_scores_ : list of float or None
        With early stopping, minus the held-out mean log loss after each pass
        of the last :meth:`fit` (higher is better). None otherwise.

    best_validation_score_ : float or None
        Minus the held-out loss of the returned model's pass. None without
        early stopping.

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

    _parameter_constraints: dict = {
        **FTRLClassifier._parameter_constraints,
        **_FactorizationMachine._fm_parameter_constraints,
    }

    def __init__(
        self,
        *,
        n_components: int = 8,
        init_stdev: float = 0.01,
        factor_learning_rate: Optional[float] = None,
        factor_l2: float = 0.03,
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
        class_weight: ClassWeight = None,
    ) -> None:
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
            n_jobs=n_jobs,
            dtype=dtype,
            class_weight=class_weight,
        )
        self.n_components = n_components
        self.init_stdev = init_stdev
        self.factor_learning_rate = factor_learning_rate
        self.factor_l2 = factor_l2


class FMRegressor(_FactorizationMachine, FTRLRegressor):
    """Factorization machine regression trained online with FTRL-Proximal.

    A factorization machine (Rendle, ICDM 2010) is the linear model plus an
    interaction ``<v_i, v_j> x_i x_j`` of every two features of a row,
    through a vector ``v_i`` of ``n_components`` factors per feature. With
    one-hot users and items, it learns each user's taste for each item from
    the ratings of similar users and items, which a linear model cannot.
    Every coordinate (the intercept, each weight, each factor) is learned by
    FTRL-Proximal with its own rate, as :class:`FTRLRegressor` learns its
    weights, for a squared, Huber or Poisson (log link) loss; a row costs
    ``O(n_components * nnz)`` (semantics: the documentation page
    "Factorization machines trained with FTRL"). Otherwise it has
    :class:`FTRLRegressor`'s contract.

    Parameters
    ----------
    loss : {"squared_error", "huber", "poisson"}, default="squared_error"
        ``"squared_error"``: ``(m - y)^2 / 2``. ``"huber"``: quadratic for
        residuals up to ``epsilon``, linear beyond, robust to outliers.
        ``"poisson"``: negative Poisson log-likelihood with a log link, for
        counts; predictions are ``exp(m)`` and ``y`` must be non-negative.

    epsilon : float, default=0.1
        Residual beyond which the Huber loss becomes linear, in the target's
        units. Used only by ``loss="huber"``. Range (0, inf).

    n_components : int, default=8
        The number ``k`` of factors per feature. More components fit richer
        interactions and overfit sooner on small data; 4 to 16 is the usual
        range. The state is ``k + 1`` times the linear model's.
        Range [1, inf); without factors, use :class:`FTRLRegressor`.

    init_stdev : float, default=0.01
        Standard deviation of the initial factors, drawn from a normal
        distribution once, when the state is created, from
        ``random_state``. Factors that all start at 0 never move: 0 gives
        exactly the linear model. Large values add noise the model must
        first unlearn. Range [0, inf).

    factor_learning_rate : float or None, default=None
        The rate scale ``alpha_v`` of the factors: each factor coordinate's
        learning rate is ``alpha_v / (beta + sqrt(n))``. None uses
        ``learning_rate``. Range (0, inf).

    factor_l2 : float, default=0.03
        L2 penalty on the factors of each row's features, applied per row:
        a term ``factor_l2 * v`` in each factor's gradient, as libFM and
        Wordbatch's ``FM_FTRL`` apply it. It keeps the factors from
        overfitting over several passes; a row of sample weight 0 still
        applies it. Range [0, inf).

    learning_rate : float, default=0.1
        The paper's ``alpha``: the rate scale of the weights and the
        intercept, whose per-coordinate learning rate is
        ``alpha / (beta + sqrt(n_i))``. A target in the hundreds needs
        weights in the hundreds: raise it, or divide the target by its
        scale. Range (0, inf).

    beta : float, default=1.0
        Smooths the learning rate of rarely seen coordinates. It is also the
        initial factors' proximal strength (``beta / alpha_v``), so it must
        be positive. Range (0, inf).

    l1 : float, default=0.0
        L1 strength of the linear weights (not of the factors): a weight is
        exactly 0 while ``|z_i| <= l1``. Range [0, inf).

    l2 : float, default=0.0
        L2 strength of the linear weights (for the factors, see
        ``factor_l2``). Range [0, inf).

    learning_rate_power : float, default=-0.5
        The exponent ``p`` of every coordinate's learning rate
        ``alpha / (beta + n ** -p)``, weights and factors alike, as
        TensorFlow's ``Ftrl`` names it; -0.5 is the paper's
        ``sqrt(n)``. Range [-1, 0].

    initial_accumulator_value : float, default=0.0
        The value every coordinate's ``n`` starts from when the state is
        created, as TensorFlow's ``Ftrl`` names it. Range [0, inf).

    fit_intercept : bool, default=True
        Whether to learn an (unregularized) intercept.

    max_iter : int, default=100
        Maximum number of passes over the data in :meth:`fit`.
        :meth:`partial_fit` always makes exactly one pass. Range [1, inf).

    tol : float or None, default=1e-4
        :meth:`fit` stops when the mean loss it watches (see
        ``early_stopping``) has not improved on the best pass by at least
        ``tol`` for ``n_iter_no_change`` passes in a row. None makes all
        ``max_iter`` passes (and with early stopping still keeps the best).
        Range [0, inf).

    n_iter_no_change : int, default=5
        Passes without improvement before :meth:`fit` stops. Range [1, inf).

    early_stopping : {"refit", True, False}, default="refit"
        How :meth:`fit` chooses the number of passes. With ``True`` and
        ``"refit"`` it holds out ``validation_fraction`` of the rows (at
        random), learns the others pass by pass, scores the held-out rows'
        mean training loss (``loss``) after each pass, and stops by ``tol``
        and ``n_iter_no_change``. ``True`` then restores the state of the
        pass with the lowest held-out loss, factors included. ``"refit"``
        starts again from the state :meth:`fit` started from and learns all
        the rows in as many passes as the last pass whose held-out loss is
        within ``tol`` of the lowest. ``False`` learns all the rows and stops
        on the progressive loss of each pass. :meth:`partial_fit` ignores
        it.

    validation_fraction : float, default=0.1
        The fraction of the rows held out by early stopping. Range (0, 1).

    shuffle : bool, default=True
        Whether :meth:`fit` shuffles the rows before each pass.

    random_state : int, RandomState instance or None, default=None
        Draws the initial factors (an int draws them with
        ``numpy.random.default_rng(random_state)``) and seeds the shuffling
        of :meth:`fit`. Pass an int for reproducible results.

    warm_start : bool, default=False
        If True, :meth:`fit` continues from the current state instead of
        starting afresh. :meth:`partial_fit` always continues.

    batch_size : int, default=1
        Rows per update. ``1`` is the exact per-row algorithm. Larger values
        run the numpy mini-batch pass: every margin of a batch (and its
        factor sums) comes from the state at the batch's start, then each
        touched coordinate takes one FTRL step with the batch's summed
        gradients and summed squared gradients (the factor penalty counted
        once per row). Without numba it is the fast choice; see
        :ref:`benchmarks` for its speed and held-out loss. Range [1, inf).

    engine : {"auto", "numpy", "numba"}, default="auto"
        Implementation of the exact per-row pass (``batch_size=1``).
        ``"numba"`` compiles it (install ``skftrl[fast]``) and gives the same
        state as ``"numpy"`` to rounding; it rejects ``batch_size > 1``.
        ``"auto"`` uses numba when it can be imported, else numpy.
        Mini-batches always run on numpy.

    n_jobs : int or None, default=None
        Threads that learn a pass together (``-1``: one per CPU). With more
        than one, the compiled engine learns the rows in rounds: each thread
        learns a contiguous shard of a round from the state as the round
        began, and the shards' changes are then added up, in order. The
        model is close to the sequential one, not equal to it, and the same
        for the same ``n_jobs``, bit for bit. A model's first rows, and
        rounds too short to pay, are learned in order. The numpy engines
        (no numba, ``engine="numpy"``, ``batch_size > 1``) ignore it. See
        :ref:`parallel`. None and 1: one thread, the exact algorithm.

    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Storage type of the state (the ``z`` and ``n`` of the intercept,
        weights and factors), set when the state is created (a later change
        is refused until a :meth:`fit` without ``warm_start``).
        ``numpy.float32`` halves its memory; arithmetic is done in float64
        either way.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        The linear weights, in closed form from ``z_`` and ``n_``.

    intercept_ : ndarray of shape (1,)
        The intercept, in closed form from ``z_intercept_`` and
        ``n_intercept_``.

    components_ : ndarray of shape (1, n_features, n_components)
        The factors ``v``, in closed form from ``z_factors_`` and
        ``n_factors_``. The interaction of features ``i`` and ``j`` is
        ``components_[0, i] @ components_[0, j]``.

    z_ : ndarray of shape (1, n_features)
        The linear weights' ``z``: the accumulated gradients minus the
        proximal corrections. Read-only (assign a new array of its shape
        and dtype to replace it).

    n_ : ndarray of shape (1, n_features)
        The linear weights' ``n``: the sums of squared gradients. Read-only.

    z_intercept_ : ndarray of shape (1,)
        ``z`` of the intercept.

    n_intercept_ : ndarray of shape (1,)
        ``n`` of the intercept.

    z_factors_ : ndarray of shape (1, n_features, n_components)
        The factors' ``z``. Read-only.

    n_factors_ : ndarray of shape (1, n_features, n_components)
        The factors' ``n``: with the five arrays above, the whole learned
        state. Read-only.

    n_iter_ : int
        Passes made by the last :meth:`fit` (with early stopping, the passes
        over the rows not held out, including those after the best; 1 after
        :meth:`partial_fit`).

    best_iteration_ : int or None
        The number of passes the returned model has made in the last
        :meth:`fit`: the best pass with early stopping, else ``n_iter_``.
        None before any :meth:`fit`.

    n_samples_seen_ : int
        Rows learned from since the state was created, counting every pass.

    loss_curve_ : list of float
        The progressive validation loss of each pass of :meth:`fit` and of
        each :meth:`partial_fit` call, in order since the state was created:
        the sample-weighted mean training loss of the rows (half the squared
        error for ``"squared_error"``), each scored before it was learned
        from.

    validation_scores_ : list of float or None
        With early stopping, minus the held-out mean training loss after
        each pass of the last :meth:`fit` (higher is better). None otherwise.

    best_validation_score_ : float or None
        Minus the held-out loss of the returned model's pass. None without
        early stopping.

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

    H. B. McMahan et al., "Ad Click Prediction: a View from the Trenches",
    KDD 2013.

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

    _parameter_constraints: dict = {
        **FTRLRegressor._parameter_constraints,
        **_FactorizationMachine._fm_parameter_constraints,
    }

    def __init__(
        self,
        *,
        loss: RegressionLoss = "squared_error",
        epsilon: float = 0.1,
        n_components: int = 8,
        init_stdev: float = 0.01,
        factor_learning_rate: Optional[float] = None,
        factor_l2: float = 0.03,
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
            n_jobs=n_jobs,
            dtype=dtype,
        )
        self.n_components = n_components
        self.init_stdev = init_stdev
        self.factor_learning_rate = factor_learning_rate
        self.factor_l2 = factor_l2
