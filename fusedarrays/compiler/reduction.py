"""Graphs with reductions or scans → a :class:`Program`: the kernels that compute them, in order.

Pure. The planner cuts a graph at its reduction nodes, at its scans (``compiler/scan.py``: a
kernel each, cut and fed like a reduction's) and at its products (``compiler/product.py``: a
kernel each over operands already computed, never fused with anything). Each reduction becomes
one kernel (:class:`ReducePlan`) whose input expression — every elementwise producer under it,
down to the leaves and to earlier reductions' results — is computed inside it, per element, as
it is read: ``((x - y)**2).sum()`` is one kernel and no temporary. A reduction's result that
something else reads is a temporary buffer; what consumes it (``x - x.max(axis=-1,
keepdims=True)``, a norm's square root) is one elementwise kernel after the reductions, reading
the temporaries as leaves broadcast back over the reduced axes. A reduction that is the whole
evaluation writes its output directly. What reads a cut node, a gather through a reduced or
scanned index included (``t[x.argmax(axis=1)]``), is rebuilt over its temporary (``cuts.py``).

A reduction kernel walks its *kept* axes (one output each) and its *reduced* axes (each
collapsed as :func:`layout.collapse` collapses a walk, the kept and the reduced apart, so an
output's elements keep NumPy's C order: ``argmax`` counts in it). Its schedule on cuda: ``rows``
(a block per output, the threads interleaved along the reduced elements, a tree in shared
memory: for reductions whose innermost reduced axis is contiguous or broadcast) or ``cols``
(a thread per output, walking its elements in order: for reductions over outer axes, so that a
warp reads neighbouring outputs' elements together). The cpu target walks each output's
elements in order, in one thread per chunk of outputs. Accumulation order is a function of the
shape and the schedule only: the same input gives the same bits every run.

Few outputs of many elements are *split* (:func:`choose_split`): each output's elements are cut
into parts whose results go to a temporary of partials, folded in a fixed order in the same
launch by whoever finishes an output's last part, counted by integer atomics on the backend's
counters (``compiler/reduction_codegen.py`` says how, and why no two launches share a slot).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from .. import config
from ..ir import graph, layout
from ..ir.dtypes import CODES
from ..ir.params import roots_params
from ..ir.reductions import REDUCTIONS
from . import keys
from .cuts import holds_placed, rebuild
from .plan import (
    Instr,
    KernelPlan,
    Operand,
    instructions,
    number_params,
    operand_param_types,
    plan_kernel,
)
from .product import (
    TILE_M,
    TILE_N,
    Blas,
    ProductPlan,
    blas_operand,
    blas_plan,
    blas_refusal,
    matrix_shape,
    plan_product,
)
from .rowfusion import fusible, plan_rows, unit_class
from .scan import plan_scan


@dataclass(frozen=True)
class ReducePlan:
    reduction: str          # a row of ir/reductions.py
    kept: tuple             # collapsed extents of the kept axes (one output each)
    red: tuple              # collapsed extents of the reduced axes
    operands: tuple[Operand, ...]  # inputs (strides: kept then reduced), then the output
    scalars: tuple[tuple[object, np.dtype], ...]
    body: tuple[Instr, ...]  # the input expression, per element
    value: int              # the variable holding the element to fold in
    key_parts: tuple[tuple[str, str], ...]
    key: str
    schedule: str = "rows"  # cuda: rows (a block per output) or cols (a thread per output)
    sources: tuple[int, ...] = ()
    scalar_sources: tuple[int, ...] = ()
    split: int = 1          # > 1: each output's elements in this many parts, partials stored,
    #                         then folded in the same launch by whoever finishes an output last
    chunk: int = 0          # elements per part (flat C-order index ranges)

    @property
    def size(self) -> int:
        """Outputs, or partial results where split (the kernel's ``n``)."""
        return layout.size_of(self.kept) * self.split

    @property
    def elements(self) -> int:
        return layout.size_of(self.red)

    @property
    def outputs(self) -> int:
        return layout.size_of(self.kept)

    @property
    def counters(self) -> int:
        """Counter slots a launch needs from the backend's zeroed counter buffer (split: one
        per output, counting its finished parts; module docstring), else 0."""
        return self.outputs if self.split > 1 else 0

    @property
    def dims(self) -> tuple:
        """The walk: kept then reduced extents (operand strides follow them)."""
        return self.kept + self.red

    @property
    def name(self) -> str:
        return "fr_" + self.key[:16]

    @property
    def value_code(self) -> str:
        return self.body[self.value].code

    def int_params(self) -> list[str]:
        """Kept extents ``d_j``, reduced extents ``e_j``, then per operand its offset ``b_k``,
        kept strides ``s_k_j`` and (inputs) reduced strides ``t_k_j``."""
        names = [f"d{j}" for j in range(len(self.kept))] + [f"e{j}" for j in range(len(self.red))]
        names += ["gs", "gc"] if self.split > 1 else []
        for k, o in enumerate(self.operands):
            names += [f"b{k}"] + [f"s{k}_{j}" for j in range(len(self.kept))]
            if not o.output:
                names += [f"t{k}_{j}" for j in range(len(self.red))]
        return names

    def int_args(self) -> list[int]:
        ints = list(self.kept) + list(self.red)
        ints += [self.split, self.chunk] if self.split > 1 else []
        for o in self.operands:
            ints += [o.offset, *o.strides[:len(self.kept)]]
            if not o.output:
                ints += list(o.strides[len(self.kept):])
        return ints

    param_types = operand_param_types

    def geometry(self) -> tuple:
        # "fold": the cpu backend runs the fold pass after every chunk (cpu/backend.py)
        return ("reduce", self.schedule, self.size) + (("fold",) if self.split > 1 else ())


def plan_reduce(node: graph.Node, source: graph.Node, target: tuple,
                positions: dict, split: int = 1, partials: tuple | None = None) -> ReducePlan:
    """Plan reduction ``node`` of the expression ``source`` (its input, with earlier reductions
    already cut out) into ``target`` = ``(buffer, dtype, shape, strides, offset)``; ``positions``
    gives each param of ``source`` its place in the evaluation's params. ``split`` > 1: the
    partial results of each output's ``split`` parts go to ``partials`` (a buffer, the same
    tuple), a contiguous temporary laid out as :func:`partials_shape` says, and are folded into
    ``target`` in the same launch (:func:`fold_schedule`): its operands are the inputs, the
    partials, then the result."""
    name, axes, keepdims = node.attrs
    shape = source.shape
    views, scalars, var_of, sources = number_params(
        source.params if source.params is not None else [source], positions, shape)
    body, var = instructions([source], var_of)
    kept_axes = [k for k in range(len(shape)) if k not in axes]
    buffer, dtype, _, ostrides, ooffset = target
    ostrides = tuple(ostrides[k] for k in kept_axes) if keepdims else tuple(ostrides)
    red, red_sets = layout.collapse(tuple(shape[k] for k in axes),
                                    [tuple(v[2][k] for k in axes) for v in views])
    kept_shape = tuple(shape[k] for k in kept_axes)
    schedule = choose_schedule(red, red_sets)
    outs = [(buffer, dtype, ostrides, ooffset)]
    if split > 1:   # the partials' layout (partials_shape): part g of output o at o's + g*step
        pstrides = (layout.contiguous_strides(kept_shape + (split,))[:-1] if schedule == "rows"
                    else layout.contiguous_strides((split,) + kept_shape)[1:])
        outs.insert(0, (partials[0], partials[1], pstrides, partials[4]))
    kept, kept_sets = layout.collapse(kept_shape, [tuple(v[2][k] for k in kept_axes)
                                                   for v in views] + [o[2] for o in outs])
    operands = tuple(Operand(b, dt, kept_sets[k] + red_sets[k], off, unit_class(red_sets[k]),
                             False) for k, (b, dt, _, off) in enumerate(views))
    operands += tuple(Operand(b, np.dtype(dt), kept_sets[len(views) + k], off, "S", True)
                      for k, (b, dt, _, off) in enumerate(outs))
    canonical = "\n".join(f"{i.var}={i.kind}:{i.arg}:{','.join(map(str, i.inputs))}:{i.code}"
                          for i in body)
    parts = (
        ("graph", hashlib.sha256(canonical.encode()).hexdigest()[:32]),
        ("reduction", f"{name} of v{var[source.serial]} into {CODES[np.dtype(dtype)]}"),
        keys.operands_part(operands),
        ("scalars", " ".join(CODES[s[1]] for s in scalars) or "-"),
        ("rank", f"{len(kept)} kept, {len(red)} reduced"),
        ("schedule", schedule),
        ("split", "no" if split == 1 else f"parts {'outer' if schedule == 'cols' else 'inner'}, "
                  "folded in the launch"),
        ("config", repr(config.codegen_settings())),
    )
    parts = keys.structure_parts(parts)
    chunk = -(-layout.size_of(red) // split) if split > 1 else 0
    return ReducePlan(name, kept, red, operands, tuple((v, dt) for v, dt, _ in scalars),
                      tuple(body), var[source.serial], parts, keys.digest(parts), schedule,
                      tuple(sources), tuple(p for _, _, p in scalars), split, chunk)


def choose_schedule(red: tuple, red_sets: list) -> str:
    """``rows`` (a block per output) where a block's threads read neighbouring elements of one
    output and there are enough of them; else ``cols`` (a thread per output): outer-axis
    reductions, and small inner extents such as (2^25, 2) over axis 1."""
    inner = all(abs(st[-1]) <= 1 for st in red_sets)
    return "rows" if inner and layout.size_of(red) >= ROWS_MIN_ELEMENTS else "cols"


ROWS_MIN_ELEMENTS = 128   # a block of 256 threads for fewer elements would idle most of them
# Rows up to this long are reduced and rewritten in one kernel even where so few rows would
# otherwise be split over more blocks (one launch for a softmax over rows of 16 K and more);
# longer ones are split and take more kernels.
ROW_FUSE_MAX = 1 << 16


def choose_split(plan: ReducePlan) -> int:
    """Parts to cut each output's elements into, so that few outputs of many elements still
    keep every SM busy (a full reduction: 1024 blocks of 64 K elements); the partials are
    folded in a fixed order in the same launch (module docstring). argmax/argmin are not
    split."""
    outputs, elements = plan.size, plan.elements
    if REDUCTIONS[plan.reduction].arg:
        return 1
    if plan.schedule == "rows":
        return max(1, min(-(-elements // 8192), 1024 // max(outputs, 1)))
    return max(1, min(-(-elements // 64), (1 << 17) // max(outputs, 1)))


def partials_shape(node: graph.Node, split: int, schedule: str) -> tuple:
    """The shape of a split reduction's partials: the kept extents and the parts, the parts
    innermost on ``rows`` (a block's partials side by side) and outermost on ``cols`` (so that
    neighbouring threads, neighbouring outputs, store side by side)."""
    kept = tuple(e for k, e in enumerate(node.inputs[0].shape) if k not in node.attrs[1])
    return kept + (split,) if schedule == "rows" else (split,) + kept


class TempBuffer:
    """Stands in, while planning, for a temporary the program allocates per launch."""

    __slots__ = ("uid", "align", "fresh", "__weakref__")

    def __init__(self, align: int):
        self.uid, self.align, self.fresh = graph.new_uid(), align, None


@dataclass(frozen=True)
class Step:
    plan: object            # ReducePlan or KernelPlan
    out: int                # >= 0: temporary ``out``; -1: the evaluation's outputs
    partials: int = -1      # >= 0: a split reduction's partials, temporary ``partials``, bound
    #                         as the output before ``out``


@dataclass(frozen=True)
class Program:
    """The kernels of one evaluation, in order, and the temporaries they pass results through
    (``temps``: (dtype, shape) each, bound after the evaluation's params)."""

    steps: tuple[Step, ...]
    temps: tuple[tuple[np.dtype, tuple], ...]
    why: tuple[str, ...]    # how the graph was cut, in words (fa.explain)


CUT_AT = ("reduce", "scan", "matmul")   # node kinds whose result the planner puts in a buffer


def has_reduction(roots) -> bool:
    """Whether the graph of ``roots`` has a node the planner cuts at (a reduction or a scan)."""
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
        if any(isinstance(step.plan, ProductPlan) for step in cut.steps):
            cut.why.append(f"kernel {len(cut.steps)}: the elementwise work after the "
                           "products, reading their results (a product is not fused: each "
                           "output sums a whole row and column)")
        elif any(isinstance(step.plan, ReducePlan) for step in cut.steps):
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
        label = f"{node.label()} over {source.shape}"
        plan = plan_reduce(node, source, target, self.positions)
        split = choose_split(plan) if self.split else 1
        partials = -1
        if split > 1:
            pdtype = np.dtype(np.float32) if node.dtype == np.float16 else node.dtype
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


def reduction_row(plan: ReducePlan):
    return REDUCTIONS[plan.reduction]


__all__ = ["CUT_AT", "KernelPlan", "Program", "ReducePlan", "Step", "has_reduction",
           "plan_program",
           "plan_reduce", "rebuild", "reduction_row"]
