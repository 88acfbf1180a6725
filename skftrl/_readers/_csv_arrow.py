"""CSV text parsed by pyarrow, a block of whole lines at a time.

The blocks are those of :func:`~._sources.line_blocks` (any source,
compressed or not, with line numbers). pyarrow parses each block into
dictionary-encoded string columns (in the reading thread), read as
:class:`~._hashing.Factorized` columns: every later step looks at a column's
distinct values only. The columns a model reads as numbers (numeric
features, :meth:`ArrowCsvInput.read_numbers`) are parsed as floats instead,
where every value of the block's column is a number or a missing marker:
pyarrow reads numbers as ``float()`` does (both correctly rounded), and what
it refuses (``1_000``, non-ASCII digits, spaces around a marker) or reads
as infinite sends the block back to strings. The line of each row is found
from the block's line ends outside quoted fields, read as the csv module
reads them (see :func:`~._sources.csv_quotes`).

A block that pyarrow refuses, or whose rows it counts otherwise than the
csv module (a line of spaces), is read by the csv module
(:class:`~._csv_text.CsvInput`'s parser) instead: the rows, and the errors
naming their line, are the csv module's in every case.
"""

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ._chunks import rechunk
from ._csv_text import CsvInput, csv_reader, decode
from ._csv_values import MISSING_SPELLINGS, WHITESPACE, is_missing, parse_numbers
from ._hashing import Factorized, compiled_hashing, concatenate_factorized, factorize
from ._sources import (
    DataError,
    csv_line_ends,
    line_end_counts,
    next_line_end,
    read_ahead,
    row_ending,
)
from ._tables import arrow_text

NEWLINE, CARRIAGE_RETURN = 10, 13
# The blocks' tables are allocated by the C library's allocator, which gives
# their memory back to the next block: pyarrow's default (mimalloc) keeps
# more of it for itself, and the command's peak memory is higher with it.
MEMORY_POOL = pa.system_memory_pool()
MISSING_VALUES = pa.array(MISSING_SPELLINGS, pa.string())
# A value that starts or ends with a character str.strip() removes.
SPACE = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]"
PADDED = f"^{SPACE}|{SPACE}$"
LONGEST_MISSING = max(map(len, MISSING_SPELLINGS))
# The bytes a value with spaces around it may start or end with: a space
# of ASCII, or a byte of the UTF-8 text of a character beyond it.
MAY_BE_SPACE = np.array(
    [chr(byte) in WHITESPACE or byte >= 0x80 for byte in range(256)], dtype=bool
)
# The first bytes of the missing markers that have one (an n).
MAY_START_MISSING = np.array(
    [any(marker[:1] == chr(byte) for marker in MISSING_SPELLINGS) for byte in range(256)],
    dtype=bool,
)
# The bytes of a number's text, but for those of "inf" and "nan".
NUMBER_BYTES = np.array([chr(byte) in "0123456789+-.eE" for byte in range(256)], dtype=bool)


class FactorizedRows(NamedTuple):
    """Consecutive rows of a CSV input: each column a
    :class:`~._hashing.Factorized` of strings, and the line each row starts on."""

    columns: list
    lines: np.ndarray

    @property
    def n_rows(self):
        return len(self.lines)

    def rows(self, start, stop):
        """Rows ``start`` to ``stop``."""
        return FactorizedRows(
            [column[start:stop] for column in self.columns], self.lines[start:stop]
        )


def concatenate_rows(pieces):
    """One :class:`FactorizedRows` of the rows of ``pieces``."""
    if len(pieces) == 1:
        return pieces[0]
    columns = [concatenate_column(list(parts)) for parts in zip(*(p.columns for p in pieces))]
    return FactorizedRows(columns, np.concatenate([piece.lines for piece in pieces]))


def concatenate_column(parts):
    """One column of consecutive parts of its rows, each a
    :class:`~._hashing.Factorized` or numbers (see
    :meth:`ArrowCsvInput.read_numbers`): numbers where every part reads as
    finite numbers; else a Factorized, which names the value that does not
    when the rows are read."""
    if all(isinstance(part, Factorized) for part in parts):
        return concatenate_factorized(parts)
    numbers = [part if isinstance(part, np.ndarray) else parse_numbers(part) for part in parts]
    if all(part is not None and not np.isinf(part).any() for part in numbers):
        return np.concatenate(numbers)
    return concatenate_factorized([as_text(part) for part in parts])


