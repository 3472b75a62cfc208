"""Params: a node's leaves and scalars in canonical order, and where an input's sit among them.

A node's ``params`` is a dict (param node → position): its first input's params, then each next
input's new ones, in order (a leaf or scalar is its own only param: ``params`` None). Where an
input's params sit among the node's (its *placement*) is part of the node's sid, so nodes with
equal sids bind equal positions to the same roles (``graph.py``).
"""

from __future__ import annotations


def merge_params(first, other) -> tuple[dict, object]:
    """``(params, placement)`` of a node over ``first`` and ``other``: ``first``'s params, then
    ``other``'s new ones; ``placement`` says where ``other``'s params sit (None: right after
    ``first``'s, in order; an int: ``other`` is a param, at that position; a tuple: each of its
    params' positions; ``"="``: ``other`` is ``first``)."""
    pa, pb = first.params, other.params
    if pb is None:                      # a leaf or scalar: most ops' second operand
        if pa is None:
            if first is other:
                return {first: 0}, "="
            return {first: 0, other: 1}, None
        found = pa.get(other)
        if found is not None:
            return pa, found
        params = pa.copy()
        params[other] = len(pa)
        return params, None
    if first is other:
        return pa, "="
    if pa is None:
        if first not in pb:
            params = {first: 0}
            params.update(zip(pb, range(1, len(pb) + 1)))
            return params, None
        params = {first: 0}
    elif pa.keys().isdisjoint(pb):
        params = pa.copy()
        params.update(zip(pb, range(len(pa), len(pa) + len(pb))))
        return params, None
    else:
        params = pa.copy()
    for p in pb:
        if p not in params:
            params[p] = len(params)
    return params, tuple(map(params.__getitem__, pb))


def roots_params(roots: list) -> tuple[dict, tuple]:
    """The params of several roots evaluated together, merged as an op's inputs are, and the
    structure of the whole (the roots' sids and placements) for the evaluation's key."""
    params = roots[0].params if roots[0].params is not None else {roots[0]: 0}
    structure = [roots[0].sid]
    for root in roots[1:]:
        holder = Holder(params)
        params, placement = merge_params(holder, root)
        structure += [root.sid, placement]
    return params, tuple(structure)


class Holder:
    """Stands in for a node whose params are ``params`` (merging several roots' params)."""

    __slots__ = ("params",)

    def __init__(self, params: dict):
        self.params = params
