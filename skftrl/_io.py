"""Streaming readers, the chunk cache and model files of the ``skftrl`` command line.

An input is a path, or ``-`` for standard input; a pipe or a FIFO works as a
regular file does. It is opened once and read from start to end in byte
blocks of whole lines (:func:`line_blocks`): plain text, or gzip, bz2 or xz
compressed (recognised by their first bytes, not by the file name), with a
UTF-8 byte-order mark skipped. Nothing is read twice, so nothing is lost on a
stream that cannot be rewound.

The readers turn the blocks into chunks of exactly ``chunk_size`` rows (the
last may be shorter): a CSR matrix, the labels, the sample weights and the
line number of each row, so that every problem is reported as ``file:line``.
Only a few blocks are in memory at a time.

LIBSVM blocks are parsed by :func:`parse_plain_libsvm_arrays`, a vectorised
numpy parser of the common form (``label index:value ...`` with plain decimal
numbers), which gives exactly what scikit-learn's ``load_svmlight_file`` gives;
any other block (comments, ``qid``, exponents, long numbers, and every
malformed line) goes to ``load_svmlight_file`` itself, whose errors are then
explained line by line by :func:`libsvm_line_problem`. With numba installed,
large blocks go first to the same parser compiled (:mod:`._libsvm_numba`),
which also reads comments, ``qid`` and exponents with identical results; the
numpy parser stays the reference. Blocks are read and parsed one ahead in a
thread (:func:`read_ahead`).
"""

import bz2
import contextlib
import csv
import io
import itertools
import lzma
import os
import stat
import sys
import tempfile
import threading
import zlib
from queue import Full, Queue
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

# Bytes read from the input at a time: large enough that numpy's per-call
# cost vanishes, small enough that memory stays flat.
BLOCK_SIZE = 4 * 2**20

# Parsed blocks kept ready ahead of the one being used (see read_ahead):
# two keep the reading thread busy while memory stays bounded.
READ_AHEAD = 2

# The first bytes of each compressed format, and its decompressor.
COMPRESSED = {
    b"\x1f\x8b": ("gzip", lambda: zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)),
    b"BZh": ("bz2", bz2.BZ2Decompressor),
    b"\xfd7zXZ\x00": ("xz", lzma.LZMADecompressor),
}
DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError)
UTF8_BOM = b"\xef\xbb\xbf"

# A classification target with more distinct labels than this is most likely
# a regression target; the scan stops instead of collecting them all.
MAX_CLASSES = 1000

# Names of hashed CSV features kept for `skftrl inspect`: the first distinct
# values of each categorical column, so that memory stays bounded.
MAX_NAMES_PER_COLUMN = 1000

# CSV values that mean "missing" (compared after strip and lower-casing):
# a missing value adds no feature.
MISSING = frozenset({"", "na", "nan", "n/a", "null"})

# Feature indices of a LIBSVM file must fit the 32-bit integers of the parser.
MAX_INDEX = 2**31 - 1

# Identifies the dictionary that `skftrl train` saved before models were
# saved as estimators (skftrl 0.1.0); such files are still read.
LEGACY_MODEL_KIND = "skftrl model"


class DataError(Exception):
    """A problem with an input or model file, reported as ``path:line: message``."""

    def __init__(self, path, line, message):
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self):
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class Chunk(NamedTuple):
    """Consecutive rows of a file."""

    X: sp.csr_matrix
    y: np.ndarray  # None when labels are not read
    lines: np.ndarray  # the line number of each row, counted from 1
    sample_weight: np.ndarray = None  # CSV --weight-column, else None

    @property
    def n_rows(self):
        return self.X.shape[0]

    def rows(self, start, stop):
        """Rows ``start`` to ``stop`` (views of this chunk's arrays)."""
        X = self.X
        begin, end = X.indptr[start], X.indptr[stop]
        part = sp.csr_matrix(
            (X.data[begin:end], X.indices[begin:end], X.indptr[start : stop + 1] - begin),
            shape=(stop - start, X.shape[1]),
        )
        return Chunk(
            part,
            None if self.y is None else self.y[start:stop],
            self.lines[start:stop],
            None if self.sample_weight is None else self.sample_weight[start:stop],
        )


def concatenate(chunks):
    """One chunk of the rows of ``chunks``, as wide as the widest."""
    if len(chunks) == 1:
        return chunks[0]
    width = max(chunk.X.shape[1] for chunk in chunks)
    X = sp.vstack(
        [sp.csr_matrix(chunk.X, shape=(chunk.n_rows, width)) for chunk in chunks], format="csr"
    )

    def joined(name):
        parts = [getattr(chunk, name) for chunk in chunks]
        return None if parts[0] is None else np.concatenate(parts)

    return Chunk(X, joined("y"), joined("lines"), joined("sample_weight"))


def rechunk(pieces, chunk_size):
    """Chunks of exactly ``chunk_size`` rows (the last may be shorter) from pieces of any size.

    A chunk inside a piece is a view of it; only the rows that complete a
    chunk across two pieces are copied.
    """
    pending, n_pending = [], 0  # fewer than chunk_size rows, from the end of earlier pieces
    for piece in pieces:
        if not piece.n_rows:
            continue
        start = 0
        if n_pending:
            start = min(chunk_size - n_pending, piece.n_rows)
            pending.append(piece.rows(0, start))
            n_pending += start
            if n_pending < chunk_size:
                continue
            yield concatenate(pending)
            pending, n_pending = [], 0
        while piece.n_rows - start >= chunk_size:
            yield piece.rows(start, start + chunk_size)
            start += chunk_size
        if start < piece.n_rows:
            pending, n_pending = [piece.rows(start, piece.n_rows)], piece.n_rows - start
    if n_pending:
        yield concatenate(pending)