def as_text(part):
    """A part of a column as a :class:`~._hashing.Factorized`: numbers as the
    text ``repr`` writes (which reads back as the same float), NaN as an
    empty value (missing)."""
    if isinstance(part, Factorized):
        return part
    present = ~np.isnan(part)
    codes = np.full(len(part), np.count_nonzero(present), dtype=np.intp)  # the empty value
    codes[present] = np.arange(np.count_nonzero(present))
    text = list(map(repr, part[present].tolist())) + [""]
    missing = np.arange(len(text)) == len(text) - 1
    return Factorized(text, codes, missing, np.append(part[present], np.nan), cached=True)


def row_lines(block, first_line, n_rows, delimiter=","):
    """The line each row of a block starts on, as the csv module counts rows
    and lines (a blank line holds no row; a carriage return alone ends a
    line); None when the block does not have ``n_rows`` such rows."""
    # numpy counts bytes faster than bytes.count, and without the GIL: the
    # reading thread runs beside the one that hashes the rows.
    n_newlines, alone = line_end_counts(block)
    if not alone and n_newlines + (not block.endswith(b"\n")) == n_rows:
        # A row a line: a blank line or a newline inside quotes would add a
        # line, and a carriage return alone ends a row as a newline does.
        return np.arange(first_line, first_line + n_rows)
    data = np.frombuffer(block, dtype=np.uint8)
    line_ends = csv_line_ends(block, alone)
    # Line k starts at starts[k]: it starts a row where the line end before
    # it ends one, and it is not blank (it does not start with a line end).
    starts = np.concatenate([[0], line_ends])
    first_bytes = data[np.minimum(starts, len(data) - 1)]
    rows = (starts < len(data)) & (first_bytes != NEWLINE) & (first_bytes != CARRIAGE_RETURN)
    rows[1:] &= row_ending(block, line_ends, delimiter.encode())
    (row_starts,) = np.nonzero(rows)
    if len(row_starts) != n_rows:
        return None
    return first_line + row_starts


def numbers_of(dictionary, missing, text):
    """The numbers of an Arrow string array's values (NaN where ``missing``;
    ``text`` their bytes and offsets, :func:`~._tables.arrow_text`), or None
    when one is not a number as pyarrow reads numbers.

    pyarrow's reading of a number is Python's ``float()`` (both correctly
    rounded), and it refuses what ``float()`` reads in other forms (spaces,
    underscores, non-ASCII digits): a column of those is parsed by Python.
    """
    numbers = np.full(len(dictionary), np.nan)
    present = ~missing
    try:
        if present.any():  # a column of text fails on its first value, without a copy
            pc.cast(dictionary.slice(int(present.argmax()), 1), pa.float64())
            # Else on a value that cannot be a number, found from the bytes
            # (a column of hexadecimal ids whose first value reads as 2e61...).
            if not may_be_numbers(text, present):
                return None
        read = pc.cast(dictionary.filter(pa.array(present)), pa.float64())
    except pa.ArrowInvalid:
        return None
    numbers[present] = read.to_numpy(zero_copy_only=False)
    return numbers


def may_be_numbers(text, present):
    """Whether each value of ``text`` (bytes and offsets, :func:`~._tables.arrow_text`)
    where ``present`` may be a number as pyarrow reads numbers: False when one
    holds a byte that a number's text cannot hold, outside "inf", "infinity" and
    "nan" (any case, "nan(...)" too), which each hold an n."""
    data, offsets = text
    data = data[offsets[0] : offsets[-1]]
    other = ~NUMBER_BYTES[data]
    if not other.any():  # digits, signs, points and exponents only: the common case
        return True
    values = offsets - offsets[0]
    others = np.concatenate([[0], np.cumsum(other)])[values]
    ns = np.concatenate([[0], np.cumsum((data == ord("n")) | (data == ord("N")))])[values]
    refused = (np.diff(others) > 0) & (np.diff(ns) == 0)
    return not (refused & present).any()


