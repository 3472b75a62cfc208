"""A gather of an expression: ``take(f(a, b), idx)`` as ``f(take(a, idx), take(b, idx))``.

Where it sits: beside :mod:`.graph`, under ``api/indexing.py`` and ``api/scatter.py``. A gather
node (``graph.gather``) loads a leaf's buffer through an index; taking elements of a pending
elementwise expression along its first axis therefore needs no evaluation of the expression:
each leaf is gathered instead (a leaf constant along that axis is only re-viewed), scalars stay,
and a gather inside the expression gathers its own index (the index of a gather may be any
integer expression, a gather included). So ``x[idx] + v`` written back through an inverse index
(``x[idx] += v``) and ``fa.take(x * 2, idx)`` stay one kernel. Draws and reductions can't be
re-indexed this way (a draw's stream indices come from the kernel's element order, a reduction
is cut out first): :func:`gather_expression` raises :class:`layout.NotAView` for them, and the
caller computes the expression first.

The index is any integer node, a pending reduction or scan included (``t[x.argmax(axis=1)]``:
the planner cuts it into a temporary before the gather reads it, ``compiler/cuts.py``). Gathering
along the first axis of an array of more axes reads the index over the result's leading axes,
``K + (1,) * len(rest)``: :func:`with_unit_axes` gives that view of any index, passing it under
reductions and scans (which a plain view, ``graph.transform``, can't enter).
"""

from __future__ import annotations

from . import graph, layout
from .reductions import reduction_node
from .scans import scan_node


def gather_expression(node: graph.Node, index: graph.Node, k: int,
                      replace: dict | None = None, site: graph.Node | None = None) -> graph.Node:
    """``node`` (shape ``(E,) + rest``) gathered along its first axis at ``index`` (an integer
    node of shape ``K + (1,) * len(rest)`` with ``len(K) == k``, or varying along ``rest`` too,
    ``K + rest``, as ``take_along_axis``'s; negative values count from the end, as
    ``fa.take``'s): a node of shape ``K + rest``.

    ``replace`` maps node serials (nodes of ``node``'s graph, of its shape) to the nodes that
    stand for their gathered values (``api/scatter.py``: a selection of the array written back,
    which reads the written element itself). ``site``: the leaves' gathers are flagged
    (``graph.gather``: the index values were not checked on the host). Raises
    :class:`layout.NotAView` where the graph holds a draw or a reduction, or a gather whose
    source varies along the first axis.
    """
    shape = node.shape
    if not shape:
        raise ValueError("gather_expression: a 0-d expression has no axis to gather")
    extent, rest = shape[0], shape[1:]
    out_shape = tuple(index.shape[:k]) + rest
    replace = replace or {}
    memo: dict[int, graph.Node] = {}

    def leaf(n: graph.Node) -> graph.Node:
        buffer, lshape, lstrides, offset = graph.leaf_view(n)
        strides = layout.broadcast_strides(lshape, lstrides, shape)
        if strides[0] == 0 or extent == 1:       # constant along the gathered axis
            return graph.leaf(buffer, n.dtype, out_shape, (0,) * k + strides[1:], offset)
        source = graph.leaf(buffer, n.dtype, (1,) * k + rest, (0,) * k + strides[1:], offset)
        return graph.gather(source, index, extent, strides[0], site)

    def visit(n: graph.Node) -> graph.Node:
        n = n.realized if n.realized is not None else n
        found = memo.get(n.serial)
        if found is not None:
            return found
        if n.serial in replace:
            result = replace[n.serial]
        elif n.kind == "scalar":
            result = n
        elif n.kind == "leaf":
            result = leaf(n)
        elif n.kind == "gather":
            source = visit(n.inputs[0])
            if source.kind != "leaf":
                raise layout.NotAView("a gather whose source varies along the gathered axis")
            result = graph.gather(source, visit(n.inputs[1]), *n.attrs,
                                  *(visit(i) for i in n.inputs[2:]))
        elif n.kind == "cast":
            result = graph.cast(visit(n.inputs[0]), n.dtype)
        elif n.kind == "op":
            result = graph.op(n.attrs[0], tuple(visit(i) for i in n.inputs), n.attrs[1])
        else:
            raise layout.NotAView(f"a gather of a pending {n.label()}")
        memo[n.serial] = result
        return result

    return visit(node)



def with_unit_axes(node: graph.Node, m: int) -> graph.Node:
    """``node`` (shape ``K``) viewed as ``K + (1,) * m``. Appending unit axes keeps NumPy's
    right-aligned broadcasting of every input against its consumer, so the view passes under
    elementwise ops, gathers and draws to the leaves, and under a reduction or a scan to its
    input (its axes, counted from the front, unchanged): ``argmax(x, axis=1)`` viewed so is
    ``argmax(x viewed so, axis=1)``, still pending. Raises :class:`layout.NotAView` for a
    product (its matrix axes are its last two); the caller computes the index first."""
    def append(view: tuple) -> tuple:
        return layout.reshape(view, view[0] + (1,) * m)

    if not m:
        return node
    memo: dict[int, graph.Node] = {}

    def visit(n: graph.Node) -> graph.Node:
        n = n.realized if n.realized is not None else n
        found = memo.get(n.serial)
        if found is not None:
            return found
        if n.kind == "reduce":
            name, axes, keepdims = n.attrs
            result = reduction_node(name, visit(n.inputs[0]), axes, keepdims, n.dtype)
        elif n.kind == "scan":
            name, axis, initial = n.attrs
            result = scan_node(name, visit(n.inputs[0]), axis, initial, n.dtype)
        elif n.kind in ("op", "cast", "gather") and not _uncut(n):
            inputs = tuple(visit(i) for i in n.inputs)
            result = (graph.cast(inputs[0], n.dtype) if n.kind == "cast"
                      else graph.op(n.attrs[0], inputs, n.attrs[1]) if n.kind == "op"
                      else graph.gather(inputs[0], inputs[1], *n.attrs, *inputs[2:]))
        else:       # a leaf, a scalar, a draw, or an expression of them: a plain view
            result = graph.transform(n, append)
        memo[n.serial] = result
        return result

    return visit(node)


def _uncut(n: graph.Node) -> bool:
    """Whether ``n``'s graph holds no reduction, scan or product (a plain view passes)."""
    return not any(i.kind in ("reduce", "scan", "matmul") for i in graph.walk([n]))
