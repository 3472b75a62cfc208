"""An expression graph drawn as SVG by the library itself (no graphviz): the picture in reprs.

Where it sits: under :mod:`display`, reading graph nodes only (it plans, compiles and launches
nothing). The drawing is a layered DAG, the root on top and the leaves at the bottom;
an op shared by several users is drawn once with an edge to each (a DAG, not a tree).

Large graphs stay readable: only the ops nearest the root are drawn, whole levels breadth first
(at most ``max_boxes`` boxes and ``max_depth`` levels). Leaves and scalars get a box per user
(the label names the buffer), so a buffer read all along a deep chain draws no edge across the
picture. The inputs below the last drawn level become *collapsed* boxes naming the op and how
many nodes lie under it; inputs of equal structure (equal ``sid``: the same function of other
params, a repeated part) share one collapsed box marked ``×k``, with an edge from each user.
A 500-node graph draws as a few dozen boxes.
"""

from __future__ import annotations

import html

from ..ir import graph, layout

_BOX_H, _ROW_H, _GAP, _CHAR_W, _PAD = 22, 46, 10, 6.6, 10
# (fill, stroke) per node kind; every kind of ir/graph.py has one (a test walks them)
_COLOURS = {"leaf": ("#dbeafe", "#2563eb"), "scalar": ("#f1f5f9", "#64748b"),
            "op": ("#ffedd5", "#ea580c"), "cast": ("#ede9fe", "#7c3aed"),
            "reduce": ("#dcfce7", "#16a34a"), "random": ("#fce7f3", "#db2777"),
            "gather": ("#ccfbf1", "#0d9488"), "scan": ("#fef9c3", "#ca8a04"),
            "matmul": ("#fee2e2", "#dc2626"),
            "collapsed": ("#fafafa", "#737373")}
_DTYPE_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "bool": "bool"}


def _short(dtype) -> str:
    name = str(dtype)
    return _DTYPE_SHORT.get(name, name.replace("uint", "u").replace("int", "i"))


class _Box:
    __slots__ = ("ident", "kind", "text", "title", "inputs", "layer", "x", "w")

    def __init__(self, ident, kind: str, text: str, title: str):
        self.ident, self.kind, self.text, self.title = ident, kind, text, title
        self.inputs: list = []
        self.layer, self.x, self.w = 0, 0.0, len(text) * _CHAR_W + 2 * _PAD


def _label(node: graph.Node, root_shape: tuple) -> tuple[str, str]:
    """(text in the box, tooltip) of one node. A leaf names its buffer and dtype, and its shape
    where it differs from the result's (a broadcast operand) or ``view`` where it is not the
    buffer read in order (transposed, stepped, reversed)."""
    shape = "×".join(map(str, node.shape)) or "scalar"
    if node.kind == "leaf":
        _, vshape, strides, offset = graph.leaf_view(node)
        extra = (f" {shape}" if node.shape != root_shape else
                 "" if layout.is_contiguous(vshape, strides) else " view")
        return (f"{node.label()} {_short(node.dtype)}{extra}",
                f"{node.label()}: {node.dtype} {shape}, strides {strides}, offset {offset}")
    if node.kind == "scalar":
        return node.label(), f"scalar parameter {node.label()} ({node.dtype})"
    return node.label(), f"{node.label()} → {node.dtype} {shape}"


def _under(node: graph.Node) -> int:
    """Distinct nodes under ``node`` (itself excluded)."""
    seen = {node.serial}
    stack = [node]
    while stack:
        for i in stack.pop().inputs:
            if i.serial not in seen:
                seen.add(i.serial)
                stack.append(i)
    return len(seen) - 1


