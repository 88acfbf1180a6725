"""The options of the ``skftrl`` command: one parser, its subcommands, their types.

Only the standard library is imported here, so that ``--help`` and
``--version`` answer at once. Each subcommand names the function that runs
it (``module:function`` of this package), imported only when it runs.
"""

import argparse

from .. import __version__


class UsageError(Exception):
    """Options that cannot work together, or an invalid hyper-parameter: exit code 2."""


def whole_number(text):
    """An integer; scientific notation (1e6) is accepted when it is whole."""
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not number.is_integer():
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        return int(number)


def positive_int(text):
    """An integer >= 1."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def holdout_period(text):
    """An integer >= 2: every K-th row is held out, the others learned."""
    value = whole_number(text)
    if value < 2:
        raise argparse.ArgumentTypeError(
            f"must be 2 or more (every K-th row is held out, the others learned), got {value}"
        )
    return value


def column_names(text):
    """Comma-separated names, none empty."""
    names = text.split(",")
    if "" in names:
        raise argparse.ArgumentTypeError(f"a column name is empty in {text!r}")
    return names


def add_column_names_option(parser):
    parser.add_argument(
        "--column-names",
        metavar="A,B,...",
        type=column_names,
        help="CSV: the names of the columns of a file without a header line, "
        "comma-separated; its first line is then a row",
    )


def delimiter(text):
    """One character; ``\\t`` (as typed in a shell) or ``tab`` for a tab."""
    from .._readers._csv_text import check_delimiter  # numpy: not for --help

    value = "\t" if text in ("\\t", "tab") else text
    try:
        check_delimiter(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def hash_bits(text):
    value = int(text)
    if not 1 <= value <= 30:
        raise argparse.ArgumentTypeError(f"must be from 1 to 30, got {value}")
    return value


def namespace_letters(count):
    """An argparse type: ``count`` namespace first letters (two or more if None)."""

    def letters(text):
        if len(text) < 2 or (count is not None and len(text) != count) or " " in text:
            wanted = "two or more" if count is None else ("two" if count == 2 else "three")
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {wanted} namespace first letters (such as ui)"
            )
        return text

    return letters


TRAIN_DESCRIPTION = """\
Train a model on a LIBSVM, CSV, Parquet or VW text file, streamed in chunks
through partial_fit (the file may be larger than memory), and save it to
MODEL. DATA is a path or - (standard input); plain text or gzip, bz2, xz or
zstd compressed (zstd needs: pip install 'skftrl[readers]').

The file is read once when the model's width and classes are known up front
(--n-features or --hash-bits, and --classes; or -i); otherwise a scan of the file
finds them, which a stream cannot give. The parsed chunks are cached in a
temporary file, so the text is parsed once whatever --passes is.

LIBSVM: "label index:value ...", indices from 1 unless the file has an index
0 (or --zero-based). CSV (a header line, or --column-names) and Parquet:
--label-column names the label; a column of numbers, some not whole, is a
numeric feature, and any other column (words, ids, codes) is categorical:
"column=value" is hashed to a feature of value 1 (--numeric, --categorical
decide otherwise). VW text: "label [importance] ['tag]|ns feature[:value]",
each feature hashed as "ns=feature"; -q crosses namespaces as VW does.

Two classes train a logistic model, more a multinomial one; --factors K a
factorization machine. The model file (joblib, or skops for a .skops path)
is written only if everything succeeds; a joblib file is a pickle: load only
model files you trust. Vowpal Wabbit's names work where they mean the same
(-d, -f, -i, -b, -q, --passes, --l1, --ftrl_alpha, ...); the documentation's
table lists every one."""


def regression_loss(text):
    """``--loss``: one of FTRLRegressor's losses (imported here, not at start-up)."""
    from .._engines._losses import REGRESSION_LOSSES

    if text not in REGRESSION_LOSSES:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(REGRESSION_LOSSES)})"
        )
    return text


# Vowpal Wabbit's --loss_function: the task and the loss it means here.
VW_LOSSES = {
    "logistic": ("classify", None),
    "squared": ("regress", "squared_error"),
    "poisson": ("regress", "poisson"),
}


def vw_loss(text):
    """``--loss_function``: a Vowpal Wabbit loss that has a counterpart here."""
    if text not in VW_LOSSES:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no counterpart here (choose from {', '.join(VW_LOSSES)}; "
            "or --task regress --loss huber)"
        )
    return text


