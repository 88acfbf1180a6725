"""A LIBSVM training file read from the start of ``skftrl train``, before scikit-learn.

Importing scikit-learn and the estimators takes most of a second; the file
need not wait for it. :func:`start_reading` is called by :func:`~skftrl._cli.main`
right after the options are parsed, with only numpy, scipy.sparse and the
compiled parser imported: a thread parses the file into chunks (indices as
written, whatever the model's columns will be) a few blocks ahead,
and, when the run will need a first pass, a second thread runs the compiled
scan of the labels and indices (:func:`~skftrl._readers._libsvm.quick_scan_libsvm`).
Both release the GIL in their compiled loops, so they run beside the imports
and, later, beside the learning. The training takes the pieces from here,
in file order: the file is opened and parsed once, and a stream loses no
row.
"""

import threading
import time

from .._readers._libsvm import compiled_plain_parser, libsvm_row_chunks, quick_scan_libsvm
from .._readers._sources import ReadAhead, data_format, is_regular_file, named_format


class EarlyLibsvm:
    """A LIBSVM training file being parsed (and scanned, if ``scan``) in threads."""

    def __init__(self, path, chunk_size, scan, collect_labels):
        self.path = path
        self.scan_result = self.scan_error = self.scan_seconds = None
        self.scanner = None
        self.stop_scan = threading.Event()
        # numba imported here, in one thread: two threads importing a package
        # at once can deadlock on its circular imports.
        compiled_plain_parser()
        if scan:
            self.scanner = threading.Thread(
                target=self.run_scan, args=(collect_labels,), name="skftrl-scan", daemon=True
            )
            self.scanner.start()
        self.chunks_ahead = libsvm_row_chunks(path, chunk_size, start=ReadAhead)
        self.taken = False

    def run_scan(self, collect_labels):
        # The thread's CPU time: it runs beside the imports and the parser,
        # which its wall time would count too.
        began = time.thread_time()
        try:
            self.scan_result = quick_scan_libsvm(self.path, collect_labels, self.stop_scan)
        except BaseException as error:  # raised where the result is asked for
            self.scan_error = error
        self.scan_seconds = time.thread_time() - began

    def scan(self):
        """The compiled scan's :class:`~skftrl._readers._libsvm.LibsvmScan`, or
        None when it was not started or left the file to the parser's scan."""
        if self.scanner is None:
            return None
        self.scanner.join()
        if self.scan_error is not None:
            raise self.scan_error
        return self.scan_result

    def chunks(self):
        """The file's chunks, indices as written (taken once a run)."""
        if self.taken:
            raise RuntimeError("the training file's chunks are taken once")
        self.taken = True
        return iter(self.chunks_ahead)

    def close(self):
        # A run that ends before the scan's result is asked for (an error, an
        # interruption) stops the scan too, after its current block (or the
        # compile of a first run): it would read the file on, in the
        # background of a process that has moved on (main() may be called
        # again in one process).
        self.stop_scan.set()
        if self.scanner is not None:
            self.scanner.join()
        self.chunks_ahead.close()


def start_reading(args):
    """An :class:`EarlyLibsvm` for a ``train`` run on LIBSVM data, else None."""
    if data_format(args.data, args.format) != "libsvm":
        return None
    if args.initial_model is not None and not is_regular_file(args.data):
        if args.format == "auto" and named_format(args.data) is None:
            return None  # the continued model's format, known once it is loaded
    known_width = args.n_features is not None or args.hash_bits is not None
    collect_labels = args.task == "classify" and args.classes is None
    scan = args.initial_model is None and (collect_labels or not known_width)
    if scan and not is_regular_file(args.data):
        return None  # a stream that needs a first pass: refused before it is read
    return EarlyLibsvm(args.data, args.chunk_size, scan, collect_labels)
