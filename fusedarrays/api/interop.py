"""Leaving and arriving: ``fa.ndarray`` as a DLPack producer and a CUDA array interface (v3)
exporter, and ``fa.from_dlpack``'s import of any DLPack producer.

``torch.from_dlpack(y)``, ``cupy.asarray(y)``, ``jax.dlpack.from_dlpack(y)`` and
``numpy.from_dlpack(y)`` take a result without a copy. A pending array is computed first. The
capsule is built here with ctypes and points at the array's first element with its shape and
strides in elements (negative steps too); it holds the array (so its memory) until the consumer
calls its deleter, or until the capsule is collected unconsumed. Every dtype has its DLPack code
(bool, int, uint, float, complex: ``kDLComplex`` 5, 64 or 128 bits); one without raises
``BufferError``, as consumers expect.

Versions: a consumer that passes ``max_version >= (1, 0)`` gets DLPack 1.0's
``DLManagedTensorVersioned`` (capsule ``"dltensor_versioned"``: version, flags, then the tensor),
every other one the ``DLManagedTensor`` of DLPack 0.8 (capsule ``"dltensor"``), which every
consumer reads. ``copy=True`` exports a new buffer (a copy kernel on the array's device) with
the versioned flag ``IS_COPIED``; ``dl_device=(kDLCPU, 0)`` of a cuda array exports a host copy
(its values fetched, so the host waits for them) unless ``copy=False``, which raises
``BufferError`` as any device the array cannot reach does. fusedarrays' memory is writable: no
capsule is marked read-only.

Stream order: fusedarrays computes on the device's legacy default stream. ``__dlpack__(stream=s)``
makes the consumer's stream ``s`` wait for that work (an event; nothing for the legacy stream
itself, ``s = 1``, or ``s = -1``, "no order"), and when the consumer lets the capsule go, the
legacy stream waits for ``s`` before the buffer can be reused by the pool;
``__cuda_array_interface__`` names the legacy stream (``"stream": 1``), on which a v3 consumer
waits (its consumer holds the array itself, so the buffer lives as long as it does). On the cpu
and sim backends the memory is host memory (``kDLCPU``; no CUDA array interface) and
``numpy.from_dlpack`` takes it.

Arriving (:func:`from_dlpack`): on cuda a device producer is viewed without a copy (the backend's
import, either capsule version); on the host backends a host producer's memory is viewed without a
copy too (its strides kept), a read-only one copied. A producer elsewhere is copied in, where
``copy`` allows it (``copy=False`` raises ``BufferError``); ``copy=True`` always gives new memory.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..ir import dtypes, graph
from ..ir.dtypes import SUPPORTED_NAMES
from ..runtime import indexflags
from ..runtime.backend import Buffer, get_backend
from . import array as _array
from .array import _backend_of, ndarray

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST = 1, 2, 3
# kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool, by NumPy's dtype kind
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
# ml_dtypes' formats by DLPack 1.1 code: kDLBfloat 4, kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12
# (NumPy's from_dlpack knows none of them; _import_minifloat reads such capsules itself)
_MINI_CODES = {"bf16": 4, "e4m3": 10, "e5m2": 12}
_BY_MINI_CODE = {(code, dtypes.BY_CODE[c].itemsize * 8): dtypes.BY_CODE[c]
                 for c, code in _MINI_CODES.items() if c in dtypes.BY_CODE}


def _dl_code(dtype: np.dtype) -> int | None:
    code = dtypes.CODES.get(dtype)
    return _MINI_CODES[code] if code in _MINI_CODES else _CODES.get(dtype.kind)
VERSION = (1, 0)                          # the DLPack version of the versioned capsules made here
_READ_ONLY, _IS_COPIED = 1 << 0, 1 << 1   # DLPACK_FLAG_BITMASK_*


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


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _Versioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _DELETER)]
_DELETER_VERSIONED = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Versioned))
_Versioned._fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                       ("deleter", _DELETER_VERSIONED), ("flags", ctypes.c_uint64),
                       ("dl_tensor", _Tensor)]

_NAME, _NAME_VERSIONED = b"dltensor", b"dltensor_versioned"
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# Prototypes of our own, not ctypes.pythonapi's shared function objects, whose argtypes any other
# module may set differently (a py_object capsule where the destructor passes an address).
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 _CAPSULE_DESTRUCTOR)(("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

# manager_ctx → what one exported tensor keeps alive (the array or host copy, the struct, its
# shape and strides) and the consumer's stream to order the buffer's reuse after, until its
# deleter runs.
_live: dict[int, tuple] = {}
_next_ctx = [1]


def _release(ctx) -> None:
    entry = _live.pop(ctx or 0, None)
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


@_DELETER
def _delete(managed) -> None:
    _release(managed.contents.manager_ctx)


@_DELETER_VERSIONED
def _delete_versioned(managed) -> None:
    _release(managed.contents.manager_ctx)


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule) -> None:
    # A capsule still under its own name was never consumed (a consumer renames it, to
    # "used_dltensor" or "used_dltensor_versioned"): free it here.
    try:
        for name, struct in ((_NAME, _Managed), (_NAME_VERSIONED, _Versioned)):
            if _capsule_is_valid(capsule, name):
                managed = ctypes.cast(_capsule_pointer(capsule, name),
                                      ctypes.POINTER(struct))
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


def dlpack_device(array: ndarray) -> tuple[int, int]:
    """``(device type, device id)``: ``(2, n)`` for CUDA device n, ``(1, 0)`` for host memory."""
    return graph.leaf_view(_leaf_of(array))[0].backend.dlpack_device


def dlpack(array: ndarray, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of ``array`` (computed first; a copy where ``copy`` or ``dl_device`` asks
    for one), ordered for the consumer's ``stream``; versioned for a ``max_version >= (1, 0)``."""
    if _dl_code(array.dtype) is None:
        raise BufferError(f"__dlpack__: dtype {array.dtype} has no DLPack code; export it as "
                          f"one of {sorted(d.name for d in dtypes.SUPPORTED)}")
    versioned = max_version is not None and int(tuple(max_version)[0]) >= VERSION[0]
    node = _leaf_of(array)
    device = graph.leaf_view(node)[0].backend.dlpack_device
    want = device if dl_device is None else tuple(int(v) for v in dl_device)
    if want != device:
        return _host_copy(array, device, want, stream, copy, versioned)
    if copy:
        node = _leaf_of(array.copy())
    buffer, shape, strides, offset = graph.leaf_view(node)
    consumer = None
    if device[0] == _KDL_CUDA:
        if stream == 0:
            raise ValueError("__dlpack__(stream=0) is ambiguous for CUDA (the DLPack protocol "
                             "disallows it): pass 1 for the legacy default stream")
        stream = 1 if stream is None else int(stream)
        buffer.backend.order_stream(stream)
        # a consumer on a stream of its own orders the buffer's reuse after its work
        consumer = (buffer.backend, stream) if stream not in (-1, 1) else None
    elif stream not in (None, -1):
        raise ValueError(f"__dlpack__: stream={stream!r} for an array in host memory; pass None")
    base = buffer.backend.address(buffer.storage)
    data = (base + offset * node.dtype.itemsize) if base else None
    # the leaf holds the buffer
    return _capsule(node, data, node.dtype, shape, strides, device, consumer, versioned,
                    _IS_COPIED if copy else 0)


