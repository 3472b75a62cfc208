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

from .. import compiler
from ..compiler import Plan, plan_evaluation, render, walk_text
from ..ir import graph, layout
from ..runtime import records
from .array import _backend_of

_OPEN_LINES = 40    # a program kernel's source longer than this starts folded


_CLASSES = {"C": "contiguous", "B": "broadcast along the walk", "T": "transposed (tiled)",
            "S": "strided", "U": "unit stride along the reduced axis"}
_LIBRARY_WALK = ("cuBLAS's own kernels, the algorithm its heuristic chose for these sizes, "
                 "layouts and alignments, on the legacy default stream like every kernel here")
_LIBRARY_SOURCE = ("# no generated source: {plan.library} computes this product in place into "
                   "its\n# target (nvmath.linalg.advanced.Matmul, inplace, beta = 0)")


def _library_route(plan) -> str:
    """How a product planned for cuBLAS runs, in words."""
    wide = plan.operands[2].dtype.itemsize == 16 or plan.operands[2].dtype == "float64"
    precision = ("COMPUTE_64F" if wide else "COMPUTE_32F, full float32 (no TF32)")
    return (f"{plan.library}: compute type {precision}, each matrix read in place through its "
            "strides, the result written into its buffer")


class _Placeholder:
    """Stands in for an output buffer when explaining: nothing is allocated."""

    uid = 0
    backend = None


class Explanation:
    """The kernel an array's evaluation runs: plan, source, key parts, and why it compiled."""

    def __init__(self, plan: Plan, target: str, arch: str | None, note: str = ""):
        self.plan = plan
        self.note = note      # what the explained array is, where that needs saying
        self.target = target
        self.source = render(plan, target)
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
            from ..runtime.backend import arch_compiler
            self._ptx, _ = arch_compiler().ptx(
                render(self.plan, "cuda"), self.plan.name,
                self.plan.param_types(), self.arch or "sm_90", compiler.helpers())
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
        return f'<pre style="{PRE_STYLE}">{html.escape(source)}</pre>'
    return highlight(source, PythonLexer(), HtmlFormatter(noclasses=True, nowrap=False,
                                                          prestyles=PRE_STYLE))


# Inline, so that it wins over the notebook's own rules: JupyterLab's output area sets its <pre>
# to inherit the page's proportional font, and wraps long lines mid-name.
PRE_STYLE = "font-family:var(--jp-code-font-family,monospace);white-space:pre;overflow-x:auto"


_CSS = ("<style>.fa-explain{font-size:12px}.fa-explain table{border-collapse:collapse;"
        "margin:4px 0 8px}.fa-explain th{text-align:left!important;font-weight:normal;color:#555;"
        "padding:1px 12px 1px 0;vertical-align:top;white-space:nowrap}"
        ".fa-explain td{font-family:monospace;padding:1px 12px 1px 0;text-align:left!important}"
        ".fa-explain h4{margin:8px 0 2px}.fa-explain pre{font-size:12px;margin:0}</style>")


