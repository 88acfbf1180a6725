"""The factorization machine's exact per-row engine compiled with numba.

Its pass is the linear engine's (:func:`._numba_exact._pass`), given the
factors: one compiled pass for both models, whose factor steps numba leaves
out of the linear model's. Importing this module needs numba.
"""

from ._fm_numpy import FactorizationEngine
from ._numba_exact import NumbaEngine, compiled_rates


class FMNumbaEngine(FactorizationEngine, NumbaEngine):
    """The factorization machine's exact per-row pass, compiled; the linear
    weights as the linear numba engine computes them."""

    def factor_arguments(self, state, parameters, undo):
        factors = (
            (state.z_factors, state.n_factors),
            compiled_rates(parameters.of_factors()),
            float(parameters.factor_l2),
        )
        return factors, None if undo is None else (undo.z_factors, undo.n_factors)