def data_format(path, requested="auto"):
    """``"csv"`` or ``"libsvm"``: as requested, else from the file name."""
    if requested != "auto":
        return requested
    name = os.fspath(path).lower()
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return "csv" if name.endswith(".csv") else "libsvm"


# -------------------------------------------------------------------- input
def is_regular_file(path):
    """Whether ``path`` is a regular file (a stream that could be read again)."""
    if path == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class Input:
    """An input opened once: a path or ``-`` (standard input), decompressed if needed.

    ``read()`` gives the next block of decompressed bytes (``b""`` at the
    end); ``bytes_read`` and ``size`` (None for a stream) tell how far the
    raw input has been read, for a progress display.
    """

    def __init__(self, path):
        self.path = path
        if path == "-":
            self.file = sys.stdin.buffer
            self.size = None
        else:
            try:
                self.file = open(path, "rb")
            except OSError as error:
                raise DataError(path, None, error.strerror or str(error)) from None
            info = os.fstat(self.file.fileno())
            self.size = info.st_size if stat.S_ISREG(info.st_mode) else None
        self.bytes_read = 0
        self.decompressor = None
        self.make_decompressor = None
        self.finished = False
        head = self._read_raw()
        for magic, (_, make) in COMPRESSED.items():
            if head.startswith(magic):
                self.make_decompressor = make
                self.decompressor = make()
        self.pending = self._decompress(head) if self.decompressor else head
        if self.pending.startswith(UTF8_BOM):
            self.pending = self.pending[len(UTF8_BOM) :]

    def _read_raw(self):
        try:
            data = self.file.read(BLOCK_SIZE)
        except OSError as error:
            raise DataError(self.path, None, error.strerror or str(error)) from None
        self.bytes_read += len(data)
        return data

    def _decompress(self, data):
        """Decompressed ``data``; a new stream starts after the end of the last
        (gzip files made by concatenation, pbzip2, xz -T)."""
        out = []
        while data:
            out.append(self.decompressor.decompress(data))
            if not self.decompressor.eof:
                break
            data = self.decompressor.unused_data
            if data:
                self.decompressor = self.make_decompressor()
        return b"".join(out)

    def read(self):
        """The next block of bytes; ``b""`` at the end of the input."""
        if self.pending:
            data, self.pending = self.pending, b""
            return data
        while not self.finished:
            raw = self._read_raw()
            if not raw:
                self.finished = True
                if self.decompressor is not None and not self.decompressor.eof:
                    raise EOFError(
                        "Compressed file ended before the end-of-stream marker was reached"
                    )
                return b""
            data = self._decompress(raw) if self.decompressor else raw
            if data:
                return data
        return b""

    def close(self):
        if self.file is not sys.stdin.buffer:
            self.file.close()


def last_line_end(data, quoted):
    """Where the last whole line of ``data`` ends (0 if none); with ``quoted``
    (CSV), only at a newline outside double quotes."""
    end = data.rfind(b"\n") + 1
    if quoted:
        while end and data.count(b'"', 0, end) % 2:
            end = data.rfind(b"\n", 0, end - 1) + 1
    return end


def line_blocks(source, quoted=False):
    """Blocks of whole lines of an :class:`Input`, and the number of each block's first line."""
    carry, line = b"", 1
    while True:
        try:
            data = source.read()
        except DECOMPRESSION_ERRORS as error:
            raise DataError(
                source.path, None, f"unreadable after line {line - 1}: {error}"
            ) from None
        if not data:
            break
        data = carry + data if carry else data
        end = last_line_end(data, quoted)
        block, carry = data[:end], data[end:]
        if block:
            yield line, block
            line += block.count(b"\n")
    if carry:
        yield line, carry


def row_at(X, position):
    """The row of ``X`` holding the stored value at ``position``."""
    return int(np.searchsorted(X.indptr, position, side="right") - 1)


# ------------------------------------------------------------------- LIBSVM
def libsvm_line_problem(line, labels_required):
    """What is wrong with one LIBSVM line, or None if it is well formed.

    Mirrors what scikit-learn's ``load_svmlight_file`` accepts: an optional
    ``# comment``, a label (optional when ``labels_required`` is False, as for
    prediction), an optional ``qid:<id>``, then ``index:value`` pairs with
    indices in ascending order, without repeats.
    """
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return None
    if labels_required or b":" not in tokens[0]:
        label, tokens = tokens[0], tokens[1:]
        # Where labels are optional, multilabel lines ("1,3") are accepted too.
        try:
            for part in [label] if labels_required else label.split(b","):
                float(part)
        except ValueError:
            return f"the label {label.decode(errors='replace')!r} is not a number"
    if tokens and tokens[0].startswith(b"qid"):
        if b":" not in tokens[0]:
            return f"{tokens[0].decode(errors='replace')!r} is not qid:<id>"
        tokens = tokens[1:]
    previous = -1
    for token in tokens:
        text = token.decode(errors="replace")
        index, colon, value = token.partition(b":")
        if not colon:
            return f"{text!r} is not index:value"
        try:
            index = int(index)
        except ValueError:
            return f"the feature index in {text!r} is not an integer"
        if not 0 <= index <= MAX_INDEX:
            return f"the feature index in {text!r} is outside [0, {MAX_INDEX}]"
        if index <= previous:
            return (
                f"feature index {index} after {previous}: indices must be in "
                "ascending order, without repeats"
            )
        try:
            float(value)
        except ValueError:
            return f"the feature value in {text!r} is not a number"
        previous = index
    return None


