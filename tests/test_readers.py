"""The public streaming readers (skftrl.readers) and the command line's input.

References: pandas' reading of a CSV file hashed by ColumnHasher (the
command line must train the same model, state for state); Python's csv
module (pyarrow's parser must give the same chunks and errors); the CSV file
of the same table (Parquet); features written out by hand and hashed with
scikit-learn's MurmurHash3 (VW text); the plain file (every compression);
scikit-learn's load_svmlight_file (LIBSVM).
"""

import bz2
import contextlib
import csv
import gzip
import io
import itertools
import lzma
import sys
import threading

import joblib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.feature_extraction import FeatureHasher
from sklearn.utils import murmurhash3_32
from test_cli import write

import skftrl._cli._column_warnings
import skftrl._cli._input
import skftrl._readers._csv
import skftrl._readers._sources
from conftest import needs_numba, needs_readers_extra
from skftrl import FTRLClassifier, FTRLRegressor
from skftrl._cli import main
from skftrl._readers._csv import feature_columns, read_csv, scan_csv
from skftrl._readers._sources import DataError
from skftrl._readers._spec import CsvSpec
from skftrl.preprocessing import ColumnHasher
from skftrl.readers import iter_csv, iter_libsvm, iter_parquet, iter_vw

STATE = ["z_", "n_", "z_intercept_", "n_intercept_"]
PARSERS = ["python", pytest.param("pyarrow", marks=needs_readers_extra)]


def run_here(*args):
    """``skftrl *args`` through ``main()`` in this process: ``(code, output)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(arg) for arg in args], out=out)
    return code, out.getvalue() + err.getvalue()


def click_csv(n_rows, seed=0):
    """A CSV of raw click data: categories, numbers, missing values in every
    spelling the readers know, a column of numbers and words, the label."""
    rng = np.random.default_rng(seed)
    sites = np.array(["news", "shop", "blog", "mail", "NA", "", "video"])
    lines = ["click,site,app,hour,price,code,device\n"]
    for _ in range(n_rows):
        site = sites[rng.integers(len(sites))]
        app = f"app{rng.integers(40)}"
        hour = str(rng.integers(24))
        price = ["", "nan", "null", f"{rng.integers(-20, 20) / 4}"][rng.integers(4)]
        code = ["12", "007", "x9", "N/A"][rng.integers(4)]
        device = ["phone", "tablet", "desk top", "null"][rng.integers(4)]
        click = int(rng.random() < 0.3 + 0.4 * (site == "news"))
        lines.append(f"{click},{site},{app},{hour},{price},{code},{device}\n")
    return "".join(lines)


def force_parser(monkeypatch, parser):
    """The command line reading CSV with ``parser``."""
    original = skftrl._readers._csv.open_csv_input

    def opener(path, _="auto", delimiter=",", column_names=None):
        return original(path, parser, delimiter, column_names)

    monkeypatch.setattr(skftrl._readers._csv, "open_csv_input", opener)
    monkeypatch.setattr(skftrl._cli._input, "open_csv_input", opener)
    monkeypatch.setattr(skftrl._cli._column_warnings, "open_csv_input", opener)


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("classes", [None, "0,1"])  # a first pass, or none
def test_the_command_line_trains_what_the_transformer_trains_from_pandas(
    tmp_path, monkeypatch, parser, classes
):
    force_parser(monkeypatch, parser)
    path = tmp_path / "clicks.csv"
    path.write_text(click_csv(2600))
    options = ["--label-column", "click", "--hash-bits", 16, "--chunk-size", 500]
    if classes:
        options.append(f"--classes={classes}")
    code, output = run_here("train", path, "-f", tmp_path / "m.joblib", *options)
    assert code == 0, output
    trained = joblib.load(tmp_path / "m.joblib")

    model = FTRLClassifier()
    # The command line reads a column of whole numbers (the hours) as categories.
    hasher = ColumnHasher(hash_bits=16, categorical=["hour"])
    # The prices are quarters: exact in pandas' parser as in Python's float().
    for frame in pd.read_csv(path, chunksize=500):
        X = hasher.transform(frame.drop(columns="click"))
        model.partial_fit(X, frame["click"].to_numpy(), classes=[0, 1])
    for name in STATE:
        assert np.array_equal(getattr(trained, name), getattr(model, name)), name


@pytest.mark.parametrize("parser", PARSERS)
def test_a_repeated_header_line_is_an_error_naming_it(tmp_path, monkeypatch, parser):
    # Two files joined with their header lines: the second header, read as
    # data, would add its label as a class and its names as features. Rows
    # that hold some of the names (a city named "city") are data.
    force_parser(monkeypatch, parser)
    header = "click,site,app,hour,price,code,device\n"
    first = click_csv(700, seed=1)
    second = click_csv(300, seed=2)
    named = "1,site,app,3,0.5,x9,phone\n"  # "site" and "app" hold their names
    path = tmp_path / "joined.csv"
    path.write_text(first + named + second)
    line = 1 + 700 + 1 + 1  # the header, 700 rows, the named row, then the second header
    assert path.read_text().splitlines()[line - 1] + "\n" == header
    message = (
        f"{path}:{line}: this row repeats the header line (files joined with their header "
        "lines?): remove it"
    )
    for command in (
        ["train", path, "-f", tmp_path / "m.joblib", "--label-column", "click"],
        ["train", path, "-f", tmp_path / "m.joblib", "--label-column", "click", "--classes=0,1"],
    ):
        code, output = run_here(*command, "--chunk-size", 500)
        assert code == 1 and output.endswith(f"skftrl: error: {message}\n"), output
        assert not (tmp_path / "m.joblib").exists()
    with pytest.raises(DataError, match="repeats the header line") as raised:
        list(iter_csv(path, label_column="click", chunk_size=500, parser=parser))
    assert raised.value.line == line
    # Without the second header, every row reads.
    path.write_text(first + named + second.split("\n", 1)[1])
    chunks = list(iter_csv(path, label_column="click", chunk_size=500, parser=parser))
    assert sum(chunk[0].shape[0] for chunk in chunks) == 1000 + 1


def odd_csv():
    """CSV text that exercises the parsers: quotes (commas, doubled quotes,
    newlines and CRLF inside them), CRLF line ends, blank lines, missing values
    in several spellings, numbers Python reads in odd forms, non-ASCII text,
    and no newline at the end."""
    rows = [
        'y,w,city,"note, quoted",n,code\r\n',
        '1,1.5,Paris,"a, b",1_000,7\r\n',
        '0,2,"Saint ""Denis""",plain, 12 ,007\n',
        "\n",
        '1,0,"New\nYork","two\r\nlines",+.5,x\n',
        "0,1,  NA ,Null,1e3,N/A\n",
        "\r\n",
        "1,3,Zürich,€ sign,-0.0,\n",
        '0,0.25,"",NaN,,"7"\n',
    ]
    body = [
        f'{i % 2},{1 + i % 3},c{i % 7},"q{i % 5}, x",{i % 11 - 5},{i % 4}\n' for i in range(60)
    ]
    return "".join(rows + body) + '1,1,last,"end",4,9'


def read_chunks(path, parser, chunk_size, kinds=None, delimiter=",", column_names=None):
    kinds = kinds or {
        "city": "categorical",
        "note, quoted": "categorical",
        "n": "numeric",
        "code": "categorical",
    }
    spec = CsvSpec("y", kinds, True, 12, weight_column="w", delimiter=delimiter)
    return list(read_csv(path, spec, chunk_size, parser=parser, column_names=column_names))


def assert_same_chunks(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second):
        assert a.X.shape == b.X.shape and (a.X != b.X).nnz == 0
        assert np.array_equal(a.X.indices, b.X.indices) and np.array_equal(a.X.data, b.X.data)
        assert np.array_equal(a.y, b.y) and np.array_equal(a.lines, b.lines)
        assert np.array_equal(a.sample_weight, b.sample_weight)