def add_model_options(group):
    """``train``'s options that choose the model: its task, loss and kind."""
    group.add_argument(
        "--task",
        choices=["classify", "regress"],
        default=None,
        help="classification (default) or regression",
    )
    group.add_argument(
        "--classes",
        metavar="A,B,...",
        help="the classes, comma-separated (e.g. -1,1): no scan of the file needed to find them",
    )
    group.add_argument(
        "--loss",
        type=regression_loss,
        help="regression loss: one of FTRLRegressor's (default squared_error); "
        "classification always uses the log loss",
    )
    group.add_argument(
        "--loss_function",
        type=vw_loss,
        metavar="{logistic,squared,poisson}",
        help="as VW: logistic is --task classify; squared and poisson are "
        "--task regress with --loss squared_error or poisson",
    )
    group.add_argument("--epsilon", type=float, help="Huber threshold, > 0 (default 0.1)")
    group.add_argument(
        "--no-intercept",
        "--noconstant",
        dest="fit_intercept",
        action="store_false",
        default=None,
        help="learn no intercept (fit_intercept=False; VW's --noconstant)",
    )
    group.add_argument(
        "--factors",
        metavar="K",
        type=positive_int,
        help="train a factorization machine (FMClassifier, FMRegressor) with K factors "
        "a feature (n_components); its state is K+1 times the linear model's",
    )
    group.add_argument(
        "--init-stdev",
        metavar="S",
        type=float,
        help="--factors: standard deviation of the initial factors, >= 0 (default 0.01)",
    )
    group.add_argument(
        "--random-state",
        "--random_seed",
        metavar="SEED",
        type=int,
        help="--factors: seed of the initial factors (default 0: a run is repeatable)",
    )
    group.add_argument(
        "--ftrl", action="store_true", help="accepted: FTRL-Proximal is the only algorithm here"
    )


def add_learning_options(group):
    """``train``'s hyper-parameters of learning (default: the estimator's), passes and holdout."""
    group.add_argument(
        "--learning-rate",
        "--ftrl_alpha",
        metavar="A",
        type=float,
        help="alpha, > 0 (default 0.1; VW's --ftrl_alpha, whose default is 0.005)",
    )
    group.add_argument(
        "--beta",
        "--ftrl_beta",
        metavar="B",
        type=float,
        help=">= 0 (default 1.0; VW's --ftrl_beta, whose default is 0.1)",
    )
    group.add_argument("--l1", metavar="L", type=float, help="L1 penalty, >= 0 (default 0.0)")
    group.add_argument("--l2", metavar="L", type=float, help="L2 penalty, >= 0 (default 0.0)")
    group.add_argument(
        "--factor-learning-rate",
        metavar="A",
        type=float,
        help="--factors: the factors' alpha, > 0 (default: --learning-rate)",
    )
    group.add_argument(
        "--factor-l2",
        metavar="L",
        type=float,
        help="--factors: per-row L2 penalty of the factors, >= 0 (default 0.03)",
    )
    group.add_argument(
        "--batch-size",
        metavar="N",
        type=positive_int,
        help="rows per update; 1 is exact (default 1)",
    )
    group.add_argument(
        "--engine",
        choices=["auto", "numpy", "numba"],
        help="engine of the exact algorithm (default auto: numba when installed)",
    )
    group.add_argument(
        "--passes",
        metavar="N",
        type=positive_int,
        default=1,
        help="passes over the file, in order (default 1)",
    )
    group.add_argument(
        "--holdout-period",
        "--holdout_period",
        metavar="K",
        type=holdout_period,
        help="hold out every K-th row (as VW), score them after each pass, stop when "
        "their loss stops improving, keep the best pass's model",
    )
    group.add_argument(
        "--holdout_off",
        action="store_true",
        help="as VW: hold out no row (the default here without --holdout-period)",
    )
    group.add_argument(
        "--tol",
        metavar="T",
        type=float,
        help="with --holdout-period: an improvement of the held-out loss smaller than T "
        "does not count (default 1e-4)",
    )
    group.add_argument(
        "--n-iter-no-change",
        "--early_terminate",
        metavar="N",
        type=positive_int,
        help="with --holdout-period: stop after N passes without improvement "
        "(default 5; VW's --early_terminate)",
    )