def explanation_html(ex: Explanation) -> str:
    """The HTML of :class:`Explanation`: one section per kernel (lazy evaluation: one)."""
    p = ex.plan
    summary = [("note", ex.note)] if ex.note else []
    summary += [("kernels", "1 (the whole expression fuses into one kernel)"),
               ("kernel", p.name), ("target", ex.target + (f" ({ex.arch})" if ex.arch else "")),
               ("shape → collapsed dims", f"{p.shape} → {p.dims}"),
               ("schedule", walk_text(p, ex.target)),
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
        self.program, self.arch, self.target = program, arch, target
        self.kernels = [(step.plan, _LIBRARY_SOURCE.format(plan=step.plan)
                         if step.plan.library else render(step.plan, target))
                        for step in program.steps]

    @property
    def launches(self) -> int:
        return len(self.kernels)

    @property
    def ptx(self) -> list[str]:
        """Each kernel's PTX for ``arch`` (default sm_90), compiled without a GPU."""
        from ..runtime.backend import arch_compiler
        return [arch_compiler().ptx(render(plan, "cuda"), plan.name, plan.param_types(),
                                    self.arch or "sm_90", compiler.helpers())[0]
                for plan, _ in self.kernels if not plan.library]

    def _title(self) -> str:
        n = self.launches
        products = [plan for plan, _ in self.kernels if plan.kind == "product"]
        if products:
            how = sorted({plan.library or "a tiled kernel" for plan in products})
            return (f"{n} launch{'es' if n > 1 else ''}; matmul is not fused: a product of its "
                    f"own ({', '.join(how)}), over operands computed before it")
        return (f"{n} kernels, cut at the reductions and scans" if n > 1 else
                "1 kernel, the reductions or scan fused with the work around them")

    def facts(self, plan) -> list[tuple[str, str]]:
        """One kernel of the program in words: ``(name, value)`` rows, text and HTML alike."""
        if plan.kind == "reduce":
            outputs = plan.size // plan.split
            what = (f"{plan.reduction} of {outputs} output(s) × {plan.elements} element(s), "
                    f"kept dims {plan.kept}, reduced dims {plan.red}"
                    + (f", each output in {plan.split} parts of {plan.chunk} element(s) "
                       "(partial results, folded in a fixed order by whoever finishes the "
                       "output's last part, in this launch)" if plan.split > 1 else ""))
        elif plan.kind == "scan":
            what = (f"{plan.scan} of {plan.size} row(s) × {plan.length} element(s), kept dims "
                    f"{plan.kept}")
        elif plan.kind == "product":
            a, b = (str(o.dtype) for o in plan.operands[:2])
            what = (f"matmul (not fused) of {layout.size_of(plan.batch)} matrix product(s) "
                    f"({plan.m}, {plan.k}) @ ({plan.k}, {plan.n}), {a} @ {b} → "
                    f"{plan.operands[2].dtype}, summed in {plan.acc}")
            if plan.library:
                return [("does", what), ("route", _library_route(plan)),
                        (f"walk ({self.target})", _LIBRARY_WALK),
                        ("compiled", "no kernel of ours to compile: nvmath plans cuBLAS once "
                                     "per signature (dtype, sizes, strides, alignment)")]
        elif plan.kind == "rows":
            what = (" then ".join(name for name, _, _ in plan.sections) + " of each row, then "
                    f"the row's elements of the result; {plan.size} row(s) of "
                    f"{layout.size_of(plan.red)} element(s)")
        else:
            what = (f"elementwise, shape {plan.shape} → dims {plan.dims}, vector width "
                    f"{plan.vector_width}")
        walk = walk_text(plan, self.target)
        info = records.compiled_info(plan.key)
        why = info["why"] if info else (
            f"not compiled in this process yet; it would be: {records.why_compile(plan)}")
        route = ([("route", f"the tiled kernel, not cuBLAS: {plan.route}")]
                 if plan.kind == "product" and plan.route else [])
        return [("does", what), *route, (f"walk ({self.target})", walk),
                ("scalar parameters", ", ".join(f"a{m}={v!r} ({dt})" for m, (v, dt)
                                                in enumerate(plan.scalars)) or "none"),
                ("compiled", "yes" if info else "not in this process yet"), ("why", why)]

    def __str__(self) -> str:
        lines = [self._title() + ":", *self.program.why]
        for plan, source in self.kernels:
            lines += ["", f"kernel {plan.name}:"]
            lines += [f"  {name}: {value}" for name, value in self.facts(plan)]
            lines += ["key parts: " + "; ".join(f"{k}={v}" for k, v in plan.key_parts),
                      "source:", source]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        n = self.launches
        parts = [f'{_CSS}<div class="fa-explain"><h4>fa.explain: {self._title()}</h4>'
                 f"<table>{_rows([('target', self.target)])}"
                 f"<tr><th>{'how it was cut' if n > 1 else 'planner'}</th>"
                 "<td style=\"white-space:normal\">"
                 + "<br>".join(html.escape(w) for w in self.program.why) + "</td></tr></table>"]
        for k, (plan, source) in enumerate(self.kernels):
            temps = {t: name for name, _, t in plan.sections} if plan.kind == "rows" \
                else {}
            operands = "".join(
                f"<tr><td>{'out' if o.output else 'in'}{j}</td><td>{html.escape(str(o.dtype))}"
                f"</td><td>{html.escape(o.layout)}</td><td>"
                + html.escape(f"the row's {temps[j]}: one value per row, kept by the kernel"
                              if j in temps else _CLASSES.get(o.layout, o.layout))
                + "</td></tr>"
                for j, o in enumerate(plan.operands))
            parts.append(
                f"<h4>kernel {k + 1} of {n}: {html.escape(plan.name)}</h4>"
                f"<table>{_rows(self.facts(plan))}</table>"
                "<table><tr><th>operand</th><th>dtype</th><th>class</th><th>meaning</th></tr>"
                f"{operands}</table>"
                f"<details><summary>key parts ({len(plan.key_parts)})</summary>"
                f"<table>{_rows(plan.key_parts)}</table></details>"
                # open where it is short: a long kernel's source would bury the rest
                f"<details{' open' if source.count(chr(10)) < _OPEN_LINES else ''}><summary>"
                f"generated source ({html.escape(self.target)}, "
                f"{source.count(chr(10)) + 1} lines)</summary>"
                f"{highlighted(source)}</details>")
        parts.append("</div>")
        return "".join(parts)


def kernels_of(node: graph.Node) -> int:
    """How many kernels evaluating ``node`` into a fresh result launches (planned, nothing
    rendered or run: the HTML repr's count)."""
    if not compiler.has_cut([node]):
        return 1
    return len(_plan_program(node, None)[0].steps)


def _plan_program(node: graph.Node, arch: str | None):
    """``(program, target)`` of evaluating ``node`` (with reductions) into a fresh result; on a
    CUDA device (``arch``) or the cuda backend its products through cuBLAS where it would
    compute them (``runtime/backend.product_blas``)."""
    from ..runtime.backend import get_backend, product_blas

    out = (_Placeholder(), node.dtype, node.shape, layout.contiguous_strides(node.shape), 0)
    backend = None if arch else get_backend()
    target = "cuda" if arch else backend.target
    align = 256 if arch else (_backend_of(node).alloc_align or 1)
    params = node.params if node.params is not None else {node: 0}
    blas = product_blas(backend) if any(n.kind == "matmul" for n in graph.walk([node])) \
        else None
    return plan_evaluation([(node, out)], params, align, blas=blas), target


def explain(a, arch: str | None = None) -> Explanation | ProgramExplanation:
    """How ``a`` evaluates: the plan and kernel source (nothing is compiled or run). For a fused
    function (``fa.fuse``): its signatures, why each traced, and their kernels."""
    if hasattr(a, "_fa_explain"):
        return a._fa_explain(arch)

    node = a._resolved()
    note = ""
    if node.is_leaf:
        note = ("this array is computed: evaluating it runs no kernel; shown is the kernel "
                "that copies it (.copy(), or .get() of a strided view)")
        node = graph.op("copy", (node,), (node.dtype, node.dtype))
    program, target = _plan_program(node, arch)
    if program.cut:
        return ProgramExplanation(program, target, arch)
    return Explanation(program.steps[0].plan, target, arch, note)
