"""The cpu backend's memory: NumPy byte arrays, placed so that streaming kernels run at full speed,
large ones kept for reuse, and each one's address known without asking NumPy each launch.

Where it sits: :class:`.backend.CpuBackend` takes ``alloc``, ``from_host``, ``address`` and the
cache figures from here; buffers stay plain ``numpy.uint8`` arrays (every host path reads them).

Three facts measured on the 2-core AMD EPYC (Zen 4) machine of issue #36's cpu rows:

- **Addresses.** ``storage.ctypes.data`` costs ~1 µs (it builds a ctypes object); a cached
  ``(1000,)`` ``a*b+c`` asked it five times per evaluation. Where the C extension is loaded,
  :func:`address` reads the array's buffer (``_fastgraph.buffer_address``, ~0.05 µs; the lazy
  path's packer reads it itself, ``Backend.operand_at``); else it keeps each array's address by
  ``id`` with a weak reference that proves the entry is that array's (an id is reused once its
  array is gone): ~0.15 µs, and ~0.4 µs for an array seen the first time.
- **4 KiB aliasing.** Large NumPy allocations are ``mmap``-ed pages plus malloc's 16-byte
  header, so every operand of a kernel starts at the same offset within a page; a store then
  seems to alias the next loads of the other streams (the CPU compares the low 12 address bits)
  and a fused ``a*b+c`` over (10^6,) float32 ran at 373 µs against 226 µs with its streams
  spread over the page. From :data:`STAGGER_MIN` bytes a buffer starts 64-byte aligned at an
  offset within its page that steps by :data:`STAGGER_STEP` from one allocation to the next.
- **Fresh pages.** The kernel hands out an ``mmap``-ed block's pages zeroed at first touch:
  writing a new (10^7,) float32 result cost ~2.5 ms of a 8.2 ms evaluation (the kernel itself
  5.7 ms); a smaller block handed out again is still in the cache (a (10^6,) ``a*b+c`` 5-13 %
  faster). From :data:`REUSE_MIN` bytes a freed block is kept and handed out again for the same
  size, up to :data:`CACHE_MAX` bytes kept (``fa.free_cached_memory()`` gives them back). A block
  is free when nothing else references it: its array's reference count, which every view,
  memoryview, DLPack capsule or ctypes object made from it raises.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from ctypes import addressof as _addressof
from ctypes import c_char

import numpy as np

from ..ir.native import fastgraph

ALIGN = 64                  # a staggered buffer's alignment: a cache line, a 512-bit vector
# from 128 KiB, malloc's first mmap threshold, where blocks start at one offset in their page
# (below it they start anywhere, and staggering a (10^4,) float32 result cost 1.2 µs of ~6.5)
STAGGER_MIN = 128 << 10
STAGGER_STEP = 1088         # 17 cache lines: 64 distinct offsets, neighbours ~1 KiB apart
REUSE_MIN = 256 << 10       # from 256 KiB: a reused (10^6,) float32 result is warm in cache
CACHE_MAX = 1 << 30         # freed blocks kept for reuse, at most

_addresses: dict[int, tuple] = {}   # id(array) → (weak reference to it, its address)
_purge_at = [4096]                  # entries at which the dead ones are dropped
_from_buffer = c_char.from_buffer
_empty, _U8 = np.empty, np.dtype(np.uint8)   # a dtype object: NumPy converts no type per call
# the first byte of a C-contiguous buffer, or None (the C extension; None where not loaded)
_buffer_address = fastgraph.buffer_address if fastgraph is not None else None


def _slow_address(storage) -> int:
    try:   # ~0.4 µs where ctypes.data costs ~1 µs (and 2 on a loaded machine)
        return _addressof(_from_buffer(storage))
    except (TypeError, ValueError):   # read-only, empty or not contiguous
        return storage.ctypes.data


def address(storage) -> int:
    """The address of ``storage``'s first byte (a NumPy array), remembered while it lives."""
    if _buffer_address is not None:
        found = _buffer_address(storage)
        if found is not None:
            return found
    entry = _addresses.get(id(storage))
    if entry is not None and entry[0]() is storage:
        return entry[1]
    found = _slow_address(storage)
    remember(storage, found)
    return found