@needs_readers_extra
@pytest.mark.parametrize("block_size", [None, 7, 64])
@pytest.mark.parametrize("chunk_size", [1, 5, 1000])
def test_pyarrow_and_the_csv_module_read_the_same_rows(
    tmp_path, monkeypatch, block_size, chunk_size
):
    if block_size:  # blocks end at every few lines: rows cross them
        monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", block_size)
    path = tmp_path / "odd.csv"
    path.write_bytes(odd_csv().encode())
    python = read_chunks(path, "python", chunk_size)
    assert sum(chunk.n_rows for chunk in python) == 67
    assert python[0].lines[:6].tolist() == [2, 3, 5, 8, 10, 11][: len(python[0].lines[:6])]
    assert_same_chunks(python, read_chunks(path, "pyarrow", chunk_size))


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("delimiter", ["\t", ";"])
@pytest.mark.parametrize("block_size", [None, 7])
def test_fields_separated_by_another_delimiter_read_as_the_same_rows(
    tmp_path, monkeypatch, parser, delimiter, block_size
):
    # The odd file's rows written by the csv module twice, with commas and
    # with another delimiter (fields holding it quoted): the same rows.
    if block_size:
        monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", block_size)
    rows = list(csv.reader(io.StringIO(odd_csv(), newline="")))
    rows[20][2] = f"c{delimiter}2"  # a city holding the delimiter
    paths = {}
    for name, separator in [("commas.csv", ","), ("other.txt", delimiter)]:
        text = io.StringIO()
        csv.writer(text, delimiter=separator, lineterminator="\n").writerows(rows)
        paths[separator] = tmp_path / name
        paths[separator].write_bytes(text.getvalue().encode())
    expected = read_chunks(paths[","], "python", 5)
    assert sum(chunk.n_rows for chunk in expected) == 67
    parsed = []
    if parser == "pyarrow":  # which blocks pyarrow parses (others: the csv module)
        from skftrl._readers import _csv_arrow

        arrow_columns = _csv_arrow.ArrowCsvInput.arrow_columns

        def spy(self, block, quoted, numeric):
            columns = arrow_columns(self, block, quoted, numeric)
            parsed.append(columns is not None)
            return columns

        monkeypatch.setattr(_csv_arrow.ArrowCsvInput, "arrow_columns", spy)
    found = read_chunks(paths[delimiter], parser, 5, delimiter=delimiter)
    assert_same_chunks(found, expected)
    assert parser == "python" or sum(parsed) >= (1 if block_size is None else 20)


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("block_size", [None, 7])
def test_a_file_without_a_header_line_reads_as_its_rows_with_the_column_names_given(
    tmp_path, monkeypatch, parser, block_size
):
    # The odd file without its header line: the same rows, each a line earlier.
    if block_size:
        monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", block_size)
    header_line, rows = odd_csv().split("\r\n", 1)
    names = next(csv.reader([header_line]))
    assert names == ["y", "w", "city", "note, quoted", "n", "code"]
    with_header, without = tmp_path / "header.csv", tmp_path / "rows.csv"
    with_header.write_bytes(odd_csv().encode())
    without.write_bytes(rows.encode())
    expected = read_chunks(with_header, "python", 5)
    assert sum(chunk.n_rows for chunk in expected) == 67
    found = read_chunks(without, parser, 5, column_names=names)
    assert_same_chunks(found, [chunk._replace(lines=chunk.lines - 1) for chunk in expected])
    assert found[0].lines[0] == 1
    # A header line read as a row would be a row of the names: refused.
    with pytest.raises(DataError, match=r"header.csv:1: this line is the column names given"):
        read_chunks(with_header, parser, 5, column_names=names)
    spaced = tmp_path / "spaced.csv"  # a header line with spaces after its commas
    spaced.write_bytes(odd_csv().replace(",w,", ", w, ", 1).encode())
    with pytest.raises(DataError, match=r"spaced.csv:1: this line is the column names given"):
        read_chunks(spaced, parser, 5, column_names=names)
    with pytest.raises(DataError, match=r"rows.csv:1: 6 fields, but 7 column names were given"):
        read_chunks(without, parser, 5, column_names=names + ["extra"])
    with pytest.raises(DataError, match=r"no label column 'y' among the column names given"):
        read_chunks(without, parser, 5, column_names=["Y", *names[1:]])
    with pytest.raises(DataError, match=r"repeated column names given: \['w'\]"):
        read_chunks(without, parser, 5, column_names=["y", "w", "w", *names[3:]])


@needs_readers_extra
def test_pyarrow_reads_what_the_csv_module_reads_of_a_click_file(tmp_path, monkeypatch):
    """Blocks of a few hundred lines: after the first, pyarrow reads the
    numeric columns as numbers (missing markers among them)."""
    from skftrl._readers import _csv_arrow

    monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", 2**14)
    read_as_numbers = []
    arrow_columns = _csv_arrow.ArrowCsvInput.arrow_columns

    def spy(self, block, quoted, numeric):
        columns = arrow_columns(self, block, quoted, numeric)
        read_as_numbers.append(columns is not None and isinstance(columns[4], np.ndarray))
        return columns

    monkeypatch.setattr(_csv_arrow.ArrowCsvInput, "arrow_columns", spy)
    path = tmp_path / "clicks.csv"
    path.write_text(click_csv(3000, seed=1))
    kinds = {name: "categorical" for name in ["site", "app", "code", "device"]}
    kinds.update(hour="numeric", price="numeric")
    spec = CsvSpec("click", kinds, True, 14)
    assert_same_chunks(
        list(read_csv(path, spec, 700, parser="python")),
        list(read_csv(path, spec, 700, parser="pyarrow")),
    )
    assert sum(read_as_numbers) >= 4  # the price column (4th): as numbers


@needs_readers_extra
def test_pyarrow_values_are_missing_where_is_missing_says_so():
    """The reader looks at the text of short values and of values with a
    space (or a character beyond ASCII) at an end only: the others are never
    missing."""
    import pyarrow as pa

    from skftrl._readers._csv_arrow import missing_values
    from skftrl._readers._csv_values import MISSING, WHITESPACE, is_missing
    from skftrl._readers._tables import arrow_text

    cores = [*MISSING, "NA", "Null", "N/a", "nAn", "na n", "nul", "nulls", "k00001", "Zürich", ""]
    pads = ["", " ", "\t", "\u3000", "\xa0\xa0", "é"]
    values = [left + core + right for core in cores for left in pads for right in pads]
    values += [space * 3 for space in WHITESPACE] + ["a", "ab", "abc", "abcd", "abcde"]
    dictionary = pa.array(values, pa.string())
    found = missing_values(dictionary, arrow_text(dictionary))
    expected = [is_missing(value) for value in values]
    assert found.tolist() == expected
    assert 0 < sum(expected) < len(values)
    assert found[values.index("\u3000Null\xa0\xa0")]  # spaces beyond ASCII around it


@needs_readers_extra
@pytest.mark.parametrize(
    "values",
    [
        ["2e614931", "890882c1", "12345678"],  # hexadecimal ids, the first a number
        ["2e614931", "1e5", "inf", "-Infinity", "NaN", "nan(x1)", "+.5", "007"],
        ["2e614931", "1e5", "infx"],
        ["1", "2", "0x10"],
        ["1", "2", "1_000"],
        ["1", "NA", " null ", "", "-3.5e-2"],  # missing markers hold letters
        ["na", "NULL"],
        ["1", "é"],
    ],
)
def test_pyarrow_values_are_numbers_where_each_reads_as_one(values):
    """A column's values are numbers when pyarrow reads each one that is not
    missing as a number, cast on its own."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from skftrl._readers._csv_arrow import missing_values, numbers_of
    from skftrl._readers._tables import arrow_text

    def number(value):
        try:
            return pc.cast(pa.array([value]), pa.float64())[0].as_py()
        except pa.ArrowInvalid:
            return None

    dictionary = pa.array(values, pa.string())
    text = arrow_text(dictionary)
    missing = missing_values(dictionary, text)
    expected = [np.nan if gone else number(value) for value, gone in zip(values, missing)]
    found = numbers_of(dictionary, missing, text)
    if None in expected:
        assert found is None
    else:
        np.testing.assert_array_equal(found, expected)


def scan_lines(n_rows, late_word_at=None, bad_row_at=None):
    """CSV text for a first pass: a text column, a numeric one (a word at
    ``late_word_at``), an ignored one, labels 0/1, a row of too few fields at
    ``bad_row_at``."""
    lines = ["y,text,number,other\n"]
    for i in range(n_rows):
        number = "word" if i == late_word_at else str(i % 9 - 4)
        row = f"{i % 2},t{i % 13},{number},o{i}\n"
        lines.append(f"{i % 2},t{i % 13}\n" if i == bad_row_at else row)
    return "".join(lines)


@needs_readers_extra
@pytest.mark.parametrize(
    "late_word_at, bad_row_at", [(None, None), (700, None), (None, 800), (900, 950)]
)
def test_a_first_pass_that_skips_categorical_columns_finds_what_the_csv_module_finds(
    tmp_path, monkeypatch, late_word_at, bad_row_at
):
    """Blocks of a few lines: after the first, pyarrow leaves the text and
    ignored columns unread; the kinds, labels and errors are the csv module's."""
    monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", 256)
    path = tmp_path / "scan.csv"
    path.write_text(scan_lines(1000, late_word_at, bad_row_at))

    def scan(parser):
        def columns_of(header):
            return feature_columns(header, "y", None, ["other"], None)

        try:
            found = scan_csv(path, "y", 100, True, columns_of, parser=parser)
        except ValueError as error:
            return str(error)
        return found.n_rows, found.kinds, found.labels.tolist()

    expected = scan("python")
    if bad_row_at is not None:
        assert f"scan.csv:{bad_row_at + 2}: 2 fields" in expected
    else:
        kind = "categorical" if late_word_at else "numeric"
        assert expected == (1000, {"text": "categorical", "number": kind}, [0.0, 1.0])
    assert scan("pyarrow") == expected


