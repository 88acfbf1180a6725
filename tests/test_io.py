"""The streaming readers of the command line (skftrl/_readers/), in this process."""

import csv
import dataclasses
import gzip
import io
import os
import re
import stat
import threading

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from conftest import HAS_NUMBA, needs_readers_extra
from skftrl._cli._model_files import atomic_output
from skftrl._readers._cache import ChunkCache
from skftrl._readers._chunks import MAX_CLASSES, Chunk, concatenate, rechunk
from skftrl._readers._csv import feature_columns, read_csv, scan_csv
from skftrl._readers._libsvm import (
    libsvm_line_problem,
    libsvm_row_chunks,
    parse_plain_libsvm,
    parse_with_sklearn,
    quick_scan_libsvm,
    read_libsvm,
    scan_libsvm,
)
from skftrl._readers._libsvm_numpy import parse_plain_libsvm_arrays
from skftrl._readers._sources import DataError, read_ahead
from skftrl._readers._spec import CsvSpec, LibsvmSpec, spec_from_dict

LINES = [
    b"1 2:3\n",
    b"-1 qid:7 2:3 10:0.5\n",
    b"+1 # a comment\n",
    b"1 +3:1 4:1e5 5:-2.5\n",
    b"1 3_0:1\n",
    b"1 2:nan\n",  # parsed: finiteness is checked afterwards
    b"x 1:2\n",
    b"1:2 3:4\n",
    b"1 2\n",
    b"1 2:a\n",
    b"1 2:\n",
    b"1 3:1 2:1\n",
    b"1 2:1 2:1\n",
    b"1 -2:1\n",
    b"1 99999999999:1\n",
    b"1 2:1:1\n",
    b"1 qid 2:1\n",
    b"2:1 3:1\n",
    b"1,3 2:1\n",
    b"1,x 2:1\n",
]


def sklearn_accepts(line, labels_required):
    try:
        load_svmlight_file(io.BytesIO(line), zero_based=True, multilabel=not labels_required)
    except (ValueError, OverflowError):
        return False
    return True


@pytest.mark.parametrize("labels_required", [True, False])
@pytest.mark.parametrize("line", LINES)
def test_line_checker_accepts_what_load_svmlight_file_accepts(line, labels_required):
    # The checker explains the errors of scikit-learn's parser: it must agree.
    accepted = libsvm_line_problem(line, labels_required) is None
    assert accepted == sklearn_accepts(line, labels_required)


def test_chunks_hold_exactly_chunk_size_rows_with_their_line_numbers(tmp_path):
    lines = [f"{i % 2} {i % 5 + 1}:{i}\n".encode() for i in range(1, 24)]
    lines[3:3] = [b"\n", b"# comment\n"]
    lines[10:10] = [b"   \n"]
    path = tmp_path / "data.svm.gz"
    path.write_bytes(gzip.compress(b"".join(lines)))
    chunks = list(libsvm_row_chunks(path, 5))
    assert [chunk.X.shape[0] for chunk in chunks] == [5, 5, 5, 5, 3]
    numbers = np.concatenate([chunk.lines for chunk in chunks])
    expected = [n for n, line in enumerate(lines, start=1) if line.strip(b" \n#comment")]
    assert numbers.tolist() == expected
    values = np.concatenate([chunk.X.data for chunk in chunks])
    assert values.tolist() == list(range(1, 24))


@pytest.mark.parametrize("chunk_size", [1, 4, 7, 50])
def test_rechunk_gives_every_row_in_order_in_chunks_of_chunk_size(chunk_size):
    text = random_plain_libsvm(5, n_lines=42)
    whole = parse_plain_libsvm(text, labels_required=True, compiled=False)
    rows = Chunk(whole[0], whole[1], whole[2])
    bounds = [0, 0, 3, 13, 14, 15, 15, 40, rows.n_rows]  # pieces of 0 to 25 rows
    pieces = [rows.rows(start, stop) for start, stop in zip(bounds, bounds[1:])]
    chunks = list(rechunk(iter(pieces), chunk_size))
    assert [chunk.n_rows for chunk in chunks[:-1]] == [chunk_size] * (len(chunks) - 1)
    assert 0 < chunks[-1].n_rows <= chunk_size
    joined = concatenate(chunks)
    assert joined.X.shape[0] == rows.n_rows and (joined.X != rows.X).nnz == 0
    assert np.array_equal(joined.y, rows.y) and np.array_equal(joined.lines, rows.lines)


def test_read_ahead_gives_every_item_then_the_error_where_it_happened():
    def items():
        yield from range(5)
        raise DataError("data", 6, "bad")

    got = []
    with pytest.raises(DataError, match="data:6: bad"):
        got.extend(read_ahead(items(), depth=2))
    assert got == [0, 1, 2, 3, 4]


def test_read_ahead_stops_its_thread_and_closes_the_input_when_left_early():
    import threading

    closed = threading.Event()

    def endless():
        try:
            count = 0
            while True:
                yield count
                count += 1
        finally:
            closed.set()

    threads = set(threading.enumerate())
    reader = read_ahead(endless(), depth=2)
    assert [next(reader) for _ in range(3)] == [0, 1, 2]
    assert len(set(threading.enumerate()) - threads) == 1
    reader.close()  # as when training stops at an error
    assert closed.is_set()
    assert set(threading.enumerate()) - threads == set()


