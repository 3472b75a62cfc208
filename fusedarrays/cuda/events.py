"""CUDA events for the cuda backend: ordering fusedarrays' stream against a consumer's, and
timing launches for ``fa.profile()``.

Where it sits: beside :mod:`.memory` (whose driver-call ``check`` and legacy-stream handle it
uses), under ``CudaBackend``. fusedarrays computes on the legacy default stream; a library that
takes an array on a stream of its own (DLPack's ``stream=``) is ordered after that work by an
event recorded here and waited on there, and a buffer it gives back is reused only after its
reads, by the reverse. Imports no numba.
"""

from __future__ import annotations

from cuda.bindings import driver

from .memory import _LEGACY, check


class EventTimer:
    """Device time of the work queued on the legacy stream between :meth:`start` and
    :meth:`stop` (CUDA events; ``fa.profile()`` only: :meth:`stop` waits for that work).
    ``device``: the device's context (:class:`.context.DeviceContext`), current while
    :meth:`stop` records, or None where the caller keeps it current."""

    __slots__ = ("begin", "end", "device")

    def __init__(self, device=None):
        self.device = device
        flags = driver.CUevent_flags.CU_EVENT_DEFAULT
        self.begin = check(driver.cuEventCreate(flags))
        self.end = check(driver.cuEventCreate(flags))

    def start(self) -> EventTimer:
        check(driver.cuEventRecord(self.begin, _LEGACY))
        return self

    def stop(self) -> float:
        """Seconds between the two events, once the work between them has run."""
        previous = self.device.enter() if self.device is not None else 0
        try:
            check(driver.cuEventRecord(self.end, _LEGACY))
            check(driver.cuEventSynchronize(self.end))
            return check(driver.cuEventElapsedTime(self.begin, self.end)) / 1e3
        finally:
            check(driver.cuEventDestroy(self.begin))
            check(driver.cuEventDestroy(self.end))
            if previous:
                self.device.leave(previous)


def order_stream(stream: int) -> None:
    """Make the consumer's ``stream`` (a ``CUstream`` handle) wait for the work queued so far on
    the legacy stream, where fusedarrays computes: an event recorded there, waited on there.
    Nothing to do for the legacy stream itself (1) or for -1 (the consumer asks for no order)."""
    if stream in (-1, 1, _LEGACY):
        return
    event = check(driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    try:
        check(driver.cuEventRecord(event, _LEGACY))
        check(driver.cuStreamWaitEvent(driver.CUstream(stream), event, 0))
    finally:
        check(driver.cuEventDestroy(event))


def wait_for_stream(stream: int) -> None:
    """Make the legacy stream wait for the work queued so far on the consumer's ``stream``: an
    exported buffer given back to the pool is then reused only after the consumer's reads."""
    if stream in (-1, 1, _LEGACY):
        return
    event = check(driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    try:
        check(driver.cuEventRecord(event, driver.CUstream(stream)))
        check(driver.cuStreamWaitEvent(_LEGACY, event, 0))
    finally:
        check(driver.cuEventDestroy(event))
