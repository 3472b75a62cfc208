"""The calling thread's current CUDA context: its device's, around each driver call of fusedarrays.

Where it sits: under ``CudaBackend`` (one per device), its memory (:mod:`.memory`) and the C
launch (:mod:`.launch`). The driver keeps one current context per thread, and every call
fusedarrays makes on the legacy default stream (an allocation, a copy, a launch, a
synchronisation) acts on the current context's device. Another library may choose the thread's
device at any time (``torch.cuda.set_device(1)``, ``cupy.cuda.Device(1).use()``), and a new thread
has none, so fusedarrays never assumes it: around a call that reaches the driver,
:class:`DeviceContext` asks which context is current and, where it is another device's, makes its
own current and the other one current again afterwards (as PyTorch's device guards do), so that
the other library's current device stays what it chose. Where none was current, fusedarrays' stays
(the next call finds it, and pays no switch).

The question costs a driver call (``cuCtxGetCurrent``, tens of ns in C): the C extension
``_fastlaunch`` asks it in C, inside each launch and in :meth:`DeviceContext.enter`, where it was
built with that support; else ``cuda.bindings`` asks it from Python. Imports no numba.
"""

from __future__ import annotations

import ctypes
import threading

from cuda.bindings import driver

from .. import config as _settings
from .memory import check

# [(cuLaunchKernel, cuCtxGetCurrent, cuCtxSetCurrent) or None, _fastlaunch.swap_context or None]
_addresses: list = []


def driver_addresses() -> tuple[int, int, int] | None:
    """The addresses of the driver's ``cuLaunchKernel``, ``cuCtxGetCurrent`` and
    ``cuCtxSetCurrent`` where the C extension can call them, else None (no extension, one built
    before it checked contexts, ``FUSEDARRAYS_NATIVE=0``, no ``libcuda.so.1``)."""
    if not _addresses:
        found = None
        if _settings.get("NATIVE"):
            try:
                from . import _fastlaunch

                if hasattr(_fastlaunch, "swap_context"):   # a build that checks the context
                    lib = ctypes.CDLL("libcuda.so.1")
                    found = tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                                  for name in ("cuLaunchKernel", "cuCtxGetCurrent",
                                               "cuCtxSetCurrent"))
            except (ImportError, OSError, AttributeError):
                found = None
        _addresses[:] = [found, None]
        if found is not None:
            from ._fastlaunch import swap_context as fast

            _addresses[1] = fast
    return _addresses[0]


def current() -> int:
    """The address of this thread's current context (0: none)."""
    return int(check(driver.cuCtxGetCurrent()))


class DeviceContext:
    """One device's primary context (current in the thread that makes this object, as
    ``cuda.core``'s ``Device.set_current`` leaves it), made current around driver calls:
    ``previous = ctx.enter()`` … ``ctx.leave(previous)``, or ``with ctx:``."""

    __slots__ = ("context", "handle", "_previous")

    def __init__(self):
        self.context = check(driver.cuCtxGetCurrent())
        self.handle = int(self.context)
        self._previous = _Previous()

    def enter(self) -> int:
        """Make this context current where another one (or none) is; the other one's address, to
        make current again (:meth:`leave`), or 0 where nothing is to be restored."""
        calls = _addresses[0] if _addresses else driver_addresses()
        if calls is not None:
            status, previous = _addresses[1](self.handle, calls[1], calls[2])
            if status == 0:
                return previous
        # no C extension (or a failure, asked again here for the driver's message)
        previous = current()
        if previous == self.handle:
            return 0
        check(driver.cuCtxSetCurrent(self.context))
        return previous

    @staticmethod
    def leave(previous: int) -> None:
        """Make ``previous`` (an address from :meth:`enter`) current again; nothing for 0."""
        if previous:
            check(driver.cuCtxSetCurrent(driver.CUcontext(previous)))

    def __enter__(self) -> DeviceContext:
        self._previous.stack.append(self.enter())
        return self

    def __exit__(self, *exc) -> None:
        self.leave(self._previous.stack.pop())


class _Previous(threading.local):
    """Per thread: the contexts :meth:`DeviceContext.__enter__` replaced, innermost last."""

    def __init__(self):
        self.stack: list[int] = []
