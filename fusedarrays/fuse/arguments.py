"""A fused call's arguments other than ``fa.ndarray``: what each is, and arrays of other libraries.

Where it sits: under :mod:`fuse` and :mod:`foreach`, which build a call's signature. A NumPy
scalar or 0-d array is a typed parameter; a bool or any other hashable object is static; a NumPy,
CuPy or PyTorch array becomes an ``fa.ndarray`` once per call (:class:`Imports`), zero-copy where
the backend allows, so an object passed twice is seen to alias itself. On the host backends a
DLPack producer's host memory (a PyTorch cpu tensor) is imported without a copy, so writes land
in it; where only a copy reaches the backend (a read-only producer, host memory on cuda) the
function may read the argument but not write it.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..api import array
from ..api.array import ndarray
from ..api.interop import from_dlpack
from ..errors import ReadOnlyArgumentError, UnsupportedOperationError
from ..ir import dtypes, graph
from ..runtime.backend import Buffer, get_backend

_NUMPY_BUFFERS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_KDL_CPU, _KDL_CUDA_HOST = 1, 3    # DLPack device types of host memory


def classify(a, who: str, imports: Imports, position: int):
    """A non-ndarray argument: an fa.ndarray (arrays), or ``(token, value)``."""
    if isinstance(a, np.generic):
        return (np.dtype(a.dtype), a)
    if isinstance(a, np.ndarray) and a.ndim == 0:
        return (a.dtype, a[()])
    if isinstance(a, bool):
        return (("static", a), a)
    if isinstance(a, (list, tuple)) and any(is_array(x) for x in a):
        raise TypeError(f"fuse: {who} is a list of arrays; call .foreach(...) to apply the "
                        "function to every element in one launch")
    if is_array(a):
        return imports.convert(a, position, who)
    return (("static", hashable(a, who)), a)


class Imports:
    """The NumPy, CuPy and PyTorch arrays of one call, each converted once (an object passed
    twice is one array, so its aliasing is seen), and what their conversion implies. A position
    is an argument's number (fuse) or ``(argument, element)`` (foreach)."""

    def __init__(self):
        self._done: dict[int, ndarray] = {}
        self.uploaded: set = set()        # positions holding a device copy of a NumPy array
        self.readonly: dict = {}          # positions of read-only NumPy arrays → their names
        self.copied: dict = {}            # positions of other arrays reached by a copy → names

    def convert(self, a, position, who: str) -> ndarray:
        found = self._done.get(id(a))     # ``a`` lives through the call: its id is stable
        if found is None:
            if isinstance(a, np.ndarray):
                found = wrap_numpy(a)
            else:
                found, copied = _import(a, who)
                if copied:
                    self.copied[position] = f"{who} (a {type(a).__name__})"
            self._done[id(a)] = found
        if isinstance(a, np.ndarray):
            if graph.leaf_view(found._node)[0].backend.dlpack_device[0] != _KDL_CPU:
                self.uploaded.add(position)
            elif not a.flags.writeable:
                self.readonly[position] = who
        return found

    def check_writes(self, written: tuple, name: str) -> None:
        """Refuse a call that writes into NumPy memory it can't: ``written`` holds, per argument
        buffer the function writes, the positions of the arguments viewing it. A write through
        a writable view of memory that a read-only view also sees is NumPy's semantics, allowed."""
        for positions in written:
            if any(p in self.uploaded for p in positions):
                raise UnsupportedOperationError(
                    f"fuse: {name} writes into a NumPy argument, which the cuda backend can only "
                    "copy to the device; pass a fa.ndarray (or a CuPy/PyTorch array)")
            copied = [p for p in positions if p in self.copied]
            if copied:
                raise UnsupportedOperationError(
                    f"fuse: {name} writes to {self.copied[copied[0]]}, which reaches the "
                    f"{get_backend().name} backend only as a copy (its writes would be lost); "
                    "pass a writable array the backend reads in place (fa.asarray of it on "
                    "the array's own device, a writable PyTorch tensor on the host backends)")
            if all(p in self.readonly for p in positions):
                raise ReadOnlyArgumentError(
                    f"fuse: {name} writes to {self.readonly[positions[0]]}, a read-only NumPy "
                    "array (flags.writeable is False); pass a writable array (np.array(...) "
                    "copies it, and the function's writes then land in the copy)")

    @staticmethod
    def check_disjoint(buffers: list) -> None:
        """Distinct buffers must not share memory: two imports of overlapping views would
        otherwise hide their aliasing (a buffer repeated is fine: that aliasing is seen)."""
        ranges = sorted({id(b): (b.backend.address(b.storage), b.nbytes, b)
                         for b in buffers if b.storage is not None}.values(),
                        key=lambda r: r[0])
        for (start, size, _), (later, _, _) in zip(ranges, ranges[1:]):
            if later < start + size:
                raise UnsupportedOperationError(
                    "fuse: two array arguments are separate imports of overlapping memory "
                    "(e.g. two views of one PyTorch tensor); import the tensor once with "
                    "fa.asarray and pass views of that array")


