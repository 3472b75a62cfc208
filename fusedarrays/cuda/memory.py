"""Device memory for the cuda backend: the device, its stream-ordered pool, copies, foreign arrays.

Where it sits: under ``CudaBackend``; the runtime's buffers hold a :class:`DeviceStorage` and pass
``storage.ptr`` (plus an offset) to kernels. Imports no numba.

One stream order: every allocation, copy and launch goes to the *legacy default stream*, as CuPy
and PyTorch use by default, so arrays handed to or taken from them need no extra synchronisation,
and a pool buffer freed by the garbage collector goes back to the pool ordered after the work
queued before it. ``cuda.core`` does what it offers (device, pool, buffers, foreign views); plain
copies between raw addresses go through ``cuda.bindings.driver``, every return code checked.

What is kept, and what goes back to the driver:

- The block cache (:class:`_BlockCache`) keeps freed blocks of up to ``MAX_BLOCK`` = 256 MiB,
  at most ``MAX_BYTES`` = 1 GiB in all, for reuse without a trip through the pool. That trip
  (allocate and free) costs ~4-5 µs of host time on a small block and 8-14 µs on a 64 MiB one
  (H100 host), which is what a call on a small array costs, and it does not hide behind the
  kernel where the host is the bottleneck: a lazy expression's graph is built in Python while
  the previous result's kernel runs (Black-Scholes over 2^24 elements frees and allocates two
  64 MiB results per call). Bigger blocks (a 2^26-element float64 array and up) go back to
  the pool, so that a few of them don't fill the cap.
- The pool is the device's current memory pool, whose *release threshold* is set to
  1/``RELEASE_FRACTION`` = 1/8 of the device's memory (9.9 GiB of the H100's 79.2): at any
  synchronisation (``to_host``, ``synchronize``, or another library's) the pool gives the memory
  it reserves beyond that and does not use back to the driver. Why 1/8: below the threshold a new
  block reuses reserved memory at the pool's ~4-5 µs instead of having the driver map memory,
  and the working sets of ordinary loops stay under it (the benchmarks' four 2^26-element
  float32 arrays are 1 GiB); a threshold of 0 (the driver's default) would map every result
  above 32 MiB afresh after each ``.get()``. Above it, freed memory must reach the other
  libraries of the process: once arrays are freed, 7/8 of the device less the block cache is
  free for them (68 GiB of the H100, where PyTorch asked for 60). While more than the threshold
  is in use, a synchronisation gives back all the pool's free memory, and the next big block is
  mapped afresh. (``cuda.core`` raises the threshold from 0 to 2^64 - 1: never give back.)
- Out of memory, the block cache is emptied, the legacy stream synchronised (the driver cannot
  release memory whose free it has not seen complete) and the pool trimmed to nothing, and the
  allocation is tried again; then once more after a garbage collection (arrays only reference
  cycles hold); then :class:`~fusedarrays.errors.OutOfMemoryError` says what was asked for and
  what is held. :func:`give_back` does the same emptying on request (``fa.free_cached_memory``).

Threads and devices: the block cache is shared by all threads and devices, without a lock (see
:class:`_BlockCache`); each pool's blocks are kept apart. The driver keeps a current context per
thread, which another library may change and a new thread lacks: ``CudaBackend`` makes its device's
current around each call that reaches the driver (:mod:`.context`), and a block going back to its
pool is freed in its device's context.
"""

from __future__ import annotations

import gc

import numpy as np
from cuda.bindings import driver
from cuda.core import LEGACY_DEFAULT_STREAM, Device, DeviceMemoryResource

# What cuda.core raises when a driver call fails (an allocation's CUDA_ERROR_OUT_OF_MEMORY among
# them); cuda.core 1.2 does not export it from the package itself.
from cuda.core._utils.cuda_utils import CUDAError
from cuda.core.utils import StridedMemoryView

from ..errors import FusedArraysError, OutOfMemoryError

