"""The non-zeros of a pass's rows of a canonical CSR matrix, a block of rows at a time.

The numpy passes prepare their rows' columns and values a block at a time
(:func:`rows_per_block`, :func:`nonzeros_of_rows`), in a few numpy calls over
the block rather than several per row; the undo log finds with them the
features of records made in row order.
"""

import numpy as np

# The non-zeros a pass prepares at a time (their columns as intp, values,
# rows): this bounds the memory it takes, to about 16 MiB.
BLOCK_NONZEROS = 2**20


def rows_per_block(X, batch_size=1):
    """The rows of a block of about :data:`BLOCK_NONZEROS` non-zeros of ``X``,
    a multiple of ``batch_size``."""
    nonzeros_per_batch = max(1, round(X.nnz / max(X.shape[0], 1) * batch_size))
    return batch_size * max(1, BLOCK_NONZEROS // nonzeros_per_batch)


def nonzeros_of_rows(X, rows, consecutive=False):
    """The non-zeros of ``rows`` (an array) of a CSR ``X``, in their order:
    their columns (intp), their values, and each row's number of them.

    The columns are converted to intp here, at once: numpy converts an int32
    index array on every gather and scatter, which costs more than the
    gather itself. ``consecutive`` promises that ``rows`` are a run (``r,
    r + 1, ...``): their values are then a view of X's, without gathering.
    """
    indptr = X.indptr
    if consecutive:
        bounds = indptr[rows[0] : rows[-1] + 2]
        positions, row_lengths = slice(bounds[0], bounds[-1]), np.diff(bounds)
    else:
        starts = indptr[rows]
        row_lengths = indptr[rows + 1] - starts
        # Each row's first position, less the number of non-zeros before it.
        positions = np.repeat(starts - (np.cumsum(row_lengths) - row_lengths), row_lengths)
        positions += np.arange(len(positions))
    return X.indices[positions].astype(np.intp), X.data[positions], row_lengths
