"""Reading a fitted model: which features it uses, and how much."""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

__all__ = ["nonzero_coefficients"]

if TYPE_CHECKING:
    import pandas


def _feature_names(estimator, model, n_features):
    """Names of the features ``model`` (the last step of ``estimator``) sees."""
    if isinstance(estimator, Pipeline) and len(estimator) > 1:
        try:
            return estimator[:-1].get_feature_names_out()
        except AttributeError as error:
            raise ValueError(
                "Cannot name the features: a step of the pipeline before the "
                f"model has no get_feature_names_out ({error}). Pass "
                "feature_names, a list of the model's n_features_in_ = "
                f"{n_features} feature names."
            ) from error
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        # scikit-learn's names for unnamed columns, as get_feature_names_out gives.
        return np.asarray([f"x{i}" for i in range(n_features)], dtype=object)
    return names


def _hashed_names(estimator, X):
    """The names ``hashed_names`` gives the features of ``X``, from the step before the model."""
    hasher = estimator[-2] if isinstance(estimator, Pipeline) and len(estimator) > 1 else None
    if not hasattr(hasher, "hashed_names"):
        raise ValueError(
            "X names hashed features through a pipeline whose step before the model is a "
            "ColumnHasher; this estimator has none. Pass feature_names instead."
        )
    return hasher.hashed_names(X)


