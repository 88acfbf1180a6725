"""A saved model's state: its touched coordinates, the untouched ones made
again, and the checks of what a file holds; :class:`SavedState`, the
estimators' pickling and copying built on them.

A model saved by pickle, joblib or skops (or deep-copied) keeps, of each
pair ``(z, n)`` of per-feature arrays, only the coordinates training has
touched, when their records are small (:func:`touched_coordinates`): its file
grows with the model's learned state, not with its width. Loading makes the
untouched coordinates again (:func:`untouched_state`) and writes the touched
ones back, after checking that the records fit the model
(:func:`checked_shape`), before anything is allocated. A saved state missing
an array of the model's, holding one of the wrong type or shape, or the
state of another kind of model, is refused first
(:meth:`SavedState._check_saved_state`): every damaged file is a ValueError.

Both work a block of features at a time (:func:`._engines._math.state_blocks`),
with the untouched values given as ``(z0, n0)``: ``n0`` a number, ``z0`` a
number or an iterable of one array a block (a factorization machine's
initial factors, drawn again block by block). Saving then needs memory for
the records only, and loading for the state and the records.
"""

import itertools
import math
from numbers import Integral

import numpy as np
from sklearn.base import ClassifierMixin

from ._engines._math import STATE_BLOCK_VALUES, new_state, state_blocks
from ._engines._prediction import PredictionCache

# A saved model keeps only the touched coordinates of a pair when their
# records (a position and a z and an n each) take at most this fraction of
# the pair's arrays: saving then needs at most that much memory besides the
# state, and a model whose state is mostly touched is saved whole.
COMPACT_FRACTION = 0.25


def _blocks_of_untouched(shape, z0):
    """``((output, features), z0 of the block)`` of each block of ``shape``."""
    initial = itertools.repeat(z0) if np.isscalar(z0) else z0
    return zip(state_blocks(shape), initial)


def touched_coordinates(z, n, z0, n0):
    """The coordinates where ``z`` or ``n`` differ from their untouched values
    ``(z0, n0)`` (see the module's docstring), compared bit for bit: a dict of
    the shape, their flat positions (C order) and values, to save a model
    compactly. None when their records would take more than
    :data:`COMPACT_FRACTION` of the arrays.

    The blocks are compared once, each block's touched coordinates kept (as
    their positions, or a mask of bits when that is smaller), and the records
    then filled in: besides them, this needs at most a bit a coordinate of
    the blocks that have touched ones.
    """
    bits = np.dtype(f"u{z.dtype.itemsize}")

    def differs(array, initial):
        return array.view(bits) != np.asarray(initial, dtype=array.dtype).view(bits)

    most = int(COMPACT_FRACTION * (z.nbytes + n.nbytes)) // (8 + 2 * z.dtype.itemsize)
    masks, count = [], 0
    for (output, features), initial in _blocks_of_untouched(z.shape, z0):
        touched = differs(z[output, features], initial)
        touched |= differs(n[output, features], n0)
        found = np.count_nonzero(touched)
        count += found
        if count > most:
            return None
        if found:
            # Positions where they are few, else a bit a coordinate.
            few = 64 * found < touched.size
            kept = np.flatnonzero(touched) if few else np.packbits(touched, axis=None)
            masks.append((output, features, kept))
    positions = np.empty(count, dtype=np.int64)
    z_values, n_values = np.empty(count, dtype=z.dtype), np.empty(count, dtype=n.dtype)
    per_feature, filled = math.prod(z.shape[2:]), 0
    for output, features, kept in masks:
        z_block, n_block = z[output, features], n[output, features]
        packed = kept.dtype == np.uint8
        where = np.flatnonzero(np.unpackbits(kept, count=z_block.size)) if packed else kept
        end = filled + len(where)
        positions[filled:end] = where + (output * z.shape[1] + features.start) * per_feature
        z_values[filled:end] = z_block.reshape(-1)[where]
        n_values[filled:end] = n_block.reshape(-1)[where]
        filled = end
    return {
        "shape": np.array(z.shape, dtype=np.int64),
        "positions": positions,
        "z": z_values,
        "n": n_values,
    }


