"""``--holdout-period``: held-out rows, scored after each pass, and the best pass kept."""

import numpy as np
from sklearn.base import is_classifier

from .._base import early_stopping_of
from .._readers._cache import ChunkCache
from .._readers._sources import DataError
from ._estimators import check_known_labels


class Holdout:
    """``--holdout-period K``: every K-th row held out, scored after each pass,
    and the best pass's model kept.

    The rows K, 2K, 3K, ... of the file (counted from 1, data rows only) are
    never learned from. Their parsed chunks are kept in a cache of their own
    (a temporary file, 1/K of the data) during the first pass; after each
    pass the model scores them as ``fit``'s early stopping scores its
    held-out rows (their weighted mean loss), with the same early stopping as
    ``early_stopping=True``: the best pass is the one of the lowest loss (the
    later of two equal ones), as Vowpal Wabbit keeps its holdout's best
    model; the passes stop when the loss has not improved on the lowest by
    ``tol`` for ``n_iter_no_change`` passes in a row. The state of the best
    pass is kept for the columns the training rows use (no other column
    changes) and put back at the end.
    """

    def __init__(self, period, path, floor=None):
        self.period, self.path = period, path
        # The held-out rows' summed floor of the loss (see reported_loss) and weight.
        self.floor, self.floor_sum, self.weight_sum = floor, 0.0, 0.0
        self.cache = ChunkCache()
        self.row = 0  # data rows of the current pass read so far
        self.n_held_out = 0
        self.used_columns = None  # the columns of the training rows (a mask)
        self.stopping = None  # the estimator's, made at the first pass's end

    def training_part(self, chunk, first_pass):
        """The chunk's rows that are learned from; in the first pass, the
        held-out rows are cached and the columns of the others recorded."""
        numbers = np.arange(self.row + 1, self.row + 1 + chunk.n_rows)
        self.row += chunk.n_rows
        held = numbers % self.period == 0
        training = chunk.select(~held)
        if first_pass:
            if held.any():
                held_out = chunk.select(held)
                self.cache.write(held_out)
                self.n_held_out += int(held.sum())
                if self.floor is not None:
                    self.floor_sum += self.floor(held_out.y, held_out.sample_weight)
            if self.used_columns is None:
                self.used_columns = np.zeros(chunk.X.shape[1], dtype=bool)
            self.used_columns[training.X.indices] = True
        return training

    def end_pass(self, estimator, n_rows):
        """Score the held-out rows: ``(loss, whether the pass is the best, whether to stop)``."""
        self.row = 0
        if not self.n_held_out:
            raise DataError(
                self.path,
                None,
                f"--holdout-period {self.period} holds out no row: the file has {n_rows:,} "
                f"data row{'s' if n_rows != 1 else ''}, fewer than {self.period}",
            )
        if self.stopping is None:
            self.stopping = early_stopping_of(estimator, np.flatnonzero(self.used_columns))
        loss_sum = weight_sum = 0.0
        for chunk in self.cache.chunks():
            chunk_loss, chunk_weight = held_out_loss(estimator, self.stopping, chunk, self.path)
            loss_sum += chunk_loss
            weight_sum += chunk_weight
        loss = loss_sum / weight_sum if weight_sum else 0.0
        best = self.stopping.end_pass(loss)
        self.weight_sum = weight_sum
        return self.reported(loss), best, self.stopping.stopped

    def reported(self, loss):
        """A held-out mean loss as reported: a deviance with a floor (see reported_loss)."""
        if self.floor is None or not self.weight_sum:
            return loss
        return 2 * (loss - self.floor_sum / self.weight_sum)

    def keep_best(self):
        """Put the best pass's state back; returns its held-out loss as reported."""
        self.stopping.restore()
        return self.reported(self.stopping.best_loss)

    def close(self):
        self.cache.close()


def held_out_loss(estimator, stopping, chunk, path):
    """The summed loss of a chunk of held-out rows and their summed weight,
    each row's loss as the estimators' early stopping scores it."""
    weights = np.ones(chunk.n_rows) if chunk.sample_weight is None else chunk.sample_weight
    if is_classifier(estimator):
        check_known_labels(path, chunk, estimator.classes_)
    try:
        return stopping.held_out_loss(chunk.X, chunk.y, weights)
    except ValueError as error:
        first, last = int(chunk.lines[0]), int(chunk.lines[-1])
        raise DataError(
            path, first, f"in the held-out rows of lines {first}-{last}: {error}"
        ) from None
