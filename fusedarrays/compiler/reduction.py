"""Graphs with reductions → a :class:`Program`: the kernels that compute them, in order.

Pure. The planner cuts a graph at its reduction nodes. Each reduction becomes one kernel
(:class:`ReducePlan`) whose input expression — every elementwise producer under it, down to the
leaves and to earlier reductions' results — is computed inside it, per element, as it is read:
``((x - y)**2).sum()`` is one kernel and no temporary. A reduction's result that something else
reads is a temporary buffer; what consumes it (``x - x.max(axis=-1, keepdims=True)``, a norm's
square root) is one elementwise kernel after the reductions, reading the temporaries as leaves
broadcast back over the reduced axes. A reduction that is the whole evaluation writes its
output directly.

A reduction kernel walks its *kept* axes (one output each) and its *reduced* axes (each
collapsed as :func:`layout.collapse` collapses a walk, the kept and the reduced apart, so an
output's elements keep NumPy's C order: ``argmax`` counts in it). Its schedule on cuda: ``rows``
(a block per output, the threads interleaved along the reduced elements, a tree in shared
memory: for reductions whose innermost reduced axis is contiguous or broadcast) or ``cols``
(a thread per output, walking its elements in order: for reductions over outer axes, so that a
warp reads neighbouring outputs' elements together). The cpu target walks each output's
elements in order, in one thread per chunk of outputs. Accumulation order is a function of the
shape and the schedule only: the same input gives the same bits every run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .. import config
from ..ir import graph, layout
from ..ir.dtypes import CODES
from ..ir.params import roots_params
from ..ir.reductions import REDUCTIONS
from . import keys
from .plan import Instr, KernelPlan, Operand, instructions, plan_kernel


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

    @property
    def size(self) -> int:
        """Outputs (the kernel's ``n``)."""
        return layout.size_of(self.kept)

    @property
    def elements(self) -> int:
        return layout.size_of(self.red)

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
        for k, o in enumerate(self.operands):
            names += [f"b{k}"] + [f"s{k}_{j}" for j in range(len(self.kept))]
            if not o.output:
                names += [f"t{k}_{j}" for j in range(len(self.red))]
        return names

    def int_args(self) -> list[int]:
        ints = list(self.kept) + list(self.red)
        for o in self.operands:
            ints += [o.offset, *o.strides[:len(self.kept)]]
            if not o.output:
                ints += list(o.strides[len(self.kept):])
        return ints

    def param_types(self) -> tuple[str, ...]:
        return (("i64",) + ("ptr",) * len(self.operands) + ("i64",) * len(self.int_params())
                + tuple(CODES[dt] for _, dt in self.scalars))

    def geometry(self) -> tuple:
        return ("reduce", self.schedule, self.size)


def plan_reduce(node: graph.Node, source: graph.Node, target: tuple,
                positions: dict) -> ReducePlan:
    """Plan reduction ``node`` of the expression ``source`` (its input, with earlier reductions
    already cut out) into ``target`` = ``(buffer, dtype, shape, strides, offset)``; ``positions``
    gives each param of ``source`` its place in the evaluation's params."""
    name, axes, keepdims = node.attrs
    shape = source.shape
    views, scalars, var_of, sources = [], [], {}, []
    view_index: dict[tuple, int] = {}
    for n in (source.params if source.params is not None else {source: 0}):
        if n.kind == "leaf":
            buffer, lshape, lstrides, offset = graph.leaf_view(n)
            full = layout.broadcast_strides(lshape, lstrides, shape)
            ident = (buffer.uid, n.dtype.str, full, offset)
            if ident not in view_index:
                view_index[ident] = len(views)
                views.append((buffer, n.dtype, full, offset))
                sources.append(positions[n])
            var_of[n.serial] = view_index[ident]
        else:
            var_of[n.serial] = len(scalars)
            scalars.append((n.attrs[1], n.dtype, positions[n]))
    body, var = instructions([source], var_of)
    kept_axes = [k for k in range(len(shape)) if k not in axes]
    buffer, dtype, _, ostrides, ooffset = target
    ostrides = tuple(ostrides[k] for k in kept_axes) if keepdims else tuple(ostrides)
    kept, kept_sets = layout.collapse(tuple(shape[k] for k in kept_axes),
                                      [tuple(v[2][k] for k in kept_axes) for v in views]
                                      + [ostrides])
    red, red_sets = layout.collapse(tuple(shape[k] for k in axes),
                                    [tuple(v[2][k] for k in axes) for v in views])
    operands = tuple(Operand(b, dt, kept_sets[k] + red_sets[k], off, "S", False)
                     for k, (b, dt, _, off) in enumerate(views))
    operands += (Operand(buffer, np.dtype(dtype), kept_sets[-1], ooffset, "S", True),)
    # a block per output where a block's threads read neighbouring elements of one output
    rows = all(abs(s[-1]) <= 1 for s in red_sets) or layout.size_of(kept) == 1
    schedule = "rows" if rows else "cols"
    canonical = "\n".join(f"{i.var}={i.kind}:{i.arg}:{','.join(map(str, i.inputs))}:{i.code}"
                          for i in body)
    parts = (
        ("graph", hashlib.sha256(canonical.encode()).hexdigest()[:32]),
        ("reduction", f"{name} of v{var[source.serial]} into {CODES[np.dtype(dtype)]}"),
        ("operands", " ".join(f"{'out' if o.output else 'in'}:{o.code}:S" for o in operands)),
        ("scalars", " ".join(CODES[s[1]] for s in scalars) or "-"),
        ("rank", f"{len(kept)} kept, {len(red)} reduced"),
        ("schedule", schedule),
        ("config", repr(config.codegen_settings())),
    )
    parts = keys.structure_parts(parts)
    return ReducePlan(name, kept, red, operands, tuple((v, dt) for v, dt, _ in scalars),
                      tuple(body), var[source.serial], parts, keys.digest(parts), schedule,
                      tuple(sources), tuple(p for _, _, p in scalars))


class TempBuffer:
    """Stands in, while planning, for a temporary the program allocates per launch."""

    __slots__ = ("uid", "align", "fresh", "__weakref__")

    def __init__(self, align: int):
        self.uid, self.align, self.fresh = graph.new_uid(), align, None


@dataclass(frozen=True)
class Step:
    plan: object            # ReducePlan or KernelPlan
    out: int                # >= 0: temporary ``out``; -1: the evaluation's outputs


@dataclass(frozen=True)
class Program:
    """The kernels of one evaluation, in order, and the temporaries they pass results through
    (``temps``: (dtype, shape) each, bound after the evaluation's params)."""

    steps: tuple[Step, ...]
    temps: tuple[tuple[np.dtype, tuple], ...]
    why: tuple[str, ...]    # how the graph was cut, in words (fa.explain)


def has_reduction(roots) -> bool:
    return any(n.kind == "reduce" for n in graph.walk(roots))


def plan_program(outputs: list[tuple[graph.Node, tuple]], params: dict,
                 temp_align: int) -> Program:
    """Cut the graph computing each node into its ``(buffer, dtype, shape, strides, offset)``
    at its reductions (module docstring). ``params``: node → position, as evaluation binds
    them; temporaries are bound after them, in order. ``temp_align``: a temporary's alignment."""
    roots = [node for node, _ in outputs]
    positions = dict(params)
    subst: dict[int, graph.Node] = {}
    steps, temps, why = [], [], []
    direct = len(outputs) == 1 and roots[0].kind == "reduce"
    for node in graph.walk(roots):
        if node.kind != "reduce":
            continue
        source = rebuild(node.inputs[0], subst)
        label = f"{node.label()} over {source.shape}"
        if direct and node is roots[0]:
            steps.append(Step(plan_reduce(node, source, outputs[0][1], positions), -1))
            why.append(f"kernel {len(steps)}: {label}, its input computed as it is read, "
                       "into the result")
            continue
        strides = layout.contiguous_strides(node.shape)
        buffer = TempBuffer(temp_align)
        target = (buffer, node.dtype, node.shape, strides, 0)
        steps.append(Step(plan_reduce(node, source, target, positions), len(temps)))
        leaf = graph.leaf(buffer, node.dtype, node.shape, strides, 0)
        positions[leaf] = len(params) + len(temps)
        temps.append((node.dtype, node.shape))
        subst[node.serial] = leaf
        why.append(f"kernel {len(steps)}: {label}, its input computed as it is read, into a "
                   f"temporary {node.shape} that a later kernel reads")
    if not direct:
        rebuilt = [(rebuild(node, subst), target) for node, target in outputs]
        used = roots_params([n for n, _ in rebuilt])[0]
        plan = plan_kernel(rebuilt, {p: positions[p] for p in used})
        steps.append(Step(plan, -1))
        why.append(f"kernel {len(steps)}: the elementwise work after the reductions, reading "
                   "their results broadcast back over the reduced axes (a reduction's result "
                   "is complete only once every element is folded in)")
    return Program(tuple(steps), tuple(temps), tuple(why))


def rebuild(node: graph.Node, subst: dict) -> graph.Node:
    """``node``'s graph with each reduction replaced by ``subst[its serial]`` (a leaf)."""
    memo: dict[int, graph.Node] = {}

    def visit(n: graph.Node) -> graph.Node:
        found = subst.get(n.serial) or memo.get(n.serial)
        if found is not None:
            return found
        if n.kind in ("leaf", "scalar"):
            return n
        inputs = [visit(i) for i in n.inputs]
        if n.kind == "cast":
            result = graph.cast(inputs[0], n.dtype)
        elif n.kind == "op":
            result = graph.op(n.attrs[0], tuple(inputs), n.attrs[1])
        else:
            raise ValueError(f"{n.label()} was not cut before its consumer")
        memo[n.serial] = result
        return result

    return visit(node)


def reduction_row(plan: ReducePlan):
    return REDUCTIONS[plan.reduction]


__all__ = ["KernelPlan", "Program", "ReducePlan", "Step", "has_reduction", "plan_program",
           "plan_reduce", "rebuild", "reduction_row"]
