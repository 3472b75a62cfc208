"""One kernel for reductions over rows and the elementwise work that reads them back: softmax,
``x - x.max(axis=-1, keepdims=True)``, a layer norm.

Pure. Where every reduction of a graph reduces the same axes of an expression of the result's
shape, keeps its dims, and is reduced by a block per output (``compiler/reduction.py``), the
planner makes one :class:`RowPlan` instead of a kernel per reduction and one after them: a block
takes a row (an output of the reductions), and for each reduction in order walks the row's
elements, reduces them by the block's fixed tree, and thread 0 puts the row's result in shared
memory; after a barrier every thread takes it from there, the next sections read it as they
would a broadcast operand, and the last section computes and stores the row's elements of the
result. The row is read once per section; a row of up to a few tens of KiB stays in L1/L2
between them. The cpu target runs the sections of a row one after another, passing each
result through the reduction's temporary (which the cuda kernel leaves unwritten).

What is constant along a row (a reduction's result, an operand broadcast over the row, and
whatever is computed from them alone: a layer norm's ``sqrt(var + eps)``) is an operand of class
``B`` and computed once per row, before the walk of the first section that reads it. On cuda,
where every operand read per element has unit stride along the row, 16-byte aligned rows and a
row length that is a multiple of the lanes, each thread walks whole 16-byte vectors (``ldv``,
``stv``): a row's elements cost a quarter of the loop and index work (more with float16).

The first walk reads the row from memory: a thread issues the loads of ``FIRST_TURN`` of its vectors
before it waits on the first. Where a thread's share of the row is at most that many vectors (and
``ROW_CACHE_ELEMENTS`` elements) under a block of ``BLOCK_THREADS`` — a 4096-float row: four
vectors, sixteen floats a thread — the plan keeps it (``row_slots``, a key part): on cuda each
thread holds its ``row_slots`` vectors in registers across the walks, loaded once, and every
per-element value an earlier walk computed (the planner merges repeated instructions: the softmax's
``exp(x - max)`` of the sum and of the output is one value; a layer norm's ``x - mean`` likewise) is
taken from its variable rather than computed again, so a softmax reads ``x`` once and takes one
``exp`` an element. A slot past the row's end loads the row's last vector (a real element, computed
and dropped) and neither folds nor stores. Each element's operations and each thread's folding order
are today's, so the bits are the same. Such a kernel needs ``row_slots * blockDim`` vectors to cover
a row: cuda's blocks are ``BLOCK_THREADS`` wide, and the plan's geometry names the width the
simulator must launch (``RowPlan.geometry``). Longer rows read the row again in each walk (from
L1/L2). The cpu target walks as before.

A float32 division of an element by a row's constant (a softmax's sum, a layer norm's
``sqrt(var + eps)``) takes the row's reciprocal once and two fmas an element on cuda
(``compiler/divisions.by_reciprocal``, ``cuda/division.py``): the same quotient as a division,
bit for bit.

The source: :class:`RowRenderer` writes the sections and walks every target shares; the targets'
modules (``targets/cuda/rows.py``, ``targets/cpu.py``) say how a walk moves and how a section's
result reaches the sections after it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .. import config
from ..ir import graph, layout
from ..ir.dtypes import BY_CODE, CODES, COMPUTE_CODE
from ..ir.reductions import BLOCK_THREADS, REDUCTIONS, accumulator_code, identity
from . import keys
from .codegen import _indent, _Renderer
from .plan import (
    Instr,
    Operand,
    instructions,
    number_params,
    operand_param_types,
)
from .protocol import Plan


@dataclass(frozen=True)
class RowPlan(Plan):
    kind = "rows"
    kept: tuple             # collapsed extents of the rows (one block each)
    red: tuple              # collapsed extents of a row
    operands: tuple[Operand, ...]   # strides: kept then row; temporaries are inputs here
    scalars: tuple[tuple[object, np.dtype], ...]
    body: tuple[Instr, ...]
    sections: tuple[tuple[str, int, int], ...]   # (reduction, value var, temporary operand)
    stores: tuple[tuple[int, int], ...]          # (value var, output operand)
    key_parts: tuple[tuple[str, str], ...]
    key: str
    sources: tuple[int, ...] = ()
    scalar_sources: tuple[int, ...] = ()
    vector_width: int = 1   # cuda: elements per 16-byte access along a row (module docstring)
    row_slots: int = 0      # cuda: vectors a thread keeps across the walks (0: none; docstring)
    schedule = "rows"

    size = property(lambda self: layout.size_of(self.kept))
    name = property(lambda self: "fw_" + self.key[:16])
    dims = property(lambda self: self.kept + self.red)   # the walk the strides follow

    def int_params(self) -> list[str]:
        names = [f"d{j}" for j in range(len(self.kept))] + [f"e{j}" for j in range(len(self.red))]
        for k in range(len(self.operands)):
            names += [f"b{k}"] + [f"s{k}_{j}" for j in range(len(self.kept))]
            names += [f"t{k}_{j}" for j in range(len(self.red))]
        return names

    def elements_walked(self) -> int:
        return self.size * layout.size_of(self.red)

    def int_args(self) -> list[int]:
        ints = list(self.kept) + list(self.red)
        for o in self.operands:
            ints += [o.offset, *o.strides]
        return ints

    param_types = operand_param_types

    def geometry(self) -> tuple:
        if not self.row_slots:
            return ("reduce", "rows", self.size)
        # the block width whose slots cover a row (cuda's BLOCK_THREADS always do): the
        # simulator launches at least this many threads a block
        per_row = -(-layout.size_of(self.red) // (self.vector_width * self.row_slots))
        return ("reduce", "rows", self.size, 1 << max(per_row - 1, 0).bit_length())


def plan_rows(reductions: list, sources: list, temps: list, final: graph.Node, target: tuple,
              positions: dict) -> RowPlan:
    """The one-kernel plan: ``reductions`` (nodes, in order) of ``sources`` (their inputs with
    earlier reductions replaced by the leaves ``temps``), then ``final`` (the result with every
    reduction replaced) into ``target``. The caller checked :func:`fusible`."""
    shape = final.shape
    axes = reductions[0].attrs[1]
    params: dict = {}
    for root in [*sources, final]:
        params.update((p, None) for p in (root.params if root.params is not None else [root]))
    views, scalars, var_of, sources_at = number_params(params, positions, shape)
    body, var = instructions([*sources, final], var_of)
    buffer, dtype, _, ostrides, ooffset = target
    views.append((buffer, np.dtype(dtype), tuple(ostrides), ooffset))
    kept_axes = [k for k in range(len(shape)) if k not in axes]
    kept, kept_sets = layout.collapse(tuple(shape[k] for k in kept_axes),
                                      [tuple(v[2][k] for k in kept_axes) for v in views])
    red, red_sets = layout.collapse(tuple(shape[k] for k in axes),
                                    [tuple(v[2][k] for k in axes) for v in views])
    out = len(views) - 1
    operands = tuple(Operand(b, dt, kept_sets[k] + red_sets[k], off,
                             row_class(red_sets[k], k == out), k == out)
                     for k, (b, dt, _, off) in enumerate(views))
    width = row_vector_width(operands, len(kept), red,
                             [getattr(b, "align", 256) for b, *_ in views])
    # the operands read per element, and those the first walk reads
    walked = {i.arg for i in body if i.kind == "load" and operands[i.arg].layout != "B"}
    first = {i.arg for i in body[:var[sources[0].serial] + 1] if i.kind == "load"}
    slots = row_slots(body, red, width, late=bool(walked - first))
    sections = tuple((r.attrs[0], var[s.serial], var_of[t.serial])
                     for r, s, t in zip(reductions, sources, temps))
    stores = ((var[final.serial], len(operands) - 1),)
    canonical = "\n".join(f"{i.var}={i.kind}:{i.arg}:{','.join(map(str, i.inputs))}:{i.code}"
                          for i in body)
    parts = keys.structure_parts((
        ("graph", hashlib.sha256(canonical.encode()).hexdigest()[:32]),
        ("rows", " then ".join(f"{n} of v{v} into operand {t}" for n, v, t in sections)
         + f", then v{stores[0][0]} stored"),
        keys.operands_part(operands),
        ("scalars", " ".join(CODES[s[1]] for s in scalars) or "-"),
        ("rank", f"{len(kept)} kept, {len(red)} reduced"),
        ("vector_width", str(width)),
        ("row_cache", f"{slots} vectors a thread" if slots else "none"),
        ("config", repr(config.codegen_settings())),
    ))
    return RowPlan(kept, red, operands, tuple((v, dt) for v, dt, _ in scalars), tuple(body),
                   sections, stores, parts, keys.digest(parts), tuple(sources_at),
                   tuple(p for _, _, p in scalars), width, slots)


def fusible(reductions: list, final_shape: tuple) -> bool:
    """Whether the shapes allow one kernel: every reduction keeps its dims over the same axes
    of an expression of the result's shape, and none is an argmax/argmin (the planner then
    also wants each reduced a block per row)."""
    if not reductions:
        return False
    axes = reductions[0].attrs[1]
    return all(r.attrs[2] and r.attrs[1] == axes and r.inputs[0].shape == final_shape
               and not REDUCTIONS[r.attrs[0]].arg for r in reductions)


def row_class(red_strides: tuple, output: bool) -> str:
    """An operand's class in a row kernel: ``B`` where it is constant along the row (read once
    per row), else its :func:`unit_class`. The result is never ``B``: it is written per element."""
    return "B" if not output and not any(red_strides) else unit_class(red_strides)


def row_vector_width(operands: tuple, krank: int, red: tuple, aligns: list) -> int:
    """Lanes per 16-byte access along a row (1: element by element): every operand read or
    written per element (not ``B``) has unit stride along one collapsed row axis, one lane count
    for its dtype, a 16-byte aligned buffer and first element, and kept strides that keep every
    row's start aligned; the row's length is a multiple of the lanes."""
    walked = [(o, a) for o, a in zip(operands, aligns) if o.layout != "B"]
    if len(red) != 1 or any(o.layout != "U" for o, _ in walked):
        return 1
    lanes = {layout.VECTOR_LANES.get(o.code, 1) for o, _ in walked}
    width = lanes.pop() if len(lanes) == 1 else 1
    if width == 1 or red[0] % width:
        return 1
    for o, align in walked:
        size = o.dtype.itemsize
        if align % layout.VECTOR_BYTES or any(
                (step * size) % layout.VECTOR_BYTES for step in (o.offset, *o.strides[:krank])):
            return 1
    return width


# Vectors a thread loads at once in a row's first walk, the one that reads the row from memory
# (4: a 4096-float row's whole share of a thread under a block of 256): their loads in flight
# together rather than one a loop turn. The later walks find the row in L1 and walk a vector a
# turn: two a turn in every walk took registers, so fewer blocks an SM, and measured slower on
# the H100 (softmax 0.83, layer norm 0.79 of a copy, against 0.88 and 0.88 this way).
FIRST_TURN = 4


# Elements a thread may keep in registers across a row's walks (with whatever per-element values
# later walks need): a 4096-float row's share under BLOCK_THREADS.
ROW_CACHE_ELEMENTS = 16


def row_slots(body: list, red: tuple, width: int, late: bool = False) -> int:
    """Vectors a thread keeps across the walks (module docstring): the fewest that cover a row
    under ``BLOCK_THREADS`` threads, where that is at most ``FIRST_TURN`` and
    ``ROW_CACHE_ELEMENTS`` elements; 0 (walk as before) for longer or empty rows, rows walked
    element by element, bodies with draws or gathers (whose walks place elements by index), and
    bodies reading an operand per element first in a later walk (``late``: a layer norm's
    weight and bias): the benchmark's layer norm, so kept, measured 0.69
    of a copy on the H100 against 0.77 reading the row again, either way its later loads were
    issued (all at once, or a slot's before its work), where softmax went from 0.91 to 0.97."""
    if width == 1 or late or any(i.kind in ("random", "gather") for i in body):
        return 0
    slots = -(-(layout.size_of(red) // width) // BLOCK_THREADS)
    return slots if 0 < slots <= min(FIRST_TURN, max(1, ROW_CACHE_ELEMENTS // width)) else 0


def unit_class(red_strides: tuple) -> str:
    """An operand's class in a reduction kernel: ``U`` where its innermost reduced stride is 1
    (the kernel indexes it without a multiplication there), else ``S``. Never ``C``: every
    operand of a reduction kernel takes its offset as a parameter."""
    return "U" if red_strides[-1] == 1 else "S"


# -- code --------------------------------------------------------------------------------------
def step(operand, k: int, j: int, rank: int) -> str:
    """Operand ``k``'s index term along reduced axis ``j``: no multiplication along the
    innermost axis of a ``U`` operand (stride 1)."""
    return f"x{j}" if operand.layout == "U" and j == rank - 1 else f"x{j} * t{k}_{j}"


class _Shim:
    """What :class:`_Renderer` reads of a plan, for one section."""

    def __init__(self, plan: RowPlan, body: list):
        self.body, self.operands, self.schedule = body, plan.operands, "nd"


def _renderer(plan: RowPlan, body: list) -> _Renderer:
    """The element renderer of a row kernel's instructions ``body`` (its divisions by a row's
    constant: ``fa_rowdivby``)."""
    return _Renderer(_Shim(plan, body), rows=True)


def _needed(plan: RowPlan, var: int) -> list[Instr]:
    """The instructions computing ``var``, in order."""
    want, by_var = {var}, {i.var: i for i in plan.body}
    for ins in reversed(plan.body):
        if ins.var in want:
            want.update(ins.inputs)
    return [by_var[v] for v in sorted(want)]


class RowRenderer:
    """A row kernel's sections and its result's walk, as every target writes them: each
    section's accumulator ``acc<number>`` folds its walk of the row, and :meth:`result` (the
    target's) hands the row's result to the sections after it; the last walk stores the
    result's elements. :attr:`width`: elements per access along the row (1: one at a time);
    :attr:`steps`: where a walk starts and how it moves on (one thread: every element);
    :attr:`wide_sums`: the target's accumulators (``ir/reductions.accumulator_code``)."""

    width = 1
    steps = ("j = 0", "j += 1")
    wide_sums = False

    def __init__(self, plan: RowPlan):
        self.plan = plan
        self.shared: dict = {}    # the kernel's shared arrays, name → (size, type)
        self.rows: dict = {}      # temporary → the name a section's result has in the kernel

    def renderer(self, var: int) -> _Renderer:
        """The element renderer of the instructions computing ``var``."""
        return _renderer(self.plan, _needed(self.plan, var))

    def constants(self, r: _Renderer) -> list[str]:
        """The values constant along the row (level 1, once per row; an earlier section's
        result by its name in :attr:`rows` where it has one)."""
        plan = self.plan
        return r.lines_at(1, "", lambda ins, lane: self.rows.get(ins.arg)
                          or f"ld_{plan.operands[ins.arg].access}(p{ins.arg}, o{ins.arg})")

    def walk(self, r: _Renderer, per_element, after, first: bool = False) -> list[str]:
        """A pass over the row's elements: :meth:`constants`, then per element its values,
        ``per_element(lane)`` and ``after(at)`` (``first``: the walk that reads the row
        from memory)."""
        plan = self.plan
        element = r.lines_at(2, "", lambda ins, lane: f"ld_{plan.operands[ins.arg].access}"
                                                     f"(p{ins.arg}, i{ins.arg})")
        element += per_element("")
        return self.constants(r) + [self.steps[0], "while j < kk:"] + _indent(
            row_coordinates(plan) + element + after("j") + [self.steps[1]])

    def section(self, number: int, section: tuple) -> list[str]:
        """One reduction of the row: its walk, then :meth:`result`."""
        plan = self.plan
        name, value, temp = section
        element = self.renderer(value)
        acc = accumulator_code(name, plan.body[value].code, self.wide_sums)
        start = identity(name, BY_CODE[COMPUTE_CODE[plan.body[value].code]])
        text = ("(1e308 * 10.0)" if start > 0 else "-(1e308 * 10.0)") if isinstance(
            start, float) else str(int(start))
        if start != start:      # nanmax/nanmin start from NaN
            text = "((1e308 * 10.0) - (1e308 * 10.0))"
        # each section's own names: their types differ (an any's byte, a sum's float64)
        a, u = f"acc{number}", f"u{number}"

        def fold(lane: str) -> list[str]:   # the element's value u<number>, then its fold
            return [f"{u} = {element.convert(value, acc, lane)}"] + [
                s.format(v=u).replace("acc", a) for s in REDUCTIONS[name].combine]
        out = plan.operands[temp].code
        result = a if COMPUTE_CODE[out] == acc else f"cv_{out}({a})"
        walk = self.section_walk(number, element, fold, acc)
        return self.result(number, section, acc, [f"{a} = cv_{acc}({text})"] + walk, result)

    def section_walk(self, number: int, r: _Renderer, fold, acc: str) -> list[str]:
        """Section ``number``'s pass over the row: :meth:`walk` folding each element (``fold
        (lane)``: the element's value ``u<number>``, then the lines folding it into the
        section's accumulator, of type ``acc``); a target may walk it otherwise."""
        return self.walk(r, fold, lambda at, lanes=None: [], number == 0)

    def result(self, number: int, section: tuple, acc: str, lines: list[str],
               result: str) -> list[str]:
        """``lines`` (section ``number``'s walk, its accumulator of type ``acc``), then its
        ``result`` made the value of the section's temporary for the sections after it."""
        raise NotImplementedError

    def body(self) -> list[str]:
        """Every section, then the walk storing the result's elements."""
        plan, width = self.plan, self.width
        body = []
        for number, section in enumerate(plan.sections):
            body += self.section(number, section)
        var, out = plan.stores[0]
        final = self.renderer(var)
        code = plan.operands[out].code

        def store(at: str, lanes=lambda lane: f"_{lane}") -> list[str]:
            if width == 1:
                store = f"st_{plan.operands[out].access}"
                return [f"{store}(p{out}, i{out}, {final.convert(var, code, '')})"]
            values = ", ".join(final.convert(var, code, lanes(lane)) for lane in range(width))
            return [f"stv{width}_{code}(p{out}, ov{out} + {at}, {values})"]
        return body + self.walk(final, lambda lane: [], store)

    def hoisted(self) -> list[str]:
        return _renderer(self.plan, list(self.plan.body))._constant_loads(0, lambda k: f"b{k}")


def row_coordinates(plan: RowPlan) -> list[str]:
    """Each operand's index ``i<k>`` of the row's element at flat index ``j`` (C order); none
    for ``B`` operands, read at the row's base."""
    rank = len(plan.red)
    coords = [f"x{rank - 1} = j % e{rank - 1}", f"q = j // e{rank - 1}"] if rank > 1 else []
    for j in range(rank - 2, 0, -1):
        coords += [f"x{j} = q % e{j}", f"q = q // e{j}"]
    coords.append("x0 = q" if rank > 1 else "x0 = j")
    return coords + [f"i{k} = o{k} + " + " + ".join(step(o, k, j, rank) for j in range(rank))
                     for k, o in enumerate(plan.operands) if o.layout != "B"]


def row_bases(plan, width: int = 1) -> list[str]:
    """Row ``op``'s coordinates over the kept axes and each operand's base ``o<k>`` there (and,
    vectorised, ``ov<k>`` in vectors: the planner checked that every row start is aligned)."""
    krank = len(plan.kept)
    row = [f"c{krank - 1} = op % d{krank - 1}", f"q = op // d{krank - 1}"] if krank > 1 else []
    for j in range(krank - 2, 0, -1):
        row += [f"c{j} = q % d{j}", f"q = q // d{j}"]
    row.append("c0 = q" if krank > 1 else "c0 = op")
    row += [f"o{k} = b{k} + " + " + ".join(f"c{j} * s{k}_{j}" for j in range(krank))
            for k in range(len(plan.operands))]
    if width > 1:
        row += [f"ov{k} = o{k} // {width}" for k, o in enumerate(plan.operands)
                if o.layout != "B"]
    return row
