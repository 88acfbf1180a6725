"""CSV text: the header, then the rows of an input as columns of strings.

A block of whole lines (see :func:`~._sources.line_blocks`, which keeps a
quoted newline inside its line) is decoded as UTF-8 and split into fields:
by ``str.split`` when it has no quotes (nor a carriage return alone), else
by the :mod:`csv` module (any field's length read), which also names the
line of a malformed row. Rows come in pieces of a block each,
cut into chunks of ``chunk_size`` rows by :func:`~._chunks.rechunk`.
"""

import csv
import io
from typing import NamedTuple

import numpy as np

from ._chunks import rechunk
from ._sources import ByteSource, DataError, csv_line_count, line_blocks


class CsvRows(NamedTuple):
    """Consecutive rows of a CSV input: the values of each column (an object
    array of str, one line per column) and the line each row starts on."""

    columns: np.ndarray
    lines: np.ndarray

    @property
    def n_rows(self):
        return len(self.lines)

    def rows(self, start, stop):
        """Rows ``start`` to ``stop`` (views of these arrays)."""
        return CsvRows(self.columns[:, start:stop], self.lines[start:stop])


def concatenate_rows(pieces):
    """One :class:`CsvRows` of the rows of ``pieces``."""
    if len(pieces) == 1:
        return pieces[0]
    return CsvRows(
        np.concatenate([piece.columns for piece in pieces], axis=1),
        np.concatenate([piece.lines for piece in pieces]),
    )


def decode(path, first_line, block):
    """A block of CSV bytes as text; DataError at the line of a byte that is not UTF-8."""
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError as error:
        before = block[: error.start]
        line = first_line + csv_line_count(before)
        column = error.start - max(before.rfind(b"\n"), before.rfind(b"\r"))
        byte = block[error.start : error.start + 1].hex()
        raise DataError(
            path, line, f"byte 0x{byte} at column {column} is not UTF-8 text ({error.reason})"
        ) from None


def csv_reader(text, delimiter, strict=False):
    """A csv module reader of ``text``, which reads a field of any length:
    ``csv.field_size_limit()`` is raised to the length of the text if it is
    lower (pyarrow's parser reads fields of any length too)."""
    if len(text) > csv.field_size_limit():
        csv.field_size_limit(len(text))
    return csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=strict)


def check_delimiter(delimiter):
    """Raise a ValueError unless ``delimiter`` can separate CSV fields, for
    both parsers: one ASCII character (pyarrow's takes no other), not NUL, a
    quote or a line end."""
    if (
        not isinstance(delimiter, str)
        or len(delimiter) != 1
        or not "\x01" <= delimiter <= "\x7f"
        or delimiter in '"\r\n'
    ):
        raise ValueError(
            "the delimiter must be one character other than a quote or a line end, "
            f"ASCII and not NUL, as both parsers take it (',' or '\\t', say); got {delimiter!r}"
        )


