"""``fa.random`` draws inside ``fa.fuse``: a draw's key is a value each call takes from the
generator, once per call, before its launches.

Where it sits: beside :mod:`trace`, :mod:`function` and :mod:`foreach`. A draw's key can't be a
constant of the trace: every call would replay the tracing call's numbers. While tracing,
``Generator._draw`` asks the tracer for a ``host_scalar`` instead: a traced scalar read as
the call's value at a position after its arguments, and the generator's bound ``_next_key``
recorded. Each call then runs those functions once, in trace order (:func:`host_values`), so
the keys are the ones lazy code making the same draws in the same order takes, and every launch
of the call reads the same key; the packers read them as any scalar argument. ``foreach``
draws at each element's index in the concatenation of every tuple in list order
(:func:`draw_offsets`: each tensor's start, after its group's ``meta``), so ``f.foreach(ws)``
draws what ``f`` draws on the concatenation of ``ws``, whatever the dtype groups. Inside
``fa.capture`` a call raises: a replay would reuse the captured call's key (the key is a host
value; keeping it on the device, advanced by a launch, is not done).
"""

from __future__ import annotations

import numpy as np

from ..errors import CaptureError, UnsupportedOperationError
from ..ir import layout
from ..runtime.capture import capturing


def host_values(values: list, hosts: tuple, name: str) -> list:
    """The call's ``values`` followed by each host function's (a draw's key)."""
    if capturing[0] is not None:
        raise CaptureError(
            f"fuse: {name} draws random numbers (fa.random) and is called inside "
            f"{capturing[0].what}: a replay would reuse this call's numbers, as the draw's key "
            "is a host value; draw outside the captured step (pass the array in), or run the "
            "step without capturing it")
    return [*values, *(fn() for fn in hosts)]


def group_values(groups: list, values: list, name: str) -> list:
    """A foreach call's values with its host values, taken once for all its dtype groups."""
    hosts = groups[0].entry.hosts if groups else ()
    if not hosts:
        return values
    if any(g.entry.hosts != hosts for g in groups):
        raise UnsupportedOperationError(
            f"foreach: the dtype groups of {name} draw from different generators or a "
            "different number of times; give the tensors one dtype")
    return host_values(values, hosts, name)


def draw_offsets(groups: list, column: list) -> None:
    """Where a group's function draws, each of its tensors' start in the concatenation of
    every tuple in list order, after its ``meta`` (``column``: the first list's leaves)."""
    if not any(g.entry.draws and g.live for g in groups):
        return
    starts = np.concatenate([[0], np.cumsum([layout.size_of(n.shape) for n in column])])
    for g in groups:
        if g.entry.draws and g.live:
            g.meta = np.concatenate([g.meta, starts[[g.members[k] for k in g.live]]]
                                    ).astype(np.int64)


__all__ = ["draw_offsets", "group_values", "host_values"]
