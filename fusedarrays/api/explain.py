"""``fa.explain(x)``: the kernel an array's evaluation runs, as text and as HTML.

Where it sits: beside :mod:`display`, over the planner and the code generator (pure) and the
runtime's records (why a kernel compiled). It plans the kernel (a graph with reductions: the
kernels the planner cuts it into, and why) and renders its source; it compiles nothing
(``.ptx`` compiles PTX for an arch on request) and launches nothing. The HTML shows the kernels,
each kernel's schedule, operand layout classes, vector and index width, scalar parameters, key
parts, why it compiled (the parts that differ from its nearest family member) and the generated
source, highlighted by Pygments where it is installed.
"""

from __future__ import annotations

import html

from ..compiler import codegen
from ..compiler.plan import KernelPlan, plan_kernel
from ..compiler.reduction import ReducePlan, has_reduction, plan_program
from ..compiler.reduction_codegen import render_plan
from ..compiler.rowfusion import RowPlan
from ..compiler.scan import ScanPlan
from ..ir import graph, layout
from ..runtime import realize, records
from .array import _backend_of

_SCHEDULES = {
    "flat": "flat: one grid-stride loop over the collapsed elements",
    "rows": "rows: a 2-D grid over rows, no division per element",
    "tiled": "tiled: transposed operands staged through shared-memory tiles",
    "nd": "nd: coordinates by division per element",
}
_CLASSES = {"C": "contiguous", "B": "broadcast along the walk", "T": "transposed (tiled)",
            "S": "strided"}


class _Placeholder:
    """Stands in for an output buffer when explaining: nothing is allocated."""

    uid = 0
    backend = None


