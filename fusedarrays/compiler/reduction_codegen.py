"""ReducePlan → the pieces of a reduction kernel's source every target's schedules share.

Pure text, like :mod:`.codegen`, whose renderer writes the per-element expression (the
reduction's input, computed as it is read). The accumulator's type comes from
:func:`~..ir.reductions.accumulator_code` (float16 in float32; float32 sums in float64 where
the target asks, ``wide_sums``), its folding statements from the reduction's row.
:class:`ReduceRenderer` gives an output's (or a part's) elements folded in order, its store,
and the serial fold of a split output's partials; the schedules (``compiler/reduction.py``) are
each target's (``targets/cuda/reduce.py``: a thread or a block per output, the partials folded
in the same launch; ``targets/cpu.py``: chunks of outputs, then a fold pass).

Split (``plan.split > 1``, ``reduction.choose_split``: few outputs of many elements), each item
is a part ``g`` of output ``o``: its elements ``lo`` to ``hi`` are folded into a partial
result, stored in the partials operand (the one before the result), and the partials are folded
into the result in a fixed order: ``fold_serial`` (parts in order, one thread), or on cuda, for
128 parts and more lying side by side, by a block (``targets/cuda/reduce.py``), so the bits are
a function of shape and schedule only.
"""

from __future__ import annotations

import re

from ..ir.dtypes import BY_CODE, COMPUTE_CODE, ROUNDED
from ..ir.reductions import REDUCTIONS, accumulator_code, identity
from .codegen import _indent, _Renderer, cast
from .reduction import ReducePlan
from .rowfusion import step

_INF = "(1e308 * 10.0)"   # a float infinity every target folds (the simulator has no math.inf)
_ACC = re.compile(r"\bacc\b")   # a fold statement's accumulator, renamed for the partials' fold


