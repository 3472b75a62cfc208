"""A reduction node → a :class:`ReducePlan`: one kernel folding each output's elements.

Pure. The general planner (``compiler/planner.py``) cuts a graph at its reductions and plans each
here: the reduction's input expression — every elementwise producer under it, down to the leaves
and to earlier reductions' results — is computed inside its kernel, per element, as it is read
(``((x - y)**2).sum()`` is one kernel and no temporary).

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

import dataclasses
import hashlib

import numpy as np

from .. import config
from ..ir import graph, layout
from ..ir.dtypes import CODES
from ..ir.reductions import REDUCTIONS
from . import keys
from .plan import Instr, Operand, instructions, number_params, operand_param_types
from .protocol import Plan
from .rowfusion import row_vector_width, unit_class


@dataclasses.dataclass(frozen=True)
class ReducePlan(Plan):
    kind = "reduce"
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
    vector_width: int = 1   # rows: lanes per 16-byte load of every input (reduce_vector_width)

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

    def elements_walked(self) -> int:
        return self.outputs * self.elements

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
    width = reduce_vector_width(name, schedule, body, operands[:len(views)], kept, red,
                                [getattr(b, "align", 256) for b, *_ in views])
    canonical = "\n".join(f"{i.var}={i.kind}:{i.arg}:{','.join(map(str, i.inputs))}:{i.code}"
                          for i in body)
    parts = (
        ("graph", hashlib.sha256(canonical.encode()).hexdigest()[:32]),
        ("reduction", f"{name} of v{var[source.serial]} into {CODES[np.dtype(dtype)]}"),
        keys.operands_part(operands),
        ("scalars", " ".join(CODES[s[1]] for s in scalars) or "-"),
        ("rank", f"{len(kept)} kept, {len(red)} reduced"),
        ("schedule", schedule),
        ("vector_width", str(width)),
        ("split", "no" if split == 1 else f"parts {'outer' if schedule == 'cols' else 'inner'}, "
                  "folded in the launch"),
        ("config", repr(config.codegen_settings())),
    )
    parts = keys.structure_parts(parts)
    # a part starts on a whole vector: its elements in whole 16-byte loads
    chunk = -(-layout.size_of(red) // (split * width)) * width if split > 1 else 0
    return ReducePlan(name, kept, red, operands, tuple((v, dt) for v, dt, _ in scalars),
                      tuple(body), var[source.serial], parts, keys.digest(parts), schedule,
                      tuple(sources), tuple(p for _, _, p in scalars), split, chunk, width)


def reduce_vector_width(name: str, schedule: str, body, inputs: tuple, kept: tuple, red: tuple,
                        aligns: list) -> int:
    """Lanes per 16-byte load of the ``rows`` walk (1: element by element): every input is
    contiguous along one collapsed reduced axis and aligned as a row kernel's must be
    (:func:`~.rowfusion.row_vector_width`), the body draws no random numbers and gathers
    nothing (those index per element), and the reduction keeps no index (argmax counts
    elements). A thread of a scalar walk has one 4-byte load of each input in flight at a
    time: 16 KB an SM at full occupancy, which held ``((x - y)**2).sum()`` to half of a copy's
    rate on the H200 (it needs ~40 KB in flight an SM)."""
    if schedule != "rows" or REDUCTIONS[name].arg or any(
            i.kind in ("random", "gather") for i in body):
        return 1
    # a kept axis of one output has no next output's start to keep aligned (a full reduction)
    inputs = tuple(dataclasses.replace(o, strides=tuple(
        0 if e == 1 else st for e, st in zip(kept, o.strides)) + o.strides[len(kept):])
        for o in inputs)
    return row_vector_width(inputs, len(kept), red, aligns)


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


def reduction_row(plan: ReducePlan):
    return REDUCTIONS[plan.reduction]


__all__ = ["ReducePlan", "choose_schedule", "choose_split", "partials_shape", "plan_reduce",
           "reduce_vector_width", "reduction_row"]
