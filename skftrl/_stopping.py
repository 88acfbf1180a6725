"""Early stopping: one loss a pass, when to stop, and the best pass's state.

``fit`` (``early_stopping``, ``tol``, ``n_iter_no_change``) and the command
line's ``--holdout-period`` both stop their passes with one
:class:`EarlyStopping`, made by ``skftrl._base.early_stopping_of``.
"""

import numpy as np


class NoImprovementRule:
    """Stop once a loss (lower is better) has not improved on the lowest so
    far by ``tol`` for ``n_iter_no_change`` passes in a row; never with
    ``tol=None``."""

    def __init__(self, tol, n_iter_no_change):
        self.tol, self.n_iter_no_change = tol, n_iter_no_change
        self.lowest = np.inf
        self.passes_without_improvement = 0

    def should_stop(self, loss):
        """Record a pass's loss; whether to stop after it."""
        if self.tol is None:
            return False
        if loss > self.lowest - self.tol:
            self.passes_without_improvement += 1
        else:
            self.passes_without_improvement = 0
        self.lowest = min(self.lowest, loss)
        return self.passes_without_improvement >= self.n_iter_no_change


class EarlyStopping:
    """The losses of a run's passes (lower is better), one at a time.

    After each pass, :meth:`end_pass` records its loss: the passes should stop
    (``stopped``) by the :class:`NoImprovementRule` of ``tol`` and
    ``n_iter_no_change``; the best pass (``best_pass``, counted from 1) is the
    last whose loss is within ``tie`` of the lowest so far. With a
    ``checkpoint`` (an object with ``keep()`` and ``restore()``, holding the
    model's state from when it was made), ``keep_best`` copies the best
    pass's state into it, and :meth:`restore` puts the kept state back.

    ``held_out_loss(X, y, sample_weight)``, when given, scores rows as the
    losses are computed: ``(summed loss, summed weight)`` of the rows,
    validated against the model (the command line scores its held-out rows
    chunk by chunk with it).
    """

    def __init__(
        self,
        tol,
        n_iter_no_change,
        *,
        tie=0.0,
        checkpoint=None,
        keep_best=False,
        held_out_loss=None,
    ):
        self.rule = NoImprovementRule(tol, n_iter_no_change)
        self.tie = tie
        self.checkpoint = checkpoint
        self.keep_best = keep_best
        self.held_out_loss = held_out_loss
        self.losses = []
        self.best_pass = 0
        self.stopped = False

    def end_pass(self, loss):
        """Record the loss of the pass just made; returns whether it is the best so far.

        Within ``tie`` of the lowest so far is within ``tie`` of the lowest of
        all the passes to come, unless a later pass is lower: then that one is
        kept.
        """
        self.losses.append(loss)
        best = loss <= min(self.losses) + self.tie
        if best:
            self.best_pass = len(self.losses)
            if self.keep_best:
                self.checkpoint.keep()
        self.stopped = self.rule.should_stop(loss)
        return best

    @property
    def best_loss(self):
        """The loss of the best pass."""
        return self.losses[self.best_pass - 1]

    def restore(self):
        """Put back the state the checkpoint holds: the best pass's with
        ``keep_best``, else the one it was made with."""
        self.checkpoint.restore()
