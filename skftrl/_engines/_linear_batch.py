"""The mini-batch FTRL-Proximal pass in numpy (``batch_size > 1``), and its engine.

All the margins of a batch are computed from the weights at its start; then
each coordinate the batch touches adds the batch's summed gradient ``G`` to
``z`` and its summed squared gradients ``Q`` to ``n``, with
``sigma = (sqrt(n + Q) - sqrt(n)) / alpha`` (docs: :doc:`algorithm`,
"Mini-batches"). ``batch_size=1`` is the exact pass, up to the rounding of sums.
The formulas are :mod:`._math`'s and :mod:`._losses`'.

A family that adds terms to the linear model's margin learns with this pass
and its ``interactions`` (see :func:`learn`): the factorization machine's
(:mod:`._fm_batch`) adds the pairwise term to each margin and steps the
factors from the same gradients (docs: :doc:`fm_math`, "Mini-batches").
"""

import math

import numpy as np

from . import _math
from ._linear_numpy import LinearNumpyEngine
from ._rows import nonzeros_of_rows, rows_per_block


def learn(
    state, parameters, X, targets, sample_weight, rows, batch_size, undo=None, interactions=None
):
    """One mini-batch pass over ``rows`` of ``X``, taken ``batch_size`` at a time
    in the order given, updating ``state``; see :mod:`skftrl._engines`.

    Work per batch is proportional to its non-zeros: the batch's columns are
    grouped through a scratch array of slots (see :class:`_BatchReader`),
    allocated once per pass and never initialized, so that nothing of size
    n_features is passed over.

    ``interactions``, for a family that adds terms to the linear model's
    margin, is an object made for the pass over its state with three methods,
    called for each batch in turn: ``batch_margins(touched, group_of_value,
    row_of_value, values, n_batch)``, the terms of each of the batch's rows
    (shape (n_batch, K)) from its coordinates at the batch's start (the
    arguments are :meth:`_BatchReader.read`'s); ``gathered()``, those
    coordinates as it read them (one array per per-feature array of its
    state, features first), which the undo log records; then
    ``step(gradient)``, the step of those coordinates from each non-zero's
    clipped gradient ``d x_i`` (shape (m, K)). ``state`` then begins with the
    linear model's four arrays.
    """
    z, n, z_intercept, n_intercept = state[:4]
    # A batch never spans two passes: a batch_size beyond the rows is all of
    # them (and any batch_size, 2**64 too, is then an index numpy takes).
    batch_size = max(1, min(batch_size, len(rows)))
    n_outputs = z.shape[0]
    single_output = n_outputs == 1
    # With one output the state is 1-d, (F,), and so is every array of a batch:
    # 1-d numpy calls cost less, and there are no (row, output) cells to sum.
    z_by_feature, n_by_feature = (z[0], n[0]) if single_output else (z.T, n.T)
    bound = _math.max_abs_gradient(z.dtype)
    loss = parameters.loss
    rates = _math.constants(parameters)
    smallest_n, largest = _math.smallest_stored_n(z.dtype), _math.largest_stored(z.dtype)
    # Inputs of the gradients: the row's values, and 1 for the intercept.
    largest_input = max(float(np.abs(X.data).max()) if X.data.size else 0.0, 1.0)
    # Gradients never need clipping when the loss's derivative is bounded
    # (classification, Huber) and no weight times input can reach the bound.
    largest_weight = float(sample_weight.max()) if len(sample_weight) else 0.0
    never_clip = loss.derivative_bound * largest_weight * largest_input <= bound
    unit_weights = bool(np.all(sample_weight == 1.0))
    margins = np.empty((len(rows), n_outputs), dtype=np.float64)
    # Consecutive rows (partial_fit, fit without shuffling) are read as slices
    # of X's arrays, without gathering.
    consecutive = len(rows) > 0 and np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows)))
    batches = _BatchReader(X, rows, batch_size, consecutive)
    intercept_z, intercept_n = z_intercept.tolist(), n_intercept.tolist()
    # Gradients beyond float64 are clipped and margins that overflow are
    # recomputed (see _linear_numpy): those overflows do not warn.
    with np.errstate(over="ignore", invalid="ignore"):
        for first in range(0, len(rows), batch_size):
            batch_rows = rows[first : first + batch_size]
            n_batch = len(batch_rows)
            touched, group_of_value, row_of_value, values = batches.read(first)
            z_touched = _math.gather(z_by_feature, touched)
            n_state = _math.gather(n_by_feature, touched)
            root_n = _math.rate_root(n_state, parameters.learning_rate_power)
            w_touched = _math.weights(z_touched, root_n, rates)
            w_intercept, root_n_intercept = _math.intercept_weights(
                intercept_z, intercept_n, parameters
            )
            # A slice selects consecutive rows faster than an index array.
            selected = slice(batch_rows[0], batch_rows[-1] + 1) if consecutive else batch_rows
            # Margins: each value * weight summed into its row's (and output's) cell.
            batch_margins = margins[first : first + n_batch]
            batch_margins[:] = sum_by_group(
                _times(values, w_touched[group_of_value]), row_of_value, n_batch
            ).reshape(n_batch, n_outputs)
            # One output: a float, which numpy adds faster than a list.
            batch_margins += w_intercept[0] if single_output else w_intercept
            if not np.isfinite(batch_margins).all():
                _rescale_margins(
                    batch_margins, values, w_touched, group_of_value, row_of_value, w_intercept
                )
            if interactions is not None:
                batch_margins += interactions.batch_margins(
                    touched, group_of_value, row_of_value, values, n_batch
                )
            derivative = loss.derivative(batch_margins, targets[selected])
            if single_output:
                derivative = derivative[:, 0]
            if not unit_weights:
                row_weights = sample_weight[selected]
                derivative *= row_weights if single_output else row_weights[:, None]
            if not never_clip:  # an unbounded derivative, or times a weight, may overflow
                np.clip(derivative, -_math.LARGEST, _math.LARGEST, out=derivative)
            gradient = _times(values, derivative[row_of_value])
            # Clipping only when some |value * derivative| may exceed the bound.
            clip = not never_clip and np.abs(derivative).max() * largest_input > bound
            if clip:
                _math.clip_gradient(gradient, bound)
            if undo is not None:
                # The coordinates as the batch read them, before its step.
                gathered = (z_touched, n_state)
                if interactions is not None:
                    gathered += interactions.gathered()
                undo.record(touched, gathered)
            if interactions is not None:
                interactions.step(gradient.reshape(len(values), n_outputs))
            # Each touched column's summed gradient G and squared gradients Q,
            # summed over its non-zeros in row order.
            gradient_sum = sum_by_group(gradient, group_of_value, len(touched))
            gradient *= gradient
            squared_sum = sum_by_group(gradient, group_of_value, len(touched))
            z_by_feature[touched], n_by_feature[touched] = _math.update_coordinates(
                z_touched,
                n_state,
                root_n,
                w_touched,
                gradient_sum,
                squared_sum,
                rates,
                smallest_n,
                largest,
            )
            if parameters.fit_intercept:
                if clip:
                    _math.clip_gradient(derivative, bound)
                # Per output: a list of K floats (a 1-d derivative sums to one).
                # np.add.reduce is ndarray.sum without its Python wrapper.
                gradient_sum = np.add.reduce(derivative, axis=0).reshape(-1).tolist()
                derivative *= derivative
                squared_sum = np.add.reduce(derivative, axis=0).reshape(-1).tolist()
                _math.step_intercepts(
                    intercept_z,
                    intercept_n,
                    root_n_intercept,
                    w_intercept,
                    gradient_sum,
                    squared_sum,
                    parameters,
                )
    z_intercept[:], n_intercept[:] = intercept_z, intercept_n
    return margins


