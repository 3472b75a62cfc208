"""An op on a node and a Python scalar (``x * 1.5``, ``1.0 - x``), built in one call: the
operator path's commonest case (:mod:`..api.elementwise`), beside :func:`.graph.op_of`, which it
matches node for node (sid, params, count, buffers: ``tests/pure/test_signatures.py``).

Equal Python scalars of one dtype are one scalar node (:func:`interned_scalar`), so a text that
writes a constant in several places (Black-Scholes' CDF, four times) binds it once: the sid
says which params are shared, and the planner computes equal subexpressions once
(``compiler/plan.instructions``). Each value is an immutable Python number, so sharing its node
can't change what any graph computes; a ``fa.fuse`` argument's stand-in is never shared
(``graph.scalar`` makes a new node each call).
"""

from __future__ import annotations

import numpy as np

from .graph import Node, new_scalar, scalar_sid
from .native import fastgraph
from .params import SHARE_FROM, append_param
from .sids import _sid, _sids

# dtype's scalar sid → {value: node}; a table is emptied when it reaches INTERN_MAX values (a
# learning rate made new each step would otherwise keep every value it took). Shared with the C
# path (``configure_scalars`` below), so both find the same nodes.
_scalar_nodes: dict[int, dict] = {}
INTERN_MAX = 1024


def interned_scalar(value, dtype: np.dtype, sid: int) -> Node:
    """The scalar node of Python int or float ``value`` as a ``dtype`` parameter (``sid`` its
    scalar sid): one node per value, type and sid while the table keeps it. A float zero is
    never shared (``0.0 == -0.0``), nor a value of another type (``1 == 1.0``)."""
    kind = type(value)
    if kind is not int and (kind is not float or value == 0.0):
        return new_scalar(value, dtype, sid)
    table = _scalar_nodes.get(sid)
    if table is None:
        table = _scalar_nodes[sid] = {}
    found = table.get(value)
    if found is not None and type(found.attrs[1]) is kind:
        return found
    if len(table) >= INTERN_MAX:
        table.clear()
    node = table[value] = new_scalar(value, dtype, sid)
    return node


def number_scalar(value, dtype: np.dtype) -> Node:
    """The scalar parameter of ``dtype`` for a number written in an expression (``x * 2.0``,
    ``np.maximum(x, 0.5)``): equal Python ints or floats share one node
    (:func:`interned_scalar`); anything else (a ``fa.fuse`` argument's stand-in) is new."""
    dtype = np.dtype(dtype)
    return interned_scalar(value, dtype, scalar_sid(dtype))


def op_scalar_python(node: Node, value, dtype: np.dtype, sid: int, attrs: tuple, aid: int,
                     scalar_first: bool = False) -> Node:
    """:func:`op_of` on ``(node, scalar(value, dtype))`` (``scalar_first``: reversed), written
    out for the operator path (``x * 1.5``, ``1.0 - x``): the same node, sid and params.
    ``sid`` is the scalar's (``graph.scalar_sid(dtype)``, which the caller keeps). The scalar is
    interned: where ``node`` already has it as a param, the op shares ``node``'s params (the
    placement in its sid says where), else it is appended. The Python path; :func:`op_scalar` is
    built in C where the extension is (:mod:`.native`)."""
    s = interned_scalar(value, dtype, sid)
    op = Node()
    op.kind, op.dtype, op.attrs, op.shape = "op", attrs[1][-1], attrs, node.shape
    op._key = op.realized = None
    op.buffers = node.buffers
    pn = node._params
    op.inputs = (s, node) if scalar_first else (node, s)
    found = pn.get(s) if pn is not None else None
    if found is not None and found < node._nparams:    # s is one of node's: share them
        op._params, op._nparams, op._open = pn, node._nparams, node._open
        op.count = node.count + (1 if s in node.inputs else 2)
        structure = ((aid, sid, node.sid, ("<", found)) if scalar_first else
                     (aid, node.sid, sid, found))
        op_sid = _sids.get(structure)
        op.sid = op_sid if op_sid is not None else _sid(structure)
        return op
    op.count = node.count + 2
    if pn is None:      # a leaf: two params, in the inputs' order
        op._params, op._nparams, op._open = ({s: 0, node: 1} if scalar_first else
                                             {node: 0, s: 1}), 2, None
    elif node._open is None:   # a small dict, or one handed out: copied (ir/params.py)
        n = node._nparams
        params = op._params = pn.copy()
        params[s] = n
        op._nparams, op._open = n + 1, [True] if n + 1 >= SHARE_FROM else None
    else:
        append_param(op, node, s)
    # a scalar first follows the op's params too (op_of's "<", mirrored)
    structure = ((aid, sid, node.sid, "<" if pn is not None else None) if scalar_first else
                 (aid, node.sid, sid, None))
    sid = _sids.get(structure)
    op.sid = sid if sid is not None else _sid(structure)
    return op


op_scalar = fastgraph.op_scalar if fastgraph is not None else op_scalar_python

if fastgraph is not None:
    fastgraph.configure_scalars(_scalar_nodes, INTERN_MAX)
