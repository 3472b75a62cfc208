"""Generated kernel source → PTX (numba-cuda) → cubin (nvJitLink), and the toolchain's versions.

Where it sits: after ``codegen`` and the cache misses, ``runtime`` → ``CudaBackend.compile`` →
:func:`compile_ptx` and :func:`link_cubin`; the artifacts go to the disk cache keyed with
:func:`toolchain_versions`, and on to :mod:`.load`.

Why a cubin: PTX from the NVVM wheel can be newer than the driver accepts (PTX ISA 9.5 from NVVM
13.5 is refused by a CUDA 13.0 driver), while the cubin nvJitLink links from it loads there; linking
needs no GPU.

numba is imported inside :func:`compile_ptx` only: :func:`toolchain_versions` is part of every
disk-cache key, and a process whose kernels all come from the disk cache must not pay for
``import numba`` (0.75–1 s).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re

from ..errors import CompileError

_ENTRY = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+([A-Za-z_$][\w$]*)", re.MULTILINE)


def arch_cc(arch: str) -> tuple[int, int]:
    """``"sm_90"`` → ``(9, 0)``; ``"sm_100"`` → ``(10, 0)``; ``"sm_90a"`` → ``(9, 0)``."""
    m = re.fullmatch(r"sm_(\d+)(\d)[a-z]?", arch)
    if m is None:
        raise ValueError(f"not a CUDA arch string: {arch=} (expected like 'sm_90')")
    return int(m.group(1)), int(m.group(2))


def _param_numba_type(code: str):
    from numba import types

    from .intrinsics import SCALARS

    if code == "ptr":
        return types.uint64
    try:
        return SCALARS[code].param
    except KeyError:
        raise ValueError(
            f"unknown kernel parameter type {code=}; expected 'ptr' or one of {sorted(SCALARS)}"
        ) from None


def entry_name(ptx: str) -> str:
    """The (mangled) name of the one ``.entry`` in ``ptx``, as ``get_kernel`` wants it."""
    names = _ENTRY.findall(ptx)
    if len(names) != 1:
        raise CompileError(f"expected exactly one .entry in the PTX, found {names}")
    return names[0]


def compile_ptx(
    source: str, fn_name: str, param_types: tuple[str, ...], arch: str, helpers: dict
) -> tuple[str, str]:
    """Compile kernel ``fn_name`` defined in ``source`` to PTX for ``arch``.

    ``param_types`` lists every kernel parameter in order: ``"ptr"`` (a device address, uint64)
    or a dtype code (``f16`` travels as float32, ``b1`` as uint8). The source is exec'd in a fresh
    copy of :func:`~.intrinsics.device_namespace`. Returns ``(ptx, entry)``; any failure raises
    :class:`~fusedarrays.errors.CompileError` carrying the source.
    """
    try:
        from numba import cuda, types

        from .intrinsics import device_namespace

        signature = types.void(*(_param_numba_type(t) for t in param_types))
        namespace = dict(device_namespace(helpers))
        exec(compile(source, f"<fusedarrays kernel {fn_name}>", "exec"), namespace)
        kernel = namespace.get(fn_name)
        if kernel is None:
            raise NameError(f"the source defines no function {fn_name!r}")
        # Every option pinned: left to their defaults, NUMBA_OPT=0 or NUMBA_CUDA_DEBUGINFO in the
        # environment would change the PTX without changing its disk-cache key.
        ptx, _ = cuda.compile_ptx(kernel, signature, cc=arch_cc(arch), opt=True, debug=False,
                                  lineinfo=False, fastmath=False)
    except Exception as e:
        raise CompileError(
            f"numba-cuda could not compile kernel {fn_name!r} for {arch} with "
            f"{param_types=}: {type(e).__name__}: {e}",
            source=source,
        ) from e
    return ptx, entry_name(ptx)


def link_cubin(ptx: str, arch: str) -> bytes:
    """Link ``ptx`` into a cubin for ``arch`` with nvJitLink via ``cuda.core`` (no GPU needed)."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    # bytes, not str: ObjectCode.from_ptx takes a str for a file path
    code = ObjectCode.from_ptx(ptx.encode())
    try:
        linker = Linker(code, options=LinkerOptions(arch=arch))
        try:
            return bytes(linker.link("cubin").code)
        finally:
            linker.close()
    except Exception as e:  # nvJitLink's message includes its error log
        raise CompileError(f"nvJitLink could not link the PTX for {arch}: {e}") from e


# Wheels that ship the libraries, in the order cuda.pathfinder (which numba-cuda and cuda.bindings
# use to find them) searches: installed NVIDIA wheels come before conda and system toolkits.
_WHEELS = {
    "nvvm": ("nvidia-nvvm", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc"),
    "nvJitLink": ("nvidia-nvjitlink", "nvidia-nvjitlink-cu12"),
}
_FILE_PREFIX = {"nvvm": "libnvvm", "nvJitLink": "libnvJitLink"}


def _library_identity(libname: str) -> str:
    """Which build of a CUDA library compiles here: ``"nvidia-nvvm 13.5.37"``, or a fingerprint.

    The wheel case reads package metadata only (a few ms, no library loaded); a library from a
    system toolkit is located by cuda.pathfinder and named by path, size and modification time.
    """
    prefix = _FILE_PREFIX[libname]
    for name in _WHEELS[libname]:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if any(f.name.startswith(prefix) for f in dist.files or ()):
            return f"{name} {dist.version}"
    from cuda.pathfinder import load_nvidia_dynamic_lib

    path = os.path.realpath(load_nvidia_dynamic_lib(libname).abs_path)
    st = os.stat(path)
    return f"{path} size={st.st_size} mtime={int(st.st_mtime)}"


@functools.cache
def toolchain_versions() -> dict[str, str]:
    """Versions of everything that shapes the PTX and cubin, for disk-cache keys.

    Imports neither numba nor the driver, and loads no library when the toolkit comes as wheels.
    (NVVM's own ``nvvmVersion()`` says ``2.0`` across CUDA 12 and 13 releases, so it is useless
    here; the PTX header's "release 13.5, V13.5.37" is the wheel's version.)

    >>> sorted(toolchain_versions())
    ['numba', 'numba-cuda', 'nvjitlink', 'nvvm']
    """
    return {
        "numba": importlib.metadata.version("numba"),
        "numba-cuda": importlib.metadata.version("numba-cuda"),
        "nvvm": _library_identity("nvvm"),
        "nvjitlink": _library_identity("nvJitLink"),
    }
