"""``skftrl train``: a file streamed in chunks through partial_fit, the model saved.

One run, top down: the options and the model continued with ``-i`` make the
estimator (:mod:`._estimators`); the input spec and classes are resolved
once, by a scan where needed (:mod:`._input`); the chunks of each pass come
from the text or the cache (:mod:`._passes`), with the held-out rows set
aside by the holdout (:mod:`._holdout`); the passes are reported; the model
file is written only if all of it succeeds (:mod:`._model_files`). A run
whose classes were guessed from the first chunk and that a later row
contradicts starts over, with a scan of the file (see :mod:`._input`).
"""

import contextlib
import dataclasses
import os

from .. import __version__
from .._readers._sources import DataError, data_format, is_regular_file, named_format
from ._estimators import compile_timer, make_estimator, reported_loss
from ._holdout import Holdout
from ._input import check_format_options, resolve_input, training_reading
from ._model_files import HashedNames, atomic_output, load_model, save_model
from ._parser import UsageError
from ._passes import learn_passes, pass_chunks
from ._predict import held_out_scores
from ._progress import Progress, Report, duration, format_score


def run(args, out):
    """Stream the file ``--passes`` times through partial_fit, save the model."""
    report = Report(out, quiet=args.quiet)
    check_paths(args)
    data_kind = data_format(args.data, args.format)
    initial = initial_spec = None
    if args.initial_model is not None:
        initial, initial_spec = load_model(args.initial_model, args.zero_based)
        if args.format == "auto" and named_format(args.data) is None:
            # A stream, or a name that says no format: read as the model reads
            # data, as predict and test read it.
            data_kind = initial_spec.format
            if data_kind != "libsvm" and args.early is not None:
                args.early.close()  # read as LIBSVM ahead, in vain
                args.early = None
        if data_kind == "csv" and args.label_column is None:
            args.label_column = getattr(initial_spec, "label_column", None)
    check_format_options(args, data_kind)
    estimator = make_estimator(args, initial)
    check_inputs(args)
    with compile_timer() as compiling:
        try:
            trained = train(args, data_kind, initial, initial_spec, estimator, report, guess=True)
        except GuessContradicted as contradicted:
            report.line(
                f"{contradicted.error}; reading {args.data} again, after a scan of the file"
            )
            estimator = make_estimator(args, initial)
            trained = train(args, data_kind, initial, initial_spec, estimator, report, guess=False)
        save(args, *trained, initial, report)
    # A first run's time is mostly compiling: said, so that it is not taken
    # for the speed of the next runs. numba reports a compilation only when
    # its cache had no code for it: each new kind of run (another format,
    # model, loss, number of classes) compiles its own once.
    if compiling is not None and compiling.done:
        report.line(
            f"numba compiled skftrl's code for this kind of run in "
            f"{duration(compiling.duration)}: later runs of this kind load it from "
            "numba's cache"
        )
    return 0


class GuessContradicted(Exception):
    """A row contradicted the classes or kinds guessed from the first chunk."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def train(args, data_kind, initial, initial_spec, estimator, report, guess):
    """Every pass of a run: ``(estimator, training, rows, holdout)``, as
    ``save`` takes them. Raises GuessContradicted where a row contradicts a
    guess (``guess``: one may be made, see :mod:`._input`)."""
    with contextlib.ExitStack() as resources:
        training = resolve_input(
            args, data_kind, initial, initial_spec, estimator, report, resources, guess
        )
        holdout = None
        if args.holdout_period is not None:
            floor = reported_loss(estimator)[1]
            holdout = resources.enter_context(
                contextlib.closing(Holdout(args.holdout_period, args.data, floor))
            )
        progress = resources.enter_context(contextlib.closing(Progress(enabled=not args.quiet)))
        passes = pass_chunks(args, training, report, resources)
        try:
            rows = learn_passes(args, estimator, training, passes, holdout, report, progress)
        except DataError as error:
            if training.guessed:
                raise GuessContradicted(error) from error
            raise
    return estimator, training, rows, holdout


def check_paths(args):
    """The model must not overwrite the data it is trained or tested on."""
    written = os.path.realpath(args.model)
    for option, path in (("DATA", args.data), ("--test", args.test)):
        if path not in (None, "-") and os.path.realpath(path) == written:
            raise UsageError(
                f"the model file {args.model} is the {option} file: it would be overwritten"
            )


def check_inputs(args):
    """The files exist (the test file too: now, not after training), and a
    stream is read more than once only through the cache."""
    for path in (args.data, args.test):
        if path is not None and path != "-" and not os.path.exists(path):
            raise DataError(path, None, "No such file or directory")
    if not is_regular_file(args.data) and args.passes > 1 and args.no_cache:
        raise UsageError(f"{args.data} cannot be read twice: --passes > 1 needs the cache")


def save(args, estimator, training, rows, holdout, initial, report):
    """The model file, with how it reads files and the training log; scores on --test."""
    estimator.input_spec_ = dataclasses.asdict(training.spec)
    names = training.names
    estimator.hashed_feature_names_ = None if names is None else HashedNames(names.by_index)
    log = list(getattr(initial, "training_log_", None) or [])
    entry = {
        "file": args.data,
        "rows": rows,
        "passes": args.passes,
        "chunk_size": args.chunk_size,
        "skftrl_version": __version__,
    }
    if holdout is not None:
        # rows: those learned from; passes: those of the model kept.
        entry.update(
            passes=holdout.stopping.best_pass,
            holdout_period=holdout.period,
            held_out_rows=holdout.n_held_out,
            passes_made=len(holdout.stopping.losses),
            held_out_losses=holdout.stopping.losses,
        )
    log.append(entry)
    estimator.training_log_ = log
    scores, n_test = [], None
    if args.test is not None and is_empty(args.test):
        n_test = 0
    elif args.test is not None:
        reading = training_reading(args)
        scores, n_test = held_out_scores(estimator, training.spec, args.test, reading)
    with atomic_output(args.model) as model_file:
        save_model(estimator, args.model, model_file)
    if args.test is not None and not n_test:
        report.warn(f"{args.test} has no data rows: no held-out scores")
    for name, value in scores:
        print(f"held-out {name} ({args.test}): {format_score(value)}", file=report.out)
    report.line(f"model saved to {args.model}")


def is_empty(path):
    """Whether ``path`` is an empty regular file."""
    return path != "-" and os.path.isfile(path) and os.path.getsize(path) == 0
