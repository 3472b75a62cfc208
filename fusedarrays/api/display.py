"""What people see of an array: ``repr`` and ``_repr_html_``; ``fa.explain`` lives in explain.py.

Cheap, safe and honest: a repr never evaluates, compiles or launches. A pending array shows its
state, dtype, shape and a short graph label (HTML: a table and an SVG of the graph drawn by
:mod:`graphsvg`); an array holding memory shows its values summarised as NumPy summarises them
(``...`` past ``np.get_printoptions()["threshold"]`` elements), read from the buffer by copies of
the elements shown only (a strided or huge view is never copied whole, and no copy kernel runs).
HTML escapes everything it shows.
"""

from __future__ import annotations

import html

import numpy as np

from ..ir import graph, layout
from ..runtime import realize
from . import explain as _explain
from .array import ndarray
from .graphsvg import graph_svg

explain = _explain.explain          # fa.explain (its home is explain.py)
Explanation = _explain.Explanation

_LABEL_NODES = 12
# Shown elements closer than this (in elements) are read in one copy: a copy costs microseconds,
# so reading a few hundred elements more is cheaper than another copy.
_RUN_GAP = 256
_HTML_LINEWIDTH = 100


def graph_label(node: graph.Node, budget: list[int] | None = None) -> str:
    """``add(mul(buffer3, 2.0), buffer4)`` — cut to a dozen nodes."""
    budget = budget if budget is not None else [_LABEL_NODES]
    node = node.realized or node
    budget[0] -= 1
    if budget[0] < 0:
        return "…"
    if node.kind in ("leaf", "scalar"):
        return node.label()
    return f"{node.label()}({', '.join(graph_label(i, budget) for i in node.inputs)})"


def shown_values(node: graph.Node) -> tuple[np.ndarray, bool]:
    """``(values, summarised)``: a leaf's values as NumPy prints them. Summarised, each axis
    longer than ``2 * edgeitems`` keeps its edges around one filler element (which NumPy's
    summary drops), so printing it with ``threshold=0`` is NumPy's print of the whole array."""
    buffer, shape, strides, offset = graph.leaf_view(node)
    options = np.get_printoptions()
    edge = options["edgeitems"]
    summarised = layout.size_of(shape) > options["threshold"]
    index = [np.arange(d) if not summarised or d <= 2 * edge else
             np.r_[0:edge, edge - 1, d - edge:d] for d in shape]
    where = np.full([len(i) for i in index], offset, dtype=np.int64)
    for axis, (i, stride) in enumerate(zip(index, strides)):
        where = where + (i * stride).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    if where.size == 0:
        return np.empty(shape, node.dtype), False
    flat = where.reshape(-1)
    wanted = np.unique(flat)
    # Runs of wanted elements no further apart than _RUN_GAP: one device-to-host copy each.
    breaks = np.flatnonzero(np.diff(wanted) > _RUN_GAP) + 1
    starts = np.r_[wanted[:1], wanted[breaks]]
    ends = np.r_[wanted[breaks - 1], wanted[-1:]] + 1
    found = np.empty(wanted.size, node.dtype)
    for lo, hi in zip(starts.tolist(), ends.tolist()):
        chunk = buffer.backend.to_host(buffer.storage, node.dtype, hi - lo, lo)
        sel = (wanted >= lo) & (wanted < hi)
        found[sel] = chunk[wanted[sel] - lo]
    values = found[np.searchsorted(wanted, flat)].reshape(where.shape)
    return values, summarised


def values_text(node: graph.Node, prefix: str, linewidth: int | None = None) -> str:
    values, summarised = shown_values(node)
    extra = {"threshold": 0} if summarised else {}
    if linewidth is not None:
        extra["max_line_width"] = linewidth
    return np.array2string(values, separator=", ", prefix=prefix, **extra)


def _backend_name(node: graph.Node) -> tuple[str, str]:
    for buffer in node.buffers:
        backend = buffer.backend
        if backend is None:
            break
        return backend.name, backend.device_key
    return "-", "-"


def array_repr(a) -> str:
    node = a._resolved()
    if node.is_leaf:
        buffer = graph.leaf_view(node)[0]
        if buffer.traced:   # fa.fuse's placeholder: no values yet
            values = "traced argument, "
        else:
            values = values_text(node, "fa.ndarray(") + ", "
        return f"fa.ndarray({values}dtype={a.dtype}, shape={a.shape}, on {buffer.backend.name})"
    return (f"fa.ndarray(pending {graph_label(node)}, dtype={a.dtype}, shape={a.shape}, "
            f"{graph.count_nodes(node)} nodes)")


def _bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


_STYLE = ("<style>.fa-repr{display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap}"
          ".fa-repr table{border-collapse:collapse;font-size:12px}"
          ".fa-repr th{text-align:left!important;padding:2px 10px 2px 0;color:#555;"
          "font-weight:normal}"
          ".fa-repr td{text-align:left!important;padding:2px 0;font-family:monospace}"
          ".fa-repr pre{margin:0;font-size:12px}</style>")


def array_table(a) -> list[tuple[str, str]]:
    """The rows of the HTML repr's table, as ``(name, value)`` text."""
    node = a._resolved()
    backend, device = _backend_name(node)
    rows = [("shape", str(a.shape)), ("dtype", str(a.dtype)),
            ("bytes", f"{_bytes(a.nbytes)} ({a.nbytes:,})"), ("backend", backend),
            ("device", device)]
    if node.is_leaf:
        traced = graph.leaf_view(node)[0].traced
        rows += [("state", "traced argument" if traced else "computed"), ("kernels", "0")]
    else:
        n = graph.count_nodes(node)
        ready = "yes, in this process" if realize.evaluated_before(node) else "not in this process"
        k = _explain.kernels_of(node)
        kernels = "1 fused kernel, 1 launch" if k == 1 else f"{k} kernels, {k} launches"
        rows += [("state", "pending"), ("nodes", f"{n} distinct"), ("kernels", kernels),
                 ("compiled", ready)]
    return rows


def array_html(a) -> str:
    node = a._resolved()
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in array_table(a))
    if not node.is_leaf:
        right = graph_svg(node)
    elif graph.leaf_view(node)[0].traced:
        right = ""
    else:
        # a notebook has room for more than NumPy's 75 columns beside the table: a summarised
        # row of six values then fits on one line instead of wrapping
        width = max(np.get_printoptions()["linewidth"], _HTML_LINEWIDTH)
        right = (f'<pre style="{_explain.PRE_STYLE}">'
                 f"{html.escape(values_text(node, '', width))}</pre>")
    title = "pending fa.ndarray" if not node.is_leaf else "fa.ndarray"
    return (f'{_STYLE}<div class="fa-repr"><table><caption style="text-align:left!important;'
            f'font-weight:bold;font-size:12px">{title}</caption>{rows}</table>'
            f"<div style=\"overflow-x:auto;max-width:100%\">{right}</div></div>")


# The array layer sits below this one, so the reprs are installed from here.
ndarray.__repr__ = array_repr
ndarray._repr_html_ = array_html
