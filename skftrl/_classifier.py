"""FTRLClassifier: logistic (binary) and multinomial (softmax) FTRL-Proximal."""

from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray
from sklearn.base import ClassifierMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_non_negative

from ._base import BaseFTRL, Estimator
from ._engines import get_loss
from ._sklearn_compat import (
    StrOptions,
    _check_partial_fit_first_call,
    _fit_context,
    is_pandas_na,
)
from ._transaction import unchanged_on_error
from ._typing import (
    ArrayLike,
    ClassWeight,
    EarlyStopping,
    Engine,
    FloatArray,
    FloatType,
    MatrixLike,
    RandomStateLike,
)
from ._validation import check_start_is_first


def _n_outputs(classes):
    """One logistic output for two classes, else one softmax output per class."""
    return 1 if len(classes) == 2 else len(classes)


def _check_no_missing_labels(y):
    """Raise a ValueError if ``y`` holds a missing label (None or pandas.NA)."""
    if y is None:
        return  # no y at all: validation says so
    try:
        labels = np.asarray(y, dtype=object).ravel()
    except (TypeError, ValueError):
        return
    missing = np.flatnonzero([label is None or is_pandas_na(label) for label in labels])
    if len(missing):
        raise ValueError(
            f"Input y contains a missing label (None or pandas.NA) in {len(missing)} "
            f"row(s), the first at row {missing[0]}: every row needs a class."
        )


def _class_indices(scores):
    """Index in ``classes_`` of the predicted class, from scores (n_samples, n_outputs)."""
    if scores.shape[1] == 1:
        return (scores[:, 0] > 0).astype(np.intp)
    return np.argmax(scores, axis=1)


