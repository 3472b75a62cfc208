"""``CudaBackend``: the cuda implementation of the backend seam (``fusedarrays/backend.py``).

Where it sits: the runtime calls exactly these methods. ``compile`` (numba-cuda → PTX → cubin) runs
only on a miss of both cache levels and is the only path that imports numba; ``load`` and
``launch`` serve every hit, ``alloc``/``from_host``/``to_host``/``import_array`` move memory. All
work is ordered on the legacy default stream of the device chosen at construction, which is made
current in the constructing thread.
"""

from __future__ import annotations

import numpy as np

from . import memory
from .launch import Launcher
from .load import load_kernel


class CudaBackend:
    """Kernels and memory on one CUDA device.

    >>> if CudaBackend.available():  # doctest: +SKIP
    ...     be = CudaBackend(0)
    ...     be.device_key
    'cuda:0:sm_90'
    """

    name = "cuda"

    @staticmethod
    def available() -> bool:
        """Whether a CUDA device is visible (driver loads, ``cuInit`` succeeds, ≥ 1 device)."""
        try:
            from cuda.bindings import driver

            (err,) = driver.cuInit(0)
            if err != driver.CUresult.CUDA_SUCCESS:
                return False
            err, count = driver.cuDeviceGetCount()
            return err == driver.CUresult.CUDA_SUCCESS and count > 0
        except Exception:  # no driver library, no bindings: no device, never an error here
            return False

    def __init__(self, device_id: int = 0):
        self.device, self._pool = memory.open_device(device_id)
        self.device_id = self.device.device_id
        cc = self.device.compute_capability
        self.arch = f"sm_{cc.major}{cc.minor}"
        self.device_key = f"cuda:{self.device_id}:{self.arch}"
        self._sm_count = self.device.properties.multiprocessor_count

    def __repr__(self) -> str:
        return f"<CudaBackend {self.device_key} {self.device.name}>"

    # --- kernels -----------------------------------------------------------------------------

    def toolchain(self) -> dict[str, str]:
        """numba, numba-cuda, NVVM and nvJitLink versions for disk-cache keys (imports no numba)."""
        from .compile import toolchain_versions

        return toolchain_versions()

    def compile(self, source: str, fn_name: str, param_types: tuple[str, ...],
                helpers: dict) -> dict:
        """``{"ptx", "cubin", "entry"}`` for kernel ``fn_name`` of ``source``, for this arch."""
        from .compile import compile_ptx, link_cubin

        ptx, entry = compile_ptx(source, fn_name, param_types, self.arch, helpers)
        return {"ptx": ptx, "cubin": link_cubin(ptx, self.arch), "entry": entry}

    def load(self, artifact: dict, param_types: tuple[str, ...]) -> Launcher:
        """A launcher for the artifact's cubin (``artifact`` needs ``"cubin"`` and ``"entry"``)."""
        kernel = load_kernel(artifact["cubin"], artifact["entry"])
        return Launcher(kernel, param_types, self._sm_count)

    def launch(self, launcher: Launcher, n: int, args: list, geometry: tuple = ()) -> None:
        """Queue the kernel over ``n`` elements; ``args`` are the parameters after ``n``;
        ``geometry`` is the plan's (see ``KernelPlan.geometry``)."""
        launcher(n, args, geometry)

    def synchronize(self) -> None:
        self.device.sync()

    # --- memory ------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> memory.DeviceStorage:
        return memory.alloc(self._pool, nbytes)

    def from_host(self, array: np.ndarray) -> memory.DeviceStorage:
        return memory.from_host(self._pool, array)

    def to_host(self, storage: memory.DeviceStorage, dtype: np.dtype, count: int,
                elem_offset: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        return memory.to_host(storage, dtype, count, elem_offset * dtype.itemsize)

    def operand_arg(self, storage: memory.DeviceStorage, dtype: np.dtype, elem_offset: int) -> int:
        """The device address of element ``elem_offset`` (a kernel ``ptr`` parameter)."""
        return storage.ptr + elem_offset * dtype.itemsize

    def address(self, storage: memory.DeviceStorage) -> int:
        return storage.ptr

    def import_array(self, obj):
        """``(storage, dtype, shape, strides_in_elements, elem_offset)`` of a foreign CUDA array,
        without a copy; see :func:`.memory.import_array`."""
        return memory.import_array(obj, self.device_id)
