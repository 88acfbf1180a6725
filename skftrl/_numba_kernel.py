"""The exact per-row FTRL-Proximal pass compiled with numba (``engine="numba"``).

The same algorithm as :func:`skftrl._kernel.ftrl_pass`, operation for
operation, written as loops over a row's non-zeros so that numba compiles it to
machine code. It is optional: importing this module needs numba
(``pip install "skftrl[fast]"``). Compiled code is cached on disk
(``cache=True``), so only the first process on a machine pays the compile
time; where numba finds no writable cache location, each process compiles it.
"""

import math
import warnings

import numpy as np
import llvmlite.ir as ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._kernel import (
    HUBER,
    LARGEST,
    LOG_LOSS,
    LOSSES,
    MAX_EXP_MARGIN,
    MULTINOMIAL,
    PAPER_LEARNING_RATE_POWER,
    SQUARED_ERROR,
    TINY,
    flat_state_and_weights,
    max_abs_gradient,
    rescaled_margin,
    scalar_loss_derivative,
    smallest_stored_n,
)



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
_compile = njit(cache=_can_cache(), error_model="numpy")



# The paper's rate (learning_rate_power -0.5) is passed to the kernel as None:
# numba then removes the `is None` branches when it compiles, and the inner
# loops keep only sqrt. Testing the float's value instead costs a third of the
# speed, as the branch stays in every coordinate's update.


def _compiled_power(learning_rate_power):
    """The kernels' ``learning_rate_power``: None for the paper's -0.5 (see above)."""
    if learning_rate_power == PAPER_LEARNING_RATE_POWER:
        return None
    return float(learning_rate_power)


@_compile
def _rate_root(n, learning_rate_power):
    """skftrl._kernel.rate_root of one coordinate; None is the paper's -0.5."""
    if learning_rate_power is None:
        return math.sqrt(n)
    return n**-learning_rate_power


@_compile
def _weight(z, root_n, learning_rate, beta, l1, l2):
    """One coordinate of skftrl._kernel._weights, in the same operations."""
    denominator = root_n / learning_rate
    denominator += beta / learning_rate + l2
    # As in the numpy engine: 0 only where n = 0 and beta / learning_rate + l2
    # is 0 (beta = l2 = 0, or a tiny beta over the rate underflowed).
    if denominator == 0:
        denominator = 1.0
    if l1 > 0:
        z = z - min(max(z, -l1), l1)
    return -(z / denominator)


@_compile
def _update(z, n, root_n, weight, gradient, learning_rate, learning_rate_power, smallest_n):
    """One coordinate of skftrl._kernel._update_coordinates; returns (z, n)."""
    squared = gradient * gradient
    new_n = n + squared
    if learning_rate_power is None:
        denominator = (math.sqrt(new_n) + root_n) * learning_rate
        sigma = squared / max(denominator, TINY)
    else:
        sigma = (_rate_root(new_n, learning_rate_power) - root_n) / learning_rate
    new_z = z + gradient - sigma * weight
    if squared > 0 and new_n < smallest_n:
        new_n = smallest_n
    return new_z, new_n


# Each row's coordinates are prefetched this many rows before the row is
# learned from, when the state is larger than PREFETCH_STATE_BYTES (see
# _prefetch_row). Measured on a hashed stream from 2**10 to 2**22 columns:
# 2 rows ahead or more doubles the speed from 4 MiB of state up and gains
# 10% at 256 KiB; with a state of a few KiB, which stays in the L1 cache,
# prefetching only costs time.
PREFETCH_ROWS_AHEAD = 4
PREFETCH_STATE_BYTES = 2**17


