"""Model files: the fitted estimator, with how it reads files.

A model file is the fitted estimator (joblib, or skops for a ``.skops``
path), with three attributes for the command line: ``input_spec_`` (how it
reads files: a dict, see :mod:`skftrl._readers._spec`),
``hashed_feature_names_`` (the names of hashed CSV and Parquet features) and
``training_log_`` (one entry a training run). The dictionary that skftrl
0.1.0 saved is still read. A file is written only if everything succeeds
(:func:`atomic_output`).
"""

import contextlib
import io
import os
import pickle
import stat
import tempfile

import joblib
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._classifier import FTRLClassifier
from .._fm import FMClassifier, FMRegressor
from .._readers._sources import DataError
from .._readers._spec import LibsvmSpec, spec_from_dict
from .._regressor import FTRLRegressor
from ._parser import UsageError

# Identifies the dictionary that `skftrl train` saved before models were
# saved as estimators (skftrl 0.1.0); such files are still read.
LEGACY_MODEL_KIND = "skftrl model"


class HashedNames(dict):
    """``hashed_feature_names_``, ``{column: [names]}``: a dict that is pickled
    as one bytes object, which pickle's C code makes. joblib pickles with
    Python's own pickler, which took several times longer over a model's
    thousands of names than over its arrays. Model files name
    :func:`hashed_names`, which makes it again, where it is: moving it breaks
    them."""

    def __reduce__(self):
        return hashed_names, (pickle.dumps(dict(self), protocol=pickle.HIGHEST_PROTOCOL),)


def hashed_names(pickled):
    """The :class:`HashedNames` that ``pickled`` holds (pickle calls it)."""
    return HashedNames(pickle.loads(pickled))


def save_model(estimator, path, file):
    """Write the estimator: skops for a ``.skops`` path, else joblib."""
    if os.fspath(path).endswith(".skops"):
        try:
            import skops.io as sio
        except ImportError:
            raise UsageError(
                f"{path}: saving a .skops model needs skops (pip install 'skftrl[skops]')"
            ) from None
        # The names as a plain dict: a skops file is loaded trusting the types
        # its reader names, and skftrl's estimators should be all it holds.
        names = getattr(estimator, "hashed_feature_names_", None)
        if isinstance(names, HashedNames):
            estimator.hashed_feature_names_ = dict(names)
        try:
            file.write(sio.dumps(estimator))
        finally:
            if isinstance(names, HashedNames):
                estimator.hashed_feature_names_ = names
    elif file.seekable():
        joblib.dump(estimator, file)
    else:  # a FIFO, a pipe: joblib asks where it is in the file
        buffer = io.BytesIO()
        joblib.dump(estimator, buffer)
        file.write(buffer.getbuffer())


def load_model(path, zero_based=False):
    """A fitted FTRLClassifier or FTRLRegressor (or their factorization
    machines, FMClassifier and FMRegressor) from a model file, and how it
    reads files (see :func:`model_input_spec`): ``(estimator, spec)``.

    The file is a joblib pickle (as ``skftrl train`` or ``joblib.dump``
    write it), a skops file (zip; only skftrl's estimator types are trusted),
    or the dictionary of skftrl 0.1.0. Like any pickle, a joblib file can run
    code when loaded: load only files you trust.
    """
    if not os.path.exists(path):
        raise DataError(path, None, "No such file or directory")
    try:
        with open(path, "rb") as file:
            is_zip = file.read(4) == b"PK\x03\x04"
        if is_zip:
            import skops.io as sio

            trusted = [
                f"{cls.__module__}.{cls.__qualname__}"
                for cls in (FTRLClassifier, FTRLRegressor, FMClassifier, FMRegressor)
            ]
            untrusted = set(sio.get_untrusted_types(file=path)) - set(trusted)
            if untrusted:
                raise DataError(
                    path,
                    None,
                    f"the skops file holds types that are not skftrl's: {sorted(untrusted)}",
                )
            model = sio.load(path, trusted=trusted)
        else:
            model = joblib.load(path)
    except DataError:
        raise
    except Exception as error:  # a corrupt file fails in many ways
        raise DataError(path, None, unreadable_model_message(path, error)) from None
    if isinstance(model, dict) and model.get("kind") == LEGACY_MODEL_KIND:
        model = from_legacy_dict(path, model)
    if not isinstance(model, (FTRLClassifier, FTRLRegressor)):
        raise DataError(
            path,
            None,
            f"not a skftrl model file: it holds a {type(model).__name__}, not a fitted "
            "FTRLClassifier or FTRLRegressor",
        )
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise DataError(
            path, None, f"the {type(model).__name__} in this file is not fitted"
        ) from None
    return model, model_input_spec(path, model, zero_based)


