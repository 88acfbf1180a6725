"""``skftrl inspect``: a model's hyper-parameters, input, weights and interactions."""

import numpy as np

from .._classifier import FTRLClassifier
from .._fm import factors_of_columns
from ._estimators import format_label
from ._model_files import load_model


def feature_namer(estimator, spec):
    """A function naming a model's column."""
    if spec.format == "libsvm":
        if spec.hash_bits is not None:
            return lambda column: f"hashed index {column} (index mod 2**{spec.hash_bits})"
        offset = 0 if spec.zero_based else 1
        names_in = getattr(estimator, "feature_names_in_", None)
        if names_in is not None and getattr(estimator, "input_spec_", None) is None:
            return lambda column: str(names_in[column])
        return lambda column: f"feature {column + offset}"
    names = estimator.hashed_feature_names_ or {}

    def name(column):
        known = names.get(column)
        return " | ".join(known) if known else f"hashed feature {column} (name not recorded)"

    return name


# The most features whose every pairwise interaction inspect computes at
# once: their Gram matrix of float64 is 32 MiB.
MAX_INTERACTION_CANDIDATES = 2048


def learned_factors(estimator):
    """The columns whose factors training has changed and are not all zero,
    and their factors, shape (n_outputs, n_columns, n_components).

    A column never learned from keeps its random initial factors: its
    interactions are noise of size ``init_stdev**2``, not learned structure.
    Only the learned columns' factors are computed, from the state in closed
    form as ``components_`` computes them, not the whole width's.
    """
    n = estimator.n_factors_
    initial_n = n.dtype.type(estimator.initial_accumulator_value)
    columns = np.flatnonzero((n != initial_n).any(axis=(0, 2)))
    factors = factors_of_columns(estimator, columns)
    nonzero = (factors != 0).any(axis=(0, 2))
    return columns[nonzero], factors[:, nonzero]


def strongest_interactions(factors, top, groups=None):
    """The ``top`` pairs ``a < b`` of rows of ``factors`` (n, k) with the largest
    ``|<v_a, v_b>|``: a list of ``(value, a, b)``, strongest first, and None
    when the list is certainly the strongest of all pairs, else a bound on the
    pairs left out. With ``groups`` (one integer a row), no pair of two rows
    of the same group ``>= 0`` is listed: no row of data holds both.

    By Cauchy-Schwarz ``|<v_a, v_b>| <= |v_a| |v_b|``: the pairs among the
    ``m`` rows of largest norm are computed (a Gram matrix), and a pair with
    any other row is at most the ``m+1``-th norm times the largest. When
    that bound is no more than the ``top``-th value found, the list is exact;
    else ``m`` grows fourfold, up to MAX_INTERACTION_CANDIDATES rows.
    """
    norms = np.sqrt(np.einsum("ij,ij->i", factors, factors))
    order = np.argsort(-norms, kind="stable")
    size = min(len(order), max(64, 2 * top), MAX_INTERACTION_CANDIDATES)
    while True:
        chosen = order[:size]
        gram = factors[chosen] @ factors[chosen].T
        magnitude = np.abs(gram)
        magnitude[np.tri(size, dtype=bool)] = -1.0  # each pair once, no a with itself
        if groups is not None:
            group = groups[chosen]
            magnitude[(group[:, None] == group[None, :]) & (group[:, None] >= 0)] = -1.0
        n_pairs = size * (size - 1) // 2
        count = min(top, n_pairs)
        flat = magnitude.ravel()
        found = np.argpartition(-flat, count - 1)[:count] if count else np.zeros(0, np.intp)
        if size == len(order):
            left_out = None
            break
        left_out = float(norms[order[size]] * norms[order[0]])
        if count == top and left_out <= flat[found].min():
            left_out = None
            break
        if size >= MAX_INTERACTION_CANDIDATES:
            break
        size = min(len(order), 4 * size, MAX_INTERACTION_CANDIDATES)
    pairs = []
    for position in found.tolist():
        if flat[position] < 0:  # fewer pairs than ``top``, or a pair of one group
            continue
        a, b = divmod(position, size)
        pairs.append((float(gram[a, b]), *sorted((int(chosen[a]), int(chosen[b])))))
    pairs.sort(key=lambda pair: (-abs(pair[0]), pair[1], pair[2]))
    return pairs, left_out


def categorical_groups(estimator, spec, columns):
    """For each of ``columns``, the position of the categorical column of a
    CSV or Parquet file whose values all its recorded names are
    (``column=value``), else -1: two features of one categorical column are
    never in the same row. None for other input."""
    if spec.format == "csv":
        fields = list(spec.kinds)
    elif spec.format == "parquet":
        fields = list(spec.features)
    else:
        return None
    names = getattr(estimator, "hashed_feature_names_", None) or {}
    position = {field: i for i, field in enumerate(fields)}
    groups = np.full(len(columns), -1, dtype=np.intp)
    for i, column in enumerate(columns.tolist()):
        owners = {categorical_field(name, position) for name in names.get(column, ())}
        if len(owners) == 1 and None not in owners:
            groups[i] = position[owners.pop()]
    return groups


def categorical_field(name, position):
    """The field of ``position`` whose values the hashed name ``field=value``
    is, or None (a numeric column's name, which has no ``=value``)."""
    start = name.find("=")
    while start >= 0:
        if name[:start] in position:
            return name[:start]
        start = name.find("=", start + 1)
    return None


