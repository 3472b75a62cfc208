"""The narrow backend seam, the buffers backends hand out, and the active backend.

A backend compiles kernel source, loads and launches kernels, and allocates and copies memory; the
runtime talks to nothing else. ``cuda`` (``fusedarrays/cuda``) is the real one; ``cpu``
(``fusedarrays/cpu``) runs the same plans as numba code on threads and is the default without a GPU;
``sim`` (``fusedarrays/cuda/sim.py``) runs the generated CUDA source in numba's simulator.
Backends are imported on first use, so ``import fusedarrays`` imports neither numba nor a driver.

What a fork changes is here too: in a forked child, a backend that can't survive a fork (cuda:
``fork_safe = False``) refuses every call with :class:`~.errors.ForkedDeviceError`.
"""

from __future__ import annotations

import importlib
import os
import threading
import types
import weakref
from typing import Any, NamedTuple, Protocol

import numpy as np

from .. import config
from ..compiler import Blas
from ..errors import DeviceUnavailableError, ForkedDeviceError
from ..ir.graph import new_uid

_MAX_ALIGN = 256


class Buffer:
    """Memory a backend allocated (or imported), plus what the runtime tracks about it."""

    __slots__ = ("uid", "storage", "nbytes", "backend", "align", "fresh",
                 "__weakref__")

    def __init__(self, storage: Any, nbytes: int, backend: Backend, align: int | None = None):
        # from the one counter of every buffer and stand-in (ir/graph.new_uid): leaves are
        # interned by uid, so a planner's temporary must never share a real buffer's number
        self.uid = new_uid()
        self.storage = storage
        self.nbytes = nbytes
        self.backend = backend
        # The address's alignment (up to 256 bytes) decides whether 128-bit accesses are allowed;
        # ``align`` where the allocator guarantees it (a fresh pool block: no address look-up).
        if align is None:
            address = backend.address(storage)
            align = min(_MAX_ALIGN, address & -address) if address else _MAX_ALIGN
        self.align = align
        # A weak reference to the leaf graph.fresh_leaf made over this buffer (not interned
        # until graph.leaf asks for its view), or None.
        self.fresh: weakref.ref | None = None

    traced = False   # True for fa.fuse's stand-ins while it traces (fuse/trace.py): no memory

    def __repr__(self) -> str:
        return f"<Buffer {self.uid} {self.nbytes} bytes on {self.backend.name}>"


class MemoryInfo(NamedTuple):
    """Memory as :func:`memory_info` reports it, in bytes.

    ``in_use``: what fusedarrays' live arrays hold (None where not tracked: on the host backends
    the buffers are NumPy arrays that the garbage collector frees); ``cached``: freed memory
    fusedarrays keeps for reuse, which :func:`free_cached_memory` gives back (on cuda its block
    cache and what the device's memory pool reserves beyond what it hands out); ``device_free``
    and ``device_total``: the driver's figures for the device (None on the host backends).
    """

    backend: str
    in_use: int | None
    cached: int
    device_free: int | None
    device_total: int | None


