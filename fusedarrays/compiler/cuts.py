"""A graph rewritten over the temporaries of the nodes the planner cut.

Pure; beside ``compiler/planner.py``, whose planner cuts a graph at its reductions, scans and
products (``CUT_AT``) and computes each into a temporary. What reads a cut node's result is
rebuilt with the temporary's leaf in its place (:func:`rebuild`): elementwise ops and casts, and
also draws and gathers. A gather's index may be any integer expression, and so any pending node:
``t[x.argmax(axis=1)]``, ``fa.take(t, x.sum(axis=1).astype(int))``, ``t[fa.cumsum(mask) - 1]``,
a gather indexed by a product or by another gather. The index is cut like any other input and
the gather, rebuilt over the cut index, is placed by the elementwise kernel after the cuts (the
only planner that places gathers and draws: ``compiler/plan.py``).

A cut node's own input must not hold a draw or a gather, which index by the kernel's element
order (a reduction's walk is not the elementwise one): :func:`holds_placed` says where one does,
and the planner computes that input first (``api/reductions.py`` and ``api/scans.py`` do so
already before they make the node).
"""

from __future__ import annotations

from ..ir import graph


def rebuild(node: graph.Node, subst: dict) -> graph.Node:
    """``node``'s graph with each reduction, scan and product replaced by ``subst[its
    serial]`` (a leaf). Raises ``ValueError`` where a node the planner cuts was not cut."""
    memo: dict[int, graph.Node] = {}

    def visit(n: graph.Node) -> graph.Node:
        found = subst.get(n.serial) or memo.get(n.serial)
        if found is not None:
            return found
        if n.kind in ("leaf", "scalar", "random"):     # a draw's inputs are scalars
            return n
        inputs = [visit(i) for i in n.inputs]
        if n.kind == "cast":
            result = graph.cast(inputs[0], n.dtype)
        elif n.kind == "op":
            result = graph.op(n.attrs[0], tuple(inputs), n.attrs[1])
        elif n.kind == "gather":     # its index (and the index's own gathers) over the cuts
            result = graph.gather(inputs[0], inputs[1], *n.attrs, *inputs[2:])
        else:
            raise ValueError(f"{n.label()} was not cut before its consumer")
        memo[n.serial] = result
        return result

    return visit(node)


def holds_placed(node: graph.Node) -> bool:
    """Whether ``node``'s graph (above its cuts: a leaf ends it) holds a draw or a gather."""
    return any(n.kind in ("random", "gather") for n in graph.walk([node]))


__all__ = ["holds_placed", "rebuild"]