def untouched_state(layout, shape, dtype, z0, n0):
    """A new ``(z, n)`` of ``layout`` (zeros), holding the untouched values
    ``(z0, n0)`` everywhere; a 0 is not written, so that the pages of a wide
    model that stay 0 are never allocated."""
    z, n = layout(shape, dtype)
    if not np.isscalar(z0) or z0 != 0:
        for (output, features), initial in _blocks_of_untouched(shape, z0):
            z[output, features] = initial
    if n0 != 0:
        n[...] = n0
    return z, n


def put_touched_coordinates(touched, z, n):
    """Write the coordinates of :func:`touched_coordinates` into ``z`` and
    ``n`` (each output's a 1-d view, as the layouts make them), a block of
    positions at a time: no index array of the records' size is made."""
    z_values, n_values = touched["z"], touched["n"]
    # Any integer dtype checked_shape accepts, as int64: the divisions below
    # by the state's sizes then fit.
    positions = touched["positions"].astype(np.int64, copy=False)
    per_output = math.prod(z.shape[1:])
    # Several index arrays of a block are made: smaller blocks than the state's.
    step = STATE_BLOCK_VALUES // 8
    for start in range(0, len(positions), step):
        block = slice(start, start + step)
        outputs, within = np.divmod(positions[block], per_output)
        for output in np.unique(outputs):
            chosen = outputs == output
            z_output, n_output = _flat_view(z[output]), _flat_view(n[output])
            z_output[within[chosen]] = z_values[block][chosen]
            n_output[within[chosen]] = n_values[block][chosen]


def kept_as_loaded(array):
    """Whether a loaded ``array`` can be kept as it is, without a copy: a
    read-only view of it is then one a pass can make writable again."""
    return isinstance(array, np.ndarray) and array.flags.c_contiguous and array.flags.writeable


def _flat_view(array):
    """``array`` as a 1-d view in C order (which the state's layouts allow)."""
    flat = array.reshape(-1)
    if not np.may_share_memory(flat, array):
        raise ValueError("the state's layout has no flat view: nothing can be written into it")
    return flat


def damaged(name, problem):
    """The error of a saved model whose ``name`` (an attribute, or a record of
    its state) is not what the model is made of."""
    return ValueError(f"the model's saved {name} {problem}: the file is damaged")


def checked_shape(entry, touched, shape):
    """The shape of the saved touched coordinates ``touched`` (a dict saved
    as ``entry``), checked against ``shape``, the model's, before anything of
    that shape is allocated: a ValueError names what a damaged or tampered
    file got wrong."""

    if not isinstance(touched, dict) or not {"shape", "positions", "z", "n"} <= set(touched):
        raise damaged(entry, "is not a record of touched coordinates")
    saved = touched["shape"]
    if not isinstance(saved, np.ndarray) or saved.dtype.kind not in "iu":
        raise damaged(entry, "has no integer shape")
    if tuple(saved.tolist()) != tuple(shape):
        raise damaged(
            entry, f"has the shape {tuple(saved.tolist())}, not the model's {tuple(shape)}"
        )
    positions, z, n = touched["positions"], touched["z"], touched["n"]
    arrays = [positions, z, n]
    if not all(isinstance(array, np.ndarray) and array.ndim == 1 for array in arrays):
        raise damaged(entry, "holds other than 1-d arrays")
    if not len(positions) == len(z) == len(n):
        raise damaged(entry, "holds positions and values of different lengths")
    if positions.dtype.kind not in "iu":
        raise damaged(entry, "holds positions that are not integers")
    if z.dtype != n.dtype or z.dtype not in (np.float32, np.float64):
        raise damaged(entry, f"holds values of dtypes {z.dtype} and {n.dtype}")
    size = int(np.prod(shape))
    if len(positions) and (positions.min() < 0 or positions.max() >= size):
        raise damaged(entry, f"holds positions outside the state's {size} coordinates")
    return tuple(shape)


def _is_count(value):
    """Whether ``value`` is a non-negative integer (a bool is not one)."""
    return isinstance(value, Integral) and not isinstance(value, (bool, np.bool_)) and value >= 0