def _rescale_margins(margins, values, w_touched, group_of_value, row_of_value, intercepts):
    """The batch's margins whose sum overflowed, recomputed by :func:`._math.rescaled_margin`."""
    w_touched = w_touched.reshape(len(w_touched), -1)  # (touched, K)
    for row, k in zip(*np.nonzero(~np.isfinite(margins))):
        in_row = row_of_value == row
        margins[row, k] = _math.rescaled_margin(
            values[in_row], w_touched[group_of_value[in_row], k], intercepts[k]
        )


def _times(values, factors):
    """``values`` (shape (m,)) times ``factors`` of shape (m,) or (m, K), row by row."""
    return values * factors if factors.ndim == 1 else values[:, None] * factors


def sum_by_group(values, group_of_value, n_groups):
    """Sums of ``values`` (shape (m, ...)) by group: shape (n_groups, ...).

    Each group's values are added in their order in ``values``.
    """
    if values.ndim == 1:
        return np.bincount(group_of_value, weights=values, minlength=n_groups)
    cell_shape = values.shape[1:]
    n_cells = math.prod(cell_shape)
    cells = (group_of_value[:, None] * n_cells + np.arange(n_cells)).ravel()
    return np.bincount(cells, weights=values.ravel(), minlength=n_groups * n_cells).reshape(
        n_groups, *cell_shape
    )


