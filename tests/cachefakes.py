"""Backends with a disk level that run without a GPU, for the kernel-cache tests.

- :class:`DiskCpuBackend`: the cpu backend (its own disk level: the kernel source as a ``src``
  entry) under a test arch and device name of its own, recording what it loads. Results are
  real, so cache behaviour is checked together with values.
- :class:`FakeCudaBackend`: named ``cuda``, arch ``sm_90``; compiles with the real numba-cuda →
  PTX → nvJitLink path (no GPU needed) and records what it loads and launches instead of running
  it: the warm-start tests check that a second process loads the same cubin without numba.

``install(backend)`` makes one the active backend (``FUSEDARRAYS_BACKEND`` must name it).
Both take their toolchain versions from ``FA_TEST_TOOLCHAIN`` (JSON) when set, to test that a
version change misses.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os

import numpy as np

backend_module = importlib.import_module("fusedarrays.runtime.backend")
Backend = backend_module.Backend
BASE = 0x7F00_0000_0000


def toolchain() -> dict[str, str]:
    if "FA_TEST_TOOLCHAIN" in os.environ:
        return json.loads(os.environ["FA_TEST_TOOLCHAIN"])
    from fusedarrays.cuda.toolchain import toolchain_versions

    return toolchain_versions()


def install(backend, name: str | None = None):
    backend_module._active[name or backend.name] = backend
    return backend


def _cpu_base():
    from fusedarrays.cpu.backend import CpuBackend

    return CpuBackend


class DiskCpuBackend(_cpu_base()):
    device_key = "cpu-disk"

    def __init__(self, device_key: str = "cpu-disk"):
        super().__init__()
        self.arch = "sm_test"
        self.device_key = device_key
        self.loads: list[str] = []

    def toolchain(self) -> dict[str, str]:
        return toolchain()

    def load(self, artifact, param_types):
        self.loads.append(artifact["entry"])
        return super().load(artifact, param_types)


class FakeCudaBackend(Backend):
    """Compiles for real (PTX and cubin for sm_90), launches nothing. A backend by the protocol
    (its optional capabilities absent: None)."""

    name = "cuda"
    target = "cuda"
    arch = "sm_90"
    disk_kind = "cubin"
    alloc_align = None  # address() says

    def __init__(self, device_key: str = "fake:0:sm_90"):
        from fusedarrays.runtime.devices import Device

        self.device_key = device_key
        self.device_id = int(device_key.split(":")[1])
        self.device = Device("cuda", self.device_id)
        self.dlpack_device = (2, self.device_id)     # as CudaBackend's
        self.loaded: list[tuple[str, str]] = []     # (entry, sha256 of the cubin)
        self.launches: list[tuple[str, int, int]] = []

    def toolchain(self) -> dict[str, str]:
        return toolchain()

    def compile(self, source, fn_name, param_types, helpers):
        from fusedarrays.cuda.compile import compile_kernel

        ptx, cubin, entry, times = compile_kernel(source, fn_name, param_types, self.arch,
                                                  helpers)
        return {"ptx": ptx, "cubin": cubin, "entry": entry, "times": times}

    def load(self, artifact, param_types):
        cubin = artifact["cubin"]
        assert cubin[:4] == b"\x7fELF", "a cubin is an ELF image"
        self.loaded.append((artifact["entry"], hashlib.sha256(cubin).hexdigest()))
        return artifact["entry"]

    def launch(self, kernel, n, args, geometry=()):
        self.launches.append((kernel, n, len(args)))

    def alloc(self, nbytes):
        return np.zeros(max(nbytes, 1), np.uint8)

    def from_host(self, array):
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()

    def to_host(self, storage, dtype, count, elem_offset):
        return storage.view(dtype)[elem_offset:elem_offset + count].copy()

    def operand_arg(self, storage, dtype, elem_offset):
        return BASE + elem_offset * np.dtype(dtype).itemsize

    def address(self, storage):
        return BASE  # as a pool allocation: 256-byte aligned

    def synchronize(self):
        pass
