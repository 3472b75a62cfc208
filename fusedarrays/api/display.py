"""What people see: ``repr``, ``_repr_html_`` and :func:`explain`.

Cheap, safe and honest: a repr never evaluates or compiles; it shows state, dtype, shape and a
short graph label (values only for arrays already computed). ``explain`` plans the kernel an array
would run (a graph with reductions: the kernels it is cut into, and why) and renders its source
without compiling; ``.ptx`` compiles PTX for an arch on request.
HTML escapes everything it shows.
"""

from __future__ import annotations

import html

import numpy as np

from ..compiler import codegen
from ..compiler.plan import KernelPlan, plan_kernel
from ..compiler.reduction import ReducePlan, has_reduction, plan_program
from ..compiler.reduction_codegen import render_plan
from ..compiler.rowfusion import RowPlan
from ..ir import graph, layout
from ..runtime import realize, records
from .array import _backend_of, ndarray

_LABEL_NODES = 12


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


def array_repr(a) -> str:
    node = a._resolved()
    if node.is_leaf:
        buffer = graph.leaf_view(node)[0]
        values = ""
        if buffer.traced:   # fa.fuse's placeholder: no values yet
            values = "traced argument, "
        elif a.size <= 1000:
            values = np.array2string(a.get(), separator=", ", prefix="fa.ndarray(") + ", "
        return f"fa.ndarray({values}dtype={a.dtype}, shape={a.shape}, on {buffer.backend.name})"
    return (f"fa.ndarray(pending {graph_label(node)}, dtype={a.dtype}, shape={a.shape}, "
            f"{graph.count_nodes(node)} nodes)")


def array_html(a) -> str:
    return f"<pre>{html.escape(array_repr(a))}</pre>"


class _Placeholder:
    """Stands in for an output buffer when explaining: nothing is allocated."""

    uid = 0
    backend = None


class Explanation:
    """The kernel an array's evaluation runs: plan, source, key parts, and why it compiled."""

    def __init__(self, plan: KernelPlan, target: str, arch: str | None):
        self.plan = plan
        self.source = codegen.render_kernel(plan, target)
        self.arch = arch
        info = records.compiled_info(plan.key)
        # Why it compiled (or was loaded), else what a compile now would say.
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

    def __str__(self) -> str:
        p = self.plan
        lines = [f"kernel {p.name}: shape {p.shape} → dims {p.dims}, vector width "
                 f"{p.vector_width}, index width {p.index_width}",
                 "inputs/outputs: " + ", ".join(
                     f"{'out' if o.output else 'in'}{k} {o.dtype} {o.layout}"
                     for k, o in enumerate(p.operands)),
                 "scalar parameters: " + (", ".join(f"a{m}={v!r} ({dt})" for m, (v, dt)
                                                    in enumerate(p.scalars)) or "none"),
                 "key parts: " + "; ".join(f"{k}={v}" for k, v in p.key_parts),
                 f"why: {self.why}", "source:", self.source]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


class ProgramExplanation:
    """How a graph with reductions evaluates: how the planner cut it into kernels and why, and
    each kernel's plan and source (nothing is compiled or run)."""

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
        lines = [f"{self.launches} kernel(s), cut at the reductions:", *self.program.why]
        for plan, source in self.kernels:
            if isinstance(plan, ReducePlan):
                head = (f"kernel {plan.name}: {plan.reduction} of {plan.size} output(s) × "
                        f"{plan.elements} element(s), kept dims {plan.kept}, reduced dims "
                        f"{plan.red}, cuda schedule {plan.schedule}")
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
    if node.is_leaf:
        node = graph.op("copy", (node,), (node.dtype, node.dtype))
    out = (_Placeholder(), node.dtype, node.shape, layout.contiguous_strides(node.shape), 0)
    target = "cuda" if arch else realize.target_of(get_backend())
    if has_reduction([node]):
        align = 256 if arch else (_backend_of(node).alloc_align or 1)
        params = node.params if node.params is not None else {node: 0}
        return ProgramExplanation(plan_program([(node, out)], params, align), target, arch)
    plan = plan_kernel([(node, out)])
    return Explanation(plan, target, arch)


# The array layer sits below this one, so the reprs are installed from here.
ndarray.__repr__ = array_repr
ndarray._repr_html_ = array_html