BAD_CSV = [
    ("y,a,b\n1,x,2\n0,x\n", "3: 2 fields, but the header has 3"),
    ("y,a,b\n1,x,2\n0,x,2,3\n", "3: 4 fields, but the header has 3"),
    ("y,a,b\n1,x,2\n0,\xff,1\n".encode("latin-1"), "3: byte 0xff at column 3 is not UTF-8"),
    ("y,a,b\n1,x,2\n1,y,2\n0,z,word\n", "4: column 'b' holds numbers, but this value is 'word'"),
    ("y,a,b\n1,x,2\nNA,x,2\n", "3: missing label 'NA'"),
    ("y,a,b\n1,x,2\n1,x,inf\n", "3: column 'b' holds numbers, but this value is 'inf'"),
    # A chunk of rows read as numbers, then as text (a word among them).
    ("y,a,b\n1,x,2\n1,x,-3\n1,x,4\n0,z,word\n", "5: column 'b' holds numbers, .* 'word'"),
    ("y,a,b\n1,x,2\n1,x,3\n1,x,NA\n0,z,1e999\n", "5: column 'b' holds numbers, .* '1e999'"),
    ("y,a,b\n1,x,2\n   \n0,x,2\n", "3: 1 fields, but the header has 3"),
]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("text, message", BAD_CSV)
@pytest.mark.parametrize("block_size", [None, 8])  # 8: a line a block, numbers after the first
def test_bad_csv_rows_are_refused_naming_their_line_with_either_parser(
    tmp_path, monkeypatch, parser, text, message, block_size
):
    if block_size:
        monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", block_size)
    path = tmp_path / "bad.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    spec = CsvSpec("y", {"a": "categorical", "b": "numeric"}, True, 10)
    with pytest.raises(ValueError, match=f"/bad.csv:{message}"):
        for _ in read_csv(path, spec, 2, parser=parser):
            pass


