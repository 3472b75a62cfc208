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
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np

from .. import config
from ..compiler import Blas
from ..errors import DeviceMismatchError, DeviceUnavailableError, ForkedDeviceError
from ..ir.graph import new_uid
from .capture import capturing
from .devices import Device, scoped

_MAX_ALIGN = 256
# Backend.operand_at of a backend whose storage's address is its buffer's first byte (cpu: NumPy
# arrays); no attribute has this name
BUFFER_ADDRESS = "<buffer>"


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


class Backend(Protocol):
    """Every member the runtime uses of a backend: one object per device.

    Required members first; then the optional capabilities, each a declared attribute that is
    None (or the default shown) where a backend has none, so callers test ``is None`` and never
    guess with ``getattr``. ``tests/pure/test_backend_protocol.py`` checks that the cpu, sim and
    cuda classes declare every member.
    """

    # -- what it is --------------------------------------------------------------------------
    name: str                  # the kind: "cuda", "cpu", "sim"
    target: str                # the code it runs: a table of compiler/targets ("cuda", "cpu")
    device: Device             # its device value (x.device of the arrays it holds)
    device_id: int             # the ordinal among its kind's devices
    device_key: str            # what the memory cache is keyed by, e.g. "cuda:0:sm_90"
    arch: str | None           # what the disk cache is keyed by; None: no disk level
    disk_kind: str             # the disk-cache entry a hit loads (with arch): "cubin", "src"
    # its memory as DLPack names it, (device type, id): (kDLCUDA 2, ordinal) for a GPU's memory,
    # (kDLCPU 1, 0) for host memory; what exports say and imports and the CUDA array interface
    # test (api/interop.py)
    dlpack_device: tuple[int, int]
    alloc_align: int | None = None   # every alloc(n > 0) address is a multiple of it (≤ 256)
    # the name of the storage's address attribute where operand_arg is that address plus
    # elem_offset * itemsize (packers then compute it themselves), BUFFER_ADDRESS where it is
    # the first byte of the buffer the storage exports plus those bytes (the C packers read it;
    # operand_arg where the storage exports no contiguous buffer), else None
    operand_at: str | None = None
    fork_safe: bool = True     # False: unusable in a forked child (refuse_after_fork)

    # -- kernels -----------------------------------------------------------------------------
    # what shapes the binary besides the source: part of every disk key (where arch is set)
    def toolchain(self) -> dict[str, str]: ...
    def compile(self, source: str, fn_name: str, param_types: tuple[str, ...],
                helpers: dict) -> Any: ...
    def load(self, artifact: Any, param_types: tuple[str, ...]) -> Any: ...
    def launch(self, kernel: Any, n: int, args: list, geometry: tuple = ()) -> None: ...
    # a split reduction's counter buffer, zero between launches: an operand of int32 slots
    def counters(self, slots: int) -> Any: ...
    # fuse's foreach: the arguments after n of a foreach kernel (foreach_plan.ForeachPlan), and what
    # must stay alive with them; rows[t][k] is (storage, dtype, element offset) of operand k of
    # tensor t
    def foreach_args(self, meta: np.ndarray, rows: list) -> tuple[list, Any]: ...

    # -- memory ------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Any: ...
    def from_host(self, array: np.ndarray) -> Any: ...
    def to_host(self, storage: Any, dtype: np.dtype, count: int,
                elem_offset: int) -> np.ndarray: ...
    def operand_arg(self, storage: Any, dtype: np.dtype, elem_offset: int) -> Any: ...
    def address(self, storage: Any) -> int: ...
    # the first nbytes of storage set to zero, ordered after the work queued before
    def zero(self, storage: Any, nbytes: int) -> None: ...
    # new memory of this device holding the first nbytes of ``storage``, which ``source`` (another
    # device of this kind) holds: ordered after the work queued on both, and before later work
    # on both (a peer copy on cuda)
    def receive(self, storage: Any, source: Backend, nbytes: int) -> Any: ...
    def synchronize(self) -> None: ...
    def memory_info(self) -> MemoryInfo: ...
    def free_cached_memory(self) -> int: ...
    # the array module whose own kernels (sort, LAPACK/cuSOLVER, cuBLAS) fusedarrays hands its
    # memory to, without a copy, where no generated kernel does the job: NumPy on the host
    # backends, CuPy on cuda (api/libraries.py); raises UnsupportedOperationError naming the
    # extra to install where the library is missing
    def array_library(self) -> types.ModuleType: ...

    # -- optional capabilities (None where absent) --------------------------------------------
    # direct_launch(kernel, n, geometry) -> (call, config) | None: call(config, n, args) is None
    # where a launch over n and geometry was queued, prepared once per launch record (cuda's C
    # launch)
    direct_launch: Callable[..., tuple | None] | None = None
    # first_call(kernel, n, args) -> {stage: seconds}: work before a kernel's first launch that
    # is a compile (cpu: numba types the arguments then)
    first_call: Callable[..., dict] | None = None
    # prepare(kernel, n, args): that compile without a launch (fa.precompile on cpu)
    prepare: Callable[..., None] | None = None
    # device_timer() -> a started timer of the work queued next, .stop() -> seconds
    device_timer: Callable[[], Any] | None = None
    # copy_bandwidth() -> bytes per second of a device copy (fa.profile's reference)
    copy_bandwidth: Callable[[], float] | None = None
    # blas() -> Blas: the library products use (product_blas); load_product(plan): its launcher
    blas: Callable[[], Blas] | None = None
    load_product: Callable[[Any], Any] | None = None
    # import_array(obj) -> (backend, storage, dtype, shape, strides, elem_offset): a foreign
    # device array without a copy, on the backend of the device it lives on
    import_array: Callable[[Any], tuple] | None = None
    # order_stream(stream): a consumer's stream waits for this device's work (DLPack export);
    # release_after(stream): later work waits for the consumer's stream
    order_stream: Callable[[int], None] | None = None
    release_after: Callable[[int], None] | None = None
    # graphs() -> the device's graph tools (cuda/graphs.py): build(launches) a CUDA graph of
    # recorded launches, as_stream(obj) and launch_on(stream, kernel, n, args, geometry) for
    # fa.capture / fa.on_stream (runtime/capture.py); None: a capture replays the launches
    graphs: Callable[[], Any] | None = None