def has_data(line):
    """Whether a LIBSVM line holds a row (not blank, not only a comment)."""
    return bool(line.split(b"#", 1)[0].split())


def _byte_table(characters):
    table = np.zeros(256, dtype=bool)
    table[list(characters)] = True
    return table


PLAIN = b"0123456789.+-: \t\r\n"
DIGITS = _byte_table(b"0123456789")
# Decimal numbers of at most 15 digits are parsed exactly as the integer of
# their digits divided by a power of ten: both are exact doubles (below 2**53
# and 10**22), so the one division is correctly rounded, as float() is.
MAX_DIGITS = 15


def digit_runs(buffer, starts, ends, max_length):
    """Integers of the digit-only byte spans ``[starts, ends)``, or None when
    a span is empty, longer than ``max_length`` or holds another byte."""
    if not starts.size:
        return np.zeros(0, dtype=np.int64)
    lengths = ends - starts
    if lengths.min() < 1 or lengths.max() > max_length:
        return None
    numbers = buffer[starts].astype(np.int64) - 48
    if not np.all((numbers >= 0) & (numbers <= 9)):
        return None
    for offset in range(1, int(lengths.max())):
        longer = np.flatnonzero(lengths > offset)
        digit = buffer[starts[longer] + offset].astype(np.int64) - 48
        if not np.all((digit >= 0) & (digit <= 9)):
            return None
        numbers[longer] = numbers[longer] * 10 + digit
    return numbers


def parse_decimals(buffer, starts, ends):
    """Floats of the byte spans ``[starts, ends)`` of ``buffer``, or None.

    Each span must be ``[+-]digits[.digits]`` (either digit run may be
    empty, not both) with at most MAX_DIGITS digits; otherwise None.
    """
    if not starts.size:
        return np.zeros(0)
    first = buffer[starts]
    signed = (first == ord("-")) | (first == ord("+"))
    negative = first == ord("-")
    if signed.any():
        starts = starts + signed
    lengths = ends - starts
    if lengths.min() < 1 or lengths.max() > MAX_DIGITS + 1:
        return None
    # Where the dot is, if any (spans of digits only, the common case, have none).
    dot_at = ends.copy()
    for offset in range(int(lengths.max())):
        longer = np.flatnonzero(lengths > offset)
        is_dot = buffer[starts[longer] + offset] == ord(".")
        if is_dot.any():
            dots = longer[is_dot]
            if np.any(dot_at[dots] != ends[dots]):
                return None  # a second dot
            dot_at[dots] = starts[dots] + offset
    whole_digits = dot_at - starts
    fraction_digits = np.maximum(ends - dot_at - 1, 0)
    if np.any(whole_digits + fraction_digits < 1) or np.any(
        whole_digits + fraction_digits > MAX_DIGITS
    ):
        return None
    if np.array_equal(dot_at, ends):  # integers: the common case
        mantissa = digit_runs(buffer, starts, ends, MAX_DIGITS)
        if mantissa is None:
            return None
        values = mantissa.astype(np.float64)
        return np.where(negative, -values, values)
    # "5." and ".5" have an empty run of digits: 0, with no digits.
    mantissa = np.zeros(starts.size, dtype=np.int64)
    whole = np.flatnonzero(whole_digits > 0)
    fraction = np.flatnonzero(fraction_digits > 0)
    whole_values = digit_runs(buffer, starts[whole], dot_at[whole], MAX_DIGITS)
    fraction_values = digit_runs(buffer, dot_at[fraction] + 1, ends[fraction], MAX_DIGITS)
    if whole_values is None or fraction_values is None:
        return None
    mantissa[whole] = whole_values * 10 ** fraction_digits[whole]
    mantissa[fraction] += fraction_values
    values = mantissa / 10.0**fraction_digits
    return np.where(negative, -values, values)


def parse_plain_libsvm_arrays(block, labels_required):
    """``(values, indices, indptr, y, line_offsets, width)`` of a block of plain
    LIBSVM lines, or None: the vectorised numpy parser, the reference.

    Plain: only digits, ``.+-:`` and whitespace; labels and values as
    :func:`parse_decimals` reads them; indices of at most 9 digits, in
    ascending order in each row. Gives exactly what ``load_svmlight_file(...,
    zero_based=True)`` gives (``width`` is the largest index + 1), or None for
    any other block. ``line_offsets`` counts the lines from the block's
    first; a line without tokens holds no row.
    """
    if not block or block.translate(None, PLAIN):  # a byte that is not plain is left
        return None
    buffer = np.frombuffer(block, dtype=np.uint8)
    # Tokens are the runs of bytes above the space: every other plain byte
    # is whitespace.
    space = buffer < 33
    edges = np.flatnonzero(space[1:] != space[:-1]) + 1
    if not space[0]:
        edges = np.concatenate(([0], edges))
    if not space[-1]:
        edges = np.concatenate((edges, [buffer.size]))
    starts, ends = edges[0::2], edges[1::2]
    if not starts.size:
        return None
    newlines = np.flatnonzero(buffer == ord("\n"))
    after_newline = np.searchsorted(starts, newlines)
    first_of_line = np.zeros(starts.size, dtype=bool)
    first_of_line[0] = True
    first_of_line[after_newline[after_newline < starts.size]] = True
    colons = np.flatnonzero(buffer == ord(":"))
    # The first colon at or after each line's first token: inside it or not.
    first_colon = np.searchsorted(colons, starts[first_of_line])
    labelled = np.ones(first_colon.size, dtype=bool)
    inside = first_colon < colons.size
    labelled[inside] = colons[first_colon[inside]] >= ends[first_of_line][inside]
    if labels_required and not labelled.all():
        return None
    is_label = np.zeros(starts.size, dtype=bool)
    is_label[np.flatnonzero(first_of_line)[labelled]] = True
    feature = ~is_label
    feature_starts, feature_ends = starts[feature], ends[feature]
    # One colon inside each feature token, and none elsewhere.
    if colons.size != feature_starts.size or np.any(
        (colons <= feature_starts) | (colons >= feature_ends - 1)
    ):
        return None
    indices = digit_runs(buffer, feature_starts, colons, 9)
    values = parse_decimals(buffer, colons + 1, feature_ends)
    if indices is None or values is None:
        return None
    row_of_token = np.cumsum(first_of_line) - 1
    feature_rows = row_of_token[feature]
    same_row = feature_rows[1:] == feature_rows[:-1]
    if np.any(same_row & (indices[1:] <= indices[:-1])):
        return None  # load_svmlight_file refuses it; let it say so
    y = None
    if labels_required:
        y = parse_decimals(buffer, starts[is_label], ends[is_label])
        if y is None:
            return None
    n_rows = int(first_of_line.sum())
    line_offsets = np.searchsorted(newlines, starts[first_of_line])
    indptr = np.concatenate(([0], np.cumsum(np.bincount(feature_rows, minlength=n_rows))))
    width = int(indices.max()) + 1 if indices.size else 0
    return values, indices, indptr, y, line_offsets, width


