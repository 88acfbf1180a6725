"""The ``skftrl`` command line: ``demo``, ``data``, ``train``, ``test``, ``predict``, ``inspect``.

Bad input ends with one line on stderr, ``skftrl: error: <file>:<line>:
<what>``, and exit code 1; bad options with exit code 2, as argparse does.

The modules, in the order a run uses them:

- :mod:`._parser`: the options (standard library only, so that ``--help``
  and ``--version`` answer at once), and :mod:`._arguments`: a command line
  read into them (positional files, Vowpal Wabbit's options);
- :mod:`._reading`: a LIBSVM training file parsed (and scanned) in threads
  from the start, while scikit-learn is imported;
- one module a command: :mod:`._demo`, :mod:`._data`, :mod:`._train` (with
  the input it reads in :mod:`._input`, its passes in :mod:`._passes` and the
  holdout in :mod:`._holdout`), :mod:`._predict` (``test`` and ``predict``) and
  :mod:`._inspect`, each imported only when its command runs;
- :mod:`._estimators`: the estimators as the commands make and use them;
- :mod:`._model_files`: saving and loading model files;
- :mod:`._progress`: the live progress display.

Reading files is the work of :mod:`skftrl._readers`.
"""

import atexit
import contextlib
import importlib.util
import os
import signal
import sys
import threading
import warnings

from ._arguments import parse_arguments, resolve_files
from ._parser import UsageError, build_parser

# Imported by scikit-learn at start-up but used by no command, and slow to
# import: executed on its first use only.
DEFERRED_MODULES = ("scipy.stats",)


class LeanImports:
    """A finder that makes ``import pandas`` raise ImportError and gives each of
    :data:`DEFERRED_MODULES` the standard library's lazy loader, which executes
    the module when one of its attributes is first read (see lean_imports)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name not in DEFERRED_MODULES:
            return None
        for finder in sys.meta_path:
            find_spec = None if finder is self else getattr(finder, "find_spec", None)
            spec = None if find_spec is None else find_spec(name, path, target)
            if spec is None:
                continue
            if not hasattr(spec.loader, "exec_module"):  # LazyLoader needs it: import as usual
                return None
            spec.loader = importlib.util.LazyLoader(spec.loader)
            return spec
        return None


@contextlib.contextmanager
def lean_imports():
    """A command run without pandas, and with :data:`DEFERRED_MODULES` executed
    only if used, when neither pandas nor scikit-learn is imported yet.

    scikit-learn imports pandas at start-up when it is installed, and pyarrow
    at its first conversion of an array to numpy, for DataFrames the command
    line never makes: a sizeable part of the command's start-up time and of
    its memory (benchmarks/bench_cli.py --profile measures it). Both take an
    ImportError as pandas being absent. A finder, rather than ``None`` in
    ``sys.modules``: pyarrow's compiled import reads that ``None`` as the
    module. pandas is importable again when the command ends (pyarrow, in
    the same process, goes on without it).
    """
    if "sklearn" in sys.modules or "pandas" in sys.modules:
        yield
        return
    finder = LeanImports()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


# Python modules of the compiler, whose callbacks from compiled LLVM code
# cannot be unwound by an exception: raised there, it is lost and the process
# crashes (a segmentation fault) instead of ending cleanly.
COMPILER_MODULES = ("llvmlite", "numba")


def interrupt(signum, frame):
    """SIGTERM (and Ctrl-C) end the command: temporary files are removed.

    A signal that arrives while numba compiles is sent again 50 ms later,
    until it arrives outside the compiler."""
    if inside(frame, COMPILER_MODULES):
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    raise KeyboardInterrupt(signum)


def inside(frame, modules):
    """Whether ``frame`` or a frame that called it runs code of ``modules``."""
    while frame is not None:
        if frame.f_globals.get("__name__", "").split(".")[0] in modules:
            return True
        frame = frame.f_back
    return False


def main(argv=None, out=None):
    """Entry point of the ``skftrl`` command; returns the exit code."""
    out = sys.stdout if out is None else out
    args = parse_arguments(build_parser(), sys.argv[1:] if argv is None else list(argv))
    # pyarrow's default allocator keeps the memory of each batch read for the
    # next; the C library's gives it back (a lower peak): taken when pyarrow
    # is imported, which in a command's process is after this.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from .._readers._sources import IMPORT_LOCK, DataError

    module, function = args.run.split(":")
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:  # signal handlers can only be set there
        previous_handlers = {
            signum: signal.signal(signum, interrupt) for signum in (signal.SIGTERM, signal.SIGINT)
        }
    args.early = None
    try:
        resolve_files(args)
        if args.command == "train":  # read while scikit-learn is imported
            from ._reading import start_reading

            args.early = start_reading(args)
        # The command's module, imported only now: numpy, scikit-learn and the
        # estimators come with it.
        with lean_imports():
            with IMPORT_LOCK:
                run = getattr(__import__(f"{__name__}.{module}", fromlist=[function]), function)
            with warnings.catch_warnings():
                # The command line gives a model its columns by position, never
                # with names: a model fitted on a DataFrame in Python warns of it.
                warnings.filterwarnings(
                    "ignore", "X does not have valid feature names", UserWarning
                )
                return run(args, out)
    except UsageError as error:  # options a user typed: one line, as argparse
        print(f"skftrl: error: {error}", file=sys.stderr)
        return 2
    except DataError as error:
        print(f"skftrl: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `skftrl predict ... | head`: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        print(f"skftrl: error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as error:  # Ctrl-C, or SIGTERM through interrupt()
        print("skftrl: interrupted", file=sys.stderr)
        signum = error.args[0] if error.args else signal.SIGINT
        return 128 + signum
    finally:
        if args.early is not None:
            args.early.close()
        if in_main_thread:
            for signum, handler in previous_handlers.items():
                signal.signal(signum, handler)


def command():
    """The ``skftrl`` executable: :func:`main`, then the process ends without
    Python's teardown of its modules.

    That teardown frees the objects of numpy, scipy, scikit-learn and numba
    one by one, a large part of a short command's time, for memory the
    operating system takes back at once. By then the command has closed its
    files; its output is flushed and the exit handlers run (those of the
    standard library's temporary files and logging among them) as at any
    exit. An exception main does not handle ends the process as usual."""
    code = main() or 0
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone, a full disk, closed
            code = code or 1
    atexit._run_exitfuncs()
    os._exit(code)
