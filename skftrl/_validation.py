"""Input validation shared by the estimators: the feature matrices they accept,
their sparse index arrays, and the canonical CSR form every pass reads."""

import functools
import inspect
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array

from ._sklearn_compat import Interval, InvalidParameterError, _check_sample_weight

# Feature matrices are accepted in these dtypes without conversion.
FLOAT_DTYPES = (np.float64, np.float32)

# Newer scikit-learn releases refuse weights that are all 0, unless told.
_ZERO_WEIGHTS = (
    {"allow_all_zero_weights": True}
    if "allow_all_zero_weights" in inspect.signature(_check_sample_weight).parameters
    else {}
)


def checked_sample_weight(sample_weight, X):
    """The rows' weights, checked as scikit-learn checks them (float64, one a
    row, finite, non-negative; None is all 1). Weights that are all 0 are
    valid: such rows are scored and learn nothing (a stream's chunk of
    weightless rows, Vowpal Wabbit's importance 0). ``X`` is validated."""
    if sample_weight is None:
        # All 1: valid as made, where scikit-learn's checks of them would cost
        # as much as the rest of a small batch's validation.
        return np.ones(X.shape[0], dtype=np.float64)
    return _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True, **_ZERO_WEIGHTS
    )


def as_canonical_csr(X):
    """CSR with sorted, summed column indices and no stored zeros; the caller's
    matrix is never modified.

    Dense input becomes CSR so that training touches only non-zero values. A
    stored zero (an explicit 0, or duplicates that sum to 0) is dropped: a
    feature whose value is 0 is not in the row, whatever the matrix stores,
    and a pass touches none of its coordinates (a factorization machine's
    ``factor_l2`` would shrink its factors).
    """
    if not sp.issparse(X):
        return sp.csr_matrix(X)
    # A comparison with 0 rather than .all() or count_nonzero: the same
    # answer (NaN is not zero, -0.0 is), in less time.
    if not X.has_canonical_format or (X.data[: X.nnz] == 0).any():
        X = X.copy()
        X.sum_duplicates()
        X.eliminate_zeros()
    return X


# scikit-learn checks that input is finite by summing it first: values of
# both signs near the largest float sum to inf - inf, which warns of an
# invalid value although every value is finite.
finite_check_of_huge_values = functools.partial(np.errstate, over="ignore", invalid="ignore")

# The unsigned integer type of each size in bytes, to see indices as unsigned.
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def check_sparse_indices(X):
    """Raise a ValueError if the index arrays of a sparse ``X`` point outside it.

    scipy checks a matrix's ``indptr`` only when it is built, and never the
    range of its indices; they can also be assigned afterwards. An index
    outside ``[0, n_features)`` would make a pass write outside the state
    (numba) or update the wrong feature (numpy's negative indexing), and
    scipy's own conversion of a CSC or COO matrix would read outside its
    arrays. So this runs before anything else reads them: one pass over the
    stored indices (O(nnz)), and one over ``indptr``.
    """
    if not sp.issparse(X):
        return
    fmt = X.format
    if fmt == "coo":
        n_stored = len(X.data)
        # Row and column indices, each with the dimension it indexes
        # (``coords`` since scipy 1.13, which also makes COO arrays of 1 or 3
        # dimensions; ``row`` and ``col`` before).
        coords = X.coords if hasattr(X, "coords") else (X.row, X.col)
        bounds = zip(coords, X.shape)
    elif fmt in ("csr", "csc", "bsr"):
        n_major, n_minor = X.shape if fmt != "csc" else X.shape[::-1]
        if fmt == "bsr":
            n_major, n_minor = n_major // X.blocksize[0], n_minor // X.blocksize[1]
        indptr = X.indptr
        n_stored = min(len(X.indices), len(X.data))
        if (
            indptr.dtype.kind not in "iu"
            or indptr.shape != (n_major + 1,)
            or indptr[0] != 0
            or indptr[-1] > n_stored
            or (indptr[1:] < indptr[:-1]).any()
        ):
            raise ValueError(
                f"X is a malformed {fmt.upper()} matrix: its indptr must be "
                f"{n_major + 1} non-decreasing integers from 0 to at most {n_stored}, "
                "the length of its indices and data; fix it, or check it with "
                "X.check_format()."
            )
        n_stored = int(indptr[-1])
        bounds = [(X.indices, n_minor)]
    else:
        return  # lil, dok, dia: converted by scipy through checked indexing
    for indices, size in bounds:
        if indices.dtype.kind not in "iu":
            raise ValueError(
                f"X is a malformed {fmt.upper()} matrix: its indices must be "
                f"integers; got dtype {indices.dtype}."
            )
        indices = indices[:n_stored]
        # Seen as unsigned, a negative index is above any size: one reduction.
        if indices.size and indices.view(_UNSIGNED[indices.itemsize]).max() >= size:
            raise ValueError(
                f"X is a malformed {fmt.upper()} matrix: its indices must lie in "
                f"[0, {size}), and range from {indices.min()} to {indices.max()}; "
                "fix it, or check it with X.check_format()."
            )


