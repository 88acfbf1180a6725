"""The small real datasets shipped with skftrl, and a generator of synthetic click tables.

See ``skftrl/_data/README.md`` for their origin and licences (CC BY 4.0).
"""

import csv
import gzip
import os
from importlib.resources import as_file, files
from numbers import Integral
from typing import Any, Optional, Union

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.utils import Bunch

from ._sklearn_compat import Interval, StrOptions, check_pandas_support, validate_params
from ._typing import FloatArray

__all__ = [
    "load_a9a",
    "load_bike_sharing",
    "load_dna",
    "make_click_table",
    "write_click_table",
]

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


# The synthetic click table has the columns of Avazu's public click log
# (without its "id", a row number). Each column's values are drawn with
# Zipf-like frequencies (the value of rank r comes about 1 / (r + 1) as often
# as the first), the heavy head and long tail of real ids and codes.
# Each entry: name, kind ("hour", "int" codes or "hex" ids of 8 hex digits),
# the number of values it can take, and the scale of the values' effects on
# the log-odds of a click.
_CLICK_COLUMNS = [
    ("hour", "hour", 240, 0.14),
    ("C1", "int", 7, 0.21),
    ("banner_pos", "int", 7, 0.21),
    ("site_id", "hex", 4_000, 0.56),
    ("site_domain", "hex", 6_000, 0.21),
    ("site_category", "hex", 26, 0.35),
    ("app_id", "hex", 8_000, 0.56),
    ("app_domain", "hex", 500, 0.21),
    ("app_category", "hex", 36, 0.35),
    ("device_id", "hex", 3_000_000, 0.21),
    ("device_ip", "hex", 10_000_000, 0.21),
    ("device_model", "hex", 8_000, 0.28),
    ("device_type", "int", 5, 0.21),
    ("device_conn_type", "int", 4, 0.21),
    ("C14", "int", 2_600, 0.42),
    ("C15", "int", 8, 0.21),
    ("C16", "int", 9, 0.21),
    ("C17", "int", 430, 0.35),
    ("C18", "int", 4, 0.21),
    ("C19", "int", 70, 0.21),
    ("C20", "int", 170, 0.21),
    ("C21", "int", 60, 0.28),
]
CLICK_COLUMNS = ["click"] + [name for name, *_ in _CLICK_COLUMNS]
CLICK_CROSS = ("banner_pos", "app_category")
# Rows are made in blocks of this many, each from a random stream of its own:
# a table of any size is made, and written, a block at a time.
_CLICK_BLOCK = 65_536
# Shifts the log-odds so that about 17% of the rows are clicks, as in Avazu's.
_CLICK_BASE = -2.05
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _mix(values, salt):
    """A 32-bit hash of non-negative integers: distinct inputs, scattered outputs."""
    x = (values.astype(np.uint64) + np.uint64(salt)) & np.uint64(0xFFFFFFFF)
    for _ in range(2):  # the 32-bit finalizer of MurmurHash3, a bijection
        x ^= x >> np.uint64(16)
        x = (x * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
        x ^= x >> np.uint64(13)
        x = (x * np.uint64(0xC2B2AE35)) & np.uint64(0xFFFFFFFF)
        x ^= x >> np.uint64(16)
    return x


def _click_values(kind, ranks, salt):
    """The values of ranks ``ranks`` of a column: distinct ranks, distinct values."""
    if kind == "hour":
        # Ten days from 2014-10-21, each hour's code YYMMDDHH, as Avazu's.
        return 14102100 + (ranks // 24) * 100 + ranks % 24
    if kind == "int":
        # Ranks below 10 are small codes (0 to 9); the others, distinct codes
        # from 10 to 131,081 (an odd multiplier is a bijection modulo 2**17).
        scattered = (ranks * 40503 + salt) % 2**17
        return np.where(ranks < 10, ranks, 10 + scattered).astype(np.int64)
    codes = _mix(ranks, salt)
    shifts = np.arange(28, -1, -4, dtype=np.uint64)
    digits = _HEX_DIGITS[((codes[:, None] >> shifts) & np.uint64(15)).astype(np.intp)]
    return digits.view("S8").ravel().astype(str)


def _click_rows(start, stop, n_samples, seeds):
    """Rows ``start`` (a multiple of the block's size) to ``stop`` of a table."""
    rng = np.random.default_rng(seeds.spawn(start // _CLICK_BLOCK + 1)[-1])
    n_rows = stop - start
    logit = np.full(n_rows, _CLICK_BASE)
    columns, ranks_of = {}, {}
    for number, (name, kind, size, scale) in enumerate(_CLICK_COLUMNS):
        cardinality = size
        if kind == "hour":  # in time order, the days one after the other
            ranks = (np.arange(start, stop) * cardinality) // n_samples
        else:
            ranks = np.expm1(rng.random(n_rows) * np.log1p(cardinality)).astype(np.int64)
        ranks = np.minimum(ranks, cardinality - 1)
        ranks_of[name] = ranks
        columns[name] = _click_values(kind, ranks, salt=number * 0x9E3779B9)
        # A value's effect: uniform of standard deviation ``scale``, a
        # function of the value alone, the same in every block.
        uniform = _mix(ranks, salt=number * 0x7F4A7C15 + 1) / 2.0**32
        logit += scale * np.sqrt(12.0) * (uniform - 0.5)
    # The planted cross: each pair of values of these two columns moves the
    # odds up or down, by an amount that neither column shows on its own.
    first, second = CLICK_CROSS
    pairs = _mix(ranks_of[first] * 4096 + ranks_of[second], salt=12345)
    logit += np.where(pairs % np.uint64(2) == 0, 0.7, -0.7)
    click = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return {"click": click, **columns}


def _click_blocks(n_samples, random_state):
    seeds = np.random.SeedSequence(random_state)
    for start in range(0, n_samples, _CLICK_BLOCK):
        yield _click_rows(start, min(start + _CLICK_BLOCK, n_samples), n_samples, seeds)


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
        "as_frame": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_click_table(
    n_samples: int = 100_000, *, random_state: Optional[int] = None, as_frame: bool = True
) -> Any:
    """Make a synthetic table of ad clicks, with the columns of Avazu's click log.

    Each row is an ad shown, with the 22 columns of the public Avazu log and
    a label ``click`` (1 if the ad was clicked, about 17% of the rows):

    - ``hour``: the hour shown, as a code ``YYMMDDHH`` over ten days from
      2014-10-21 (``14102100`` to ``14103023``), the rows in time order;
    - integer codes: ``C1`` (7 values), ``banner_pos`` (7),
      ``device_type`` (5), ``device_conn_type`` (4), and the anonymous
      ``C14`` (2,600 values), ``C15`` (8), ``C16`` (9), ``C17`` (430),
      ``C18`` (4), ``C19`` (70), ``C20`` (170) and ``C21`` (60);
    - ids of 8 hexadecimal digits: ``site_id`` (4,000 values),
      ``site_domain`` (6,000), ``site_category`` (26), ``app_id`` (8,000),
      ``app_domain`` (500), ``app_category`` (36), ``device_model``
      (8,000), ``device_id`` (3 million) and ``device_ip`` (the users:
      10 million).

    Each column's values come with Zipf-like frequencies: a few are
    frequent, most are rare, so a large table holds millions of distinct
    users. The counts above are the values a column can take; a table holds
    those it draws. Every value moves the odds of a click by an effect of
    its own, and the pair of ``banner_pos`` and ``app_category`` moves them
    further (a cross, see ``interactions`` in
    :class:`~skftrl.preprocessing.ColumnHasher`). The integer codes are
    categories, not amounts: hash them as categories.

    Parameters
    ----------
    n_samples : int, default=100_000
        The number of rows, at least 1.
    random_state : int, default=None
        The seed, a non-negative integer, for the same table on every call.
        None draws a new table each time.
    as_frame : bool, default=True
        If True, a pandas DataFrame (needs pandas); if False, a dict of
        numpy arrays, one per column, which
        :class:`~skftrl.preprocessing.ColumnHasher` also takes.

    Returns
    -------
    table : DataFrame or dict of ndarray
        ``click`` first, then the 22 columns in the order above. Integer
        columns are int64, ids are strings.

    See Also
    --------
    write_click_table : The same rows written to a CSV, Parquet or VW text file.

    Examples
    --------
    >>> from skftrl.datasets import make_click_table
    >>> clicks = make_click_table(1000, random_state=0)
    >>> clicks.shape
    (1000, 23)
    >>> list(clicks.columns[:6])
    ['click', 'hour', 'C1', 'banner_pos', 'site_id', 'site_domain']
    >>> int(clicks["hour"].min()), int(clicks["hour"].max())
    (14102100, 14103023)
    """
    blocks = list(_click_blocks(n_samples, random_state))
    columns = {name: np.concatenate([block[name] for block in blocks]) for name in blocks[0]}
    if not as_frame:
        return columns
    pd = check_pandas_support("make_click_table(as_frame=True)")
    return pd.DataFrame(columns)


@validate_params(
    {
        "path": [str, os.PathLike],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
        "file_format": [StrOptions({"csv", "parquet", "vw"}), None],
    },
    prefer_skip_nested_validation=True,
)
def write_click_table(
    path: Union[str, "os.PathLike[str]"],
    n_samples: int,
    *,
    random_state: Optional[int] = None,
    file_format: Optional[str] = None,
) -> None:
    """Write the rows of :func:`make_click_table` to a file, a block at a time.

    The rows are made and written in blocks, so that a table of many
    millions of rows takes little memory. A file of ``n_samples`` rows holds
    the rows ``make_click_table(n_samples, random_state=random_state)``
    returns.

    Parameters
    ----------
    path : str or path-like
        The file to write (replaced if it exists). A name ending in ``.gz``
        is compressed with gzip (CSV and VW text).
    n_samples : int
        The number of rows, at least 1.
    random_state : int, default=None
        The seed, as in :func:`make_click_table`.
    file_format : {"csv", "parquet", "vw"}, default=None
        ``"csv"``: a header line, then one line per row, ``click`` first.
        ``"parquet"``: a Parquet file of row groups of 65,536 rows, integer
        columns as int64 and ids as strings (needs pyarrow). ``"vw"``: Vowpal
        Wabbit's text, one line per row: the label (``1`` for a click, ``-1``
        otherwise), then each column as a namespace of its own holding its
        value, ``|hour 14102100 |C1 5 ...``. None chooses by the file's
        name: ``.parquet`` or ``.pq``, ``.vw``, else CSV.

    Examples
    --------
    >>> import os, tempfile
    >>> from skftrl.datasets import write_click_table
    >>> path = os.path.join(tempfile.mkdtemp(), "clicks.csv")
    >>> write_click_table(path, 1000, random_state=0)
    >>> with open(path) as file:
    ...     print(file.readline()[:40])
    click,hour,C1,banner_pos,site_id,site_do
    """
    name = os.fspath(path)
    if file_format is None:
        lower = name.lower().removesuffix(".gz")
        if lower.endswith((".parquet", ".pq")):
            file_format = "parquet"
        elif lower.endswith(".vw"):
            file_format = "vw"
        else:
            file_format = "csv"
    blocks = _click_blocks(n_samples, random_state)
    if file_format == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as error:
            raise ImportError(
                "write_click_table needs pyarrow to write Parquet: pip install 'skftrl[readers]'."
            ) from error
        writer = None
        try:
            for block in blocks:
                table = pa.table(block)
                if writer is None:
                    writer = pq.ParquetWriter(name, table.schema)
                writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()
        return
    opener = gzip.open if name.lower().endswith(".gz") else open
    with opener(name, "wt", newline="", encoding="utf-8") as file:
        if file_format == "csv":
            writer = csv.writer(file, lineterminator="\n")
            writer.writerow(CLICK_COLUMNS)
            for block in blocks:
                writer.writerows(zip(*(block[column].tolist() for column in CLICK_COLUMNS)))
            return
        for block in blocks:
            parts = [np.where(block["click"] == 1, "1", "-1").astype(object)]
            for column in CLICK_COLUMNS[1:]:
                parts.append(f" |{column} " + block[column].astype(str).astype(object))
            file.write("".join(line + "\n" for line in np.sum(parts, axis=0)))
