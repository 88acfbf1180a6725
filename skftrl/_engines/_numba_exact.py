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

from . import NumpyEngine, _losses, _math
from ._fm_numpy import MAX_ABS_FACTOR_TERM
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
_CACHE = _can_cache()
compile = njit(cache=_CACHE, error_model="numpy")
# The factorization machine's per-row steps, inlined into the pass (numba's
# own inlining), so that the one-output pass folds its constant K into them.
compile_inline = njit(cache=_CACHE, error_model="numpy", inline="always")


def compiled_rates(parameters):
    """The ``rates`` tuple of the compiled passes (see the per-row steps below)."""
    return (
        float(parameters.learning_rate),
        float(parameters.beta),
        float(parameters.l1),
        float(parameters.l2),
        compiled_power(parameters.learning_rate_power),
    )


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


# The loops over a row's coordinates compile to vector instructions of this
# many float64 lanes (AVX-512's; two of AVX2's), and to scalar code for the
# remainder: padding the row to a multiple of it leaves no remainder.
VECTOR_LANES = 8


@compile
def _padded(count):
    """``count`` rounded up to a multiple of VECTOR_LANES."""
    return (count + VECTOR_LANES - 1) // VECTOR_LANES * VECTOR_LANES


@compile
def _longest_row(indptr, rows):
    """The largest number of non-zeros among ``rows``: the size of the row buffers."""
    longest = 0
    for row in rows:
        longest = max(longest, indptr[row + 1] - indptr[row])
    return longest


# The factorization machine's per-row steps (the model of docs/fm_math.rst).
# Their arguments, beside those of _pass: ``K`` the number of outputs (the
# constant 1 for one output, so that the loops over outputs compile away);
# ``start`` and ``end`` the bounds of the row's non-zeros in ``indices`` and
# ``data``; ``factor_rates`` the factors' ``rates`` tuple (their learning
# rate, beta, no l1 or l2, learning_rate_power); ``factor_state`` the
# tuple (z_factors, n_factors), shape (K, F, k) each; ``factor_kept`` the
# tuple (root_n, factors) of the row's factors, shape (longest row, K, k);
# ``sums`` the row's sums s_f = sum_i v_{i,f} x_i and of their squared terms,
# shape (K, k) each.


def compiled_factor_rates(parameters):
    """The factors' ``rates`` tuple: their own learning rate, and no l1 or l2
    (the factor penalty is ``factor_l2``, in their gradient)."""
    return (
        float(parameters.factor_learning_rate),
        float(parameters.beta),
        0.0,
        0.0,
        compiled_power(parameters.learning_rate_power),
    )


@compile_inline
def _add_pairwise_margin(
    K, factor_rates, factor_state, start, end, indices, data, factor_kept, sums, margin
):
    """Add the row's pairwise term ``sum_f (s_f**2 - sum_i (v_{i,f} x_i)**2) / 2``
    to ``margin``, in O(k * nnz), keeping the factors, their rate roots and the
    sums ``s_f`` for the step. ``sums`` is the tuple (s, squares) of
    scratch arrays of shape (K, k)."""
    learning_rate, beta, _, _, power = factor_rates
    z_factors, n_factors = factor_state
    row_root_n, row_factors = factor_kept
    total, squares = sums
    total[:] = 0.0
    squares[:] = 0.0
    for j in range(start, end):
        column = indices[j]
        for k in range(K):
            for f in range(z_factors.shape[2]):
                root_n = _rate_root(np.float64(n_factors[k, column, f]), power)
                factor = _weight(
                    np.float64(z_factors[k, column, f]), root_n, learning_rate, beta, 0.0, 0.0
                )
                row_root_n[j - start, k, f] = root_n
                row_factors[j - start, k, f] = factor
                term = _clip(data[j] * factor, MAX_ABS_FACTOR_TERM)
                total[k, f] += term
                squares[k, f] += term * term
    for k in range(K):
        pairwise = 0.0
        for f in range(z_factors.shape[2]):
            pairwise += total[k, f] * total[k, f] - squares[k, f]
        margin[k] += 0.5 * pairwise