def test_iter_csv_reads_kinds_and_labels_from_the_first_chunk(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("y,site,hour,code\nyes,a,1,7\nno,b,,8\nno,a,3,x\n")
    hasher = ColumnHasher(hash_bits=10, categorical=["hour"])
    (X, y, weights), *rest = iter_csv(path, label_column="y", hasher=hasher, chunk_size=5)
    assert rest == [] and weights is None
    assert y.tolist() == ["yes", "no", "no"]
    expected = FeatureHasher(2**10, alternate_sign=False).transform(
        [
            {"site=a": 1, "hour=1": 1, "code=7": 1},
            {"site=b": 1, "code=8": 1},
            {"site=a": 1, "hour=3": 1, "code=x": 1},
        ]
    )
    assert (X != expected).nnz == 0
    # "code" is numeric in the first chunk of 2 rows (not whole numbers): a
    # word later is an error.
    path.write_text("y,site,hour,code\nyes,a,1,7.5\nno,b,,8\nno,a,3,x\n")
    message = r"data.csv:4: .* \(ColumnHasher\(categorical=\['code'\]\) reads every value"
    with pytest.raises(ValueError, match=message):
        list(iter_csv(path, label_column="y", hasher=hasher, chunk_size=2))


def test_iter_csv_reads_a_tsv_file_with_tabs_and_a_named_delimiter(tmp_path):
    text = click_csv(50)
    expected = list(iter_csv(write(tmp_path / "c.csv", [text]), label_column="click"))
    tabs = text.replace(",", "\t")  # click_csv quotes no field
    semicolons = text.replace(",", ";")
    for path, delimiter in [
        (write(tmp_path / "c.tsv.gz", [tabs]), None),
        (write(tmp_path / "c.txt", [semicolons]), ";"),
    ]:
        chunks = list(iter_csv(path, label_column="click", delimiter=delimiter))
        assert len(chunks) == len(expected) == 1
        (X, y, _), (X0, y0, _) = chunks[0], expected[0]
        assert (X != X0).nnz == 0 and np.array_equal(y, y0)
    with pytest.raises(ValueError, match="the delimiter must be one character"):
        list(iter_csv(tmp_path / "c.csv", label_column="click", delimiter=";;"))


def test_iter_csv_reads_a_file_without_a_header_line_by_the_column_names_given(tmp_path):
    header_line, rows = click_csv(50).split("\n", 1)
    expected = list(iter_csv(write(tmp_path / "c.csv", [click_csv(50)]), label_column="click"))
    path = write(tmp_path / "rows.tsv", [rows.replace(",", "\t")])
    names = header_line.split(",")
    chunks = list(iter_csv(path, label_column="click", column_names=names))
    assert len(chunks) == len(expected) == 1
    (X, y, _), (X0, y0, _) = chunks[0], expected[0]
    assert (X != X0).nnz == 0 and np.array_equal(y, y0)
    with pytest.raises(ValueError, match="column_names must be strings"):
        list(iter_csv(path, label_column="click", column_names=list(range(len(names)))))
    with pytest.raises(ValueError, match="none given"):
        list(iter_csv(path, column_names=[]))


def test_iter_csv_reads_standard_input_and_file_objects(tmp_path, monkeypatch):
    text = click_csv(50).encode()
    path = tmp_path / "clicks.csv.gz"
    path.write_bytes(gzip.compress(text))
    expected = list(iter_csv(path, label_column="click", chunk_size=20))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    for source in ["-", io.BytesIO(text), open(path, "rb")]:
        chunks = list(iter_csv(source, label_column="click", chunk_size=20))
        assert len(chunks) == len(expected) == 3
        for (X, y, _), (X0, y0, _) in zip(chunks, expected):
            assert (X != X0).nnz == 0 and np.array_equal(y, y0)


@needs_readers_extra
def test_parquet_gives_what_csv_gives_of_the_same_table(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    n = 1000
    site = rng.choice(["news", "shop", "blog", None], n).tolist()
    table = pa.table(
        {
            "click": rng.integers(0, 2, n),
            "site": pa.array(site, pa.string()),
            "zip": pa.array(rng.choice(["02134", "75001", "12"], n), pa.string()),
            "hour": rng.integers(0, 24, n),
            "price": pa.array([None if i % 7 == 0 else i / 8 for i in range(n)], pa.float64()),
            "weight": rng.random(n),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=300)
    frame = table.to_pandas()
    frame.to_csv(tmp_path / "t.csv", index=False)
    hasher = ColumnHasher(hash_bits=14, categorical=["zip"], interactions=[("site", "hour")])
    options = dict(label_column="click", weight_column="weight", hasher=hasher, chunk_size=128)
    from_csv = list(iter_csv(tmp_path / "t.csv", **options))
    from_parquet = list(iter_parquet(tmp_path / "t.parquet", **options))
    assert [X.shape[0] for X, _, _ in from_parquet] == [128] * 7 + [104]
    assert len(from_csv) == len(from_parquet)
    for (X, y, w), (X0, y0, w0) in zip(from_parquet, from_csv):
        assert (X != X0).nnz == 0 and np.array_equal(y, y0) and np.array_equal(w, w0)


@needs_readers_extra
@pytest.mark.parametrize("chunk_size", [1, 50, 10_000])
def test_parquet_strings_hash_as_their_names_across_batches_and_row_groups(tmp_path, chunk_size):
    # Strings are read as dictionaries, a row group's shared by its batches
    # and hashed once: each row's features must still be its own values'.
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    n = 1000
    a = [f"g{i // 200}_{i % 37}" for i in range(n)]  # other values in each row group
    b = [None if r < 0.1 else f"w{int(r * 50)}" for r in rng.random(n)]
    table = pa.table({"y": rng.integers(0, 2, n), "a": a, "b": b})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=200)
    chunks = list(
        iter_parquet(
            tmp_path / "t.parquet",
            label_column="y",
            hasher=ColumnHasher(hash_bits=16),
            chunk_size=chunk_size,
        )
    )
    X = sp.vstack([X for X, _, _ in chunks], format="csr")
    pairs = [[(f"a={x}", 1.0)] + ([] if z is None else [(f"b={z}", 1.0)]) for x, z in zip(a, b)]
    expected = FeatureHasher(2**16, input_type="pair", alternate_sign=False).transform(pairs)
    assert (X != expected).nnz == 0


@needs_readers_extra
def test_parquet_errors_name_the_row_and_row_group(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"y": [1.0, 0.0, None, 1.0], "a": ["x", "y", "z", "w"]})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    with pytest.raises(ValueError, match=r"t.parquet: row 3 \(row group 1\): missing label"):
        list(iter_parquet(tmp_path / "t.parquet", label_column="y", chunk_size=1))
    with pytest.raises(ValueError, match=r"t.parquet: no column 'label' \(the columns are: y, a"):
        list(iter_parquet(tmp_path / "t.parquet", label_column="label"))
    (tmp_path / "not.parquet").write_text("a,b\n")
    with pytest.raises(ValueError, match="not.parquet: not a readable Parquet file"):
        list(iter_parquet(tmp_path / "not.parquet"))
    # A file of rows has no lines: the scan's error names the row it had read.
    table = pa.table({"y": np.arange(1005) / 8, "a": ["x"] * 1005})
    pq.write_table(table, tmp_path / "many.parquet", row_group_size=600)
    many = [tmp_path / "many.parquet", tmp_path / "m.joblib", "--label-column", "y"]
    code, output = run_here("train", *many)
    assert code == 1
    expected = "many.parquet: more than 1000 distinct labels by the end of row group 1 (row 1,005)"
    assert expected in output


VW_TEXT = (
    "1 0.5 'first|user alice |item book price:9.5\n"
    "-1 |user:2 bob eve:0.5 |item\n"
    "\n"
    "1 tagged| plain |item pen\n"
)


def vw_hash(name):
    """A feature name's hash, as Vowpal Wabbit's text is hashed."""
    return murmurhash3_32(name, seed=0, positive=False)


def cross(first, second):
    """The hash of the cross of two hashed features (VW's -q), by hand."""
    combined = ((first % 2**32) * 16777619 ^ (second % 2**32)) % 2**32
    return combined - 2**32 if combined >= 2**31 else combined


def vw_expected(interactions, hash_bits=10):
    """The rows of VW_TEXT, hashed by hand."""
    rows = [
        {"user=alice": 1.0, "item=book": 1.0, "item=price": 9.5},
        {"user=bob": 2.0, "user=eve": 1.0},
        {"plain": 1.0, "item=pen": 1.0},
    ]
    X = np.zeros((3, 2**hash_bits))
    for i, row in enumerate(rows):
        features = [(vw_hash(name), value) for name, value in row.items()]
        if interactions == ["ui"]:
            users = [(vw_hash(n), v) for n, v in row.items() if n.startswith("user=")]
            items = [(vw_hash(n), v) for n, v in row.items() if n.startswith("item=")]
            features += [(cross(a, b), u * v) for a, u in users for b, v in items]
        for hashed, value in features:
            X[i, abs(hashed) % 2**hash_bits] += value
    return X


@pytest.mark.parametrize("interactions", [None, ["ui"]])
def test_vw_text_gives_the_features_written_by_hand(interactions):
    chunks = list(iter_vw(io.BytesIO(VW_TEXT.encode()), hash_bits=10, interactions=interactions))
    assert len(chunks) == 1
    X, y, weights, tags = chunks[0]
    assert np.array_equal(X.toarray(), vw_expected(interactions))
    assert y.tolist() == [1, -1, 1]
    assert weights.tolist() == [0.5, 1, 1]
    assert tags.tolist() == ["first", "", "tagged"]


# Without a ":": every feature's value is 1 (the shorter loop reads it).
VW_PLAIN = (
    "1 'first|user alice |item book\n"
    "-1 |user bob eve |item\n"
    "\n"
    " \t\r\n"
    "1 tagged| plain |item pen pen\r\n"
    "0.5 2\t|user\tcarol  |  dave|\n"
)


def test_vw_text_without_values_gives_the_features_written_by_hand():
    chunks = list(iter_vw(io.BytesIO(VW_PLAIN.encode()), hash_bits=10, interactions=["ui"]))
    assert len(chunks) == 1
    X, y, weights, tags = chunks[0]
    rows = [
        (["user=alice"], ["item=book"], []),
        (["user=bob", "user=eve"], [], []),
        ([], ["item=pen", "item=pen"], ["plain"]),
        (["user=carol"], [], ["dave"]),
    ]
    expected = np.zeros((4, 2**10))
    for i, (users, items, others) in enumerate(rows):
        hashes = [vw_hash(name) for name in users + items + others]
        # -q ui: each user feature crossed with each item feature
        hashes += [cross(vw_hash(user), vw_hash(item)) for user in users for item in items]
        for hashed in hashes:
            expected[i, abs(hashed) % 2**10] += 1.0
    assert np.array_equal(X.toarray(), expected)
    assert y.tolist() == [1, -1, 1, 0.5]
    assert weights.tolist() == [1, 1, 1, 2]
    assert tags.tolist() == ["first", "", "tagged", ""]


def test_vw_text_without_values_is_read_as_each_token_is():
    from skftrl._readers._vw import full_rows, plain_rows

    for text in (VW_PLAIN, "1 |a ok\n|a b\n", "\n\n2 x|a\n"):
        assert plain_rows("t", 7, text) == full_rows("t", 7, text)
    for line in ("1 a b\n", "x |a b\n", "1 -2 |a b\n", "1 2 3 |a b\n"):
        errors = []
        for rows_of in (plain_rows, full_rows):
            with pytest.raises(ValueError) as error:
                rows_of("t", 7, "1 |a ok\n" + line)
            errors.append(str(error.value))
        assert errors[0] == errors[1] and errors[0].startswith("t:8: ")


@needs_numba
@needs_readers_extra
def test_the_readers_import_numba_in_the_calling_thread_before_reading_ahead(
    tmp_path, monkeypatch
):
    """The VW and Parquet readers read ahead in a thread that uses compiled
    code; numba is imported before it starts, in the caller's thread (two
    threads importing it at once can deadlock), not by the reader's thread."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skftrl._readers import _hashing, _parquet, _vw

    importers = []

    def recorded(module, cached, lookup):
        def looked_up():
            if getattr(module, cached) is False:  # this call imports
                importers.append(threading.current_thread())
            return lookup()

        return looked_up

    monkeypatch.setattr(_vw, "COMPILED_BYTES", 0)
    monkeypatch.setattr(_vw, "_compiled_reader", False)
    monkeypatch.setattr(
        _vw, "compiled_reader", recorded(_vw, "_compiled_reader", _vw.compiled_reader)
    )
    (tmp_path / "t.vw").write_text(VW_PLAIN * 50)
    assert sum(len(X.indptr) - 1 for X, _, _, _ in iter_vw(tmp_path / "t.vw")) == 200
    monkeypatch.setattr(_hashing, "_compiled_hashing", False)
    hashing = recorded(_hashing, "_compiled_hashing", _hashing.compiled_hashing)
    monkeypatch.setattr(_hashing, "compiled_hashing", hashing)
    monkeypatch.setattr(_parquet, "compiled_hashing", hashing)
    pq.write_table(pa.table({"y": [0.0, 1.0] * 50, "a": ["x", "y"] * 50}), tmp_path / "t.pq")
    assert sum(len(y) for _, y, _ in iter_parquet(tmp_path / "t.pq", label_column="y")) == 100
    assert importers == [threading.main_thread()] * 2


def random_vw(rng, n_lines, values=False):
    """Lines of VW text in every form the readers take: tags, importance
    weights, default and named namespaces, empty segments, spaces and tabs
    (and CRs) between tokens, other ASCII whitespace within them (as Vowpal
    Wabbit reads it), blank lines, CRLF ends; and with ``values``, features'
    values and namespaces' weights (zeros among them)."""
    spaces = [" ", "  ", "\t", "\r", " \t", "\t\r "]
    heads = ["1 ", "-1 ", "0 'tag", "1 2 ", "0.5 t", "1\t'", "-1 0 'u", "3 2\tv", "1 'a\x0bb"]
    words = ["a", "b", "ab", "abc", "abcd", "x=1", "~!", "a.b", "'q", "0", "Zz9", "12345"]
    words += ["a\x0bb", "\x0c", "x\x1cy\x1f"]
    namespaces = words[:6]  # and, with values, namespaces with a weight
    if values:
        numbers = ["1", "-0.5", "+2.", ".25", "1e3", "7E-2", "0", "-0", "123456789012345", "3.1"]
        words = words + [f"{word}:{number}" for word in words[:6] for number in numbers]
        namespaces = namespaces + [
            f"{name}:{number}" for name in ["", "n", "xy"] for number in numbers
        ]
    lines = []
    for _ in range(n_lines):
        if rng.random() < 0.1:
            lines.append(rng.choice(["", " ", "\t\r", "\r"]))
            continue
        segments = []
        for _ in range(rng.integers(0, 4)):
            tokens = list(rng.choice(words, size=rng.integers(0, 5)))
            opening = str(rng.choice(["", " ", "\t", "\r"])) if rng.random() < 0.5 else ""
            if rng.random() < 0.5:  # a namespace named
                opening = str(rng.choice(namespaces)) + opening
            gaps = [str(rng.choice(spaces)) for _ in tokens]
            segments.append(
                opening + "".join(g + t for g, t in zip(gaps, tokens)) + " " * (rng.random() < 0.3)
            )
        end = "\r" if rng.random() < 0.2 else ""
        lines.append(str(rng.choice(heads)) + "|" + "|".join(segments) + end)
    return "\n".join(lines) + "\n" * int(rng.integers(0, 3))


def crossed_hash_reference(first, second):
    """VW's hash of a cross, in plain Python (signed 32 bits)."""
    combined = ((first % 2**32) * 16777619 ^ (second % 2**32)) % 2**32
    return combined - 2**32 if combined >= 2**31 else combined


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)])
def test_vw_features_and_crosses_are_assembled_as_the_reference_adds_them(compiled):
    """A block's matrix: each row's features, then the crosses of each
    interaction (every tuple of features of its letters, in order), hashed
    into columns, the values of a column added up in that order (many
    collisions of three and more, float values: the order shows in the last
    bits); rows of 0 to 30 features, up to about a thousand crosses
    (sorted by rank and by numpy's sort); a letter no feature has."""
    from skftrl._readers import _hashing, _vw

    rng = np.random.default_rng(7)
    n_rows, hash_bits = 60, 6
    rows = np.repeat(np.arange(n_rows), rng.integers(0, 31, size=n_rows))
    hashes = rng.choice(rng.integers(-(2**31), 2**31, size=12), size=len(rows))
    values = rng.normal(size=len(rows)) / 3
    letters = rng.choice([ord(letter) for letter in "abc "], size=len(rows))
    interactions = ["ab", "aac", "cd", "  "]
    parser = _vw.VwParser("t", hash_bits, interactions)
    X = parser.hashed(
        _hashing.Features(rows, hashes, values),
        letters,
        n_rows,
        _vw.compiled_reader() if compiled else None,
    )
    expected_rows, most_entries = [], 0
    for row in range(n_rows):
        mine = np.flatnonzero(rows == row).tolist()
        entries = [(int(hashes[k]), float(values[k])) for k in mine]
        for interaction in interactions:
            of_letter = [[k for k in mine if letters[k] == ord(letter)] for letter in interaction]
            for ks in itertools.product(*of_letter):
                hash_, value = int(hashes[ks[0]]), float(values[ks[0]])
                for k in ks[1:]:
                    hash_ = crossed_hash_reference(hash_, int(hashes[k]))
                    value = value * float(values[k])
                entries.append((hash_, value))
        most_entries = max(most_entries, len(entries))
        by_column = {}
        for hash_, value in entries:
            column = abs(hash_) % 2**hash_bits
            by_column[column] = by_column[column] + value if column in by_column else value
        expected_rows.append(by_column)
    assert most_entries > 64
    indptr = np.cumsum([0] + [len(row) for row in expected_rows])
    indices = [column for row in expected_rows for column in sorted(row)]
    data = [row[column] for row in expected_rows for column in sorted(row)]
    assert X.shape == (n_rows, 2**hash_bits) and X.has_canonical_format
    assert np.array_equal(X.indptr, indptr) and np.array_equal(X.indices, indices)
    assert np.array_equal(X.data, data)  # bit for bit


