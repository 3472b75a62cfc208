"""The compiler for a GPU arch, as the backend seam hands it out (``arch_compiler()``).

Compiling for an arch needs no GPU, so ``fa.precompile`` and ``explain``'s PTX reach these
functions without starting the cuda backend; every call imports numba (on first use), nothing
else here does.
"""

from __future__ import annotations


class ArchCompiler:
    """Source → PTX → cubin for a named arch (``"sm_90"``), and what keys such a kernel."""

    def check(self, arch: str) -> tuple[int, int]:
        """The compute capability of ``arch``; raises ValueError for a malformed one."""
        from .compile import arch_cc
        return arch_cc(arch)

    def toolchain(self) -> dict[str, str]:
        """The versions that compiled kernels depend on (disk-key parts)."""
        from .toolchain import toolchain_versions
        return toolchain_versions()

    def ptx(self, source: str, name: str, param_types: tuple, arch: str, helpers: dict):
        """``(ptx, entry name)`` of one kernel."""
        from .compile import compile_ptx
        return compile_ptx(source, name, param_types, arch, helpers)

    def lower(self, source: str, name: str, param_types: tuple, arch: str, helpers: dict):
        """numba's typing and lowering of one kernel (under numba's lock): :meth:`finish` next."""
        from .compile import lower_kernel
        return lower_kernel(source, name, param_types, arch, helpers)

    def finish(self, lowered) -> tuple[str, bytes, str, dict]:
        """NVVM and nvJitLink on a lowered kernel (GIL released): ``(ptx, cubin, entry, times)``."""
        from .compile import finish_kernel
        return finish_kernel(lowered)

    def server(self):
        """This process's compile server (forks workers for batches), started on first use."""
        from .compile_server import shared_server
        return shared_server()


COMPILER = ArchCompiler()