def missing_values(dictionary, text):
    """Which values of an Arrow string array (``text`` its bytes and offsets,
    :func:`~._tables.arrow_text`) are missing values of CSV text
    (:func:`~._csv_values.is_missing`): the spellings of the markers, and any
    value with spaces around it that is one."""
    data, offsets = text
    lengths = np.diff(offsets)
    # Only an empty value, one as short as a marker that starts as one does,
    # or one with a space (or a byte of a character beyond ASCII) at an end
    # may be missing: found from the first and last bytes, the values' text
    # is looked at for those alone.
    empty = lengths == 0
    if empty.all():
        maybe = empty
    else:
        first = data[np.minimum(offsets[:-1], len(data) - 1)]  # (of empty values: ignored)
        last = data[np.maximum(offsets[1:] - 1, 0)]
        maybe = empty | MAY_BE_SPACE[first] | MAY_BE_SPACE[last]
        maybe |= (lengths <= LONGEST_MISSING) & MAY_START_MISSING[first]
    missing = np.zeros(len(lengths), dtype=bool)
    candidates = np.flatnonzero(maybe)
    if not candidates.size:
        return missing
    values = dictionary.take(pa.array(candidates))
    missing[candidates] = pc.is_in(values, value_set=MISSING_VALUES).to_numpy(zero_copy_only=False)
    padded = pc.match_substring_regex(values, PADDED).to_numpy(zero_copy_only=False)
    for position in candidates[padded]:
        missing[position] = is_missing(dictionary[int(position)].as_py())
    return missing


def missing_column(n_rows):
    """A :class:`~._hashing.Factorized` column of ``n_rows`` missing values."""
    return Factorized(
        [""], np.zeros(n_rows, dtype=np.intp), np.ones(1, bool), np.full(1, np.nan), cached=True
    )


