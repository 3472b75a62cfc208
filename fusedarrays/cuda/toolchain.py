"""The versions of everything that shapes a kernel's PTX and cubin: part of every disk-cache key.

Where it sits: ``CudaBackend.toolchain()`` and ``fa.precompile`` call :func:`toolchain_versions`
for each disk key, on a warm start too, so this module is small and imports neither numba, the
driver, nor ``importlib.metadata`` (~20 ms) unless its quick look along ``sys.path`` fails.
"""

from __future__ import annotations

import functools
import os
import re
import sys

# Wheels that ship the libraries, in the order cuda.pathfinder (which numba-cuda and cuda.bindings
# use to find them) searches: installed NVIDIA wheels come before conda and system toolkits.
_WHEELS = {
    "nvvm": ("nvidia-nvvm", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc"),
    "nvJitLink": ("nvidia-nvjitlink", "nvidia-nvjitlink-cu12"),
}
_FILE_PREFIX = {"nvvm": "libnvvm", "nvJitLink": "libnvJitLink"}


def _library_identity(libname: str) -> str:
    """Which build of a CUDA library compiles here: ``"nvidia-nvvm 13.5.37"``, or a fingerprint.

    The wheel case reads package metadata only (no library loaded); a library from a system
    toolkit is located by cuda.pathfinder and named by path, size and modification time.
    """
    prefix = _FILE_PREFIX[libname]
    for name in _WHEELS[libname]:
        found = _distribution(name)
        if found is not None and any(f.startswith(prefix) for f in found[1]()):
            return f"{name} {found[0]}"
    from cuda.pathfinder import load_nvidia_dynamic_lib

    path = os.path.realpath(load_nvidia_dynamic_lib(libname).abs_path)
    st = os.stat(path)
    return f"{path} size={st.st_size} mtime={int(st.st_mtime)}"


def _distribution(name: str):
    """``(version, files)`` of the installed distribution ``name`` (``files()`` lists its file
    names), or None.

    Looks for ``<name>-<version>.dist-info`` along ``sys.path`` in order, as importlib.metadata
    does, without its set-up (~4 ms on the first call in a process, and this is on a warm
    start's path); anything else (an egg, an unreadable record) is left to importlib.metadata.
    """
    want = _normal(name)
    for entry in sys.path:
        for n in _listing(entry or "."):
            if n[:len(want)].lower().replace("-", "_").replace(".", "_") != want:
                continue  # not even the name's start: skip the full parse (hundreds of names)
            stem, _, suffix = n.rpartition(".")
            dist, _, version = stem.partition("-")
            if suffix not in ("dist-info", "egg-info") or _normal(dist) != want:
                continue
            if suffix == "dist-info" and version:
                return version, functools.partial(_record, os.path.join(entry or ".", n), name)
            return _metadata_distribution(name)
    return _metadata_distribution(name)


@functools.cache
def _listing(folder: str) -> tuple[str, ...]:
    try:
        return tuple(n for n in os.listdir(folder) if n.endswith(("dist-info", "egg-info")))
    except OSError:
        return ()


def _record(dist_info: str, name: str) -> list[str]:
    try:
        with open(os.path.join(dist_info, "RECORD"), encoding="utf-8") as f:
            return [line.split(",", 1)[0].rsplit("/", 1)[-1] for line in f]
    except OSError:
        found = _metadata_distribution(name)
        return found[1]() if found else []


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_distribution(name: str):
    import importlib.metadata  # ~20 ms to import: only where the quick look finds nothing

    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    return dist.version, lambda: [f.name for f in dist.files or ()]


@functools.cache
def toolchain_versions() -> dict[str, str]:
    """Versions of everything that shapes the PTX and cubin, for disk-cache keys (computed once
    per process).

    Imports neither numba nor the driver, and loads no library when the toolkit comes as wheels.
    (NVVM's own ``nvvmVersion()`` says ``2.0`` across CUDA 12 and 13 releases, so it is useless
    here; the PTX header's "release 13.5, V13.5.37" is the wheel's version.)

    >>> sorted(toolchain_versions())
    ['cuda-core', 'llvmlite', 'numba', 'numba-cuda', 'nvjitlink', 'nvvm']
    """
    versions = {}
    # llvmlite writes the NVVM IR that numba-cuda lowers to (numba pins only its minor version);
    # cuda-core turns the link options into nvJitLink's.
    for name in ("numba", "numba-cuda", "llvmlite", "cuda-core"):
        found = _distribution(name)
        if found is None:
            raise RuntimeError(f"{name} is not installed; fusedarrays' cuda backend needs it")
        versions[name] = found[0]
    versions["nvvm"] = _library_identity("nvvm")
    versions["nvjitlink"] = _library_identity("nvJitLink")
    _listing.cache_clear()  # installs may change; this answer is kept, the listings needn't be
    return versions