_LEGACY = driver.CU_STREAM_LEGACY  # the legacy default stream's handle, for driver calls
_SUCCESS = driver.CUresult.CUDA_SUCCESS
RELEASE_FRACTION = 8  # the pool keeps at most 1/8 of the device's memory reserved (see above)


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

    The pool is the device's current memory pool (shared with other libraries that use it); its
    release threshold is set to 1/``RELEASE_FRACTION`` of the device's memory.
    """
    device = Device(device_id)
    device.set_current()
    pool = DeviceMemoryResource(device.device_id)
    _, total = device_memory()
    set_release_threshold(pool, total // RELEASE_FRACTION)
    return device, pool


def set_release_threshold(pool: DeviceMemoryResource, nbytes: int) -> None:
    """Free memory the pool reserves beyond ``nbytes`` goes back to the driver at the next
    synchronisation."""
    check(driver.cuMemPoolSetAttribute(
        pool.handle, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
        driver.cuuint64_t(nbytes)))


def device_memory() -> tuple[int, int]:
    """``(free, total)`` bytes of the device whose context is current."""
    return check(driver.cuMemGetInfo())


def trim(pool: DeviceMemoryResource) -> None:
    """Give the pool's free memory back to the driver, once the frees queued so far completed
    (until a synchronisation shows them complete, the driver counts their memory as in use)."""
    check(driver.cuStreamSynchronize(_LEGACY))
    check(driver.cuMemPoolTrimTo(pool.handle, 0))


def give_back(pool: DeviceMemoryResource) -> int:
    """Empty the block cache into the pools (each block in its device's context) and trim
    ``pool`` (its device current); the bytes the pool's reservation shrank by (blocks other
    libraries hold, or that are in use, stay)."""
    before = pool.attributes.reserved_mem_current
    _BLOCKS.flush()
    trim(pool)
    return max(0, before - pool.attributes.reserved_mem_current)


def usage(pool: DeviceMemoryResource) -> dict[str, int]:
    """``in_use``: bytes of the pool blocks fusedarrays' live arrays hold; ``cached``: freed
    bytes kept for reuse (the block cache, and what the pool reserves beyond what it hands
    out); ``device_free`` and ``device_total``: the driver's figures for the device."""
    attributes = pool.attributes
    spare = max(0, attributes.reserved_mem_current - attributes.used_mem_current)
    free, total = device_memory()
    return {"in_use": _BLOCKS.used, "cached": _BLOCKS.bytes + spare,
            "device_free": free, "device_total": total}


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
    """The freed blocks of one pool and size class, as ``(address, block)`` pairs; ``device`` is
    the pool's device context (:class:`.context.DeviceContext`, None for the tests' pools),
    current while a block goes back to the pool: the free is queued on the legacy stream of the
    current context, which must be the block's device's."""

    __slots__ = ("size", "device")


# Every block the pool hands out starts at a multiple of this (checked as each block comes from
# the pool), so a buffer over a fresh block needs no address look-up to know its alignment.
POOL_ALIGN = 256


