"""Chunks: consecutive rows of a file, as a model learns them.

A reader's parser gives pieces of any number of rows (a block of text each);
:func:`rechunk` cuts them into chunks of exactly ``chunk_size`` rows (the last
may be shorter), the same way for every format.
"""

from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from ._hashing import canonical_matrix
from ._sources import DataError

# A classification target with more distinct labels than this is most likely
# a regression target; a scan stops instead of collecting them all.
MAX_CLASSES = 1000


class Chunk(NamedTuple):
    """Consecutive rows of a file."""

    X: sp.csr_matrix
    y: Optional[np.ndarray]  # None when labels are not read
    lines: np.ndarray  # the line number of each row, counted from 1
    sample_weight: Optional[np.ndarray] = None  # CSV --weight-column, VW importance, else None
    tags: Optional[np.ndarray] = None  # a VW tag or an id column's value (str) a row, else None

    @property
    def n_rows(self):
        return self.X.shape[0]

    @property
    def nbytes(self):
        """The bytes of its arrays."""
        X = self.X
        arrays = (X.data, X.indices, X.indptr, self.y, self.lines, self.sample_weight)
        return sum(array.nbytes for array in arrays if isinstance(array, np.ndarray))

    def rows(self, start, stop):
        """Rows ``start`` to ``stop`` (views of this chunk's arrays)."""
        X = self.X
        begin, end = X.indptr[start], X.indptr[stop]
        part = csr_of(
            X.data[begin:end],
            X.indices[begin:end],
            X.indptr[start : stop + 1] - begin,
            (stop - start, X.shape[1]),
            canonical=known_canonical(X),
        )
        return Chunk(
            part,
            None if self.y is None else self.y[start:stop],
            self.lines[start:stop],
            None if self.sample_weight is None else self.sample_weight[start:stop],
            None if self.tags is None else self.tags[start:stop],
        )

    def select(self, mask):
        """The rows where ``mask`` is True."""
        return self._replace(
            X=self.X[mask],
            y=None if self.y is None else self.y[mask],
            lines=self.lines[mask],
            sample_weight=None if self.sample_weight is None else self.sample_weight[mask],
            tags=None if self.tags is None else self.tags[mask],
        )


def concatenate(chunks):
    """One chunk of the rows of ``chunks``, as wide as the widest."""
    if len(chunks) == 1:
        return chunks[0]
    width = max(chunk.X.shape[1] for chunk in chunks)
    # The matrices' arrays joined (each indptr after the entries before):
    # scipy's vstack would convert and check every part first.
    matrices = [chunk.X for chunk in chunks]
    starts = np.cumsum([0] + [X.indptr[-1] for X in matrices[:-1]])
    indptr = np.concatenate(
        [np.zeros(1, np.int64)] + [X.indptr[1:] + start for X, start in zip(matrices, starts)]
    )
    X = csr_of(
        np.concatenate([X.data for X in matrices]),
        np.concatenate([X.indices for X in matrices]),
        indptr,
        (len(indptr) - 1, width),
        canonical=all(map(known_canonical, matrices)),
    )

    def joined(name):
        parts = [getattr(chunk, name) for chunk in chunks]
        if all(part is None for part in parts):
            return None
        if name == "sample_weight":  # pieces without weights weigh 1
            parts = [np.ones(c.n_rows) if p is None else p for c, p in zip(chunks, parts)]
        return np.concatenate(parts)

    return Chunk(X, joined("y"), joined("lines"), joined("sample_weight"), joined("tags"))


def known_canonical(X):
    """Whether the CSR matrix ``X`` is known to have sorted, distinct columns
    in each row, without a pass over its indices to find out."""
    return getattr(X, "_has_canonical_format", False)


def csr_of(data, indices, indptr, shape, canonical=False):
    """The CSR matrix of these arrays, marked ``canonical`` (sorted, distinct
    columns in each row) when the caller knows it is, so that no later step
    pays a pass over the indices to find out."""
    if canonical:
        return canonical_matrix(indptr, indices, data, shape)
    return sp.csr_matrix((data, indices, indptr), shape=shape)


def rechunk(pieces, chunk_size, concatenate=concatenate):
    """Chunks of exactly ``chunk_size`` rows (the last may be shorter) from pieces of any size.

    A piece has ``n_rows`` and ``rows(start, stop)``, as :class:`Chunk` has;
    ``concatenate`` joins a list of pieces into one. A chunk inside a piece
    is a view of it; only the rows that complete a chunk across two pieces
    are copied.
    """
    pending, n_pending = [], 0  # fewer than chunk_size rows, from the end of earlier pieces
    for piece in pieces:
        if not piece.n_rows:
            continue
        start = 0
        if n_pending:
            start = min(chunk_size - n_pending, piece.n_rows)
            pending.append(piece.rows(0, start))
            n_pending += start
            if n_pending < chunk_size:
                continue
            yield concatenate(pending)
            pending, n_pending = [], 0
        while piece.n_rows - start >= chunk_size:
            yield piece.rows(start, start + chunk_size)
            start += chunk_size
        if start < piece.n_rows:
            pending, n_pending = [piece.rows(start, piece.n_rows)], piece.n_rows - start
    if n_pending:
        yield concatenate(pending)


def row_at(X, position):
    """The row of ``X`` holding the stored value at ``position``."""
    return int(np.searchsorted(X.indptr, position, side="right") - 1)


def collect_classes(path, line, chunk_labels, labels, by="this line"):
    """Add the distinct labels of a chunk ending at ``line`` to ``labels`` (a
    scan's classes); ``by`` names that end in the error (a file without lines
    gives ``line=None`` and names the row)."""
    labels.update(chunk_labels)
    if len(labels) > MAX_CLASSES:
        raise too_many_labels(path, line, by)


def too_many_labels(path, line, by="this line"):
    """The error of a scan that has found more than MAX_CLASSES labels by ``line``."""
    return DataError(
        path,
        line,
        f"more than {MAX_CLASSES} distinct labels by {by}: is this "
        "a regression target? (use --task regress)",
    )