def check_saved_array(name, array, shape):
    """Refuse a saved per-feature array ``name`` of the state that is not a
    float64 or float32 numpy array of ``shape``, before it is copied into
    the state's layout (which would convert or broadcast it)."""
    if not isinstance(array, np.ndarray):
        raise damaged(name, f"is a {type(array).__name__}, not a numpy array")
    if array.shape != tuple(shape):
        raise damaged(name, f"has the shape {array.shape}, not the model's {tuple(shape)}")
    if array.dtype not in (np.float64, np.float32):
        raise damaged(name, f"has the dtype {array.dtype}, not float64 or float32")


def _state_names(cls):
    """The attributes of the learned state of the estimator class ``cls`` and
    the entries it saves them as."""
    fields = {f"{name}_" for name in cls._state_record._fields}
    return fields | {pair[2] for pair in cls._SAVED_PAIRS}


def _estimator_classes(cls):
    """The estimator classes below ``cls`` (SavedState) that hold a state."""
    for subclass in cls.__subclasses__():
        if hasattr(subclass, "_state_record"):
            yield subclass
        yield from _estimator_classes(subclass)


def read_only(array):
    """``array``, made read-only: the exposed state, which the kept weights
    were computed from, can then change only through a training pass."""
    array.flags.writeable = False
    return array


def linear_layout(shape, dtype):
    """A new ``(z, n)`` of ``shape`` (K, F) as :func:`new_state` lays them out."""
    return new_state(*shape, dtype)