def check_state(state, shapes):
    """Raise a ValueError naming the first array of ``state`` (a state record,
    whose field ``name`` is the estimator's attribute ``name_``) that is not a
    numpy array of its shape in ``shapes`` (by field) and of a dtype the state
    holds: per-feature arrays (two dimensions or more) all float64 or all
    float32, per-output arrays float64.

    A pass reads and writes the state's arrays at the positions of the
    model's features and outputs (the compiled pass without bounds checks): an
    array assigned to an attribute of the state must be as large as the one it
    replaces. Saved models are checked the same way when loaded.
    """
    per_feature_dtype = None
    for name, array in zip(state._fields, state):
        shape = shapes[name]
        if len(shape) > 1:
            if per_feature_dtype is None:
                per_feature_dtype = getattr(array, "dtype", None)
            allowed = "float64 or float32 (as the other per-feature arrays)"
            dtypes = [per_feature_dtype] if per_feature_dtype in FLOAT_DTYPES else []
        else:
            allowed, dtypes = "float64", [np.float64]
        if not isinstance(array, np.ndarray):
            problem = f"a {type(array).__name__}"
        elif array.shape != shape:
            problem = f"shape {array.shape}"
        elif array.dtype not in dtypes:
            problem = f"dtype {array.dtype}"
        else:
            continue
        raise ValueError(
            f"{name}_ must be a numpy array of the model's shape {shape} "
            f"and dtype {allowed}; got {problem}. Assign an array of the state's "
            "shape and dtype, or fit a new model."
        )


def check_no_bool_counts(constraints, params, caller_name):
    """Refuse a bool given for a count (``n_components=True``): a bool is an
    int to Python, and so in an Interval of Integral, which scikit-learn's
    check of the ``params`` against their ``constraints`` accepts. Refused as
    that check refuses a bad type (the same arguments)."""
    for name, value in params.items():
        counts = [c for c in constraints[name] if isinstance(c, Interval) and c.type is Integral]
        if isinstance(value, (bool, np.bool_)) and counts and "boolean" not in constraints[name]:
            raise InvalidParameterError(
                f"The {name!r} parameter of {caller_name} must be {counts[0]}, "
                f"not a bool. Got {value!r} instead."
            )


def checked_initial_weights(coef_init, intercept_init, shape, outputs, fit_intercept):
    """``(coef, intercept)`` of a fit's ``coef_init`` and ``intercept_init``
    (either None), as float64 arrays of the state's ``shape`` (K, F) and
    ``(K,)``; a clear error for a wrong shape, a value that is not finite,
    or an intercept without ``fit_intercept``. ``outputs`` says what K is."""
    n_outputs, n_features = shape
    coef = intercept = None
    if coef_init is not None:
        coef = check_array(coef_init, ensure_2d=False, dtype=np.float64, input_name="coef_init")
        if coef.ndim == 1 and n_outputs == 1:
            coef = coef[np.newaxis]
        if coef.shape != shape:
            raise ValueError(
                f"coef_init has shape {coef.shape}; this fit needs {shape}: a row of "
                f"weights per output ({outputs}), a column per feature"
            )
    if intercept_init is not None:
        intercept = check_array(
            np.atleast_1d(intercept_init),
            ensure_2d=False,
            dtype=np.float64,
            input_name="intercept_init",
        )
        if intercept.shape not in {(1,), (n_outputs,)}:
            raise ValueError(
                f"intercept_init has shape {intercept.shape}; this fit needs a number or "
                f"({n_outputs},): an intercept per output ({outputs})"
            )
        intercept = np.broadcast_to(intercept, (n_outputs,))
        if not fit_intercept and intercept.any():
            raise ValueError(
                "intercept_init is not 0, but fit_intercept=False: the model has no intercept"
            )
    return coef, intercept


def stored_starting_z(z, name, dtype):
    """``z`` of the weights given as ``name``, in the state's ``dtype``: an
    error if it is too large for it (a weight too large for its denominator)."""
    with np.errstate(over="ignore"):
        stored = z.astype(dtype)
    if not np.isfinite(stored).all():
        raise ValueError(
            f"{name} holds weights too large for the model's state ({np.dtype(dtype).name}) "
            "at these hyper-parameters; scale them down"
        )
    return stored


def check_start_is_first(first_call, coef_init, intercept_init):
    """partial_fit takes weights to start from in the call that starts the model."""
    if not first_call and (coef_init is not None or intercept_init is not None):
        raise ValueError(
            "coef_init and intercept_init are taken by the partial_fit that starts a "
            "model; this one continues the model's state (fit or clone it to start anew)"
        )
