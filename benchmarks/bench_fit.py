"""What fit's passes do to held-out log loss: one pass, fit(), early stopping, batch optimum.

For each dataset, FTRLClassifier with default hyper-parameters (random_state=0)
is trained four ways and scored by log loss on held-out rows it never saw:

- one pass: ``partial_fit`` over the training rows once, in their order;
- ``fit()`` with the defaults;
- ``fit(early_stopping=True)``;
- the batch optimum: ``LogisticRegression`` at the C of a grid that scores best
  on the held-out rows (an oracle choice, so the batch column is optimistic).

Datasets: a9a (a9a -> a9a.t), w8a (shuffled with seed 0, last 20% held out, as
in bench_peers.py), and synthetic click logs with a known true model: each row
has one category in each of ``fields`` categorical fields, drawn from a Zipf
law over 10 to ``categories`` values (log-spaced over the fields), so most
(field, category) pairs are rare, hashed into 2^20 columns; every pair has a
true weight N(0, 0.3^2) and the bias gives the click rate. The held-out rows
are 20,000 further rows of the same log (100,000 for the rare-positive one);
"Bayes" is the log loss of the true probabilities on them.

    python benchmarks/bench_fit.py [--datasets a9a,w8a,click-80k,...] [--diagnose]
        [--tune-l2] [--curve]

``--diagnose`` prints instead where ``fit(early_stopping=True)`` loses
against that target: one pass over the 90% of the rows it learns; the pass
it keeps; the best of the same passes chosen on the test rows (an oracle);
scoring every quarter pass instead of every pass; one more pass over the
held-out rows after restoring; ``"refit"`` (the last pass within ``tol``
of the lowest held-out loss); ``"refit"`` at the pass of the lowest; the best of as many shuffled
passes over all the rows, chosen on the test rows (no choice of the number of
passes does better); and LogisticRegression on the same 90% at the C of the
grid best on the test rows (no batch model that never learns the held-out
rows does better).

``--tune-l2`` prints instead the held-out log loss of
``fit(early_stopping=True)`` at the ``l2`` that ``GridSearchCV`` (3 folds of
the training rows, log loss) chooses from ``L2_GRID``: FTRL's regularization
tuned, without the test rows, as the batch column's C is (with them); and
that of LogisticRegression at the C the same search chooses from ``C_GRID``.

``--curve`` prints instead, per dataset, the held-out log loss after each of
``--passes`` shuffled passes for several l1 and l2 (the regularization of
multiple passes, in the user guide). ``--towards-batch C`` compares, per
dataset, LogisticRegression(C) with k passes of FTRL without l2 and with
l2 = k / C (the penalty scaled with the passes): the objective of
LogisticRegression, the held-out log loss and the largest weight difference.
"""

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from bench_peers import Dataset, _mix64, load_dataset
from scipy.optimize import brentq
from scipy.special import expit, ndtri
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, StratifiedKFold

import skftrl
from skftrl import FTRLClassifier

N_FEATURES_LOG2 = 20
C_GRID = [0.01, 0.03, 0.1, 0.3, 1.0, 10.0]
L2_GRID = [0.0, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0]

# name: (training rows, fields, largest vocabulary, Zipf exponent, click rate,
#        held-out rows). The users' logs: 8k to 80k rows, 20 to 35 non-zeros
# a row, mostly rare features, one of them with 0.2% positives.
CLICK_LOGS = {
    "click-80k": (80_000, 33, 10**6, 1.1, 0.17, 20_000),
    "click-8k": (8_000, 33, 10**6, 1.1, 0.17, 20_000),
    "click-9k-22f": (9_000, 22, 10**5, 1.2, 0.12, 20_000),
    "click-8k-rarer": (8_000, 33, 10**6, 0.9, 0.17, 20_000),
    "click-2k": (2_000, 25, 10**5, 1.1, 0.2, 20_000),
    "click-50k-0.3%": (50_000, 30, 10**6, 1.1, 0.003, 100_000),
}
WEIGHT_SCALE = 0.3


