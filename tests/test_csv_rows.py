"""CSV rows as the csv module reads them, through both parsers.

The csv module is the reference: the rows it reads from a file (and the line
each starts on) are the rows of ``iter_csv``, of pyarrow's parser and of
``parser="python"``, whatever the blocks the file is cut into. Quotes open a
quoted field only at the start of a field; a line ends at a newline, a
carriage return and a newline, or a carriage return alone.
"""

import contextlib
import csv
import io
from unittest import mock

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import skftrl._readers._sources as sources
from conftest import needs_readers_extra
from skftrl._cli import main
from skftrl._readers._csv import open_csv_input
from skftrl._readers._hashing import Factorized
from skftrl.preprocessing import ColumnHasher
from skftrl.readers import iter_csv

PARSERS = [pytest.param("pyarrow", marks=needs_readers_extra), "python"]

# A quote inside an unquoted field (5'10"), then a quoted field holding a line end.
STRAY_QUOTE = b'y,height,note\n1,5\'10",none\n0,6,"call back\n1,later,9"\n'


@pytest.fixture(autouse=True)
def field_size_limit():
    """The csv module's field size limit, as it was before the test."""
    limit = csv.field_size_limit()
    yield
    csv.field_size_limit(limit)


def reference_rows(data, delimiter=","):
    """``(line, row)`` of each row the csv module reads from CSV bytes (the
    header first; blank lines hold none), reading fields of any length."""
    text = data.decode()
    csv.field_size_limit(max(csv.field_size_limit(), len(text)))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows = []
    while True:
        line = reader.line_num + 1
        row = next(reader, None)
        if row is None:
            return rows
        if row:
            rows.append((line, row))


def parsed_rows(data, parser, chunk_size=2, delimiter=","):
    """``(line, row)`` of the header and of each row a parser reads from CSV bytes."""
    source = open_csv_input(io.BytesIO(data), parser, delimiter)
    with contextlib.closing(source):
        rows = []
        for chunk in source.row_chunks(chunk_size):
            columns = [
                column.values() if isinstance(column, Factorized) else column
                for column in chunk.columns
            ]
            rows += [(int(line), list(row)) for line, row in zip(chunk.lines, zip(*columns))]
        return [(None, source.header), *rows]


def assert_reads_as_csv_module(data, parser, delimiter=","):
    got = parsed_rows(data, parser, delimiter=delimiter)  # before the reference raises the limit
    expected = reference_rows(data, delimiter)
    assert got[0][1] == expected[0][1]
    assert got[1:] == expected[1:]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("block_size", [None, 7])
def test_a_quote_inside_an_unquoted_field_opens_no_quoted_field(parser, block_size):
    with mock.patch.object(sources, "BLOCK_SIZE", block_size or sources.BLOCK_SIZE):
        assert_reads_as_csv_module(STRAY_QUOTE, parser)
        # The quoted field holding a line end not the last one: a valid file.
        moved = b'y,note,height\n1,none,5\'10"\n0,"call back\n1,later",9\n'
        assert_reads_as_csv_module(moved, parser)
        labels = [y for _, y, _ in iter_csv(io.BytesIO(STRAY_QUOTE), label_column="y")]
        assert np.concatenate(labels).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("parser", PARSERS)
def test_many_rows_with_stray_quotes_across_blocks(parser):
    rows = [f"{i % 2},{i}'{i % 12}\",x\n" for i in range(2000)]
    rows[1500] = '0,6,"call back\n1,later,9"\n'
    data = ("y,height,note\n" + "".join(rows)).encode()
    with mock.patch.object(sources, "BLOCK_SIZE", 1000):
        assert_reads_as_csv_module(data, parser)


CARRIAGE_RETURNS = {
    "CR line ends": b"y,a\r1,x\r0,y\r1,z\r",
    "CR line ends, no last one": b"y,a\r1,x\r0,y\r1,z",
    "a header ending in CR": b"y,a\r1,x\n0,y\n1,z\n",
    "mixed": b'y,a\r\n1,x\r0,"y\ry"\n\r\n\r1,z\r\n',
}


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("data", CARRIAGE_RETURNS.values(), ids=CARRIAGE_RETURNS.keys())
@pytest.mark.parametrize("block_size", [None, 3])
def test_a_carriage_return_alone_ends_a_line(parser, data, block_size):
    with mock.patch.object(sources, "BLOCK_SIZE", block_size or sources.BLOCK_SIZE):
        assert_reads_as_csv_module(data, parser)
        chunks = iter_csv(io.BytesIO(data), label_column="y", parser=parser, chunk_size=2)
        assert np.concatenate([y for _, y, _ in chunks]).tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("parser", PARSERS)
