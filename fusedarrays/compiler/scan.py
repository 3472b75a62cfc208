"""A scan node (``ir/scans.py``) → a :class:`ScanPlan`: one kernel computing a cumulative sum or
product along one axis.

Pure. The planner cuts a graph at its scans as at its reductions (``compiler/planner.py``):
the scan's input expression — every elementwise producer under it — is computed inside the
scan's kernel as it is read, and what reads the scan's result reads it from a buffer. A scan
kernel walks *rows*: the other axes, collapsed (each row one output row), and the scanned axis,
never collapsed, indexed through each operand's stride along it, so any axis of any view
(transposed, negative steps) is scanned in place of its memory order; the result goes to any
view too.

Schedules on cuda (the code is ``compiler/scan_codegen.py``): ``rows`` — a block per row, in
tiles of ``SCAN_CHUNK`` elements per thread: the tile is read coalesced into shared memory, each
thread scans its contiguous chunk serially, the block scans the chunks' totals (a fixed
Hillis-Steele order), each element gets its chunk's prefix and the running total of the row's
earlier tiles, and the tile is stored coalesced; for rows whose elements are contiguous (or
broadcast) and long. ``cols`` — a thread per row walking it in order (NumPy's own sequential
loop), neighbouring threads neighbouring rows: for scans over outer axes and short rows. The
cpu target walks each row in order, chunks of rows on threads. No atomics: the order of
every addition is a function of the shape and the schedule, the same bits every run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .. import config
from ..ir import graph, layout
from ..ir.dtypes import CODES
from . import keys
from .plan import (
    Instr,
    Operand,
    instructions,
    number_params,
    operand_param_types,
)
from .protocol import Plan

SCAN_CHUNK = 8          # elements a thread scans serially per tile (cuda rows)
ROWS_MIN_LENGTH = 128   # shorter rows, a thread each: a block would idle most of its threads


@dataclass(frozen=True)
class ScanPlan(Plan):
    kind = "scan"
    scan: str               # a row of ir/scans.py
    kept: tuple             # collapsed extents of the other axes (one row each)
    length: int             # the scanned axis's extent in the input
    initial: bool           # include_initial: the result is one longer, starting at the identity
    operands: tuple[Operand, ...]  # inputs (strides: kept, then along the scan), then the output
    scalars: tuple[tuple[object, np.dtype], ...]
    body: tuple[Instr, ...]  # the input expression, per element
    value: int              # the variable holding the element to combine
    key_parts: tuple[tuple[str, str], ...]
    key: str
    schedule: str = "rows"  # cuda: rows (a block per row) or cols (a thread per row)
    sources: tuple[int, ...] = ()
    scalar_sources: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        """Rows (the kernel's ``n``); 0 where the result is empty."""
        return layout.size_of(self.kept) if self.length + self.initial else 0

    @property
    def dims(self) -> tuple:
        """The walk: kept extents, then the scanned axis (operand strides follow them)."""
        return self.kept + (self.length,)

    @property
    def name(self) -> str:
        return "fs_" + self.key[:16]

    @property
    def value_code(self) -> str:
        return self.body[self.value].code

    def int_params(self) -> list[str]:
        """Kept extents ``d_j``, the scanned extent ``e0``, then per operand its offset ``b_k``,
        kept strides ``s_k_j`` and stride along the scan ``t_k``."""
        names = [f"d{j}" for j in range(len(self.kept))] + ["e0"]
        for k in range(len(self.operands)):
            names += [f"b{k}"] + [f"s{k}_{j}" for j in range(len(self.kept))] + [f"t{k}"]
        return names

    def int_args(self) -> list[int]:
        ints = list(self.kept) + [self.length]
        for o in self.operands:
            ints += [o.offset, *o.strides]
        return ints

    param_types = operand_param_types

    def geometry(self) -> tuple:
        # a reduction's launch shapes: a block per row (rows) or a thread per row (cols)
        return ("reduce", self.schedule, self.size)


def plan_scan(node: graph.Node, source: graph.Node, target: tuple,
              positions: dict) -> ScanPlan:
    """Plan scan ``node`` of the expression ``source`` (its input, with earlier reductions and
    scans already cut out) into ``target`` = ``(buffer, dtype, shape, strides, offset)`` of the
    scan's shape; ``positions`` gives each param of ``source`` its place in the evaluation's
    params."""
    name, axis, initial = node.attrs
    shape = source.shape
    views, scalars, var_of, sources = number_params(
        source.params if source.params is not None else [source], positions, shape)
    body, var = instructions([source], var_of)
    buffer, dtype, _, ostrides, ooffset = target
    others = [k for k in range(len(shape)) if k != axis]
    along = [v[2][axis] for v in views] + [ostrides[axis]]
    kept, kept_sets = layout.collapse(tuple(shape[k] for k in others),
                                      [tuple(v[2][k] for k in others) for v in views]
                                      + [tuple(ostrides[k] for k in others)])
    length = shape[axis]
    operands = tuple(Operand(b, dt, kept_sets[k] + (along[k],), off,
                             "U" if along[k] == 1 else "S", False)
                     for k, (b, dt, _, off) in enumerate(views))
    operands += (Operand(buffer, np.dtype(dtype), kept_sets[-1] + (along[-1],), ooffset,
                         "U" if along[-1] == 1 else "S", True),)
    schedule = choose_schedule(length, along[:-1])
    canonical = "\n".join(f"{i.var}={i.kind}:{i.arg}:{','.join(map(str, i.inputs))}:{i.code}"
                          for i in body)
    parts = keys.structure_parts((
        ("graph", hashlib.sha256(canonical.encode()).hexdigest()[:32]),
        ("scan", f"{name} of v{var[source.serial]} into {CODES[np.dtype(dtype)]}"
                 + (", initial element" if initial else "")),
        keys.operands_part(operands),
        ("scalars", " ".join(CODES[s[1]] for s in scalars) or "-"),
        ("rank", f"{len(kept)} kept"),
        ("schedule", schedule),
        ("config", repr(config.codegen_settings())),
    ))
    return ScanPlan(name, kept, length, bool(initial), operands,
                    tuple((v, dt) for v, dt, _ in scalars), tuple(body), var[source.serial],
                    parts, keys.digest(parts), schedule, tuple(sources),
                    tuple(p for _, _, p in scalars))


def choose_schedule(length: int, strides: list) -> str:
    """``rows`` (a block per row) where the block's threads read neighbouring elements of a
    long row; else ``cols`` (a thread per row): scans over outer axes, and short rows."""
    inner = all(abs(t) <= 1 for t in strides)
    return "rows" if inner and length >= ROWS_MIN_LENGTH else "cols"
