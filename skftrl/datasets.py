"""Loaders for the small real datasets shipped with skftrl.

See ``skftrl/_data/README.md`` for their origin and licences (CC BY 4.0).
"""

from importlib.resources import as_file, files

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

__all__ = ["load_a9a", "load_dna"]


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


def load_a9a():
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


def load_dna():
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