def test_read_ahead_holds_items_up_to_their_weight():
    """With ``weigh``, the items ready ahead of the consumer weigh at most
    ``depth`` in all, and one item at least is always ready."""
    import threading

    produced, consumed = [], []
    produced_changed = threading.Condition()

    def items():
        for weight in [3, 3, 3, 9, 1, 1, 1, 1]:
            with produced_changed:
                produced.append(weight)
                produced_changed.notify_all()
            yield weight

    def ahead():  # produced and not consumed, once the producer has waited a little
        with produced_changed:
            produced_changed.wait_for(lambda: False, timeout=0.2)
            return produced[len(consumed) :]

    reader = read_ahead(items(), depth=7, weigh=lambda weight: weight)
    consumed.append(next(reader))
    # 3 and 3 wait (6 <= 7); the third 3 would make 9: it is produced, not put.
    assert ahead()[:2] == [3, 3] and sum(ahead()[:-1]) <= 7
    consumed.append(next(reader))
    consumed.append(next(reader))
    consumed.append(next(reader))  # 9 alone: heavier than depth, ready all the same
    consumed.extend(reader)
    assert consumed == [3, 3, 3, 9, 1, 1, 1, 1]


def test_scan_and_read_libsvm_one_based(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(b"1 1:1 3:2\n0 2:1\n1 7:1\n")
    scan = scan_libsvm(path, 2, collect_labels=True)
    assert (scan.n_rows, scan.n_features, scan.zero_based) == (3, 7, False)
    assert (scan.largest_index, scan.largest_index_line) == (7, 3)
    assert scan.labels.tolist() == [0.0, 1.0]
    X = np.vstack([chunk.X.toarray() for chunk in read_libsvm(path, 2, LibsvmSpec(8, False))])
    expected, _ = load_svmlight_file(str(path), n_features=8)
    assert np.array_equal(X, expected.toarray())
    with pytest.raises(DataError, match="beyond the model's 6 features") as error:
        list(read_libsvm(path, 2, LibsvmSpec(6, False)))
    assert error.value.line == 3


def test_index_0_in_a_one_based_model_is_refused(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(b"1 1:1\n0 0:1 2:1\n")
    assert scan_libsvm(path, 10, collect_labels=False).zero_based
    with pytest.raises(DataError, match="feature index 0, but this model's indices start at 1"):
        list(read_libsvm(path, 10, LibsvmSpec(5, zero_based=False)))


def test_csv_columns_are_numeric_only_if_every_present_value_is_a_number(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text(
        "a,b,c,y\n"
        "1.5,x,,yes\n"
        "NA,2,3,no\n"
        "\n"  # blank lines are skipped
        "0,,n/a,yes\n"
    )
    scan = scan_csv(
        path, "y", 2, True, lambda header: feature_columns(header, "y", None, (), None)
    )
    assert scan.kinds == {"a": "numeric", "b": "categorical", "c": "numeric"}
    assert scan.labels.tolist() == ["no", "yes"] and not scan.numeric_labels
    chunks = list(read_csv(path, CsvSpec("y", scan.kinds, False, 18), 2))
    assert [chunk.lines.tolist() for chunk in chunks] == [[2, 3], [5]]
    # Row 2: a=1.5 and b=x; row 3: b=2 and c=3; row 5: a=0 adds nothing, b and c missing.
    assert [chunk.X.nnz for chunk in chunks] == [4, 0]
    assert sorted(chunks[0].X.data.tolist()) == [1.0, 1.0, 1.5, 3.0]


def ALL_COLUMNS(header):
    return feature_columns(header, "y", None, (), None)


def test_csv_label_and_field_errors_name_the_line(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,y\n1,2\n2,\n")
    with pytest.raises(DataError, match="missing label ''") as error:
        scan_csv(path, "y", 10, False, ALL_COLUMNS)
    assert error.value.line == 3
    path.write_text("a,y\n1,2\n2,z\n")
    with pytest.raises(DataError, match="the label 'z' is not a finite number") as error:
        scan_csv(path, "y", 10, False, ALL_COLUMNS)
    assert error.value.line == 3
    path.write_text('a,y\n1,2\n"2,1\n')
    with pytest.raises(DataError) as error:
        list(scan_csv(path, "y", 10, False, ALL_COLUMNS))
    assert error.value.line == 3


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_atomic_output_leaves_nothing_on_error_or_interruption(tmp_path, error):
    with pytest.raises(error):
        with atomic_output(tmp_path / "model") as file:
            file.write(b"half a model")
            raise error
    assert os.listdir(tmp_path) == []


def test_atomic_output_appears_whole_with_the_usual_permissions(tmp_path):
    with atomic_output(tmp_path / "model") as file:
        file.write(b"a model")
        assert os.listdir(tmp_path) != ["model"]  # not there until the end
    assert os.listdir(tmp_path) == ["model"]
    assert (tmp_path / "model").read_bytes() == b"a model"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "model").st_mode) == 0o666 & ~umask


# ------------------------------------------------- the vectorised parser
def random_plain_libsvm(seed, n_lines=400):
    """LIBSVM text in every plain form: signs, "5.", ".5", -0, tabs, CRLF, blank lines."""
    rng = np.random.RandomState(seed)
    values = ["1", "-0", "+3.", "-.5", "007.250", "123456789012345", "0.00000000000001"]
    lines = []
    for _ in range(n_lines):
        indices = np.unique(rng.randint(10**6, size=rng.randint(0, 6)))
        parts = [rng.choice(["-1", "1", "+1", "0", "2.5", "-0", "3."])]
        for index in indices:
            if rng.rand() < 0.5:
                value = f"{rng.randn() * 10.0 ** rng.randint(-3, 6):.{rng.randint(0, 9)}f}"
            else:
                value = rng.choice(values)
            parts.append(f"{index}:{value}")
        separator = rng.choice([" ", "\t", "  "])
        lines.append(separator.join(parts) + rng.choice(["\n", "\r\n", " \n"]))
        if rng.rand() < 0.05:
            lines.append("\n")
    return "".join(lines).encode()


def bits(array):
    return np.asarray(array, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("seed", range(5))
def test_plain_parser_gives_what_load_svmlight_file_gives_bit_for_bit(seed):
    text = random_plain_libsvm(seed)
    parsed = parse_plain_libsvm(text, labels_required=True)
    assert parsed is not None
    X, y, line_offsets = parsed
    expected_X, expected_y = load_svmlight_file(io.BytesIO(text), zero_based=True)
    assert X.shape[0] == expected_X.shape[0]
    assert np.array_equal(bits(X.data), bits(expected_X.data))  # -0.0 included
    assert np.array_equal(X.indices, expected_X.indices)
    assert np.array_equal(X.indptr, expected_X.indptr)
    assert np.array_equal(bits(y), bits(expected_y))
    lines = text.split(b"\n")
    assert [n for n, line in enumerate(lines) if line.strip()] == line_offsets.tolist()


@pytest.mark.parametrize(
    "text",
    [
        b"1 2:1e5\n",  # exponent
        b"1 2:0.000000000000001\n",  # 16 digits
        b"1 qid:3 2:1\n",
        b"1 2:1 # comment\n",
        b"1 3:1 2:1\n",  # descending: load_svmlight_file explains it
        b"1 2:1:1\n",
        b"1 2\n",
        b"1:2 3:1\n",  # no label
        b"1 1234567890:1\n",  # 10 digits of index
        b"1 2:1.2.3\n",
    ],
)
def test_plain_parser_leaves_every_other_form_to_scikit_learn(text):
    assert parse_plain_libsvm(text, labels_required=True, compiled=False) is None
    assert parse_plain_libsvm(text, labels_required=True) is None


# Blocks at every edge of what the plain parsers read, and just beyond.
EDGE_BLOCKS = [
    b"",
    b"\n\n  \t\r\n",  # no token
    b"\xef\xbb\xbf1 2:1\n",  # a byte-order mark inside a block
    b"1 2:1 # comment\n",
    b"# only a comment\n1 2:1\n",
    b"1 qid:3 2:1\n",
    b"1 2:1e5\n",
    b"1 2:1E-5\n",
    b"1 2:1e23\n",  # beyond the exact powers of ten
    b"1 2:1e-23\n",
    b"1 2:1e400\n",  # inf
    b"1 2:1e\n",
    b"1 2:1e+\n",
    b"1 2:e5\n",
    b"1 2:1e5e\n",
    b"1 2:1e1000\n",
    b"1 2e1:1\n",
    b"1 qid:3 2:1 # comment \xe9\n",
    b"1 2:1 qid:3\n",  # qid after a feature
    b"qid:3 2:1\n",
    b"1 qid:x 2:1\n",
    b"1 qid:3:4 2:1\n",
    b"1 qid 2:1\n",
    b"1\nqid:3 2:1\n",  # a qid that starts a line
    b"1 2:1#c\n-1 3:1 #\n",
    b"1.2.3 2:1 # a bad label and a comment\n",
    b"1.2.3 2:1\n",
    b"1\n-1\n\n1 3:2\n",  # rows without features
    b"1 2:1\n\n\n-1 5:2",  # empty lines, no newline at the end
    b"1 2:1\r\n-1 3:-0\r\n",
    b"1 2:1\x0b\n",  # vertical tab: not whitespace here
    b"1 2:1\x00\n",
    b"1 2:.5 3:5. 4:+.5 5:-0.0 6:000123 7:123456789012345\n",
    b"1 2:1234567890123456\n",  # 16 digits
    b"1 2:0.000000000000001\n",
    b"1 123456789:1\n",  # 9 digits of index
    b"1 1234567890:1\n",  # 10
    b"1 2:-\n",
    b"1 2:+\n",
    b"1 2:.\n",
    b"1 2:--1\n",
    b"1 2:1-\n",
    b"1 2:1.2.3\n",
    b"1 +2:1\n",
    b"1 2.0:1\n",
    b"1 :1\n",
    b"1 2:\n",
    b"1 2:1:1\n",
    b"1 2\n",
    b"1 3:1 2:1\n",
    b"1 2:1 2:1\n",
    b"1 2:1\n-1 1:1 3:1\n",  # ascending in each row, not across rows
    b"1:2 3:1\n",  # no label
    b"x 2:1\n",
    b"1.5.1 2:1\n",
    b"- 2:1\n",
    b"1,3 2:1\n",
    b"nan 2:1\n",
    # The compiled parser's common tokens end only at whitespace, "#" or the
    # end, with at most 15 digits; anything else is read by its general path.
    b"1 5.:1\n",
    b"1 .5:1\n",
    b"1 0000000003:1\n",
    b"1 000000003:1\n",
    b"1 3::1\n",
    b"1 3:1x\n",
    b"1 3:1\x0c\n",
    b"1 3:1\t4:2\r\n",
    b"+1 2:1\n-.5 3:1\n1. 4:1\n-0 5:1\n",
    b"1x 2:1\n",
    b"1:1\n",
    b"1234567890123456 2:1\n",
    b"123456789012345 2:1\n",
    b"1 2:1 3:-0.000000000000001 4:999999999999999\n",
    b"1 2:1#\n1 2:1",
    b"1 2:1 1:1\n",
    b"1 2:1\n",
    b"1 999999999:1\n",
]


def assert_same_arrays(first, second):
    """Two parses are the same: both None, or every array equal bit for bit."""
    assert (first is None) == (second is None)
    if first is None:
        return
    assert len(first[:5]) == len(second[:5])
    for one, other in zip(first[:5], second[:5]):
        if one is None or other is None:
            assert one is None and other is None
            continue
        assert one.dtype == other.dtype and one.shape == other.shape
        assert np.array_equal(one.view(f"u{one.itemsize}"), other.view(f"u{other.itemsize}"))
    assert first[5] == second[5]


def random_libsvm_with_extras(seed, n_lines=300):
    """LIBSVM text with what the numpy parser leaves to scikit-learn: comments,
    qid, exponents."""
    rng = np.random.RandomState(seed)
    lines = random_plain_libsvm(seed, n_lines).decode().split("\n")
    for number, line in enumerate(lines):
        kind = rng.randint(6)
        if kind == 0:
            lines[number] = line + " # a comment: 1:2 \xe9"
        elif kind == 1 and line.strip():
            label, *rest = line.split(maxsplit=1)
            lines[number] = f"{label} qid:{rng.randint(-5, 10**6)} {' '.join(rest)}"
        elif kind == 2:
            exponent = f"{rng.choice(['e', 'E'])}{rng.choice(['', '+', '-'])}{rng.randint(0, 23)}"
            lines[number] = line.replace(":1 ", f":1{exponent} ", 1)
        elif kind == 3:
            lines[number] = "#" + line
    return "\n".join(lines).encode()


def sklearn_arrays(block, labels_required):
    """What the reader without the compiled parser gives for a block the numpy parser leaves."""
    chunk = parse_with_sklearn("data", 0, block, labels_required)
    X = chunk.X
    return X.data, X.indices, X.indptr, chunk.y, chunk.lines, X.shape[1]


def assert_same_csr(parsed, expected):
    values, indices, indptr, y, line_offsets, width = parsed
    assert np.array_equal(bits(values), bits(expected[0]))  # -0.0 included
    assert np.array_equal(indices, expected[1]) and np.array_equal(indptr, expected[2])
    assert (y is None and expected[3] is None) or np.array_equal(bits(y), bits(expected[3]))
    assert np.array_equal(line_offsets, expected[4]) and width == expected[5]


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'skftrl[fast]')")
@pytest.mark.parametrize("labels_required", [True, False])
@pytest.mark.parametrize(
    "block",
    EDGE_BLOCKS
    + [random_plain_libsvm(seed) for seed in range(3)]
    + [random_libsvm_with_extras(seed) for seed in range(3)],
)
def test_compiled_parser_gives_what_the_numpy_or_scikit_learn_parser_gives(
    monkeypatch, block, labels_required
):
    import skftrl._readers._libsvm
    from skftrl._readers._libsvm_numba import parse_plain_libsvm_arrays as compiled

    parsed = compiled(block, labels_required)
    expected = parse_plain_libsvm_arrays(block, labels_required)
    if expected is not None:  # the numpy parser's forms: the same arrays bit for bit
        assert_same_arrays(parsed, expected)
        monkeypatch.setattr(skftrl._readers._libsvm, "COMPILED_PARSER_BYTES", 0)
        X, _, _ = parse_plain_libsvm(block, labels_required)
        X_numpy, _, _ = parse_plain_libsvm(block, labels_required, compiled=False)
        assert X.shape == X_numpy.shape and (X != X_numpy).nnz == 0
        assert X.indices.dtype == X_numpy.indices.dtype
    elif parsed is not None:  # what it reads beyond them: what scikit-learn gives
        assert_same_csr(parsed, sklearn_arrays(block, labels_required))


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'skftrl[fast]')")
@pytest.mark.parametrize(
    "block",
    [
        b"1 2:1 # comment\n",
        b"# only a comment\n1 2:1\n",
        b"1 qid:3 2:1\n-1 qid:-4 5:2#c\n",
        b"1 2:1e5 3:-2.5E-3 4:7e+22 5:1e-22\n",
        b"1e1 2:1\n",
        random_libsvm_with_extras(0),
    ],
)
def test_compiled_parser_reads_comments_qid_and_exponents(block):
    from skftrl._readers._libsvm_numba import parse_plain_libsvm_arrays as compiled

    parsed = compiled(block, True)
    assert parsed is not None
    assert_same_csr(parsed, sklearn_arrays(block, True))


def quick_and_parsing_scans(path):
    """The compiled scan's findings and the parsing scan's, as tuples (labels as lists)."""
    quick = quick_scan_libsvm(path, collect_labels=True)
    full = scan_libsvm(path, 7, collect_labels=True)
    as_tuple = lambda scan: None if scan is None else (*scan[:5], scan.labels.tolist())  # noqa: E731
    return as_tuple(quick), as_tuple(full)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'skftrl[fast]')")