def test_an_error_after_carriage_returns_names_the_csv_modules_line(parser):
    data = b"y,a\r" + b"".join(b"%d,%d\r" % (i % 2, i) for i in range(40)) + b"1,word\r"
    with mock.patch.object(sources, "BLOCK_SIZE", 16):
        with pytest.raises(ValueError, match="this value is 'word'") as error:
            # Whole numbers read as numbers where named so: a word is an error.
            hasher = ColumnHasher(numeric=["a"])
            chunks = iter_csv(
                io.BytesIO(data), label_column="y", parser=parser, chunk_size=3, hasher=hasher
            )
            list(chunks)
    assert error.value.line == 42


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("stray", [False, True], ids=["quotes counted", "a stray quote"])
@pytest.mark.parametrize("block_size", [None, 5])
def test_an_unclosed_quote_is_an_error_at_the_line_it_opens(parser, stray, block_size):
    # Doubled quotes and line ends inside the field that is never closed.
    data = b"y,a\n1,5'10\"\n" if stray else b'y,a\n1,"x"\n'
    data += b'0,"a ""b""\nc""\n""d\n1,e\n'
    with mock.patch.object(sources, "BLOCK_SIZE", block_size or sources.BLOCK_SIZE):
        with pytest.raises(ValueError, match="unterminated quote") as error:
            parsed_rows(data, parser)
    assert error.value.line == 3


@pytest.mark.parametrize("parser", PARSERS)
def test_a_byte_that_is_not_utf8_after_carriage_returns_is_an_error_at_its_line(parser):
    data = b"y,a\r1,x\r\n0,xy\r1,z\xff\r0,w\r"
    with pytest.raises(ValueError, match="byte 0xff at column 4") as error:
        parsed_rows(data, parser)
    assert error.value.line == 4


def train_rows(tmp_path, data):
    """The rows ``skftrl train`` learns from a CSV file holding ``data``."""
    path = tmp_path / "data.csv"
    path.write_bytes(data)
    model = tmp_path / "model"
    args = ["train", str(path), "--label-column", "y", "--model", str(model), "--quiet"]
    assert main(args, out=io.StringIO()) == 0
    return joblib.load(model).n_samples_seen_


@pytest.mark.parametrize(
    "data", [STRAY_QUOTE, *CARRIAGE_RETURNS.values()], ids=["stray quote", *CARRIAGE_RETURNS]
)
def test_train_learns_the_csv_modules_rows(tmp_path, data):
    assert train_rows(tmp_path, data) == len(reference_rows(data)) - 1


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("block_size", [None, 1000])
def test_fields_longer_than_the_csv_modules_limit_are_read(parser, block_size):
    long = "x" * 200_000
    data = (
        f'y,a,b\n1,{long},b\n0,a,"{long}\n{long}"\n1,"{long}",{long}\n' + "0,a,b\n" * 3
    ).encode()
    with mock.patch.object(sources, "BLOCK_SIZE", block_size or sources.BLOCK_SIZE):
        assert_reads_as_csv_module(data, parser)


@pytest.mark.parametrize("parser", PARSERS)
def test_a_row_the_csv_module_refuses_is_an_error_at_its_line(parser):
    # A NUL: read as text by the csv module since Python 3.11, refused before.
    data = b"y,a\n1,x\n0,x\x00y\n1,z\n"
    try:
        expected = reference_rows(data)
    except csv.Error:
        with pytest.raises(ValueError, match="NUL") as error:
            parsed_rows(data, parser)
        assert error.value.line == 3
    else:
        assert parsed_rows(data, parser)[1:] == expected[1:]


