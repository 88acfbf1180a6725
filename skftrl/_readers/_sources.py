"""Byte sources: an input opened once, read in blocks of whole lines.

An input is a path, ``-`` for standard input, or a file object (in text
mode, its text from where it is, as UTF-8); a pipe or a FIFO works as a
regular file does. It is opened once and read from start to end in blocks
(:func:`line_blocks`): plain text, or gzip, bz2, xz or zstd compressed
(recognised by their first bytes, not by the file name; zstd needs the
zstandard package, or Python 3.14), with a UTF-8 byte-order mark skipped;
damaged compressed data is a ValueError naming the file. Nothing is read
twice, so nothing is lost on a stream that cannot be rewound. Only the
standard library is imported here.
"""

import bz2
import collections
import io
import lzma
import os
import stat
import sys
import threading
import zlib

import numpy as np

# Bytes read from the input at a time: large enough that numpy's per-call
# cost vanishes, small enough that memory stays flat.
BLOCK_SIZE = 4 * 2**20

# Parsed blocks kept ready ahead of the one being used (see read_ahead):
# two keep the reading thread busy while memory stays bounded.
READ_AHEAD = 2

NEWLINE, CARRIAGE_RETURN, QUOTE = 10, 13, 34
# The longest quoted CSV field read, in bytes: a quote that opens a field
# and is not closed within as many is an error, rather than the rest of the
# input read (and held) as one field.
LONGEST_QUOTED_FIELD = 64 * 2**20
# Bytes of a block compared at a time: temporary arrays of a block's size
# would be allocated, and their memory paged in, anew for every block.
STEP = 2**16


def zstd_decompressor():
    """A streaming zstd decompressor: Python's own (3.14), else zstandard's."""
    try:
        from compression import zstd

        return zstd.ZstdDecompressor()
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        return None
    return zstandard.ZstdDecompressor().decompressobj()


# The first bytes of each compressed format, and its decompressor.
COMPRESSED = {
    b"\x1f\x8b": ("gzip", lambda: zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)),
    b"BZh": ("bz2", bz2.BZ2Decompressor),
    b"\xfd7zXZ\x00": ("xz", lzma.LZMADecompressor),
    b"\x28\xb5\x2f\xfd": ("zstd", zstd_decompressor),
}
# What the file names of compressed files end with.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zstd")
# Formats recognised by the end of a file's name (after any compression
# suffix); any other name is LIBSVM.
FORMAT_SUFFIXES = {
    ".csv": "csv",
    ".tsv": "csv",  # tab-separated (see default_delimiter)
    ".vw": "vw",
    ".parquet": "parquet",
    ".pq": "parquet",
}
DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError)
UTF8_BOM = b"\xef\xbb\xbf"

# Held by a thread while it imports scikit-learn (or what imports it): two
# threads importing it at once, the command line's main thread and a reader's,
# can deadlock on its circular imports (Python then raises an ImportError).
IMPORT_LOCK = threading.RLock()


class DataError(ValueError):
    """A problem with an input or model file, reported as ``path:line: message``."""

    def __init__(self, path, line, message):
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self):
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class DamagedData(ValueError):
    """Data that its format (a compression, a text file's encoding) cannot
    read: raised by ByteSource without the file's name, which its caller adds."""


def zstd_errors():
    """The exception types of the zstd decompressors that are installed."""
    errors = []
    for module, name in (("compression.zstd", "ZstdError"), ("zstandard", "ZstdError")):
        loaded = sys.modules.get(module)  # imported by zstd_decompressor, if at all
        if loaded is not None and hasattr(loaded, name):
            errors.append(getattr(loaded, name))
    return tuple(errors)


def data_format(path, requested="auto"):
    """``"csv"``, ``"vw"``, ``"parquet"`` or ``"libsvm"``: as requested, else
    from the file name."""
    if requested != "auto":
        return requested
    return named_format(path) or "libsvm"


def named_format(path):
    """The format the end of ``path``'s name says (see FORMAT_SUFFIXES), or None."""
    if path == "-":
        return None
    name = uncompressed_name(path)
    for suffix, kind in FORMAT_SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return None


def uncompressed_name(path):
    """The file name of ``path`` in lower case, without a compression suffix."""
    name = os.fspath(path).lower()
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def default_delimiter(path):
    """The delimiter of CSV fields in the file at ``path``: a tab in a
    ``.tsv`` file (compressed or not), else (a file object too) a comma."""
    if hasattr(path, "read"):
        return ","
    return "\t" if uncompressed_name(path).endswith(".tsv") else ","