def _host_copy(array, device, want, stream, copy, versioned):
    """The capsule of a host copy of a cuda ``array`` for a consumer that asks for
    ``dl_device=(kDLCPU, 0)``; ``BufferError`` for any other device, or where copying is
    refused."""
    if want != (_KDL_CPU, 0) or device[0] != _KDL_CUDA:
        raise BufferError(f"__dlpack__: the array is on DLPack device {device} and can be "
                          f"exported there or (copied) to the host (1, 0), not to {want}")
    if copy is False:
        raise BufferError(f"__dlpack__(dl_device={want}, copy=False): the array is on DLPack "
                          f"device {device}, so the host needs a copy; pass copy=None or True")
    if stream not in (None, -1):
        raise ValueError(f"__dlpack__: stream={stream!r} with dl_device=(1, 0) (host memory); "
                         "pass None")
    host = np.ascontiguousarray(array.get())     # waits for the values
    strides = tuple(s // host.itemsize for s in host.strides)
    data = host.ctypes.data if host.size else None
    return _capsule(host, data, host.dtype, host.shape, strides, want, None, versioned,
                    _IS_COPIED)


def _capsule(owner, data, dtype, shape, strides, device, consumer, versioned: bool, flags: int):
    """A ``"dltensor"`` or ``"dltensor_versioned"`` capsule over ``data``, keeping ``owner``
    (whatever holds the memory) alive until the consumer's deleter or the capsule's end."""
    ndim = len(shape)
    shape_c = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_c = (ctypes.c_int64 * max(ndim, 1))(*strides)
    managed = _Versioned() if versioned else _Managed()
    tensor = managed.dl_tensor
    tensor.data = data
    tensor.device = _Device(*device)
    tensor.ndim = ndim
    tensor.dtype = _DataType(_dl_code(dtype), dtype.itemsize * 8, 1)
    tensor.shape = ctypes.cast(shape_c, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides_c, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    ctx, _next_ctx[0] = _next_ctx[0], _next_ctx[0] + 1
    managed.manager_ctx = ctx
    if versioned:
        managed.version = _Version(*VERSION)
        managed.flags = flags
        managed.deleter = _delete_versioned
    else:
        managed.deleter = _delete
    _live[ctx] = (owner, managed, shape_c, strides_c, consumer)
    return _capsule_new(ctypes.addressof(managed), _NAME_VERSIONED if versioned else _NAME,
                        _destroy_capsule)


def from_dlpack(x, *, copy: bool | None = None) -> ndarray:
    """``x`` (any DLPack producer) as a ``fa.ndarray`` on the current backend: its memory without
    a copy where the backend can read it there, else a copy (refused by ``copy=False`` with
    ``BufferError``); ``copy=True`` always new memory."""
    kind = int(x.__dlpack_device__()[0])
    backend = get_backend()
    on_device = backend.dlpack_device[0] != _KDL_CPU    # the backend's memory is not the host's
    if on_device and kind == backend.dlpack_device[0]:
        out = _array.asarray(x)      # the backend's zero-copy import (either capsule version)
        # a copy made now: the producer may write its memory before a lazy copy would run
        return out.copy().compute() if copy else out
    host_producer = kind in (_KDL_CPU, _KDL_CUDA_HOST)
    if copy is False and (on_device or not host_producer):
        raise BufferError(f"from_dlpack(copy=False): a {type(x).__name__} on DLPack device type "
                          f"{kind} reaches the {backend.name} backend's memory only by a copy; "
                          "pass copy=None or True")
    try:
        host = np.from_dlpack(x) if host_producer else np.from_dlpack(x, device="cpu")
    except (RuntimeError, BufferError, TypeError):
        if not host_producer:
            raise
        host = _import_minifloat(x)     # bfloat16 and float8, which NumPy cannot take
    if on_device:
        return _array.asarray(host)                         # the upload is the copy
    if copy or (copy is None and not host.flags.writeable):
        host = host.copy()          # fusedarrays' memory is writable: a read-only view is copied
    elif not host.flags.writeable:
        raise BufferError(f"from_dlpack(copy=False): the {type(x).__name__}'s memory is "
                          "read-only and a fa.ndarray's is writable; pass copy=None or True")
    return _host_view(host, backend)


_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi))


