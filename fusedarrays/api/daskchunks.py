"""fa arrays as a dask chunk type: what dask looks up on a chunk, and a dask array backend.

Dask finds fa two ways, neither of which imports the other library before it is asked for:

- the backend entry point (``pyproject.toml``'s ``dask.array.backends`` table names
  :class:`FusedArraysBackend`): ``dask.config.set({"array.backend": "fusedarrays"})`` makes
  ``da.ones/zeros/empty/full/arange`` and ``da.random.default_rng(seed)`` build fa chunks with an
  fa ``_meta``, and ``Array.to_backend("fusedarrays")`` converts an array's chunks. Loading the
  entry point registers everything below.
- :func:`register` (idempotent), for dask arrays over fa chunks built without the backend
  (``da.from_array(fa_array)``, ``map_blocks``): ``register_chunk_type``, ``dask.sizeof`` and the
  dispatch lookups of ``dask.array.dispatch`` that dask's graphs call on chunks (concatenate,
  take, tensordot, einsum, empty, percentile, numel and nannumel, to NumPy, to CuPy; CuPy is
  imported at the first conversion to it).

This module imports dask at its top, so nothing in fusedarrays imports it: ``import
fusedarrays`` stays free of dask and ``import dask`` free of fusedarrays.

Random chunks: dask's ``Generator`` spawns one ``SeedSequence`` per chunk from the seed and has
each chunk's task build a bit generator of the backend's type from it, then call
``<library>.random.default_rng(bit_generator)``, the library named by the bit generator's
module. :class:`PhiloxSeed` is that bit generator for fa: an int (128 bits of the chunk's
``SeedSequence``), which ``fa.random.default_rng`` takes as its seed; each chunk is one fa draw,
the same numbers for the same seed and chunking on every backend, drawn inside the kernel of
whatever the chunk's task does with it.

Launching by the end of the task (:func:`launched`): a task's result may be a pending fa array
(the chain of lazy operations dask's blockwise fusion handed the chunk), and left so its kernel
would run only when a later task or pickling asked for it, holding its inputs alive and unseen by
dask's memory accounting. So dask's array optimization is :func:`optimize`: dask's own, then each
task wrapped so that its result, or the arrays of a tuple, list or dict it returns, is launched
(queued on the stream, not synchronised) before the task returns. The whole fused chain of a
chunk stays one kernel; laziness lives inside a task, never across tasks. It is a graph rewrite,
done where the graph is optimized (the client), so it holds on every scheduler, distributed's
worker processes included. ``dask.config.set(array_optimize=...)`` of one's own replaces it.

distributed's serializers live in :mod:`.daskwire`, registered here once distributed is imported.
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np
from dask import config, sizeof
from dask._task_spec import Task, convert_legacy_graph
from dask.array import dispatch
from dask.array import optimization as dask_optimization
from dask.array.backends import ArrayBackendEntrypoint
from dask.array.chunk_types import register_chunk_type
from dask.array.core import Array
from dask.utils import Dispatch, ensure_dict

from ..runtime.backend import Buffer
from . import creation, einsum, indexing, manipulation, products, quantiles
from .array import compute, ndarray

# Moves a chunk of any type to fa (Array.to_backend("fusedarrays")); dask has one such lookup
# per backend (to_numpy_dispatch, to_cupy_dispatch), the backend owning its own.
to_fusedarrays_dispatch = Dispatch("to_fusedarrays_dispatch")

_lock = threading.Lock()
_registered = [False, False, False]   # dask, distributed, dask_cuda


def register() -> None:
    """Make fa.ndarray a dask chunk type (idempotent, thread-safe).

    Bound at once, not through ``register_lazy("fusedarrays")``: dask's ``Dispatch`` caches the
    fallback it found for a type at its first lookup, so a lazy hook added after an fa array
    first met dask (``sizeof``, ``concatenate_lookup``) would never fire."""
    with _lock:
        if not _registered[0]:
            _register_dask()
            _registered[0] = True
    _register_others()


def _register_dask() -> None:
    register_chunk_type(ndarray)
    sizeof.sizeof.register(ndarray, chunk_nbytes)
    dispatch.concatenate_lookup.register(ndarray, _concatenate)
    dispatch.take_lookup.register(ndarray, indexing.take)
    dispatch.tensordot_lookup.register(ndarray, products.tensordot)
    dispatch.einsum_lookup.register(ndarray, einsum.einsum)
    dispatch.empty_lookup.register(ndarray, creation.empty)
    dispatch.percentile_lookup.register(ndarray, _percentile)
    dispatch.numel_lookup.register(ndarray, _numel)
    dispatch.nannumel_lookup.register(ndarray, _nannumel)
    dispatch.to_numpy_dispatch.register(ndarray, lambda x, **kwargs: x.get())
    dispatch.to_cupy_dispatch.register(ndarray, _to_cupy)
    # any chunk (NumPy's, CuPy's, another's) goes through fa.asarray
    to_fusedarrays_dispatch.register((object, np.ndarray, ndarray), _to_fa)
    sizeof.sizeof.register(Buffer, lambda buffer: int(buffer.nbytes))
    config.set({"array_optimize": optimize})


def _register_others() -> None:
    """distributed's serializers and dask-cuda's device-memory look-up, for those of the two
    imported (api/daskhook.py calls :func:`register` when either is imported after fusedarrays;
    a graph's optimization calls this again)."""
    if "distributed" in sys.modules and not _registered[1]:
        from . import daskwire

        daskwire.register()
        _registered[1] = True
    if "dask_cuda" in sys.modules and not _registered[2]:
        from . import daskwire

        _registered[2] = daskwire.register_dask_cuda()


def chunk_nbytes(x: ndarray) -> int:
    """Bytes of the buffer a chunk holds (a view: its whole buffer, a broadcast's or a slice's
    included, which the chunk keeps alive); a pending chunk counts at its result's size."""
    node = x._resolved()
    if node.is_leaf:
        return int(sum(buffer.nbytes for buffer in node.buffers))
    return int(x.nbytes)


# -- launching by the end of the task ---------------------------------------------------------

def launched(result):
    """A task's ``result`` with every pending fa array in it launched (one ``fa.compute`` of
    them: one kernel per shape), or ``result`` itself when nothing in it is pending. Looks into
    a tuple, list or dict one level deep: what dask's reductions return per chunk (mean's
    ``{"n", "total"}``)."""
    if isinstance(result, ndarray):
        if result.pending:
            result.compute()
        return result
    if isinstance(result, (tuple, list)):
        todo = [x for x in result if isinstance(x, ndarray) and x.pending]
    elif isinstance(result, dict):
        todo = [x for x in result.values() if isinstance(x, ndarray) and x.pending]
    else:
        return result
    if todo:
        compute(*todo)
    return result


def optimize(dsk, keys, **kwargs) -> dict:
    """dask's array optimization (``array_optimize``), then each task's result passed through
    :func:`launched`. Wraps dask's own task classes only: a subclass (distributed's P2P
    barriers) is left as it is."""
    _register_others()      # distributed imported after fusedarrays met dask
    dsk = dask_optimization.optimize(dsk, keys, **kwargs)
    graph = convert_legacy_graph(ensure_dict(dsk))
    for key, task in graph.items():
        if isinstance(task, Task) and type(task).__module__ == Task.__module__ \
                and task.func is not launched:
            graph[key] = Task(key, launched, task, _data_producer=task.data_producer)
    return graph


def _to_cupy(x: ndarray, **kwargs):
    """A CuPy array of a chunk (CuPy imported here, at the first such call): on cuda a view of
    the chunk's memory (``__cuda_array_interface__``), from the cpu backends through the
    host."""
    import cupy

    on_device = hasattr(x, "__cuda_array_interface__")   # settles a pending chunk first
    return cupy.asarray(x if on_device else x.get(), **kwargs)


def _concatenate(arrays, axis: int = 0) -> ndarray:
    """``np.concatenate`` for dask's chunks; one chunk is itself (chunks are never written),
    not a copy."""
    arrays = list(arrays)
    return arrays[0] if len(arrays) == 1 else manipulation.concat(arrays, axis=axis)


def _to_fa(x, **kwargs) -> ndarray:
    return x if isinstance(x, ndarray) else creation.asarray(x, **kwargs)


def _percentile(a: ndarray, q, method: str = "linear"):
    """One chunk's percentiles and its length, the pair dask merges (as its NumPy one)."""
    n = len(a)
    if not n:
        return None, n
    if not np.issubdtype(a.dtype, np.number):
        method = "nearest"
    return quantiles.percentile(a, np.asarray(list(q), dtype=np.float64),
                                method=method).get(), n


def _numel(x: ndarray, axis=None, keepdims: bool = False, dtype=np.float64, **_) -> object:
    """How many elements each reduced position of a chunk counts, as an fa array (a NumPy
    scalar for a whole-chunk count without keepdims, as dask's own)."""
    if axis is None:
        count = math.prod(x.shape)
        if not keepdims:
            return np.prod(x.shape, dtype=dtype)
        return creation.full((1,) * x.ndim, count, dtype=dtype)
    axes = {a % x.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    shape = tuple(1 if d in axes else e for d, e in enumerate(x.shape)
                  if keepdims or d not in axes)
    return creation.full(shape, math.prod(x.shape[d] for d in axes), dtype=dtype)


def _nannumel(x: ndarray, **kwargs) -> ndarray:
    """How many elements each reduced position of a chunk counts that are not NaN."""
    return (~np.isnan(x)).sum(**kwargs)


# -- the backend entry point --------------------------------------------------------------------

class PhiloxSeed(int):
    """The bit generator dask's ``Generator`` spawns per chunk under this backend: 128 bits of
    a ``SeedSequence``, and the ``_seed_seq`` dask spawns children from. Its module names
    fusedarrays, so each chunk's task draws with ``fa.random.default_rng(self)``."""

    def __new__(cls, seed=None):
        seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        words = seq.generate_state(4, np.uint32)
        self = super().__new__(cls, sum(int(w) << (32 * i) for i, w in enumerate(words)))
        self._seed_seq = seq
        return self


def _with_fa_meta(name: str, *args, meta=None, **kwargs) -> Array:
    """dask.array's own creation function, its chunks made like an fa meta (NEP 35 ``like=``,
    ``np.*_like``)."""
    import dask.array as da

    meta = creation.empty(()) if meta is None else meta
    with config.set({"array.backend": "numpy"}):
        return getattr(da, name)(*args, meta=meta, **kwargs)


class FusedArraysBackend(ArrayBackendEntrypoint):
    """``dask.config.set({"array.backend": "fusedarrays"})``: new dask arrays hold fa chunks."""

    def __init__(self):
        register()

    @classmethod
    def to_backend_dispatch(cls):
        return to_fusedarrays_dispatch

    @classmethod
    def to_backend(cls, data: Array, **kwargs) -> Array:
        if isinstance(data._meta, ndarray):
            return data
        meta = creation.empty((0,) * data.ndim, dtype=data.dtype)
        return data.map_blocks(to_fusedarrays_dispatch, meta=meta, **kwargs)

    @property
    def RandomState(self):
        raise NotImplementedError("fusedarrays draws through da.random.default_rng(seed) "
                                  "(a Generator); the legacy RandomState has no fa form")

    @property
    def default_bit_generator(self):
        return PhiloxSeed

    @staticmethod
    def ones(*args, **kwargs) -> Array:
        return _with_fa_meta("ones", *args, **kwargs)

    @staticmethod
    def zeros(*args, **kwargs) -> Array:
        return _with_fa_meta("zeros", *args, **kwargs)

    @staticmethod
    def empty(*args, **kwargs) -> Array:
        return _with_fa_meta("empty", *args, **kwargs)

    @staticmethod
    def full(*args, **kwargs) -> Array:
        return _with_fa_meta("full", *args, **kwargs)

    @staticmethod
    def arange(*args, like=None, **kwargs) -> Array:
        import dask.array as da

        like = creation.empty(()) if like is None else like
        with config.set({"array.backend": "numpy"}):
            return da.arange(*args, like=like, **kwargs)


register()      # importing this module (a worker unpickling a task of it) registers fa