@needs_numba
@pytest.mark.parametrize("interactions", [(), ("ab", "xz", "a ")])
def test_compiled_vw_reading_gives_what_python_gives(interactions, monkeypatch):
    from skftrl._readers import _vw

    rng = np.random.default_rng(len(interactions))
    texts = [VW_PLAIN, VW_TEXT] + [random_vw(rng, n) for n in (1, 2, 5, 40, 400, 2000)]
    texts += [random_vw(rng, n, values=True) for n in (1, 2, 5, 40, 400, 2000)]
    # Many distinct heads (a tag a row, some repeated, some a prefix of
    # another): each row keeps its own.
    tags = rng.integers(0, 3000, size=5000)
    texts.append("".join(f"{tag % 2} '{tag}|a x\n{tag % 3 - 1} {tag}0| y\n" for tag in tags))
    for text in texts:
        block = text.encode()
        parser = _vw.VwParser("t", 12, interactions, labels_required=True)
        monkeypatch.setattr(_vw, "COMPILED_BYTES", 0)
        assert parser.compiled_rows(_vw.compiled_reader(), 5, block) is not None
        compiled = parser.parse(5, block)
        monkeypatch.setattr(_vw, "COMPILED_BYTES", 2**62)
        python = _vw.VwParser("t", 12, interactions, labels_required=True).parse(5, block)
        assert (compiled.X != python.X).nnz == 0 and compiled.X.shape == python.X.shape
        assert np.array_equal(compiled.y, python.y) and np.array_equal(
            compiled.lines, python.lines
        )
        assert np.array_equal(compiled.sample_weight, python.sample_weight)
        assert compiled.tags.tolist() == python.tags.tolist()
    # Left to Python, which reads or explains them: text beyond ASCII, a line
    # without a bar, numbers in other forms (or not numbers), a feature
    # without a name.
    monkeypatch.setattr(_vw, "COMPILED_BYTES", 0)
    parser = _vw.VwParser("t", 12)
    for text in ["1 |a b:1_0\n", "1 |a b:1e-300\n", "1 |a:1_0 b\n", "1 |a b:12345678901234567\n"]:
        assert parser.compiled_rows(_vw.compiled_reader(), 1, text.encode()) is None
        X = parser.parse(1, text.encode()).X
        assert np.array_equal(X.data, [float(text.split(":")[1].split()[0])]) or X.nnz == 0
    for text, message in [
        ("1 |a b:\n", "the value of feature 'b' '' is not a finite number"),
        ("1 |a b:inf\n", "the value of feature 'b' 'inf' is not a finite number"),
        ("1 |a:1:2 b\n", "the weight of namespace 'a' '1:2' is not a finite number"),
        ("1 |a :3\n", "the feature ':3' has no name"),
    ]:
        assert parser.compiled_rows(_vw.compiled_reader(), 1, text.encode()) is None
        with pytest.raises(ValueError, match=f"^t:1: {message}"):
            parser.parse(1, text.encode())
    assert (
        parser.compiled_rows(_vw.compiled_reader(), 1, "1 |a caf\u00e9\u00a0b\n".encode()) is None
    )
    # One feature: a no-break space is part of its token.
    assert parser.parse(1, "1 |a caf\u00e9\u00a0b\n".encode()).X.nnz == 1
    for text in ["1 'caf\u00e9|a b\n", "1 |a b\n\u00a0\n", "1 |\u00e9a b\n"]:
        assert parser.compiled_rows(_vw.compiled_reader(), 1, text.encode()) is None
    assert parser.parse(1, "1 'caf\u00e9|a b\n".encode()).tags.tolist() == ["caf\u00e9"]
    assert parser.compiled_rows(_vw.compiled_reader(), 1, b"1 |a b\n1 a b\n") is None
    with pytest.raises(ValueError, match="^t:2: no '|' in the line"):
        parser.parse(1, b"1 |a b\n1 a b\n")
    with pytest.raises(ValueError, match="^t:3: the importance weight '-2' is negative"):
        parser.parse(2, b"1 |a b\n1 -2 |a b\n")