def _boxes(root: graph.Node, max_boxes: int, max_depth: int) -> list[_Box]:
    """The boxes to draw, root first: ops breadth first up to ``max_boxes`` boxes and
    ``max_depth`` levels, then collapsed boxes. Leaves and scalars get a box per user (their
    label names the buffer), so a leaf read all along a deep chain draws no edge across it."""
    order, seen, level, count = [root], {root.serial}, [root], 1
    for _ in range(max_depth):   # level by level: a level is drawn whole or not at all
        nxt, leaves = [], 0
        for n in level:
            for i in n.inputs:
                if not i.inputs:
                    leaves += 1
                elif i.serial not in seen:
                    seen.add(i.serial)
                    nxt.append(i)
        count += leaves + len(nxt)
        if not nxt or count > max_boxes:
            break
        order += nxt
        level = nxt
    boxes = {n.serial: _Box(n.serial, n.kind, *_label(n, root.shape)) for n in order}
    extra: list[_Box] = []
    collapsed: dict = {}
    for n in order:
        box = boxes[n.serial]
        groups: dict = {}
        for i in n.inputs:
            if i.serial in boxes:
                if boxes[i.serial] not in box.inputs:
                    box.inputs.append(boxes[i.serial])
            elif not i.inputs:
                leaf = _Box((i.serial, n.serial), i.kind, *_label(i, root.shape))
                if all(b.ident != leaf.ident for b in box.inputs):
                    box.inputs.append(leaf)
                    extra.append(leaf)
            else:
                groups.setdefault(i.sid, []).append(i)
        for sid, members in groups.items():
            collapsed.setdefault(sid, {}).update((m.serial, m) for m in members)
            box.inputs.append(sid)
    made = {sid: _collapsed(list(members.values())) for sid, members in collapsed.items()}
    for box in boxes.values():       # each structure collapsed once, an edge from every user
        box.inputs = [made[i] if isinstance(i, int) else i for i in box.inputs]
    return list(boxes.values()) + extra + list(made.values())


def _collapsed(members: list) -> _Box:
    first = members[0]
    under = _under(first) + 1
    times = f" ×{len(members)}" if len(members) > 1 else ""
    return _Box(("c", first.sid), "collapsed", f"{first.label()} … {under} nodes{times}",
                f"{len(members)} input(s) of equal structure, {under} nodes each, not drawn "
                f"({first.label()} → {first.dtype})")


def _layout(boxes: list[_Box]) -> tuple[list[list[_Box]], float]:
    """Layers by longest path from the root (inputs below users); x by the users' centres."""
    for box in boxes:            # boxes are in breadth-first order: users before inputs
        for i in box.inputs:
            i.layer = max(i.layer, box.layer + 1)
    for _ in range(len(boxes)):  # settle layers where a later user pushed a box down
        changed = False
        for box in boxes:
            for i in box.inputs:
                if i.layer <= box.layer:
                    i.layer, changed = box.layer + 1, True
        if not changed:
            break
    layers: list[list[_Box]] = [[] for _ in range(max(b.layer for b in boxes) + 1)]
    for box in boxes:
        layers[box.layer].append(box)
    users: dict = {}
    for box in boxes:
        for i in box.inputs:
            users.setdefault(id(i), []).append(box)
    width = 0.0
    for row in layers:
        for box in row:      # order inputs under the centre of their users
            above = users.get(id(box), [])
            box.x = sum(u.x + u.w / 2 for u in above) / len(above) if above else 0.0
        row.sort(key=lambda b: b.x)
        x = 0.0
        for box in row:
            box.x = x
            x += box.w + _GAP
        width = max(width, x - _GAP)
    for row in layers:       # centre each layer
        used = sum(b.w for b in row) + _GAP * (len(row) - 1)
        for box in row:
            box.x += (width - used) / 2
    return layers, width


def graph_svg(root: graph.Node, max_boxes: int = 40, max_depth: int = 9) -> str:
    """An SVG (text) of ``root``'s graph; every label is escaped."""
    root = root.realized or root
    if not root.inputs:
        return ""
    boxes = _boxes(root, max_boxes, max_depth)
    layers, width = _layout(boxes)
    height = len(layers) * _ROW_H - (_ROW_H - _BOX_H)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 8:.0f}" '
           f'height="{height + 8:.0f}" viewBox="-4 -4 {width + 8:.0f} {height + 8:.0f}" '
           'font-family="monospace" font-size="11" role="img">']

    def y(box: _Box) -> float:
        return box.layer * _ROW_H

    for box in boxes:
        for i in box.inputs:
            x1, y1 = box.x + box.w / 2, y(box) + _BOX_H
            x2, y2 = i.x + i.w / 2, y(i)
            mid = (y1 + y2) / 2
            out.append(f'<path d="M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} '
                       f'{x2:.1f},{y2:.1f}" fill="none" stroke="#9ca3af"/>')
    for box in boxes:
        fill, stroke = _COLOURS[box.kind]
        dash = ' stroke-dasharray="3,2"' if box.kind == "collapsed" else ""
        out.append(f'<g><title>{html.escape(box.title)}</title>'
                   f'<rect x="{box.x:.1f}" y="{y(box):.1f}" width="{box.w:.1f}" '
                   f'height="{_BOX_H}" rx="4" fill="{fill}" stroke="{stroke}"{dash}/>'
                   f'<text x="{box.x + box.w / 2:.1f}" y="{y(box) + 15:.1f}" '
                   f'text-anchor="middle" fill="#111827">{html.escape(box.text)}</text></g>')
    out.append("</svg>")
    return "".join(out)
