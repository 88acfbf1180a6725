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
Train a model on a LIBSVM/svmlight, CSV or VW text file, streamed in chunks
through partial_fit so that the file may be larger than memory, and save it
to MODEL (positionally after DATA, or with --model/-f). DATA is a path or -
(standard input), or -d DATA; pipes and FIFOs work; plain text or gzip, bz2,
xz or zstd compressed (recognised by their first bytes; zstd needs the
zstandard package: pip install 'skftrl[readers]').

One pass reads the data when the model's width and classes are known up
front: from --n-features (or --hash-bits) and --classes, or from the model
continued with -i. Otherwise a scan of the file, before the training
passes, finds them (the classes, the width of LIBSVM data, the kind of each
CSV column); a stream, which cannot be read twice, then needs those options. The parsed chunks are
kept in a binary cache (a temporary file) so that the text is parsed once,
whatever --passes is.

LIBSVM: "label index:value ...", indices in ascending order; they start at 1
unless the training file has an index 0 (as load_svmlight_file's
zero_based="auto"), or --zero-based. The model is as wide as the largest
index, or --n-features; --hash-bits B takes each index modulo 2**B instead.

CSV: a header line (or --column-names), then one row a line, fields
separated by commas (tabs in a .tsv file, or --delimiter); --label-column
names the label. A column whose values are all numbers (or missing: empty,
NA, NaN, N/A, null), some not whole, is numeric: its value is the feature
at the hashed index of the column's name; so is a column of whole numbers
named by --numeric. Any other column (words, and whole numbers: ids and
codes), and every column named by --categorical, is categorical:
"column=value" is hashed to a feature of value 1. Hashing is
skftrl.preprocessing.ColumnHasher's (the columns of sklearn's FeatureHasher)
into 2**--hash-bits features; pyarrow, where installed, parses the text.
Whether a column's numbers are whole is its first chunk's. Without a scan
(regression, or --classes), the kinds are those of the first chunk's
values.

Parquet (needs pyarrow): the columns' types say which hold numbers (floating
point and boolean columns, and integer ones named by --numeric) and which
categories (any other, integer ones included, and those named by
--categorical); nulls are missing values. Only the columns used are read,
and the classes come from the label column alone. train reads a Parquet
file by its path; test and predict read standard input too.

VW text (Vowpal Wabbit's format): "label [importance] ['tag]|namespace
feature[:value] ...", importance weights as sample weights; a feature f of
the namespace ns is hashed as "ns=f" into 2**--hash-bits features. -q ui
crosses each feature of the namespaces starting with u with each of those
starting with i, in every row, as VW does (--cubic, --interactions: more).

Classification: the classes are the distinct labels of the training file
(numbers when every label is a number, else strings), or --classes; two
classes train a logistic model, more a multinomial one.

--factors K trains a factorization machine (FMClassifier or FMRegressor,
K factors a feature) instead of the linear model.

--holdout-period K holds out every K-th row (rows K, 2K, ...), scores them
after each pass, stops when their loss has not improved by --tol for
--n-iter-no-change passes, and saves the best pass's model.

The model file is the fitted estimator, written only if everything succeeds:
joblib.load (or skops.io.load for a .skops path) returns it, with
input_spec_, hashed_feature_names_ and training_log_ for the command line. A
joblib file is a pickle: load only model files you trust.