class HostMemory:
    """Memory of the backends that run on the host (cpu, sim): NumPy byte arrays, one per buffer,
    copied in and out; operands are typed views of them."""

    def alloc(self, nbytes: int) -> np.ndarray:
        # an empty buffer is still passed to kernels (a reduction of an empty array has a
        # result) as a view in its dtype: 16 bytes, the widest item, so every view is whole
        return np.empty(max(nbytes, 16), np.uint8)

    def from_host(self, array: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()

    def to_host(self, storage, dtype: np.dtype, count: int, elem_offset: int) -> np.ndarray:
        return storage.view(dtype)[elem_offset:elem_offset + count].copy()

    def address(self, storage) -> int:
        return storage.ctypes.data

    def zero(self, storage, nbytes: int) -> None:
        storage[:nbytes] = 0

    _counter_array = np.zeros(0, np.int32)

    def counters(self, slots: int):
        """A split reduction's counters (``compiler/reduction.py``) as an operand: int32 zeros,
        at least ``slots`` of them, the same array for every launch (each leaves it zero; the
        sim runs one kernel at a time, and the cpu kernels never touch it: the cpu backend
        sequences the fold itself). Grown by a new array: a launch holding the old one keeps
        it."""
        held = self._counter_array
        if len(held) < slots:
            held = self._counter_array = np.zeros(max(slots, 2 * len(held), 1024), np.int32)
        return held, 0

    alloc_align = None   # NumPy promises less than the 256 bytes a Buffer's alignment counts

    def synchronize(self) -> None:
        pass  # host work is done when the call returns

    def memory_info(self) -> MemoryInfo:
        return MemoryInfo(self.name, None, 0, None, None)

    def free_cached_memory(self) -> int:
        return 0  # nothing is kept: a freed buffer is NumPy's to give back

    def array_library(self):
        """NumPy: the library whose kernels (LAPACK, sorting) run on host memory."""
        return np


class Backend(Protocol):
    name: str
    device_key: str            # what the memory cache is keyed by, e.g. "cuda:0:sm_90"
    arch: str | None           # what the disk cache is keyed by; None: no disk level
    disk_kind: str             # the disk-cache entry a hit loads (with arch): "cubin", "src"
    alloc_align: int | None    # every alloc(n > 0) address is a multiple of it (≤ 256), or None
    fork_safe: bool            # False: unusable in a forked child (read by getattr, default True)

    def compile(self, source: str, fn_name: str, param_types: tuple[str, ...],
                helpers: dict) -> Any: ...
    def load(self, artifact: Any, param_types: tuple[str, ...]) -> Any: ...
    def launch(self, kernel: Any, n: int, args: list) -> None: ...
    # optional (read by getattr): (call, config) with call(config, n, args) is None where a
    # launch over n and geometry was queued, prepared once per launch record (cuda's C launch)
    def direct_launch(self, kernel: Any, n: int, geometry: tuple) -> tuple | None: ...
    def alloc(self, nbytes: int) -> Any: ...
    def from_host(self, array: np.ndarray) -> Any: ...
    def to_host(self, storage: Any, dtype: np.dtype, count: int,
                elem_offset: int) -> np.ndarray: ...
    def operand_arg(self, storage: Any, dtype: np.dtype, elem_offset: int) -> Any: ...
    # optional (read by getattr): the name of the storage's address attribute where operand_arg
    # is that address plus elem_offset * itemsize (packers then compute it themselves)
    operand_at: str | None
    # a split reduction's counter buffer, zero between launches: an operand of int32 slots
    def counters(self, slots: int) -> Any: ...
    def address(self, storage: Any) -> int: ...
    # the first nbytes of storage set to zero, ordered after the work queued before
    def zero(self, storage: Any, nbytes: int) -> None: ...
    def synchronize(self) -> None: ...
    # fuse's foreach: the arguments after n of foreach_codegen.render_foreach_kernel, and what
    # must stay alive with them; rows[t][k] is (storage, dtype, element offset) of operand k of
    # tensor t
    def foreach_args(self, meta: np.ndarray, rows: list) -> tuple[list, Any]: ...
    def memory_info(self) -> MemoryInfo: ...
    def free_cached_memory(self) -> int: ...
    # the array module whose own kernels (sort, LAPACK/cuSOLVER, cuBLAS) fusedarrays hands its
    # memory to, without a copy, where no generated kernel does the job: NumPy on the host
    # backends, CuPy on cuda (api/libraries.py); raises UnsupportedOperationError naming the
    # extra to install where the library is missing
    def array_library(self) -> types.ModuleType: ...


_MODULES = {"cuda": "fusedarrays.cuda.backend", "cpu": "fusedarrays.cpu.backend",
            "sim": "fusedarrays.cuda.sim"}
_CLASSES = {"cuda": "CudaBackend", "cpu": "CpuBackend", "sim": "SimBackend"}
_active: dict[str, Backend] = {}
# Threads that start using fusedarrays at once must get the same backend object: arrays of two
# backends can't meet in one kernel, and a second cuda backend would open the device again.
_starting = threading.Lock()


_probed: list[bool] = []   # whether a CUDA device is visible, once asked


def _cuda_available() -> bool:
    # Asked once per process: the probe (loading the driver, cuInit) costs ~100 µs, and "auto"
    # asks at every array creation. Devices do not come and go under a running process.
    if not _probed:
        try:
            module = importlib.import_module(_MODULES["cuda"])
            _probed.append(bool(module.CudaBackend.available()))
        except ImportError:
            _probed.append(False)
    return _probed[0]


def get_backend(name: str | None = None) -> Backend:
    """The backend called ``name``, or the configured one (``FUSEDARRAYS_BACKEND``)."""
    name = name or config.get("BACKEND")
    if name == "auto":
        # An active cuda backend answers for the device (in a fork too, where it refuses with
        # the reason).
        name = "cuda" if "cuda" in _active or _cuda_available() else "cpu"
    if name not in _active:
        if name == "cuda" and not _cuda_available():
            raise DeviceUnavailableError(
                "FUSEDARRAYS_BACKEND=cuda, but no CUDA device is visible. Use "
                "FUSEDARRAYS_BACKEND=cpu (numba code on threads) or FUSEDARRAYS_BACKEND=sim "
                "(numba's CUDA simulator, small arrays) on a machine without a GPU.")
        with _starting:
            if name not in _active:
                module = importlib.import_module(_MODULES[name])
                _active[name] = getattr(module, _CLASSES[name])()
    return _active[name]


def arch_compiler():
    """The compiler for a GPU arch (``fusedarrays.cuda.arch.ArchCompiler``): PTX and cubins for
    a named arch, which needs no GPU, so nothing starts the cuda backend for it."""
    return importlib.import_module("fusedarrays.cuda.arch").COMPILER


def product_blas(backend: Backend | None) -> Blas:
    """The BLAS ``backend`` computes matrix products with, or why they take the tiled kernel
    there (``fa.explain`` says which). None: a CUDA device not started (``explain`` with
    ``arch=``). Only the cuda backend has one (cuBLAS through nvmath-python, where it is
    installed, unless ``FUSEDARRAYS_CUBLAS=0``); the cpu backend runs the tiled plan as numba
    loops, the sim backend the generated CUDA kernel."""
    name = "cuda" if backend is None else backend.name
    if name != "cuda":
        return Blas(why_not=f"the {name} backend runs the generated kernel (no BLAS)")
    if not config.get("CUBLAS"):
        return Blas(why_not="FUSEDARRAYS_CUBLAS=0 turns cuBLAS off")
    if backend is None:
        return importlib.import_module("fusedarrays.cuda.blas").probe()
    return backend.blas()


def new_buffer(backend: Backend, nbytes: int) -> Buffer:
    return Buffer(backend.alloc(nbytes), nbytes, backend, backend.alloc_align)


def buffer_from_host(backend: Backend, array: np.ndarray) -> Buffer:
    array = np.ascontiguousarray(array)
    return Buffer(backend.from_host(array), array.nbytes, backend)


def memory_info() -> MemoryInfo:
    """Bytes held by fusedarrays' live arrays, kept cached for reuse, and free on the device, for
    the active backend.

    A host backend (cpu, sim) is not started for the question (nothing imports numba); the cuda
    backend is (it asks the device).

    >>> import fusedarrays as fa
    >>> info = fa.memory_info()
    >>> info.cached >= 0
    True
    """
    name = config.get("BACKEND")
    if name == "auto":
        started = [n for n in ("cuda", "cpu") if n in _active]
        name = started[0] if started else "cuda" if _cuda_available() else "cpu"
    if name not in _active and name != "cuda":
        return MemoryInfo(name, None, 0, None, None)
    return get_backend(name).memory_info()


def free_cached_memory() -> int:
    """Give the memory fusedarrays keeps for reuse back to the driver, for other libraries (as
    CuPy's ``free_all_blocks`` and PyTorch's ``empty_cache``); returns how many bytes went back.

    On cuda: the freed blocks kept for reuse, and the device memory pool's free memory once the
    work queued so far has finished (this waits for it). Memory of live arrays stays. Only
    backends already started are asked; the host backends keep nothing.

    >>> import fusedarrays as fa
    >>> fa.free_cached_memory() >= 0
    True
    """
    return sum(backend.free_cached_memory() for backend in list(_active.values()))


# -- fork -----------------------------------------------------------------------------------------

def refuse_after_fork(backend: Backend, parent_pid: int) -> None:
    """Make every public method of ``backend`` raise :class:`ForkedDeviceError` (in a process
    forked from ``parent_pid``, which had used it).

    The instance's class is swapped for a subclass whose methods refuse, so every holder of the
    backend (the active registry, each ``Buffer.backend``, launch records) sees the refusal and
    the parent's hot path pays nothing for it. A fork of such a fork keeps the first parent.
    """
    cls = type(backend)
    if "forked_from" in vars(cls):
        return
    used = f"{backend.name} device {backend.device_key!r}"

    def refuse(self, *args, **kwargs):
        raise ForkedDeviceError(
            f"this process (pid {os.getpid()}) is a fork of pid {parent_pid}, which had used "
            f"{used}; CUDA cannot be used in a forked child, and the parent's fusedarrays "
            "arrays can't be read here. Start worker processes with the 'spawn' start method "
            "(multiprocessing.get_context('spawn'), or ProcessPoolExecutor(mp_context="
            "multiprocessing.get_context('spawn'))) and pass them NumPy arrays, or use the GPU "
            "only in the parent.")

    methods = {name for klass in cls.__mro__[:-1] for name, value in vars(klass).items()
               if isinstance(value, types.FunctionType) and not name.startswith("_")}
    # __slots__ = (): the subclass keeps the instance layout, so __class__ can be assigned.
    namespace = {"__slots__": (), "forked_from": parent_pid, **dict.fromkeys(methods, refuse)}
    backend.__class__ = type(f"Forked{cls.__name__}", (cls,), namespace)


def _after_fork_in_child() -> None:
    parent = None
    for backend in _active.values():
        if not getattr(backend, "fork_safe", True):
            parent = parent or os.getppid()
            refuse_after_fork(backend, parent)


os.register_at_fork(after_in_child=_after_fork_in_child)
