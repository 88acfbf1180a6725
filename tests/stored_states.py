"""Training cases whose final states were stored from the code before the engine
layer was redesigned (commit edf8ee9; the factorization machines' cases from
commit 4f9b6b9, before their engines were redesigned), to prove the redesign
changed no bit.

``python tests/stored_states.py`` (from the repository's root) writes
tests/data/engine_states.npz; tests/test_stored_states.py compares against it
with ``==``. Regenerate it only for a deliberate change of the numbers, and say
so in the commit message.

The stored bits are an x86-64 CPU's with AVX2 and no AVX-512: they are
always computed on its numpy and OpenBLAS loops (tests/avx2_loops.py), on
which the comparison is exact on any x86-64 CPU with AVX2.

Every case makes several ``partial_fit`` calls with every hyper-parameter given
explicitly (``fit``'s defaults are not part of what is compared). The cases
cover every engine and batch size, every loss (multinomial included), both state
dtypes, the paper's and another learning-rate power, l1 and l2, sample weights,
with and without intercept, an initial accumulator, float32 input, and inputs
large enough to hit the gradient clipping.
"""

import itertools
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

STORE = Path(__file__).parent / "data" / "engine_states.npz"
STATE = ("z_", "n_", "z_intercept_", "n_intercept_", "loss_curve_")
# A factorization machine's state adds its factors'.
FM_STATE = (*STATE, "z_factors_", "n_factors_")
LOSSES = ("log_loss", "multinomial", "squared_error", "huber", "poisson")
# (engine, batch_size)
ENGINES = (("numpy", 1), ("numba", 1), ("numpy", 4))
N_ROWS, N_FEATURES = 40, 12


def make_data(loss, seed, scale=1.0, float32=False):
    """A small sparse problem for ``loss``: X, y, sample weights."""
    rng = np.random.default_rng(seed)
    X = sp.random(N_ROWS, N_FEATURES, density=0.35, format="csr", random_state=rng)
    X.data = rng.normal(scale=2.0, size=X.nnz) * scale
    if float32:
        X = X.astype(np.float32)
    if loss == "log_loss":
        y = rng.integers(0, 2, size=N_ROWS)
    elif loss == "multinomial":
        y = rng.integers(0, 3, size=N_ROWS)
    elif loss == "poisson":
        y = rng.poisson(1.5, size=N_ROWS).astype(float)
    else:
        y = rng.normal(size=N_ROWS) * 3.0 * scale
    sample_weight = rng.uniform(0.2, 3.0, size=N_ROWS)
    return X, y, sample_weight


# The settings a case does not vary.
BASE = dict(
    dtype="float64",
    learning_rate_power=-0.5,
    fit_intercept=True,
    l1=0.05,
    l2=0.1,
    beta=1.0,
    initial=0.0,
    scale=1.0,
    float32_input=False,
    weighted=True,
)


def cases():
    """(name, settings) of every stored case."""
    for (engine, batch_size), loss, dtype, power, intercept in itertools.product(
        ENGINES, LOSSES, ("float64", "float32"), (-0.5, -0.3), (True, False)
    ):
        name = f"{engine}-b{batch_size}-{loss}-{dtype}-p{power}-i{int(intercept)}"
        yield (
            name,
            dict(
                BASE,
                engine=engine,
                batch_size=batch_size,
                loss=loss,
                dtype=dtype,
                learning_rate_power=power,
                fit_intercept=intercept,
            ),
        )
    # The corners: beta = l2 = 0 (the zero denominator), an initial
    # accumulator, no sample weights, float32 input, huge values (clipping).
    for (engine, batch_size), loss in itertools.product(ENGINES, LOSSES):
        for corner, changes in (
            ("nobeta", dict(beta=0.0, l2=0.0, l1=0.0)),
            ("initial", dict(initial=0.1, learning_rate_power=-0.7)),
            ("unweighted32", dict(weighted=False, float32_input=True)),
            ("huge", dict(scale=1e110)),
            ("huge32", dict(scale=1e20, dtype="float32")),
        ):
            settings = dict(BASE, engine=engine, batch_size=batch_size, loss=loss)
            settings.update(changes)
            yield f"{engine}-b{batch_size}-{loss}-{corner}", settings
    yield from fm_cases()


# The settings of a factorization machine's case that its cases do not vary:
# 3 components (numpy sums fewer than 8 in order) or 9 (8 or more pairwise).
FM_BASE = dict(
    family="fm", n_components=3, init_stdev=0.3, factor_learning_rate=None, factor_l2=0.03
)


