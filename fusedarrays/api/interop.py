"""Leaving: ``fa.ndarray`` as a DLPack producer and a CUDA array interface (v3) exporter.

``torch.from_dlpack(y)``, ``cupy.asarray(y)``, ``jax.dlpack.from_dlpack(y)`` and
``numpy.from_dlpack(y)`` take a result without a copy. A pending array is computed first. The
capsule is a DLPack ``DLManagedTensor`` (the ``"dltensor"`` capsule of DLPack 0.8, which every
consumer reads) built here with ctypes: it points at the array's first element with its shape
and strides in elements, and holds the array (so its memory) until the consumer calls its
deleter, or until the capsule is collected unconsumed.

Stream order: fusedarrays computes on the device's legacy default stream. ``__dlpack__(stream=s)``
makes the consumer's stream ``s`` wait for that work (an event; nothing for the legacy stream
itself, ``s = 1``, or ``s = -1``, "no order"), and when the consumer lets the capsule go, the
legacy stream waits for ``s`` before the buffer can be reused by the pool;
``__cuda_array_interface__`` names the legacy stream (``"stream": 1``), on which a v3 consumer
waits (its consumer holds the array itself, so the buffer lives as long as it does). On the cpu
and sim backends the memory is host memory (``kDLCPU``; no CUDA array interface) and
``numpy.from_dlpack`` takes it.
"""

from __future__ import annotations

import ctypes

from ..errors import UnsupportedOperationError
from ..ir import graph
from ..runtime import indexflags
from .array import _backend_of, ndarray

_KDL_CPU, _KDL_CUDA = 1, 2
_CODES = {"b": 6, "i": 0, "u": 1, "f": 2}      # kDLBool, kDLInt, kDLUInt, kDLFloat


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _DELETER)]

_NAME = b"dltensor"
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# manager_ctx → what one exported tensor keeps alive (the array, the struct, its shape and
# strides), until its deleter runs.
_live: dict[int, tuple] = {}
_next_ctx = [1]


@_DELETER
def _delete(managed) -> None:
    entry = _live.pop(managed.contents.manager_ctx or 0, None)
    if entry is not None and entry[4] is not None:
        # the consumer's stream may still read the memory: order its reuse after that work
        backend, stream = entry[4]
        try:
            backend.release_after(stream)
        except Exception:  # a stream already destroyed: wait for the whole device instead
            try:
                backend.synchronize()
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule) -> None:
    # A capsule still named "dltensor" was never consumed (a consumer renames it): free it here.
    try:
        if _api.PyCapsule_IsValid(capsule, _NAME):
            managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, _NAME),
                                  ctypes.POINTER(_Managed))
            managed.contents.deleter(managed)
    except Exception:  # pragma: no cover - interpreter shutdown: nothing left to free
        pass


def _leaf_of(array: ndarray) -> graph.Node:
    """The computed array's leaf, for an export: an evaluation point, where an index a flagged
    gather recorded raises (``runtime/indexflags.py``: a read only after such a gather ran,
    so an export stays asynchronous otherwise)."""
    array.compute()
    node = array._resolved()
    indexflags.check(graph.leaf_view(node)[0].backend)
    return node


def _device_of(buffer) -> tuple[int, int]:
    backend = buffer.backend
    if backend.name == "cuda":
        return _KDL_CUDA, backend.device_id
    return _KDL_CPU, 0


def dlpack_device(array: ndarray) -> tuple[int, int]:
    """``(device type, device id)``: ``(2, n)`` for CUDA device n, ``(1, 0)`` for host memory."""
    return _device_of(graph.leaf_view(_leaf_of(array))[0])


def dlpack(array: ndarray, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule viewing ``array`` (computed first), ordered for the consumer's
    ``stream``."""
    node = _leaf_of(array)
    buffer, shape, strides, offset = graph.leaf_view(node)
    device = _device_of(buffer)
    if dl_device is not None and tuple(dl_device) != device:
        raise BufferError(f"__dlpack__: the array is on DLPack device {device}, not "
                          f"{tuple(dl_device)}; copy it with .get() or fa.asarray first")
    if copy:
        raise BufferError("__dlpack__(copy=True): fusedarrays exports its memory without a "
                          "copy; copy with .copy() first")
    if device[0] == _KDL_CUDA:
        if stream == 0:
            raise ValueError("__dlpack__(stream=0) is ambiguous for CUDA (the DLPack protocol "
                             "disallows it): pass 1 for the legacy default stream")
        stream = 1 if stream is None else int(stream)
        buffer.backend.order_stream(stream)
    elif stream not in (None, -1):
        raise ValueError(f"__dlpack__: stream={stream!r} for an array in host memory; pass None")
    dtype = node.dtype
    if dtype.kind not in _CODES:
        raise UnsupportedOperationError(f"__dlpack__: dtype {dtype} has no DLPack code")
    ndim = len(shape)
    shape_c = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_c = (ctypes.c_int64 * max(ndim, 1))(*strides)
    base = buffer.backend.address(buffer.storage)
    managed = _Managed()
    tensor = managed.dl_tensor
    tensor.data = (base + offset * dtype.itemsize) if base else None
    tensor.device = _Device(*device)
    tensor.ndim = ndim
    tensor.dtype = _DataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)
    tensor.shape = ctypes.cast(shape_c, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides_c, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    ctx, _next_ctx[0] = _next_ctx[0], _next_ctx[0] + 1
    managed.manager_ctx = ctx
    managed.deleter = _delete
    # the leaf holds the buffer; a consumer on a stream of its own orders the buffer's reuse
    consumer = ((buffer.backend, stream) if device[0] == _KDL_CUDA and stream not in (-1, 1)
                else None)
    _live[ctx] = (node, managed, shape_c, strides_c, consumer)
    return _api.PyCapsule_New(ctypes.addressof(managed), _NAME, _destroy_capsule)


def cuda_array_interface(array: ndarray) -> dict:
    """The CUDA array interface (version 3) of ``array`` (computed first)."""
    backend = _backend_of(array._resolved())
    if backend.name != "cuda":
        raise AttributeError(f"__cuda_array_interface__: the array is in host memory (the "
                             f"{backend.name} backend); use np.asarray or np.from_dlpack")
    node = _leaf_of(array)
    buffer, shape, strides, offset = graph.leaf_view(node)
    itemsize = node.dtype.itemsize
    ptr = buffer.backend.address(buffer.storage)
    contiguous = tuple(strides) == _c_strides(shape)
    return {"shape": tuple(shape), "typestr": node.dtype.str,
            "data": ((ptr + offset * itemsize) if ptr else 0, False), "version": 3,
            "strides": None if contiguous else tuple(s * itemsize for s in strides),
            "descr": [("", node.dtype.str)], "stream": 1}


def _c_strides(shape) -> tuple:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


ndarray.__dlpack__ = dlpack
ndarray.__dlpack_device__ = dlpack_device
ndarray.__cuda_array_interface__ = property(cuda_array_interface)