class _BlockCache:
    """Freed pool blocks kept for reuse, by size class: a cached allocation costs a dict look-up
    instead of a trip through ``cuda.core`` and the driver's pool (measured on the H100: 30 µs of
    the 45 µs of a cached ``fa.fuse`` call that returns a new 1 K array went to allocating and
    freeing). Reuse is safe without events because every kernel, copy and free of these blocks is
    ordered on the one legacy stream: work queued after a block's last use runs after it.

    Every thread takes and releases blocks (a block is released where its last reference goes),
    without a lock, which would double the cost of a cached allocation and its free (0.2 → 0.55 µs
    on the 2-core CI host). Each step is one list operation (``pop``, ``append``, ``setdefault``:
    atomic under the GIL) or one counter update, and leaves the lists consistent; a list another
    thread emptied first is a miss. A counter update is atomic on CPython 3.11 and later, which
    switch threads (or collect garbage) only at calls and loop back edges; on 3.10 a switch inside
    ``+=`` may lose an update of ``bytes`` or ``used``, figures only the cap and reports read."""

    MAX_BYTES = 1 << 30   # blocks kept at most; past that a freed block goes back to the pool
    MAX_BLOCK = 256 << 20  # a bigger block always goes back to the pool (module docstring)

    def __init__(self):
        self.free: dict[tuple[int, int], _FreeList] = {}   # (id(pool), size class) → blocks
        self.lists: dict[tuple[int, int], _FreeList] = {}  # (id(pool), nbytes) → its class's
        self.bytes = 0   # in the free lists
        self.used = 0    # handed out and not released: what live arrays hold

    @staticmethod
    def size_class(nbytes: int) -> int:
        step = 512 if nbytes <= (1 << 20) else (1 << 20)
        return -(-nbytes // step) * step

    def take(self, pool: DeviceMemoryResource, nbytes: int, device=None) -> DeviceStorage:
        free = self.lists.get((id(pool), nbytes))
        if free is None:
            free = self._list(pool, nbytes, device)
        size = free.size
        try:
            ptr, block = free.pop()
        except IndexError:   # none cached (bigger than MAX_BLOCK, or all in use)
            ptr = None
        if ptr is None:
            previous = device.enter() if device is not None else 0
            try:
                block = self._allocate(pool, size, nbytes)
            finally:
                if previous:
                    device.leave(previous)
            ptr = int(block.handle)
            if ptr % POOL_ALIGN:
                raise FusedArraysError(f"the memory pool returned a block at {ptr:#x}, which is "
                                       f"not {POOL_ALIGN}-byte aligned as CUDA allocations are")
        else:
            self.bytes -= size
        self.used += size
        return DeviceStorage(ptr, nbytes, block, free)

    def _allocate(self, pool: DeviceMemoryResource, size: int, nbytes: int):
        """A new ``size``-byte block from ``pool``. Out of memory, the memory kept is given back
        and the allocation tried again, then once more after a garbage collection (arrays that
        only reference cycles hold); then :class:`OutOfMemoryError`."""
        try:
            return pool.allocate(size, stream=LEGACY_DEFAULT_STREAM)
        except CUDAError as e:
            if not _out_of_memory(e):
                raise
        for collect in (False, True):
            if collect:
                gc.collect()
            self.flush()   # every device's blocks, each freed in its own context
            trim(pool)
            try:
                return pool.allocate(size, stream=LEGACY_DEFAULT_STREAM)
            except CUDAError as e:
                if not _out_of_memory(e):
                    raise
                error = e
        raise _out_of_memory_error(pool, nbytes, self.used) from error

    def _list(self, pool: DeviceMemoryResource, nbytes: int, device) -> _FreeList:
        size = self.size_class(nbytes)
        new = _FreeList()
        new.size, new.device = size, device
        # setdefault: threads that meet a new class at once must share one list
        free = self.free.setdefault((id(pool), size), new)
        if len(self.lists) >= 4096:   # many distinct sizes: start the memo over
            self.lists.clear()
        self.lists[(id(pool), nbytes)] = free
        return free

    def release(self, free: _FreeList, ptr: int, block) -> None:
        size = free.size
        self.used -= size
        if size > self.MAX_BLOCK or (self.bytes + size > self.MAX_BYTES
                                     and not self._make_room(size)):
            _free_block(free.device, block)   # to the pool, stream-ordered, in its context
            return
        free.append((ptr, block))
        self.bytes += size
        # Releases in other threads may have passed the check above at the same time: the one
        # whose count went over the cap gives a block of its class back, so the cap holds again
        # once they are done (each counter update is atomic; a later one checks for itself).
        if self.bytes > self.MAX_BYTES and _drop_one(free):
            self.bytes -= size

    def _make_room(self, size: int) -> bool:
        """Free cached blocks larger than ``size``, largest first, until ``size`` fits under the
        cap; False where only smaller blocks stand in the way (those are kept).

        Small blocks are what repeated calls allocate, each a trip through the pool when it is
        not cached, and a few big ones fill the cap: on the H100 host the four 256 MB arrays of
        an Adam step, once freed, kept every later 4 KB result out of the cache, and a cached
        ``fa.fuse`` call returning a new 1 K array took 7.7 µs of host time instead of 4.5.
        """
        for other in sorted(list(self.free.values()), key=_size_of, reverse=True):
            if other.size <= size:
                return False
            while self.bytes + size > self.MAX_BYTES and _drop_one(other):
                self.bytes -= other.size
            if self.bytes + size <= self.MAX_BYTES:
                return True
        return False

    def flush(self) -> None:
        """Give every cached block back to the pool."""
        for free in list(self.free.values()):
            while _drop_one(free):
                self.bytes -= free.size


def _size_of(free: _FreeList) -> int:
    return free.size


def _drop_one(free: _FreeList) -> bool:
    """Give one block of ``free`` back to the pool; False where the list was empty."""
    try:
        _, block = free.pop()
    except IndexError:
        return False
    _free_block(free.device, block)
    return True


def _free_block(device, block) -> None:
    """Free a pool block now, ordered on the legacy stream of ``device`` (its context made
    current for the call where another one is; None: the current one)."""
    previous = device.enter() if device is not None else 0
    try:
        block.close()
    finally:
        if previous:
            device.leave(previous)


def _out_of_memory(error: CUDAError) -> bool:
    # cuda.core's text for a failed driver call starts with the CUresult's name
    return "CUDA_ERROR_OUT_OF_MEMORY" in str(error)


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.2f} {unit}"
    return f"{nbytes} bytes"