class _BatchReader:
    """The mini-batches' non-zeros of X, grouped by column without sorting.

    Each of a batch's non-zeros writes its position into the slot of its
    column in a scratch array of n_features entries; reading the slots back
    gives every non-zero of a column the position of one of them, which then
    stands for the column. That is two passes over the batch's non-zeros
    instead of a sort. The scratch array is allocated once per pass and never
    initialized or read outside the batch's columns, so only the memory pages
    of touched columns are ever used.

    The batches' columns, values and rows are prepared a block of batches
    at a time (:func:`._rows.rows_per_block`), in a few calls over the
    block: a batch then reads slices of them, and its per-batch numpy calls
    are only the grouping's.
    """

    def __init__(self, X, rows, batch_size, consecutive):
        self.X, self.rows, self.batch_size, self.consecutive = X, rows, batch_size, consecutive
        self.rows_per_block = rows_per_block(X, batch_size)
        self.column_slot = np.empty(X.shape[1], dtype=np.intp)
        self.positions = np.arange(0)  # 0, 1, 2, ...: at least a batch's non-zeros
        self.block_start = self.block_end = 0

    def _prepare_block(self, first):
        """Prepare the block of batches that starts at position ``first`` of the rows."""
        block_rows = self.rows[first : first + self.rows_per_block]
        self.columns, self.values, row_lengths = nonzeros_of_rows(
            self.X, block_rows, self.consecutive
        )
        row_bounds = np.concatenate(([0], np.cumsum(row_lengths)))
        n_rows = len(block_rows)
        # Each non-zero's row, numbered within its batch.
        self.row_of_value = np.repeat(np.arange(n_rows) % self.batch_size, row_lengths)
        self.batch_bounds = row_bounds[[*range(0, n_rows, self.batch_size), n_rows]].tolist()
        longest_batch = int(np.diff(self.batch_bounds).max())
        if longest_batch > len(self.positions):
            self.positions = np.arange(longest_batch)
        self.block_start, self.block_end = first, first + n_rows

    def read(self, first):
        """The non-zeros of the batch that starts at position ``first`` of the
        rows, grouped by column (batches are read in order).

        Returns ``(touched, group_of_value, row_of_value, values)``: the
        distinct columns (intp), and each non-zero's group (its column's
        position in ``touched``), row in the batch, and value, in X's order.
        """
        if first >= self.block_end:
            self._prepare_block(first)
        batch = (first - self.block_start) // self.batch_size
        start, end = self.batch_bounds[batch], self.batch_bounds[batch + 1]
        columns = self.columns[start:end]
        positions = self.positions[: end - start]
        slot = self.column_slot
        # Of a column's non-zeros, one's position is left in its slot: which
        # one does not matter, only that all of them read the same.
        slot[columns] = positions
        representatives = (slot[columns] == positions).nonzero()[0]
        touched = columns[representatives]
        # Then each touched column's slot holds its group, for all its non-zeros.
        slot[touched] = positions[: len(touched)]
        return touched, slot[columns], self.row_of_value[start:end], self.values[start:end]


class LinearBatchEngine(LinearNumpyEngine):
    """The mini-batch pass; the weights as ``weights_engine`` (the family's
    exact engine, numpy or numba) computes them."""

    def __init__(self, batch_size, weights_engine):
        self.batch_size = batch_size
        self.weights_engine = weights_engine
        self.name = weights_engine.name
        self.whole_weights_cost = weights_engine.whole_weights_cost

    def learn(self, state, parameters, X, targets, sample_weight, rows, undo=None):
        return learn(state, parameters, X, targets, sample_weight, rows, self.batch_size, undo)

    def weights(self, state, parameters):
        return self.weights_engine.weights(state, parameters)