class _Owner:
    """Keeps an imported DLPack tensor alive: its deleter runs when the last view goes."""

    def __init__(self, managed):
        self.managed = managed

    def __del__(self):
        deleter = self.managed.contents.deleter
        if deleter:
            deleter(self.managed)


def _import_minifloat(x) -> np.ndarray:
    """A host producer's bfloat16 or float8 tensor as a NumPy array of ml_dtypes' dtype over
    its memory (no copy), read from the DLPack capsule here, as NumPy reads the others."""
    try:
        capsule = x.__dlpack__(max_version=VERSION)
    except TypeError:
        capsule = x.__dlpack__()
    versioned = bool(_capsule_is_valid(id(capsule), _NAME_VERSIONED))
    name, struct = (_NAME_VERSIONED, _Versioned) if versioned else (_NAME, _Managed)
    managed = ctypes.cast(_capsule_pointer(id(capsule), name), ctypes.POINTER(struct))
    tensor = managed.contents.dl_tensor
    kind = (tensor.dtype.code, tensor.dtype.bits)
    dt = _BY_MINI_CODE.get(kind) if tensor.dtype.lanes == 1 else None
    if dt is None:
        raise BufferError(f"from_dlpack: a {type(x).__name__} of DLPack dtype code {kind[0]}, "
                          f"{kind[1]} bits, lanes {tensor.dtype.lanes} has no fusedarrays dtype; "
                          f"supported: {SUPPORTED_NAMES}")
    _capsule_set_name(id(capsule), b"used_" + name)      # ours to delete now
    owner = _Owner(managed)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    strides = (tuple(tensor.strides[i] for i in range(tensor.ndim)) if tensor.strides
               else _c_strides(shape))
    low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0 and n)
    span = (sum(abs(s) * (n - 1) for n, s in zip(shape, strides)) + 1) if all(shape) else 0
    start = (tensor.data or 0) + tensor.byte_offset + low * dt.itemsize
    memory = (ctypes.c_uint8 * (span * dt.itemsize)).from_address(start) if span else \
        (ctypes.c_uint8 * 0)()
    memory.owner = owner
    # strided as unsigned words, then viewed as dt (as_strided loses ml_dtypes' float8 types)
    flat = np.frombuffer(memory, np.uint8).view(f"u{dt.itemsize}")
    host = np.lib.stride_tricks.as_strided(flat[-low:] if low else flat, shape,
                                           tuple(s * dt.itemsize for s in strides)).view(dt)
    if versioned and managed.contents.flags & _READ_ONLY:
        host.flags.writeable = False
    return host