def _out_of_memory_error(pool: DeviceMemoryResource, nbytes: int, in_use: int) -> OutOfMemoryError:
    try:
        reserved = pool.attributes.reserved_mem_current
        free, total = device_memory()
        held = (f"the device's memory pool reserves {_size(reserved)} (fusedarrays' blocks and "
                f"those of any other library using the pool), and the device has {_size(free)} "
                f"free of {_size(total)}")
    except Exception as e:  # the figures help; what must reach the caller is the error itself
        held = f"the pool's and the device's figures could not be read ({type(e).__name__}: {e})"
    device = getattr(pool, "device_id", "?")
    return OutOfMemoryError(
        f"out of memory on cuda:{device}: could not allocate {nbytes} bytes ({_size(nbytes)}), "
        "also after giving the cached free blocks back, trimming the pool and collecting "
        f"garbage. fusedarrays' live arrays hold {_size(in_use)}; {held}. Delete arrays you no "
        "longer need, work on smaller pieces, or free what other libraries keep cached "
        "(e.g. torch.cuda.empty_cache()).")


_BLOCKS = _BlockCache()


def alloc(pool: DeviceMemoryResource, nbytes: int, device=None) -> DeviceStorage:
    """``nbytes`` from ``pool``, ordered on the legacy stream (uninitialised), at an address that
    is a multiple of :data:`POOL_ALIGN`. ``device``: the pool's device context, made current
    only where the driver is reached (a cached block needs no call)."""
    if nbytes <= 0:
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes=}")
        return DeviceStorage(0, 0, None)
    return _BLOCKS.take(pool, nbytes, device)


def from_host(pool: DeviceMemoryResource, array: np.ndarray) -> DeviceStorage:
    """A device copy of ``array``'s elements in C order (the pool's device current)."""
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


def zero(storage: DeviceStorage, nbytes: int) -> None:
    """Queue the first ``nbytes`` of ``storage`` set to zero, on the legacy stream."""
    _check_range(storage, 0, nbytes)
    if nbytes:
        check(driver.cuMemsetD8Async(storage.ptr, 0, nbytes, _LEGACY))


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


def check_alignment(ptr: int, dtype: np.dtype, what: str) -> None:
    """Refuse foreign data whose elements are not aligned to their component's size (a float32
    at an odd address, a complex128 whose parts are not 8-byte aligned): every load the kernels
    make is at least one component wide, and a misaligned one faults and loses the CUDA context.
    (A complex element aligned only to its part is read by parts: ``Operand.access``.)"""
    align = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
    if ptr % align:
        raise ValueError(
            f"cannot import the {what}: its {dtype} data starts at address {ptr:#x}, which is not "
            f"a multiple of {align} bytes ({'a part' if dtype.kind == 'c' else 'an element'} of "
            f"{dtype}), and the GPU cannot load {dtype} values from there; copy it into a new "
            "array first (e.g. cupy.ascontiguousarray(x.copy()) or x.clone() in PyTorch: new "
            "allocations are aligned)")


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
    if view.device_id != device_id:   # device_of(obj) chose the backend: a producer that lied
        raise ValueError(f"the {type(obj).__name__} is on cuda:{view.device_id}, though it "
                         f"said cuda:{device_id}")
    dtype = np.dtype(view.dtype)
    shape = tuple(view.shape)
    strides = (tuple(_signed(s, dtype.itemsize) for s in view.strides)
               if view.strides is not None else _c_strides(shape))
    low, high = element_span(shape, strides)
    ptr = view.ptr + low * dtype.itemsize if high >= low else 0
    check_alignment(ptr, dtype, type(obj).__name__)
    # The view owns the DLPack capsule (its deleter runs when the view goes) and the exporter.
    storage = wrap_foreign(ptr, (high - low + 1) * dtype.itemsize, view)
    return storage, dtype, shape, strides, -low