@compile_inline
def _step_factors(
    K,
    factor_rates,
    factor_state,
    start,
    end,
    indices,
    data,
    factor_kept,
    sums,
    derivative,
    factor_l2,
    bound,
    smallest_n,
    factor_undo,
    recorded,
):
    """The z/n step of each factor of the row. When ``factor_undo`` (the tuple
    (z_factors, n_factors) of an FMUndoLog's arrays) is not None, each
    column's old factors are recorded first, from index ``recorded`` on, as
    ``_step_linear`` records its linear coordinates."""
    learning_rate, _, _, _, power = factor_rates
    z_factors, n_factors = factor_state
    row_root_n, row_factors = factor_kept
    for j in range(start, end):
        column = indices[j]
        value = data[j]
        for k in range(K):
            gradient = _clip(value * derivative[k], bound)
            for f in range(z_factors.shape[2]):
                if factor_undo is not None:
                    factor_undo[0][recorded + j - start, k, f] = z_factors[k, column, f]
                    factor_undo[1][recorded + j - start, k, f] = n_factors[k, column, f]
                # d x_i (s_f - v_{i,f} x_i) + factor_l2 v_{i,f}
                factor = row_factors[j - start, k, f]
                term = _clip(value * factor, MAX_ABS_FACTOR_TERM)
                factor_gradient = _clip(
                    gradient * (sums[0][k, f] - term) + factor_l2 * factor, bound
                )
                z_factors[k, column, f], n_factors[k, column, f] = _step(
                    np.float64(z_factors[k, column, f]),
                    np.float64(n_factors[k, column, f]),
                    row_root_n[j - start, k, f],
                    factor,
                    factor_gradient,
                    factor_gradient * factor_gradient,
                    learning_rate,
                    power,
                    smallest_n,
                )