@intrinsic
def _prefetch(typing_context, array, index):
    """Ask the CPU to bring ``array[index]`` into its caches, without waiting.

    LLVM's ``llvm.prefetch`` (read, high locality, data cache): unlike a load,
    it never stalls the instructions that follow.
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


@_compile
def _prefetch_row(indptr, indices, rows, position, state_by_feature, rows_ahead):
    """Prefetch the state of each coordinate of the row ``rows_ahead`` after ``position``.

    On a wide model most coordinates are not in the CPU's cache, and a row's
    loop would wait for each of them in turn. Requested a few rows early,
    they arrive while the rows before are computed (each feature's z and n
    share a cache line): 2 times faster on 2**20 hashed columns.
    """
    ahead = position + rows_ahead
    if ahead >= rows.shape[0]:
        return
    row = rows[ahead]
    for j in range(indptr[row], indptr[row + 1]):
        _prefetch(state_by_feature, indices[j])


@_compile
def _clip(value, bound):
    return max(min(value, bound), -bound)


@_compile
def _loss_derivative(loss, margins, target, epsilon, derivative):
    """skftrl._kernel.loss_derivative for one row, written into ``derivative``."""
    if loss == LOG_LOSS:
        derivative[0] = 1.0 / (1.0 + math.exp(-margins[0])) - target
    elif loss == MULTINOMIAL:
        top = margins.max()
        total = 0.0
        for k in range(margins.shape[0]):
            derivative[k] = math.exp(margins[k] - top)
            total += derivative[k]
        for k in range(margins.shape[0]):
            derivative[k] /= total
        derivative[int(target)] -= 1.0
    elif loss == SQUARED_ERROR:
        derivative[0] = margins[0] - target
    elif loss == HUBER:
        derivative[0] = min(max(margins[0] - target, -epsilon), epsilon)
    else:  # POISSON
        derivative[0] = math.exp(min(margins[0], MAX_EXP_MARGIN)) - target


# The numpy engine's own functions, compiled: one definition for both engines.
_scalar_loss_derivative = _compile(scalar_loss_derivative)
_rescaled_margin = _compile(rescaled_margin)


@_compile
def _pass_single_output(
    indptr,
    indices,
    data,
    targets,
    sample_weight,
    rows,
    z,
    n,
    z_intercept,
    n_intercept,
    loss,
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
    rows_ahead,
):
    """_pass for one output (binary and regression models), z and n of shape (F,).

    The same operations as _pass; without its loops over outputs and 2-d
    buffers, numba compiles it to code about 1.5 times faster.
    """
    longest_row = 0
    for row in rows:
        longest_row = max(longest_row, indptr[row + 1] - indptr[row])
    row_weights = np.empty(longest_row)
    row_root_n = np.empty(longest_row)
    for position in range(rows.shape[0]):
        # None (no prefetching) is pruned when numba compiles, as for the rate.
        if rows_ahead is not None:
            _prefetch_row(indptr, indices, rows, position, z, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]
        intercept_weight = _weight(
            z_intercept[0],
            _rate_root(n_intercept[0], learning_rate_power),
            learning_rate,
            beta,
            0.0,
            0.0,
        )
        margin = 0.0
        for j in range(start, end):
            column = indices[j]
            root_n = _rate_root(np.float64(n[column]), learning_rate_power)
            weight = _weight(np.float64(z[column]), root_n, learning_rate, beta, l1, l2)
            row_root_n[j - start] = root_n
            row_weights[j - start] = weight
            margin += data[j] * weight
        margin += intercept_weight
        if not math.isfinite(margin):
            margin = _rescaled_margin(
                data[start:end], row_weights[: end - start], intercept_weight
            )
        margins[position] = margin

        derivative = _clip(
            sample_weight[row] * _scalar_loss_derivative(loss, margin, targets[row], epsilon),
            LARGEST,
        )
        for j in range(start, end):
            column = indices[j]
            z[column], n[column] = _update(
                np.float64(z[column]),
                np.float64(n[column]),
                row_root_n[j - start],
                row_weights[j - start],
                _clip(data[j] * derivative, bound),
                learning_rate,
                learning_rate_power,
                smallest_n,
            )
        if fit_intercept:
            z_intercept[0], n_intercept[0] = _update(
                z_intercept[0],
                n_intercept[0],
                _rate_root(n_intercept[0], learning_rate_power),
                intercept_weight,
                _clip(derivative, bound),
                learning_rate,
                learning_rate_power,
                0.0,  # the intercept's state is float64
            )


@_compile
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
    loss,
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
    rows_ahead,
):
    n_outputs = z_by_feature.shape[1]
    longest_row = 0
    for row in rows:
        longest_row = max(longest_row, indptr[row + 1] - indptr[row])
    # The weights and rate roots (sqrt(n)) of the current row, reused by its update.
    row_weights = np.empty((longest_row, n_outputs))
    row_root_n = np.empty((longest_row, n_outputs))
    intercept_weights = np.empty(n_outputs)
    derivative = np.empty(n_outputs)
    first_output_z = z_by_feature[:, 0]
    for position in range(rows.shape[0]):
        if rows_ahead is not None:
            _prefetch_row(indptr, indices, rows, position, first_output_z, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]
        margin = margins[position]
        for k in range(n_outputs):
            intercept_weights[k] = _weight(
                z_intercept[k],
                _rate_root(n_intercept[k], learning_rate_power),
                learning_rate,
                beta,
                0.0,
                0.0,
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

        _loss_derivative(loss, margin, targets[row], epsilon, derivative)
        for k in range(n_outputs):
            derivative[k] = _clip(derivative[k] * sample_weight[row], LARGEST)
        for j in range(start, end):
            column = indices[j]
            for k in range(n_outputs):
                z_by_feature[column, k], n_by_feature[column, k] = _update(
                    np.float64(z_by_feature[column, k]),
                    np.float64(n_by_feature[column, k]),
                    row_root_n[j - start, k],
                    row_weights[j - start, k],
                    _clip(data[j] * derivative[k], bound),
                    learning_rate,
                    learning_rate_power,
                    smallest_n,
                )
        if fit_intercept:
            for k in range(n_outputs):
                z_intercept[k], n_intercept[k] = _update(
                    z_intercept[k],
                    n_intercept[k],
                    _rate_root(n_intercept[k], learning_rate_power),
                    intercept_weights[k],
                    _clip(derivative[k], bound),
                    learning_rate,
                    learning_rate_power,
                    0.0,  # the intercept's state is float64
                )


@_compile
def _flat_weights(z, n, learning_rate, beta, l1, l2, learning_rate_power, weights):
    """_weight of every coordinate with |z| > l1, written into ``weights`` (all 1-d)."""
    for i in range(z.shape[0]):
        if abs(z[i]) > l1:
            root_n = _rate_root(np.float64(n[i]), learning_rate_power)
            weights[i] = _weight(np.float64(z[i]), root_n, learning_rate, beta, l1, l2)


def weights_from_state(
    z, n, learning_rate, beta, l1, l2, learning_rate_power=PAPER_LEARNING_RATE_POWER
):
    """:func:`skftrl._kernel.weights_from_state`, compiled: one pass over the state.

    Prediction computes the weights once per call; on a wide hashed model
    that pass over every coordinate costs as much as the sparse product, and
    numpy needs several (a mask, gathers, arithmetic, a scatter).
    """
    flat_z, flat_n, weights, flat_weights = flat_state_and_weights(z, n)
    _flat_weights(
        flat_z,
        flat_n,
        float(learning_rate),
        float(beta),
        float(l1),
        float(l2),
        _compiled_power(learning_rate_power),
        flat_weights,
    )
    return weights


def ftrl_pass(
    X,
    targets,
    sample_weight,
    rows,
    state,
    *,
    loss,
    learning_rate,
    beta,
    l1,
    l2,
    fit_intercept,
    epsilon=0.1,
    learning_rate_power=PAPER_LEARNING_RATE_POWER,
):
    """:func:`skftrl._kernel.ftrl_pass`, compiled; same parameters and result."""
    z, n, z_intercept, n_intercept = state
    margins = np.empty((len(rows), z.shape[0]), dtype=np.float64)
    if z.shape[0] == 1:
        kernel, z_kernel, n_kernel, margins_kernel = _pass_single_output, z[0], n[0], margins[:, 0]
    else:
        kernel, z_kernel, n_kernel, margins_kernel = _pass, z.T, n.T, margins
    kernel(
        X.indptr,
        X.indices,
        X.data,
        np.asarray(targets, dtype=np.float64),
        sample_weight,
        np.asarray(rows, dtype=np.intp),
        z_kernel,
        n_kernel,
        z_intercept,
        n_intercept,
        LOSSES.index(loss),
        float(learning_rate),
        float(beta),
        float(l1),
        float(l2),
        bool(fit_intercept),
        float(epsilon),
        _compiled_power(learning_rate_power),
        max_abs_gradient(z.dtype),
        smallest_stored_n(z.dtype),
        margins_kernel,
        PREFETCH_ROWS_AHEAD if 2 * z.nbytes > PREFETCH_STATE_BYTES else None,
    )
    return margins