def unreadable_model_message(path, error):
    """Why the model file ``path`` could not be loaded (``error``), saying so
    when it holds text: data given where the model goes."""
    start = b""
    if os.path.isfile(path):  # a FIFO cannot be read again
        with open(path, "rb") as file:
            start = file.read(200)
    try:
        first_line = start.decode("utf-8").splitlines()[0] if start else ""
    except UnicodeDecodeError:
        first_line = ""
    if first_line.isprintable() and first_line:
        return (
            f"not a skftrl model file: it holds text ({first_line[:60]!r}...), data "
            "perhaps: the model is the file after the data, or --model"
        )
    return f"not a readable skftrl model file ({type(error).__name__}: {error})"


def from_legacy_dict(path, saved):
    """The estimator of a skftrl 0.1.0 model file, with its CLI attributes."""
    missing = [key for key in ("estimator", "input", "training") if key not in saved]
    if missing:
        raise DataError(
            path, None, f"a damaged skftrl model file: no {', '.join(map(repr, missing))} in it"
        )
    estimator = saved["estimator"]
    estimator.input_spec_ = dict(saved["input"], hash_bits=saved["input"].get("hash_bits"))
    estimator.hashed_feature_names_ = saved.get("feature_names")
    estimator.training_log_ = [saved["training"]]
    return estimator


def model_input_spec(path, estimator, zero_based=False):
    """How the model of the file ``path`` reads files (a
    :class:`~skftrl._readers._spec.LibsvmSpec` or
    :class:`~skftrl._readers._spec.CsvSpec`): from its ``input_spec_``, or for a
    model made in Python (no ``input_spec_``), LIBSVM ``n_features_in_`` wide,
    indices from 1 unless ``zero_based``."""
    saved = getattr(estimator, "input_spec_", None)
    if saved is not None:
        try:
            return spec_from_dict(saved)
        except (KeyError, TypeError) as error:
            raise DataError(
                path, None, f"a damaged skftrl model file: its input_spec_ is {saved!r} ({error})"
            ) from None
    return LibsvmSpec(n_features=int(estimator.n_features_in_), zero_based=bool(zero_based))


def output_target(path):
    """Where writing ``path`` goes: ``(target, replace)``.

    A path that names no file, or a regular file, is written by replacing its
    target (the file a symlink leads to, through every link: the links stay).
    Anything else is written through, in place: a device (``/dev/null``,
    ``/dev/stdout`` on a terminal), a FIFO or a pipe, and a path naming an
    open file descriptor (``/dev/stdout``, ``/dev/fd/N``), whose file the
    shell opened. A directory is refused.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None  # a new file, or a symlink to one
    except OSError as error:  # a symlink loop, a directory not searchable
        raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise DataError(path, None, "cannot write: Is a directory")
    if info is not None and (not stat.S_ISREG(info.st_mode) or names_descriptor(path)):
        return path, False
    return os.path.realpath(path), True


def names_descriptor(path):
    """Whether ``path`` leads, through its symlinks, to an entry of a
    process's table of descriptors: ``/proc/<pid>/fd/N`` on Linux, where
    ``/dev/stdout`` and ``/dev/fd`` lead, or ``/dev/fd/N`` elsewhere."""
    for _ in range(40):  # the kernel's limit on a chain of links
        directory = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        if directory == "/dev/fd" or (
            directory.startswith("/proc/") and os.path.basename(directory) == "fd"
        ):
            return True
        if not os.path.islink(path):
            return False
        target = os.readlink(path)
        path = os.path.join(os.path.dirname(os.path.abspath(path)), target)
    return False


@contextlib.contextmanager
def atomic_output(path, mode="wb"):
    """A file that appears at ``path`` only if the ``with`` block succeeds.

    It is written to a temporary file in the directory of ``path``'s target
    (see :func:`output_target`: a symlink's target, never the link), then
    renamed over it (atomic on POSIX and Windows), with the permissions of
    the file it replaces (of a new file, when there is none); on any error,
    or an interruption, the temporary file is removed and ``path`` is
    untouched. A device, a FIFO or a descriptor (``/dev/stdout``) cannot be
    replaced: it is written through, as it is written.
    """
    target, replace = output_target(path)
    if not replace:
        try:
            file = open(target, mode)
        except OSError as error:
            raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
        with written_to(path), file:
            yield file
        return
    directory = os.path.dirname(target)
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
    except OSError as error:
        raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
    try:
        with written_to(path), os.fdopen(descriptor, mode) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, permissions_of(target))
        try:
            os.replace(temporary, target)
        except OSError as error:
            raise DataError(path, None, f"cannot write: {error.strerror or error}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


@contextlib.contextmanager
def written_to(path):
    """An error of writing (a full disk, a device that refuses) as a
    DataError naming ``path``; an OSError naming a file is another file's,
    and a broken pipe is the reader's end (the command line ends quietly)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        if error.filename is not None:
            raise
        raise DataError(path, None, f"cannot write: {error.strerror or error}") from None


def permissions_of(path):
    """The permission bits of the file ``path``, or of a new file (0o666 less
    the umask) when there is none: mkstemp makes its file private."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
