"""Between devices: which GPU a foreign array lives on, and copies from one GPU to another.

Where it sits: under ``CudaBackend`` (one per device), beside :mod:`.memory`, whose storage,
checks and legacy-stream handle it uses. ``fa.asarray`` of another library's array lands on that
array's device (:func:`device_of` picks the backend); ``x.to_device("cuda:1")`` and
``fa.asarray(x, device=...)`` copy with :func:`peer_copy`, which the driver routes over NVLink or
PCIe peer access where the two devices have it, else through the host. Imports no numba.
"""

from __future__ import annotations

from cuda.bindings import driver

from .memory import _LEGACY, DeviceStorage, _check_range, check


def device_of(obj) -> int | None:
    """The CUDA device ordinal a foreign array lives on, or None where it says none: DLPack's
    ``__dlpack_device__`` (kDLCUDA, n), else the device of the CUDA array interface's pointer."""
    where = getattr(obj, "__dlpack_device__", None)
    if where is not None:
        kind, index = where()
        return int(index) if int(kind) == 2 else None
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is None or not interface["data"][0]:
        return None
    attribute = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    return int(check(driver.cuPointerGetAttribute(attribute, interface["data"][0])))


def peer_copy(dst: DeviceStorage, dst_device, src: DeviceStorage, src_device,
              nbytes: int) -> None:
    """Queue a copy of ``src``'s first ``nbytes`` (on ``src_device``) over ``dst``'s (on
    ``dst_device``; both :class:`.context.DeviceContext`) on the destination's legacy stream,
    after the work queued on both devices, and before later work on either (so neither buffer is
    reused before the copy has read or written it): an event each way."""
    _check_range(dst, 0, nbytes)
    _check_range(src, 0, nbytes)
    if not nbytes:
        return
    flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
    with src_device:
        source_done = check(driver.cuEventCreate(flags))
        check(driver.cuEventRecord(source_done, _LEGACY))
    with dst_device:
        copied = check(driver.cuEventCreate(flags))
        try:
            check(driver.cuStreamWaitEvent(_LEGACY, source_done, 0))
            check(driver.cuMemcpyPeerAsync(dst.ptr, dst_device.context, src.ptr,
                                           src_device.context, nbytes, _LEGACY))
            check(driver.cuEventRecord(copied, _LEGACY))
        finally:
            check(driver.cuEventDestroy(source_done))
    with src_device:
        try:
            check(driver.cuStreamWaitEvent(_LEGACY, copied, 0))
        finally:
            check(driver.cuEventDestroy(copied))
