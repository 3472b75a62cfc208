"""Cubin → loaded kernel, through ``cuda.core``.

Where it sits: ``CudaBackend.load`` calls :func:`load_kernel` with a cubin that :mod:`.compile`
linked now or the disk cache kept, and wraps the kernel in a :class:`~.launch.Launcher`; the runtime
keeps that per ``(device, key)``. Imports no numba: this is the warm path.
"""

from __future__ import annotations

from cuda.core import Kernel, ObjectCode


def load_kernel(cubin: bytes, entry: str) -> Kernel:
    """Load ``cubin`` (a context-independent ``CUlibrary``) and return its kernel ``entry``.

    ``entry`` is the mangled name from the PTX ``.entry`` line. The kernel's handle keeps its
    library loaded for as long as the kernel lives.
    """
    return ObjectCode.from_cubin(cubin, name=entry).get_kernel(entry)