def print_interactions(estimator, spec, name, top, out):
    """The strongest pairwise interactions of a factorization machine, by feature name."""
    columns, factors = learned_factors(estimator)
    groups = categorical_groups(estimator, spec, columns)
    n_outputs, n_learned, n_components = factors.shape
    print(
        f"factors:          {n_components} a feature; {n_learned:,} features learned "
        "(factors changed by training)",
        file=out,
    )
    found, left_out = [], []
    for output in range(n_outputs):
        pairs, bound = strongest_interactions(factors[output], top, groups)
        for value, a, b in pairs:  # columns are ascending: so are columns[a] < columns[b]
            found.append((-abs(value), output, int(columns[a]), int(columns[b]), value))
        if bound is not None:
            left_out.append(bound)
    found = sorted(found)[:top]
    n_pairs = n_learned * (n_learned - 1) // 2
    within = ""
    if groups is not None:
        sizes = np.bincount(groups[groups >= 0])
        n_within = int((sizes * (sizes - 1) // 2).sum())
        n_pairs -= n_within
        if n_within:
            within = f"; not the {n_within * n_outputs:,} pairs of values of one column"
    print(
        f"strongest interactions <v_i, v_j> ({len(found)} of {n_pairs * n_outputs:,} pairs "
        f"of learned features, by magnitude{within}):",
        file=out,
    )
    if left_out:
        print(
            f"  (among the {MAX_INTERACTION_CANDIDATES:,} features of largest factor norm; "
            f"a pair with another feature is at most {max(left_out):.6g})",
            file=out,
        )
    multiclass = n_outputs > 1
    for _, output, first, second, value in found:
        where = f"class {format_label(estimator.classes_[output])}  " if multiclass else ""
        print(f"  {value:>+12.6f}  {where}{name(first)} x {name(second)}", file=out)


# The estimators' parameters that train's options set (the others keep
# their defaults, and some, such as max_iter, only fit uses); those of
# --holdout-period are listed for a model trained with it.
COMMAND_LINE_PARAMETERS = (
    "learning_rate",
    "beta",
    "l1",
    "l2",
    "loss",
    "epsilon",
    "batch_size",
    "engine",
    "fit_intercept",
    "n_components",
    "init_stdev",
    "factor_learning_rate",
    "factor_l2",
    "random_state",
)
HOLDOUT_PARAMETERS = ("tol", "n_iter_no_change")


def run(args, out):
    """Hyper-parameters, rows seen, sparsity and the largest (or every) weight."""
    estimator, spec = load_model(args.model, args.zero_based)
    log = getattr(estimator, "training_log_", None)
    coef = estimator.coef_
    nonzero = int(np.count_nonzero(coef))
    params = estimator.get_params()
    if log:  # trained by the command line: the parameters its options set
        used = COMMAND_LINE_PARAMETERS
        if any("holdout_period" in run for run in log):
            used = used + HOLDOUT_PARAMETERS
        if "n_components" not in params:  # --random-state seeds a machine's factors
            used = tuple(name for name in used if name != "random_state")
        params = {name: value for name, value in params.items() if name in used}
    if "dtype" in params:
        params["dtype"] = np.dtype(params["dtype"]).name
    version = log[-1].get("skftrl_version", "0.1.0") if log else "saved from Python"
    print(f"model:            {args.model} (skftrl {version})", file=out)
    print(f"estimator:        {type(estimator).__name__}", file=out)
    print(
        "hyper-parameters: " + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())),
        file=out,
    )
    if isinstance(estimator, FTRLClassifier):
        classes = ", ".join(map(format_label, estimator.classes_))
        print(f"classes:          {classes}", file=out)
    print(f"input:            {spec.describe()}", file=out)
    if log:
        runs = "; ".join(
            f"{run['passes']} pass{'es' if run['passes'] > 1 else ''} over the "
            f"{run['rows']:,} rows of {run['file']}"
            for run in log
        )
        print(f"rows seen:        {estimator.n_samples_seen_:,} ({runs})", file=out)
    else:
        print(f"rows seen:        {estimator.n_samples_seen_:,}", file=out)
    print(
        f"non-zero weights: {nonzero:,} of {coef.size:,} ({100 * nonzero / coef.size:.2f}%)",
        file=out,
    )
    intercept = " ".join(f"{value:.6g}" for value in estimator.intercept_)
    print(f"intercept:        {intercept}", file=out)

    name = feature_namer(estimator, spec)
    multiclass = coef.shape[0] > 1
    if args.all:
        print(f"every non-zero weight ({nonzero:,}), by feature:", file=out)
        outputs, columns = np.nonzero(coef)
        order = np.lexsort((outputs, columns))
        positions = zip(outputs[order].tolist(), columns[order].tolist())
    else:
        top = min(args.top, nonzero)
        flat = np.abs(coef).ravel()
        largest = np.argpartition(-flat, top - 1)[:top] if top else np.zeros(0, np.intp)
        largest = largest[np.argsort(-flat[largest], kind="stable")]
        print(f"largest weights ({top} of {nonzero:,} non-zero, by magnitude):", file=out)
        positions = (divmod(int(position), coef.shape[1]) for position in largest)
    for output, column in positions:
        where = f"class {format_label(estimator.classes_[output])}  " if multiclass else ""
        print(f"  {coef[output, column]:>+12.6f}  {where}{name(column)}", file=out)
    if hasattr(estimator, "n_components"):
        print_interactions(estimator, spec, name, args.top, out)
    return 0