# Blocks of at least this many bytes go to the compiled parser: below, the
# import of numba and the load of the compiled code cost more than they save.
COMPILED_PARSER_BYTES = 2**20


def compiled_plain_parser():
    """The numba-compiled :func:`parse_plain_libsvm_arrays` (identical
    results, much faster; it also reads comments, qid and exponents as
    scikit-learn does), or None without numba."""
    global _compiled_parser
    if _compiled_parser is False:
        try:
            from ._libsvm_numba import parse_plain_libsvm_arrays as compiled
        except ImportError:
            compiled = None
        _compiled_parser = compiled
    return _compiled_parser


_compiled_parser = False  # not looked for yet


def parse_plain_libsvm(block, labels_required, compiled=True):
    """``(X, y, line_offsets)`` of a block of plain LIBSVM lines (see
    :func:`parse_plain_libsvm_arrays`), or None; by the compiled parser when
    numba is installed, ``compiled`` and the block has COMPILED_PARSER_BYTES
    or more (so that a small file does not import numba)."""
    use_compiled = compiled and len(block) >= COMPILED_PARSER_BYTES
    parse = (use_compiled and compiled_plain_parser()) or parse_plain_libsvm_arrays
    parsed = parse(block, labels_required)
    if parsed is None:
        return None
    values, indices, indptr, y, line_offsets, width = parsed
    X = sp.csr_matrix((values, indices, indptr), shape=(len(line_offsets), width))
    return X, y, line_offsets


def parse_libsvm_block(path, first_line, block, labels_required=True):
    """Parse a block of whole LIBSVM lines; indices are returned as written.

    Returns a Chunk whose ``X`` is as wide as its largest index + 1, with
    ``y`` None when ``labels_required`` is False (labels are then optional
    and ignored). Raises DataError naming the first malformed line.
    """
    plain = parse_plain_libsvm(block, labels_required)
    if plain is not None:
        X, y, line_offsets = plain
        chunk = Chunk(X, y, first_line + line_offsets)
    else:
        chunk = parse_with_sklearn(path, first_line, block, labels_required)
    check_finite(path, chunk)
    return chunk


def parse_with_sklearn(path, first_line, block, labels_required):
    """:func:`parse_libsvm_block` by scikit-learn's parser: any form it accepts."""
    from sklearn.datasets import load_svmlight_file

    lines = io.BytesIO(block).readlines()  # split at "\n" only, as load_svmlight_file
    try:
        # Multilabel mode accepts lines without a label, which prediction allows.
        X, y = load_svmlight_file(
            io.BytesIO(block), dtype=np.float64, zero_based=True, multilabel=not labels_required
        )
    except (ValueError, OverflowError, TypeError) as error:
        # Find the line, with the slower parser that explains it.
        for number, line in enumerate(lines, start=first_line):
            problem = libsvm_line_problem(line, labels_required)
            if problem is not None:
                raise DataError(path, number, problem) from None
        last_line = first_line + len(lines) - 1
        raise DataError(path, first_line, f"in lines {first_line}-{last_line}: {error}") from None
    if X.shape[0] == len(lines):
        line_numbers = np.arange(first_line, first_line + len(lines))
    else:  # blank or comment lines hold no row
        line_numbers = np.array(
            [n for n, line in enumerate(lines, start=first_line) if has_data(line)],
            dtype=np.int64,
        )
    y = np.asarray(y, dtype=np.float64) if labels_required else None
    return Chunk(X, y, line_numbers)


def check_finite(path, chunk):
    """Raise DataError at the first row with a non-finite value or label."""
    bad = np.flatnonzero(~np.isfinite(chunk.X.data))
    if bad.size:
        line = int(chunk.lines[row_at(chunk.X, bad[0])])
        raise DataError(path, line, f"the feature value {chunk.X.data[bad[0]]} is not finite")
    if chunk.y is not None:
        bad = np.flatnonzero(~np.isfinite(chunk.y))
        if bad.size:
            raise DataError(
                path, int(chunk.lines[bad[0]]), f"the label {chunk.y[bad[0]]} is not finite"
            )


