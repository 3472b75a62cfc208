"""The kernels fusedarrays borrows: another array library's routines run on fusedarrays' own
memory, without a copy, where no generated kernel does the job (linear algebra, sorting).

Where it sits: over :mod:`.array` and the backend seam's ``array_library()`` (NumPy on the host
backends, CuPy on cuda), under the namespace functions that take this route (``fa.linalg``,
``fa.sort`` …). These are **not fused**: :func:`borrowed` computes pending operands first and
views their buffers in the library's array type; :func:`adopt` makes the library's results
``fa.ndarray`` leaves that later fused work reads.

- **No copy, one order.** On cuda each operand is a CuPy array over its buffer (the CUDA array
  interface), and the library's kernels are queued on the device's legacy default stream, where
  fusedarrays' kernels run, so they follow the work that computed their operands and precede
  the work that reads their results, with no synchronisation. A result is imported without a
  copy and holds CuPy's memory alive. On the host backends the operands are NumPy views of the
  buffers (DLPack; for bfloat16 and float8, whose DLPack codes NumPy can't import, views made
  with ml_dtypes' dtype from the buffer) and the results' memory is taken as it is.
- **Not inside ``fa.fuse``.** A traced value has no memory to hand over: refused, naming the
  function.

>>> import fusedarrays as fa, numpy as np
>>> from fusedarrays.api.libraries import adopt, borrowed
>>> with borrowed("sort", fa.asarray(np.array([3.0, 1.0]))) as (xp, (h,)):
...     s = adopt(xp.sort(h))
>>> s.get().tolist()
[1.0, 3.0]
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..ir import dtypes, graph, layout
from ..runtime.backend import Buffer
from .array import _no_host_value_while_tracing, asarray, compute, ndarray


@contextlib.contextmanager
def borrowed(name: str, *arrays):
    """``(xp, views)``: the library of the operands' backend and each operand (computed
    first) as that library's array over the same memory; inside, the library's kernels run on
    fusedarrays' stream and device. ``name`` is the public function, for errors."""
    xs = tuple(asarray(a) for a in arrays)
    _no_host_value_while_tracing(xs, f"fa.{name} (a library kernel, not fused)")
    compute(*[x for x in xs if x.pending])
    backend = _backend(xs)
    xp = backend.array_library()
    if xp is np:
        yield np, tuple(_host_view(x) if dtypes.is_minifloat(x.dtype) else np.from_dlpack(x)
                        for x in xs)
        return
    with xp.cuda.Device(backend.device_id), xp.cuda.Stream.null:
        yield xp, tuple(_cupy_view(xp, x, backend.device_id) for x in xs)


def library(name: str, *arrays):
    """The array library of the operands' backend (NumPy, or CuPy on cuda), nothing computed:
    for a caller that builds a fused pass over pending operands before :func:`borrowed`."""
    xs = tuple(asarray(a) for a in arrays)
    _no_host_value_while_tracing(xs, f"fa.{name} (a library kernel, not fused)")
    return _backend(xs).array_library()


def _host_view(x: ndarray) -> np.ndarray:
    """A NumPy array over computed ``x``'s host memory (its buffer's storage is a NumPy array),
    without DLPack."""
    buffer, shape, strides, offset = graph.leaf_view(x._resolved())
    item = x.dtype.itemsize
    if not x.size:
        return np.empty(shape, x.dtype)
    return np.ndarray(shape, x.dtype, buffer=buffer.storage, offset=offset * item,
                      strides=tuple(s * item for s in strides))


def _cupy_view(cp, x: ndarray, device_id: int):
    """A CuPy array over ``x``'s memory, made from its CUDA array interface by hand: CuPy's own
    import of a v3 interface that names a stream (``cupy.asarray``) blocks the host until that
    stream is idle (``CUPY_CUDA_ARRAY_INTERFACE_SYNC``), and fusedarrays' stream is already
    the one CuPy's kernels are queued on here. ``x`` is the memory's owner."""
    cai = x.__cuda_array_interface__
    dtype, shape, strides = np.dtype(cai["typestr"]), cai["shape"], cai["strides"]
    nbytes = (max((abs(n * s) for n, s in zip(shape, strides)), default=dtype.itemsize)
              if strides is not None else int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    memory = cp.cuda.UnownedMemory(cai["data"][0], nbytes, x, device_id)
    return cp.ndarray(shape, dtype, cp.cuda.MemoryPointer(memory, 0), strides)


def adopt(result) -> ndarray:
    """A library's result (a NumPy or CuPy array, or a scalar) as a ``fa.ndarray`` over the same
    memory where the backend can hold it (a CuPy array; a NumPy array on the host backends),
    else a copy into the backend's memory."""
    backend = _host_backend() if isinstance(result, np.ndarray) else None
    if backend is not None and result.flags.c_contiguous and result.dtype in dtypes.SUPPORTED:
        storage = result.reshape(-1).view(np.uint8) if result.size else backend.alloc(0)
        buffer = Buffer(storage, result.nbytes, backend)
        return ndarray(graph.leaf(buffer, dtypes.as_dtype(result.dtype), result.shape,
                                  layout.contiguous_strides(result.shape), 0))
    return asarray(result)


def _backend(xs: tuple):
    for x in xs:
        for buffer in x._resolved().buffers:
            return buffer.backend
    from ..runtime.backend import get_backend
    return get_backend()


def _host_backend():
    from ..runtime.backend import get_backend
    backend = get_backend()
    return backend if backend.array_library() is np else None
