"""Mask compaction on the device: a :class:`CompactPlan`, for ``x[mask]``, ``fa.nonzero``,
``fa.flatnonzero`` and ``fa.argwhere`` (``api/masks.py``).

Pure. A mask (contiguous bytes, ``total`` of them) is cut into rows of :data:`ROW` elements;
two kernels walk the rows, a block per row on cuda (grid-stride over rows):

- ``count``: each row's count of true elements, into ``counts[row]``.
- ``index``: with ``ends`` the inclusive running sum of the counts (the caller's scan kernel), the
  flat index ``j`` of each true element, stored at ``out[ends[row - 1] + its rank in the row]``:
  the indices of the true elements, in order.
- ``rank``: with the same ``ends``, each element's rank among the true ones (``ends[row - 1]``
  plus its rank in the row) stored at ``out[j]``, 0 for a false one: where ``x[mask] = values``
  reads each selected element's value (``api/scatter.py``).
- ``scatter``: with the same ``ends``, ``x[j] = values[rank]`` for each true element ``j``:
  ``x[mask] = values`` for an ``x`` whose C order is one stride (``xs`` elements from its element
  ``xo``: contiguous, reversed, every k-th, a column) and contiguous ``values`` of its dtype, in
  one pass over the mask.

The kernels' source is each target's: how a block walks its row, ``targets/cuda/compact.py``'s
to say; the cpu target walks each row in order, chunks of rows on threads (``targets/cpu.py``).
The output's order is the mask's C order on every backend and for every block width; no
atomics.

A compaction stores through a computed index, which the elementwise code generator has no
instruction for; its values are the indices themselves, so a selection's values are then read by
a gather inside the kernel that consumes them (``api/indexing.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.reductions import BLOCK_THREADS
from . import keys
from .protocol import Plan

MODES = ("count", "index", "rank", "scatter")
# the element types a scatter moves: whole elements, no complex parts
SCATTER_CODES = ("b1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")
ROW = 4096      # mask elements per row: a block of 256 threads, 16 a thread


@dataclass(frozen=True)
class CompactPlan(Plan):
    """One kernel: for ``index`` and ``rank`` the index type ``code`` (``i32`` or ``i64``;
    ``count`` stores int64 counts whatever it is), for ``scatter`` the element type moved."""

    mode: str
    code: str

    def __post_init__(self):
        codes = SCATTER_CODES if self.mode == "scatter" else ("i32", "i64")
        if self.mode not in MODES or self.code not in codes:
            raise ValueError(f"no compaction kernel {self.mode!r} storing {self.code!r}")

    # sized per call (the mask's rows: geometry_for): size 0, no geometry of its own
    kind = "compact"
    body = ()
    scalars = ()

    @property
    def operands(self) -> tuple[str, ...]:
        """The pointers' element types: the mask, then counts (``count``), the running
        counts and the output (``index``, ``rank``), or the running counts, the values and
        the array written (``scatter``)."""
        if self.mode == "count":
            return ("b1", "i64")
        if self.mode == "scatter":
            return ("b1", "i64", self.code, self.code)
        return ("b1", "i64", self.code)

    @property
    def key_parts(self) -> tuple[tuple[str, str], ...]:
        return keys.structure_parts((("compact", f"{self.mode} into {self.code}"),
                                     ("block", str(BLOCK_THREADS))))

    @property
    def key(self) -> str:
        return keys.digest(self.key_parts)

    @property
    def name(self) -> str:
        return "fz_" + self.key[:16]

    def param_types(self) -> tuple[str, ...]:
        """``n`` (rows), a pointer per operand, then ``total`` (the mask's elements); for
        ``scatter`` then the written array's first element ``xo`` and its stride ``xs`` (in
        elements, from its buffer's start: the index stays positive whatever the stride's
        sign)."""
        return ("i64",) + ("ptr",) * len(self.operands) + ("i64",) * (1 + len(self._view()))

    def param_names(self) -> list[str]:
        return (["n"] + [f"p{k}" for k in range(len(self.operands))] + ["total"]
                + list(self._view()))

    def _view(self) -> tuple[str, ...]:
        return ("xo", "xs") if self.mode == "scatter" else ()

    def traffic(self) -> tuple[int, int]:
        return 0, 0   # not counted (its operands are the kernels' element types)

    @staticmethod
    def geometry_for(rows: int) -> tuple:
        """A block per row (the reductions' launch shape)."""
        return ("reduce", "rows", rows)
