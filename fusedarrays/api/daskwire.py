"""fa arrays on distributed's wire: serializers for its ``cuda``, ``dask`` and pickle families,
and dask-cuda's look-up of the device memory a chunk holds.

Registered by :mod:`.daskchunks` once distributed (or dask-cuda) is imported, in either order
with fusedarrays (:mod:`.daskhook`); this module imports distributed at its top, so nothing else
in fusedarrays imports it.

- ``cuda`` (dask-cuda over UCX): a header from the array's layout (shape, dtype, byte strides),
  and one frame, the bytes of its device buffer as a ``__cuda_array_interface__`` object over
  the array's own memory: no copy leaves the device. The receiver gets a device buffer from the
  comm and :func:`cuda_loads` views it as an fa array without a copy. An array whose memory is
  not on a CUDA device raises ``NotImplementedError``, which sends distributed on to the next
  family, as it does for any type a family does not serialize.
- ``dask`` (TCP, and dask-cuda's spilling to the host): the same header and the values' host
  bytes as the frame; loaded back into the backend's memory.
- pickle: ``fa.ndarray.__reduce__`` (api/protocols.py) goes through the host; the NumPy array it
  pickles travels out of band under pickle protocol 5.

A strided or pending array is made contiguous (one copy kernel) and launched first: a frame is
always a whole contiguous buffer.
"""

from __future__ import annotations

import numpy as np
from distributed.protocol.cuda import cuda_deserialize, cuda_serialize
from distributed.protocol.serialize import dask_deserialize, dask_serialize

from ..runtime.backend import get_backend
from . import creation
from .array import ndarray


def register() -> None:
    """fa.ndarray in distributed's ``cuda`` and ``dask`` families (idempotent)."""
    cuda_serialize.register(ndarray)(cuda_dumps)
    cuda_deserialize.register(ndarray)(cuda_loads)
    dask_serialize.register(ndarray)(host_dumps)
    dask_deserialize.register(ndarray)(host_loads)


def register_dask_cuda() -> bool:
    """dask-cuda finds the device memory a worker's values hold through its
    ``get_device_memory_objects`` dispatch (its JIT spilling counts and frees by it): for an fa
    chunk that is the buffers it holds, each counted once however many views share it (sizeof
    of a :class:`~fusedarrays.runtime.backend.Buffer` is its bytes). False where the look-up
    could not be imported (an older dask-cuda: sizeof alone serves it)."""
    try:
        from dask_cuda import get_device_memory_objects as found
    except ImportError:
        return False
    found.dispatch.register(ndarray)(_buffers)
    return True


def _buffers(x: ndarray) -> list:
    node = x._resolved()
    return list(node.buffers) if node.is_leaf else [x]


# -- the header ---------------------------------------------------------------------------------

def _dtype_name(dtype: np.dtype) -> str:
    # ml_dtypes' types (bfloat16, float8) are kind 'V' to NumPy: their str loses them, their name
    # does not
    return dtype.name if dtype.kind == "V" else dtype.str


def _dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def _contiguous(x: ndarray) -> tuple:
    """``(header, (buffer, offset in elements))`` of ``x``'s values as one contiguous run of
    memory (computed, a strided view copied by a kernel); buffer None when empty."""
    view = x._contiguous_view()
    header = {"shape": list(x.shape), "dtype": _dtype_name(x.dtype), "nbytes": int(x.nbytes)}
    if view is None:
        return header, (None, 0)
    buffer, _, _, offset = view
    return header, (buffer, offset)


# -- cuda: device buffers as frames ------------------------------------------------------------

class DeviceBytes:
    """One frame: ``nbytes`` bytes of device memory from ``ptr`` (``__cuda_array_interface__``
    v3, uint8), holding ``owner`` (the array whose memory it is) alive while the comm sends it."""

    __slots__ = ("ptr", "nbytes", "owner")

    def __init__(self, ptr: int, nbytes: int, owner):
        self.ptr, self.nbytes, self.owner = ptr, nbytes, owner

    @property
    def __cuda_array_interface__(self) -> dict:
        # stream 1: fa computes on the legacy default stream, which a consumer orders after
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": 1}


class _Typed:
    """A received frame seen as the array the header describes (a ``__cuda_array_interface__``
    over the frame's memory, holding the frame)."""

    def __init__(self, frame, header: dict):
        self.frame, self.header = frame, header

    @property
    def __cuda_array_interface__(self) -> dict:
        inner = self.frame.__cuda_array_interface__
        return {"shape": tuple(self.header["shape"]), "typestr": _dtype(self.header["dtype"]).str,
                "data": (inner["data"][0], False), "strides": None, "version": 3,
                "stream": inner.get("stream")}


def cuda_dumps(x: ndarray) -> tuple[dict, list]:
    """The ``cuda`` family: the layout as the header, the device buffer's bytes as the frame (no
    copy); ``NotImplementedError`` for memory that is not a CUDA device's."""
    name = _backend_name(x)
    if name != "cuda":
        raise NotImplementedError(f"fa.ndarray on the {name} backend: its memory is the "
                                  "host's (the dask family sends it)")
    if x.dtype.kind == "V":
        # the receiver imports the frame through __cuda_array_interface__, whose typestr can't
        # name ml_dtypes' types (bfloat16 is '<V2'), and fa has no dtype-reinterpreting view
        raise NotImplementedError(f"fa.ndarray of {x.dtype}: the cuda family can't type it on "
                                  "arrival (the dask family sends it through the host)")
    header, (buffer, offset) = _contiguous(x)
    if buffer is None:
        return header, []
    ptr = buffer.backend.address(buffer.storage) + offset * x.dtype.itemsize
    return header, [DeviceBytes(ptr, int(x.nbytes), buffer)]


def cuda_loads(header: dict, frames: list) -> ndarray:
    if not frames:
        return creation.empty(tuple(header["shape"]), dtype=_dtype(header["dtype"]))
    (frame,) = frames
    return creation.asarray(_Typed(frame, header))


def _backend_name(x: ndarray) -> str:
    buffers = x._resolved().buffers
    return next(iter(buffers)).backend.name if buffers else get_backend().name


# -- dask: through the host ----------------------------------------------------------------------

def host_dumps(x: ndarray) -> tuple[dict, list]:
    """The ``dask`` family: the layout as the header, the values' host bytes as the frame."""
    header = {"shape": list(x.shape), "dtype": _dtype_name(x.dtype), "nbytes": int(x.nbytes)}
    host = np.ascontiguousarray(x.get())
    return header, [memoryview(host.reshape(-1).view(np.uint8))] if host.size else []


def host_loads(header: dict, frames: list) -> ndarray:
    dtype, shape = _dtype(header["dtype"]), tuple(header["shape"])
    if not frames:
        return creation.empty(shape, dtype=dtype)
    host = np.frombuffer(frames[0], dtype=np.uint8)[: header["nbytes"]]
    return creation.asarray(host.view(dtype).reshape(shape))
