"""The chunk cache: parsed chunks in a temporary file, read back for later passes."""

import tempfile

import numpy as np
import scipy.sparse as sp

from ._chunks import Chunk


class ChunkCache:
    """Parsed chunks in a binary temporary file, read back for later passes.

    As Vowpal Wabbit's cache (``-c``): a pass over it costs reading the
    arrays, not parsing text. The file is deleted on :meth:`close`.
    """

    def __init__(self, directory=None):
        self.file = tempfile.TemporaryFile(prefix="skftrl-cache-", dir=directory)
        self.n_chunks = 0

    def write(self, chunk):
        X = chunk.X
        arrays = [
            np.array([X.shape[0], X.shape[1]], dtype=np.int64),
            X.data,
            X.indices,
            X.indptr,
            chunk.lines,
        ]
        for optional in (chunk.y, chunk.sample_weight):
            arrays.append(np.zeros(0) if optional is None else optional)
            arrays.append(np.array([optional is not None]))
        for array in arrays:
            np.save(self.file, array, allow_pickle=False)
        self.n_chunks += 1

    def chunks(self):
        """Every chunk written, in order."""
        self.file.flush()
        self.file.seek(0)
        for _ in range(self.n_chunks):
            shape, data, indices, indptr, lines, y, has_y, weight, has_weight = (
                np.load(self.file, allow_pickle=False) for _ in range(9)
            )
            X = sp.csr_matrix((data, indices, indptr), shape=tuple(shape))
            yield Chunk(X, y if has_y[0] else None, lines, weight if has_weight[0] else None)

    def close(self):
        self.file.close()
