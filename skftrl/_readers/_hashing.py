"""Columns of raw values hashed into ``2**hash_bits`` features.

A numeric column's value is the feature at the hashed index of the column's
name; a categorical column's value is 1 at the hashed index of
``"column=value"``. Hashing is scikit-learn's ``FeatureHasher`` of strings,
without alternate signs, so that a weight reads as the feature's effect;
values of the same index in a row are added up (hash collisions), as
``FeatureHasher`` does. A missing value adds no feature, nor does a zero.
Each chunk's categorical values are hashed once per distinct value.
"""

import numpy as np
import scipy.sparse as sp

from ._csv_values import is_missing, numeric_values

# Names of hashed features kept for `skftrl inspect`: the first distinct
# values of each categorical column, so that memory stays bounded.
MAX_NAMES_PER_COLUMN = 1000


def hashed_index(hasher, names):
    """The column of each name in the hashed feature space, as FeatureHasher puts it."""
    if not names:
        return np.zeros(0, dtype=np.int64)
    return hasher.transform([[name] for name in names]).indices.astype(np.int64)


class FeatureNames:
    """The names of hashed features, at most MAX_NAMES_PER_COLUMN a column."""

    def __init__(self, by_index=None):
        self.by_index = {} if by_index is None else by_index  # index -> names
        self.count = {}  # column -> names recorded

    def add(self, column, names, indices):
        for name, index in zip(names, indices):
            if not self.wants(column):
                return
            names_here = self.by_index.setdefault(int(index), [])
            if name not in names_here:
                names_here.append(name)
                self.count[column] = self.count.get(column, 0) + 1

    def wants(self, column):
        return self.count.get(column, 0) < MAX_NAMES_PER_COLUMN


class ColumnHasher:
    """Feature columns, each ``"numeric"`` or ``"categorical"`` as ``kinds``
    says, hashed into ``2**hash_bits`` features; ``names`` (a
    :class:`FeatureNames`), when given, records the names of the features."""

    def __init__(self, kinds, hash_bits, names=None):
        from sklearn.feature_extraction import FeatureHasher  # only when a CSV file is read

        self.kinds = kinds
        self.names = names
        self.hasher = FeatureHasher(
            n_features=2**hash_bits, input_type="string", alternate_sign=False
        )
        numeric_names = [name for name, kind in kinds.items() if kind == "numeric"]
        self.numeric_index = dict(zip(numeric_names, hashed_index(self.hasher, numeric_names)))
        if names is not None:
            for name in numeric_names:
                names.add(name, [name], [self.numeric_index[name]])

    def transform(self, path, values_of, lines):
        """``(X, numbers_of)``: the CSR matrix of rows whose values are
        ``values_of`` (column -> str array), and the numeric columns' values
        (column -> float array, NaN where missing). A numeric column's value
        that is not a number is an error at its line of ``path``."""
        row_ids, column_ids, data, numbers_of = [], [], [], {}
        for name, kind in self.kinds.items():
            column_values = values_of[name]
            if kind == "numeric":
                numbers = numeric_values(path, name, column_values, lines)
                numbers_of[name] = numbers
                # NaN is a missing value; a zero adds nothing to a linear model.
                rows_kept = np.flatnonzero(~np.isnan(numbers) & (numbers != 0))
                row_ids.append(rows_kept)
                column_ids.append(np.full(rows_kept.size, self.numeric_index[name]))
                data.append(numbers[rows_kept])
            else:
                rows_kept, indices = categorical_features(
                    name, column_values, self.hasher, self.names
                )
                row_ids.append(rows_kept)
                column_ids.append(indices)
                data.append(np.ones(rows_kept.size))
        X = sp.csr_matrix(
            (
                np.concatenate(data) if data else np.zeros(0),
                (
                    np.concatenate(row_ids) if row_ids else np.zeros(0, np.int64),
                    np.concatenate(column_ids) if column_ids else np.zeros(0, np.int64),
                ),
            ),
            shape=(len(lines), self.hasher.n_features),
        )
        X.sum_duplicates()
        return X, numbers_of


def categorical_features(column, values, hasher, names):
    """Rows with a value in a categorical column, and the hashed index of each."""
    distinct = list(dict.fromkeys(values))
    code_of = {value: code for code, value in enumerate(distinct)}
    row_codes = np.fromiter(map(code_of.__getitem__, values), dtype=np.intp, count=len(values))
    present = np.array([not is_missing(value) for value in distinct], dtype=bool)
    feature_names = [f"{column}={value}" for value in distinct]
    indices = np.full(len(distinct), -1, dtype=np.int64)
    indices[present] = hashed_index(hasher, [n for n, p in zip(feature_names, present) if p])
    if names is not None and names.wants(column):
        names.add(column, [n for n, p in zip(feature_names, present) if p], indices[present])
    row_indices = indices[row_codes]
    rows = np.flatnonzero(row_indices >= 0)
    return rows, row_indices[rows]
