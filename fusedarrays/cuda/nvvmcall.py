"""NVVM for one lowered kernel: numba-cuda's ``CodeLibrary.get_asm_strs``, with libdevice added
only where the kernel's IR calls one of its functions (``cuda/compile.py``'s ``lowered_ptx``).

Why: numba-cuda's ``nvvm.compile_ir`` lazily adds libdevice (NVIDIA's math library, ~470 KB of
bitcode) to every compilation unit. "Lazily" spares the unused functions' code generation, not
the parse: NVVM reads the whole library each time, ~20 of ~35 ms of NVVM for a small kernel on
the 2-core machine. A kernel whose IR names no ``__nv_`` function (``a * b + c``, comparisons,
``where``, sums) links nothing from it, so it is left out there and the PTX is the same
(``tests/ptx/test_linear_lowering.py`` compiles kernels both ways).

Anything else (debug builds, several modules, fastmath, another numba-cuda) goes through
numba-cuda's own call.
"""

from __future__ import annotations


def kernel_ptx(library, cc: tuple[int, int]) -> str:
    """The PTX of ``library`` (one kernel's numba-cuda ``CUDACodeLibrary``) for ``cc``."""
    try:
        from numba.cuda.cudadrv import nvrtc, nvvm

        irs = library.llvm_strs
        options = dict(library._nvvm_options)
        unit_type, replace = nvvm.CompilationUnit, nvvm.llvm_replace
    except (ImportError, AttributeError):   # pragma: no cover - another numba-cuda
        return library.get_asm_strs(cc=cc)[0]
    if len(irs) != 1 or "g" in options or options.get("fastmath") or "__nv_" in irs[0]:
        return library.get_asm_strs(cc=cc)[0]
    options.pop("fastmath", None)
    options["arch"] = nvrtc.get_arch_option(*cc)
    unit = unit_type(options)
    unit.add_module(replace(irs[0]).encode("utf8"))
    unit.verify()
    # as get_asm_strs tidies it: NVVM's result may end in whitespace and NULs
    return unit.compile().decode().strip("\x00").strip()
