"""Devices as values: :class:`Device` names where an array's memory is and where its work runs.

Where it sits: below the backends' registry (``runtime/backend.py``, which keeps one backend
object per device and the thread's device scope) and above nothing: a device is a kind and an
ordinal, parsed from what users write (``"cuda:1"``, ``Device("cuda", 1)``, ``1``, a
``torch.device``). ``api/devices.py`` re-exports it as the Array API's device object.

A device is also a scope: ``with fa.Device("cuda:1"):`` makes new arrays (``fa.asarray`` of host
data, ``fa.zeros``, ``fa.arange``, random draws) on that device in this thread, as
``with torch.device(...)`` or ``with cupy.cuda.Device(1)`` do. Work always runs where its operands
are, whatever the scope.
"""

from __future__ import annotations

import threading

HOST_KINDS = ("cpu", "sim")   # devices in host memory: the first is written without an ordinal
KINDS = ("cuda", *HOST_KINDS)


class Device:
    """Where an array's memory is: ``Device("cuda", 1)`` (printed ``cuda:1``), ``Device("cpu")``.

    ``Device("cuda:1")`` parses the printed form; ``Device("cuda")`` is ``cuda:0``;
    ``Device(d)`` of a Device is the same device (``with fa.Device(d):`` for any ``d`` of
    ``fa.devices()``). The host
    devices of the cpu backend (``FUSEDARRAYS_CPU_DEVICES``) are ``cpu``, ``cpu:1``, ...

    As a context manager it chooses the device of new arrays in this thread:

    >>> import fusedarrays as fa
    >>> with fa.Device("cpu"):
    ...     str(fa.zeros(3).device)
    'cpu'
    """

    __slots__ = ("kind", "index")

    def __init__(self, kind: str | Device, index: int | None = None):
        if isinstance(kind, Device) and index is None:   # Device(d) is d's device, as torch.device
            kind, index = kind.kind, kind.ordinal
        if index is None and isinstance(kind, str) and ":" in kind:
            kind, _, number = kind.partition(":")
            try:
                index = int(number)
            except ValueError:
                raise ValueError(f"Device({kind}:{number!r}): the ordinal after ':' must be an "
                                 "integer, as in 'cuda:1'") from None
        if kind not in KINDS:
            raise ValueError(f"Device({kind!r}): the device kinds are {', '.join(KINDS)} "
                             "(e.g. 'cuda:1', 'cpu')")
        index = 0 if index is None else int(index)
        if index < 0:
            raise ValueError(f"Device({kind!r}, {index}): a device ordinal is 0 or more")
        # host device 0 is written without an ordinal ("cpu"), as the Array API shows it
        self.kind, self.index = kind, None if kind in HOST_KINDS and index == 0 else index

    @property
    def ordinal(self) -> int:
        """The device's number among those of its kind (0 for ``cpu``)."""
        return self.index or 0

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = Device(other)
            except ValueError:
                return False
        return isinstance(other, Device) and (other.kind, other.index) == (self.kind, self.index)

    def __hash__(self) -> int:
        return hash((self.kind, self.index))

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"

    def __enter__(self) -> Device:
        # only the device is kept: the registry (runtime/backend.py, above this module) turns the
        # innermost one into its backend when new arrays are made
        _scope.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        stack = _scope.stack
        if not stack or stack[-1] != self:
            raise RuntimeError(f"the device scope of {self} ended out of order (device scopes "
                               "nest: end the innermost first, in the thread that began it)")
        stack.pop()


class _Scope(threading.local):
    """Per thread: the device scopes entered (``with fa.Device(...)``), innermost last."""

    stack: list = []

    def __init__(self):
        self.stack = []


_scope = _Scope()


def scoped() -> Device | None:
    """This thread's innermost device scope, or None outside every scope."""
    stack = _scope.stack
    return stack[-1] if stack else None


def as_device(value, default_kind: str) -> Device:
    """``value`` as a :class:`Device`: a Device, its printed form, an ordinal of
    ``default_kind`` (``1`` → ``cuda:1`` where the backend is cuda), or an object with ``type``
    and ``index`` (a ``torch.device``)."""
    if isinstance(value, Device):
        return value
    if isinstance(value, str):
        return Device(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return Device(default_kind, value)
    kind = getattr(value, "type", None)
    if isinstance(kind, str):
        return Device(kind, getattr(value, "index", None))
    raise TypeError(f"{value!r} is not a device: pass a fa.Device, a string such as 'cuda:1' "
                    "or 'cpu', or a device ordinal")