@pytest.mark.parametrize(
    "line, message",
    [
        ("1 a b\n", "2: no '|' in the line"),
        ("1:0.5 |a b\n", "2: the label '1:0.5' is not a number"),
        ("x |a b\n", "2: the label 'x' is not a finite number"),
        ("1 -2 |a b\n", "2: the importance weight '-2' is negative"),
        ("1 2 3 |a b\n", "2: '1 2 3' before the first '|'"),
        ("1 |a b:x\n", "2: the value of feature 'b' 'x' is not a finite number"),
        ("1 |a:inf b\n", "2: the weight of namespace 'a' 'inf' is not a finite number"),
        ("|a b\n", "2: no label, unlike the first row"),
    ],
)
def test_vw_lines_it_cannot_read_are_refused_naming_the_line(line, message):
    text = ("1 |a ok\n" + line).encode()
    with pytest.raises(ValueError, match=f"^<BytesIO>:{message}"):
        list(iter_vw(io.BytesIO(text)))


def test_the_command_line_trains_on_vw_text_what_iter_vw_gives(tmp_path):
    rng = np.random.default_rng(5)
    lines = []
    for i in range(900):
        label = 1 if rng.random() < 0.5 else -1
        weight = f" {1 + i % 3}" if i % 4 else ""
        user, item = f"u{rng.integers(30)}", f"i{rng.integers(60)}"
        lines.append(f"{label}{weight} 'r{i}|user {user} |item {item} price:{i % 9}\n")
    path = tmp_path / "train.vw.gz"
    path.write_bytes(gzip.compress("".join(lines).encode()))
    code, output = run_here("train", path, "-f", tmp_path / "m.joblib", "--chunk-size", 100)
    assert code == 0, output
    trained = joblib.load(tmp_path / "m.joblib")
    model = FTRLClassifier()
    for X, y, weights, _ in iter_vw(path, chunk_size=100):
        model.partial_fit(X, y, classes=[-1, 1], sample_weight=weights)
    for name in STATE:
        assert np.array_equal(getattr(trained, name), getattr(model, name)), name
    code, output = run_here("predict", "-i", tmp_path / "m.joblib", path)
    X, _, _, _ = next(iter_vw(path, chunk_size=900))
    predicted, tags = zip(*(line.split(" ") for line in output.splitlines()))
    assert np.array_equal(np.array(predicted, dtype=float), model.predict_proba(X)[:, 1])
    assert list(tags) == [f"r{i}" for i in range(900)]  # each line ends with its row's tag


def compressed(kind, data):
    if kind == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    return {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](data)


@pytest.mark.parametrize(
    "kind", ["gzip", "bz2", "xz", pytest.param("zstd", marks=needs_readers_extra)]
)
def test_every_compression_reads_as_the_plain_file(tmp_path, kind):
    vw = VW_TEXT.encode()
    csv_text = click_csv(40).encode()
    libsvm = b"1 1:2 3:1\n0 2:0.5\n1 3:4\n"
    (tmp_path / "plain.svm").write_bytes(libsvm)
    (tmp_path / "packed").write_bytes(compressed(kind, libsvm))
    for (X, y, _), (X0, y0, _) in zip(
        iter_libsvm(tmp_path / "packed", n_features=3),
        iter_libsvm(tmp_path / "plain.svm", n_features=3),
    ):
        assert (X != X0).nnz == 0 and np.array_equal(y, y0)
    X, *_ = next(iter_vw(io.BytesIO(compressed(kind, vw)), hash_bits=10))
    assert np.array_equal(X.toarray(), vw_expected(None))
    packed = list(iter_csv(io.BytesIO(compressed(kind, csv_text)), label_column="click"))
    plain = list(iter_csv(io.BytesIO(csv_text), label_column="click"))
    assert (packed[0][0] != plain[0][0]).nnz == 0


@needs_readers_extra
def test_the_command_line_trains_on_a_zstd_file(tmp_path):
    data = b"".join(f"{i % 2} {1 + i % 5}:1 {6 + i % 3}:0.5\n".encode() for i in range(200))
    (tmp_path / "d.svm.zst").write_bytes(compressed("zstd", data))
    (tmp_path / "d.svm").write_bytes(data)
    for name in ["d.svm.zst", "d.svm"]:
        code, output = run_here("train", tmp_path / name, "-f", tmp_path / f"{name}.joblib")
        assert code == 0, output
    zstd, plain = (joblib.load(tmp_path / f"{name}.joblib") for name in ["d.svm.zst", "d.svm"])
    for name in STATE:
        assert np.array_equal(getattr(zstd, name), getattr(plain, name))


def test_zstd_without_its_decompressor_says_what_to_install(tmp_path, monkeypatch):
    compressors = dict(skftrl._readers._sources.COMPRESSED)
    compressors[b"\x28\xb5\x2f\xfd"] = ("zstd", lambda: None)
    monkeypatch.setattr(skftrl._readers._sources, "COMPRESSED", compressors)
    (tmp_path / "d.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 20)
    with pytest.raises(ValueError, match=r"d.zst: zstd-compressed: .*pip install 'skftrl\["):
        list(iter_libsvm(tmp_path / "d.zst", n_features=3))


def test_iter_libsvm_gives_what_load_svmlight_file_gives(tmp_path):
    text = b"1 1:2 3:1\n# comment\n-1 qid:3 2:0.5\n1 1:4 5:1e-3\n-1\n"
    (tmp_path / "d.svm").write_bytes(text)
    X0, y0 = load_svmlight_file(io.BytesIO(text), n_features=6, zero_based=False)
    chunks = list(iter_libsvm(tmp_path / "d.svm", n_features=6, chunk_size=3))
    assert [X.shape for X, _, _ in chunks] == [(3, 6), (1, 6)]
    X = sp.vstack([X for X, _, _ in chunks])
    assert (X != X0).nnz == 0
    assert np.array_equal(np.concatenate([y for _, y, _ in chunks]), y0)
    hashed = next(iter_libsvm(io.BytesIO(text), hash_bits=2))[0]
    assert hashed.shape == (4, 4) and hashed[2, 1] == 4 + 1e-3  # 1 and 5 (mod 4) added up


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "give n_features"),
        ({"n_features": 3, "hash_bits": 2}, "give n_features"),
        ({"n_features": 2}, r"d.svm:1: feature index 3 is beyond the model's 2 features"),
        ({"n_features": 0}, "n_features"),
    ],
)
def test_iter_libsvm_refuses_what_it_cannot_read(tmp_path, options, message):
    (tmp_path / "d.svm").write_bytes(b"1 1:2 3:1\n")
    with pytest.raises(ValueError, match=message):
        list(iter_libsvm(tmp_path / "d.svm", **options))


def test_iter_libsvm_index_0_suggests_zero_based(tmp_path):
    (tmp_path / "d.svm").write_bytes(b"1 1:2\n0 0:1\n")
    with pytest.raises(ValueError, match=r"d.svm:2: .*\(zero_based=True reads indices from 0\)"):
        list(iter_libsvm(tmp_path / "d.svm", n_features=3))
    (X, _, _), *_ = iter_libsvm(tmp_path / "d.svm", n_features=3, zero_based=True)
    assert X[1, 0] == 1


