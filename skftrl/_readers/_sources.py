"""Byte sources: an input opened once, read in blocks of whole lines.

An input is a path, or ``-`` for standard input; a pipe or a FIFO works as a
regular file does. It is opened once and read from start to end in blocks
(:func:`line_blocks`): plain text, or gzip, bz2 or xz compressed (recognised
by their first bytes, not by the file name), with a UTF-8 byte-order mark
skipped. Nothing is read twice, so nothing is lost on a stream that cannot
be rewound. Only the standard library is imported here.
"""

import bz2
import collections
import lzma
import os
import stat
import sys
import threading
import zlib

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

# Held by a thread while it imports scikit-learn (or what imports it): two
# threads importing it at once, the command line's main thread and a reader's,
# can deadlock on its circular imports (Python then raises an ImportError).
IMPORT_LOCK = threading.RLock()


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


def data_format(path, requested="auto"):
    """``"csv"`` or ``"libsvm"``: as requested, else from the file name."""
    if requested != "auto":
        return requested
    name = os.fspath(path).lower()
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return "csv" if name.endswith(".csv") else "libsvm"


def is_regular_file(path):
    """Whether ``path`` is a regular file (a stream that could be read again)."""
    if path == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class ByteSource:
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
    """Blocks of whole lines of a :class:`ByteSource`, and the number of each
    block's first line."""
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


def read_ahead(items, depth=READ_AHEAD, weigh=None):
    """The items of a generator, produced ahead by a background thread (a
    :class:`ReadAhead` started at the first item asked for)."""
    ahead = ReadAhead(items, depth, weigh)
    try:
        yield from ahead
    finally:
        ahead.close()


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
