"""The exact per-row FTRL-Proximal pass compiled with numba (``engine="numba"``).

The numpy per-row pass (:mod:`._numpy_exact`) written as loops over a row's
non-zeros, so that numba compiles it to machine code; its formulas are
:mod:`._math`'s and :mod:`._losses`' scalar functions, compiled unchanged. It
is optional: importing this module needs numba (``pip install "skftrl[fast]"``).
Compiled code is cached on disk (``cache=True``), so only the first process on
a machine pays the compile time; where numba finds no writable cache location,
each process compiles it.
"""

import math
import warnings

import llvmlite.ir as ir
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import NumpyEngine
from . import _losses, _math
from ._math import compiled_power, flat_state_and_weights, max_abs_gradient, smallest_stored_n



def _cache_probe():
    """Never run: numba's search for a cache location for this file uses it."""


def _can_cache():
    """Whether numba can cache this module's compiled code on disk.

    numba caches next to the module (``__pycache__``), in ``NUMBA_CACHE_DIR``
    or in the user's cache directory, and ``cache=True`` raises a
    RuntimeError ("cannot cache function ...: no locator available") when
    none is writable, as on a read-only install. The code then compiles in
    each process instead, with one warning saying how to cache it.
    """
    try:
        njit(cache=True)(_cache_probe)
    except RuntimeError as error:
        warnings.warn(
            f"skftrl's numba engine cannot cache its compiled code ({error}): it "
            "compiles in each process that uses it, which takes a few seconds. "
            "Set the environment variable NUMBA_CACHE_DIR to a writable "
            "directory to cache it.",
            stacklevel=2,
        )
        return False
    return True


# error_model="numpy": a division by zero gives inf or nan as in numpy, with no
# per-division check (the denominators are guarded anyway). Without it, numba
# adds a branch raising ZeroDivisionError to every division.
compile = njit(cache=_can_cache(), error_model="numpy")

_rate_root = compile(_math.rate_root_scalar)
_weight = compile(_math.weight)
_step = compile(_math.step)
_clip = compile(_math.clip)
_rescaled_margin = compile(_math.rescaled_margin)
_scalar_derivative = compile(_losses.scalar_derivative)
_softmax_derivative = compile(_losses.softmax_derivative)


# Each row's coordinates are prefetched this many rows before the row is
# learned from, when the state is larger than PREFETCH_STATE_BYTES: a state that
# fits in the CPU's fastest caches gains nothing from it, and pays for the
# instructions. docs/benchmarks.rst gives the measured effect.
PREFETCH_ROWS_AHEAD = 4
PREFETCH_STATE_BYTES = 2**17


@intrinsic
def _prefetch(typing_context, array, index):
    """Ask the CPU to bring ``array[index]`` into its caches, without waiting.

    LLVM's ``llvm.prefetch`` (read, high locality, data cache): unlike a load,
    it never stalls the instructions that follow. numba has no public API for
    it; ``cgutils`` is numba's own helper module for code generation.
    """

    def codegen(context, builder, signature, arguments):
        array_type, index_type = signature.args
        array_value, index_value = arguments
        index_value = context.cast(builder, index_value, index_type, types.intp)
        view = context.make_array(array_type)(context, builder, array_value)
        address = cgutils.get_item_pointer(
            context, builder, array_type, view, [index_value], wraparound=False
        )
        byte_pointer = ir.IntType(8).as_pointer()
        integer = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [byte_pointer, integer, integer, integer]),
            "llvm.prefetch.p0i8",
        )
        read, high_locality, data_cache = (ir.Constant(integer, k) for k in (0, 3, 1))
        builder.call(
            function, [builder.bitcast(address, byte_pointer), read, high_locality, data_cache]
        )
        return context.get_dummy_value()

    return types.void(array, index), codegen


@compile
def _prefetch_row(indptr, indices, rows, position, state_by_feature, rows_ahead):
    """Prefetch the state of each coordinate of the row ``rows_ahead`` after ``position``.

    On a wide model most coordinates are not in the CPU's cache, and a row's
    loop would wait for each of them in turn. Requested a few rows early,
    they arrive while the rows before are computed (each feature's z and n
    share a cache line, see new_state).
    """
    ahead = position + rows_ahead
    if ahead >= rows.shape[0]:
        return
    row = rows[ahead]
    for j in range(indptr[row], indptr[row + 1]):
        _prefetch(state_by_feature, indices[j])


