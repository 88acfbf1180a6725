"""scikit-learn's estimator checks, in the default and non-default configurations."""

import os

import numpy as np
from sklearn.utils.estimator_checks import parametrize_with_checks

from conftest import HAS_NUMBA
from skftrl import FMClassifier, FMRegressor, FTRLClassifier, FTRLRegressor

# Each estimator's defaults, each engine and float32 state. The numpy passes
# (the per-row engine, the mini-batch ones) learn a row in tens of
# microseconds: max_iter=20 keeps their checks to seconds (with the default
# of up to 100 passes, they took a third of this file's time).
CORE = [
    FTRLClassifier(),
    FTRLRegressor(),
    FMClassifier(),
    FMRegressor(),
    FTRLClassifier(engine="numpy", max_iter=20),
    FTRLRegressor(engine="numpy", loss="huber", epsilon=1.0, max_iter=20),
    FTRLClassifier(batch_size=4, l1=0.1, max_iter=20),
    FTRLRegressor(batch_size=4, max_iter=20),
    # The FM's mini-batch pass (numpy whatever the engine).
    FMClassifier(batch_size=32, n_components=3, l1=0.1, max_iter=10),
    FTRLClassifier(dtype=np.float32),
]
if HAS_NUMBA:
    CORE += [FTRLClassifier(engine="numba"), FTRLRegressor(engine="numba")]

# The other configurations: the parameters, every loss, early stopping,
# TensorFlow's rate power and accumulator. CI's stages of the oldest and the
# newest versions, which look for what another release of numpy, scipy or
# scikit-learn breaks, check the core configurations only
# (SKFTRL_ESTIMATOR_CHECKS=core); its full stage checks them all.
MORE = [
    FTRLClassifier(l1=0.5, l2=0.1),
    FTRLClassifier(fit_intercept=False, shuffle=False),
    FTRLClassifier(learning_rate=0.5, beta=0.0),
    FTRLRegressor(loss="huber", epsilon=1.0),
    FTRLRegressor(loss="poisson"),
    FTRLRegressor(l1=0.5, fit_intercept=False),
    FTRLRegressor(dtype=np.float32, loss="poisson"),
    FTRLClassifier(early_stopping=True, validation_fraction=0.2),
    FTRLRegressor(early_stopping=True),
    FTRLClassifier(learning_rate_power=-0.3, initial_accumulator_value=0.1),
    FTRLRegressor(learning_rate_power=0.0, batch_size=3),
    # The factorization machines' numpy pass is the slowest engine: these
    # cover the factor parameters, no intercept, every regression loss,
    # float32 state and early stopping.
    FMClassifier(
        n_components=2,
        factor_l2=0.01,
        l1=0.1,
        factor_learning_rate=0.05,
        fit_intercept=False,
        shuffle=False,
    ),
    FMRegressor(loss="huber", epsilon=1.0, n_components=3),
    FMRegressor(loss="poisson", init_stdev=0.01, dtype=np.float32, early_stopping=True),
    FMRegressor(batch_size=16, factor_l2=0.1, max_iter=10),
]
ESTIMATORS = CORE if os.environ.get("SKFTRL_ESTIMATOR_CHECKS") == "core" else CORE + MORE

# Every check expected to fail, with the reason, in one place.
WEIGHTS_ARE_NOT_REPETITIONS = (
    "FTRL is an online algorithm: a sample weight scales that row's gradient "
    "(McMahan et al. 2013, section 4.6), which is not the same as repeating "
    "the row, since the repeated row would be seen with updated weights and "
    "learning rates."
)
EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": WEIGHTS_ARE_NOT_REPETITIONS,
    "check_sample_weight_equivalence_on_sparse_data": WEIGHTS_ARE_NOT_REPETITIONS,
}
NO_INTERCEPT_FAILURES = {
    "check_class_weight_classifiers": (
        "without an intercept the decision boundary passes through the origin, "
        "so the check's noisy blobs on both sides of it cannot all be given to "
        "the heavily weighted class, whatever the class weights"
    ),
}
HELD_OUT_FM_FAILURES = {
    "check_class_weight_classifiers": (
        "on the check's unscaled blobs (features near +-40) with class weights "
        "1000 : 0.0001, the factors' first passes overshoot, and the held-out "
        "split (5 rows) scores the first pass best, so fit's held-out choice of "
        "passes stops an FM at one pass; with early_stopping=False it passes "
        "(test_fm_passes_the_class_weight_check_without_held_out_stopping)"
    ),
}


def expected_failed_checks(estimator):
    failures = dict(EXPECTED_FAILURES)
    if isinstance(estimator, FTRLClassifier) and not estimator.fit_intercept:
        failures.update(NO_INTERCEPT_FAILURES)
    # The mini-batch configuration above passes that check (it is not
    # expected to fail, so that a regression would show).
    fm_per_row = isinstance(estimator, FMClassifier) and estimator.batch_size == 1
    if fm_per_row and estimator.early_stopping:
        failures.update(HELD_OUT_FM_FAILURES)
    return failures


def test_fm_passes_the_class_weight_check_without_held_out_stopping():
    from sklearn.utils.estimator_checks import check_class_weight_classifiers

    check_class_weight_classifiers("FMClassifier", FMClassifier(early_stopping=False))


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