class ReduceRenderer:
    """A reduction plan's accumulator ``acc`` (code :attr:`acc`), the folding of its elements
    (and, split, of its partials: :attr:`facc`), its kept coordinates and its stores."""

    def __init__(self, plan: ReducePlan, wide_sums: bool):
        self.plan = plan
        self.row = REDUCTIONS[plan.reduction]
        self.acc = accumulator_code(plan.reduction, plan.value_code, wide_sums)
        self.element = _Renderer(plan)   # reads body, operands (U or S) and schedule only
        self.inputs = [k for k, o in enumerate(plan.operands) if not o.output]
        self.out = len(plan.operands) - 1
        self.split = plan.split > 1
        if self.split:   # the partials (the output before the result) and their fold's types
            self.partials = self.out - 1
            self.pcode = plan.operands[self.partials].code
            self.facc = accumulator_code(plan.reduction, self.pcode, wide_sums)

    def part(self) -> list[str]:
        """Output ``o`` of the kernel's item ``op`` and, split, its part ``g``: elements ``lo``
        to ``hi`` of it, stored ``gstep * g`` after the output's place (see partials_shape)."""
        if not self.split:
            return ["o = op"]
        if self.plan.schedule == "rows":
            lines = ["o = op // gs", "g = op - o * gs", "gstep = cv_i64(1)"]
        else:
            lines = ["gstep = n // gs", "g = op // gstep", "o = op - g * gstep"]
        return lines + ["lo = g * gc", "hi = min(lo + gc, kk)"]

    def coordinates(self) -> list[str]:
        """Each input's index ``i<k>`` of the element at flat index ``j`` (C order)."""
        rank = len(self.plan.red)
        coords = [f"x{rank - 1} = j % e{rank - 1}", f"q = j // e{rank - 1}"] if rank > 1 else []
        for j in range(rank - 2, 0, -1):
            coords += [f"x{j} = q % e{j}", f"q = q // e{j}"]
        coords.append("x0 = q" if rank > 1 else "x0 = j")
        return coords + [f"i{k} = o{k} + " + " + ".join(
            step(self.plan.operands[k], k, j, rank) for j in range(rank)) for k in self.inputs]

    def serial(self) -> list[str]:
        """One thread's walk over its output's elements (or its part's), in order."""
        if not self.split:
            return self.nested()
        return ["for j in range(lo, hi):"] + _indent(self.coordinates() + self.fold())

    def per_output(self) -> list[str]:
        return (self.part() + self.kept_bases("o") + self.start() + self.serial()
                + [self.store()])

    # -- pieces --------------------------------------------------------------------------------
    def start(self) -> list[str]:
        lines = [f"acc = cv_{self.acc}({self.identity(self.plan.value_code)})"]
        return lines + (["idx = cv_i64(0)"] if self.row.arg else [])

    def identity(self, code: str) -> str:
        value = identity(self.plan.reduction, _dtype(COMPUTE_CODE[code]))
        if isinstance(value, float):
            if value != value:      # nanmax/nanmin start from NaN
                return f"({_INF} - {_INF})"
            return _INF if value > 0 else f"-{_INF}"
        return str(int(value))

    def fold(self) -> list[str]:
        """The element's lines (loads at index ``i<k>``) and its folding into ``acc``."""
        return self.value() + self.combine()

    def value(self) -> list[str]:
        """The element's lines (loads at index ``i<k>``), its value as the accumulator's type
        in ``v``."""
        def load(ins, ln):
            return f"ld_{self.plan.operands[ins.arg].access}(p{ins.arg}, i{ins.arg})"
        lines = self.element.lines_at(2, "", load)
        value = self.element.convert(self.plan.value, self.acc, "")
        return lines + [f"v = {value}"]

    def combine(self) -> list[str]:
        """``v`` folded into ``acc``."""
        return [s.format(v="v") for s in self.row.combine]

    def base(self, j: int) -> list[str]:
        """Each input's base ``r<k>_<j>`` at coordinate ``x<j>`` of reduced axis ``j``."""
        rank = len(self.plan.red)
        prev = "o" if j == 0 else "r"
        return [f"r{k}_{j} = {prev}{k}{'' if j == 0 else f'_{j - 1}'} + "
                + step(self.plan.operands[k], k, j, rank) for k in self.inputs]

    def kept_bases(self, o: str) -> list[str]:
        """Coordinates of output ``o`` over the kept axes, and each operand's base there."""
        rank = len(self.plan.kept)
        last = rank - 1
        lines = [f"c{last} = {o} % d{last}", f"q = {o} // d{last}"] if rank > 1 else []
        for j in range(last - 1, 0, -1):
            lines += [f"c{j} = q % d{j}", f"q = q // d{j}"]
        lines.append("c0 = q" if rank > 1 else f"c0 = {o}")
        for k in range(len(self.plan.operands)):
            terms = " + ".join(f"c{j} * s{k}_{j}" for j in range(rank))
            lines.append(f"o{k} = b{k} + {terms}")
        return lines

    def nested(self) -> list[str]:
        """Every element of one output in C order: nested loops over the reduced axes."""
        rank = len(self.plan.red)
        inner = self.innermost(rank - 1)
        for j in range(rank - 2, -1, -1):
            inner = [f"for x{j} in range(e{j}):"] + _indent(self.base(j) + inner)
        return (["j = cv_i64(0)"] if self.row.arg else []) + inner

    def innermost(self, last: int) -> list[str]:
        """The loop over the last reduced axis (a target may block it: ``targets/cpu.py``)."""
        inner = [f"i{k} = r{k}_{last}" for k in self.inputs] + self.fold()
        if self.row.arg:
            inner.append("j += 1")
        return [f"for x{last} in range(e{last}):"] + _indent(self.base(last) + inner)

    def store(self, acc: str = "acc", idx: str = "idx") -> str:
        """The item's result: an output's, or, split, its part's partial."""
        if self.split:
            return self.store_in(self.partials, f"o{self.partials} + g * gstep", acc, self.acc)
        return self.store_in(self.out, f"o{self.out}", idx if self.row.arg else acc, self.acc)

    def store_in(self, k: int, where: str, value: str, code: str) -> str:
        out = self.plan.operands[k].code
        if not self.row.arg and COMPUTE_CODE[out] != code:
            value = f"cv_{out}({value})"
        return f"st_{self.plan.operands[k].access}(p{k}, {where}, {value})"

    # -- the partials' fold (split) --------------------------------------------------------------
    def fold_statements(self, templates, value: str) -> list[str]:
        """A fold statement over the partials' accumulator ``facc`` and ``value``."""
        return [_ACC.sub("facc", t.format(v=value, w=value)) for t in templates]

    def fold_value(self, j: str) -> list[str]:
        """``fv``: partial ``j`` of output ``o`` as the fold's accumulator type."""
        k = self.partials
        load = f"ld_{self.plan.operands[k].access}(p{k}, o{k} + {j} * gstep)"
        have = self.pcode
        if have == self.facc or (self.facc not in ROUNDED and COMPUTE_CODE[have] == self.facc):
            return [f"fv = {load}"]
        return [f"fv = {cast(have, self.facc, load)}"]

    def fold_serial(self) -> list[str]:
        """Output ``o``'s partials in order into its result (one thread)."""
        return ([f"facc = cv_{self.facc}({self.identity(self.pcode)})",
                 "for jg in range(gs):"]
                + _indent(self.fold_value("jg") + self.fold_statements(self.row.combine, "fv"))
                + [self.store_in(self.out, f"o{self.out}", "facc", self.facc)])

    def hoisted(self) -> list[str]:
        return self.element._constant_loads(0, lambda k: f"b{k}")


def _dtype(code: str):
    return BY_CODE[code]
