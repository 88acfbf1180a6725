"""A learning call's transaction: the estimator left exactly as it was when
the call raises (:func:`unchanged_on_error`), and the lock that runs one
estimator's learning calls one at a time (:func:`learning_lock`)."""

import contextvars
import functools
import threading
import weakref
from typing import Any, cast

from ._typing import Function


class _TrainingCall:
    """What a call of a method wrapped by :func:`unchanged_on_error` must undo."""

    def __init__(self, estimator):
        self.estimator = estimator
        self.fresh_z = None  # z_ of a state the call made: nothing to restore in it
        self.undo_records = []  # of the call's passes (see undo_record)


_TRAINING_CALL = contextvars.ContextVar("skftrl_training_call", default=None)


def unchanged_on_error(method: Function) -> Function:
    """Leave the estimator exactly as it was if ``method`` raises.

    Any exception counts, KeyboardInterrupt and warnings turned into errors
    included, wherever it is raised. Validation (scikit-learn's
    ``validate_data`` among it) sets attributes such as ``n_features_in_``
    before it has checked everything: restoring the attribute dictionary
    undoes that. Lists (``loss_curve_``) are cut back to their length. A pass
    changes the state arrays in place: a copy of the state made before it, or
    a log of the old values of what it changes
    (:func:`~skftrl._engines.undo_record`), is written back. A call made
    by such a method of the same estimator is part of it: the outer undoes both.
    The call holds the estimator's :func:`learning_lock`: calls from several
    threads run one at a time, each from the state the previous one left.
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        outer = _TRAINING_CALL.get()
        if outer is not None and outer.estimator is self:
            return method(self, *args, **kwargs)
        with learning_lock(self):
            saved = dict(self.__dict__)
            lists = [(value, len(value)) for value in saved.values() if type(value) is list]
            call = _TrainingCall(self)
            token = _TRAINING_CALL.set(call)
            try:
                return method(self, *args, **kwargs)
            except BaseException:
                for record in reversed(call.undo_records):
                    record.restore()
                for value, length in lists:
                    del value[length:]
                self.__dict__.clear()
                self.__dict__.update(saved)
                raise
            finally:
                _TRAINING_CALL.reset(token)

    return cast(Function, wrapper)


# The lock of each estimator's learning calls (see learning_lock), by id:
# (a weak reference to the estimator, which drops the entry, and the lock).
_LEARNING_LOCKS: dict[int, tuple["weakref.ref[Any]", Any]] = {}
# Reentrant: the garbage collector may free an estimator (and call
# _forget_learning_lock) in a thread that holds it.
_LEARNING_LOCKS_GUARD = threading.RLock()


def learning_lock(estimator):
    """The lock that makes the estimator's learning calls (the methods wrapped
    by :func:`unchanged_on_error`) run one at a time, one thread after the
    other. Kept outside the estimator, so that pickles, copies and clones
    never hold it (each has its own); reentrant, so that a learning call may
    make another on the same estimator."""
    entry = _LEARNING_LOCKS.get(id(estimator))
    if entry is None or entry[0]() is not estimator:
        with _LEARNING_LOCKS_GUARD:
            entry = _LEARNING_LOCKS.get(id(estimator))
            if entry is None or entry[0]() is not estimator:
                forget = functools.partial(_forget_learning_lock, id(estimator))
                entry = (weakref.ref(estimator, forget), threading.RLock())
                _LEARNING_LOCKS[id(estimator)] = entry
    return entry[1]


def _forget_learning_lock(key, reference):
    """Drop the entry of a freed estimator (unless its id is another's already)."""
    with _LEARNING_LOCKS_GUARD:
        if _LEARNING_LOCKS.get(key, (None,))[0] is reference:
            del _LEARNING_LOCKS[key]