class SavedState:
    """The estimators' pickling and copying (a mixin of their base class):
    a saved model keeps the touched coordinates of its state, a loaded one
    is checked against the model, a copy shares no learned array."""

    def __getstate__(self):
        # A saved (pickled, joblib, skops) or deep-copied model keeps only the
        # coordinates training has touched, when that is small (see
        # skftrl._persistence): its file grows with the model's non-zero state,
        # not with its width (2**20 hashed columns are 16 MB of float64 state,
        # most of it untouched). Untouched means z and n equal the values they
        # started from, compared bit for bit, so that loading restores the
        # exact state.
        # A copy: object.__getstate__ may return the instance's own __dict__.
        state = dict(super().__getstate__())
        # Not part of the model: the kept weights, and the record of the
        # hyper-parameters last validated (which holds types: a loaded model
        # validates its parameters again on its first partial_fit).
        state.pop("_prediction_cache", None)
        state.pop("_checked_params", None)
        for z_name, n_name, entry, _ in self._SAVED_PAIRS:
            if z_name not in state:
                continue
            z, n = state[z_name], state[n_name]
            untouched = self._untouched(entry, z.shape, z.dtype)
            touched = None if untouched is None else touched_coordinates(z, n, *untouched)
            if touched is not None:
                del state[z_name], state[n_name]
                if np.isscalar(untouched[0]):  # the untouched n, as saved models hold it
                    touched["fill"] = np.asarray([untouched[1]], dtype=z.dtype)
                state[entry] = touched
        return state

    def __setstate__(self, state):
        # pickle, copy.deepcopy and skops store each z and n as two separate
        # arrays, or only their touched coordinates (see __getstate__): put
        # them back as _fresh_state makes them. What the file holds is checked
        # against the model before anything of its size is allocated.
        state = dict(state)
        self._check_saved_state(state)
        saved = {pair[2]: state.pop(pair[2]) for pair in self._SAVED_PAIRS if pair[2] in state}
        super().__setstate__(state)
        fitted = saved or any(pair[0] in self.__dict__ for pair in self._SAVED_PAIRS)
        shapes = self._state_shapes() if fitted else None
        for z_name, n_name, entry, layout in self._SAVED_PAIRS:
            if entry in saved:
                touched = saved[entry]
                shape = checked_shape(entry, touched, shapes[z_name[:-1]])
                dtype = touched["z"].dtype
                untouched = self._untouched(entry, shape, dtype)
                if untouched is None:
                    raise ValueError(
                        f"the model's saved {entry} has no record of the untouched "
                        "values: the file is damaged"
                    )
                z, n = untouched_state(layout, shape, dtype, *untouched)
                put_touched_coordinates(touched, z, n)
                setattr(self, z_name, read_only(z))
                setattr(self, n_name, read_only(n))
            elif z_name in self.__dict__:
                for name in (z_name, n_name):
                    check_saved_array(name, self.__dict__[name], shapes[name[:-1]])
                self._store_copy(z_name, n_name, layout, loaded=True)
        if "z_" in self.__dict__:
            self._prediction_cache = PredictionCache()
            self._state()  # checked: a damaged file fails here, not at predict

    def _check_saved_state(self, state):
        """Refuse, before anything is set, a saved ``state`` (a dict) that this
        model cannot be made of: one holding another kind of model's state, or
        a fitted one missing part of its own, or whose shape-giving attributes
        are damaged. A ValueError names what is wrong."""
        own = _state_names(type(self))
        others = {}
        for cls in _estimator_classes(SavedState):
            for name in _state_names(cls) - own:
                others.setdefault(name, set()).add(cls.__name__)
        if not isinstance(self, ClassifierMixin):
            others["classes_"] = {"a classifier"}
        foreign = sorted(set(state) & set(others))
        if foreign:
            owners = sorted(set().union(*(others[name] for name in foreign)))
            owners = [owner for owner in owners if not owner.startswith("_")]
            raise ValueError(
                f"the saved state holds {', '.join(foreign)}, which a "
                f"{type(self).__name__} does not have: it is the state of another kind of "
                f"model ({', '.join(owners)}); load it into that model's class"
            )
        if not own & set(state):
            return  # an unfitted model
        for field in self._state_record._fields:
            name = f"{field}_"
            entries = [pair[2] for pair in self._SAVED_PAIRS if name in pair[:2]]
            if name not in state and not any(entry in state for entry in entries):
                raise damaged("state", f"has no {name}")
        for name in ("n_features_in_", "n_samples_seen_"):
            if not _is_count(state.get(name)):
                raise damaged(name, f"is {state.get(name)!r}, not a non-negative integer")
        if isinstance(self, ClassifierMixin):
            classes = state.get("classes_")
            if not isinstance(classes, np.ndarray) or classes.ndim != 1 or len(classes) < 2:
                raise damaged("classes_", "is not a 1-d array of at least two classes")
        # None in a model saved before the record existed.
        created = state.get("_state_parameters", dict.fromkeys(self._STATE_PARAMETERS))
        if not isinstance(created, dict) or set(created) != set(self._STATE_PARAMETERS):
            raise damaged(
                "_state_parameters", f"is not a record of {', '.join(self._STATE_PARAMETERS)}"
            )

    def _store_copy(self, z_name, n_name, layout, loaded=False):
        """Replace the arrays ``z_name`` and ``n_name`` with read-only copies in
        one buffer of ``layout``. Arrays just ``loaded`` from a file are kept
        as they are, without a copy, when the layout is not the linear
        model's (which interleaves z and n, see new_state) and they allow it."""
        z, n = getattr(self, z_name), getattr(self, n_name)
        if loaded and layout is not linear_layout:
            if kept_as_loaded(z) and kept_as_loaded(n):
                setattr(self, z_name, read_only(z.view()))
                setattr(self, n_name, read_only(n.view()))
                return
        z_copy, n_copy = layout(z.shape, z.dtype)
        z_copy[...], n_copy[...] = z, n
        setattr(self, z_name, read_only(z_copy))
        setattr(self, n_name, read_only(n_copy))

    def __copy__(self):
        """A shallow copy that shares no learned array or list with the original,
        so that training the copy never changes the original."""
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        for name, value in self.__dict__.items():
            if type(value) is list:
                copied.__dict__[name] = list(value)
        if "z_" in self.__dict__:
            for z_name, n_name, _, layout in self._SAVED_PAIRS:
                copied._store_copy(z_name, n_name, layout)
            copied.z_intercept_ = self.z_intercept_.copy()
            copied.n_intercept_ = self.n_intercept_.copy()
            copied._prediction_cache = PredictionCache()
        return copied