@compile
def _pass(
    indptr,
    indices,
    data,
    targets,
    sample_weight,
    rows,
    z_by_feature,
    n_by_feature,
    z_intercept,
    n_intercept,
    loss_code,
    learning_rate,
    beta,
    l1,
    l2,
    fit_intercept,
    epsilon,
    learning_rate_power,
    bound,
    smallest_n,
    margins,
    several_outputs,
    rows_ahead,
    undo_columns,
    undo_z,
    undo_n,
):
    """The pass over ``rows``; the state by feature, shape (F, K); margins (len(rows), K).

    ``several_outputs`` is None for one output: numba then compiles a version
    in which K is the constant 1, and its loops over outputs disappear.
    ``rows_ahead`` is None for no prefetching (pruned when compiled, too).
    ``undo_columns`` (None: no record) and ``undo_z``, ``undo_n`` receive the
    old values of each coordinate before its change (see UndoLog); returns
    the number of records.
    """
    if several_outputs is None:
        n_outputs = 1
    else:
        n_outputs = z_by_feature.shape[1]
    longest_row = 0
    for row in rows:
        longest_row = max(longest_row, indptr[row + 1] - indptr[row])
    # The weights and rate roots (sqrt(n)) of the current row, reused by its update.
    row_weights = np.empty((longest_row, n_outputs))
    row_root_n = np.empty((longest_row, n_outputs))
    intercept_weights = np.empty(n_outputs)
    intercept_root_n = np.empty(n_outputs)
    derivative = np.empty(n_outputs)
    first_output_z = z_by_feature[:, 0]
    recorded = 0
    for position in range(rows.shape[0]):
        if rows_ahead is not None:
            _prefetch_row(indptr, indices, rows, position, first_output_z, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]
        margin = margins[position]
        for k in range(n_outputs):
            intercept_root_n[k] = _rate_root(n_intercept[k], learning_rate_power)
            intercept_weights[k] = _weight(
                z_intercept[k], intercept_root_n[k], learning_rate, beta, 0.0, 0.0
            )
            margin[k] = 0.0
        for j in range(start, end):
            column = indices[j]
            for k in range(n_outputs):
                # A float32 state is computed on in float64, as in the numpy engine.
                root_n = _rate_root(np.float64(n_by_feature[column, k]), learning_rate_power)
                weight = _weight(
                    np.float64(z_by_feature[column, k]), root_n, learning_rate, beta, l1, l2
                )
                row_root_n[j - start, k] = root_n
                row_weights[j - start, k] = weight
                margin[k] += data[j] * weight
        for k in range(n_outputs):
            margin[k] += intercept_weights[k]
            if not math.isfinite(margin[k]):
                margin[k] = _rescaled_margin(
                    data[start:end], row_weights[: end - start, k], intercept_weights[k]
                )

        if several_outputs is None:
            derivative[0] = _scalar_derivative(loss_code, margin[0], targets[row], epsilon)
        else:
            _softmax_derivative(margin, targets[row], derivative)
        for k in range(n_outputs):
            derivative[k] = _clip(derivative[k] * sample_weight[row], _math.LARGEST)
        for j in range(start, end):
            column = indices[j]
            if undo_columns is not None:
                undo_columns[recorded] = column
                for k in range(n_outputs):
                    undo_z[recorded, k] = z_by_feature[column, k]
                    undo_n[recorded, k] = n_by_feature[column, k]
                recorded += 1
            for k in range(n_outputs):
                gradient = _clip(data[j] * derivative[k], bound)
                z_by_feature[column, k], n_by_feature[column, k] = _step(
                    np.float64(z_by_feature[column, k]),
                    np.float64(n_by_feature[column, k]),
                    row_root_n[j - start, k],
                    row_weights[j - start, k],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    learning_rate_power,
                    smallest_n,
                )
        if fit_intercept:
            for k in range(n_outputs):
                gradient = _clip(derivative[k], bound)
                z_intercept[k], n_intercept[k] = _step(
                    z_intercept[k],
                    n_intercept[k],
                    intercept_root_n[k],
                    intercept_weights[k],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    learning_rate_power,
                    0.0,  # the intercept's state is float64
                )
    return recorded


@compile
def _flat_weights(z, n, learning_rate, beta, l1, l2, learning_rate_power, weights):
    """_weight of every coordinate with |z| > l1, written into ``weights`` (all 1-d)."""
    for i in range(z.shape[0]):
        if abs(z[i]) > l1:
            root_n = _rate_root(np.float64(n[i]), learning_rate_power)
            weights[i] = _weight(np.float64(z[i]), root_n, learning_rate, beta, l1, l2)


class NumbaEngine(NumpyEngine):
    """The exact per-row pass and the whole state's weights, compiled."""

    name = "numba"
    # One pass over the state costs less compiled (see NumpyEngine).
    whole_weights_cost = 1 / 16

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        z, n, z_intercept, n_intercept = state
        margins = np.empty((len(rows), z.shape[0]), dtype=np.float64)
        recorded = _pass(
            X.indptr,
            X.indices,
            X.data,
            np.asarray(targets, dtype=np.float64),
            sample_weight,
            np.asarray(rows, dtype=np.intp),
            z.T,
            n.T,
            z_intercept,
            n_intercept,
            parameters.loss.code,
            float(parameters.learning_rate),
            float(parameters.beta),
            float(parameters.l1),
            float(parameters.l2),
            bool(parameters.fit_intercept),
            float(parameters.loss.epsilon),
            compiled_power(parameters.learning_rate_power),
            max_abs_gradient(z.dtype),
            smallest_stored_n(z.dtype),
            margins,
            None if z.shape[0] == 1 else True,
            PREFETCH_ROWS_AHEAD if 2 * z.nbytes > PREFETCH_STATE_BYTES else None,
            *((None, None, None) if undo is None else (undo.columns, undo.z, undo.n)),
        )
        if undo is not None:
            undo.used = recorded
        return margins

    def weights(self, state, parameters):
        """One compiled pass over the state: numpy needs several (a mask,
        gathers, arithmetic, a scatter)."""
        flat_z, flat_n, coef, flat_coef = flat_state_and_weights(state.z, state.n)
        _flat_weights(
            flat_z,
            flat_n,
            float(parameters.learning_rate),
            float(parameters.beta),
            float(parameters.l1),
            float(parameters.l2),
            compiled_power(parameters.learning_rate_power),
            flat_coef,
        )
        return coef
