"""An op on a node and a Python scalar (``x * 1.5``, ``1.0 - x``), built in one call: the
operator path's commonest case (:mod:`..api.elementwise`), beside :func:`.graph.op_of`, which it
matches node for node (sid, params, count, buffers: ``tests/pure/test_signatures.py``).
"""

from __future__ import annotations

import numpy as np

from .graph import Node, new_scalar
from .native import fastgraph
from .params import SHARE_FROM, append_param
from .sids import _sid, _sids


def op_scalar_python(node: Node, value, dtype: np.dtype, sid: int, attrs: tuple, aid: int,
                     scalar_first: bool = False) -> Node:
    """:func:`op_of` on ``(node, scalar(value, dtype))`` (``scalar_first``: reversed), written
    out for the operator path (``x * 1.5``, ``1.0 - x``): the same node, sid and params.
    ``sid`` is the scalar's (``graph.scalar_sid(dtype)``, which the caller keeps). The scalar is
    made here, so it is no param or input of ``node``: only the op's sid is looked up. The
    Python path; :func:`op_scalar` is built in C where the extension is (:mod:`.native`)."""
    s = new_scalar(value, dtype, sid)
    op = Node()
    op.kind, op.dtype, op.attrs, op.shape = "op", attrs[1][-1], attrs, node.shape
    op._key = op.realized = None
    op.count = node.count + 2
    op.buffers = node.buffers
    pn = node._params
    op.inputs = (s, node) if scalar_first else (node, s)
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
