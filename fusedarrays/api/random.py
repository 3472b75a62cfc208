"""``fa.random``: counter-based random numbers, drawn inside the kernel that uses them.

``fa.random.default_rng(seed)`` gives a :class:`Generator` with NumPy's method names. A draw is a
graph node (``graph.random``), not an array in memory: ``x + 0.1 * rng.standard_normal(x.shape)``
is one kernel that reads ``x`` and writes the result. Each element's value is Philox4x32-10
(Random123's counter-based generator) of (seed, the draw's key, the element's C-order index),
so the numbers are the same on every backend (cpu, sim, cuda), for any schedule, vector width
or thread count, and a draw's view (``.T``, ``[::-1]``, a broadcast) reads the same numbers a
materialised draw would. The seed and the key are scalar kernel parameters: a new seed or a new
draw never recompiles.

Streams: the seed goes through NumPy's ``SeedSequence`` (any non-negative int, or None for fresh
entropy) to a 64-bit Philox key; each draw of a generator takes the next 64-bit draw key as the
high half of the counter, the element's block index the low half. The numbers are not NumPy's
(NumPy's default bit generator is PCG64), but the distributions and the result dtypes are.

Conversions: a float32 uniform is the word's top 24 bits times 2**-24, a float64 one 53 bits of
two words (NumPy's conversions); normals come by Box-Muller from two words, computed from
IEEE-exact operations so that every backend rounds them alike; integers by multiply-shift of a
64-bit word (spans up to 2**32, bias below span / 2**64).

Permutations (``permutation``, ``shuffle``) sort random keys: a float64 draw of one key per
element (53 random bits each), argsorted where it is by the backend's library
(:mod:`.sorting`: CUB's radix sort on cuda, NumPy's on the host backends), a stable sort, so
keys that tie keep their draw order; since the keys are the same on every backend, so is the
permutation. An array is permuted by a gather through that int64 index, fused into its
consumer.

Not here: ``choice``, ``permuted``, and the other distributions.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import DTypeError, UnsupportedOperationError
from ..ir import dtypes, graph, layout
from . import array as _array
from .array import ndarray
from .indexing import take, upload_index
from .sorting import argsort
from .stochastic import stochastic_round

_U64 = np.dtype(np.uint64)
_I64 = np.dtype(np.int64)
_FLOATS = {np.dtype(np.float32): "uniform_f32", np.dtype(np.float64): "uniform_f64"}
_MAX_SPAN = 1 << 32


def _shape(size) -> tuple:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        size = (size,)
    shape = tuple(int(e) for e in size)
    if any(e < 0 for e in shape):
        raise ValueError(f"negative dimensions are not allowed: size={size}")
    return shape


def _float_dtype(dtype, method: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in _FLOATS:
        raise DTypeError(f"Generator.{method}: unsupported dtype {dt} (float32 and float64 are "
                         f"supported, as in NumPy); cast the result with .astype({dt}) instead")
    return dt


class Generator:
    """Draws counter-based random numbers; ``fa.random.default_rng(seed)`` makes one.

    >>> import fusedarrays as fa
    >>> rng = fa.random.default_rng(42)
    >>> u = rng.random((2, 3), dtype="float32")       # a pending draw: nothing runs
    >>> bool(((u.get() >= 0) & (u.get() < 1)).all())
    True
    >>> fa.random.default_rng(42).random(4).get().tolist() == \\
    ...     fa.random.default_rng(42).random(4).get().tolist()
    True
    """

    def __init__(self, seed=None):
        words = np.random.SeedSequence(seed).generate_state(2, np.uint32)
        self._seed = int(words[0]) | int(words[1]) << 32
        self._keys = itertools.count()   # next() is atomic: threads drawing get distinct keys

    def __repr__(self) -> str:
        return f"fa.random.Generator(Philox4x32-10, key {self._seed:#018x})"

    def _next_key(self) -> int:
        return next(self._keys)

    def _draw(self, dist: str, dtype: np.dtype, shape: tuple, extra: tuple = ()) -> ndarray:
        tracer = _array._tracing.tracer
        if tracer is not None:
            # inside fa.fuse: the key is a value the call takes from this generator, once per
            # call (fuse/trace.py host_scalar), never the tracing call's: each call draws fresh
            # numbers, the ones lazy code making the same draws in the same order would
            key = tracer.host_scalar(self._next_key, np.uint64(0), f"{dist} key")
        else:
            key = next(self._keys)
        inputs = (graph.scalar(self._seed, _U64), graph.scalar(key, _U64)) + extra
        view = (shape, layout.contiguous_strides(shape), 0)
        return _array._wrap(graph.random(dist, dtype, view, inputs))

    @staticmethod
    def _out(result: ndarray, out):
        if out is None:
            return result
        if not isinstance(out, ndarray) or out.shape != result.shape or out.dtype != result.dtype:
            raise ValueError(f"out must be a fa.ndarray of shape {result.shape} and dtype "
                             f"{result.dtype}; got {type(out).__name__}")
        out[...] = result
        return out

    def random(self, size=None, dtype=np.float64, out=None) -> ndarray:
        """Uniform floats in [0, 1) (float64 by default, as NumPy; float32 reads one 32-bit
        word per element, float64 two)."""
        dt = _float_dtype(dtype, "random")
        shape = out.shape if out is not None and size is None else _shape(size)
        return self._out(self._draw(_FLOATS[dt], dt, shape), out)

    def standard_normal(self, size=None, dtype=np.float64, out=None) -> ndarray:
        """Standard normal floats (Box-Muller: two 32-bit words give two normals; float32 ones
        computed to float32 accuracy, with shorter series than float64's)."""
        dt = _float_dtype(dtype, "standard_normal")
        shape = out.shape if out is not None and size is None else _shape(size)
        dist = "normal_f32" if dt == np.float32 else "normal"
        return self._out(self._draw(dist, dt, shape), out)

    def normal(self, loc=0.0, scale=1.0, size=None) -> ndarray:
        """``loc + scale * standard_normal`` (float64, NumPy's dtype; ``loc`` and ``scale`` may be
        arrays, broadcast as NumPy does)."""
        shape = _shape(size) if size is not None else _broadcast(loc, scale)
        return loc + scale * self.standard_normal(shape)

    def uniform(self, low=0.0, high=1.0, size=None) -> ndarray:
        """``low + (high - low) * random``, NumPy's formula (float64)."""
        shape = _shape(size) if size is not None else _broadcast(low, high)
        return low + (high - low) * self.random(shape)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False) -> ndarray:
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint``), as NumPy's, for spans
        up to 2**32; bounds are Python or NumPy integers."""
        if high is None:
            low, high = 0, low
        for name, bound in (("low", low), ("high", high)):
            if not isinstance(bound, (int, np.integer)) or isinstance(bound, bool):
                raise UnsupportedOperationError(
                    f"Generator.integers: {name}={bound!r}; only integer bounds are supported "
                    f"(array bounds: draw random() and scale it)")
        dt = dtypes.as_dtype(dtype)
        if dt.kind not in "iu":
            raise DTypeError(f"Generator.integers: dtype {dt} is not an integer dtype")
        low, high = int(low), int(high) + (1 if endpoint else 0)
        info = np.iinfo(dt)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"Generator.integers: bounds [{low}, {high}) are out of range for "
                             f"{dt}")
        span = high - low
        if span <= 0:
            raise ValueError(f"Generator.integers: low >= high (low={low}, high={high})")
        if span > _MAX_SPAN or low < np.iinfo(np.int64).min or high - 1 > np.iinfo(np.int64).max:
            raise UnsupportedOperationError(
                f"Generator.integers: a span of {span} values (low={low}, high={high}, {dt}); "
                f"spans up to 2**32 are supported: combine two draws for more")
        extra = (graph.scalar(low, _I64), graph.scalar(span, _U64))
        return self._draw("integers", dt, _shape(size), extra)

    def permutation(self, x, axis: int = 0) -> ndarray:
        """A random permutation of ``range(x)`` (int64) for an integer ``x``, else ``x``
        permuted along ``axis`` (a gather of it, computed where it is used), as NumPy's
        ``Generator.permutation`` (module docstring: random keys, sorted)."""
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            if x < 0:
                raise ValueError(f"Generator.permutation: x={x} must be a non-negative integer "
                                 "or an array")
            return self._order(int(x))
        x = _array.asarray(x)
        if x.ndim == 0:
            raise np.exceptions.AxisError("x must be an integer or at least 1-dimensional")
        if not -x.ndim <= axis < x.ndim:
            raise np.exceptions.AxisError(axis, x.ndim)
        return take(x, self._order(x.shape[axis]), axis=axis)

    def shuffle(self, x, axis: int = 0) -> None:
        """Permute the ``fa.ndarray`` ``x`` in place along ``axis`` (NumPy's
        ``Generator.shuffle``): ``x[...] = permutation(x)``, one staged write."""
        if not isinstance(x, ndarray):
            raise TypeError(f"Generator.shuffle: x must be a fa.ndarray, got "
                            f"{type(x).__name__} (NumPy arrays: numpy's own shuffle)")
        x[...] = self.permutation(x, axis)

    def _order(self, n: int) -> ndarray:
        """The order (int64) that sorts ``n`` fresh float64 keys (one draw), stably."""
        if n == 0:
            return upload_index(np.zeros(0, np.int64))
        return argsort(self._draw("uniform_f64", np.dtype(np.float64), (n,)), stable=True)

    def bernoulli(self, p, size=None) -> ndarray:
        """Booleans that are True with probability ``p`` (a float32 uniform below ``p``, so ``p``
        counts in steps of 2**-24). A dropout mask keeps an element with probability
        ``1 - p``: ``x * rng.bernoulli(1 - p, x.shape) / (1 - p)``."""
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"Generator.bernoulli: p={p} is not a probability in [0, 1]")
        return self.random(size, dtype=np.float32) < float(p)


    def stochastic_round(self, x, dtype) -> ndarray:
        """``x`` rounded to ``dtype`` (``fa.bfloat16`` or ``fa.float16``) up or down at random,
        unbiased, from this generator's stream, fused into the kernel that stores the result
        (:mod:`.stochastic`)."""
        return stochastic_round(self, x, dtype)


def _broadcast(*values) -> tuple:
    return layout.broadcast_shapes(*[tuple(np.shape(v)) if not isinstance(v, ndarray)
                                     else v.shape for v in values])


def default_rng(seed=None) -> Generator:
    """A :class:`Generator` seeded with ``seed`` (a non-negative int, or None for fresh entropy),
    as ``numpy.random.default_rng``."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)
