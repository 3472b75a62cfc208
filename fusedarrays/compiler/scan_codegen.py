"""ScanPlan → the pieces of a scan kernel's source that every target's schedules share.

Pure text, like :mod:`.codegen`, whose renderer writes the per-element expression (the scan's
input, computed as it is read). The running value's type comes from
:func:`~..ir.scans.accumulator_code` (float16 in float32), the combining expression from the
scan's row. :class:`ScanRenderer` gives a row's element, its store and one thread's serial walk
along a row; the schedules (``compiler/scan.py``) that put them in loops are each target's
(``targets/cpu.py``: chunks of rows, each row in order; ``targets/cuda/scan.py``: a thread or a
block per row).
"""

from __future__ import annotations

from ..ir.dtypes import BY_CODE, COMPUTE_CODE
from ..ir.scans import SCANS, accumulator_code, initial_value, start_value
from .codegen import _indent, _Renderer
from .scan import ScanPlan


class ScanRenderer:
    """A scan plan's running value ``acc`` of code :attr:`acc`, its element ``v`` of row
    element ``j``, its stores, and one thread's serial walk (rows' bases ``o<k>``, length
    ``e0``)."""

    def __init__(self, plan: ScanPlan):
        self.plan = plan
        self.acc = accumulator_code(plan.value_code)
        self.element = _Renderer(plan)   # reads body, operands (U or S) and schedule only
        self.inputs = [k for k, o in enumerate(plan.operands) if not o.output]
        self.out = len(plan.operands) - 1
        dtype = BY_CODE[COMPUTE_CODE[self.acc]]
        self.start = self.constant(start_value(plan.scan, dtype))
        self.first = self.constant(initial_value(plan.scan, dtype))

    # -- pieces --------------------------------------------------------------------------------
    def constant(self, value) -> str:
        return f"cv_{self.acc}({value!r})" if isinstance(value, float) else \
            f"cv_{self.acc}({int(value)})"

    def combine(self, a: str, b: str) -> str:
        """``a`` then ``b`` combined, in the running type (integers narrower than 64 bits would
        widen: numba types ``int8 + int8`` as int64; the wrap-around is NumPy's either way)."""
        expr = SCANS[self.plan.scan].op.format(a=a, b=b)
        wide = BY_CODE[self.acc].kind == "f" or BY_CODE[self.acc].itemsize == 8
        return expr if wide else f"cv_{self.acc}({expr})"

    def index(self, k: int, j: str) -> str:
        """Operand ``k``'s index of the row's element ``j`` (no multiplication at stride 1)."""
        return f"o{k} + {j}" if self.plan.operands[k].layout == "U" else f"o{k} + {j} * t{k}"

    def value(self, j: str) -> list[str]:
        """The element ``j``'s lines (loads at ``i<k>``), its value in ``v``."""
        def load(ins, ln):
            return f"ld_{self.plan.operands[ins.arg].access}(p{ins.arg}, i{ins.arg})"
        lines = [f"i{k} = {self.index(k, j)}" for k in self.inputs]
        lines += self.element.lines_at(2, "", load)
        return lines + [f"v = {self.element.convert(self.plan.value, self.acc, '')}"]

    def store(self, j: str, value: str) -> str:
        """Store running value ``value`` as the result's element ``j`` (past the initial one)."""
        code = self.plan.operands[self.out].code
        where = self.index(self.out, f"({j} + 1)" if self.plan.initial else j)
        value = value if COMPUTE_CODE[code] == self.acc else f"cv_{code}({value})"
        return f"st_{self.plan.operands[self.out].access}(p{self.out}, {where}, {value})"

    def initial(self) -> list[str]:
        code = self.plan.operands[self.out].code
        value = self.first if COMPUTE_CODE[code] == self.acc else f"cv_{code}({self.first})"
        store = f"st_{self.plan.operands[self.out].access}"
        return [f"{store}(p{self.out}, o{self.out}, {value})"] if self.plan.initial else []

    def serial(self) -> list[str]:
        """One thread's walk along its row, in order."""
        return (self.initial() + [f"acc = {self.start}", "for j in range(e0):"]
                + _indent(self.value("j") + [f"acc = {self.combine('acc', 'v')}",
                                             self.store("j", "acc")]))

    def hoisted(self) -> list[str]:
        return self.element._constant_loads(0, lambda k: f"b{k}")
