"""The prediction cache: the weights of one state, kept between predictions.

The rule, in one sentence: predictions from one state compute only the
weights of their own non-zeros until, counting the current call, they would
have read more non-zeros than the engine's ``whole_weights_cost`` times the
state's number of features; then that call computes every weight, and they are
kept and reused until the next training pass, a new state array or changed
parameters.

This is the ski-rental rule (rent until the rent paid equals the price, so the
total is at most twice the best choice): a stream predicting each batch before
learning it never pays a pass over all the coordinates of a wide hashed model,
a model serving rows pays it once it has read that much, and scoring many rows
pays it at once. A state whose arrays are writable (assigned by the user, who
may change them in place) is never cached.

The estimator owns one cache, made with its state, left out of its pickles
and copies, and cleared by every pass. All caches compare equal: a cache is not
part of a model's value. Weights computed while a pass runs in another thread
(from a state part way through it) are used for that prediction only: a clear
during their computation keeps them out of the cache.
"""

import threading


class PredictionCache:
    """See the module's docstring."""

    __slots__ = ("_source", "_coef", "_nonzeros_read", "_clears", "_lock")

    def __init__(self):
        self._lock = threading.Lock()
        self._clears = 0
        self.clear()

    def clear(self):
        """Forget everything (a training pass, a new state)."""
        with self._lock:
            self._source, self._coef, self._nonzeros_read = None, None, 0
            self._clears += 1

    def _keep(self, coef, clears):
        """Keep the weights ``coef`` unless the cache was cleared since it
        counted ``clears``: they may be those of a state a pass was changing."""
        with self._lock:
            if self._clears == clears:
                coef.flags.writeable = False
                self._coef = coef

    def __eq__(self, other):
        return isinstance(other, PredictionCache)

    def __copy__(self):
        return PredictionCache()

    def __deepcopy__(self, memo):
        return PredictionCache()

    def __reduce__(self):
        return PredictionCache, ()

    def _current(self, state, parameters, engine):
        """Whether this cache may keep weights for the state; resets it for a new one."""
        if state.z.flags.writeable or state.n.flags.writeable:
            return False
        source = (state.z, state.n, parameters, engine.name)
        kept = self._source
        same_arrays = kept is not None and kept[0] is state.z and kept[1] is state.n
        if not same_arrays or kept[2:] != source[2:]:
            self.clear()
            self._source = source
        return True

    @property
    def kept(self):
        """Whether the weights of every coordinate are kept."""
        return self._coef is not None

    @property
    def nonzeros_read(self):
        """The non-zeros the predictions from this state have read weights for."""
        return self._nonzeros_read

    def coef(self, state, parameters, engine):
        """The whole state's weights (a new array): the kept ones, else computed."""
        if self._current(state, parameters, engine) and self._coef is not None:
            return self._coef.copy()
        return engine.weights(state, parameters)

    def margins(self, X, state, parameters, engine):
        """``engine.margins`` of a validated X, with the weights as the rule says."""
        cacheable = self._current(state, parameters, engine)
        clears = self._clears
        coef = self._coef
        if cacheable and coef is not None:
            return engine.margins(X, state, parameters, coef)
        nonzeros_read = (self._nonzeros_read if cacheable else 0) + getattr(X, "nnz", float("inf"))
        if nonzeros_read < engine.whole_weights_cost * state.z.shape[1]:
            if cacheable:
                self._nonzeros_read = nonzeros_read
            # numpy in every engine: compiled, the weights' divisions and
            # square roots still dominate, and it ran no faster.
            return engine.margins(X, state, parameters)
        coef = engine.weights(state, parameters)
        if cacheable:
            self._keep(coef, clears)
        return engine.margins(X, state, parameters, coef)
