"""ProductPlan → the pieces of a product kernel's source that every target's schedules share.

Pure text, like :mod:`.codegen`. Accumulators are of :func:`~..ir.products.accumulator_code`'s
type; each operand element is loaded in its own dtype and converted to it (an ``int32 @
float32`` product reads both in place and sums in float64, NumPy's result type).
:class:`ProductRenderer` gives the loads, the stores and each batch item's operand bases; the
schedules are each target's (``targets/cuda/product.py``: output tiles of a block, K in slabs
staged in shared memory; ``targets/cpu.py``: output rows in order).
"""

from __future__ import annotations

from ..ir.dtypes import COMPUTE_CODE
from .product import ProductPlan


class ProductRenderer:
    """A product plan's accumulators' code :attr:`acc` and zero, its operand loads and its
    result's stores (operands ``p0 @ p1`` into ``p2``)."""

    def __init__(self, plan: ProductPlan):
        self.plan, self.acc = plan, plan.acc
        self.zero = f"cv_{self.acc}(0)"

    def load(self, k: int, index: str) -> str:
        """Operand ``k``'s element at ``index``, converted to the accumulator's type."""
        code = self.plan.operands[k].code
        value = f"ld_{code}(p{k}, {index})"
        return value if COMPUTE_CODE[code] == self.acc else f"cv_{self.acc}({value})"

    def store(self, index: str, value: str) -> str:
        code = self.plan.operands[2].code
        value = value if COMPUTE_CODE[code] == self.acc else f"cv_{code}({value})"
        return f"st_{code}(p2, {index}, {value})"

    def bases(self, item: str) -> list[str]:
        """Each operand's offset ``o<k>`` of batch item ``item`` (C order over the collapsed
        batch extents)."""
        lines = [f"o{k} = b{k}" for k in range(3)]
        if not self.plan.batch:
            return lines
        lines.append(f"q = {item}")
        for j in reversed(range(len(self.plan.batch))):
            lines += [f"c = q % d{j}", f"q = q // d{j}"] if j else ["c = q"]
            lines += [f"o{k} += c * s{k}_{j}" for k in range(3)]
        return lines

    def batch_size(self) -> str:
        return " * ".join(f"d{j}" for j in range(len(self.plan.batch))) or "1"
