"""Input validation shared by the estimators: the feature matrices they accept,
their sparse index arrays, and the canonical CSR form every pass reads."""

import functools

import numpy as np
import scipy.sparse as sp

# Feature matrices are accepted in these dtypes without conversion.
FLOAT_DTYPES = (np.float64, np.float32)


def as_canonical_csr(X):
    """CSR with sorted, summed column indices; the caller's matrix is never modified.

    Dense input becomes CSR so that training touches only non-zero values.
    """
    if not sp.issparse(X):
        return sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
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