def nonzero_coefficients(
    estimator: Any,
    feature_names: Union[ArrayLike, Mapping[int, list[str]], None] = None,
    *,
    X: Any = None,
) -> Union["pandas.DataFrame", list[tuple[Any, ...]]]:
    """The non-zero coefficients of a fitted model by feature name, largest first.

    L1 regularization (``l1 > 0``) sets most weights of a wide model to
    exactly zero; this lists the others, sorted by decreasing absolute value
    (ties keep the order of the outputs, then of the features).

    Parameters
    ----------
    estimator : estimator or Pipeline
        A fitted :class:`~skftrl.FTRLClassifier` or
        :class:`~skftrl.FTRLRegressor` (or any fitted linear model with a
        ``coef_``), or a fitted :class:`~sklearn.pipeline.Pipeline` whose last
        step is one.
    feature_names : array-like of str of shape (n_features,) or dict, default=None
        Names of the model's input columns. By default they come from the
        pipeline's steps before the model (``get_feature_names_out``), else
        from the model's ``feature_names_in_`` (fitted on a DataFrame), else
        they are ``"x0"``, ``"x1"``, ... as scikit-learn names unnamed
        columns. A dict maps some columns to the names of the features in
        them, as :meth:`~skftrl.preprocessing.ColumnHasher.hashed_names`
        returns: the names of a column are joined by ``" | "`` (features
        that collide), and the other columns keep their default names.
    X : table, default=None
        Raw rows that name hashed features: when the pipeline's step before
        the model is a :class:`~skftrl.preprocessing.ColumnHasher`, the
        features of these rows name the columns they are hashed into (such
        as ``site=news.example``), as ``feature_names=hasher.hashed_names(X)``
        would. Columns that no feature of ``X`` lands in keep their default
        names (``columnhasher61949``). Give the training rows, or a sample
        of them, to name most of the learned weights.

    Returns
    -------
    coefficients : pandas.DataFrame or list of tuple
        One row per non-zero coefficient, with columns ``feature``, ``class``
        (classifiers only) and ``coefficient``. ``class`` is the class whose
        score the coefficient adds to: for two classes it is ``classes_[1]``
        (a negative coefficient favours ``classes_[0]``); for more, each
        class has its own row per feature. The intercept is not a feature
        and is not listed (see ``intercept_``). A pandas DataFrame when pandas
        is installed, else a list of ``(feature, class, coefficient)`` (or
        ``(feature, coefficient)``) tuples in the same order.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the model is not fitted.
    ValueError
        If ``feature_names`` does not have one name per feature (or a dict
        names a column the model does not have), a step of the pipeline
        cannot name its output features, or ``X`` is given without a
        :class:`~skftrl.preprocessing.ColumnHasher` before the model.

    See Also
    --------
    sklearn.pipeline.Pipeline.get_feature_names_out : Names after each step.

    Examples
    --------
    Whether a visitor buys, from three binary columns; ``night`` does not
    help, and L1 sets its weight to exactly zero:

    >>> import pandas as pd
    >>> from skftrl import FTRLClassifier
    >>> from skftrl.inspection import nonzero_coefficients
    >>> X = pd.DataFrame({"returning": [0, 0, 0, 0, 1, 1, 1, 1] * 5,
    ...                   "mobile": [0, 0, 1, 1, 0, 0, 1, 1] * 5,
    ...                   "night": [0, 1, 0, 1, 0, 1, 0, 1] * 5})
    >>> y = ["no", "no", "yes", "no", "no", "yes", "yes", "yes"] * 5
    >>> clf = FTRLClassifier(learning_rate=0.5, l1=1.0)
    >>> clf.partial_fit(X, y, classes=["no", "yes"]).coef_.round(2)
    array([[0.61, 0.57, 0.  ]])
    >>> nonzero_coefficients(clf).round(2)
         feature class  coefficient
    0  returning   yes         0.61
    1     mobile   yes         0.57

    After a pipeline, the names come from its steps, e.g.
    ``nonzero_coefficients(make_pipeline(OneHotEncoder(), FTRLClassifier()).fit(X, y))``
    lists features such as ``"colour_red"``. After a
    :class:`~skftrl.preprocessing.ColumnHasher`, rows of raw values name the
    hashed features:

    >>> from sklearn.pipeline import make_pipeline
    >>> from skftrl.preprocessing import ColumnHasher
    >>> rows = pd.DataFrame({"site": ["news", "shop", "news", "shop"] * 10})
    >>> clicked = [1, 0, 1, 0] * 10
    >>> model = make_pipeline(ColumnHasher(hash_bits=10, categorical=["site"]),
    ...                       FTRLClassifier(learning_rate=0.5, random_state=0))
    >>> model = model.fit(rows, clicked)
    >>> nonzero_coefficients(model, X=rows).round(2)
         feature  class  coefficient
    0  site=news      1         5.41
    1  site=shop      1        -5.35
    """
    model = estimator[-1] if isinstance(estimator, Pipeline) else estimator
    check_is_fitted(model)
    if not hasattr(model, "coef_"):
        raise TypeError(
            f"nonzero_coefficients needs a linear model with coef_; got {type(model).__name__}."
        )
    coef = np.atleast_2d(model.coef_)
    n_features = coef.shape[1]
    if X is not None:
        if feature_names is not None:
            raise ValueError("Give feature_names or X to name the features, not both.")
        feature_names = _hashed_names(estimator, X)
    if feature_names is None or isinstance(feature_names, Mapping):
        known = feature_names or {}
        feature_names = np.array(_feature_names(estimator, model, n_features), dtype=object)
        beyond = [column for column in known if not 0 <= column < n_features]
        if beyond:
            raise ValueError(
                f"feature_names names column {beyond[0]}, but the model has {n_features} features."
            )
        for column, names in known.items():
            feature_names[column] = " | ".join(names)
    feature_names = np.asarray(feature_names, dtype=object)
    if feature_names.shape != (n_features,):
        raise ValueError(
            f"feature_names must have one name per feature: the model has "
            f"{n_features} features, got {feature_names.shape[0] if feature_names.ndim else 0} "
            "names."
        )

    outputs, features = np.nonzero(coef)
    values = coef[outputs, features]
    order = np.argsort(-np.abs(values), kind="stable")
    columns = {"feature": feature_names[features[order]]}
    if is_classifier(model):
        classes = model.classes_
        # Two classes share one output, the score of classes_[1].
        output_classes = classes[1:] if coef.shape[0] == 1 and len(classes) == 2 else classes
        columns["class"] = output_classes[outputs[order]]
    columns["coefficient"] = values[order]

    try:
        import pandas as pd
    except ImportError:
        return list(zip(*columns.values()))
    return pd.DataFrame(columns)
