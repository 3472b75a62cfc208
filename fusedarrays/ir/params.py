"""Params: a node's leaves and scalars in canonical order, and where an input's sit among them.

A node's ``params`` is a dict (param node → position): its first input's params, then each next
input's new ones, in order (a leaf or scalar is its own only param: ``params`` None), but for
a binary op on a leaf or scalar and then an op (``1.0 - x``): the op's params, then the leaf or
scalar (:func:`mirror_param`). Where an
input's params sit among the node's (its *placement*) is part of the node's sid, so nodes with
equal sids bind equal positions to the same roles (``graph.py``).

A node built on another by adding one new scalar (``a * 1.5``) would copy the other's dict:
O(params) per op, O(n²) for a chain ``a = a * s + t``. Instead nodes share one dict that only
ever grows at its end (a new leaf is still copied in: see :func:`append_param`). A node keeps
the dict and its own length (``_params``, ``_nparams``): its params are the dict's first
``_nparams`` entries. The right to append to the dict at its present length is a token, a
one-element list that the nodes of that length share (``_open``); taking it is one
``list.pop``, atomic under the GIL, so of two branches built on one node (in two threads, too)
one appends in place and the other copies its part. Handing a node's
params out (``Node.params``, :func:`own_params`) takes the token too, or copies: a dict handed
out is exactly the node's params and never changes afterwards.
"""

from __future__ import annotations

import itertools

from .native import fastgraph


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
    return merge_node(first, pa, other, pb)


def merge_node(first, pa: dict | None, other, pb: dict) -> tuple[dict, object]:
    """:func:`merge_params` where ``other`` has params: ``pa`` and ``pb`` are the two nodes'
    ``params`` (``graph.op_of`` reads them without the property's call)."""
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


def roots_params_python(roots: list) -> tuple[dict, tuple]:
    """The params of several roots evaluated together, merged as an op's inputs are, and the
    structure of the whole (the roots' sids and placements) for the evaluation's key. In C
    where the extension is built (``fastgraph.roots_params``, the same result)."""
    params = roots[0].params if roots[0].params is not None else {roots[0]: 0}
    structure = [roots[0].sid]
    for root in roots[1:]:
        holder = Holder(params)
        params, placement = merge_params(holder, root)
        structure += [root.sid, placement]
    return params, tuple(structure)


def roots_params(roots) -> tuple[dict, tuple]:
    """:func:`roots_params_python` in C where the extension is built."""
    return fastgraph.roots_params(list(roots))


if fastgraph is None:
    roots_params = roots_params_python  # noqa: F811


# Below this many params a copy costs less than the token (a list made per node, one pop):
# Black-Scholes' graph (chains of scalar ops on 6-20 params) builds ~6 % faster from 8 than from
# 16, and no faster from 4 (issue 36, measured here with the C path).
SHARE_FROM = 8


def own_params(node) -> dict:
    """``node``'s params as a dict that nothing appends to any more (``Node.params``): the shared
    dict itself where this node takes the right to append to it, else a copy of its first
    ``node._nparams`` entries; kept. ``node`` has params (``_params`` is not None)."""
    params, token = node._params, node._open
    if token is not None:       # not handed out before: a node without a token never grows
        node._open = None
        if not take(token):     # a node built on it has appended, or may be appending
            params = node._params = dict(itertools.islice(params.items(), node._nparams))
    return params


def append_param(into, node, new) -> None:
    """Give the new node ``into`` the params of ``node`` (it has some) and then ``new`` (none of
    them): ``node``'s dict, appended in place where ``new`` is a scalar and ``node`` takes the
    right to (module docstring), else a copy."""
    params, n = node._params, node._nparams
    # A leaf is never appended in place: the shared dict would keep its buffer alive while any
    # node holding the dict lives (a scalar holds nothing big).
    if new.buffers or not take(node._open):
        params = params.copy() if len(params) == n else dict(itertools.islice(params.items(), n))
    params[new] = n
    into._params, into._nparams = params, n + 1
    into._open = [True] if n + 1 >= SHARE_FROM else None


def mirror_param(into, node, new):
    """Give the new node ``into`` = ``op(new, node)`` (``new`` a leaf or scalar, ``node`` an op:
    ``1.0 - x``) the params of ``node`` and then ``new``, where the canonical order would put
    ``new`` first: appending one param costs what ``x - 1.0`` costs, where copying ``node``'s
    dict behind it cost O(params). Returns the placement: ``"<"`` (appended) or ``("<", k)``
    (``new`` is ``node``'s param ``k``), so the sid tells the mirrored order apart."""
    params, n = node._params, node._nparams
    found = params.get(new)
    if found is not None and found < n:     # new is one of node's: share them
        into._params, into._nparams, into._open = params, n, node._open
        return ("<", found)
    if node._open is None:      # a small dict, or one handed out: copied
        params = into._params = params.copy()
        params[new] = n
        into._nparams, into._open = n + 1, [True] if n + 1 >= SHARE_FROM else None
    else:
        append_param(into, node, new)
    return "<"


def take(token: list | None) -> bool:
    """Take the right to append that ``token`` stands for; False where it is gone (taken, or
    None: never had)."""
    if not token:
        return False
    try:
        token.pop()     # atomic: of two threads that got here, one takes it
    except IndexError:
        return False
    return True


class Holder:
    """Stands in for a node whose params are ``params`` (merging several roots' params)."""

    __slots__ = ("params",)

    def __init__(self, params: dict):
        self.params = params
