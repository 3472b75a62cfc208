"""A node's structural sha256 (``Node.key``): text that names a node for display, computed when
asked and kept on the node (``_key``). Never on the hot path: evaluation keys by sids
(:mod:`.graph`). Reads nodes' attributes only, so :mod:`.graph` imports it.
"""

from __future__ import annotations

import hashlib


def text_attrs(node) -> tuple:
    """The attributes a node's sha256 key covers, as text-stable values."""
    if node.kind == "leaf":
        return (node.attrs[0].uid, node.attrs[1])
    if node.kind == "scalar":
        return (node.attrs[0],)
    if node.kind == "op":
        return (node.attrs[0], tuple(d.str for d in node.attrs[1]))
    if node.kind in ("random", "gather", "reduce", "scan", "matmul"):
        return node.attrs
    return ()


def sha256_key(node) -> str:
    """Merkle sha256 of ``node``: inputs first, iteratively (a deep chain must not recurse)."""
    stack = [node]
    while stack:
        n = stack[-1]
        pending = [i for i in n.inputs if i._key is None]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        if n._key is None:
            n._key = digest(n)
    return node._key


def digest(node) -> str:
    """The sha256 of ``node``'s text, its inputs' keys known."""
    text = repr((node.kind, node.dtype.str, node.shape, text_attrs(node),
                 tuple(i._key for i in node.inputs)))
    return hashlib.sha256(text.encode()).hexdigest()