def test_streaming_a_file_learns_as_partial_fit_on_the_whole(tmp_path):
    path = tmp_path / "clicks.csv"
    path.write_text(click_csv(500))
    model = FTRLRegressor()
    for X, y, _ in iter_csv(path, label_column="click", chunk_size=500):
        model.partial_fit(X, y)
    frame = pd.read_csv(path)
    X = ColumnHasher().transform(frame.drop(columns="click"))
    reference = FTRLRegressor().partial_fit(X, frame["click"].to_numpy(dtype=float))
    assert np.array_equal(model.z_, reference.z_)


def vw_click_file(path, rows, seed):
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(rows):
        user, item, ad = rng.integers(20), rng.integers(30), rng.integers(5)
        label = 1 if (user + item) % 3 == 0 else -1  # an interaction only crosses learn
        lines.append(f"{label} |user u{user} |item i{item} |ad a{ad} price:{ad + 1}\n")
    path.write_text("".join(lines))
    return path


def test_the_command_line_crosses_vw_namespaces_as_iter_vw_does(tmp_path):
    data = vw_click_file(tmp_path / "train.vw", 600, seed=3)
    more = vw_click_file(tmp_path / "more.vw", 200, seed=4)
    model_path = tmp_path / "m.joblib"
    crosses = ["-q", "ui", "--cubic", "uia", "--interactions", "ia"]
    code, output = run_here("train", data, model_path, "--chunk-size", 64, *crosses)
    assert code == 0, output
    code, output = run_here("train", more, tmp_path / "m2.joblib", "-i", model_path)
    assert code == 0, output  # continued with the model's crosses
    model, plain = FTRLClassifier(), FTRLClassifier()
    for X, y, weights, _ in iter_vw(data, chunk_size=64, interactions=["ui", "uia", "ia"]):
        model.partial_fit(X, y, classes=[-1, 1], sample_weight=weights)
    for X, y, weights, _ in iter_vw(data, chunk_size=64):
        plain.partial_fit(X, y, classes=[-1, 1], sample_weight=weights)
    trained = joblib.load(model_path)
    for name in STATE:
        assert np.array_equal(getattr(trained, name), getattr(model, name)), name
    assert not np.array_equal(trained.z_, plain.z_)
    for X, y, weights, _ in iter_vw(more, chunk_size=10_000, interactions=["ui", "uia", "ia"]):
        model.partial_fit(X, y, sample_weight=weights)
    continued = joblib.load(tmp_path / "m2.joblib")
    for name in STATE:
        assert np.array_equal(getattr(continued, name), getattr(model, name)), name
    code, output = run_here("predict", more, tmp_path / "m2.joblib")
    X, _, _, _ = next(iter_vw(more, chunk_size=10_000, interactions=["ui", "uia", "ia"]))
    assert np.array_equal(np.array(output.split(), dtype=float), model.predict_proba(X)[:, 1])


@pytest.mark.parametrize(
    "options, message",
    [
        (["-q", "u"], "'u' is not two namespace first letters"),
        (["--cubic", "ui"], "'ui' is not three namespace first letters"),
        (["--interactions", "i"], "'i' is not two or more namespace first letters"),
        (["-i", "MODEL", "-q", "ua"], "-q ua conflicts with --initial-model"),
        (["--format", "libsvm", "-q", "ui"], "--interactions cross the namespaces"),
    ],
)
def test_the_command_line_refuses_crosses_it_cannot_take(tmp_path, options, message):
    data = vw_click_file(tmp_path / "train.vw", 50, seed=5)
    model_path = tmp_path / "m.joblib"
    assert run_here("train", data, model_path, "-q", "ui")[0] == 0
    options = [str(model_path) if option == "MODEL" else option for option in options]
    before = model_path.read_bytes()
    out = tmp_path / "out.joblib"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main([str(arg) for arg in ["train", data, out, *options]], out=io.StringIO())
        except SystemExit as usage_error:  # argparse's own errors
            code = usage_error.code
    assert code == 2 and message in err.getvalue()
    assert not out.exists() and model_path.read_bytes() == before


VW_PATHS = ["python", pytest.param("compiled", marks=needs_numba)]


def vw_parsed(path_kind, text, interactions=(), monkeypatch=None):
    """The chunk of a block of VW text read by Python or by the compiled reader."""
    from skftrl._readers import _vw

    monkeypatch.setattr(_vw, "COMPILED_BYTES", 0 if path_kind == "compiled" else 2**62)
    parser = _vw.VwParser("t", 20, interactions, labels_required=True)
    if path_kind == "compiled":  # this block is the compiled reader's
        assert parser.compiled_rows(_vw.compiled_reader(), 1, text.encode()) is not None
    return parser.parse(1, text.encode())


# The compiled reader reads numbers of at most 15 digits and powers of ten
# up to 10**22 (larger ones it leaves to Python): a cross of nine namespaces
# is what overflows there.
NINE = "".join(f" |{letter} x:100000000000000e22" for letter in "abcdefghi")


@pytest.mark.parametrize(
    "path_kind, line, interactions, message",
    [
        (
            "python",
            "1 |a:1e200 x:1e200 y:2\n",
            (),
            r"the value of feature 'x' \(1e\+200\) times the weight of namespace 'a' "
            r"\(1e\+200\) overflows float64",
        ),
        (
            "python",
            "1 |a x:1e200 |b y:-1e200\n",
            ("ab",),
            r"the cross of 'a=x' \(1e\+200\) and 'b=y' \(-1e\+200\) overflows float64",
        ),
        (
            "python",
            "1 |a x:1e200 |b y:1e100 |c z:1e20\n",
            ("acb",),
            r"the cross of 'a=x' \(1e\+200\), 'c=z' \(1e\+20\) and 'b=y' \(1e\+100\) overflows",
        ),
        *[
            pytest.param(
                path_kind,
                "1" + NINE + "\n",
                ("abcdefghi",),
                r"the cross of 'a=x' \(1e\+36\), 'b=x' \(1e\+36\), .* and 'i=x' \(1e\+36\) "
                "overflows float64",
                marks=needs_numba if path_kind == "compiled" else (),
            )
            for path_kind in ("python", "compiled")
        ],
        (
            "python",
            "1 |a x:1e308 x:1.5e308\n",
            (),
            r"the sum of 'a=x' \(1e\+308\) and 'a=x' \(1\.5e\+308\), which land in one "
            "column, overflows float64",
        ),
    ],
)
def test_vw_values_whose_product_or_sum_overflows_are_refused_naming_the_line(
    path_kind, line, interactions, message, monkeypatch
):
    text = "1 |y ok:1e22 |z ok:-1e22\n" + line  # finite: kept
    with pytest.raises(ValueError, match=f"^t:2: {message}"):
        vw_parsed(path_kind, text, interactions, monkeypatch)
    chunk = vw_parsed(path_kind, text.splitlines()[0] + "\n", interactions, monkeypatch)
    assert sorted(chunk.X.data) == [-1e22, 1e22]


def test_the_command_line_refuses_vw_values_that_overflow_naming_the_line(tmp_path):
    path = write(tmp_path / "t.vw", "1 |a x:2\n-1 |a:1e200 x:1e200\n")
    code, output = run_here("train", path, "-f", tmp_path / "m.joblib")
    assert code != 0 and not (tmp_path / "m.joblib").exists()
    assert f"{path}:2: the value of feature 'x' (1e+200) times the weight of namespace" in output
    assert "overflows float64" in output and "Traceback" not in output


# Every character str.split() splits on that Vowpal Wabbit keeps in a token
# (it splits on spaces and tabs; a CR ends a CRLF line).
OTHER_SPACES = [
    chr(c) for c in range(0x3001) if len(f"a{chr(c)}b".split()) == 2 and chr(c) not in " \t\r\n"
]