def _import(a, who: str) -> tuple[ndarray, bool]:
    """A foreign array as an fa.ndarray, and whether that is a copy. On the host backends a
    DLPack producer's host memory is viewed (a PyTorch cpu tensor: writes land in it), an
    ``__array_interface__`` object's through NumPy; a read-only producer (JAX) is copied. On
    cuda host memory is uploaded (a copy), device memory imported."""
    backend = get_backend()
    host_producer = hasattr(a, "__dlpack_device__") and \
        int(a.__dlpack_device__()[0]) in (_KDL_CPU, _KDL_CUDA_HOST)
    if backend.dlpack_device[0] != _KDL_CPU:       # device memory: host memory is uploaded
        return array.asarray(a), host_producer
    if hasattr(a, "__dlpack__"):
        try:
            return from_dlpack(a, copy=False), False
        except BufferError:
            pass
        try:
            return from_dlpack(a), True
        except (BufferError, RuntimeError, TypeError) as exc:
            raise UnsupportedOperationError(
                f"fuse: {who}, a {type(a).__name__}, does not cross DLPack ({exc}); pass an "
                "array that does (a PyTorch tensor that requires grad: tensor.detach())") \
                from exc
    if hasattr(a, "__array_interface__"):
        return wrap_numpy(np.asarray(a)), False
    return array.asarray(a), True


def is_array(x) -> bool:
    return (isinstance(x, (ndarray, np.ndarray)) or hasattr(x, "__cuda_array_interface__")
            or hasattr(x, "__dlpack__"))


def wrap_numpy(a: np.ndarray) -> ndarray:
    """``a`` as an fa.ndarray: zero-copy on the cpu and sim backends (a kernel's writes land in
    ``a``), an uploaded copy on cuda."""
    backend = get_backend()
    if backend.dlpack_device[0] != _KDL_CPU:       # device memory: an uploaded copy
        return array.asarray(a)
    owner = a
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    itemsize = a.dtype.itemsize
    delta = a.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    if (not (owner.flags.c_contiguous or owner.flags.f_contiguous) or delta % itemsize
            or any(s % itemsize for s in a.strides)):
        raise UnsupportedOperationError(
            "fuse: a NumPy argument must be a view (in whole elements) of a contiguous array; "
            "pass np.ascontiguousarray(a) or a fa.ndarray")
    # One Buffer per owning array (its storage keeps the owner alive, so the id is stable), so
    # that two views of one NumPy array are seen to alias.
    buffer = _NUMPY_BUFFERS.get(id(owner))
    if buffer is None or buffer.backend is not backend:
        storage = owner.reshape(-1, order="A").view(np.uint8)
        buffer = _NUMPY_BUFFERS[id(owner)] = Buffer(storage, storage.nbytes, backend)
    elif not buffer.storage.flags.writeable and a.flags.writeable:
        # read-only when first passed, writable now (NumPy allows that of an owner): so is the
        # view kernels write through
        buffer.storage.flags.writeable = True
    dt = dtypes.as_dtype(a.dtype, what="NumPy argument of dtype")
    strides = tuple(s // itemsize for s in a.strides)
    return ndarray(graph.leaf(buffer, dt, a.shape, strides, delta // itemsize))


def hashable(value, who: str):
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"fuse: static {who} must be hashable, got {type(value).__name__}") \
            from None
    return value
