"""Raw columns hashed into sparse features: :class:`ColumnHasher`."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from ._readers._hashing import (
    RowError,
    columns_of,
    concatenate_features,
    fields_matrix,
    names_by_column,
    overflowing_sum,
    table_fields,
)
from ._readers._tables import table_columns
from ._sklearn_compat import Interval, _fit_context

__all__ = ["ColumnHasher"]


class ColumnHasher(TransformerMixin, BaseEstimator):
    """Hash the columns of a table of raw values, and their crosses, into a sparse matrix.

    Each column of the table is a *field*; each value becomes one feature,
    at one of ``2**hash_bits`` columns of the output:

    - a category (a string, any value of a column of an integer type, or of
      a column named in ``categorical``) is the feature ``column=value`` with
      the value 1;
    - a number (of a column of a float or boolean type, of a column named in
      ``numeric``, or a number among other values) is the feature ``column``
      with the number as its value (a zero adds no feature);
    - a missing value (None, NaN, pandas' NA, an Arrow null) adds nothing.

    A category's text is the same from every table type: integers exactly
    (beyond ``2**53`` too), decimals as their exact value in the shortest form
    (``2.0`` is ``2``), timestamps and durations as pandas prints them
    (``2020-01-01 10:00:00``, ``0 days 01:00:03``; a fraction of a second only
    when there is one), bytes as their UTF-8 text (see :ref:`hashing`). A
    cross, or a sum of the values that land in one column of a row, that
    overflows float64 is a ``ValueError`` naming the row and the columns.

    A feature's output column is its name's signed 32-bit MurmurHash3 ``h``
    (seed 0, UTF-8) at ``abs(h) mod 2**hash_bits``, as
    :class:`~sklearn.feature_extraction.FeatureHasher` with
    ``alternate_sign=False`` puts it: categories are 1, numbers keep their
    value, so that a weight reads as the feature's effect. Features that
    collide in a row are added up. A cross (``interactions``) is one feature
    per combination of the crossed columns' features in a row, with the
    product of their values, hashed from theirs as Vowpal Wabbit's ``-q`` does
    (see :ref:`hashing`).

    The transformer is stateless: ``fit`` learns nothing, and any batch of
    rows can be transformed on its own, in a ``partial_fit`` stream as well
    as in a :class:`~sklearn.pipeline.Pipeline`. Strings are hashed once per
    distinct value of each column of a batch. The command line (``skftrl
    train`` on CSV and Parquet data), :func:`skftrl.readers.iter_csv` and
    :func:`skftrl.readers.iter_parquet` hash their columns with this
    transformer, and read the same columns as numbers or as categories.

    Unlike scikit-learn's :class:`~sklearn.feature_extraction.FeatureHasher`,
    which hashes the feature names or ``(name, value)`` pairs of each sample,
    this transformer takes a table, names each feature after its column, and
    crosses columns.

    Read more in the :ref:`User Guide <hashing>`.

    Parameters
    ----------
    hash_bits : int, default=20
        The output has ``2**hash_bits`` columns, from 1 to 30 bits.

    categorical : list of str, default=None
        Columns whose every value is a category: numbers are hashed by value
        (``hour=13``; integral numbers are written as integers, so ``13.0`` is
        ``hour=13``) rather than kept as values. Columns of a categorical type
        (pandas ``category``, Arrow dictionary) and of an integer type are
        categories without being named here.

    interactions : list of tuple of str, default=None
        Crosses of columns, each a tuple of two or more column names, such as
        ``[("site_id", "app_id"), ("site_id", "hour", "device")]``. A row's
        cross is the combination of its features in these columns (none when
        one of them is missing): ``site_id=a^app_id=b`` with the value 1 for
        two categories, or the number times 1 for a numeric column crossed
        with a category.

    numeric : list of str, default=None
        Columns of an integer type read as numbers (amounts, counts) rather
        than as categories. A column of an integer type (pandas' ``int``,
        ``Int`` and ``uint`` dtypes, a numpy integer array or a list of ints
        in a mapping, Arrow's integers, polars' through Arrow) holds ids and
        codes by default, as whole numbers do in a CSV file read by
        :func:`~skftrl.readers.iter_csv` or by the command line: ``C1=1005``
        is the same feature from each. Columns of floats are numbers without
        being named here. A column is not both ``categorical`` and
        ``numeric``.

    Attributes
    ----------
    This transformer learns nothing and has no fitted attributes.

    See Also
    --------
    sklearn.feature_extraction.FeatureHasher : Hashes feature names given per sample.
    skftrl.readers.iter_csv : Streams a CSV file, hashed with this transformer.

    Examples
    --------
    >>> from skftrl.preprocessing import ColumnHasher
    >>> rows = [
    ...     {"site": "news.example", "device": "phone", "hour": 13},
    ...     {"site": "shop.example", "device": None, "hour": 0},
    ... ]
    >>> hasher = ColumnHasher(hash_bits=10, interactions=[("site", "device")])
    >>> X = hasher.transform(rows)
    >>> X.shape
    (2, 1024)
    >>> X.getnnz(axis=1)  # site, device, hour and the cross; then site only
    array([4, 1], dtype=int32)
    >>> hasher.hashed_names(rows[:1])  # doctest: +NORMALIZE_WHITESPACE
    {729: ['site=news.example^device=phone'], 748: ['site=news.example'],
     861: ['device=phone'], 917: ['hour']}
    """

    _parameter_constraints: dict = {
        "hash_bits": [Interval(Integral, 1, 30, closed="both")],
        "categorical": ["array-like", None],
        "numeric": ["array-like", None],
        "interactions": ["array-like", None],
    }

    def __init__(self, hash_bits=20, categorical=None, interactions=None, numeric=None):
        self.hash_bits = hash_bits
        self.categorical = categorical
        self.numeric = numeric
        self.interactions = interactions

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X=None, y=None):
        """Check the parameters; nothing is learned.

        Parameters
        ----------
        X : ignored
            Not used, present for API consistency.
        y : ignored
            Not used, present for API consistency.

        Returns
        -------
        self : ColumnHasher
            This transformer.
        """
        self._checked_interactions()
        self._checked_kinds()
        return self

    def transform(self, X):
        """Hash the rows of a table.

        Parameters
        ----------
        X : table of shape (n_samples, n_columns)
            A pandas DataFrame, a pyarrow Table or RecordBatch, a table with
            the Arrow PyCapsule interface (a polars DataFrame, for one), a
            mapping of column names to 1-D arrays, or a list of dicts (one a
            row; a key that a row lacks is a missing value there).

        Returns
        -------
        X_hashed : scipy.sparse.csr_matrix of shape (n_samples, 2**hash_bits)
            The features of each row, float64.
        """
        self._validate_params()
        fields, n_rows, names = self._fields(X, named=False)
        X_hashed = fields_matrix(fields, n_rows, self.hash_bits)
        if not fields.only_categories and not np.isfinite(X_hashed.data).all():
            at = np.flatnonzero(~np.isfinite(X_hashed.data))[0]
            row = int(np.searchsorted(X_hashed.indptr, at, side="right") - 1)
            entries = [
                (name, field.values[row], columns_of(field.hashes[row], self.hash_bits))
                for name, field in zip(names, fields)
                if not np.isnan(field.values[row])
            ]
            raise RowError(row, overflowing_sum(entries))
        return X_hashed

    def hashed_names(self, X):
        """The names of the features of ``X``, by the output column they are hashed into.

        The hashed columns have no names of their own; this says which
        features of ``X`` land in each column (several where they collide),
        to read the weights a model learned, as Vowpal Wabbit's ``--audit``.

        Parameters
        ----------
        X : table of shape (n_samples, n_columns)
            As for :meth:`transform`.

        Returns
        -------
        names : dict of int to list of str
            Each output column that a feature of ``X`` lands in, with the
            sorted names of those features: ``column=value`` for a category,
            ``column`` for a number, ``a=x^b=y`` for a cross.
        """
        self._validate_params()
        fields, _, _ = self._fields(X, named=True)
        features = concatenate_features([field.features() for field in fields], named=True)
        return names_by_column(features, self.hash_bits)

    def get_feature_names_out(self, input_features=None):
        """Name the output columns ``columnhasher0`` to ``columnhasher{2**hash_bits - 1}``.

        Hashed columns have no meaningful names (see :meth:`hashed_names` for
        the features behind each); these let a pipeline name its outputs.

        Parameters
        ----------
        input_features : ignored
            Not used, present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str objects
            The output columns' names.
        """
        self._validate_params()
        return np.asarray([f"columnhasher{i}" for i in range(2**self.hash_bits)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags

    def _checked_interactions(self):
        interactions = [] if self.interactions is None else list(self.interactions)
        for fields in interactions:
            if (
                isinstance(fields, str)
                or not isinstance(fields, (tuple, list))
                or len(fields) < 2
                or not all(isinstance(field, str) for field in fields)
            ):
                raise ValueError(
                    "each of interactions must be a tuple of two or more column names, "
                    f"such as ('site_id', 'app_id'); got {fields!r}"
                )
        return [tuple(fields) for fields in interactions]

    def _checked_kinds(self):
        """``(categorical, numeric)``: the columns named by each, as lists."""
        categorical = [] if self.categorical is None else list(self.categorical)
        numeric = [] if self.numeric is None else list(self.numeric)
        both = sorted(set(categorical) & set(numeric))
        if both:
            raise ValueError(
                f"categorical and numeric both name {', '.join(map(repr, both))}: a column "
                "is read as categories or as numbers"
            )
        return categorical, numeric

    def _fields(self, X, named):
        interactions = self._checked_interactions()
        categorical, numeric = self._checked_kinds()
        columns, n_rows = table_columns(X, categorical, numeric)
        from_rows = isinstance(X, (list, tuple))  # a key absent from every row: missing
        if not from_rows:
            wanted = {
                "categorical": categorical,
                "numeric": numeric,
                "interactions": sum(interactions, ()),
            }
            for parameter, names in wanted.items():
                absent = sorted(set(names) - set(columns))
                if absent:
                    raise ValueError(
                        f"{parameter}: no column {', '.join(map(repr, absent))} in X "
                        f"(its columns are: {', '.join(columns)})"
                    )
        for name, column in columns.items():
            if column.numbers is not None and np.isinf(column.numbers).any():
                row = int(np.flatnonzero(np.isinf(column.numbers))[0])
                raise ValueError(
                    f"column {name!r} holds {column.numbers[row]} in row {row}: numbers "
                    "must be finite (or missing)"
                )
        # The fields' names: the columns', then the crosses'.
        names = [*columns, *map("^".join, interactions)]
        return table_fields(columns, n_rows, interactions, named), n_rows, names