class ArrowCsvInput(CsvInput):
    """A CSV input opened once, its rows parsed by pyarrow (see the module)."""

    def _read_header(self):
        """The header (by the csv module), and the rows of the rest of its block."""
        for first_line, block in self.blocks:
            text = decode(self.path, first_line, block)
            reader = csv_reader(text, self.delimiter)
            header, _ = self._next_row(reader, first_line)
            if header is not None:
                end = 0  # after the header's last line, as the csv module ends lines
                for _ in range(reader.line_num):
                    end = next_line_end(block, end)
                self.header = header
                return header, self.parse(first_line + reader.line_num, block[end:])
        raise DataError(self.path, 1, "empty file: no header line")

    def pieces(self):
        """The rows after the header, a :class:`FactorizedRows` a block."""
        if self.first_rows is not None:
            yield self.first_rows
        for first_line, block in self.blocks:
            yield self.parse(first_line, block)

    def row_chunks(self, chunk_size, start=read_ahead):
        """The rows after the header in :class:`FactorizedRows` of exactly
        ``chunk_size`` rows (the last may be shorter), read and parsed ahead
        in a thread: pyarrow parses the next block while this one is used
        (``start``: :func:`~._sources.read_ahead`, or
        :func:`~._sources.read_on_demand` for no thread)."""
        return rechunk(start(self.pieces()), chunk_size, concatenate_rows)

    # The positions of the columns read as numbers (see read_numbers).
    numeric: frozenset = frozenset()

    def read_numbers(self, positions):
        """Read the columns at ``positions`` as numbers from the next block on:
        each a float array (NaN where missing) rather than a
        :class:`~._hashing.Factorized` of strings, where pyarrow reads every
        value of the block's column as a number or a missing marker (and
        none is infinite, which the reader's error names); else as before."""
        self.numeric = frozenset(positions)

    # The names of the columns whose categories are hashed ahead, by position
    # (see hash_categories).
    hashed_fields: dict = {}

    def hash_categories(self, fields):
        """Hash the distinct values of the columns at the positions of
        ``fields`` (position -> the field's name) from the next block on, as
        :meth:`~._hashing.Factorized.hashes_of` does: in the reading thread, as
        each block is parsed, rather than in the one that learns; compiled,
        without the GIL (without numba, in the thread that learns as before)."""
        # numba imported in this thread: two threads importing it at once can
        # deadlock on its circular imports.
        if compiled_hashing() is not None:
            self.hashed_fields = dict(fields)

    # The positions of the columns left unread (see skip_columns).
    skipped: frozenset = frozenset()

    def skip_columns(self, positions):
        """Leave the columns at ``positions`` unread from the next block on:
        pyarrow splits their values out of the text but converts none, and
        every row of theirs reads as missing (for a first pass that has
        learned all it needs of them)."""
        self.skipped = frozenset(positions)

    def parse(self, first_line, block):
        """The :class:`FactorizedRows` of a block of whole lines."""
        # Line ends alone (no row): looked for past the first byte (a copy
        # of the block) only where it is one.
        if block[:1] in (b"", b"\r", b"\n") and not block.strip(b"\r\n"):
            return self.python_rows(first_line, block)
        quoted = b'"' in block
        numeric = self.numeric
        columns = self.arrow_columns(block, quoted, numeric) if numeric else None
        if columns is None:
            columns = self.arrow_columns(block, quoted, ())
        if columns is None:
            return self.python_rows(first_line, block)
        lines = row_lines(block, first_line, len(columns[0]), self.delimiter)
        if lines is None:
            return self.python_rows(first_line, block)
        for position, field in self.hashed_fields.items():
            column = columns[position]
            # Compiled only (pyarrow's text): Python's hashing would import
            # scikit-learn in this thread.
            if isinstance(column, Factorized) and column.text is not None:
                column.hashes_of(field)
        return FactorizedRows(columns, lines)

    def arrow_columns(self, block, quoted, numeric):
        """The columns of a block parsed by pyarrow: those at ``numeric`` as
        float arrays, the others as :class:`~._hashing.Factorized` strings; or
        None when pyarrow refuses the block (or one of those numbers)."""
        names = [str(i) for i in range(len(self.header))]
        skipped = self.skipped
        string = pa.dictionary(pa.int32(), pa.string())
        try:
            table = pa_csv.read_csv(
                pa.py_buffer(block),
                # One block parsed whole, in this thread: pyarrow's threads
                # would compete with the learner's for the cores, and give
                # chunks whose dictionaries are then unified.
                read_options=pa_csv.ReadOptions(
                    column_names=names, use_threads=False, block_size=len(block) + 1
                ),
                parse_options=pa_csv.ParseOptions(
                    delimiter=self.delimiter, newlines_in_values=quoted
                ),
                convert_options=pa_csv.ConvertOptions(
                    include_columns=[name for i, name in enumerate(names) if i not in skipped],
                    column_types={
                        name: pa.float64() if i in numeric else string
                        for i, name in enumerate(names)
                    },
                    # Strings are never null: only numbers read the markers.
                    null_values=MISSING_SPELLINGS if numeric else [],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
                memory_pool=MEMORY_POOL,
            )
        except pa.ArrowException:
            return None
        table = table.unify_dictionaries(MEMORY_POOL)
        columns = []
        for position, name in enumerate(names):
            if position in skipped:
                columns.append(missing_column(table.num_rows))
                continue
            column = table.column(name)
            if pa.types.is_floating(column.type):
                numbers = pc.fill_null(column, np.nan).to_numpy()
                if np.isinf(numbers).any():
                    return None
                columns.append(numbers)
                continue
            chunks = column.chunks
            dictionary = chunks[0].dictionary if chunks else pa.array([], pa.string())
            codes = [chunk.indices.to_numpy(zero_copy_only=False) for chunk in chunks]
            text = arrow_text(dictionary)
            missing = missing_values(dictionary, text)
            columns.append(
                Factorized(
                    dictionary,
                    np.concatenate(codes) if codes else np.zeros(0, np.intp),
                    missing,
                    numbers_of(dictionary, missing, text),
                    cached=True,
                    text=text,
                )
            )
        return columns

    def python_rows(self, first_line, block):
        """A block read by the csv module, as :class:`FactorizedRows`."""
        text = decode(self.path, first_line, block)
        reader = csv_reader(text, self.delimiter)
        rows = self._rows(reader, first_line, len(self.header), text)
        return FactorizedRows([factorize(column) for column in rows.columns], rows.lines)