class Explanation:
    """The kernel an array's evaluation runs: plan, source, key parts, and why it compiled."""

    def __init__(self, plan: KernelPlan, target: str, arch: str | None, note: str = ""):
        self.plan = plan
        self.note = note      # what the explained array is, where that needs saying
        self.target = target
        self.source = codegen.render_kernel(plan, target)
        self.arch = arch
        info = records.compiled_info(plan.key)
        # Why it compiled (or was loaded), else what a compile now would say.
        self.compiled = info is not None
        self.why = info["why"] if info else (
            f"not compiled in this process yet; it would be: {records.why_compile(plan)}")
        self._ptx: str | None = None

    @property
    def key(self) -> str:
        return self.plan.key

    @property
    def vector_width(self) -> int:
        return self.plan.vector_width

    @property
    def ptx(self) -> str:
        """PTX for ``arch`` (default sm_90), compiled without a GPU."""
        if self._ptx is None:
            from ..compiler import devicelib
            from ..runtime.backend import arch_compiler
            self._ptx, _ = arch_compiler().ptx(
                codegen.render_kernel(self.plan, "cuda"), self.plan.name,
                self.plan.param_types(), self.arch or "sm_90", devicelib.helpers())
        return self._ptx

    def operands(self) -> list[tuple[str, str, str, str]]:
        """Per operand: ``(name, dtype, layout class, what the class means)``."""
        return [(f"{'out' if o.output else 'in'}{k}", str(o.dtype), o.layout,
                 _CLASSES.get(o.layout, o.layout)) for k, o in enumerate(self.plan.operands)]

    def __str__(self) -> str:
        p = self.plan
        lines = [f"kernel {p.name}: shape {p.shape} → dims {p.dims}, schedule {p.schedule}, "
                 f"vector width {p.vector_width}, index width {p.index_width}",
                 "inputs/outputs: " + ", ".join(f"{n} {dt} {c}" for n, dt, c, _ in
                                                self.operands()),
                 "scalar parameters: " + (", ".join(f"a{m}={v!r} ({dt})" for m, (v, dt)
                                                    in enumerate(p.scalars)) or "none"),
                 "key parts: " + "; ".join(f"{k}={v}" for k, v in p.key_parts),
                 f"why: {self.why}", "source:", self.source]
        return "\n".join(([self.note] if self.note else []) + lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return explanation_html(self)


def _rows(pairs) -> str:
    return "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in pairs)


def highlighted(source: str) -> str:
    """``source`` as HTML: Pygments' Python highlighting (inline styles) where it is installed,
    else escaped plain text."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f"<pre>{html.escape(source)}</pre>"
    return highlight(source, PythonLexer(), HtmlFormatter(noclasses=True, nowrap=False))


_CSS = ("<style>.fa-explain{font-size:12px}.fa-explain table{border-collapse:collapse;"
        "margin:4px 0 8px}.fa-explain th{text-align:left!important;font-weight:normal;color:#555;"
        "padding:1px 12px 1px 0;vertical-align:top}.fa-explain td{font-family:monospace;"
        "padding:1px 12px 1px 0;text-align:left!important}.fa-explain h4{margin:8px 0 2px}"
        ".fa-explain pre{font-size:12px;margin:0}</style>")


def explanation_html(ex: Explanation) -> str:
    """The HTML of :class:`Explanation`: one section per kernel (lazy evaluation: one)."""
    p = ex.plan
    summary = [("note", ex.note)] if ex.note else []
    summary += [("kernels", "1 (the whole expression fuses into one kernel)"),
               ("kernel", p.name), ("target", ex.target + (f" ({ex.arch})" if ex.arch else "")),
               ("shape → collapsed dims", f"{p.shape} → {p.dims}"),
               ("schedule", _SCHEDULES.get(p.schedule, p.schedule)),
               ("vector width", f"{p.vector_width} element(s) per access"),
               ("index width", f"{p.index_width}-bit"),
               ("scalar parameters", ", ".join(f"a{m}={v!r} ({dt})" for m, (v, dt)
                                               in enumerate(p.scalars)) or "none"),
               ("compiled", "yes" if ex.compiled else "not in this process yet"),
               ("why", ex.why)]
    operands = "".join(
        f"<tr><td>{html.escape(n)}</td><td>{html.escape(dt)}</td><td>{html.escape(c)}</td>"
        f"<td>{html.escape(what)}</td></tr>" for n, dt, c, what in ex.operands())
    return (f'{_CSS}<div class="fa-explain"><h4>fa.explain: kernel {html.escape(p.name)}</h4>'
            f"<table>{_rows(summary)}</table>"
            "<h4>operands</h4><table><tr><th>operand</th><th>dtype</th><th>class</th>"
            f"<th>meaning</th></tr>{operands}</table>"
            f"<details><summary>key parts ({len(p.key_parts)})</summary>"
            f"<table>{_rows(p.key_parts)}</table></details>"
            f"<h4>generated source ({html.escape(ex.target)})</h4>"
            f"{highlighted(ex.source)}</div>")


class ProgramExplanation:
    """How a graph with reductions or scans evaluates: how the planner cut it into kernels and
    why, and each kernel's plan and source (nothing is compiled or run)."""

    def __init__(self, program, target: str, arch: str | None):
        self.program, self.arch = program, arch
        self.kernels = [(step.plan, render_plan(step.plan, target)) for step in program.steps]

    @property
    def launches(self) -> int:
        return len(self.kernels)

    @property
    def ptx(self) -> list[str]:
        """Each kernel's PTX for ``arch`` (default sm_90), compiled without a GPU."""
        from ..compiler import devicelib
        from ..runtime.backend import arch_compiler
        return [arch_compiler().ptx(render_plan(plan, "cuda"), plan.name, plan.param_types(),
                                    self.arch or "sm_90", devicelib.helpers())[0]
                for plan, _ in self.kernels]

    def __str__(self) -> str:
        lines = [f"{self.launches} kernel(s), cut at the reductions and scans:",
                 *self.program.why]
        for plan, source in self.kernels:
            if isinstance(plan, ReducePlan):
                head = (f"kernel {plan.name}: {plan.reduction} of {plan.size} output(s) × "
                        f"{plan.elements} element(s), kept dims {plan.kept}, reduced dims "
                        f"{plan.red}, cuda schedule {plan.schedule}")
            elif isinstance(plan, ScanPlan):
                head = (f"kernel {plan.name}: {plan.scan} of {plan.size} row(s) × "
                        f"{plan.length} element(s), kept dims {plan.kept}, cuda schedule "
                        f"{plan.schedule}")
            elif isinstance(plan, RowPlan):
                head = (f"kernel {plan.name}: a block per row, {plan.size} row(s) of "
                        f"{layout.size_of(plan.red)} element(s): "
                        + " then ".join(name for name, _, _ in plan.sections)
                        + ", then the result")
            else:
                head = (f"kernel {plan.name}: shape {plan.shape} → dims {plan.dims}, "
                        f"schedule {plan.schedule}, vector width {plan.vector_width}")
            lines += ["", head, "key parts: " + "; ".join(f"{k}={v}" for k, v in plan.key_parts),
                      "source:", source]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


def explain(a, arch: str | None = None) -> Explanation | ProgramExplanation:
    """How ``a`` evaluates: the plan and kernel source (nothing is compiled or run). For a fused
    function (``fa.fuse``): its signatures, why each traced, and their kernels."""
    from ..runtime.backend import get_backend

    if hasattr(a, "_fa_explain"):
        return a._fa_explain(arch)

    node = a._resolved()
    note = ""
    if node.is_leaf:
        note = ("this array is computed: evaluating it runs no kernel; shown is the kernel "
                "that copies it (.copy(), or .get() of a strided view)")
        node = graph.op("copy", (node,), (node.dtype, node.dtype))
    out = (_Placeholder(), node.dtype, node.shape, layout.contiguous_strides(node.shape), 0)
    target = "cuda" if arch else realize.target_of(get_backend())
    if has_reduction([node]):
        align = 256 if arch else (_backend_of(node).alloc_align or 1)
        params = node.params if node.params is not None else {node: 0}
        return ProgramExplanation(plan_program([(node, out)], params, align), target, arch)
    plan = plan_kernel([(node, out)])
    return Explanation(plan, target, arch, note)
