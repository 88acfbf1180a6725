"""A model's pass learned in rounds of shards elsewhere: the estimators' side
of :mod:`skftrl.dask`.

A worker gets a :class:`ShardWork` once: the model's validation of rows and
its engine, parameters and layouts, without its state. For each of its
shards it validates the rows and renumbers their columns
(:meth:`ShardWork.prepare`), then learns them from the state of their columns
as the round began, which the model sends (:meth:`ShardWork.learn`), and
returns their changes. The changes of a round, merged, come back to the
model, which writes them (``BaseFTRL._learn_in_shards``).
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._engines._rounds import compact_block, learn_shard, shard_changes
from ._engines._undo import ColumnCopy


class PreparedShard(NamedTuple):
    """A shard's rows validated, over their columns renumbered (``rows``, a
    ``csr_matrix``); ``columns``, sorted, are the originals."""

    columns: np.ndarray
    rows: sp.csr_matrix
    targets: np.ndarray
    sample_weight: np.ndarray


class ShardWork:
    """What a worker needs to learn shards of a model's rows, without its state.

    ``prepare_rows(X, y, sample_weight)`` validates rows as the model's
    ``partial_fit`` does and ``mean_loss(margins, targets, sample_weight)`` is
    its loss (a copy of the model without its state gives both); ``engine``,
    ``state_record``, ``parameters`` and ``layouts`` are its passes'.
    """

    def __init__(self, prepare_rows, mean_loss, engine, state_record, parameters, layouts):
        self.prepare_rows, self.mean_loss = prepare_rows, mean_loss
        self.engine, self.state_record = engine, state_record
        self.parameters, self.layouts = parameters, layouts

    def prepare(self, X, y, sample_weight=None):
        """The rows validated, and their columns renumbered: a :class:`PreparedShard`.
        A model no wider than the rows' non-zeros keeps its columns."""
        X, targets, sample_weight = self.prepare_rows(X, y, sample_weight)
        if X.shape[1] <= X.nnz:
            columns, rows = np.arange(X.shape[1]), X
        else:
            columns, rows = compact_block(X)
        return PreparedShard(columns, rows, targets, sample_weight)

    def learn(self, prepared, start):
        """Learn the prepared rows from ``start``, the state of their columns as
        the round began: their :class:`~._engines._rounds.ShardChanges`, and
        the rows' count, summed loss and summed weight."""
        state, margins = learn_shard(
            self.engine,
            self.state_record,
            self.parameters,
            prepared.rows,
            prepared.targets,
            prepared.sample_weight,
            start,
            self.layouts,
        )
        weight = float(prepared.sample_weight.sum())
        loss = self.mean_loss(margins, prepared.targets, prepared.sample_weight) * weight
        return shard_changes(prepared.columns, start, state), (len(margins), loss, weight)


class ColumnsRecord:
    """What puts the columns of a round back if the call fails (as the records
    of :func:`~._engines.undo_record`)."""

    def __init__(self, state, columns):
        self.state, self.copy = state, ColumnCopy(state, columns)

    def covers(self, X, rows):
        return False

    def restore(self):
        self.copy.restore(self.state)
