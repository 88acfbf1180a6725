"""The numba set-up that the compiled passes share (imported only by them).

The decorators (with the on-disk cache when numba can write one), the
compiled forms of :mod:`._math`'s and :mod:`._losses`' scalar formulas, the
prefetch of a later row's coordinates, and the padding of a row to whole
vectors. Importing this module needs numba (``pip install "skftrl[fast]"``).
Compiled code is cached on disk (``cache=True``), so only the first process
on a machine pays the compile time; where numba finds no writable cache
location, each process compiles it.
"""

import warnings

import llvmlite.ir as ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, register_jitable

from . import _losses, _math


def _cache_probe():
    """Never run: numba's search for a cache location for this file uses it."""


def _can_cache():
    """Whether numba can cache this package's compiled code on disk.

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
# adds a branch raising ZeroDivisionError to every division. nogil: a compiled
# call releases the GIL, so that threads learn shards of a pass at once (see
# _rounds). numba's cache does not record these options: after changing them,
# clear it (docs: developers, "Compiled code and its cache").
CACHE = _can_cache()
compile = njit(cache=CACHE, error_model="numpy", nogil=True)
# A family's hooks of the compiled pass (_linear_numba.pass_with_interactions),
# inlined into the pass by numba itself: their loops then fold the pass's
# constants (one output: K = 1), and no call is made at each row.
compile_inline = njit(cache=CACHE, error_model="numpy", inline="always", nogil=True)

# ---------------------------------------------------- the compiled formulas
# A scalar formula that another calls is compiled where it is called.
register_jitable(_math.clip)
rate_root = compile(_math.rate_root_scalar)
weight = compile(_math.weight)
step = compile(_math.step)
clip = compile(_math.clip)
rescaled_margin = compile(_math.rescaled_margin)
factor_term = compile(_math.factor_term)
factor_gradient = compile(_math.factor_gradient)
pairwise_term_of_sums = compile(_math.pairwise_term_of_sums)
softmax_derivative = compile(_losses.softmax_derivative)
# The choice by code calls the records' own functions: numba compiles each
# where it is called.
for _loss in _losses.LOSSES.values():
    if _loss is not _losses.Multinomial:
        register_jitable(_loss.scalar_derivative)
scalar_derivative = compile(_losses.scalar_derivative)


def compiled_rates(parameters):
    """The ``rates`` tuple of the compiled passes: (learning_rate, beta, l1, l2,
    learning_rate_power), the paper's power as None (see _math.compiled_power)."""
    return (
        float(parameters.learning_rate),
        float(parameters.beta),
        float(parameters.l1),
        float(parameters.l2),
        _math.compiled_power(parameters.learning_rate_power),
    )


# ------------------------------------------------------------- prefetching
# Each row's coordinates are prefetched this many rows before the row is
# learned from, when the state is larger than PREFETCH_STATE_BYTES: a state
# that fits in the CPU's fastest caches gains nothing from it, and pays for
# the instructions (benchmarks/bench_prefetch.py measures it).
PREFETCH_ROWS_AHEAD = 4
PREFETCH_STATE_BYTES = 2**17


def rows_ahead(state):
    """A pass's ``rows_ahead``: PREFETCH_ROWS_AHEAD for a state larger than
    PREFETCH_STATE_BYTES, else None (no prefetching, pruned when compiled)."""
    state_bytes = sum(array.nbytes for array in state)
    return PREFETCH_ROWS_AHEAD if state_bytes > PREFETCH_STATE_BYTES else None


@intrinsic
def _prefetch(typing_context, array, index):
    """Ask the CPU to bring ``array[index]`` (of a 1-d array; ``array[index, 0,
    ...]`` of more) into its caches, without waiting.

    LLVM's ``llvm.prefetch`` (read, high locality, data cache): unlike a load,
    it never stalls the instructions that follow. numba has no public API for
    it; ``cgutils`` is numba's own helper module for code generation.
    """

    def codegen(context, builder, signature, arguments):
        array_type, index_type = signature.args
        array_value, index_value = arguments
        index_value = context.cast(builder, index_value, index_type, types.intp)
        view = context.make_array(array_type)(context, builder, array_value)
        zeros = [ir.Constant(index_value.type, 0)] * (array_type.ndim - 1)
        address = cgutils.get_item_pointer(
            context, builder, array_type, view, [index_value, *zeros], wraparound=False
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
def prefetch_row(indptr, indices, rows, position, state_by_feature, rows_ahead):
    """Prefetch the state of each coordinate of the row ``rows_ahead`` after ``position``.

    On a wide model most coordinates are not in the CPU's cache, and a row's
    loop would wait for each of them in turn. Requested a few rows early,
    they arrive while the rows before are computed (each feature's z and n
    share a cache line, see _math.new_state). ``state_by_feature`` is one
    array indexed by feature on its first axis: the address of each feature's
    first value is prefetched.
    """
    ahead = position + rows_ahead
    if ahead >= rows.shape[0]:
        return
    row = rows[ahead]
    for j in range(indptr[row], indptr[row + 1]):
        _prefetch(state_by_feature, indices[j])


# ----------------------------------------------------------- row buffers
# The loops over a row's coordinates compile to vector instructions of this
# many float64 lanes (AVX-512's; two of AVX2's), and to scalar code for the
# remainder: padding the row to a multiple of it leaves no remainder.
VECTOR_LANES = 8


@compile
def padded(count):
    """``count`` rounded up to a multiple of VECTOR_LANES."""
    return (count + VECTOR_LANES - 1) // VECTOR_LANES * VECTOR_LANES


@compile
def longest_row(indptr, rows):
    """The largest number of non-zeros among ``rows``: the size of the row buffers."""
    longest = 0
    for row in rows:
        longest = max(longest, indptr[row + 1] - indptr[row])
    return longest