@given(
    texts=st.lists(st.text("ab\r\n", max_size=12), min_size=1, max_size=3),
)
def test_line_ends_are_the_csv_modules(texts):
    """The line ends of bytes (and their count, once counted for other bytes
    too) are where the csv module's text reading ends lines."""
    for text in texts:
        data = text.encode()
        lines = io.StringIO(text, newline="").readlines()
        ends = np.cumsum([len(line) for line in lines if line.endswith(("\r", "\n"))])
        assert sources.csv_line_ends(data).tolist() == ends.tolist()
        assert sources.csv_line_count(data) == len(ends)
        assert sum(sources.line_end_counts(data)) == len(ends)  # counted twice


# Hypothesis: random tables written with quotes (doubled inside quoted
# fields), stray quotes inside unquoted fields, delimiters and line ends
# inside quoted fields, and LF, CRLF or CR line ends, read in blocks of a few
# bytes.
DELIMITERS = [",", "\t", ";"]


@st.composite
def csv_files(draw):
    delimiter = draw(st.sampled_from(DELIMITERS))
    n_columns = draw(st.integers(1, 3))
    # Each value starts with a letter: none is missing or a number.
    values = st.builds(
        "".join, st.tuples(st.sampled_from("xyz"), st.text('ab "\r\n\u00e9,;\t', max_size=5))
    )
    header = ["y"] + [f"c{i}" for i in range(n_columns)]
    table = [header]
    for _ in range(draw(st.integers(0, 6))):
        table.append([draw(st.sampled_from("01"))] + [draw(values) for _ in range(n_columns)])

    def written(value):
        if any(c in value for c in f"{delimiter}\r\n") or draw(st.booleans()):
            return '"' + value.replace('"', '""') + '"'
        return value  # a quote inside is text

    lines = []
    for row in table:
        lines.append(delimiter.join(map(written, row)))
        lines.append(draw(st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"])))
    if draw(st.booleans()):
        lines.pop()  # no line end after the last row
    return "".join(lines).encode(), delimiter


@pytest.mark.parametrize("parser", PARSERS)
@given(file=csv_files(), block_size=st.integers(1, 40), chunk_size=st.integers(1, 4))
def test_random_tables_read_as_the_csv_module_reads_them(parser, file, block_size, chunk_size):
    data, delimiter = file
    expected = reference_rows(data, delimiter)
    header = expected[0][1]
    with mock.patch.object(sources, "BLOCK_SIZE", block_size):
        got = parsed_rows(data, parser, chunk_size, delimiter)
        hasher = ColumnHasher(hash_bits=10, categorical=header[1:])
        chunks = list(
            iter_csv(
                io.BytesIO(data),
                label_column="y",
                hasher=hasher,
                chunk_size=chunk_size,
                parser=parser,
                delimiter=delimiter,
            )
        )
    assert got[0][1] == header
    assert got[1:] == expected[1:]
    rows = [row for _, row in expected[1:]]
    if not rows:
        assert chunks == []
        return
    columns = {
        name: np.array([row[i] for row in rows], dtype=object) for i, name in enumerate(header)
    }
    assert np.concatenate([y for _, y, _ in chunks]).tolist() == [float(v) for v in columns["y"]]
    X = sp.vstack([X for X, _, _ in chunks])
    expected_X = hasher.fit().transform({name: columns[name] for name in header[1:]})
    assert (X != expected_X).nnz == 0


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("chunk_size", [1, 2, 10_000])
def test_a_cross_or_sum_that_overflows_is_an_error_at_its_line(tmp_path, parser, chunk_size):
    # Lines 2 to 4 are finite rows; line 5's cross (1e200 * 1e200) overflows
    # float64: the error names the line, not the row's place in its chunk.
    path = tmp_path / "big.csv"
    path.write_text('y,a,b,"c"\n1,1.5,2.5,x\n0,2,3,"a,b"\n1,4,5,y\n0,1e200,1e200,z\n')
    hasher = ColumnHasher(numeric=["a", "b"], interactions=[("a", "b")])
    with pytest.raises(ValueError, match=r"big\.csv:5: the cross of 'a' \(1e\+200\) and 'b'"):
        options = {"hasher": hasher, "chunk_size": chunk_size, "parser": parser}
        chunks = iter_csv(path, label_column="y", **options)
        for _ in chunks:
            pass
