"""The streaming readers of the command line (skftrl/_io.py), in this process."""

import gzip
import io
import os
import stat

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from skftrl._io import (
    DataError,
    atomic_output,
    libsvm_line_problem,
    libsvm_row_chunks,
    read_csv,
    read_libsvm,
    scan_csv,
    scan_libsvm,
)

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


def test_scan_and_read_libsvm_one_based(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(b"1 1:1 3:2\n0 2:1\n1 7:1\n")
    scan = scan_libsvm(path, 2, collect_labels=True)
    assert (scan.n_rows, scan.n_features, scan.zero_based) == (3, 7, False)
    assert (scan.largest_index, scan.largest_index_line) == (7, 3)
    assert scan.labels.tolist() == [0.0, 1.0]
    X = np.vstack([chunk.X.toarray() for chunk in read_libsvm(path, 2, 8, False)])
    expected, _ = load_svmlight_file(str(path), n_features=8)
    assert np.array_equal(X, expected.toarray())
    with pytest.raises(DataError, match="beyond the model's 6 features") as error:
        list(read_libsvm(path, 2, 6, False))
    assert error.value.line == 3


def test_index_0_in_a_one_based_model_is_refused(tmp_path):
    path = tmp_path / "data.svm"
    path.write_bytes(b"1 1:1\n0 0:1 2:1\n")
    assert scan_libsvm(path, 10, collect_labels=False).zero_based
    with pytest.raises(DataError, match="feature index 0, but this model's indices start at 1"):
        list(read_libsvm(path, 10, 5, zero_based=False))


def test_csv_columns_are_numeric_only_if_every_present_value_is_a_number(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text(
        "a,b,c,y\n"
        "1.5,x,,yes\n"
        "NA,2,3,no\n"
        "\n"  # blank lines are skipped
        "0,,n/a,yes\n"
    )
    scan = scan_csv(path, "y", 18, chunk_size=2, classify=True)
    assert scan.layout["kinds"] == {"a": "numeric", "b": "categorical", "c": "numeric"}
    assert scan.labels.tolist() == ["no", "yes"] and not scan.layout["numeric_labels"]
    chunks = list(read_csv(path, scan.layout, 2))
    assert [chunk.lines.tolist() for chunk in chunks] == [[2, 3], [5]]
    # Row 2: a=1.5 and b=x; row 3: b=2 and c=3; row 5: a=0 adds nothing, b and c missing.
    assert [chunk.X.nnz for chunk in chunks] == [4, 0]
    assert sorted(chunks[0].X.data.tolist()) == [1.0, 1.0, 1.5, 3.0]


def test_csv_label_and_field_errors_name_the_line(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,y\n1,2\n2,\n")
    with pytest.raises(DataError, match="missing label ''") as error:
        scan_csv(path, "y", 4, chunk_size=10, classify=False)
    assert error.value.line == 3
    path.write_text("a,y\n1,2\n2,z\n")
    with pytest.raises(DataError, match="the label 'z' is not a finite number") as error:
        scan_csv(path, "y", 4, chunk_size=10, classify=False)
    assert error.value.line == 3
    path.write_text('a,y\n1,2\n"2,1\n')
    with pytest.raises(DataError) as error:
        list(scan_csv(path, "y", 4, chunk_size=10, classify=False))
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