def libsvm_pieces(path, labels_required=True):
    """Parsed blocks of a LIBSVM input (any number of rows each), indices as written."""
    source = Input(path)
    try:
        for first_line, block in line_blocks(source):
            yield parse_libsvm_block(path, first_line, block, labels_required)
    finally:
        source.close()


def libsvm_row_chunks(path, chunk_size, labels_required=True):
    """Chunks of exactly ``chunk_size`` rows (the last may be shorter), indices as written.

    The input is read and parsed ahead in a thread (:func:`read_ahead`), so
    that parsing the next block overlaps with the work on this one.
    """
    return rechunk(read_ahead(libsvm_pieces(path, labels_required)), chunk_size)


def read_ahead(items, depth=READ_AHEAD):
    """The items of a generator, produced by a background thread at most ``depth`` ahead.

    An exception of the generator is raised here, at the item where it
    happened. When the consumer stops early (an error, an interruption),
    the thread stops after its current item and closes the generator; the
    consumer waits for that at most a second.
    """
    queue = Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item):
        while not stop.is_set():
            try:
                queue.put(item, timeout=0.1)
                return True
            except Full:
                continue
        return False

    def produce():
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((end, None))
        except BaseException as error:
            put((end, error))
        finally:
            items.close()

    thread = threading.Thread(target=produce, name="skftrl-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = queue.get()
            if error is not None:
                raise error
            if item is end:
                return
            yield item
    finally:
        stop.set()
        # Not joined without a limit: a thread waiting to read a pipe or a
        # terminal cannot be stopped (an interrupted `skftrl train -` would
        # hang). It is a daemon, and ends at its next read or with the process.
        thread.join(timeout=1.0)


class LibsvmLayout(NamedTuple):
    """How LIBSVM rows become a model's columns."""

    n_features: int
    zero_based: bool  # index i is column i (else column i - 1)
    hash_bits: int = None  # if set: column = index mod 2**hash_bits


def fit_to_model(path, chunk, layout):
    """A chunk of indices as written, made into the model's columns.

    Indices are made zero-based; an index the model does not have is an
    error naming its line. With ``hash_bits``, an index is taken modulo
    ``2**hash_bits`` and values of the same column in a row are added up.
    """
    X = chunk.X
    if layout.hash_bits is not None:
        columns = X.indices.astype(np.int64) & (2**layout.hash_bits - 1)
        X = sp.csr_matrix((X.data, columns, X.indptr), shape=(X.shape[0], layout.n_features))
        X.sum_duplicates()
        return chunk._replace(X=X)
    zero_based, n_features = layout.zero_based, layout.n_features
    offset = 0 if zero_based else 1
    if X.nnz:
        if not zero_based and X.indices.min() == 0:
            position = int(np.argmin(X.indices))
            raise DataError(
                path,
                int(chunk.lines[row_at(X, position)]),
                "feature index 0, but this model's indices start at 1 "
                "(its training file had no index 0; --zero-based reads indices from 0)",
            )
        position = int(np.argmax(X.indices))
        if X.indices[position] - offset >= n_features:
            raise DataError(
                path,
                int(chunk.lines[row_at(X, position)]),
                f"feature index {X.indices[position]} is beyond the model's "
                f"{n_features} features (indices {offset} to {n_features - 1 + offset}; "
                "train with --n-features for a wider model, or --hash-bits)",
            )
    indices = X.indices - offset if offset else X.indices
    X = sp.csr_matrix((X.data, indices, X.indptr), shape=(X.shape[0], n_features))
    return chunk._replace(X=X)


def read_libsvm(path, chunk_size, layout, labels_required=True):
    """Chunks of a LIBSVM input in a model's columns (see :func:`fit_to_model`)."""
    for chunk in libsvm_row_chunks(path, chunk_size, labels_required):
        yield fit_to_model(path, chunk, layout)


class LibsvmScan(NamedTuple):
    """What a first pass over a LIBSVM training file found."""

    n_rows: int
    n_features: int  # the width a model needs: the largest index + 1 - offset
    zero_based: bool  # whether some index is 0 (as load_svmlight_file's "auto")
    largest_index: int  # as written in the file; -1 if there is no feature
    largest_index_line: int  # where it first appears
    labels: np.ndarray  # the sorted distinct labels (classification), else None


def scan_libsvm(path, chunk_size, collect_labels, progress=None, cache=None):
    """A first streaming pass over a LIBSVM training file.

    ``collect_labels`` gathers the distinct labels (at most MAX_CLASSES);
    ``progress(rows)`` is called after each chunk; ``cache`` (a ChunkCache)
    keeps every chunk, so that training need not parse the text again.
    """
    n_rows, largest, largest_line, zero_based = 0, -1, 0, False
    labels = set()
    for chunk in libsvm_row_chunks(path, chunk_size):
        if chunk.X.nnz:
            position = int(np.argmax(chunk.X.indices))
            if chunk.X.indices[position] > largest:
                largest = int(chunk.X.indices[position])
                largest_line = int(chunk.lines[row_at(chunk.X, position)])
            zero_based = zero_based or bool(chunk.X.indices.min() == 0)
        if collect_labels:
            collect_classes(path, int(chunk.lines[-1]), np.unique(chunk.y).tolist(), labels)
        if cache is not None:
            cache.write(chunk)
        n_rows += chunk.n_rows
        if progress is not None:
            progress(n_rows)
    if n_rows == 0:
        raise DataError(path, None, "no data rows")
    offset = 0 if zero_based else 1
    return LibsvmScan(
        n_rows,
        max(largest + 1 - offset, 1),
        zero_based,
        largest,
        largest_line,
        np.array(sorted(labels)) if collect_labels else None,
    )


def collect_classes(path, line, chunk_labels, labels):
    """Add the distinct labels of a chunk ending at ``line`` to ``labels``."""
    labels.update(chunk_labels)
    if len(labels) > MAX_CLASSES:
        raise DataError(
            path,
            line,
            f"more than {MAX_CLASSES} distinct labels by this line: is this "
            "a regression target? (use --task regress)",
        )


# ------------------------------------------------------------------- cache
class ChunkCache:
    """Parsed chunks in a binary temporary file, read back for later passes.

    As Vowpal Wabbit's cache (``-c``): a pass over it costs reading the
    arrays, not parsing text. The file is deleted on :meth:`close`.
    """

    def __init__(self, directory=None):
        self.file = tempfile.TemporaryFile(prefix="skftrl-cache-", dir=directory)
        self.n_chunks = 0

    def write(self, chunk):
        X = chunk.X
        arrays = [
            np.array([X.shape[0], X.shape[1]], dtype=np.int64),
            X.data,
            X.indices,
            X.indptr,
            chunk.lines,
        ]
        for optional in (chunk.y, chunk.sample_weight):
            arrays.append(np.zeros(0) if optional is None else optional)
            arrays.append(np.array([optional is not None]))
        for array in arrays:
            np.save(self.file, array, allow_pickle=False)
        self.n_chunks += 1

    def chunks(self):
        """Every chunk written, in order."""
        self.file.flush()
        self.file.seek(0)
        for _ in range(self.n_chunks):
            shape, data, indices, indptr, lines, y, has_y, weight, has_weight = (
                np.load(self.file, allow_pickle=False) for _ in range(9)
            )
            X = sp.csr_matrix((data, indices, indptr), shape=tuple(shape))
            yield Chunk(X, y if has_y[0] else None, lines, weight if has_weight[0] else None)

    def close(self):
        self.file.close()


# ---------------------------------------------------------------------- CSV
def decode(path, first_line, block):
    """A block of CSV bytes as text; DataError at the line of a byte that is not UTF-8."""
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError as error:
        line = first_line + block.count(b"\n", 0, error.start)
        column = error.start - (block.rfind(b"\n", 0, error.start) + 1) + 1
        byte = block[error.start : error.start + 1].hex()
        raise DataError(
            path, line, f"byte 0x{byte} at column {column} is not UTF-8 text ({error.reason})"
        ) from None


class CsvInput:
    """The header and the rows of a CSV input, column by column, with line numbers."""

    def __init__(self, path):
        self.path = path
        self.source = Input(path)
        self.blocks = line_blocks(self.source, quoted=True)
        try:
            self.header, self.first_rows = self._read_header()
            repeated = sorted({name for name in self.header if self.header.count(name) > 1})
            if repeated:
                raise DataError(path, 1, f"repeated column names in the header: {repeated}")
        except BaseException:
            self.close()
            raise

    def _read_header(self):
        """The header, and the rows of the rest of its block."""
        for first_line, block in self.blocks:
            reader = csv.reader(io.StringIO(decode(self.path, first_line, block), newline=""))
            header, _ = self._next_row(reader, first_line)
            if header is not None:
                return header, self._rows(reader, first_line, len(header))
        raise DataError(self.path, 1, "empty file: no header line")

    def _next_row(self, reader, first_line):
        """The next row that is not blank, and the line it starts on."""
        try:
            while True:
                start = first_line + reader.line_num
                row = next(reader, None)
                if row is None or row:  # the end, or not a blank line
                    return row, start
        except csv.Error as error:
            raise DataError(self.path, first_line + reader.line_num, str(error)) from None

    def _rows(self, reader, first_line, width):
        """``(columns, lines)`` of the rows a csv reader gives."""
        rows, lines = [], []
        while True:
            row, line = self._next_row(reader, first_line)
            if row is None:
                break
            if len(row) != width:
                raise DataError(self.path, line, f"{len(row)} fields, but the header has {width}")
            rows.append(row)
            lines.append(line)
        columns = np.empty((len(rows), width), dtype=object)
        if rows:
            columns[...] = rows
        return columns.T, np.array(lines, dtype=np.int64)

    def pieces(self):
        """``(columns, lines)`` of consecutive rows: an object array of str per column."""
        width = len(self.header)
        yield self.first_rows
        for first_line, block in self.blocks:
            text = decode(self.path, first_line, block)
            rows = None
            if '"' not in text and text.count("\r") == text.count("\r\n"):
                rows = split_plain_csv(text.replace("\r\n", "\n"), width, first_line)
            if rows is None:  # quotes, or a line to report: the csv module
                rows = self._rows(csv.reader(io.StringIO(text, newline="")), first_line, width)
            yield rows

    def chunks(self, chunk_size):
        """``(columns, lines)`` of exactly ``chunk_size`` rows (the last may be shorter)."""
        pending, n_pending = [], 0
        for columns, lines in self.pieces():
            if not len(lines):
                continue
            pending.append((columns, lines))
            n_pending += len(lines)
            if n_pending < chunk_size:
                continue
            columns = np.concatenate([piece[0] for piece in pending], axis=1)
            lines = np.concatenate([piece[1] for piece in pending])
            start = 0
            while n_pending - start >= chunk_size:
                yield columns[:, start : start + chunk_size], lines[start : start + chunk_size]
                start += chunk_size
            pending = [(columns[:, start:], lines[start:])]
            n_pending -= start
        if n_pending:
            yield (
                np.concatenate([piece[0] for piece in pending], axis=1),
                np.concatenate([piece[1] for piece in pending]),
            )

    def position(self, column, role):
        """Where ``column`` is in the header; DataError if it is not there."""
        if column not in self.header:
            raise DataError(
                self.path,
                1,
                f"no {role} column {column!r} in the header (the columns are: "
                f"{', '.join(self.header)})",
            )
        return self.header.index(column)

    def close(self):
        self.source.close()


def split_plain_csv(text, width, first_line):
    """``(columns, lines)`` of CSV text without quotes, or None when a line
    has another number of fields than ``width`` (the csv module then reads the
    block and names the line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    numbers = np.arange(first_line, first_line + len(lines))
    if "" in lines:  # blank lines hold no row
        kept = [i for i, line in enumerate(lines) if line]
        lines = [lines[i] for i in kept]
        numbers = numbers[kept]
    fields = ",".join(lines).split(",")
    if len(fields) != width * len(lines) or (
        width > 1 and any(line.count(",") != width - 1 for line in lines)
    ):
        return None
    columns = np.array(fields, dtype=object).reshape(len(lines), width).T
    return columns, numbers


def is_missing(value):
    return value.strip().lower() in MISSING


def parse_numbers(values):
    """Floats of CSV values, NaN for missing ones; None if one is not a number."""
    try:
        numbers = np.array(values, dtype=np.float64)  # float() of each string
    except ValueError:  # missing markers such as "" or "NA", or words
        try:
            numbers = np.array([np.nan if is_missing(value) else float(value) for value in values])
        except ValueError:
            return None
    return numbers


class CsvLayout(NamedTuple):
    """How CSV rows become a model's columns (see :func:`read_csv`)."""

    label_column: str
    kinds: dict  # feature column -> "numeric" or "categorical"
    numeric_labels: bool
    hash_bits: int
    weight_column: str = None
    ignored: tuple = ()  # columns read and dropped


class CsvScan(NamedTuple):
    """What a first pass over a CSV training file found."""

    n_rows: int
    kinds: dict  # feature column -> "numeric" or "categorical"
    numeric_labels: bool
    labels: np.ndarray  # the sorted distinct labels (classification), else None
    header: list


def feature_columns(header, label_column, weight_column, ignore, keep):
    """The header's feature columns: not the label, the weight, ignored, or left out
    by ``keep``."""
    special = {label_column, weight_column}
    return [
        name
        for name in header
        if name not in special and name not in ignore and (keep is None or name in keep)
    ]


def column_kinds(columns, values, categorical, kinds=None):
    """Update ``kinds`` (column -> numeric?) with a chunk's ``values``."""
    kinds = dict.fromkeys(columns, True) if kinds is None else kinds
    for name in columns:
        if kinds[name] and name not in categorical:
            kinds[name] = parse_numbers(values[name]) is not None
        elif name in categorical:
            kinds[name] = False
    return kinds


def scan_csv(path, label_column, chunk_size, classify, columns_of, categorical=(), progress=None):
    """A first streaming pass over a CSV training file.

    A column is numeric when every value that is not missing is a number
    (and it is not in ``categorical``), else categorical. For
    classification the labels are numbers when every label is, else
    strings; for regression every label must be a number. ``columns_of``
    gives the feature columns of a header; ``progress(rows)`` is called
    after each chunk.
    """
    with contextlib.closing(CsvInput(path)) as source:
        label_position = source.position(label_column, "label")
        columns = columns_of(source.header)
        positions = {name: source.header.index(name) for name in columns}
        header = source.header
        numeric = None
        labels, numeric_labels, n_rows = set(), True, 0
        for values, lines in source.chunks(chunk_size):
            numeric = column_kinds(
                columns, {name: values[positions[name]] for name in columns}, categorical, numeric
            )
            label_values = values[label_position]
            check_labels_present(path, label_values, lines)
            if classify:
                numeric_labels = numeric_labels and parse_numbers(label_values) is not None
                collect_classes(path, int(lines[-1]), set(label_values), labels)
            else:
                parse_targets(path, label_values, lines)
            n_rows += len(lines)
            if progress is not None:
                progress(n_rows)
    if n_rows == 0:
        raise DataError(path, None, "no data rows after the header")
    classes = None
    if classify and numeric_labels:
        classes = np.unique(np.array(sorted(labels), dtype=np.float64))
    elif classify:
        classes = np.array(sorted(labels))
    kinds = {name: "numeric" if numeric[name] else "categorical" for name in columns}
    return CsvScan(n_rows, kinds, numeric_labels, classes, header)


def check_labels_present(path, label_values, lines):
    """DataError at the first row whose label is missing."""
    if any(is_missing(value) for value in set(label_values)):
        for value, line in zip(label_values, lines):
            if is_missing(value):
                raise DataError(path, int(line), f"missing label {value!r}")


def first_non_number(values, lines, missing_allowed):
    """The first value that is not a finite number (or missing, if allowed), and its line."""
    for value, line in zip(values, lines):
        if missing_allowed and is_missing(value):
            continue
        try:
            number = float(value)
        except ValueError:
            return value, int(line)
        if not (np.isfinite(number) or (missing_allowed and np.isnan(number))):
            return value, int(line)
    raise ValueError("every value is a number")


def parse_targets(path, label_values, lines, what="label"):
    """The labels as floats; DataError at the first one that is not a number."""
    targets = parse_numbers(label_values)
    if targets is None or not np.all(np.isfinite(targets)):
        value, line = first_non_number(label_values, lines, missing_allowed=False)
        raise DataError(path, line, f"the {what} {value!r} is not a finite number")
    return targets


def parse_weights(path, values, lines, column):
    """Sample weights of a weight column: finite numbers >= 0."""
    weights = parse_targets(path, values, lines, what=f"weight (column {column!r})")
    negative = np.flatnonzero(weights < 0)
    if negative.size:
        raise DataError(
            path, int(lines[negative[0]]), f"the weight {values[negative[0]]!r} is negative"
        )
    return weights


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


def read_csv(
    path, layout, chunk_size, labels="required", names=None, on_first_chunk=None, find_kinds=None
):
    """Chunks of a CSV input, read as ``layout`` (a :class:`CsvLayout`) says.

    ``layout.kinds`` names the feature columns, each ``"numeric"`` (its value
    at the hashed index of the column's name) or ``"categorical"`` (1 at the
    hashed index of ``"column=value"``); ``numeric_labels`` whether labels
    are floats (else strings); ``hash_bits`` the width ``2**hash_bits``;
    ``weight_column`` the sample weights, if any; ``ignored`` columns that are
    read and dropped. Hashing is FeatureHasher's, without alternate signs, so
    that a weight reads as the feature's effect.

    When ``layout.kinds`` is None, ``find_kinds(header, values)`` gives the
    kinds and the ignored columns from the first chunk's values (a dict of
    column -> values). ``labels="required"`` reads the label column (and the
    weight column), ``"ignored"`` skips them if they are there. Every
    feature column of the layout must be in the header, and no other column
    unless ignored. ``names`` (a FeatureNames) records the names of hashed
    features. ``on_first_chunk(values, y)`` sees the first chunk's numeric
    columns (a dict of float arrays) and labels.
    """
    from sklearn.feature_extraction import FeatureHasher

    hasher = FeatureHasher(
        n_features=2**layout.hash_bits, input_type="string", alternate_sign=False
    )
    with contextlib.closing(CsvInput(path)) as source:
        chunks = source.chunks(chunk_size)
        if layout.kinds is None:
            first = next(chunks, None)
            values = {} if first is None else dict(zip(source.header, first[0]))
            kinds, ignored = find_kinds(source.header, values)
            layout = layout._replace(kinds=kinds, ignored=tuple(ignored))
            chunks = itertools.chain([] if first is None else [first], chunks)
        kinds = layout.kinds
        numeric_names = [name for name, kind in kinds.items() if kind == "numeric"]
        numeric_index = dict(zip(numeric_names, hashed_index(hasher, numeric_names)))
        if names is not None:
            for name in numeric_names:
                names.add(name, [name], [numeric_index[name]])
        positions = {name: source.position(name, "feature") for name in kinds}
        label_position = weight_position = None
        if labels == "required":
            label_position = source.position(layout.label_column, "label")
            if layout.weight_column is not None:
                weight_position = source.position(layout.weight_column, "weight")
        known = {layout.label_column, layout.weight_column, *layout.ignored}
        unknown = [name for name in source.header if name not in kinds and name not in known]
        if unknown:
            raise DataError(path, 1, f"columns the model was not trained on: {unknown}")
        for values, lines in chunks:
            row_ids, column_ids, data, numbers_of = [], [], [], {}
            for name, kind in kinds.items():
                column_values = values[positions[name]]
                if kind == "numeric":
                    numbers = numeric_values(path, name, column_values, lines)
                    numbers_of[name] = numbers
                    # NaN is a missing value; a zero adds nothing to a linear model.
                    rows_kept = np.flatnonzero(~np.isnan(numbers) & (numbers != 0))
                    row_ids.append(rows_kept)
                    column_ids.append(np.full(rows_kept.size, numeric_index[name]))
                    data.append(numbers[rows_kept])
                else:
                    rows_kept, indices = categorical_features(name, column_values, hasher, names)
                    row_ids.append(rows_kept)
                    column_ids.append(indices)
                    data.append(np.ones(rows_kept.size))
            # Summing duplicates adds up hash collisions, as FeatureHasher does.
            X = sp.csr_matrix(
                (
                    np.concatenate(data) if data else np.zeros(0),
                    (
                        np.concatenate(row_ids) if row_ids else np.zeros(0, np.int64),
                        np.concatenate(column_ids) if column_ids else np.zeros(0, np.int64),
                    ),
                ),
                shape=(len(lines), hasher.n_features),
            )
            X.sum_duplicates()
            y = weights = None
            if label_position is not None:
                label_values = values[label_position]
                check_labels_present(path, label_values, lines)
                if layout.numeric_labels:
                    y = parse_targets(path, label_values, lines)
                else:
                    y = np.array(label_values, dtype=str)
            if weight_position is not None:
                weights = parse_weights(path, values[weight_position], lines, layout.weight_column)
            if on_first_chunk is not None:
                on_first_chunk(numbers_of, y)
                on_first_chunk = None
            yield Chunk(X, y, lines, weights)


def numeric_values(path, column, values, lines):
    """A numeric column's values, NaN where missing; DataError at a value that is not a number."""
    numbers = parse_numbers(values)
    if numbers is None or np.isinf(numbers).any():
        value, line = first_non_number(values, lines, missing_allowed=True)
        raise DataError(
            path,
            line,
            f"column {column!r} holds numbers, but this value is {value!r} "
            f"(--categorical {column} reads every value as a category)",
        )
    return numbers


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


# -------------------------------------------------------------- model files
@contextlib.contextmanager
def atomic_output(path, mode="wb"):
    """A file that appears at ``path`` only if the ``with`` block succeeds.

    It is written to a temporary file in the same directory, then renamed
    over ``path`` (atomic on POSIX and Windows); on any error, or an
    interruption, the temporary file is removed and ``path`` is untouched.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
        )
    except OSError as error:
        raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, mode) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        # mkstemp makes the file private; give it the permissions of a new file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        try:
            os.replace(temporary, path)
        except OSError as error:
            raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