def protocol_members() -> dict[str, bool]:
    """Every member of :class:`Backend`, mapped to whether it is optional (None where absent)."""
    declared = vars(Backend)
    methods = [name for name, value in declared.items()
               if isinstance(value, types.FunctionType) and not name.startswith("_")]
    return {**{name: name in declared and declared[name] is None
               for name in Backend.__annotations__}, **dict.fromkeys(methods, False)}


class HostMemory(Backend):
    """Memory of the backends that run on the host (cpu, sim): NumPy byte arrays, one per buffer,
    copied in and out; operands are typed views of them."""

    device_id = 0
    dlpack_device = (1, 0)      # kDLCPU: host memory, whichever host device

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

    def receive(self, storage, source: Backend, nbytes: int) -> np.ndarray:
        """A copy of the first ``nbytes`` of another host device's ``storage``."""
        out = self.alloc(nbytes)
        out[:nbytes] = storage[:nbytes]
        return out

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


_MODULES = {"cuda": "fusedarrays.cuda.backend", "cpu": "fusedarrays.cpu.backend",
            "sim": "fusedarrays.cuda.sim"}
_CLASSES = {"cuda": "CudaBackend", "cpu": "CpuBackend", "sim": "SimBackend"}
# Each kind's device 0 (the default device), by kind, and every other device by (kind, ordinal):
# one backend object per device, made on first use.
_active: dict[str, Backend] = {}
_devices: dict[tuple[str, int], Backend] = {}
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
    """The backend new arrays go to: the device of this thread's innermost device scope, else
    device 0 of the configured backend (``FUSEDARRAYS_BACKEND``); with ``name``, that kind's
    device 0."""
    if name is None:
        device = scoped()
        if device is not None:
            return backend_for(device)
        name = get_backend_name()
    elif name == "auto":
        name = get_backend_name()
    found = _active.get(name)
    return found if found is not None else _start(name, 0)


def _start(name: str, index: int) -> Backend:
    if name == "cuda" and not _cuda_available():
        raise DeviceUnavailableError(
            "FUSEDARRAYS_BACKEND=cuda, but no CUDA device is visible. Use "
            "FUSEDARRAYS_BACKEND=cpu (numba code on threads) or FUSEDARRAYS_BACKEND=sim "
            "(numba's CUDA simulator, small arrays) on a machine without a GPU.")
    with _starting:
        found = _active.get(name) if index == 0 else _devices.get((name, index))
        if found is None:
            cls = getattr(importlib.import_module(_MODULES[name]), _CLASSES[name])
            found = cls() if index == 0 else cls(index)
            if index == 0:
                _active[name] = found
            else:
                _devices[(name, index)] = found
    return found


