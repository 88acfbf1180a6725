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


# Vowpal Wabbit's options that have no option of the same name here, and
# what to write instead (the documentation's table of VW's options).
VW_EQUIVALENTS = {
    "--oaa": "skftrl's classifier is multinomial: give the classes, --classes 1,2,...,K "
    "(or let a scan of the file find them)",
    "--rank": "--factors K trains a factorization machine of every pair of features",
    "--lrq": "--factors K trains a factorization machine of every pair of features",
    "--readable_model": "skftrl inspect MODEL --all > FILE lists every non-zero weight "
    "with its feature's name",
    "--invert_hash": "skftrl inspect MODEL --all > FILE lists every non-zero weight "
    "with its feature's name",
    "--csv": "a .csv or .tsv file is read as CSV (or --format csv)",
    "--csv_separator": "--delimiter C",
    "--csv_header": "--column-names A,B,... names the columns of a file without a header line",
    "--csv_no_file_header": "--column-names A,B,... names the columns of a file without a "
    "header line",
    "--cache_file": "the parsed chunks are cached in a temporary file of the run (-c is accepted)",
    "-l": "--learning-rate A (VW's FTRL uses --ftrl_alpha, which is accepted)",
    "--learning_rate": "--learning-rate A (VW's FTRL uses --ftrl_alpha, which is accepted)",
    "--power_t": "FTRL uses no such schedule (nor does VW's FTRL)",
    "--initial_t": "FTRL uses no such schedule (nor does VW's FTRL)",
    "--decay_learning_rate": "FTRL uses no such schedule (nor does VW's FTRL)",
    "--progress": "a live display is shown on a terminal (pip install 'skftrl[cli]'), "
    "one line a pass elsewhere",
    "-P": "a live display is shown on a terminal (pip install 'skftrl[cli]'), "
    "one line a pass elsewhere",
    "--pistol": "FTRL-Proximal (--ftrl) is the only algorithm here",
    "--coin": "FTRL-Proximal (--ftrl) is the only algorithm here",
}


def parse_arguments(parser, argv):
    """The options of ``argv``, with the command's files resolved into
    ``data`` and ``model`` (see :func:`resolve_files`); positional files may
    come among the options. argparse's usage errors exit with code 2."""
    args, extra = parser.parse_known_args(joined_negative_lists(argv))
    if args.command is None:
        args, extra = parser.parse_known_args(["demo", *extra])
    options = [arg for arg in extra if arg.startswith("-") and arg != "-"]
    for option in options:
        hint = VW_EQUIVALENTS.get(option.split("=")[0])
        if hint is not None:
            parser.error(f"{option.split('=')[0]} (Vowpal Wabbit's) is not an option here: {hint}")
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