@pytest.mark.parametrize(
    "text",
    [
        b"1 1:1 3:2\n0 2:1\n1 7:1\n",
        b"1 0:1 3:2\n-1 2:1\n",  # an index 0: zero-based
        b"# a comment: 99:1\n1 2:1 # 50:3\n\n-1 4:1e5 9:-.5\n  +1\t3:1\r\n-0 1:2",
        b"1\n-1\n",  # rows without features
        b"2.5 1:1\n-1.25 1:1\n3 1:1\n",
        b"1 2:a 3:1\n",  # a value the scan skips: the parse refuses it
        b"1 5:1 123456789:1\n",  # 9 digits: the widest index the scan reads
    ]
    + [random_plain_libsvm(seed) for seed in range(3)]
    + [random_libsvm_with_extras(seed).replace(b"qid", b"# q") for seed in range(2)],
)
def test_the_compiled_scan_finds_what_the_parsing_scan_finds(tmp_path, text):
    path = tmp_path / "data.svm"
    path.write_bytes(text)
    quick, full = None, None
    try:
        quick, full = quick_and_parsing_scans(path)
    except DataError as error:  # the parse refuses a value the scan skips
        assert "is not a number" in str(error)
        quick = quick_scan_libsvm(path, collect_labels=True)
        assert quick is not None
        return
    assert quick == full


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'skftrl[fast]')")
@pytest.mark.parametrize(
    "text",
    [
        b"1 qid:3 2:1\n",
        b"1 2:1\nx 3:1\n",
        b"1e1 2:1\n",
        b"1 1234567890:1\n",
        b"1 2\n",
        b"1:2 3:1\n",
        b"1234567890123456 2:1\n",
        b"1 +3:1\n",
    ],
)
def test_the_compiled_scan_leaves_other_forms_to_the_parsing_scan(tmp_path, text):
    path = tmp_path / "data.svm"
    path.write_bytes(text)
    assert quick_scan_libsvm(path, collect_labels=True) is None


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'skftrl[fast]')")
def test_the_compiled_scan_stops_at_the_label_beyond_the_most_classes(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(b"".join(f"{label} 1:1\n".encode() for label in range(MAX_CLASSES + 5)))
    with pytest.raises(DataError, match="more than 1000 distinct labels by this line") as error:
        quick_scan_libsvm(path, collect_labels=True)
    assert error.value.line == MAX_CLASSES + 1
    assert quick_scan_libsvm(path, collect_labels=False).n_rows == MAX_CLASSES + 5
    path.write_bytes(b"# nothing\n\n")
    with pytest.raises(DataError, match="no data rows"):
        quick_scan_libsvm(path, collect_labels=True)


# ----------------------------------------------------------------- input
def compressed(kind, data):
    import bz2
    import lzma

    return {
        "plain": lambda d: d,
        "gzip": gzip.compress,
        # two gzip members, as `cat a.gz b.gz` makes
        "gzip members": lambda d: (
            gzip.compress(d[: len(d) // 2]) + gzip.compress(d[len(d) // 2 :])
        ),
        "bz2": bz2.compress,
        "xz": lzma.compress,
        "zstd": zstd_compress,
    }[kind](data)


def zstd_compress(data):
    import zstandard

    # With a checksum, which damage anywhere breaks.
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


COMPRESSIONS = ["gzip", "bz2", "xz", pytest.param("zstd", marks=needs_readers_extra)]


@pytest.mark.parametrize("kind", COMPRESSIONS)
@pytest.mark.parametrize("damage", ["first block", "later block", "cut short"])
def test_damaged_compressed_input_is_an_error_naming_the_file(tmp_path, monkeypatch, kind, damage):
    import skftrl._readers._sources as sources

    text = random_plain_libsvm(5, n_lines=2000)
    data = bytearray(compressed(kind, text))
    if damage == "cut short":
        del data[-len(data) // 3 :]
    elif damage == "first block":  # bytes overwritten in the middle of the stream
        data[len(data) // 2 : len(data) // 2 + 8] = b"\xff" * 8
    else:  # a second stream (as `cat` makes) whose header is damaged, read in later blocks
        second = bytearray(compressed(kind, text))
        second[6:12] = b"\xff" * 6
        data += second
    if damage != "first block":  # read in blocks of 100 bytes: the damage is met in a later one
        monkeypatch.setattr(sources, "BLOCK_SIZE", 100)
    path = tmp_path / "data.svm"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}(:\d+)?: .*damaged"):
        for _ in libsvm_row_chunks(path, 64):
            pass


@pytest.mark.parametrize("block_size", [5, 2**20])
@pytest.mark.parametrize("then", ["end", "member"])
def test_gzip_with_trailing_zero_bytes_reads_as_gzip_does(tmp_path, monkeypatch, block_size, then):
    # gzip -d and Python's gzip module ignore zero bytes after a member
    # (padding a tape or a block device adds them), and read a member after them.
    import skftrl._readers._sources as sources

    monkeypatch.setattr(sources, "BLOCK_SIZE", block_size)
    lines = random_plain_libsvm(9, n_lines=50).splitlines(keepends=True)
    data = gzip.compress(b"".join(lines[:20])) + b"\0" * 37
    if then == "member":
        data += gzip.compress(b"".join(lines[20:])) + b"\0" * 3
    path = tmp_path / "data.svm"
    path.write_bytes(data)
    expected, y = load_svmlight_file(io.BytesIO(gzip.decompress(data)), zero_based=True)
    chunks = list(libsvm_row_chunks(path, 16))
    assert np.array_equal(np.concatenate([chunk.y for chunk in chunks]), y)
    assert sum(chunk.X.shape[0] for chunk in chunks) == expected.shape[0]


@pytest.mark.parametrize("kind", ["plain", "gzip", "gzip members", "bz2", "xz"])
@pytest.mark.parametrize("bom", [False, True])
def test_every_compression_and_a_byte_order_mark_read_the_same_rows(tmp_path, kind, bom):
    text = random_plain_libsvm(7)
    path = tmp_path / "data"  # no suffix: the first bytes tell the format
    path.write_bytes(compressed(kind, (b"\xef\xbb\xbf" if bom else b"") + text))
    chunks = list(libsvm_row_chunks(path, 64))
    expected, y = load_svmlight_file(io.BytesIO(text), zero_based=True)
    assert np.array_equal(np.concatenate([chunk.X.indices for chunk in chunks]), expected.indices)
    assert np.array_equal(np.concatenate([chunk.X.data for chunk in chunks]), expected.data)
    assert np.array_equal(np.concatenate([chunk.y for chunk in chunks]), y)


def test_line_numbers_count_newlines_only_when_scikit_learn_parses(tmp_path, monkeypatch):
    import skftrl._readers._libsvm

    monkeypatch.setattr(skftrl._readers._libsvm, "_compiled_parser", None)  # as without numba
    path = tmp_path / "data.svm"
    # A lone carriage return is whitespace inside a line, as for load_svmlight_file.
    path.write_bytes(b"1 2:1\r# c\n-1 3:1 # c\n\n1 qid:2 4:1\n")
    (chunk,) = libsvm_row_chunks(path, 10)
    assert chunk.lines.tolist() == [1, 2, 4]
    assert chunk.y.tolist() == [1, -1, 1]


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of 50 bytes: lines and quoted fields cross many block boundaries."""
    import skftrl._readers._sources

    monkeypatch.setattr(skftrl._readers._sources, "BLOCK_SIZE", 50)


def test_rows_and_line_numbers_survive_block_boundaries(tmp_path, tiny_blocks):
    text = random_plain_libsvm(3, n_lines=200) + b"1 5:1 # a comment, parsed by scikit-learn\n"
    path = tmp_path / "data.svm"
    path.write_bytes(text)
    chunks = list(libsvm_row_chunks(path, 7))
    assert {chunk.X.shape[0] for chunk in chunks[:-1]} == {7}
    expected, y = load_svmlight_file(io.BytesIO(text), zero_based=True)
    assert np.array_equal(np.concatenate([chunk.y for chunk in chunks]), y)
    numbers = np.concatenate([chunk.lines for chunk in chunks])
    lines = text.split(b"\n")
    assert numbers.tolist() == [
        n + 1 for n, line in enumerate(lines) if line.split(b"#")[0].strip()
    ]


@pytest.mark.parametrize("block_size", [1, 2, 3, 7, 50, 2**20])
@pytest.mark.parametrize("end", [b"", b"\n", b"last line, no line end"])
def test_blocks_hold_whole_lines_numbered_from_their_first(tmp_path, monkeypatch, block_size, end):
    """line_blocks (unquoted): every byte once, in order; each block of whole
    lines (the last may lack its line end), numbered by its first line;
    lines longer than a read, blank lines, CRLF."""
    import skftrl._readers._sources as sources

    monkeypatch.setattr(sources, "BLOCK_SIZE", block_size)
    text = b"a b\n\n" + b"x" * 120 + b"\r\n1 2 3\n\n\nz\n" + end
    path = tmp_path / "t.txt"
    path.write_bytes(text)
    source = sources.ByteSource(path)
    blocks = list(sources.line_blocks(source))
    source.close()
    assert b"".join(block for _, block in blocks) == text
    assert all(block.endswith(b"\n") for _, block in blocks[:-1]) and all(b for _, b in blocks)
    firsts = [1 + sum(block.count(b"\n") for _, block in blocks[:i]) for i in range(len(blocks))]
    assert [line for line, _ in blocks] == firsts


def test_csv_quoted_newlines_and_crlf_across_blocks(tmp_path, tiny_blocks):
    rows = [f'{i},"city\n{i % 3}",{i % 2}\r\n' for i in range(40)]
    path = tmp_path / "data.csv"
    path.write_bytes(("a,b,y\r\n" + "".join(rows)).encode())
    layout = CsvSpec("y", {"a": "numeric", "b": "categorical"}, True, 10)
    chunks = list(read_csv(path, layout, 6))
    assert np.concatenate([chunk.y for chunk in chunks]).tolist() == [i % 2 for i in range(40)]
    # Each row spans two lines: line numbers are those of the row's first line.
    assert np.concatenate([chunk.lines for chunk in chunks]).tolist() == list(range(2, 82, 2))
    assert all(chunk.X.nnz == 2 * chunk.X.shape[0] - (chunk.lines[0] == 2) for chunk in chunks[:1])


@pytest.fixture
def short_csv_fields():
    """The csv module's longest field, 1,000 characters (its default is 131,072)."""
    limit = csv.field_size_limit(1000)
    yield
    csv.field_size_limit(limit)


def test_a_lone_quote_in_a_stream_is_an_error_before_the_stream_ends(tiny_blocks, monkeypatch):
    import skftrl._readers._sources

    # A quoted field is read up to 1,000 bytes long.
    monkeypatch.setattr(skftrl._readers._sources, "LONGEST_QUOTED_FIELD", 1000)
    # The stream stays open: reading to its end to find the closing quote would hang.
    read_end, write_end = os.pipe()
    done = threading.Event()

    def write():
        with os.fdopen(write_end, "wb") as stream:
            stream.write(b"a,b,y\n" + b"".join(b"%d,x,%d\n" % (i, i % 2) for i in range(10)))
            stream.write(b'10,"lone,1\n')
            stream.write(b"".join(b"%d,x,%d\n" % (i, i % 2) for i in range(11, 2000)))
            stream.flush()
            done.wait(60)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    layout = CsvSpec("y", {"a": "numeric", "b": "categorical"}, True, 10)
    try:
        with pytest.raises(DataError, match="not closed within 1,000 bytes") as error:
            list(read_csv(f"/dev/fd/{read_end}", layout, 100))
        assert error.value.line == 12
    finally:
        done.set()
        writer.join()
        os.close(read_end)


@pytest.mark.parametrize("long_rows", [False, True], ids=["short", "past-the-field-limit"])
def test_a_quote_inside_an_unquoted_field_is_text(
    tmp_path, tiny_blocks, short_csv_fields, long_rows
):
    # Counting quotes takes the lone quote of 5" for an opening one: the
    # rows are read as the csv module reads them all the same, also when the
    # rows after it run past the longest field (split where rows end).
    rows = [f'{i},"city, {i % 7}",{i % 2}\n' for i in range(300 if long_rows else 30)]
    rows[4] = '4,5" screen,0\n'
    rows[-3] = f'{len(rows) - 3},"a ""b"" c",1\n'
    text = "a,b,y\n" + "".join(rows)
    path = tmp_path / "data.csv"
    path.write_text(text)
    layout = CsvSpec("y", {"a": "numeric", "b": "categorical"}, True, 10)
    chunks = list(read_csv(path, layout, 7))
    expected = list(csv.reader(io.StringIO(text, newline="")))[1:]
    assert np.concatenate([chunk.y for chunk in chunks]).tolist() == [
        float(row[2]) for row in expected
    ]
    assert np.concatenate([chunk.lines for chunk in chunks]).tolist() == list(
        range(2, len(rows) + 2)
    )


def test_a_byte_that_is_not_utf8_is_reported_at_its_line(tmp_path):
    lines = [b"a,y\n"] + [f"{i},{i % 2}\n".encode() for i in range(30000)]
    lines[25000] = b"caf\xe9,1\n"  # latin-1, far beyond the first 8 KiB
    path = tmp_path / "data.csv"
    path.write_bytes(b"".join(lines))
    layout = CsvSpec("y", {"a": "categorical"}, True, 10)
    with pytest.raises(DataError, match=r"byte 0xe9 at column 4 is not UTF-8") as error:
        list(read_csv(path, layout, 1000))
    assert error.value.line == 25001


def test_the_cache_gives_back_every_chunk_exactly(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(random_plain_libsvm(4))
    chunks = list(libsvm_row_chunks(path, 50))
    cache = ChunkCache(tmp_path)
    for chunk in chunks:
        cache.write(chunk._replace(sample_weight=np.arange(chunk.X.shape[0]) / 3))
    for _ in range(2):  # read as often as there are passes
        cached_chunks = list(cache.chunks())
        assert len(cached_chunks) == len(chunks)
        for chunk, cached in zip(chunks, cached_chunks):
            assert (chunk.X != cached.X).nnz == 0 and chunk.X.shape == cached.X.shape
            assert np.array_equal(chunk.y, cached.y) and np.array_equal(chunk.lines, cached.lines)
            assert np.array_equal(cached.sample_weight, np.arange(chunk.X.shape[0]) / 3)
    cache.close()
    assert os.listdir(tmp_path) == ["data.svm"]


def test_hashed_libsvm_indices_are_taken_modulo_and_summed(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(b"1 3:1 19:2 35:4\n0 2147483646:1\n")
    (chunk,) = read_libsvm(path, 10, LibsvmSpec(16, True, hash_bits=4))
    assert chunk.X.toarray().tolist() == [
        [0, 0, 0, 7] + [0] * 12,  # 3, 19 and 35 are all 3 modulo 16
        [0] * 14 + [1, 0],  # 2**31 - 2 is 14 modulo 16
    ]


def read_all_or_error(path, labels_required):
    """Every chunk of a file, or the error it gives."""
    try:
        return list(libsvm_row_chunks(path, 3, labels_required)), None
    except DataError as error:
        return None, str(error)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'skftrl[fast]')")
@pytest.mark.parametrize("labels_required", [True, False])
@pytest.mark.parametrize("block", EDGE_BLOCKS)
def test_the_reader_gives_the_same_rows_and_errors_with_either_parser(
    tmp_path, monkeypatch, block, labels_required
):
    import skftrl._readers._libsvm

    path = tmp_path / "data.svm"
    path.write_bytes(b"1 1:1\n" + block)
    monkeypatch.setattr(skftrl._readers._libsvm, "COMPILED_PARSER_BYTES", 0)
    with_compiled = read_all_or_error(path, labels_required)
    monkeypatch.setattr(skftrl._readers._libsvm, "_compiled_parser", None)  # as without numba
    chunks, error = read_all_or_error(path, labels_required)
    assert with_compiled[1] == error
    if chunks is not None:
        assert len(chunks) == len(with_compiled[0])
        for chunk, other in zip(chunks, with_compiled[0]):
            assert chunk.X.shape == other.X.shape and (chunk.X != other.X).nnz == 0
            assert np.array_equal(bits(chunk.X.data), bits(other.X.data))
            assert np.array_equal(chunk.lines, other.lines)
            assert (chunk.y is None and other.y is None) or np.array_equal(chunk.y, other.y)


def test_input_specs_are_stored_as_dicts_and_read_back_from_every_version():
    for spec in [
        LibsvmSpec(123, False),
        LibsvmSpec(2**10, True, hash_bits=10),
        CsvSpec("y", {"a": "numeric", "b": "categorical"}, False, 18, "w", ["id"]),
    ]:
        saved = dataclasses.asdict(spec)
        assert type(saved) is dict and saved["format"] == spec.format
        assert spec_from_dict(saved) == spec
    # The dicts of skftrl 0.1.0 had no hash_bits (LIBSVM), weight column or
    # ignored columns (CSV).
    assert spec_from_dict({"format": "libsvm", "n_features": 9, "zero_based": True}) == (
        LibsvmSpec(9, True)
    )
    old_csv = {"format": "csv", "label_column": "y", "kinds": {}, "numeric_labels": True}
    assert spec_from_dict({**old_csv, "hash_bits": 4}) == CsvSpec("y", {}, True, 4)


@pytest.mark.parametrize("parser", [pytest.param("pyarrow", marks=needs_readers_extra), "python"])
def test_a_text_file_object_is_read_from_where_its_text_is(tmp_path, parser):
    # After a readline(), a text file's binary buffer has read ahead: rows
    # read from it would be lost. The rest of the text is read, as csv does.
    from skftrl.readers import iter_csv, iter_libsvm

    lines = ["# exported by a tool\n", "x,y\n"] + [f"{i % 9},{i % 2}\n" for i in range(3000)]
    path = tmp_path / "data.csv"
    path.write_text("".join(lines))
    with open(path, newline="") as text:
        text.readline()
        expected = [row for row in csv.reader(text)][1:]
    with open(path, newline="") as text:
        text.readline()
        chunks = list(iter_csv(text, label_column="y", parser=parser, chunk_size=1000))
    assert np.concatenate([y for _, y, _ in chunks]).tolist() == [float(r[1]) for r in expected]
    # A text stream without a binary buffer, and LIBSVM text.
    libsvm = "".join(f"{i % 2} {i % 5 + 1}:1\n" for i in range(100))
    stream = io.StringIO("1 1:1\n" + libsvm)
    stream.readline()
    (chunk,) = iter_libsvm(stream, n_features=6)
    X, y = load_svmlight_file(io.BytesIO(libsvm.encode()), n_features=6)
    assert np.array_equal(chunk[1], y) and (chunk[0] != X).nnz == 0


def test_a_text_file_object_is_read_in_its_encoding(tmp_path):
    from skftrl.readers import iter_csv

    path = tmp_path / "latin1.csv"
    path.write_bytes("city,y\ncafé,1\nrue,0\n".encode("latin-1"))
    (tmp_path / "utf8.csv").write_text("city,y\ncafé,1\nrue,0\n", encoding="utf-8")
    with open(path, encoding="latin-1", newline="") as text:
        (latin,) = iter_csv(text, label_column="y")
    (utf8,) = iter_csv(tmp_path / "utf8.csv", label_column="y")
    assert (latin[0] != utf8[0]).nnz == 0
    with open(path, encoding="utf-8", newline="") as text:  # not its encoding
        with pytest.raises(ValueError, match=r"latin1\.csv.*utf-8.*'rb'"):
            list(iter_csv(text, label_column="y"))


@needs_readers_extra
def test_iter_parquet_refuses_a_column_of_lists_by_name(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from skftrl.readers import iter_parquet

    table = pa.table({"y": [0, 1], "a": [1.5, 2.5], "tags": [["x"], ["y", "z"]]})
    pq.write_table(table, tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=r"t\.parquet: the column 'tags' \(list<.*>\) holds"):
        list(iter_parquet(tmp_path / "t.parquet", label_column="y"))
    (X, y, _), *rest = iter_parquet(tmp_path / "t.parquet", label_column="y", columns=["a"])
    assert rest == [] and y.tolist() == [0, 1] and X.shape[0] == 2


@pytest.mark.parametrize("parser", [pytest.param("pyarrow", marks=needs_readers_extra), "python"])
def test_iter_csv_refuses_a_delimiter_that_is_not_one_ascii_character(parser):
    from skftrl.readers import iter_csv

    for delimiter in ["é", "\0"]:
        text = f"y{delimiter}a\n1{delimiter}2\n".encode()
        with pytest.raises(ValueError, match="a line end, ASCII and not NUL"):
            list(iter_csv(io.BytesIO(text), label_column="y", delimiter=delimiter, parser=parser))


@pytest.mark.parametrize("reader", ["csv", pytest.param("parquet", marks=needs_readers_extra)])
def test_the_label_weight_and_feature_columns_do_not_overlap(tmp_path, reader):
    from skftrl import readers

    if reader == "csv":
        source = tmp_path / "t.csv"
        source.write_text("y,w,a\n1,1,2\n0,2,3\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        source = tmp_path / "t.parquet"
        pq.write_table(pa.table({"y": [1, 0], "w": [1.0, 2.0], "a": [2, 3]}), source)
    read = getattr(readers, f"iter_{reader}")
    with pytest.raises(ValueError, match="weight_column and label_column are both 'y'"):
        list(read(source, label_column="y", weight_column="y"))
    with pytest.raises(ValueError, match="columns holds the label column 'y'"):
        list(read(source, label_column="y", columns=["a", "y"]))
    with pytest.raises(ValueError, match="columns holds the weight column 'w'"):
        list(read(source, label_column="y", weight_column="w", columns=["w"]))
    ((X, y, w),) = read(source, label_column="y", weight_column="w", columns=["a"])
    assert y.tolist() == [1, 0] and w.tolist() == [1, 2] and X.shape[0] == 2