@pytest.mark.parametrize("path_kind", VW_PATHS)
def test_vw_features_are_split_on_spaces_and_tabs_only(path_kind, monkeypatch):
    ascii_only = [space for space in OTHER_SPACES if space < "\x80"]
    spaces = ascii_only if path_kind == "compiled" else OTHER_SPACES
    lines = [f"1 |a x{space}y\tz  w:2 |b{space}c d\n" for space in spaces]
    chunk = vw_parsed(path_kind, "".join(lines), (), monkeypatch)
    expected = np.zeros((len(spaces), 2**20))
    for i, space in enumerate(spaces):
        features = [(f"a=x{space}y", 1.0), ("a=z", 1.0), ("a=w", 2.0), (f"b{space}c=d", 1.0)]
        for name, value in features:
            expected[i, abs(vw_hash(name)) % 2**20] += value
    assert np.array_equal(chunk.X.toarray(), expected)
    if path_kind == "python":
        text = "1 |a \u6771\u4eac\u3000\u99c5\n"  # one feature to Vowpal Wabbit
        ((X, _, _, _),) = iter_vw(io.BytesIO(text.encode()), hash_bits=20)
        assert X.indices.tolist() == [abs(vw_hash("a=\u6771\u4eac\u3000\u99c5")) % 2**20]
        # A tag and a head hold them too; a line of them is not blank.
        chunk = vw_parsed(path_kind, "1 'a\xa0b|a x\n2 a\u3000b|a x\n", (), monkeypatch)
        assert chunk.tags.tolist() == ["a\xa0b", "a\u3000b"]
        with pytest.raises(ValueError, match="^t:2: no '|' in the line"):
            vw_parsed(path_kind, "1 |a x\n\x0c\n", (), monkeypatch)


def test_the_command_line_reads_vw_features_split_on_spaces_and_tabs_only(tmp_path):
    path = write(tmp_path / "t.vw", "1 |a x\u3000y\n-1 |a x\xa0y z\n")
    code, output = run_here("train", path, "-f", tmp_path / "m.joblib", "-b", 18)
    assert code == 0, output
    model = FTRLClassifier()
    X = np.zeros((2, 2**18))
    for i, names in enumerate([["a=x\u3000y"], ["a=x\xa0y", "a=z"]]):
        for name in names:
            X[i, abs(vw_hash(name)) % 2**18] = 1.0
    model.partial_fit(sp.csr_matrix(X), [1, -1], classes=[-1, 1])
    trained = joblib.load(tmp_path / "m.joblib")
    for name in STATE:
        assert np.array_equal(getattr(trained, name), getattr(model, name)), name


@needs_readers_extra
def test_the_command_line_trains_on_parquet_ids_beyond_2_53_each_its_own_feature(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = [1234567890123456789, 1234567890123456790, 2**53 + 1, 2**53 + 2]
    pq.write_table(pa.table({"y": [0, 1, 0, 1], "id": ids}), tmp_path / "t.parquet")
    code, output = run_here(
        "train", tmp_path / "t.parquet", "--label-column", "y", "-f", tmp_path / "m.joblib"
    )
    assert code == 0, output
    X = np.zeros((4, 2**20))
    for i, n in enumerate(ids):  # as CSV text gives them: the exact decimal
        X[i, abs(murmurhash3_32(f"id={n}", seed=0, positive=False)) % 2**20] = 1.0
    model = FTRLClassifier().partial_fit(sp.csr_matrix(X), [0, 1, 0, 1], classes=[0, 1])
    trained = joblib.load(tmp_path / "m.joblib")
    for name in STATE:
        assert np.array_equal(getattr(trained, name), getattr(model, name)), name


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize(
    "file_format", ["csv", pytest.param("parquet", marks=needs_readers_extra)]
)
def test_the_command_line_and_a_python_stream_with_defaults_train_one_model(
    tmp_path, monkeypatch, parser, file_format
):
    # A click table's integer codes are categories on every path, so that the
    # same file with the defaults gives the same model.
    from skftrl.datasets import write_click_table

    force_parser(monkeypatch, parser)
    path = tmp_path / f"clicks.{file_format}"
    write_click_table(path, 3000, random_state=0)
    options = ["--label-column", "click", "--hash-bits", 18, "--passes", 1]
    code, output = run_here("train", path, "-f", tmp_path / "m.joblib", *options)
    assert code == 0, output
    trained = joblib.load(tmp_path / "m.joblib")
    model = FTRLClassifier()
    reader = iter_csv if file_format == "csv" else iter_parquet
    hasher = ColumnHasher(hash_bits=18)
    for X, y, _ in reader(path, label_column="click", hasher=hasher):
        model.partial_fit(X, y, classes=[0, 1])
    for name in STATE:
        assert np.array_equal(getattr(trained, name), getattr(model, name)), name
    # The reference: pandas' rows, each integer column a category "C1=1005".
    frame = pd.read_csv(path) if file_format == "csv" else pd.read_parquet(path)
    features = frame.drop(columns="click")
    integers = [name for name in features if features[name].dtype.kind == "i"]
    assert "C1" in integers and "hour" in integers
    reference = FeatureHasher(2**18, alternate_sign=False).transform(
        [
            {f"{name}={value}": 1 for name, value in row.items()}
            for row in features.to_dict("records")
        ]
    )
    ((X, _, _),) = reader(path, label_column="click", hasher=hasher, chunk_size=3000)
    assert (X != reference).nnz == 0


@pytest.mark.parametrize("parser", PARSERS)
def test_iter_csv_reads_whole_numbers_as_numbers_where_the_hasher_names_them(
    tmp_path, monkeypatch, parser
):
    force_parser(monkeypatch, parser)
    path = write(tmp_path / "t.csv", "y,count,code\n1,3,7\n0,2,8\n0,,x\n")
    hasher = ColumnHasher(hash_bits=10, numeric=["count"])
    ((X, y, _),) = iter_csv(path, label_column="y", hasher=hasher)
    expected = FeatureHasher(2**10, alternate_sign=False).transform(
        [{"count": 3, "code=7": 1}, {"count": 2, "code=8": 1}, {"code=x": 1}]
    )
    assert (X != expected).nnz == 0
    # A column named numeric holds numbers: a word is an error at its line.
    hasher = ColumnHasher(hash_bits=10, numeric=["code"])
    with pytest.raises(ValueError, match=r"t.csv:4: column 'code' holds numbers"):
        list(iter_csv(path, label_column="y", hasher=hasher))


@pytest.mark.parametrize("parser", PARSERS)
def test_the_python_readers_warn_of_numeric_values_too_large_as_the_command_line(
    tmp_path, monkeypatch, parser
):
    import warnings

    force_parser(monkeypatch, parser)
    path = write(tmp_path / "t.csv", "y,amount,code\n1,20000.5,14102100\n0,1.5,14102101\n")
    with pytest.warns(UserWarning, match=r"'amount' \(up to 20,000.5\)"):
        list(iter_csv(path, label_column="y"))
    code, output = run_here("train", path, "-f", tmp_path / "m.joblib", "--label-column", "y")
    assert code == 0 and "'amount' holds values up to 20,000.5" in output
    # The codes are categories: no warning about them, nor about small amounts.
    small = write(tmp_path / "s.csv", "y,amount,code\n1,2.5,14102100\n0,1.5,14102101\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(iter_csv(small, label_column="y"))
    hasher = ColumnHasher(numeric=["code"])
    with pytest.warns(UserWarning, match=r"'code' \(up to 14,102,101\)"):
        list(iter_csv(small, label_column="y", hasher=hasher))


@needs_readers_extra
def test_iter_parquet_warns_of_numeric_values_too_large(tmp_path):
    import warnings

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"y": [1, 0], "amount": [20000.5, 1.5], "code": [14102100, 14102101]})
    pq.write_table(table, tmp_path / "t.parquet")
    with pytest.warns(UserWarning, match=r"'amount' \(up to 20,000.5\)") as caught:
        list(iter_parquet(tmp_path / "t.parquet", label_column="y"))
    assert not any("'code'" in str(warning.message) for warning in caught)
    with pytest.warns(UserWarning, match=r"'code' \(up to 14,102,101\)"):
        hasher = ColumnHasher(numeric=["code"])
        list(iter_parquet(tmp_path / "t.parquet", label_column="y", hasher=hasher))
    pq.write_table(table.drop(["amount"]), tmp_path / "s.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(iter_parquet(tmp_path / "s.parquet", label_column="y"))