def add_files(parser, names, help):
    """The positional files of a command: ``names`` (e.g. ``DATA [MODEL]``),
    which may come anywhere among the options (see ``_arguments``)."""
    parser.usage = f"%(prog)s [options] {names}"
    parser.add_argument("files", metavar=names, nargs="*", help=help)


def add_data_option(parser):
    parser.add_argument(
        "-d", "--data", dest="data_option", metavar="DATA", help="the data file (as VW's -d)"
    )


def add_model_option(parser):
    """The model file a command reads: positionally, or by one of these flags."""
    parser.add_argument(
        "--model",
        "-i",
        "--initial_regressor",
        dest="model_option",
        metavar="MODEL",
        help="the model file (instead of the positional MODEL; -i as VW)",
    )


def add_reading_options(parser):
    """Options that say how to read a file for a model."""
    parser.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM indices start at 0 (for a model saved from Python, which does not "
        "say; default: from 1)",
    )
    parser.add_argument(
        "--drop-extra-features",
        action="store_true",
        help="LIBSVM: leave out feature indices beyond the model's width (default: an "
        "error naming the line)",
    )
    add_column_names_option(parser)
    parser.add_argument(
        "-t",
        "--testonly",
        action="store_true",
        help="accepted for Vowpal Wabbit's command lines: this command never learns",
    )