class FTRLClassifier(ClassifierMixin, BaseFTRL):
    """Linear classifier trained online with FTRL-Proximal.

    Follow-The-Regularized-Leader Proximal (McMahan et al., "Ad Click
    Prediction: a View from the Trenches", KDD 2013, Algorithm 1) with
    per-coordinate learning rates and L1/L2 regularization. Two classes use
    one logistic output; three or more use a multinomial (softmax) model with
    one output per class. Each update touches only the non-zero features of a
    row, so training cost is proportional to the number of non-zeros, and L1
    gives exactly sparse weights. The intercept is never regularized.

    By default rows are processed one at a time, in order: this is the exact
    algorithm, compiled with numba when it is installed (``engine``).
    ``batch_size > 1`` trades exactness for speed in pure numpy.

    Parameters
    ----------
    learning_rate : float, default=0.1
        The paper's ``alpha``, the scale of the per-coordinate learning rate
        ``alpha / (beta + sqrt(n_i))``. Range (0, inf).

    beta : float, default=1.0
        Smooths the learning rate of rarely seen coordinates. Range [0, inf).

    l1 : float, default=0.0
        L1 regularization strength (the paper's ``lambda_1``); larger values
        give sparser weights. It is an absolute threshold on the accumulated
        gradient ``|z_i|``, so it grows with the number of rows. Range [0, inf).

    l2 : float, default=0.0
        L2 regularization strength (the paper's ``lambda_2``). Range [0, inf).

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
        (stratified by class, or at random when that is impossible),
        learns the others pass by pass, scores the held-out rows' mean log
        loss after each pass, and stops by ``tol`` and ``n_iter_no_change``.
        ``True`` then **restores the state of the pass with the lowest
        held-out loss**, as Keras' ``restore_best_weights`` and
        :class:`~sklearn.neural_network.MLPClassifier`: the model is the one
        that scored best, and never learns the held-out rows. ``"refit"``
        starts again from the state :meth:`fit` started from and learns
        *all* the rows in as many passes as the last pass whose held-out
        loss is within ``tol`` of the lowest had, so that no row is wasted; on sparse data
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
        Seeds the shuffling in :meth:`fit`. Pass an int for reproducible
        results.

    warm_start : bool, default=False
        If True, :meth:`fit` continues from the current state instead of
        starting afresh. :meth:`partial_fit` always continues.

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

    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplying ``sample_weight``. ``"balanced"`` uses
        ``n_samples / (n_classes * np.bincount(y))`` and is supported by
        :meth:`fit` only, as in :class:`~sklearn.linear_model.SGDClassifier`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.

    coef_ : ndarray of shape (n_outputs, n_features)
        The weights, computed in closed form from ``z_`` and ``n_``;
        ``n_outputs`` is 1 for two classes, else ``n_classes``. A new array on
        each access. Prediction keeps the weights it computes until the model
        learns again or its hyper-parameters change.

    intercept_ : ndarray of shape (n_outputs,)
        The intercept, computed in closed form from ``z_intercept_`` and
        ``n_intercept_``.

    z_ : ndarray of shape (n_outputs, n_features)
        The paper's ``z``: the accumulated gradients minus the proximal
        corrections, one per (output, feature). With ``n_`` it is the whole
        learned state. Read-only (assign a new array of its shape and dtype
        to replace it).

    n_ : ndarray of shape (n_outputs, n_features)
        The paper's ``n``: the sum of squared gradients per (output, feature).
        Read-only.

    z_intercept_ : ndarray of shape (n_outputs,)
        ``z`` of the intercept.

    n_intercept_ : ndarray of shape (n_outputs,)
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
        learned from (as Vowpal Wabbit's "average loss"), in log loss.

    validation_scores_ : list of float or None
        With early stopping, the score of the held-out rows after each pass
        of the last :meth:`fit`: minus their mean log loss, so that higher is
        better, as for every scikit-learn score (``-validation_scores_[k]``
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
    FTRLRegressor : FTRL-Proximal for regression.
    FMClassifier : A factorization machine: this model plus pairwise interactions.
    sklearn.linear_model.SGDClassifier : Linear models trained with SGD.

    References
    ----------
    H. B. McMahan et al., "Ad Click Prediction: a View from the Trenches",
    KDD 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from skftrl import FTRLClassifier
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    >>> y = np.array(["spam", "ham", "spam", "ham"])
    >>> clf = FTRLClassifier(learning_rate=0.5, max_iter=10, tol=None, random_state=0)
    >>> clf.fit(X, y).predict([[1.0, 0.0], [0.0, 1.0]])
    array(['spam', 'ham'], dtype='<U4')
    >>> clf.predict_proba([[1.0, 0.0]]).round(2)
    array([[0.18, 0.82]])
    """

    _parameter_constraints: dict = {
        **BaseFTRL._parameter_constraints,
        "class_weight": [StrOptions({"balanced"}), dict, None],
    }
    _numeric_targets = False

    def __init__(
        self,
        *,
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
        self.class_weight = class_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    def _n_outputs(self):
        return _n_outputs(self.classes_)

    def _loss(self):
        return get_loss("log_loss" if self._n_outputs() == 1 else "multinomial")

    def _prepare(self, X, y, sample_weight, classes, reset):
        """Validate a batch: canonical X, kernel targets, per-row weights.

        ``classes`` are the model's classes (new ones when ``reset``).
        Nothing is stored on the estimator here beyond what validate_data sets.
        """
        labels = y
        try:
            X, y = self._validate_X_y(X, y, reset=reset)
            if classes is None:
                check_classification_targets(y)
                classes = np.unique(y)
            # With the classes known, checking y against them below is enough.
            if len(classes) < 2:
                raise ValueError(
                    f"{type(self).__name__} needs samples of at least 2 classes; got only "
                    f"one class: {classes[0]!r}."
                )
            # Each label's place among the sorted classes, then one comparison: no
            # sorting of y, which would cost more than the update itself.
            class_index = np.minimum(np.searchsorted(classes, y), len(classes) - 1)
            unseen = classes[class_index] != y
        except (TypeError, ValueError, AttributeError):
            # Labels that cannot be compared raise a TypeError naming None or
            # NA only in passing (or, under numpy < 1.25, whose failed
            # comparisons give a bool, an AttributeError inside scikit-learn's
            # check of y); say what is wrong, as validation does for NaN.
            _check_no_missing_labels(labels)
            raise
        if unseen.any():
            raise ValueError(
                f"y contains labels not in classes: {np.unique(y[unseen]).tolist()}; "
                f"the classes are {classes.tolist()}."
            )
        if len(classes) == 2:
            targets = (class_index == 1).astype(np.float64)
        else:
            targets = class_index.astype(np.intp)

        sample_weight = self._validate_sample_weight(sample_weight, X)
        if self.class_weight is not None:
            sample_weight = self._weighted_by_class(sample_weight, class_index, classes, y)
        return X, targets, sample_weight, classes

    def _prepare_rows(self, X, y, sample_weight):
        X, targets, sample_weight, _ = self._prepare(
            X, y, sample_weight, self.classes_, reset=False
        )
        return X, targets, sample_weight

    def _weighted_by_class(self, sample_weight, class_index, classes, y):
        """``sample_weight`` times each row's class weight, which must be
        finite and non-negative, as sample weights must."""
        class_weight = check_array(
            compute_class_weight(self.class_weight, classes=classes, y=y),
            ensure_2d=False,
            dtype=np.float64,
            input_name="class_weight",
        )
        check_non_negative(class_weight, "class_weight")
        with np.errstate(over="ignore"):
            sample_weight = sample_weight * class_weight[class_index]
        if not np.all(np.isfinite(sample_weight)):
            raise ValueError(
                "sample_weight times class_weight overflows float64 (the largest "
                "product is beyond 1.8e308); scale the weights down."
            )
        return sample_weight

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
            Class labels of any type.
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
            ``n_outputs`` is 1 for two classes (the weights of the second
            class), else the number of classes; with one output, shape
            ``(n_features,)`` is taken too.
            A fit given ``coef_init`` or ``intercept_init`` starts a new
            state, even with ``warm_start=True``.
        intercept_init : float or array-like of shape (n_outputs,), default=None
            Finite intercepts to start from instead of 0 (with
            ``fit_intercept=True``).

        Returns
        -------
        self : object
            The fitted estimator.

        Examples
        --------
        Go on learning online from the weights of a logistic regression
        fitted in batch:

        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skftrl import FTRLClassifier
        >>> X, y = make_classification(n_samples=500, random_state=0)
        >>> batch = LogisticRegression().fit(X, y)
        >>> online = FTRLClassifier(random_state=0).fit(
        ...     X, y, coef_init=batch.coef_, intercept_init=batch.intercept_
        ... )
        >>> online.coef_.shape
        (1, 20)
        """
        given = coef_init is not None or intercept_init is not None
        keep_state = self.warm_start and self.__sklearn_is_fitted__() and not given
        classes = self.classes_ if keep_state else None
        X, targets, sample_weight, classes = self._prepare(
            X, y, sample_weight, classes, reset=not keep_state
        )
        if not keep_state:
            self.classes_ = classes
            self._new_state(_n_outputs(classes), X.shape[1], coef_init, intercept_init)
        self._fit_passes(X, targets, sample_weight)
        return self

    @unchanged_on_error
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(
        self: Estimator,
        X: MatrixLike,
        y: ArrayLike,
        classes: Optional[ArrayLike] = None,
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
            Class labels, each one of ``classes``.
        classes : array-like of shape (n_classes,), default=None
            All the classes the model will ever see. Required on the first
            call; later calls may omit it or must pass the same classes.
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
        X, targets, sample_weight = self._partial_fit_rows(
            X, y, classes, sample_weight, coef_init, intercept_init
        )
        self._learn(X, targets, sample_weight, np.arange(X.shape[0]))
        self.n_iter_ = 1
        return self

    def _partial_fit_rows(self, X, y, classes, sample_weight, coef_init=None, intercept_init=None):
        """partial_fit's checks of its arguments, and its first call's new
        state: the rows as the passes take them."""
        # _fit_context skips validation in partial_fit once fitted, but
        # set_params may have changed the parameters since the last call.
        self._validate_params_if_changed()
        if self.class_weight == "balanced":
            raise ValueError(
                "class_weight='balanced' is not supported for partial_fit: the "
                "class frequencies of the whole stream are unknown. Compute them "
                "with sklearn.utils.class_weight.compute_class_weight('balanced', "
                "classes=classes, y=y) on a large enough sample and pass the "
                "resulting dict as class_weight."
            )
        # Streams pass the same sorted classes on every call: comparing them
        # with classes_ is then enough, where scikit-learn's check costs about
        # a millisecond (it infers the type of target of both).
        if (
            classes is not None
            and hasattr(self, "classes_")
            and np.array_equal(self.classes_, classes)
        ):
            first_call = False
        else:
            first_call = _check_partial_fit_first_call(self, classes)
        X, targets, sample_weight, classes = self._prepare(
            X, y, sample_weight, self.classes_, reset=first_call
        )
        check_start_is_first(first_call, coef_init, intercept_init)
        if first_call:
            self._new_state(_n_outputs(classes), X.shape[1], coef_init, intercept_init)
        return X, targets, sample_weight

    def decision_function(self, X: MatrixLike) -> FloatArray:
        """Margins: shape (n_samples,) for two classes, else (n_samples, n_classes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        scores : ndarray
            For two classes, positive scores favour ``classes_[1]``.
        """
        scores = self._decision_scores(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X: MatrixLike) -> NDArray[Any]:
        """Predict the class of each sample.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels, from ``classes_``.
        """
        scores = self._decision_scores(X)  # checks that the model is fitted
        return self.classes_[_class_indices(scores)]

    def predict_proba(self, X: MatrixLike) -> FloatArray:
        """Class probabilities; each row sums to 1.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        scores = self._decision_scores(X)  # checks that the model is fitted
        return self._loss().inverse_link(scores)

    def predict_log_proba(self, X: MatrixLike) -> FloatArray:
        """Logarithm of the class probabilities, computed without underflow.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        scores = self._decision_scores(X)  # checks that the model is fitted
        return self._loss().log_inverse_link(scores)
