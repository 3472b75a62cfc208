"""View arithmetic of a traced function's reads and writes: which elements a view reaches, whether
two views of one buffer can share an element, and a read view expressed through a written one.

Where it sits: under :mod:`trace`, which resolves reads of written versions (:func:`compose`,
:func:`disjoint`) and finds the loads a store of the same program would race (:func:`span`, and
:func:`gathered_span` for a gather, whose loads reach along an axis its source does not view).
Pure: views are ``(shape, strides, offset)`` in elements.
"""

from __future__ import annotations

import math

from ..ir import graph, layout


def span(view) -> tuple[int, int]:
    """Lowest and highest element offsets a ``(shape, strides, offset)`` view reaches."""
    shape, strides, offset = view
    if 0 in shape:
        return 0, -1
    low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0)
    return offset + low, offset + high


def disjoint(a, b) -> bool:
    """True when views ``a`` and ``b`` of one buffer provably share no element."""
    (lo1, hi1), (lo2, hi2) = span(a), span(b)
    if hi1 < lo1 or hi2 < lo2 or hi1 < lo2 or hi2 < lo1:
        return True
    steps = [s for v in (a, b) for n, s in zip(v[0], v[1]) if n > 1]
    g = math.gcd(*steps) if steps else 0
    return g > 1 and (a[2] - b[2]) % g != 0   # interleaved, e.g. x[::2] and x[1::2]


def _digits(d: int, axes: list, strides: tuple, rank: int) -> list | None:
    coords = [0] * rank
    for j in axes:
        q = abs(d) // abs(strides[j]) * (1 if (d >= 0) == (strides[j] > 0) else -1)
        coords[j], d = q, d - q * strides[j]
    return coords if d == 0 else None


def compose(view, target):
    """A view function taking a leaf over ``target``'s index space to ``view``'s, or None.

    Defined when ``target`` addresses each element once and every element ``view`` reads lies in
    ``target`` at coordinates linear in ``view``'s index: then the value written through
    ``target`` is read through ``view`` by re-viewing the written expression's leaves.
    """
    (vshape, vstrides, voffset), (tshape, tstrides, toffset) = view, target
    axes = sorted((j for j, n in enumerate(tshape) if n > 1), key=lambda j: -abs(tstrides[j]))
    if any(tstrides[j] == 0 for j in axes) or any(
            abs(tstrides[a]) < abs(tstrides[b]) * tshape[b] for a, b in zip(axes, axes[1:])):
        return None
    rank = len(tshape)
    base = _digits(voffset - toffset, axes, tstrides, rank)
    steps = [_digits(s, axes, tstrides, rank) if n > 1 else [0] * rank
             for n, s in zip(vshape, vstrides)]
    if base is None or any(s is None for s in steps):
        return None
    if 0 not in vshape:
        for j in range(rank):
            moves = [(n - 1) * s[j] for n, s in zip(vshape, steps)]
            low = base[j] + sum(m for m in moves if m < 0)
            high = base[j] + sum(m for m in moves if m > 0)
            if low < 0 or high > tshape[j] - 1:
                return None

    def fn(v):
        _, strides, offset = layout.broadcast_to(v, tshape)
        return (vshape, tuple(sum(c * s for c, s in zip(st, strides)) for st in steps),
                offset + sum(c * s for c, s in zip(base, strides)))
    return fn


def gathered_span(leaf: graph.Node, gathers_of: list) -> tuple[int, int]:
    """:func:`span` of ``leaf``'s view widened by what gathers through it reach: a gather's
    source views its array without the gathered axis, and ``gathers_of`` holds the ``(extent,
    stride)`` of each gather that loads through it (at ``index * stride`` from the source's
    own element)."""
    _, shape, strides, offset = graph.leaf_view(leaf)
    low, high = span((shape, strides, offset))
    reach = [(extent - 1) * stride for extent, stride in gathers_of]
    return low + min(0, *reach), high + max(0, *reach)