def remember(storage, found: int) -> None:
    """Remember ``storage``'s address. A weak reference without a callback (made once per
    array, and nothing to run when the array goes): a dead entry is found dead by the identity
    check, and dropped with the others once the table has grown to twice its live entries."""
    _addresses[id(storage)] = (weakref.ref(storage), found)
    if len(_addresses) >= _purge_at[0]:
        for key in [k for k, (ref, _) in _addresses.items() if ref() is None]:
            _addresses.pop(key, None)
        _purge_at[0] = max(4096, 2 * len(_addresses))


class HostPool:
    """The cpu backend's allocations: staggered from :data:`STAGGER_MIN`, reused from
    :data:`REUSE_MIN` (``blocks``: ``(raw, storage)`` of every such allocation that is in use or
    kept, by size)."""

    def __init__(self):
        self.blocks: dict[int, list[tuple]] = {}
        self.lock = threading.Lock()
        self.step = 0
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self.lock = threading.Lock()   # a parent's thread may have held it at the fork

    def alloc(self, nbytes: int) -> np.ndarray:
        # an empty buffer is still passed to kernels: see HostMemory.alloc
        n = nbytes if nbytes > 16 else 16
        if n < STAGGER_MIN:     # the hot path of every small result: ~0.2 us of its ~0.45
            return _empty(n, _U8)
        if n < REUSE_MIN:
            return self._staggered(n)[1]
        with self.lock:
            for entry in self.blocks.get(n, ()):
                if _free(entry):
                    return entry[1]
            entry = self._staggered(n)
            self.blocks.setdefault(n, []).append(entry)
            self._trim()
        return entry[1]

    def _staggered(self, n: int) -> tuple:
        self.step = (self.step + 1) % 64
        raw = np.empty(n + 4096, np.uint8)
        base = _buffer_address(raw) if _buffer_address is not None else _slow_address(raw)
        # the offset within a page is set, not stepped from the base's: below malloc's mmap
        # threshold a block's base may sit anywhere in its page
        offset = (self.step * STAGGER_STEP) % 4096 // ALIGN * ALIGN
        start = (offset - base) % 4096
        storage = raw[start:start + n]
        if _buffer_address is None:   # else address() reads it from the buffer
            remember(storage, base + start)
        return raw, storage

    def cached(self) -> int:
        """Bytes of freed blocks kept for reuse."""
        with self.lock:
            return sum(n for n, entries in self.blocks.items()
                       for entry in entries if _free(entry))

    def _trim(self, keep: int = CACHE_MAX) -> int:
        """Drop free blocks (the largest first) until at most ``keep`` bytes are kept; the
        bytes dropped."""
        free = sorted(((n, entry) for n, entries in self.blocks.items() for entry in entries
                       if _free(entry)), key=lambda pair: -pair[0])
        kept, dropped = sum(n for n, _ in free), 0
        for n, entry in free:
            if kept <= keep:
                break
            left = [e for e in self.blocks[n] if e is not entry]   # == compares arrays
            if left:
                self.blocks[n] = left
            else:
                del self.blocks[n]
            kept -= n
            dropped += n
        return dropped

    def give_back(self) -> int:
        """Drop every free block: the bytes given back to the system."""
        with self.lock:
            return self._trim(0)


def _counts(entry: tuple) -> tuple[int, int]:
    raw, storage = entry
    return sys.getrefcount(raw), sys.getrefcount(storage)


def _baseline() -> tuple[int, int]:
    # a block that nothing else holds, counted the way _free counts (the interpreter's own
    # references to locals and arguments differ between versions: measured, not assumed)
    raw = np.empty(16, np.uint8)
    entry = (raw, raw[:])
    del raw
    return _counts(entry)


_FREE = _baseline()


def _free(entry: tuple) -> bool:
    """Whether a pool block is referenced by nothing but the pool: its storage by the entry
    alone, its raw array by the entry and the storage's ``base`` alone (NumPy points every view
    made of a view at the array that owns the memory, so those count on ``raw``)."""
    return _counts(entry) == _FREE
