"""Device memory for the cuda backend: the device, its stream-ordered pool, copies, foreign arrays.

Where it sits: under ``CudaBackend``; the runtime's buffers hold a :class:`DeviceStorage` and pass
``storage.ptr`` (plus an offset) to kernels. Imports no numba.

One stream order: every allocation, copy and launch goes to the *legacy default stream*, as CuPy
and PyTorch use by default, so arrays handed to or taken from them need no extra synchronisation,
and a pool buffer freed by the garbage collector goes back to the pool ordered after the work
queued before it. ``cuda.core`` does what it offers (device, pool, buffers, foreign views); plain
copies between raw addresses go through ``cuda.bindings.driver``, every return code checked.
"""

from __future__ import annotations

import numpy as np
from cuda.bindings import driver
from cuda.core import LEGACY_DEFAULT_STREAM, Device, DeviceMemoryResource
from cuda.core.utils import StridedMemoryView

from ..errors import FusedArraysError

_LEGACY = driver.CU_STREAM_LEGACY  # the legacy default stream's handle, for driver calls
_SUCCESS = driver.CUresult.CUDA_SUCCESS


class CudaDriverError(FusedArraysError, RuntimeError):
    """A CUDA driver call failed; the message starts with the ``CUresult`` name."""


def check(result: tuple):
    """Unpack a ``cuda.bindings`` result ``(err, *values)``: raise on error, else the value(s)."""
    err, *values = result
    if err != _SUCCESS:
        _, text = driver.cuGetErrorString(err)
        detail = text.decode() if isinstance(text, bytes) else ""
        raise CudaDriverError(f"{err.name}: {detail}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def open_device(device_id: int) -> tuple[Device, DeviceMemoryResource]:
    """Make ``device_id`` current in this thread and return it with its stream-ordered pool.

    The pool is the device's current memory pool (shared with other libraries that use it);
    ``cuda.core`` raises its release threshold from 0, so freed memory stays pooled instead of
    going back to the driver at every synchronisation.
    """
    device = Device(device_id)
    device.set_current()
    return device, DeviceMemoryResource(device.device_id)


class DeviceStorage:
    """``nbytes`` of device memory at address ``ptr``; ``owner`` keeps it alive.

    ``owner`` is the pool ``Buffer`` (freed, stream-ordered, when this storage is collected), the
    imported foreign object, or None for zero bytes.
    """

    __slots__ = ("ptr", "nbytes", "owner", "cached")

    def __init__(self, ptr: int, nbytes: int, owner: object, cached: list | None = None):
        self.ptr = ptr
        self.nbytes = nbytes
        self.owner = owner
        self.cached = cached  # the free list a pool block goes back to (see _BlockCache)

    def __del__(self):
        cached = self.cached
        if cached is not None:
            try:
                _BLOCKS.release(cached, self.ptr, self.owner)
            except Exception:  # interpreter shutdown: the module may be half torn down
                pass

    def __repr__(self) -> str:
        owner = type(self.owner).__name__
        return f"<DeviceStorage {self.nbytes} bytes at {self.ptr:#x} owner={owner}>"


class _FreeList(list):
    """The freed blocks of one pool and size class, as ``(address, block)`` pairs."""

    __slots__ = ("size",)


# Every block the pool hands out starts at a multiple of this (checked as each block comes from
# the pool), so a buffer over a fresh block needs no address look-up to know its alignment.
POOL_ALIGN = 256


class _BlockCache:
    """Freed pool blocks kept for reuse, by size class: a cached allocation costs a dict look-up
    instead of a trip through ``cuda.core`` and the driver's pool (measured on the H100: 30 µs of
    the 45 µs of a cached ``fa.fuse`` call that returns a new 1 K array went to allocating and
    freeing). Reuse is safe without events because every kernel, copy and free of these blocks is
    ordered on the one legacy stream: work queued after a block's last use runs after it."""

    MAX_BYTES = 1 << 30   # blocks kept at most; past that a freed block goes back to the pool

    def __init__(self):
        self.free: dict[tuple[int, int], _FreeList] = {}   # (id(pool), size class) → blocks
        self.lists: dict[tuple[int, int], _FreeList] = {}  # (id(pool), nbytes) → its class's
        self.bytes = 0

    @staticmethod
    def size_class(nbytes: int) -> int:
        step = 512 if nbytes <= (1 << 20) else (1 << 20)
        return -(-nbytes // step) * step

    def take(self, pool: DeviceMemoryResource, nbytes: int) -> DeviceStorage:
        free = self.lists.get((id(pool), nbytes))
        if free is None:
            free = self._list(pool, nbytes)
        if free:
            ptr, block = free.pop()
            self.bytes -= free.size
            return DeviceStorage(ptr, nbytes, block, free)
        try:
            block = pool.allocate(free.size, stream=LEGACY_DEFAULT_STREAM)
        except Exception:  # out of memory: give the cached blocks back and try once more
            self.flush()
            block = pool.allocate(free.size, stream=LEGACY_DEFAULT_STREAM)
        ptr = int(block.handle)
        if ptr % POOL_ALIGN:
            raise FusedArraysError(f"the memory pool returned a block at {ptr:#x}, which is not "
                                   f"{POOL_ALIGN}-byte aligned as CUDA allocations are")
        return DeviceStorage(ptr, nbytes, block, free)

    def _list(self, pool: DeviceMemoryResource, nbytes: int) -> _FreeList:
        size = self.size_class(nbytes)
        free = self.free.get((id(pool), size))
        if free is None:
            free = self.free[(id(pool), size)] = _FreeList()
            free.size = size
        if len(self.lists) >= 4096:   # many distinct sizes: start the memo over
            self.lists.clear()
        self.lists[(id(pool), nbytes)] = free
        return free

    def release(self, free: _FreeList, ptr: int, block) -> None:
        size = free.size
        if self.bytes + size > self.MAX_BYTES and not self._make_room(size):
            return   # dropping the last reference frees the block to the pool, stream-ordered
        free.append((ptr, block))
        self.bytes += size

    def _make_room(self, size: int) -> bool:
        """Free cached blocks larger than ``size``, largest first, until ``size`` fits under the
        cap; False where only smaller blocks stand in the way (those are kept).

        Small blocks are what repeated calls allocate, each a trip through the pool when it is
        not cached, and a few big ones fill the cap: on the H100 host the four 256 MB arrays of
        an Adam step, once freed, kept every later 4 KB result out of the cache, and a cached
        ``fa.fuse`` call returning a new 1 K array took 7.7 µs of host time instead of 4.5.
        """
        for other in sorted(self.free.values(), key=lambda f: f.size, reverse=True):
            if other.size <= size:
                return False
            while other and self.bytes + size > self.MAX_BYTES:
                other.pop()
                self.bytes -= other.size
            if self.bytes + size <= self.MAX_BYTES:
                return True
        return False

    def flush(self) -> None:
        for free in self.free.values():
            free.clear()
        self.bytes = 0


_BLOCKS = _BlockCache()


def alloc(pool: DeviceMemoryResource, nbytes: int) -> DeviceStorage:
    """``nbytes`` from ``pool``, ordered on the legacy stream (uninitialised), at an address that
    is a multiple of :data:`POOL_ALIGN`."""
    if nbytes <= 0:
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes=}")
        return DeviceStorage(0, 0, None)
    return _BLOCKS.take(pool, nbytes)


def from_host(pool: DeviceMemoryResource, array: np.ndarray) -> DeviceStorage:
    """A device copy of ``array``'s elements in C order."""
    host = np.ascontiguousarray(array)
    storage = alloc(pool, host.nbytes)
    if host.nbytes:
        # From pageable memory the call returns once the bytes are staged: `host` may go after.
        check(driver.cuMemcpyHtoDAsync(storage.ptr, host.ctypes.data, host.nbytes, _LEGACY))
    return storage


def _check_range(storage: DeviceStorage, byte_offset: int, nbytes: int) -> None:
    if byte_offset < 0 or byte_offset + nbytes > storage.nbytes:
        raise ValueError(f"bytes [{byte_offset}, {byte_offset + nbytes}) are outside "
                         f"the {storage.nbytes} bytes of {storage!r}")


def to_host(storage: DeviceStorage, dtype, count: int, byte_offset: int = 0) -> np.ndarray:
    """``count`` elements of ``dtype`` from ``byte_offset`` on, after all work queued before."""
    out = np.empty(count, np.dtype(dtype))
    _check_range(storage, byte_offset, out.nbytes)
    if out.nbytes:
        check(driver.cuMemcpyDtoHAsync(out.ctypes.data, storage.ptr + byte_offset, out.nbytes,
                                       _LEGACY))
        check(driver.cuStreamSynchronize(_LEGACY))
    return out


def copy(dst: DeviceStorage, src: DeviceStorage, nbytes: int) -> None:
    """Queue a copy of the first ``nbytes`` of ``src`` over those of ``dst``."""
    _check_range(dst, 0, nbytes)
    _check_range(src, 0, nbytes)
    if nbytes:
        check(driver.cuMemcpyDtoDAsync(dst.ptr, src.ptr, nbytes, _LEGACY))


def wrap_foreign(ptr: int, nbytes: int, owner: object) -> DeviceStorage:
    """Memory another library owns, used in place; ``owner`` is kept alive with it."""
    return DeviceStorage(ptr, nbytes, owner)


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def element_span(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """The lowest and highest element offset a strided view reaches from its first element.

    >>> element_span((3, 4), (4, -1))  # rows reversed within: first element is at the right
    (-3, 8)
    """
    if 0 in shape:
        return 0, -1
    pairs = list(zip(shape, strides, strict=True))
    return (sum(s * (n - 1) for n, s in pairs if s < 0),
            sum(s * (n - 1) for n, s in pairs if s > 0))


def _signed(stride: int, itemsize: int) -> int:
    # StridedMemoryView (cuda.core 1.2.0, on the H100) hands a negative stride back as the
    # unsigned 64-bit byte stride divided by the itemsize: CuPy's -800 bytes of float32 came
    # back as (2**64 - 800) // 4. Undo that wrap.
    wrap = (1 << 64) // itemsize
    return stride - wrap if stride >= wrap // 2 else stride


def import_array(obj, device_id: int):
    """Zero-copy view of a CUDA array from another library (DLPack, else CUDA array interface v3).

    Returns ``(storage, dtype, shape, strides, elem_offset)`` with strides in elements. The storage
    spans every element the view reaches, from its lowest address, so a view with negative
    strides has ``elem_offset > 0`` (its first element's index in the storage).

    The producer's stream is honoured: ``__dlpack__(stream=1)`` asks the producer to order its
    work before the legacy stream, and for ``__cuda_array_interface__`` the legacy stream waits on
    an event recorded on the stream it names (both done by ``StridedMemoryView``).
    """
    try:
        view = StridedMemoryView.from_any_interface(obj, stream_ptr=_LEGACY)
    except Exception as e:
        raise TypeError(f"cannot import a {type(obj).__name__} as a CUDA array: it needs "
                        "__dlpack__ or __cuda_array_interface__ (v3) on a CUDA device "
                        f"({type(e).__name__}: {e})") from e
    if not view.is_device_accessible:
        raise TypeError(f"the {type(obj).__name__} lives in host memory; use fusedarrays.asarray "
                        "on a NumPy array to copy it to the device")
    if view.device_id != device_id:
        raise ValueError(f"the {type(obj).__name__} is on device {view.device_id}, "
                         f"this backend on device {device_id}")
    dtype = np.dtype(view.dtype)
    shape = tuple(view.shape)
    strides = (tuple(_signed(s, dtype.itemsize) for s in view.strides)
               if view.strides is not None else _c_strides(shape))
    low, high = element_span(shape, strides)
    ptr = view.ptr + low * dtype.itemsize if high >= low else 0
    # The view owns the DLPack capsule (its deleter runs when the view goes) and the exporter.
    storage = wrap_foreign(ptr, (high - low + 1) * dtype.itemsize, view)
    return storage, dtype, shape, strides, -low