@compile
def _pass(
    indptr,
    indices,
    data,
    targets,
    sample_weight,
    rows,
    state,
    z_intercept,
    n_intercept,
    loss_code,
    rates,
    fit_intercept,
    epsilon,
    bound,
    smallest_n,
    margins,
    several_outputs,
    rows_ahead,
    undo,
    factors,
    factor_undo,
):
    """The pass over ``rows``: each row's margins into ``margins`` (len(rows), K),
    then its step. Returns the number of records in ``undo``.

    ``state`` is the tuple (z_by_feature, n_by_feature), shape (F, K) each;
    ``rates`` the tuple (learning_rate, beta, l1, l2, learning_rate_power).
    ``several_outputs`` is None for one output: numba then compiles a version
    in which K is the constant 1, and its loops over outputs disappear.
    ``rows_ahead`` is None for no prefetching (pruned when compiled, too).
    ``undo`` is None for no record, else an UndoLog's ``old`` array, into
    which the old z and n of each non-zero's coordinates are recorded before
    its step, in the order of the rows (UndoLog.recorded_in_row_order).
    ``factors`` is None for the linear model, and for a factorization
    machine the tuple (factor_state, factor_rates, factor_l2); numba
    compiles the linear model's pass without the factors' steps.
    ``factor_undo`` is None for no record of the factors. (Both are
    arguments of their own: numba leaves out the code for a None only when
    it tests an argument.)

    The linear model's steps are written in this loop rather than as inlined
    functions: numba updates the reference count of every array an inlined
    function takes, at each row (docs/benchmarks.rst, "The engine layer").
    """
    if several_outputs is None:
        K = 1
    else:
        K = state[0].shape[1]
    learning_rate, beta, l1, l2, power = rates
    z_by_feature, n_by_feature = state
    longest_row = _longest_row(indptr, rows)
    # The row's coordinates, gathered: their values and old z and n (in
    # float64), the rate roots and weights of the margin, kept for the step,
    # and their new z and n, scattered back after it. Each output's row is
    # contiguous, so that the loops computing them, having no sum and no
    # indirect access, compile to vector instructions (each element's
    # operations are those of the scalar code, so the bits are the same).
    # Those loops run over the row padded to whole vectors (see VECTOR_LANES),
    # on finite values: zeros and ones at first, then the rows before's.
    # docs/benchmarks.rst gives the measured effect.
    padded_longest = _padded(longest_row)
    row_z = np.zeros((K, padded_longest))
    row_n = np.ones((K, padded_longest))
    row_x = np.zeros(padded_longest)
    row_root_n = np.empty((K, padded_longest))
    row_weights = np.empty((K, padded_longest))
    new_z = np.empty((K, padded_longest))
    new_n = np.empty((K, padded_longest))
    intercept_root_n = np.empty(K)
    intercept_weights = np.empty(K)
    margin = np.empty(K)
    derivative = np.empty(K)
    # One address per feature in each array prefetched: the first output's
    # weight and first factor (the others share or neighbour its cache line).
    first_z = z_by_feature[:, 0]
    if factors is not None:
        factor_state, factor_rates, factor_l2 = factors
        shape = (longest_row, K, factor_state[0].shape[2])
        factor_kept = (np.empty(shape), np.empty(shape))
        sums = (np.empty(shape[1:]), np.empty(shape[1:]))
        first_z_factors = factor_state[0][0, :, 0]
        first_n_factors = factor_state[1][0, :, 0]
    recorded = 0
    for position in range(rows.shape[0]):
        if rows_ahead is not None:
            _prefetch_row(indptr, indices, rows, position, first_z, rows_ahead)
            if factors is not None:
                _prefetch_row(indptr, indices, rows, position, first_z_factors, rows_ahead)
                _prefetch_row(indptr, indices, rows, position, first_n_factors, rows_ahead)
        row = rows[position]
        start, end = indptr[row], indptr[row + 1]

        # The margin x . w + b, summed in the order of the row; a sum that
        # overflows is recomputed by _math.rescaled_margin.
        count = end - start
        padded = _padded(count)
        for i in range(count):
            row_x[i] = data[start + i]
        for k in range(K):
            for i in range(count):
                column = indices[start + i]
                # A float32 state is computed on in float64, as in the numpy engine.
                row_z[k, i] = z_by_feature[column, k]
                row_n[k, i] = n_by_feature[column, k]
            if undo is not None:
                for i in range(count):
                    undo[recorded + i, k, 0] = row_z[k, i]
                    undo[recorded + i, k, 1] = row_n[k, i]
            for i in range(padded):
                row_root_n[k, i] = _rate_root(row_n[k, i], power)
                row_weights[k, i] = _weight(
                    row_z[k, i], row_root_n[k, i], learning_rate, beta, l1, l2
                )
            intercept_root_n[k] = _rate_root(n_intercept[k], power)
            intercept_weights[k] = _weight(
                z_intercept[k], intercept_root_n[k], learning_rate, beta, 0.0, 0.0
            )
            total = 0.0
            for i in range(count):
                total += row_x[i] * row_weights[k, i]
            total += intercept_weights[k]
            if not math.isfinite(total):
                total = _rescaled_margin(
                    row_x[:count], row_weights[k, :count], intercept_weights[k]
                )
            margin[k] = total
        if factors is not None:
            _add_pairwise_margin(
                K, factor_rates, factor_state, start, end, indices, data, factor_kept, sums, margin
            )
        for k in range(K):
            margins[position, k] = margin[k]

        # The loss derivative in each margin, times the row's weight.
        if K == 1:
            derivative[0] = _scalar_derivative(loss_code, margin[0], targets[row], epsilon)
        else:
            _softmax_derivative(margin, targets[row], derivative)
        for k in range(K):
            derivative[k] = _clip(derivative[k] * sample_weight[row], _math.LARGEST)

        # The steps.
        if factors is not None:
            _step_factors(
                K,
                factor_rates,
                factor_state,
                start,
                end,
                indices,
                data,
                factor_kept,
                sums,
                derivative,
                factor_l2,
                bound,
                smallest_n,
                factor_undo,
                recorded,
            )
        # A row's coordinates are distinct (canonical CSR): each one's step
        # reads only its own state, in any order of outputs and columns.
        for k in range(K):
            row_derivative = derivative[k]
            for i in range(padded):
                gradient = _clip(row_x[i] * row_derivative, bound)
                new_z[k, i], new_n[k, i] = _step(
                    row_z[k, i],
                    row_n[k, i],
                    row_root_n[k, i],
                    row_weights[k, i],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    power,
                    smallest_n,
                )
            for i in range(count):
                column = indices[start + i]
                z_by_feature[column, k] = new_z[k, i]
                n_by_feature[column, k] = new_n[k, i]
        if undo is not None:
            recorded += end - start
        if fit_intercept:
            for k in range(K):
                gradient = _clip(derivative[k], bound)
                z_intercept[k], n_intercept[k] = _step(
                    z_intercept[k],
                    n_intercept[k],
                    intercept_root_n[k],
                    intercept_weights[k],
                    gradient,
                    gradient * gradient,
                    learning_rate,
                    power,
                    0.0,
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
        z, n = state.z, state.n
        margins = np.empty((len(rows), z.shape[0]), dtype=np.float64)
        state_bytes = sum(array.nbytes for array in state)
        recorded = _pass(
            X.indptr,
            X.indices,
            X.data,
            np.asarray(targets, dtype=np.float64),
            sample_weight,
            np.asarray(rows, dtype=np.intp),
            (z.T, n.T),
            state.z_intercept,
            state.n_intercept,
            parameters.loss.code,
            compiled_rates(parameters),
            bool(parameters.fit_intercept),
            float(parameters.loss.epsilon),
            max_abs_gradient(z.dtype),
            smallest_stored_n(z.dtype),
            margins,
            None if z.shape[0] == 1 else True,
            PREFETCH_ROWS_AHEAD if state_bytes > PREFETCH_STATE_BYTES else None,
            None if undo is None else undo.old,
            *self.factor_arguments(state, parameters, undo),
        )
        if undo is not None:
            undo.recorded_in_row_order(recorded)
        return margins

    def factor_arguments(self, state, parameters, undo):
        """The pass's ``factors`` and ``factor_undo``: None for the linear model."""
        return None, None

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