def device_count(kind: str) -> int:
    """How many devices of ``kind`` this process can use."""
    if kind == "cuda":
        return importlib.import_module(_MODULES["cuda"]).CudaBackend.count() \
            if _cuda_available() else 0
    return config.get("CPU_DEVICES") if kind == "cpu" else 1


def get_backend_name() -> str:
    """The kind of device the configured backend (``FUSEDARRAYS_BACKEND``) runs on."""
    name = config.get("BACKEND")
    if name == "auto":
        # An active cuda backend answers for the device (in a fork too, where it refuses with
        # the reason).
        name = "cuda" if "cuda" in _active or _cuda_available() else "cpu"
    return name


def backend_for(device: Device) -> Backend:
    """The backend of ``device`` (started on first use). Devices are those of the configured
    backend's kind: ``cuda:0`` … on cuda, ``cpu`` … ``cpu:N-1`` on cpu
    (``FUSEDARRAYS_CPU_DEVICES``), ``sim``."""
    index = device.ordinal
    found = _active.get(device.kind) if index == 0 else _devices.get((device.kind, index))
    if found is not None:
        return found
    kind = get_backend_name()
    count = device_count(kind) if device.kind == kind else 0
    if index >= count:
        have = ", ".join(str(Device(kind, k)) for k in range(device_count(kind))) or "none"
        raise DeviceUnavailableError(
            f"device {device} is not available: fusedarrays runs on the {kind} backend "
            f"(FUSEDARRAYS_BACKEND={config.get('BACKEND')}), whose devices here are {have}. "
            "Pass one of them (host data reaches a device through fa.asarray, and leaves it "
            "through .get())." + (" FUSEDARRAYS_CPU_DEVICES=N makes N host devices."
                                  if kind == "cpu" else ""))
    return _start(kind, index)


def mixed_devices(what: str, first: Backend, second: Backend) -> DeviceMismatchError:
    """The error for operands on two devices: fusedarrays never copies between devices on its
    own (PyTorch's rule)."""
    return DeviceMismatchError(
        f"{what}: expected all arrays on one device, but found at least two devices, "
        f"{first.device} and {second.device}; move one with x.to_device('{first.device}') "
        f"or fa.asarray(x, device='{first.device}')")


def check_one_device(what: str, backend: Backend, buffers) -> None:
    """Raise :func:`mixed_devices` where one of ``buffers`` is on another device than
    ``backend`` (a planner's stand-ins, with no backend, are skipped)."""
    for buffer in buffers:
        other = buffer.backend
        if other is not backend and other is not None:
            raise mixed_devices(what, backend, other)


def started_backends() -> list[Backend]:
    """Every backend made so far, each kind's device 0 first."""
    return [*_active.values(), *_devices.values()]


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
    if backend is not None and backend.blas is None:
        return Blas(why_not=f"the {backend.name} backend runs the generated kernel (no BLAS)")
    if not config.get("CUBLAS"):
        return Blas(why_not="FUSEDARRAYS_CUBLAS=0 turns cuBLAS off")
    if backend is None:
        return importlib.import_module("fusedarrays.cuda.blas").probe()
    return backend.blas()


def new_buffer(backend: Backend, nbytes: int) -> Buffer:
    if capturing[0] is not None:
        capturing[0].allocating("a new array")
        return capturing[0].kept_buffer(Buffer(backend.alloc(nbytes), nbytes, backend,
                                               backend.alloc_align))
    return Buffer(backend.alloc(nbytes), nbytes, backend, backend.alloc_align)


def buffer_from_host(backend: Backend, array: np.ndarray) -> Buffer:
    array = np.ascontiguousarray(array)
    if capturing[0] is not None:   # fa.on_stream refuses it; fa.capture's graph keeps it
        capturing[0].allocating("a copy of host data")
        return capturing[0].kept_buffer(Buffer(backend.from_host(array), array.nbytes,
                                               backend))
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
    return sum(backend.free_cached_memory() for backend in started_backends())


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
    for backend in started_backends():
        if not backend.fork_safe:
            parent = parent or os.getppid()
            refuse_after_fork(backend, parent)


os.register_at_fork(after_in_child=_after_fork_in_child)
