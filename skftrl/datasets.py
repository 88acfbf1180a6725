"""Loaders for the small real datasets shipped with skftrl.

See ``skftrl/_data/README.md`` for their origin and licences (CC BY 4.0).
"""

from importlib.resources import as_file, files
from typing import Any, Union

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.utils import Bunch

from ._sklearn_compat import check_pandas_support
from ._typing import FloatArray

__all__ = ["load_a9a", "load_bike_sharing", "load_dna"]

# Columns of bike_sharing_hour.csv.gz used as features, in the file's order.
# "instant" (a row number) and "dteday" (the date, already in yr/mnth/weekday)
# are left out, and so are "casual" and "registered": they add up to the
# target "cnt", so as features they would give the answer away.
BIKE_CATEGORICAL = [
    "season",
    "yr",
    "mnth",
    "hr",
    "holiday",
    "weekday",
    "workingday",
    "weathersit",
]
BIKE_NUMERIC = ["temp", "atemp", "hum", "windspeed"]


def _load_split(train_name, test_name, n_features):
    data = files("skftrl") / "_data"
    splits = []
    for name in (train_name, test_name):
        with as_file(data / name) as path:
            X, y = load_svmlight_file(str(path), n_features=n_features)
        # 32-bit indices, which every scikit-learn estimator accepts
        # (SGDClassifier rejects the 64-bit ones the parser returns).
        X = sp.csr_matrix(
            (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
        )
        splits += [X, y]
    return tuple(splits)


def load_a9a() -> tuple[Any, FloatArray, Any, FloatArray]:
    """Load a9a (UCI Adult, LIBSVM version): income above $50K, binary.

    32,561 training and 16,281 test rows over 123 binary features, about 14
    non-zeros a row. Labels are -1 and +1.

    Returns
    -------
    X_train : scipy.sparse.csr_matrix of shape (32561, 123)
        Training features, 0/1 values.
    y_train : ndarray of shape (32561,)
        Training labels, -1.0 or 1.0.
    X_test : scipy.sparse.csr_matrix of shape (16281, 123)
        Test features (the a9a.t file).
    y_test : ndarray of shape (16281,)
        Test labels.

    Examples
    --------
    >>> from skftrl.datasets import load_a9a
    >>> X_train, y_train, X_test, y_test = load_a9a()
    >>> X_train.shape, X_test.shape
    ((32561, 123), (16281, 123))
    """
    return _load_split("a9a.gz", "a9a.t.gz", n_features=123)


def load_dna() -> tuple[Any, FloatArray, Any, FloatArray]:
    """Load dna (Statlog DNA splice junctions, LIBSVM version): 3 classes.

    2,000 training and 1,186 test rows over 180 binary features. Labels are
    1, 2 and 3.

    Returns
    -------
    X_train : scipy.sparse.csr_matrix of shape (2000, 180)
        Training features, 0/1 values.
    y_train : ndarray of shape (2000,)
        Training labels, 1.0, 2.0 or 3.0.
    X_test : scipy.sparse.csr_matrix of shape (1186, 180)
        Test features (the dna.scale.t file).
    y_test : ndarray of shape (1186,)
        Test labels.

    Examples
    --------
    >>> import numpy as np
    >>> from skftrl.datasets import load_dna
    >>> X_train, y_train, X_test, y_test = load_dna()
    >>> X_train.shape, np.unique(y_train)
    ((2000, 180), array([1., 2., 3.]))
    """
    return _load_split("dna.scale.gz", "dna.scale.t.gz", n_features=180)


def load_bike_sharing(
    *, return_X_y: bool = False, as_frame: bool = False
) -> Union[Bunch, tuple[Any, Any]]:
    """Load bike sharing (UCI, Capital Bikeshare 2011-2012): hourly rental counts.

    17,379 hours in time order, 12 features and the count of rented bikes
    (``cnt``, from 1 to 977) as the regression target. The 8 categorical
    features are integer codes: ``season`` (1 to 4), ``yr`` (0 for 2011, 1 for
    2012), ``mnth`` (1 to 12), ``hr`` (0 to 23), ``holiday`` (0 or 1),
    ``weekday`` (0 to 6), ``workingday`` (0 or 1) and ``weathersit`` (1 clear
    to 4 heavy rain). The 4 numeric features are normalized to [0, 1]:
    ``temp``, ``atemp`` (felt temperature), ``hum`` (humidity) and
    ``windspeed``. The file's other columns are left out: the record number,
    the date (already given by ``yr``, ``mnth`` and ``weekday``), and the
    counts of casual and registered users, whose sum is ``cnt``.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame (categorical features as
        integers, numeric ones as floats) and ``target`` a Series, and the
        Bunch has ``frame``, both together. Needs pandas.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : ndarray of shape (17379, 12) or DataFrame
            The features, columns in the order of ``feature_names``
            (float64 in the array).
        target : ndarray of shape (17379,) or Series
            The hourly count ``cnt``, as float64 in the array.
        feature_names : list of str
            The 12 feature names, the categorical ones first.
        categorical_features : list of str
            The 8 categorical feature names.
        target_names : list of str
            ``["cnt"]``.
        frame : DataFrame of shape (17379, 13) or None
            ``data`` and ``target`` together when ``as_frame=True``.
        DESCR : str
            A short description with the dataset's source and citation.
    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` described above.

    References
    ----------
    H. Fanaee-T and J. Gama, "Event labeling combining ensemble detectors and
    background knowledge", Progress in Artificial Intelligence, 2013,
    doi:10.1007/s13748-013-0040-3.

    Examples
    --------
    >>> from skftrl.datasets import load_bike_sharing
    >>> X, y = load_bike_sharing(return_X_y=True)
    >>> X.shape, int(y.min()), int(y.max())
    ((17379, 12), 1, 977)
    >>> load_bike_sharing().feature_names[:4]
    ['season', 'yr', 'mnth', 'hr']
    """
    feature_names = BIKE_CATEGORICAL + BIKE_NUMERIC
    columns = feature_names + ["cnt"]
    with as_file(files("skftrl") / "_data" / "bike_sharing_hour.csv.gz") as path:
        # numpy's annotations take usecols as indices only; names work as well.
        table = np.genfromtxt(
            path,
            delimiter=",",
            names=True,
            usecols=columns,  # type: ignore[call-overload]
        )
    data = np.column_stack([table[name] for name in feature_names]).astype(np.float64)
    target = table["cnt"].astype(np.float64)
    frame = None
    if as_frame:
        pd = check_pandas_support("load_bike_sharing(as_frame=True)")
        frame = pd.DataFrame(
            {
                **{name: table[name].astype(np.int64) for name in BIKE_CATEGORICAL},
                **{name: table[name] for name in BIKE_NUMERIC},
                "cnt": table["cnt"].astype(np.int64),
            }
        )
        data, target = frame[feature_names], frame["cnt"]
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        categorical_features=list(BIKE_CATEGORICAL),
        target_names=["cnt"],
        DESCR=_BIKE_DESCR,
    )


_BIKE_DESCR = """Bike sharing, hourly (UCI Machine Learning Repository, CC BY 4.0)

Hourly counts of rented bikes of the Capital Bikeshare system, Washington
D.C., 2011 and 2012, with the weather and the calendar of each hour:
17,379 rows in time order. Target: cnt, the count of rented bikes.

Source: H. Fanaee-T and J. Gama, "Event labeling combining ensemble detectors
and background knowledge", Progress in Artificial Intelligence (2013),
pp. 1-15, doi:10.1007/s13748-013-0040-3. Use of the dataset in publications
must cite this paper.
"""