class CsvInput:
    """A CSV input opened once: its header, then its rows, with line numbers;
    its fields separated by ``delimiter``. A file without a header line has
    its ``column_names`` given instead: its first line is a row."""

    def __init__(self, path, delimiter=",", column_names=None):
        check_delimiter(delimiter)
        self.delimiter = delimiter
        self.source = ByteSource(path)
        self.path = self.source.path
        self.blocks = line_blocks(self.source, quoted=True, delimiter=delimiter)
        # How errors name where the columns' names come from.
        self.names_given = column_names is not None
        try:
            if self.names_given:
                self.header = list(column_names)
                self.first_rows = self._first_rows_without_header()
            else:
                self.header, self.first_rows = self._read_header()
            repeated = sorted({name for name in self.header if self.header.count(name) > 1})
            if repeated:
                where = "given" if self.names_given else "in the header"
                line = None if self.names_given else 1
                raise DataError(
                    self.path,
                    line,
                    f"repeated column names {where}: {repeated}{self._row_hint()}",
                )
        except BaseException:
            self.close()
            raise

    def _first_rows_without_header(self):
        """The rows of the first block of a file whose column names were
        given; DataError if its first row is those names (a header line,
        which would be read as a row)."""
        names = self.header
        if not names:
            raise ValueError("the column names of a file without a header line: none given")
        for first_line, block in self.blocks:
            text = decode(self.path, first_line, block)
            reader = csv_reader(text, self.delimiter)
            first_row, start = self._next_row(reader, first_line)
            if first_row is None:  # blank lines only
                continue
            if [value.strip() for value in first_row] == [name.strip() for name in names]:
                raise DataError(
                    self.path,
                    start,
                    "this line is the column names given: a header line (give the "
                    "column names only for a file without one)",
                )
            return self.parse(first_line, block)
        return None

    def _read_header(self):
        """The header, and the rows of the rest of its block."""
        for first_line, block in self.blocks:
            text = decode(self.path, first_line, block)
            reader = csv_reader(text, self.delimiter)
            header, start = self._next_row(reader, first_line)
            if header is not None:
                if reader.line_num > start - first_line + 1:
                    self._check_quotes(text, first_line, start, reader.line_num)
                return header, self._rows(reader, first_line, len(header), text)
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
            # The line read last is the one at fault.
            raise DataError(self.path, first_line + reader.line_num - 1, str(error)) from None

    def _rows(self, reader, first_line, width, text):
        """The :class:`CsvRows` a csv reader of ``text`` gives."""
        rows, lines = [], []
        text_lines = None
        while True:
            row, line = self._next_row(reader, first_line)
            if row is None:
                break
            if reader.line_num > line - first_line + 1:  # a quoted field with line ends
                if text_lines is None:
                    text_lines = io.StringIO(text, newline="").readlines()
                self._check_quotes(text_lines, first_line, line, reader.line_num)
            if len(row) != width:
                expected = (
                    f"{width} column names were given"
                    if self.names_given
                    else f"the header has {width}"
                )
                raise DataError(self.path, line, f"{len(row)} fields, but {expected}")
            rows.append(row)
            lines.append(line)
        columns = np.empty((len(rows), width), dtype=object)
        if rows:
            columns[...] = rows
        return CsvRows(columns.T, np.array(lines, dtype=np.int64))

    def _check_quotes(self, text, first_line, start, end):
        """A row of lines ``start`` to ``first_line + end - 1`` of ``text`` (its
        lines, or the text), which a quoted field holding line ends made, must
        be well quoted: its fields closed by a quote followed by a comma or a
        line end. A field that a lone quote opened ends at the next quote of
        the input, usually the opening quote of another field, followed by
        text: an error at the line of the lone quote, rather than rows read as
        one field."""
        if isinstance(text, str):
            text = io.StringIO(text, newline="").readlines()
        reader = csv_reader("".join(text[start - first_line : end]), self.delimiter, strict=True)
        try:
            for _ in reader:
                pass
        except csv.Error:
            raise DataError(
                self.path,
                start,
                "unterminated quote? The quoted field that opens on this line ends on line "
                f"{start + reader.line_num - 1} at a quote followed by text (a quote "
                'inside a quoted field is written twice: "")',
            ) from None

    def pieces(self):
        """The rows after the header, a :class:`CsvRows` a block."""
        if self.first_rows is not None:
            yield self.first_rows
        for first_line, block in self.blocks:
            yield self.parse(first_line, block)

    def parse(self, first_line, block):
        """The :class:`CsvRows` of a block of whole lines."""
        width = len(self.header)
        text = decode(self.path, first_line, block)
        rows = None
        if '"' not in text and text.count("\r") == text.count("\r\n"):
            text_lf = text.replace("\r\n", "\n")
            rows = split_plain_csv(text_lf, width, first_line, self.delimiter)
        if rows is None:  # quotes, or a line to report: the csv module
            reader = csv_reader(text, self.delimiter)
            rows = self._rows(reader, first_line, width, text)
        return rows

    def row_chunks(self, chunk_size, start=None):
        """The rows after the header in :class:`CsvRows` of exactly ``chunk_size``
        rows (the last may be shorter), read in the thread that uses them
        (``start`` is not used: the csv module holds the GIL, and a thread
        reading ahead would take the learner's time)."""
        return rechunk(self.pieces(), chunk_size, concatenate_rows)

    def read_numbers(self, positions):
        """Nothing: the csv module reads every value as text (pyarrow's
        reader reads the columns at ``positions`` as numbers)."""

    def hash_categories(self, fields):
        """Nothing: the csv module's rows are read, and hashed, in the thread
        that learns (pyarrow's reader hashes the categories of ``fields``
        ahead)."""

    def skip_columns(self, positions):
        """Nothing: the csv module reads every column (pyarrow's reader
        leaves the columns at ``positions`` unread)."""

    def position(self, column, role):
        """Where ``column`` is in the header; DataError if it is not there."""
        if column not in self.header:
            if self.names_given:
                raise DataError(
                    self.path,
                    None,
                    f"no {role} column {column!r} among the column names given "
                    f"({', '.join(self.header)})",
                )
            raise DataError(
                self.path,
                1,
                f"no {role} column {column!r} in the header (the columns are: "
                f"{', '.join(self.header)}){self._row_hint()}",
            )
        return self.header.index(column)

    def _row_hint(self):
        """A hint for errors about a header line that looks like a row: one
        with an empty name or a number (which a header rarely holds)."""
        if self.names_given or not any(name == "" or is_number(name) for name in self.header):
            return ""
        return (
            "; is the first line a row? A file without a header line needs its column names given"
        )

    def close(self):
        self.source.close()


def is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def split_plain_csv(text, width, first_line, delimiter=","):
    """The :class:`CsvRows` of CSV text without quotes, its fields separated
    by ``delimiter``, or None when a line has another number of fields than
    ``width`` (the csv module then reads the block and names the line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    numbers = np.arange(first_line, first_line + len(lines))
    if "" in lines:  # blank lines hold no row
        kept = [i for i, line in enumerate(lines) if line]
        lines = [lines[i] for i in kept]
        numbers = numbers[kept]
    fields = delimiter.join(lines).split(delimiter)
    if len(fields) != width * len(lines) or (
        width > 1 and any(line.count(delimiter) != width - 1 for line in lines)
    ):
        return None
    columns = np.array(fields, dtype=object).reshape(len(lines), width).T
    return CsvRows(columns, numbers)