Vowpal Wabbit's names work where they mean the same: -d, -f, -i, -b,
--passes, --holdout_period, --holdout_off, --early_terminate, --l1, --l2,
--ftrl, --ftrl_alpha, --ftrl_beta, --loss_function, --random_seed,
--noconstant, -c, -k, --save_resume (see the documentation's table for
where a meaning differs)."""


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


def add_hyper_parameters(parser):
    group = parser.add_argument_group("hyper-parameters (default: the estimator's)")
    group.add_argument(
        "--learning-rate",
        "--ftrl_alpha",
        type=float,
        help="alpha, > 0 (default 0.1; VW's --ftrl_alpha, whose default is 0.005)",
    )
    group.add_argument(
        "--beta",
        "--ftrl_beta",
        type=float,
        help=">= 0 (default 1.0; VW's --ftrl_beta, whose default is 0.1)",
    )
    group.add_argument("--l1", type=float, help="L1 penalty lambda_1, >= 0 (default 0.0)")
    group.add_argument("--l2", type=float, help="L2 penalty lambda_2, >= 0 (default 0.0)")
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
        help="as Vowpal Wabbit: logistic is --task classify; squared and poisson are "
        "--task regress with --loss squared_error or poisson",
    )
    group.add_argument("--epsilon", type=float, help="Huber threshold, > 0 (default 0.1)")
    group.add_argument(
        "--batch-size", type=positive_int, help="rows per update; 1 is exact (default 1)"
    )
    group.add_argument(
        "--engine",
        choices=["auto", "numpy", "numba"],
        help="engine of the exact algorithm (default auto: numba when installed)",
    )
    group.add_argument(
        "--no-intercept",
        "--noconstant",
        dest="fit_intercept",
        action="store_false",
        default=None,
        help="learn no intercept (fit_intercept=False; VW's --noconstant)",
    )
    factors = parser.add_argument_group(
        "factorization machine (FMClassifier, FMRegressor): pairwise interactions"
    )
    factors.add_argument(
        "--factors",
        metavar="K",
        type=positive_int,
        help="train a factorization machine with K factors a feature (n_components); "
        "its state is K+1 times the linear model's",
    )
    factors.add_argument(
        "--init-stdev",
        type=float,
        help="standard deviation of the initial factors, >= 0 (default 0.01)",
    )
    factors.add_argument(
        "--factor-learning-rate",
        type=float,
        help="the factors' alpha, > 0 (default: --learning-rate)",
    )
    factors.add_argument(
        "--factor-l2", type=float, help="per-row L2 penalty of the factors, >= 0 (default 0.03)"
    )
    factors.add_argument(
        "--random-state",
        "--random_seed",
        metavar="SEED",
        type=int,
        help="seed of the initial factors (default 0: a run is repeatable)",
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


def add_no_ops(parser):
    """Vowpal Wabbit's options that are always so here: accepted, and nothing to do."""
    group = parser.add_argument_group("Vowpal Wabbit options that are always so here")
    group.add_argument(
        "--ftrl", action="store_true", help="FTRL-Proximal (the only algorithm here)"
    )
    group.add_argument(
        "-c",
        "--cache",
        action="store_true",
        help="the parsed chunks are always cached for later passes (unless --no-cache)",
    )
    group.add_argument(
        "-k",
        "--kill_cache",
        action="store_true",
        help="the cache is a temporary file of this run, never an old one",
    )
    group.add_argument(
        "--save_resume",
        action="store_true",
        help="the model file always holds the whole state: -i continues it exactly",
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
    """``skftrl train``."""
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
    add_data_option(train)
    train.add_argument(
        "--model",
        "-f",
        "--final_regressor",
        dest="model_option",
        metavar="MODEL",
        help="the model file to write (instead of the positional MODEL; -f as VW); "
        ".skops: skops format, else joblib",
    )
    train.add_argument(
        "--initial-model",
        "-i",
        "--initial_regressor",
        metavar="MODEL",
        help="continue training this model (exactly as partial_fit would; -i as VW)",
    )
    train.add_argument("--test", metavar="DATA", help="labelled file to score at the end")
    train.add_argument(
        "--task",
        choices=["classify", "regress"],
        default=None,
        help="classification (default) or regression",
    )
    train.add_argument(
        "--format",
        choices=["auto", "libsvm", "csv", "vw", "parquet"],
        default="auto",
        help="auto (default): .csv and .tsv are CSV, .vw is VW text (also compressed: "
        ".csv.gz, .vw.zst), .parquet and .pq Parquet, anything else LIBSVM",
    )
    train.add_argument(
        "--classes",
        metavar="A,B,...",
        help="the classes, comma-separated (e.g. -1,1): no scan of the file needed to find them",
    )
    train.add_argument(
        "--label-column", metavar="NAME", help="CSV, Parquet: the label column (required)"
    )
    train.add_argument(
        "--weight-column",
        metavar="NAME",
        help="CSV, Parquet: sample weights (numbers >= 0), as partial_fit's sample_weight",
    )
    train.add_argument(
        "--delimiter",
        metavar="C",
        type=delimiter,
        help="CSV: the character between fields, '\\t' for a tab (default: a tab in a "
        ".tsv file, else ','); test and predict read files as the model's were",
    )
    add_column_names_option(train)
    train.add_argument(
        "--ignore", metavar="A,B,...", help="CSV, Parquet: columns not to use as features"
    )
    train.add_argument(
        "--keep", metavar="A,B,...", help="CSV, Parquet: the only columns to use as features"
    )
    train.add_argument(
        "--categorical",
        metavar="A,B,...",
        help="CSV, Parquet: columns whose values are categories even if they are numbers (codes)",
    )
    train.add_argument(
        "--numeric",
        metavar="A,B,...",
        help="CSV, Parquet: columns of whole numbers read as numbers (counts, amounts); "
        "other columns of whole numbers are categories (ids, codes)",
    )
    train.add_argument(
        "--hash-bits",
        "-b",
        "--bit_precision",
        metavar="B",
        type=hash_bits,
        help="CSV, Parquet and VW text: hash features into 2**B columns, 1 to 30 (default 20); "
        "LIBSVM: take indices modulo 2**B (-b as VW)",
    )
    train.add_argument(
        "-q",
        "--quadratic",
        dest="interactions",
        action="append",
        metavar="AB",
        type=namespace_letters(2),
        help="VW text: cross every feature of the namespaces starting with A with every "
        "feature of those starting with B, as VW's -q (repeatable)",
    )
    train.add_argument(
        "--cubic",
        dest="interactions",
        action="append",
        metavar="ABC",
        type=namespace_letters(3),
        help="VW text: cross the features of three namespaces, as VW's --cubic (repeatable)",
    )
    train.add_argument(
        "--interactions",
        dest="interactions",
        action="append",
        metavar="AB...",
        type=namespace_letters(None),
        help="VW text: cross the features of two or more namespaces, as VW's "
        "--interactions (repeatable)",
    )
    train.add_argument(
        "--n-features",
        metavar="N",
        type=positive_int,
        help="LIBSVM: the model's width (default: the training file's largest index); "
        "files with larger indices are refused",
    )
    train.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM: indices start at 0 (default: from 1 unless the file has an index 0)",
    )
    train.add_argument(
        "--drop-extra-features",
        action="store_true",
        help="LIBSVM: leave out feature indices beyond the width of the model (-i, "
        "--n-features) or of the --test file's model (default: an error naming the line)",
    )
    train.add_argument(
        "--chunk-size",
        metavar="N",
        type=positive_int,
        default=10_000,
        help="rows per partial_fit call (default 10000)",
    )
    train.add_argument(
        "--passes",
        metavar="N",
        type=positive_int,
        default=1,
        help="passes over the file, in order (default 1)",
    )
    train.add_argument(
        "--holdout-period",
        "--holdout_period",
        metavar="K",
        type=holdout_period,
        help="hold out every K-th row (K, 2K, ...; as vw --holdout_period), score it after "
        "each pass, stop when its loss stops improving, keep the best pass's model",
    )
    train.add_argument(
        "--holdout_off",
        action="store_true",
        help="as Vowpal Wabbit: hold out no row (the default here without --holdout-period)",
    )
    train.add_argument(
        "--tol",
        metavar="T",
        type=float,
        help="with --holdout-period: an improvement of the held-out loss smaller than T "
        "does not count (default 1e-4, the estimator's tol)",
    )
    train.add_argument(
        "--n-iter-no-change",
        "--early_terminate",
        metavar="N",
        type=positive_int,
        help="with --holdout-period: stop after N passes without improvement "
        "(default 5, the estimator's n_iter_no_change; as vw --early_terminate)",
    )
    train.add_argument(
        "--no-cache",
        action="store_true",
        help="parse the text on every pass instead of caching the parsed chunks "
        "in a temporary file (about as large as the text)",
    )
    train.add_argument(
        "--quiet",
        action="store_true",
        help="print only errors and the held-out scores (no progress display; "
        "the display is shown only when stderr is a terminal)",
    )
    train.add_argument(
        "-t",
        "--testonly",
        action="store_true",
        help="refused: train learns; skftrl test scores a model and skftrl predict writes "
        "its predictions",
    )
    add_hyper_parameters(train)
    add_no_ops(train)
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
    add_data_option(test)
    add_model_option(test)
    add_reading_options(test)
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
    add_data_option(predict)
    add_model_option(predict)
    predict.add_argument(
        "--output",
        "-p",
        "--predictions",
        metavar="FILE",
        help="write here (only if all succeeds) instead of stdout (-p as VW)",
    )
    predict.add_argument(
        "--output-type",
        choices=["probability", "label", "raw"],
        help="probability (default for a classifier): as above; label: the predicted "
        "class (predict); raw: the margin before the link (decision_function: log-odds, "
        "one a class for more than two, or the log of a Poisson mean); for a regressor, "
        "label (the default) is the prediction",
    )
    predict.add_argument(
        "--link",
        choices=["identity", "logistic"],
        help="as Vowpal Wabbit: identity is --output-type raw, logistic is probability",
    )
    predict.add_argument(
        "--binary",
        action="store_true",
        help="as Vowpal Wabbit: the predicted class (--output-type label)",
    )
    predict.add_argument(
        "--id-column",
        metavar="NAME",
        help="CSV, Parquet: write this column's value at the end of each line (an id or tag); "
        "the column may be one the model was not trained on",
    )
    add_reading_options(predict)
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
    add_model_option(inspect)
    inspect.add_argument(
        "--top",
        metavar="K",
        type=positive_int,
        default=20,
        help="weights (and interactions) to list (default 20)",
    )
    inspect.add_argument(
        "--all", action="store_true", help="list every non-zero weight, by feature"
    )
    inspect.add_argument(
        "--zero-based",
        action="store_true",
        help="LIBSVM indices start at 0 (for a model saved from Python, which does not "
        "say; default: from 1)",
    )
    inspect.set_defaults(run="_inspect:run")
