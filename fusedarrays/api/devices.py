"""Devices as the Array API sees them: ``x.device``, ``x.to_device(d)``, ``device=`` arguments, and
the device scope ``with fa.Device("cuda:1"):``.

A device is a :class:`~fusedarrays.runtime.devices.Device` value: ``cuda:0``, ``cuda:1``, … on the
cuda backend, ``cpu`` (and ``cpu:1`` … where ``FUSEDARRAYS_CPU_DEVICES`` makes more) on the cpu
backend, ``sim``. Each has its own backend object (memory, stream, kernels). An array lives on one
device (``x.device``), and work runs on its operands' device; operands on two devices raise,
naming both. Moving is explicit: ``x.to_device("cuda:1")`` or ``fa.asarray(x, device="cuda:1")``
copy between devices of one kind; host data arrives through ``fa.asarray`` and leaves through
``.get()``. New arrays go to the device of the innermost ``with fa.Device(...):`` of the thread,
else to device 0.
"""

from __future__ import annotations

import contextlib

from ..runtime.backend import Backend, backend_for, get_backend, get_backend_name
from ..runtime.backend import mixed_devices as mixed_devices
from ..runtime.devices import Device, as_device

__all__ = ["Device", "default_device", "device_of_backend", "devices", "resolve", "using"]


def device_of_backend(backend: Backend) -> Device:
    return backend.device


def default_device() -> Device:
    """The device new arrays of this thread go to (its innermost device scope's, else
    device 0)."""
    return get_backend().device


def devices() -> list[Device]:
    """Every device of the configured backend's kind this process can use."""
    from ..runtime.backend import device_count

    kind = get_backend_name()
    return [Device(kind, k) for k in range(device_count(kind))]


def resolve(device, what: str) -> Backend | None:
    """The backend of ``device`` (None for ``device=None``): a device of the configured
    backend's kind that exists here, else an error naming ``what`` and the devices there are."""
    if device is None:
        return None
    try:
        return backend_for(as_device(device, get_backend_name()))
    except (ValueError, TypeError) as e:
        raise type(e)(f"{what}: {e}") from None
    except Exception as e:   # DeviceUnavailableError: say which call asked
        e.args = (f"{what}: {e.args[0]}",) if e.args else e.args
        raise


def check_device(device, what: str) -> None:
    """Accept ``device=None`` or any available device (see :func:`resolve`)."""
    resolve(device, what)


@contextlib.contextmanager
def using(device, what: str):
    """``device=`` of a creation function: new arrays made inside go to ``device`` (nothing
    changes for None)."""
    backend = resolve(device, what)
    if backend is None:
        yield
        return
    with backend.device:
        yield
