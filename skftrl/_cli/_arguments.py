"""A command line read into the options of :mod:`._parser`, in this command's terms.

``--classes -1,1`` is read as ``--classes=-1,1``; the positional files may
come among the options; each command's DATA and MODEL come positionally or
from the flags that name them (``-d``, ``--model``, ``-f``, ``-i``); Vowpal
Wabbit's options are put in this command's terms, and those that cannot
apply are refused with a UsageError saying what to do instead. Only the
standard library is imported here.
"""

import re

from ._parser import VW_LOSSES, UsageError


def joined_negative_lists(argv):
    """``--classes -1,1`` as ``--classes=-1,1``: argparse reads a value that
    starts with ``-`` and is not a plain number as an option."""
    joined, previous = [], None
    for arg in argv:
        if previous == "--classes" and re.fullmatch(r"-[\d.][^=]*", arg):
            joined[-1] = f"--classes={arg}"
        else:
            joined.append(arg)
        previous = arg
    return joined


def parse_arguments(parser, argv):
    """The options of ``argv``, with the command's files resolved into
    ``data`` and ``model`` (see :func:`resolve_files`); positional files may
    come among the options. argparse's usage errors exit with code 2."""
    args, extra = parser.parse_known_args(joined_negative_lists(argv))
    if args.command is None:
        args, extra = parser.parse_known_args(["demo", *extra])
    options = [arg for arg in extra if arg.startswith("-") and arg != "-"]
    if options or (extra and not hasattr(args, "files")):
        parser.error(f"unrecognized arguments: {' '.join(options or extra)}")
    if hasattr(args, "files"):
        args.files += extra
    return args


def resolve_files(args):
    """``args.data`` and ``args.model`` of a command, from its positional files
    (``DATA [MODEL]``, ``inspect``: ``MODEL``) and the flags that may name
    them instead (``-d``, ``--model``/``-f``/``-i``); a UsageError names what
    is missing or given twice. Also checks Vowpal Wabbit's options that do not
    apply here."""
    if args.command in ("demo", "data"):
        return args
    files = list(args.files)
    role = "the model file to write" if args.command == "train" else "the model file"
    flags = "--model or -f" if args.command == "train" else "--model or -i"
    if args.command != "inspect":
        data = getattr(args, "data_option", None)
        if data is None:
            if not files:
                raise UsageError(f"{args.command} needs DATA: a file, or - for standard input")
            data = files.pop(0)
        args.data = data
    model = args.model_option
    if model is None:
        if not files:
            raise UsageError(f"{args.command} needs MODEL, {role}: after DATA, or {flags}")
        model = files.pop(0)
    if files:
        raise UsageError(f"unexpected file arguments: {' '.join(files)}")
    args.model = model
    if args.command == "train":
        resolve_train_options(args)
    if args.command == "predict":
        resolve_output_type(args)
    return args


def resolve_train_options(args):
    """Vowpal Wabbit's training options in this command's terms."""
    if args.testonly:
        raise UsageError(
            "-t (test only): skftrl train always learns; use skftrl test DATA MODEL for "
            "scores, or skftrl predict DATA MODEL -p FILE for predictions"
        )
    if args.holdout_off and args.holdout_period is not None:
        raise UsageError("--holdout_off and --holdout-period: one or the other")
    if args.cache and args.no_cache:
        raise UsageError("-c (--cache) and --no-cache: one or the other")
    if args.loss_function is not None:
        task, loss = VW_LOSSES[args.loss_function]
        if args.task is not None and args.task != task:
            raise UsageError(f"--loss_function {args.loss_function} is --task {task}")
        if loss is not None and args.loss is not None and args.loss != loss:
            raise UsageError(f"--loss_function {args.loss_function} is --loss {loss}")
        args.task, args.loss = task, args.loss if loss is None else loss
    if args.task is None:
        args.task = "classify"


def resolve_output_type(args):
    """``predict``'s ``--output-type``, from Vowpal Wabbit's ``--link`` and ``--binary``."""
    chosen = {
        "--output-type": args.output_type,
        "--link": {None: None, "identity": "raw", "logistic": "probability"}[args.link],
        "--binary": "label" if args.binary else None,
    }
    given = {option: kind for option, kind in chosen.items() if kind is not None}
    if len(set(given.values())) > 1:
        raise UsageError(f"{' and '.join(given)} ask for different outputs: choose one")
    args.output_type = next(iter(given.values()), None)
