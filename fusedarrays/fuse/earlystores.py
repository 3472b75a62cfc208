"""Stores a foreach's first launch makes: where a function reduces across its lists or per tensor
(``fa.global_norm``, ``fa.tensor_norm``), the writes that don't need the reduced value are made
by the launch that computes the reductions' partials, so the last launch reads their results
instead of recomputing them from their inputs.

Where it sits: between :mod:`foreach` (which traces, and hands :meth:`Tracer.program
<.trace.Tracer.program>` :meth:`Early.rewrite`) and :mod:`across` (whose
:class:`~..compiler.foreach_plan.AcrossPlan` then also stores). Why: LAMB's step
``m = b1 m + (1 - b1) g``, ``v = ...``, ``u = m̂ / (√v̂ + eps) + wd p``, ``p -= lr ‖p‖/‖u‖ u``
needs the norms before it writes ``p``. With the first launch only reducing, the step reads
``p, g, m, v`` twice (16 + 28 = 44 bytes per float32 parameter against the 28-byte floor); with
``m`` and ``v`` stored by the first launch, it reads ``p, g, m, v`` and writes ``m, v`` (24),
then reads ``p, m, v`` and writes ``p`` (16): 40 bytes, 1.43x the floor, the least two passes
over memory move without a temporary (storing ``u`` instead moves the same 40).

A store moves (:func:`split`) where its value reads no reduced value, no random draw (kept in
the launch whose positions they are drawn at), has the written array's dtype (its stored value
is then the value itself), reads only arrays the first launch reads already (so that launch
reads nothing new), and where, once the last launch reads the written array for that value,
no other value of it reads the array's old contents. Elsewhere every store stays.
"""

from __future__ import annotations

from .. import compiler
from ..ir import graph

_FOLDED = ("global", "tensor")


def _roots(node: graph.Node) -> set:
    """The argument roots a value reads."""
    return {n.attrs[0].index for n in graph.walk([node])
            if n.kind == "leaf" and getattr(n.attrs[0], "role", None) == "arg"}


def _movable(node: graph.Node, target: tuple, read: set) -> bool:
    buffer, dtype = target[0], target[1]
    if getattr(buffer, "role", None) != "arg" or node.dtype != dtype:
        return False
    for n in graph.walk([node]):
        if n.kind == "random" or (n.kind == "leaf"
                                  and getattr(n.attrs[0], "role", None) in _FOLDED):
            return False
    return _roots(node) <= read


def split(stores: list, found: list) -> tuple[list, list]:
    """``(early, rest)``: the ``(node, target)`` stores the first launch makes, and ``stores``
    (``(stage, node, target)``, one launch's) left for the last, each reading a moved array's
    new value where it read the moved value. ``found``: the reductions' resolved inputs."""
    read = set().union(*(_roots(node) for node in found)) if found else set()
    moving = {t[0].index: (node, t) for _, node, t in stores if _movable(node, t, read)}
    while moving:
        kept = [(node, t) for _, node, t in stores
                if t[0].role != "arg" or t[0].index not in moving]
        # a moved array's old contents, read by what stays: it can't be overwritten early
        stale = set()
        for node, _ in kept:
            stale |= _old_reads(node, {n.serial for n, _ in moving.values()}, moving)
        if not stale:
            break
        for r in stale:
            del moving[r]
    subst = {node.serial: graph.leaf(t[0], t[1], *t[2:]) for node, t in moving.values()}
    rest = [(stage, compiler.rebuild(node, subst), t) for stage, node, t in stores
            if t[0].role != "arg" or t[0].index not in moving]
    return [moving[r] for r in sorted(moving)], rest


def _old_reads(node: graph.Node, moved: set, roots) -> set:
    """The ``roots`` whose contents ``node`` reads other than through the ``moved`` values
    (by serial)."""
    found, stack, seen = set(), [node], set()
    while stack:
        n = stack.pop()
        if n.serial in seen or n.serial in moved:
            continue
        seen.add(n.serial)
        if n.kind == "leaf" and getattr(n.attrs[0], "role", None) == "arg" \
                and n.attrs[0].index in roots:
            found.add(n.attrs[0].index)
        stack.extend(n.inputs)
    return found


class Early:
    """A foreach trace's moved stores: :meth:`rewrite` for ``Tracer.program``; ``stores``
    after it, the ``(node, target)`` of each write the first launch makes."""

    def __init__(self, found: list):
        self.found, self.stores = found, []

    def rewrite(self, stores: list) -> list:
        if not self.found:
            return stores
        self.stores, rest = split(stores, self.found)
        return rest


__all__ = ["Early", "split"]
