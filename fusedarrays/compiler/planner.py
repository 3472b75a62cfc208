"""The general planner: pending outputs whose graph has cuts (reductions, scans, products) → a
:class:`Program`, the kernels that compute them, in order, and the temporaries between them.

Pure; the front door (``compiler/__init__.py``) calls it where a graph has a node the planner
cuts at (:data:`CUT_AT`). The planner cuts a graph at its reduction nodes, at its scans
(``compiler/scan.py``: a kernel each, cut and fed like a reduction's) and at its products
(``compiler/product.py``: a kernel each over operands already computed, never fused with
anything). Each reduction becomes one kernel (``compiler/reduction.py``) whose input expression
— every elementwise producer under it, down to the leaves and to earlier reductions' results —
is computed inside it, per element, as it is read: ``((x - y)**2).sum()`` is one kernel and no
temporary. A reduction's result that something else reads is a temporary buffer; what consumes
it (``x - x.max(axis=-1, keepdims=True)``, a norm's square root) is one elementwise kernel after
the reductions, reading the temporaries as leaves broadcast back over the reduced axes. A
reduction that is the whole evaluation writes its output directly. What reads a cut node, a
gather through a reduced or scanned index included (``t[x.argmax(axis=1)]``), is rebuilt over
its temporary (``cuts.py``). Where every reduction keeps its dims over the rows of the result,
one row kernel does it all (``compiler/rowfusion.py``); few outputs of many elements are split
(``reduction.choose_split``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..ir import graph, layout
from ..ir.dtypes import kind
from ..ir.params import roots_params
from .cuts import holds_placed, rebuild
from .plan import Operand, plan_kernel
from .protocol import Blas, Program, Step, TempBuffer

if TYPE_CHECKING:
    from .product import ProductPlan

# The planners of each cut kind (product.py, reduction.py, rowfusion.py, scan.py, and the code
# generators they read) are imported where a graph has that kind: a first evaluation of an
# elementwise expression (a warm start's, its kernel on disk) imports none of them.

CUT_AT = ("reduce", "scan", "matmul")   # node kinds whose result the planner puts in a buffer


def has_cut(roots) -> bool:
    """Whether the graph of ``roots`` has a node the planner cuts at (:data:`CUT_AT`: a
    reduction, a scan or a product), so that evaluating it is a cut program, not one kernel."""
    return any(n.kind in CUT_AT for n in graph.walk(roots))


def _direct(outputs: list) -> bool:
    """Whether the one output is a reduction or scan computed straight into its target (a
    target of another shape, the result broadcast, is written by an elementwise kernel after
    it)."""
    return (len(outputs) == 1 and outputs[0][0].kind in CUT_AT
            and tuple(outputs[0][1][2]) == outputs[0][0].shape)


def plan_program(outputs: list[tuple[graph.Node, tuple]], params: dict,
                 temp_align: int, new_temp=None, blas: Blas | None = None) -> Program:
    """Cut the graph computing each node into its ``(buffer, dtype, shape, strides, offset)``
    at its reductions (module docstring). ``params``: node → position, as evaluation binds
    them; temporaries are bound after them, in order. ``temp_align``: a temporary's alignment;
    ``new_temp(nbytes)``: the buffer standing for a temporary (default a :class:`TempBuffer`;
    ``fa.fuse`` passes its own); ``blas``: the BLAS the backend offers products, or why none
    (default: none, every product a tiled kernel)."""
    from .reduction import ROW_FUSE_MAX, choose_split
    from .rowfusion import fusible

    roots = [node for node, _ in outputs]
    direct = _direct(outputs)
    if not direct and len(outputs) == 1:
        nodes = graph.walk(roots)
        reductions = [n for n in nodes if n.kind == "reduce"]
        # draws and gathers index by the kernel's element order: only the elementwise planner
        # places them (plan._placed); a scan or a product is a kernel of its own
        placed = any(n.kind in ("random", "gather", "scan", "matmul") for n in nodes)
        if not placed and fusible(reductions, roots[0].shape):   # the shapes allow one kernel
            cut = _cut(outputs, params, temp_align, None, split=False)
            if all(step.plan.schedule == "rows" and (step.plan.elements <= ROW_FUSE_MAX
                                                     or choose_split(step.plan) == 1)
                   for step in cut.steps):
                if new_temp is not None:          # planned again with the caller's buffers
                    cut = _cut(outputs, params, temp_align, new_temp, split=False, blas=blas)
                return _row_program(cut, roots[0], outputs[0][1])
    cut = _cut(outputs, params, temp_align, new_temp, split=True, blas=blas)
    if not direct:
        rebuilt = [(rebuild(node, cut.subst), target) for node, target in outputs]
        used = roots_params([n for n, _ in rebuilt])[0]
        plan = plan_kernel(rebuilt, {p: cut.positions[p] for p in used})
        cut.steps.append(Step(plan, -1))
        if any(step.plan.kind == "product" for step in cut.steps):
            cut.why.append(f"kernel {len(cut.steps)}: the elementwise work after the "
                           "products, reading their results (a product is not fused: each "
                           "output sums a whole row and column)")
        elif any(step.plan.kind == "reduce" for step in cut.steps):
            cut.why.append(f"kernel {len(cut.steps)}: the elementwise work after the "
                           "reductions, reading their results broadcast back over the reduced "
                           "axes (a reduction's result is complete only once every element is "
                           "folded in)")
        else:
            cut.why.append(f"kernel {len(cut.steps)}: the elementwise work after the scans, "
                           "reading their results (a row's last element waits for all before "
                           "it)")
    return Program(tuple(cut.steps), tuple(cut.temps), tuple(cut.why))


def _cut(outputs: list, params: dict, temp_align: int, new_temp, split: bool,
         blas: Blas | None = None) -> _Cut:
    """A step per reduction, per scan and per product, inputs first, results
    in temporaries (a root computed straight into its target: there)."""
    roots = [node for node, _ in outputs]
    cut = _Cut(dict(params), len(params), temp_align, new_temp, split, blas)
    direct = _direct(outputs)
    for node in graph.walk(roots):
        if node.kind not in CUT_AT:
            continue
        step = {"reduce": cut.reduction, "scan": cut.scan, "matmul": cut.product}[node.kind]
        source = rebuild(node.inputs[0], cut.subst)
        if node.kind != "matmul" and holds_placed(source):   # (compiler/cuts.py)
            source = cut.computed_first(source)
        if direct and node is roots[0]:
            step(node, source, outputs[0][1], False, "into the result")
            continue
        strides = layout.contiguous_strides(node.shape)
        target = (cut.buffer(node.dtype, node.shape), node.dtype, node.shape, strides, 0)
        cut.subst[node.serial] = step(
            node, source, target, True, f"into a temporary {node.shape} that a later kernel reads")
        if node.kind == "reduce":
            cut.rows.append((node, source, cut.subst[node.serial]))
    return cut


def _row_program(cut: _Cut, root: graph.Node, target: tuple) -> Program:
    from .rowfusion import plan_rows

    nodes, sources, leaves = zip(*cut.rows)
    plan = plan_rows(list(nodes), list(sources), list(leaves), rebuild(root, cut.subst),
                     target, cut.positions)
    why = (f"one kernel, row by row: {', '.join(n.label() for n in nodes)} of each row in "
           "turn (each row's result kept for the row, then read back), then the row's "
           "elements of the result: every reduction keeps its dims over the same axes of an "
           "expression of the result's shape, so one worker (a GPU block, a CPU thread) can "
           "finish a row",)
    return Program((Step(plan, -1),), tuple(cut.temps), why)


class _Cut:
    """The steps, temporaries and params of a program while :func:`plan_program` cuts."""

    def __init__(self, positions: dict, nparams: int, align: int, new_temp=None,
                 split: bool = True, blas: Blas | None = None):
        self.positions, self.nparams, self.align = positions, nparams, align
        self.new_temp, self.split, self.blas = new_temp, split, blas
        self.subst: dict[int, graph.Node] = {}
        self.steps: list[Step] = []
        self.temps: list[tuple] = []
        self.why: list[str] = []
        self.rows: list[tuple] = []     # (reduction, its source, its temporary's leaf)

    def buffer(self, dtype: np.dtype, shape: tuple):
        if self.new_temp is not None:
            return self.new_temp(max(1, layout.size_of(shape) * dtype.itemsize))
        return TempBuffer(self.align)

    def temp(self, target: tuple) -> graph.Node:
        """Bind a temporary ``(TempBuffer, dtype, shape, strides, 0)``; its leaf."""
        leaf = graph.leaf(*target)
        self.positions[leaf] = self.nparams + len(self.temps)
        self.temps.append((target[1], target[2]))
        return leaf

    def computed_first(self, source: graph.Node) -> graph.Node:
        """The leaf of a temporary that an elementwise kernel computes ``source`` into: the
        input of a reduction or a scan holding a draw or a gather, which only that kernel's
        element order places (compiler/cuts.py)."""
        shape = source.shape
        target = (self.buffer(source.dtype, shape), source.dtype, shape,
                  layout.contiguous_strides(shape), 0)
        used = roots_params([source])[0]
        plan = plan_kernel([(source, target)], {p: self.positions[p] for p in used})
        self.steps.append(Step(plan, len(self.temps)))
        self.why.append(f"kernel {len(self.steps)}: the input {shape} of the next kernel, "
                        "computed first into a temporary (it holds a draw or a gather, placed "
                        "by an elementwise kernel's element order)")
        return self.temp(target)

    def reduction(self, node, source, target: tuple, temporary: bool, where: str):
        """The step computing reduction ``node`` of ``source`` into ``target`` (the
        evaluation's output, or a ``temporary`` bound here, whose leaf is returned): one
        kernel; split, it stores partial results in a temporary of its own and folds them."""
        from .reduction import choose_split, partials_shape, plan_reduce

        label = f"{node.label()} over {source.shape}"
        plan = plan_reduce(node, source, target, self.positions)
        split = choose_split(plan) if self.split else 1
        partials = -1
        if split > 1:
            # float16, bfloat16, float8 partials in float32: rounded once, at the fold
            pdtype = np.dtype(np.float32) if kind(node.dtype) == "f" and \
                node.dtype.itemsize < 4 else node.dtype
            pshape = partials_shape(node, split, plan.schedule)
            partial = (self.buffer(pdtype, pshape), pdtype, pshape,
                       layout.contiguous_strides(pshape), 0)
            plan = plan_reduce(node, source, target, self.positions, split, partial)
            partials = len(self.temps)
            self.temp(partial)
            label += (f" in {split} parts per output (so that {plan.outputs} output(s) keep "
                      f"every SM or core busy), partial results {pshape} folded in a fixed "
                      "order by the last block to finish each output, in the same launch")
        self.steps.append(Step(plan, len(self.temps) if temporary else -1, partials))
        self.why.append(f"kernel {len(self.steps)}: {label}, its input computed as it is read, "
                        + where)
        return self.temp(target) if temporary else None


    def scan(self, node, source, target: tuple, temporary: bool, where: str):
        """The step computing scan ``node`` of ``source`` into ``target`` (the evaluation's
        output, or a ``temporary`` bound here, whose leaf is returned)."""
        from .scan import plan_scan

        plan = plan_scan(node, source, target, self.positions)
        self.steps.append(Step(plan, len(self.temps) if temporary else -1))
        self.why.append(f"kernel {len(self.steps)}: {node.label()} over {source.shape}, "
                        f"{'a block' if plan.schedule == 'rows' else 'a thread'} per row of "
                        f"{plan.length} element(s), its input computed as it is read, " + where)
        return self.temp(target) if temporary else None


    def product(self, node, source, target: tuple, temporary: bool, where: str):
        """The step computing product ``node`` (its inputs leaves: ``source`` is the first)
        into ``target`` (the evaluation's output, or a ``temporary`` bound here, whose leaf is
        returned)."""
        from .product import TILE_M, TILE_N, blas_plan, blas_refusal, plan_product

        plan = plan_product(node, target, self.positions)
        refusal = blas_refusal(plan, self.blas)
        a, b = node.inputs
        if refusal:
            plan = replace(plan, route=refusal)
            how = (f"a tiled product kernel, {TILE_M}x{TILE_N} output tiles through shared "
                   f"memory on a GPU, not cuBLAS: {refusal}")
        else:
            plan = blas_plan(self._blas_readable(plan), self.blas)
            how = f"{self.blas.name}, no kernel of ours"
        self.steps.append(Step(plan, len(self.temps) if temporary else -1))
        self.why.append(f"kernel {len(self.steps)}: matmul {a.shape} @ {b.shape}, not fused "
                        f"(its operands were computed before it; {how}), " + where)
        return self.temp(target) if temporary else None

    def _blas_readable(self, plan: ProductPlan) -> ProductPlan:
        """``plan`` with each input the BLAS can't read in place (no axis of unit stride, a
        negative step) copied first into a contiguous temporary, a copy kernel's step."""
        from .product import blas_operand, matrix_shape

        operands, sources = list(plan.operands), list(plan.sources)
        nb = len(plan.batch)
        for k in (0, 1):
            if blas_operand(plan, k) is not None:
                continue
            o = operands[k]
            batch = plan.batch if nb and o.strides[0] else ()   # a repeated matrix: once
            rows, cols = matrix_shape(plan, k)
            shape = batch + (rows, cols)
            leaf = graph.leaf(o.buffer, o.dtype, shape, o.strides[:len(batch)] + o.strides[nb:],
                              o.offset)
            self.positions[leaf] = sources[k]
            target = (self.buffer(o.dtype, shape), o.dtype, shape,
                      layout.contiguous_strides(shape), 0)
            copy = graph.op("copy", (leaf,), (o.dtype, o.dtype))
            self.steps.append(Step(plan_kernel([(copy, target)], {leaf: sources[k]}),
                                   len(self.temps)))
            self.why.append(f"kernel {len(self.steps)}: a copy of {'ab'[k]} {shape} (strides "
                            f"{o.strides}) into a contiguous temporary for cuBLAS, which reads "
                            "a matrix with one axis of unit stride and positive strides")
            copied = self.temp(target)
            sources[k] = self.positions[copied]
            strides = ((rows * cols if batch else 0,) if nb else ()) + (cols, 1)
            operands[k] = Operand(target[0], o.dtype, strides, 0, "S", False)
        return replace(plan, operands=tuple(operands), sources=tuple(sources))