def fm_cases():
    """(name, settings) of every stored case of a factorization machine."""
    for (engine, batch_size), loss, dtype, k in itertools.product(
        ENGINES, LOSSES, ("float64", "float32"), (3, 9)
    ):
        name = f"fm-{engine}-b{batch_size}-{loss}-{dtype}-k{k}"
        settings = dict(
            BASE, **FM_BASE, engine=engine, batch_size=batch_size, loss=loss, dtype=dtype
        )
        yield name, dict(settings, n_components=k)
    for (engine, batch_size), loss in itertools.product(ENGINES, LOSSES):
        for corner, changes in (
            ("own-rate", dict(factor_learning_rate=0.05, factor_l2=0.0, fit_intercept=False)),
            ("initial", dict(initial=0.1, learning_rate_power=-0.7)),
            ("unweighted32", dict(weighted=False, float32_input=True)),
            ("huge", dict(scale=1e110)),
            ("huge32", dict(scale=1e20, dtype="float32")),
        ):
            settings = dict(BASE, **FM_BASE, engine=engine, batch_size=batch_size, loss=loss)
            settings.update(changes)
            yield f"fm-{engine}-b{batch_size}-{loss}-{corner}", settings


def train(settings, seed=0):
    """The model of a case, after four partial_fit calls of uneven sizes."""
    from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor

    loss = settings["loss"]
    X, y, sample_weight = make_data(loss, seed, settings["scale"], settings["float32_input"])
    if not settings["weighted"]:
        sample_weight = None
    common = dict(
        learning_rate=0.3,
        beta=settings["beta"],
        l1=settings["l1"],
        l2=settings["l2"],
        learning_rate_power=settings["learning_rate_power"],
        initial_accumulator_value=settings["initial"],
        fit_intercept=settings["fit_intercept"],
        batch_size=settings["batch_size"],
        engine=settings["engine"],
        dtype=np.dtype(settings["dtype"]).type,
        max_iter=1,
        tol=None,
        shuffle=False,
        random_state=0,
        warm_start=False,
        early_stopping=False,
        n_iter_no_change=5,
        validation_fraction=0.1,
    )
    classifier, regressor = FTRLClassifier, FTRLRegressor
    if settings.get("family") == "fm":
        classifier, regressor = FMClassifier, FMRegressor
        common.update(
            {name: settings[name] for name in FM_BASE if name != "family"},
        )
    if loss in ("log_loss", "multinomial"):
        model = classifier(class_weight=None, **common)
        extra = {"classes": np.unique(y)}
    else:
        model = regressor(loss=loss, epsilon=0.7, **common)
        extra = {}
    for part in (slice(0, 1), slice(1, 13), slice(13, 30), slice(30, N_ROWS)):
        weights = None if sample_weight is None else sample_weight[part]
        model.partial_fit(X[part], y[part], sample_weight=weights, **extra)
    return model


def flat_state(model):
    """The model's state and loss curve, one float64 vector (float32 converts exactly)."""
    names = FM_STATE if hasattr(model, "z_factors_") else STATE
    return np.concatenate([np.ravel(getattr(model, name)).astype(np.float64) for name in names])


def states(one_at_a_time=False):
    """{case name: flat state, "dtype/" + case name: the state's dtype} of every
    case (but numba's without numba); with ``one_at_a_time``, only the numpy
    cases, their passes preparing one row or batch per block."""
    import importlib.util

    from skftrl._engines import _rows

    engines = {"numpy"} if one_at_a_time else {"numpy", "numba"}
    if importlib.util.find_spec("numba") is None:
        engines.discard("numba")
    block = _rows.BLOCK_NONZEROS
    if one_at_a_time:
        _rows.BLOCK_NONZEROS = 1
        assert _rows.rows_per_block(sp.csr_matrix(np.ones((4, 4))), 3) == 3
    arrays = {}
    try:
        for name, settings in cases():
            if settings["engine"] in engines:
                model = train(settings)
                arrays[name] = flat_state(model)
                arrays[f"dtype/{name}"] = np.array([str(model.z_.dtype), str(model.n_.dtype)])
    finally:
        _rows.BLOCK_NONZEROS = block
    return arrays


def every_state():
    """:func:`states`, and the numpy cases' one row or batch per block under
    keys ``one_at_a_time/`` + name: what tests/test_stored_states.py compares."""
    arrays = states()
    arrays.update({f"one_at_a_time/{name}": state for name, state in states(True).items()})
    return arrays


def main():
    """Write the store, computed on the AVX2 loops."""
    import avx2_loops

    path = STORE.parent / "engine_states.new.npz"
    arrays = avx2_loops.arrays("stored_states", "states", path)
    path.unlink()
    arrays = {name: state for name, state in arrays.items() if not name.startswith("dtype/")}
    STORE.parent.mkdir(exist_ok=True)
    np.savez_compressed(STORE, **arrays)
    print(f"{len(arrays)} arrays written to {STORE}", file=sys.stderr)


if __name__ == "__main__":
    main()