def source_name(path):
    """How errors name an input: its path, ``-``, or a file object's name."""
    if hasattr(path, "read"):
        name = getattr(path, "name", None)
        return name if isinstance(name, str) else f"<{type(path).__name__}>"
    return os.fspath(path) if not isinstance(path, str) else path


def is_regular_file(path):
    """Whether ``path`` is a regular file (a stream that could be read again)."""
    if path == "-" or hasattr(path, "read"):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class ByteSource:
    """An input opened once: a path, ``-`` (standard input) or a file object
    (see :func:`binary_file`), decompressed if needed.

    ``read()`` gives the next block of decompressed bytes (``b""`` at the
    end); ``bytes_read`` and ``size`` (None for a stream) tell how far the
    raw input has been read, for a progress display. A file object is read
    from where it is, and left open.
    """

    def __init__(self, path):
        self.path = source_name(path)
        self.owned = not hasattr(path, "read") and path != "-"
        if hasattr(path, "read"):
            self.file = binary_file(path)
            self.size = None
        elif path == "-":
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
        self.compression = None
        self.finished = False
        try:
            head = self._read_raw()
        except DamagedData as error:
            raise DataError(self.path, None, str(error)) from None
        for magic, (name, make) in COMPRESSED.items():
            if head.startswith(magic):
                self.compression, self.make_decompressor = name, make
                self.decompressor = make()
                if self.decompressor is None:
                    self.close()
                    raise DataError(
                        self.path,
                        None,
                        f"{name}-compressed: reading it needs the zstandard package "
                        "(pip install 'skftrl[readers]')",
                    )
        try:
            self.pending = self._decompress(head) if self.decompressor else head
        except DamagedData as error:  # (later blocks' errors name their line: line_blocks)
            self.close()
            raise DataError(self.path, None, str(error)) from None
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
        (gzip files made by concatenation, pbzip2, xz -T). Zero bytes after a
        gzip stream are skipped, as ``gzip -d`` skips them (the padding of a
        tape or a block device). DamagedData where the data is not what its
        format says."""
        out = []
        while data:
            if self.decompressor.eof:
                if self.compression == "gzip":
                    data = data.lstrip(b"\0")
                    if not data:
                        break
                self.decompressor = self.make_decompressor()
            try:
                out.append(self.decompressor.decompress(data))
            except (*DECOMPRESSION_ERRORS, *zstd_errors()) as error:
                raise DamagedData(f"the {self.compression} data is damaged ({error})") from None
            if not self.decompressor.eof:
                break
            data = self.decompressor.unused_data
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
                    raise DamagedData(
                        f"the {self.compression} data is damaged: it ends before its "
                        "end-of-stream marker (a file cut short?)"
                    )
                return b""
            data = self._decompress(raw) if self.decompressor else raw
            if data:
                return data
        return b""

    def close(self):
        if self.owned:
            self.file.close()


def binary_file(file):
    """A file object's binary stream: itself, or a text file's text as UTF-8."""
    if isinstance(file, io.TextIOBase):
        return TextAsBytes(file)
    return file


class TextAsBytes:
    """The text of a file object opened in text mode, from where it is, as
    UTF-8 bytes. Its binary buffer would not do: a text layer reads ahead
    (a ``readline()`` takes a block), and what it holds would be lost."""

    def __init__(self, text):
        self.text = text
        self.encoding = getattr(text, "encoding", None) or "utf-8"

    def read(self, size):
        # A character is 4 bytes at most: blocks stay within size * 4.
        try:
            data = self.text.read(size)
        except UnicodeDecodeError as error:
            raise DamagedData(
                f"not {self.encoding} text ({error}): open the file in binary mode ('rb'), "
                "or in its encoding"
            ) from None
        if not isinstance(data, str):
            raise TypeError(f"{type(self.text).__name__}.read() gave {type(data).__name__}")
        # Lone surrogates: bytes that errors="surrogateescape" kept, as they were.
        return data.encode("utf-8", errors="surrogateescape")


def last_line_end(data, stop=None):
    """Where the last line of CSV bytes that ends before ``stop`` (by default,
    their end; else the position of a byte that is not a newline) ends, as
    the csv module ends lines: after a newline, or a carriage return alone
    (0 if none). A carriage return that ends the bytes is not taken for one:
    a newline may follow it in the next bytes."""
    stop = len(data) if stop is None else stop
    newline = data.rfind(b"\n", 0, stop) + 1
    # A carriage return after that newline is followed by neither a newline
    # nor (short of the last byte) the end of the bytes.
    return data.rfind(b"\r", newline, min(stop, len(data) - 1)) + 1 or newline


def next_line_end(data, start=0):
    """The position after the first line end of bytes at or after ``start``,
    as the csv module ends lines (see :func:`csv_line_ends`); the end of the
    bytes if none."""
    newline = data.find(b"\n", start)
    stop = len(data) if newline < 0 else newline
    alone = data.find(b"\r", start, stop)  # a carriage return before it
    if alone >= 0 and alone + 1 != newline:
        return alone + 1
    return stop if newline < 0 else newline + 1


def csv_line_ends(data, alone=None):
    """The positions after each line end of bytes, as the csv module ends
    lines: a newline, a carriage return and a newline, a carriage return
    alone (one ending the bytes too); ``alone`` is the number of carriage
    returns alone (:func:`line_end_counts`), if known."""
    array = np.frombuffer(data, dtype=np.uint8)
    newlines = positions_of(array, NEWLINE) + 1
    if alone is None:
        alone = line_end_counts(data)[1]
    if not alone:
        return newlines
    returns = np.flatnonzero(array == CARRIAGE_RETURN)
    following = array[np.minimum(returns + 1, len(array) - 1)]
    bare = returns[(returns == len(array) - 1) | (following != NEWLINE)] + 1
    return np.sort(np.concatenate([newlines, bare]))


def csv_line_count(data):
    """The number of line ends of bytes, as :func:`csv_line_ends` finds them."""
    return sum(line_end_counts(data))


# The bytes last counted by line_end_counts, and their counts: a CSV
# block's are wanted twice, for its rows' lines and for the next block's
# first line (a tuple, replaced whole: threads may count at once).
last_counted = (b"", (0, 0))


def line_end_counts(data):
    """``(newlines, alone)``: the number of newlines of bytes, and of carriage
    returns alone (not followed by a newline; one ending the bytes too)."""
    global last_counted
    counted, counts = last_counted
    if counted is data:
        return counts
    if b"\r" not in data:  # one fast scan, as most blocks have none
        counts = newline_count(data), 0
    else:
        counts = carriage_return_counts(data)
    last_counted = (data, counts)
    return counts


def carriage_return_counts(data):
    """:func:`line_end_counts` of bytes that hold a carriage return."""
    array = np.frombuffer(data, dtype=np.uint8)
    newlines = alone = 0
    for start in range(0, len(array), STEP):
        part = array[start : start + STEP + 1]  # and the next part's first byte
        is_newline = part == NEWLINE
        returns = part[:STEP] == CARRIAGE_RETURN
        # Newlines, and carriage returns not followed by one (True > False).
        newlines += np.count_nonzero(is_newline[:STEP])
        alone += np.count_nonzero(returns[: len(part) - 1] > is_newline[1:])
    return int(newlines), int(alone) + bool(array[-1] == CARRIAGE_RETURN)


def positions_of(array, byte):
    """The positions of ``byte`` in an array of bytes."""
    parts = [
        np.flatnonzero(array[start : start + STEP] == byte) + start
        for start in range(0, len(array), STEP)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


def csv_quotes(data, delimiter=b","):
    """The quotes of CSV bytes that start a row, read as the csv module reads
    them: ``(starts, inside, opened)``, where ``starts`` are the positions of
    quotes that may open or close a quoted field, ``inside[k]`` tells
    whether the bytes before ``starts[k]`` (and after the quote before) are
    inside a quoted field, ``inside[-1]`` those after the last (``inside``
    is None when every quote opens or closes one in turn: the bytes before
    ``starts[k]`` are inside when ``k`` is odd), and ``opened`` is where the
    quoted field open at the end opens (None if none); see :func:`quoted_at`.

    A quote opens a quoted field at the start of a field (of the bytes, after
    a line end or the ``delimiter``, its UTF-8 bytes), and elsewhere is text;
    inside the field, a doubled quote is a quote, and the next one closes it.
    """
    array = np.frombuffer(data, dtype=np.uint8)
    quotes = positions_of(array, QUOTE)
    if not quotes.size:
        return quotes, np.zeros(1, dtype=bool), None
    if len(delimiter) == 1:
        # Counting quotes reads them exactly when every quote it takes for
        # an opening one starts a field or follows a quote (the second of a
        # doubled quote, or of a field's closing and reopening with no byte
        # between): each quote then opens or closes in turn.
        follows = FIELD_STARTS_OR_QUOTE[delimiter[0]][array[quotes[::2] - 1]]
        follows[0] = quotes[0] == 0 or follows[0]
        if follows.all():
            opened = None
            if len(quotes) % 2:  # the last opening quote that follows no quote
                openers = quotes[::2]
                real = array[openers - 1] != QUOTE
                real[0] = True
                opened = int(openers[real][-1])
            return quotes, None, opened
    return exact_quotes(array, quotes, delimiter)


def exact_quotes(array, quotes, delimiter):
    """:func:`csv_quotes` of bytes whose quotes are not all read by counting.

    A run of an even number of quotes changes nothing (an empty quoted field,
    doubled quotes, or text), and one of an odd number closes a quoted field
    that is open, or opens one at the start of a field: the state is found
    from the runs alone, without a loop over the bytes.
    """
    first = np.ones(len(quotes), dtype=bool)
    first[1:] = np.diff(quotes) != 1
    (heads,) = np.nonzero(first)
    lengths = np.diff(np.append(heads, len(quotes)))
    starts = quotes[heads[lengths % 2 == 1]]
    if not starts.size:
        return starts, np.zeros(1, dtype=bool), None
    before = array[np.maximum(starts - 1, 0)]
    opens = (starts == 0) | (before == NEWLINE) | (before == CARRIAGE_RETURN)
    after_delimiter = starts >= len(delimiter)
    for offset, byte in enumerate(delimiter):
        after_delimiter &= array[np.maximum(starts - len(delimiter) + offset, 0)] == byte
    opens |= after_delimiter
    # Inside after run k: run k opens a field and the bytes before it are
    # outside. Outside after a run that opens none (a closing or a text
    # quote), the state then alternates along the runs that would open one.
    runs = np.arange(len(starts) + 1)
    stretch = np.zeros(len(starts) + 1, dtype=np.intp)
    stretch[1:][~opens] = runs[1:][~opens]
    inside = (runs - np.maximum.accumulate(stretch)) % 2 == 1
    return starts, inside, int(starts[-1]) if inside[-1] else None


def field_starts_or_quote(delimiter):
    """Which bytes a quote that counting takes for an opening one may follow:
    a line end, ``delimiter`` (a byte) or a quote."""
    table = np.zeros(256, dtype=bool)
    table[[NEWLINE, CARRIAGE_RETURN, QUOTE, delimiter]] = True
    return table


# field_starts_or_quote of each byte.
FIELD_STARTS_OR_QUOTE = [field_starts_or_quote(byte) for byte in range(256)]


def quoted_at(quotes, positions):
    """Whether the bytes at ``positions`` (none a quote) are inside a quoted
    field, by the ``quotes`` of :func:`csv_quotes`."""
    starts, inside, _ = quotes
    runs = np.searchsorted(starts, positions)
    return runs % 2 == 1 if inside is None else inside[runs]


def row_ending(data, line_ends, delimiter=b","):
    """Which of the :func:`csv_line_ends` of CSV bytes (that start a row)
    end a row: each outside quoted fields (see :func:`csv_quotes`)."""
    if b'"' not in data:
        return np.ones(len(line_ends), dtype=bool)
    return ~quoted_at(csv_quotes(data, delimiter), line_ends - 1)


def last_row_end(data, delimiter=b","):
    """``(end, opened)`` of CSV bytes that start a row: where the last whole
    row ends (0 if none; see :func:`last_line_end`), and where a quoted
    field still open at the end opens (None if none)."""
    quotes = csv_quotes(data, delimiter)
    starts = quotes[0]
    end = last_line_end(data)
    while end and quoted_at(quotes, end - 1):
        # The line end is inside a quoted field: look before the quote
        # before it (the one that opens the field, or a quote inside it).
        end = last_line_end(data, int(starts[np.searchsorted(starts, end - 1) - 1]))
    return end, quotes[2]


def unclosed_quote(path, line, at_end):
    """The DataError of a quoted field that opens on ``line`` and is not
    closed by the end of the input (``at_end``), or is longer than a field
    is read."""
    if at_end:
        return DataError(
            path,
            line,
            "unterminated quote: the quoted field that opens on this line is never closed",
        )
    return DataError(
        path,
        line,
        f"unterminated quote? The quoted field that opens on this line is not "
        f"closed within {LONGEST_QUOTED_FIELD:,} bytes, the most a field holds",
    )


def line_blocks(source, quoted=False, delimiter=",", count_lines=None):
    """Blocks of whole lines of a :class:`ByteSource`, and the number of each
    block's first line.

    With ``quoted`` (CSV, its fields separated by ``delimiter``), lines end
    and quotes are read as the csv module reads them: a line ends at a
    newline or a carriage return alone too, and a line end inside a quoted
    field ends no row (see :func:`csv_quotes`). A quoted field that is never
    closed is a DataError at the line where it opens, raised at the end of
    the input or once the field is longer than a field can be (rather than
    read as one field to the end of the input). ``count_lines`` (a block's
    lines), given, replaces the count of newlines (or of CSV lines).
    """
    separator = delimiter.encode()
    count_lines = count_lines or (csv_line_count if quoted else newline_count)
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
        # A quote is looked for first (one fast scan): most CSV files have
        # none, and their blocks are cut as other text, in one copy.
        if quoted and (b'"' in data or b'"' in carry):
            data = carry + data if carry else data
            end, opened = last_row_end(data, separator)
            if opened is not None and len(data) - opened > LONGEST_QUOTED_FIELD:
                raise unclosed_quote(source.path, line + csv_line_count(data[:opened]), False)
            block, carry = data[:end], data[end:]
        else:  # the carry (no line end) and the data to its last line end, one copy
            end = last_line_end(data) if quoted else data.rfind(b"\n") + 1
            block = b"".join((carry, memoryview(data)[:end])) if end else b""
            carry = data[end:] if end else carry + data
        if block:
            yield line, block
            line += count_lines(block)
    if carry:
        if quoted:
            opened = csv_quotes(carry, separator)[2]
            if opened is not None:
                raise unclosed_quote(source.path, line + csv_line_count(carry[:opened]), True)
        yield line, carry


def newline_count(data):
    """The number of newlines of bytes."""
    # numpy counts bytes about twice as fast as bytes.count.
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == NEWLINE))


def read_ahead(items, depth=READ_AHEAD, weigh=None):
    """The items of a generator, produced ahead by a background thread (a
    :class:`ReadAhead` started at the first item asked for)."""
    ahead = ReadAhead(items, depth, weigh)
    try:
        yield from ahead
    finally:
        ahead.close()


def read_on_demand(items, depth=READ_AHEAD, weigh=None):
    """The items of a generator, produced in the consumer's thread as each is
    asked for: :func:`read_ahead` without a thread (the readers' ``read_ahead=False``)."""
    yield from items


class ReadAhead:
    """The items of a generator, produced by a background thread ahead of
    their use, from the moment it is made: at most ``depth`` items, or with
    ``weigh`` (an item's size), items weighing at most ``depth`` in all (and
    one item at least, whatever it weighs).

    An exception of the generator is raised by the iteration, at the item
    where it happened. :meth:`close` (also when the consumer stops early: an
    error, an interruption) stops the thread after its current item and
    closes the generator, waiting for that at most a second.
    """

    END = object()

    def __init__(self, items, depth=READ_AHEAD, weigh=None):
        self.items, self.depth = items, depth
        self.weigh = weigh or (lambda item: 1)
        self.ready = collections.deque()  # (item, error, weight), in order
        self.held = 0  # what the ready items weigh
        self.changed = threading.Condition()
        self.stopped = False
        self.thread = threading.Thread(target=self.produce, name="skftrl-read-ahead", daemon=True)
        self.thread.start()

    def put(self, item, error=None):
        """Wait for room, then make ``item`` ready; False if the consumer has stopped."""
        weight = 0 if item is self.END else self.weigh(item)
        with self.changed:
            while self.ready and self.held + weight > self.depth and not self.stopped:
                self.changed.wait()
            if self.stopped:
                return False
            self.ready.append((item, error, weight))
            self.held += weight
            self.changed.notify_all()
            return True

    def produce(self):
        try:
            for item in self.items:
                if not self.put(item):
                    return
            self.put(self.END)
        except BaseException as error:
            self.put(self.END, error)
        finally:
            self.items.close()

    def __iter__(self):
        while True:
            with self.changed:
                while not self.ready:
                    self.changed.wait()
                item, error, weight = self.ready.popleft()
                self.held -= weight
                self.changed.notify_all()
            if error is not None:
                self.close()
                raise error
            if item is self.END:
                return
            yield item

    def close(self):
        with self.changed:
            self.stopped = True
            self.changed.notify_all()
        # Not joined without a limit: a thread waiting to read a pipe or a
        # terminal cannot be stopped (an interrupted `skftrl train -` would
        # hang). It is a daemon, and ends at its next read or with the process.
        self.thread.join(timeout=1.0)
