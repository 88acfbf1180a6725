"""A deliberately slow, independent parallel pass, written from the
documentation page docs/parallel.rst ("How a parallel pass learns").

It learns with the slow references (reference.py, reference_fm.py): the first
rows one after the other while the rounds are too short, then round after
round, each round's rows cut into ``n_jobs`` contiguous shards, each shard
learned one row at a time by a copy of the model as the round began, and the
copies' changes merged, shard after shard, coordinate by coordinate. It
shares no code with skftrl.
"""

import copy
import math

# The learned state of each reference class, and each container's value for a
# coordinate it does not hold yet (the dictionaries of ReferenceFTRL).
STATE = ("z", "n", "z_bias", "n_bias", "z_v", "n_v")


def rounds(n_rows, n_jobs, seen, growth, smallest, largest):
    """The shards of each round of a pass of ``n_jobs`` threads, as lists of
    ``(start, stop)``: while ``growth * sqrt(rows learned)`` is under
    ``n_jobs * smallest``, one row in order; then rounds of that many rows, at
    most ``n_jobs * largest``, cut into ``n_jobs`` contiguous shards."""
    result, start = [], 0
    while start < n_rows:
        size = math.floor(growth * math.sqrt(seen + start))
        if size < n_jobs * smallest:
            result.append([(start, start + 1)])
            start += 1
        else:
            stop = min(n_rows, start + min(size, n_jobs * largest))
            bounds = [start + (stop - start) * t // n_jobs for t in range(n_jobs + 1)]
            result.append(list(zip(bounds[:-1], bounds[1:])))
            start = stop
    return result


def merged(current, start, value):
    """A coordinate that a shard moved from ``start`` to ``value``, after the
    shards before it moved it to ``current``: their changes added up."""
    if value == start:
        return current
    if current == start:
        return value
    return current + (value - start)


def _merge(current, start, value, default):
    """Merge ``value`` (a shard's, learned from ``start``) into ``current``, in
    place: lists (of lists) of floats, or dicts whose missing keys hold ``default``."""
    keys = value.keys() if isinstance(value, dict) else range(len(value))
    for key in keys:
        if isinstance(value[key], (list, dict)):
            _merge(current[key], start[key], value[key], default)
        else:
            current[key] = merged(
                current.get(key, default) if isinstance(current, dict) else current[key],
                start.get(key, default) if isinstance(start, dict) else start[key],
                value[key],
            )


def learn_in_rounds(model, rows, targets, weights, rounds):
    """Learn ``rows`` (dicts) with the reference ``model`` in ``rounds``
    (lists of shards, each ``(start, stop)``): each shard by a copy of the
    model as its round began, the copies' changes then merged in order."""
    for shards in rounds:
        began = copy.deepcopy(model)
        for a, b in shards:
            shard = copy.deepcopy(began)
            for i in range(a, b):
                shard.learn_one(rows[i], targets[i], weights[i])
            for name in STATE:
                if hasattr(model, name):
                    default = model.n_initial if name == "n" else 0.0
                    _merge(
                        getattr(model, name), getattr(began, name), getattr(shard, name), default
                    )
    return model
