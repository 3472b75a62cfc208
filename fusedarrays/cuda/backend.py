"""``CudaBackend``: the cuda implementation of the backend seam (``runtime/backend.py``), one object
per device.

Where it sits: the runtime calls exactly the protocol's members. ``compile`` (numba-cuda → PTX →
cubin) runs only on a miss of both cache levels and is the only path that imports numba; ``load``
and ``launch`` serve every hit, ``alloc``/``from_host``/``to_host``/``import_array``/``receive``
move memory. All work of one backend is ordered on the legacy default stream of its device; its
pool, counters and loaded kernels are its own, while compiled PTX and cubins (per arch, on disk)
serve every device.

Any thread may call it, whatever device another library made current there: each method that
reaches the driver makes this device's context current around its calls (:mod:`.context`; the
thread's previous context is current again afterwards), and the C launch does the same in C.
"""

from __future__ import annotations

import functools
import sys
import threading

import numpy as np

from ..errors import UnsupportedOperationError
from ..runtime.backend import Backend, MemoryInfo, backend_for
from ..runtime.devices import Device
from . import context, events, memory, peers
from .launch import Launcher
from .load import load_kernel


def _on_device(method):
    """``method`` run with its backend's device context current in the calling thread, and the
    context that was current there before (another library's) current again after it."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        device = self._context
        previous = device.enter()
        try:
            return method(self, *args, **kwargs)
        finally:
            if previous:
                device.leave(previous)

    return run


class CudaBackend(Backend):
    """Kernels and memory on one CUDA device: its pool, its legacy stream, its launch records and
    loaded kernels (the runtime keys those by this object and ``device_key``).

    >>> if CudaBackend.available():  # doctest: +SKIP
    ...     be = CudaBackend(1)
    ...     be.device_key
    'cuda:1:sm_90'
    """

    name = "cuda"
    target = "cuda"
    alloc_align = memory.POOL_ALIGN   # the pool's blocks (and zero bytes, address 0)
    # operand_arg(storage, dtype, k) is storage.ptr + k * itemsize: packers compute it without
    # the call (a lazy evaluation's packer in C, fa.fuse's in its generated source)
    operand_at = "ptr"
    disk_kind = "cubin"               # what a disk-cache hit loads
    # A CUDA context does not survive fork(): in a forked child every method refuses, naming the
    # 'spawn' start method (fusedarrays/backend.py, refuse_after_fork).
    fork_safe = False

    @staticmethod
    def available() -> bool:
        """Whether a CUDA device is visible (driver loads, ``cuInit`` succeeds, ≥ 1 device)."""
        try:
            return CudaBackend.count() > 0
        except Exception:  # no driver library, no bindings: no device, never an error here
            return False

    @staticmethod
    def count() -> int:
        """How many CUDA devices are visible (0 where the driver does not start)."""
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return 0
        err, count = driver.cuDeviceGetCount()
        return count if err == driver.CUresult.CUDA_SUCCESS else 0

    def __init__(self, device_id: int = 0):
        from cuda.bindings import driver

        # the thread's context before (another library's, or none): current again at the end
        memory.check(driver.cuInit(0))
        before = context.current()
        self._device, self._pool = memory.open_device(device_id)
        self._context = context.DeviceContext()   # open_device made it current here
        self.device_id = self._device.device_id
        self.device = Device("cuda", self.device_id)
        self.dlpack_device = (2, self.device_id)     # kDLCUDA
        cc = self._device.compute_capability
        self.arch = f"sm_{cc.major}{cc.minor}"
        self.device_key = f"cuda:{self.device_id}:{self.arch}"
        self._sm_count = self._device.properties.multiprocessor_count
        self._counters: tuple = (0, 0)     # (slots, address) of the split reductions' counters
        self._counter_blocks: list = []    # every counter buffer made, kept (see counters())
        self._counter_lock = threading.Lock()
        if before and before != self._context.handle:
            self._context.leave(before)
        # Every disk-cache key holds the toolchain versions (a millisecond of reading package
        # metadata): read them now, beside the caller's own start-up, not in its first eval.
        threading.Thread(target=self.toolchain, daemon=True).start()

    def __repr__(self) -> str:
        return f"<CudaBackend {self.device_key} {self._device.name}>"

    # --- kernels -----------------------------------------------------------------------------

    def toolchain(self) -> dict[str, str]:
        """Toolchain versions for disk-cache keys (:func:`.toolchain.toolchain_versions`; imports
        no numba)."""
        from .toolchain import toolchain_versions

        return toolchain_versions()

    @_on_device
    def compile(self, source: str, fn_name: str, param_types: tuple[str, ...],
                helpers: dict) -> dict:
        """``{"ptx", "cubin", "entry", "times"}`` for kernel ``fn_name`` of ``source``, for this
        arch (``times``: seconds by compile stage)."""
        from .compile import compile_kernel

        ptx, cubin, entry, times = compile_kernel(source, fn_name, param_types, self.arch, helpers)
        return {"ptx": ptx, "cubin": cubin, "entry": entry, "times": times}

    @_on_device
    def load(self, artifact: dict, param_types: tuple[str, ...]) -> Launcher:
        """A launcher for the artifact's cubin (``artifact`` needs ``"cubin"`` and ``"entry"``)."""
        kernel = load_kernel(artifact["cubin"], artifact["entry"])
        return Launcher(kernel, param_types, self._sm_count, self._context.handle)

    @_on_device
    def launch(self, launcher: Launcher, n: int, args: list, geometry: tuple = ()) -> None:
        """Queue the kernel over ``n`` elements; ``args`` are the parameters after ``n``;
        ``geometry`` is the plan's (see ``KernelPlan.geometry``)."""
        launcher(n, args, geometry)

    def direct_launch(self, launcher: Launcher, n: int, geometry: tuple = ()):
        """What a launch record calls in place of :meth:`launch` for every launch over ``n``
        and ``geometry`` after its first (:meth:`.launch.Launcher.direct`), or None: the C
        launch, which makes this device's context current around the launch itself."""
        direct = getattr(launcher, "direct", None)   # a cuBLAS product has none
        return direct(n, geometry) if direct is not None else None

    def blas(self):
        """The BLAS this device computes products with: cuBLAS through nvmath-python where it is
        installed (:func:`.blas.probe`: imports it once), else why not."""
        from .blas import probe

        return probe()

    @_on_device
    def load_product(self, plan):
        """What a launch record calls for a product planned for cuBLAS (``plan.library``), as
        it calls a kernel's launcher (:class:`.blas.CublasProduct`)."""
        from .blas import CublasProduct

        return CublasProduct(plan, self.device_id)

    @_on_device
    def device_timer(self) -> events.EventTimer:
        """A started timer of the work queued next (``fa.profile()``)."""
        return events.EventTimer(self._context).start()

    @_on_device
    def copy_bandwidth(self) -> float:
        """Bytes per second (read and written) of a device-to-device copy: the best of three
        256 MiB copies, the reference ``fa.profile()`` states achieved bandwidth against."""
        nbytes = 1 << 28
        src, dst = self.alloc(nbytes), self.alloc(nbytes)
        best = min(_timed_copy(dst, src, nbytes) for _ in range(3))
        return 2 * nbytes / best

    @_on_device
    def synchronize(self) -> None:
        self._device.sync()

    # --- memory ------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> memory.DeviceStorage:
        # the device's context is made current only where the pool is asked (a cached block
        # reaches no driver): the hot path of every new array
        return memory.alloc(self._pool, nbytes, self._context)

    def receive(self, storage: memory.DeviceStorage, source: CudaBackend,
                nbytes: int) -> memory.DeviceStorage:
        """A copy on this device of the first ``nbytes`` of ``storage``, on device ``source``
        (a peer copy, ordered after the work queued on both and before later work on both)."""
        out = memory.alloc(self._pool, nbytes, self._context)
        peers.peer_copy(out, self._context, storage, source._context, nbytes)
        return out

    @_on_device
    def from_host(self, array: np.ndarray) -> memory.DeviceStorage:
        return memory.from_host(self._pool, array)

    @_on_device
    def to_host(self, storage: memory.DeviceStorage, dtype: np.dtype, count: int,
                elem_offset: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        return memory.to_host(storage, dtype, count, elem_offset * dtype.itemsize)

    def operand_arg(self, storage: memory.DeviceStorage, dtype: np.dtype, elem_offset: int) -> int:
        """The device address of element ``elem_offset`` (a kernel ``ptr`` parameter)."""
        return storage.ptr + elem_offset * dtype.itemsize

    def address(self, storage: memory.DeviceStorage) -> int:
        return storage.ptr

    @_on_device
    def zero(self, storage: memory.DeviceStorage, nbytes: int) -> None:
        """Queue the first ``nbytes`` of ``storage`` set to zero (the error word of flagged
        gathers: ``runtime/indexflags.py``)."""
        memory.zero(storage, nbytes)

    def counters(self, slots: int) -> int:
        """The address of this device's counters for split reductions
        (``compiler/reduction.py``): at least ``slots`` int32 zeros. Every launch leaves them
        zero and every launch is on the legacy default stream, so kernels that use them run
        one after another, whatever thread queued them, and all may use the same slots. Grown
        (rarely: at most 65536 slots are ever asked for) by a new zeroed buffer, copied in on
        the legacy stream before any launch queued after it; the old ones are kept for the
        backend's life, so a launch another thread packed with one never reads freed memory."""
        size, address = self._counters
        if size >= slots:
            return address
        with self._counter_lock, self._context:
            size = max(slots, 2 * self._counters[0], 1024)
            if self._counters[0] < slots:
                block = memory.from_host(self._pool, np.zeros(size, np.int32))
                self._counter_blocks.append(block)
                self._counters = (size, block.ptr)
            return self._counters[1]

    @_on_device
    def foreach_args(self, meta: np.ndarray, rows: list) -> tuple[list, tuple]:
        """The arguments after ``n`` of a multi-tensor kernel
        (``foreach_plan.ForeachPlan``): device copies of ``meta`` and of the
        ``[T, K]`` table of operand addresses, and T.
        ``rows[t][k]`` is operand k of tensor t as ``(storage, dtype, element offset)``; the
        second value keeps the two tables alive while they are reused."""
        table = np.array([[self.operand_arg(*operand) for operand in row] for row in rows],
                         dtype=np.uint64)
        meta_d, table_d = self.from_host(meta), self.from_host(table)
        return [meta_d.ptr, table_d.ptr, len(rows)], (meta_d, table_d)

    def import_array(self, obj):
        """``(backend, storage, dtype, shape, strides_in_elements, elem_offset)`` of a foreign
        CUDA array, without a copy, on the backend of the device it lives on (which
        :func:`.peers.device_of` says; this one where it says none); see
        :func:`.memory.import_array`."""
        with self._context:
            ordinal = peers.device_of(obj)
        owner = self if ordinal is None or ordinal == self.device_id else backend_for(
            Device("cuda", ordinal))
        return (owner, *owner._import(obj))

    @_on_device
    def _import(self, obj):
        return memory.import_array(obj, self.device_id)

    @_on_device
    def order_stream(self, stream: int) -> None:
        """Order the consumer's ``stream`` after fusedarrays' work (an export: ``__dlpack__``'s
        ``stream``); see :func:`.events.order_stream`."""
        events.order_stream(stream)

    @_on_device
    def release_after(self, stream: int) -> None:
        """Before an exported buffer goes back to the pool: later work on the legacy stream
        waits for the consumer's ``stream`` (:func:`.events.wait_for_stream`); for the
        per-thread default stream (2), whose thread is unknown here, the device synchronises."""
        if stream == 2:
            self._device.sync()
        else:
            events.wait_for_stream(stream)

    def graphs(self):
        """This device's CUDA-graph tools (:class:`.graphs.GraphTools`): ``fa.capture`` builds
        a graph of its recorded launches, ``fa.on_stream`` launches on a foreign stream."""
        tools = self.__dict__.get("_graph_tools")
        if tools is None:
            from .graphs import GraphTools

            tools = self._graph_tools = GraphTools(self._device, self._context)
        return tools

    def array_library(self):
        """CuPy, whose kernels (cuSOLVER, cuBLAS, CUB's sorts) run on this device's memory
        without a copy (``api/libraries.py``); imported by the first call that needs it."""
        try:
            import cupy
        except ImportError as e:
            raise UnsupportedOperationError(
                "this operation runs CuPy's kernel on fusedarrays' GPU memory (no copy), and "
                "CuPy is not installed: pip install 'fusedarrays[cuda-libs]' (or compute on "
                "the host: x.get())") from e
        return cupy

    @_on_device
    def memory_info(self) -> MemoryInfo:
        """What fusedarrays holds on the device, what it keeps cached, and the device's free and
        total bytes (see :func:`fusedarrays.memory_info`)."""
        return MemoryInfo("cuda", **memory.usage(self._pool))

    @_on_device
    def free_cached_memory(self) -> int:
        """Give the cached blocks and the cuBLAS plans' workspaces back to the pool and the
        pool's free memory back to the driver; the bytes the pool's reservation shrank by."""
        blas = sys.modules.get(__package__ + ".blas")   # cuBLAS plans' workspaces, if any
        if blas is not None:
            blas.free_plans()
        return memory.give_back(self._pool)


def _timed_copy(dst, src, nbytes: int) -> float:
    timer = events.EventTimer(None).start()
    memory.copy(dst, src, nbytes)
    return timer.stop()