def _host_view(host: np.ndarray, backend) -> ndarray:
    """A leaf over a NumPy array's memory on a host backend, strides kept, without a copy: the
    buffer is a byte view from the lowest element the array reaches (its first one, unless a
    step is negative), which holds the array and so its owner."""
    dt = dtypes.as_dtype(host.dtype, what="from_dlpack of dtype")
    strides = tuple(s // dt.itemsize for s in host.strides)
    if host.size == 0:
        storage, offset = backend.alloc(0), 0
    else:
        first = tuple(slice(n - 1, n) if s < 0 else slice(0, 1)
                      for n, s in zip(host.shape, strides)) + (Ellipsis,)
        low = host[first].reshape(-1).view(np.uint8)        # the lowest element's bytes
        offset = -sum(s * (n - 1) for n, s in zip(host.shape, strides) if s < 0)
        span = sum(abs(s) * (n - 1) for n, s in zip(host.shape, strides)) + 1
        storage = np.lib.stride_tricks.as_strided(low, (span * dt.itemsize,), (1,))
    buffer = Buffer(storage, storage.nbytes, backend)
    return ndarray(graph.leaf(buffer, dt, host.shape, strides, offset))


def cuda_array_interface(array: ndarray) -> dict:
    """The CUDA array interface (version 3) of ``array`` (computed first)."""
    backend = _backend_of(array._resolved())
    if backend.dlpack_device[0] != _KDL_CUDA:
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