def _zipf_categories(rng, n_rows, vocabulary, exponent):
    """Categories 0..vocabulary-1 with P(k) ~ 1/(k+1)^exponent."""
    cumulative = np.cumsum(np.arange(1, vocabulary + 1, dtype=np.float64) ** -exponent)
    return np.searchsorted(cumulative, rng.random(n_rows) * cumulative[-1])


def make_click_log(n_rows, n_fields, largest_vocabulary, exponent, click_rate, seed=0):
    """A hashed click log from a known logistic model.

    Returns CSR X (2^20 columns, values 1, int32 indices), labels 0/1, and the
    true click probabilities. The true weight of a (field, category) pair is
    a hash of the pair turned into a normal deviate, so nothing of the size
    of the vocabularies is stored; the bias is solved for the click rate.
    """
    rng = np.random.default_rng(seed)
    vocabularies = np.logspace(1, np.log10(largest_vocabulary), n_fields).astype(int)
    margins = np.zeros(n_rows)
    columns = np.empty((n_rows, n_fields), dtype=np.int64)
    for field, vocabulary in enumerate(vocabularies):
        category = _zipf_categories(rng, n_rows, vocabulary, exponent).astype(np.uint64)
        key = _mix64(category ^ _mix64(np.full(1, field + 1, dtype=np.uint64)))
        uniform = ((key >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
        margins += WEIGHT_SCALE * ndtri(uniform)
        # Another hash of the pair picks its column: pairs may collide.
        columns[:, field] = _mix64(key) >> np.uint64(64 - N_FEATURES_LOG2)
    bias = brentq(lambda b: expit(margins + b).mean() - click_rate, -30, 30)
    proba = expit(margins + bias)
    labels = (rng.random(n_rows) < proba).astype(np.int64)
    rows = np.repeat(np.arange(n_rows), n_fields)
    X = sp.csr_matrix(
        (np.ones(rows.size), (rows, columns.ravel())), shape=(n_rows, 2**N_FEATURES_LOG2)
    )  # colliding fields of a row are summed
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X, labels, proba


def load(name, data_dir):
    """A Dataset, and the Bayes log loss of its held-out rows (None if unknown)."""
    if name in ("a9a", "w8a"):
        return load_dataset(name, argparse.Namespace(data_dir=data_dir)), None
    n_train, fields, vocabulary, exponent, click_rate, n_test = CLICK_LOGS[name]
    X, y, proba = make_click_log(n_train + n_test, fields, vocabulary, exponent, click_rate)
    bayes = log_loss(y[n_train:], proba[n_train:])
    return Dataset(name, X[:n_train], y[:n_train], X[n_train:], y[n_train:]), bayes


def held_out_loss(model, ds):
    return log_loss(ds.y_test, model.predict_proba(ds.X_test)[:, 1])


def describe(ds):
    nnz = ds.X_train.nnz / ds.X_train.shape[0]
    counts = np.bincount(ds.X_train.indices, minlength=ds.X_train.shape[1])
    used = counts > 0
    rare = (counts[used] <= 5).mean()
    test_counts = counts[ds.X_test.indices]
    unseen = (test_counts == 0).mean()
    return (
        f"{ds.X_train.shape[0]:,} rows, {nnz:.1f} nnz/row, {ds.y_train.mean():.2%} "
        f"positive, {used.sum():,} columns used, {rare:.0%} of them seen <= 5 times; "
        f"{unseen:.0%} of held-out non-zeros unseen in training"
    )


def batch_optimum(ds):
    """Held-out log loss of LogisticRegression at the best C of C_GRID, and that C."""
    scores = {}
    for C in C_GRID:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            lr = LogisticRegression(C=C, max_iter=2000).fit(ds.X_train, ds.y_train)
        scores[C] = held_out_loss(lr, ds)
    best = min(scores, key=scores.get)
    return scores[best], best


def passes(model):
    """Passes made, and the pass kept when early stopping chose one."""
    best = getattr(model, "best_iteration_", None)
    if best is None or best == model.n_iter_:
        return f"{model.n_iter_}p"
    return f"best {best} of {model.n_iter_}p"


def table_row(name, ds, bayes):
    classes = np.array([0, 1])
    began = time.perf_counter()
    one = FTRLClassifier(random_state=0).partial_fit(ds.X_train, ds.y_train, classes=classes)
    one_pass = held_out_loss(one, ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        default = FTRLClassifier(random_state=0).fit(ds.X_train, ds.y_train)
        stopped = FTRLClassifier(random_state=0, early_stopping=True).fit(ds.X_train, ds.y_train)
    batch, best_C = batch_optimum(ds)
    seconds = time.perf_counter() - began
    default_loss, stopped_loss = held_out_loss(default, ds), held_out_loss(stopped, ds)
    target = min(one_pass, batch)
    cells = [
        f"{one_pass:.4f}",
        f"{default_loss:.4f} ({passes(default)}, {default_loss / one_pass - 1:+.2%}; "
        f"{default_loss / target - 1:+.2%})",
        f"{stopped_loss:.4f} ({passes(stopped)}, {stopped_loss / target - 1:+.2%})",
        f"{batch:.4f} (C={best_C:g})",
        "" if bayes is None else f"{bayes:.4f}",
    ]
    print(f"| {name} | " + " | ".join(cells) + f" |  [{seconds:.0f} s]", flush=True)


def diagnose(name, ds):
    """Where fit(early_stopping=True) loses against the better of one pass and
    the batch optimum: the rows it learns, the pass it keeps, and variants."""
    classes = np.array([0, 1])
    one_pass = held_out_loss(
        FTRLClassifier().partial_fit(ds.X_train, ds.y_train, classes=classes), ds
    )
    batch, best_C = batch_optimum(ds)
    target = min(one_pass, batch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        stopped = FTRLClassifier(random_state=0, early_stopping=True).fit(ds.X_train, ds.y_train)
        refit = FTRLClassifier(random_state=0).fit(ds.X_train, ds.y_train)
    # fit's split and shuffles, by hand: its random state splits, then shuffles.
    random_state = np.random.RandomState(0)
    rows, validation = stopped._validation_split(ds.y_train, random_state)
    X_validation, y_validation = ds.X_train[validation], ds.y_train[validation]
    by_hand = FTRLClassifier()
    test_losses, validation_losses, kept = [], [], None
    for n_pass in range(1, stopped.n_iter_ + 1):
        random_state.shuffle(rows)
        for quarter in np.array_split(rows, 4):
            by_hand.partial_fit(ds.X_train[quarter], ds.y_train[quarter], classes=classes)
            test_losses.append(held_out_loss(by_hand, ds))
            validation_losses.append(log_loss(y_validation, by_hand.predict_proba(X_validation)))
        if n_pass == stopped.best_iteration_:
            assert np.array_equal(by_hand.z_, stopped.z_), "not fit's passes"
            kept = by_hand.partial_fit(X_validation, y_validation)
            then_held_out = held_out_loss(kept, ds)
    one_pass_90 = held_out_loss(
        FTRLClassifier().partial_fit(
            ds.X_train[np.sort(rows)], ds.y_train[np.sort(rows)], classes=classes
        ),
        ds,
    )
    per_pass = test_losses[3::4]
    oracle = int(np.argmin(per_pass))
    quarter = int(np.argmin(validation_losses))
    # "refit"'s passes over every row, by hand, as many as fit made: the
    # k-th is "refit" with k passes; the best, chosen on the test rows (an
    # oracle), is what no choice of the number of passes at these
    # hyper-parameters beats.
    all_rows, all_rows_losses = np.arange(ds.X_train.shape[0]), []
    every_row = FTRLClassifier()
    for n_pass in range(1, stopped.n_iter_ + 1):
        random_state.shuffle(all_rows)
        every_row.partial_fit(ds.X_train[all_rows], ds.y_train[all_rows], classes=classes)
        all_rows_losses.append(held_out_loss(every_row, ds))
        if n_pass == refit.best_iteration_:
            assert np.array_equal(every_row.z_, refit.z_), "not refit's passes"
    best_all_rows = int(np.argmin(all_rows_losses))
    # The best batch model that never learns the held-out rows: C chosen on the test rows.
    lr_90 = {}
    for C in C_GRID:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            lr = LogisticRegression(C=C, max_iter=2000).fit(ds.X_train[rows], ds.y_train[rows])
        lr_90[C] = held_out_loss(lr, ds)
    best_C_90 = min(lr_90, key=lr_90.get)

    def cell(loss, note=""):
        return f"{loss:.4f} ({note}{loss / target - 1:+.2%})"

    cells = [
        f"{target:.4f}",
        cell(one_pass_90),
        cell(held_out_loss(stopped, ds), f"{stopped.best_iteration_}p, "),
        cell(per_pass[oracle], f"{oracle + 1}p, "),
        cell(test_losses[quarter], f"{(quarter + 1) / 4:g}p, "),
        cell(then_held_out),
        cell(held_out_loss(refit, ds), f"{refit.best_iteration_}p, "),
        cell(all_rows_losses[stopped.best_iteration_ - 1], f"{stopped.best_iteration_}p, "),
        cell(all_rows_losses[best_all_rows], f"{best_all_rows + 1}p, "),
        cell(lr_90[best_C_90], f"C={best_C_90:g}, "),
    ]
    print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def searched(estimator, grid, ds):
    """The held-out log loss of ``estimator`` at the value of ``grid`` (one
    parameter) that GridSearchCV chooses on the training rows, and that value."""
    search = GridSearchCV(
        estimator,
        grid,
        scoring="neg_log_loss",
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(ds.X_train, ds.y_train)
    (value,) = search.best_params_.values()
    return held_out_loss(search.best_estimator_, ds), value


def tuned_l2(name, ds, target):
    """fit(early_stopping=True) at the l2 GridSearchCV chooses on the training
    rows, and the batch optimum with its C chosen the same way."""
    loss, l2 = searched(FTRLClassifier(random_state=0, early_stopping=True), {"l2": L2_GRID}, ds)
    batch, C = searched(LogisticRegression(max_iter=2000), {"C": C_GRID}, ds)
    print(
        f"| {name} | {target:.4f} | {loss:.4f} (l2={l2:g}, {loss / target - 1:+.2%}) "
        f"| {batch:.4f} (C={C:g}, {batch / target - 1:+.2%}) |",
        flush=True,
    )


def curve(name, ds, passes):
    """Held-out log loss after each pass, for several l1 and l2."""
    print(f"\n{name}: held-out log loss after each of {passes} passes (fit, tol=None)")
    settings = [dict(), dict(l2=1.0), dict(l2=10.0), dict(l2=100.0), dict(l1=1.0), dict(l1=10.0)]
    for params in settings:
        model = FTRLClassifier(random_state=0, **params)
        losses = []
        for n_passes in range(1, passes + 1):
            model.set_params(
                max_iter=1,
                tol=None,
                early_stopping=False,
                warm_start=n_passes > 1,
                random_state=n_passes,
            )
            model.fit(ds.X_train, ds.y_train)
            losses.append(held_out_loss(model, ds))
        label = ", ".join(f"{k}={v:g}" for k, v in params.items()) or "l1=l2=0"
        best = int(np.argmin(losses)) + 1
        print(f"  {label:>8}: " + " ".join(f"{v:.4f}" for v in losses) + f"  best pass {best}")


def towards_batch(name, ds, C):
    """How close k passes with l2 = k / C get to LogisticRegression(C)'s optimum."""
    lr = LogisticRegression(C=C, max_iter=5000, tol=1e-10).fit(ds.X_train, ds.y_train)

    def objective(coef, intercept):
        margins = ds.X_train @ coef + intercept
        losses = np.logaddexp(0, margins) - ds.y_train * margins
        return losses.sum() + 0.5 * coef @ coef / C

    optimum = objective(lr.coef_[0], lr.intercept_[0])
    print(
        f"\n{name}: LogisticRegression(C={C:g}): objective {optimum:.2f}, "
        f"held-out {held_out_loss(lr, ds):.4f}"
    )
    for k in (5, 20, 50):
        for l2 in (0.0, k / C):
            model = FTRLClassifier(l2=l2, max_iter=k, tol=None, early_stopping=False)
            model.set_params(random_state=0).fit(ds.X_train, ds.y_train)
            gap = objective(model.coef_[0], model.intercept_[0]) / optimum - 1
            difference = np.abs(model.coef_[0] - lr.coef_[0]).max()
            print(
                f"  {k:>2} passes, l2={l2:<6g}: objective {gap:+.2%} from the optimum, "
                f"held-out {held_out_loss(model, ds):.4f}, largest weight difference "
                f"{difference:.3f}"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(["a9a", "w8a", *CLICK_LOGS]))
    parser.add_argument("--curve", action="store_true")
    parser.add_argument("--diagnose", action="store_true")
    parser.add_argument("--tune-l2", action="store_true")
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--towards-batch", type=float, metavar="C")
    default_data = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    parser.add_argument("--data-dir", type=Path, default=default_data)
    args = parser.parse_args()
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    unknown = set(names) - {"a9a", "w8a", *CLICK_LOGS}
    if unknown:
        parser.error(f"unknown datasets {sorted(unknown)}")
    versions = [f"{m.__name__} {m.__version__}" for m in (np, scipy, sklearn, skftrl)]
    print(f"{platform.platform()}, {os.cpu_count()} CPUs; " + ", ".join(versions))
    datasets = []
    for name in names:
        ds, bayes = load(name, args.data_dir)
        if ds is not None:
            print(f"{name}: {describe(ds)}")
            datasets.append((name, ds, bayes))
    if args.curve:
        for name, ds, _ in datasets:
            curve(name, ds, args.passes)
        return
    if args.diagnose:
        print(
            "\nHeld-out log loss, FTRLClassifier defaults, random_state=0; in brackets "
            "the passes\nover the 90% of the rows early stopping learns, and the "
            "difference from the target:\nthe better of one pass and the batch "
            'optimum. Only the columns "then the held-out rows",\n"refit" '
            'and "best pass over all rows" learn all the rows.\n'
        )
        print(
            "| data | target | one pass over the 90% | early_stopping=True | "
            "best pass on the test rows | scored every 1/4 pass | True, then the "
            'held-out rows once | "refit" | "refit" at the lowest | best pass over all rows on '
            "the test "
            "rows | best batch LR on the 90% |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for name, ds, _ in datasets:
            diagnose(name, ds)
        return
    if args.tune_l2:
        print(
            "\nHeld-out log loss of fit(early_stopping=True), l2 chosen by "
            "GridSearchCV on the training rows;\nthe target is the better of "
            "one pass and the batch optimum.\n"
        )
        print("| data | target | early_stopping=True, tuned l2 | batch LR, C tuned the same way |")
        print("|---|---|---|---|")
        for name, ds, _ in datasets:
            one_pass = FTRLClassifier().partial_fit(ds.X_train, ds.y_train, classes=[0, 1])
            tuned_l2(name, ds, min(held_out_loss(one_pass, ds), batch_optimum(ds)[0]))
        return
    if args.towards_batch:
        for name, ds, _ in datasets:
            towards_batch(name, ds, args.towards_batch)
        return
    print(
        "\nHeld-out log loss, FTRLClassifier defaults, random_state=0. In brackets: "
        "passes made;\nfit() relative to one pass, then to the target; early "
        "stopping relative to the target:\nthe better of one pass and the batch "
        "optimum.\n"
    )
    print("| data | one pass | fit() | fit(early_stopping=True) | batch LR, best C | Bayes |")
    print("|---|---|---|---|---|---|")
    for name, ds, bayes in datasets:
        table_row(name, ds, bayes)


if __name__ == "__main__":
    main()