def build_parser():
    """The parser of the ``skftrl`` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="skftrl",
        description="FTRL-Proximal online learning for scikit-learn: train, test, predict "
        "and inspect models on LIBSVM, CSV, Parquet and Vowpal Wabbit text files. "
        "Without a command, runs the demo; skftrl data DIR writes example files.",
    )
    parser.add_argument("--version", action="version", version=f"skftrl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    add_demo_command(commands)
    add_data_command(commands)
    add_train_command(commands)
    add_test_command(commands)
    add_predict_command(commands)
    add_inspect_command(commands)
    return parser


def add_demo_command(commands):
    """``skftrl demo``."""
    demo = commands.add_parser(
        "demo",
        help="train on the built-in a9a data and report held-out scores",
        description="One streaming pass of an FTRLClassifier over the a9a data shipped "
        "with skftrl, printing the progressive validation log loss as it goes (each row "
        "scored before it is learned), then the held-out log loss and AUC on a9a.t, the "
        "non-zero weights and the training speed of the engine.",
    )
    demo.add_argument("--learning-rate", type=float, default=0.1, help="alpha, > 0 (default 0.1)")
    demo.add_argument("--beta", type=float, default=1.0, help=">= 0 (default 1.0)")
    demo.add_argument("--l1", type=float, default=1.0, help="L1 penalty, >= 0 (default 1.0)")
    demo.add_argument("--l2", type=float, default=0.0, help="L2 penalty, >= 0 (default 0.0)")
    demo.add_argument(
        "--chunk-size",
        metavar="N",
        type=positive_int,
        default=1000,
        help="rows per partial_fit call (default 1000)",
    )
    demo.set_defaults(run="_demo:run")


def add_data_command(commands):
    """``skftrl data``."""
    data = commands.add_parser(
        "data",
        help="write example files to try the commands on (a9a, click tables)",
        description="Write example files into DIRECTORY (made if needed; files of the same names "
        "are replaced): a9a.train.svm.gz and a9a.test.svm.gz, the a9a data shipped with "
        "skftrl (LIBSVM); clicks_train.csv and clicks_test.csv, synthetic ad clicks "
        "with the columns of Avazu's click log (skftrl.datasets.write_click_table, "
        "fixed seeds: the same files on every run); and clicks_train.vw and "
        "clicks_test.vw, the same rows as Vowpal Wabbit text, each column a namespace.",
    )
    data.add_argument("directory", metavar="DIRECTORY", help="where to write the files")
    data.set_defaults(run="_data:run")


def add_train_command(commands):
    """``skftrl train``: its options in four groups, input, model, learning and output."""
    train = commands.add_parser(
        "train",
        help="train a model on a LIBSVM, CSV, Parquet or VW text file, streamed",
        description=TRAIN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_files(
        train,
        "DATA [MODEL]",
        "the training file (or - for standard input), then the model file to write",
    )
    data = train.add_argument_group("input: the data, its format, columns and hashing")
    add_data_option(data)
    data.add_argument(
        "--format",
        choices=["auto", "libsvm", "csv", "vw", "parquet"],
        default="auto",
        help="auto (default): .csv and .tsv are CSV, .vw is VW text (also compressed: "
        ".csv.gz, .vw.zst), .parquet and .pq Parquet, anything else LIBSVM",
    )
    data.add_argument(
        "--label-column", metavar="NAME", help="CSV, Parquet: the label column (required)"
    )
    data.add_argument(
        "--weight-column",
        metavar="NAME",
        help="CSV, Parquet: sample weights (numbers >= 0), as partial_fit's sample_weight",
    )
    data.add_argument(
        "--delimiter",
        metavar="C",
        type=delimiter,
        help="CSV: the character between fields, '\\t' for a tab (default: a tab in a "
        ".tsv file, else ','); test and predict read files as the model's were",
    )
    add_column_names_option(data)
    data.add_argument(
        "--ignore", metavar="A,B,...", help="CSV, Parquet: columns not to use as features"
    )
    data.add_argument(
        "--keep", metavar="A,B,...", help="CSV, Parquet: the only columns to use as features"
    )
    data.add_argument(
        "--categorical",
        metavar="A,B,...",
        help="CSV, Parquet: columns whose values are categories even if they are numbers (codes)",
    )
    data.add_argument(
        "--numeric",
        metavar="A,B,...",
        help="CSV, Parquet: columns of whole numbers read as numbers (counts, amounts); "
        "other columns of whole numbers are categories (ids, codes)",
    )
    data.add_argument(
        "--hash-bits",
        "-b",
        "--bit_precision",
        metavar="B",
        type=hash_bits,
        help="CSV, Parquet, VW text: hash features into 2**B columns, 1 to 30 (default 20); "
        "LIBSVM: take indices modulo 2**B",
    )
    data.add_argument(
        "-q",
        "--quadratic",
        dest="interactions",
        action="append",
        metavar="AB",
        type=namespace_letters(2),
        help="VW text: cross every feature of the namespaces starting with A with every "
        "feature of those starting with B, as VW's -q (repeatable)",
    )
    data.add_argument(
        "--cubic",
        dest="interactions",
        action="append",
        metavar="ABC",
        type=namespace_letters(3),
        help="VW text: cross the features of three namespaces, as VW's --cubic (repeatable)",
    )
    data.add_argument(
        "--interactions",
        dest="interactions",
        action="append",
        metavar="AB...",
        type=namespace_letters(None),
        help="VW text: cross the features of two or more namespaces (repeatable)",
    )
    data.add_argument(
        "--n-features",
        metavar="N",
        type=positive_int,
        help="LIBSVM: the model's width (default: the training file's largest index); "
        "files with larger indices are refused",
    )
    data.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM: indices start at 0 (default: from 1 unless the file has an index 0)",
    )
    data.add_argument(
        "--drop-extra-features",
        action="store_true",
        help="LIBSVM: leave out feature indices beyond the width of the model (-i, "
        "--n-features) or of the --test file's model (default: an error naming the line)",
    )
    data.add_argument(
        "--chunk-size",
        metavar="N",
        type=positive_int,
        default=10_000,
        help="rows per partial_fit call (default 10000)",
    )
    data.add_argument(
        "--no-cache",
        action="store_true",
        help="parse the text on every pass instead of caching the parsed chunks "
        "in a temporary file (about as large as the text)",
    )
    data.add_argument(
        "-c",
        "--cache",
        action="store_true",
        help="accepted (VW's): the parsed chunks are always cached, unless --no-cache",
    )
    data.add_argument(
        "-k",
        "--kill_cache",
        action="store_true",
        help="accepted (VW's): the cache is a temporary file of this run, never an old one",
    )

    model = train.add_argument_group("model: the model file, task, classes and kind")
    model.add_argument(
        "--model",
        "-f",
        "--final_regressor",
        dest="model_option",
        metavar="MODEL",
        help="the model file to write (instead of the positional MODEL); "
        ".skops: skops format, else joblib",
    )
    model.add_argument(
        "--initial-model",
        "-i",
        "--initial_regressor",
        metavar="MODEL",
        help="continue training this model (exactly as partial_fit would)",
    )
    model.add_argument(
        "--save_resume",
        action="store_true",
        help="accepted (VW's): the model file always holds the whole state, which -i "
        "continues exactly",
    )
    add_model_options(model)

    learning = train.add_argument_group(
        "learning: hyper-parameters (default: the estimator's), passes, holdout"
    )
    add_learning_options(learning)

    output = train.add_argument_group("output: what the run prints")
    output.add_argument("--test", metavar="DATA", help="labelled file to score at the end")
    output.add_argument(
        "--quiet",
        action="store_true",
        help="print only errors and the held-out scores (no progress display, which "
        "is shown only when stderr is a terminal)",
    )
    output.add_argument(
        "-t",
        "--testonly",
        action="store_true",
        help="refused: train learns; skftrl test scores a model and skftrl predict writes "
        "its predictions",
    )
    train.set_defaults(run="_train:run")


def add_test_command(commands):
    """``skftrl test``."""
    test = commands.add_parser(
        "test",
        help="score a model on a labelled file",
        description="Stream a labelled file (the model's format) through a model and "
        "print its scores: log loss, AUC (two classes) and accuracy, or RMSE and MAE "
        "(and the mean Poisson deviance for a Poisson model).",
    )
    add_files(test, "DATA [MODEL]", "the labelled file (or - for standard input), then the model")
    data = test.add_argument_group("input: the data and how to read it")
    add_data_option(data)
    add_reading_options(data)
    add_model_option(test.add_argument_group("model"))
    test.set_defaults(run="_predict:run_test")


def add_predict_command(commands):
    """``skftrl predict``."""
    predict = commands.add_parser(
        "predict",
        help="write one prediction per line",
        description="Stream a file (the model's format; labels, if present, are "
        "ignored) through a model and write one line per row, as --output-type says: "
        "for a classifier, the probability of the second class in sorted order (+1 of "
        "-1/+1, 1 of 0/1), or of each class in sorted order (see inspect) separated by "
        "spaces when there are more than two; for a regressor, the prediction. With "
        "--id-column, each line ends with the row's id, after a space.",
    )
    add_files(
        predict, "DATA [MODEL]", "the file to predict (or - for standard input), then the model"
    )
    data = predict.add_argument_group("input: the data and how to read it")
    add_data_option(data)
    add_reading_options(data)
    add_model_option(predict.add_argument_group("model"))
    output = predict.add_argument_group("output: the predictions")
    output.add_argument(
        "--output",
        "-p",
        "--predictions",
        metavar="FILE",
        help="write here (only if all succeeds) instead of stdout (-p as VW)",
    )
    output.add_argument(
        "--output-type",
        choices=["probability", "label", "raw"],
        help="probability (default for a classifier): as above; label: the predicted "
        "class (predict); raw: the margin before the link (decision_function: log-odds, "
        "one a class for more than two, or the log of a Poisson mean); for a regressor, "
        "label (the default) is the prediction",
    )
    output.add_argument(
        "--link",
        choices=["identity", "logistic"],
        help="as Vowpal Wabbit: identity is --output-type raw, logistic is probability",
    )
    output.add_argument(
        "--binary",
        action="store_true",
        help="as Vowpal Wabbit: the predicted class (--output-type label)",
    )
    output.add_argument(
        "--id-column",
        metavar="NAME",
        help="CSV, Parquet: write this column's value at the end of each line (an id or tag); "
        "the column may be one the model was not trained on",
    )
    predict.set_defaults(run="_predict:run_predict")


def add_inspect_command(commands):
    """``skftrl inspect``."""
    inspect = commands.add_parser(
        "inspect",
        help="show a model's hyper-parameters, sparsity and largest weights",
        description="Print a model's hyper-parameters, input, rows seen, the "
        "non-zero weights of all, and the largest weights by magnitude (or, with "
        "--all, every non-zero weight) with feature names (CSV: the column, or "
        "column=value; LIBSVM: the index); for a factorization machine, then the "
        "strongest interactions <v_i, v_j> of the features it has learned.",
    )
    add_files(inspect, "[MODEL]", "the model file")
    add_model_option(inspect.add_argument_group("model"))
    output = inspect.add_argument_group("output: what is listed")
    output.add_argument(
        "--top",
        metavar="K",
        type=positive_int,
        default=20,
        help="weights (and interactions) to list (default 20)",
    )
    output.add_argument(
        "--all", action="store_true", help="list every non-zero weight, by feature"
    )
    output.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM indices start at 0 (for a model saved from Python, which does not "
        "say; default: from 1)",
    )
    inspect.set_defaults(run="_inspect:run")
