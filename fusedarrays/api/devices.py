"""Devices as the Array API sees them: ``x.device``, ``x.to_device(d)``, ``device=`` arguments.

A device is a :class:`Device`: the backend's name and, on ``cuda``, the GPU's ordinal
(``Device("cuda", 0)``, printed ``cuda:0``); ``Device("cpu")`` and ``Device("sim")`` for the
other backends. Arrays live where the active backend puts them, so the one device an array can
be moved to is its own (``to_device`` to another raises, naming both): fusedarrays moves data
between host and GPU only through ``fa.asarray`` and ``.get()``.
"""

from __future__ import annotations

from ..runtime.backend import Backend, get_backend


class Device:
    """Where an array's memory is: ``Device("cuda", 0)``, ``Device("cpu")``."""

    __slots__ = ("kind", "index")

    def __init__(self, kind: str, index: int | None = None):
        self.kind, self.index = kind, index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return other == str(self) or (self.index == 0 and other == self.kind)
        return isinstance(other, Device) and (other.kind, other.index) == (self.kind, self.index)

    def __hash__(self) -> int:
        return hash((self.kind, self.index))

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"


def device_of_backend(backend: Backend) -> Device:
    return Device(backend.name, getattr(backend, "device_id", None))


def default_device() -> Device:
    return device_of_backend(get_backend())


def check_device(device, what: str) -> None:
    """Accept ``device=None`` or the active backend's device; raise naming both otherwise."""
    if device is None:
        return
    here = default_device()
    if not here == device:
        raise ValueError(f"{what}: device={device!r} is not this backend's device {here!r}; "
                         "fusedarrays makes arrays on the active backend "
                         "(FUSEDARRAYS_BACKEND) and moves them with fa.asarray / .get()")
