"""Mask compaction on the device: a :class:`CompactPlan` and its two kernels' source, for
``x[mask]``, ``fa.nonzero``, ``fa.flatnonzero`` and ``fa.argwhere`` (``api/masks.py``).

Pure text, like :mod:`.codegen`. A mask (contiguous bytes, ``total`` of them) is cut into rows of
``c`` elements; two kernels walk the rows, a block per row on cuda (grid-stride over rows):

- ``count``: each row's count of true elements, into ``counts[row]``.
- ``index``: with ``ends`` the inclusive running sum of the counts (the caller's scan kernel), the
  flat index ``j`` of each true element, stored at ``out[ends[row - 1] + its rank in the row]``:
  the indices of the true elements, in order.

In a block, thread ``tx`` owns a contiguous run of ``ceil(c / blockDim)`` elements of the row:
it counts its run, the block scans the runs' counts (Hillis-Steele, as the scan kernel's), and in
the ``index`` kernel each thread then stores its run's indices from its exclusive prefix on. The
order of the output is the mask's C order on every backend and for every block width. The cpu
target walks each row in order, chunks of rows on threads.

A compaction stores through a computed index, which the elementwise code generator has no
instruction for; its values are the indices themselves, so a selection's values are then read by
a gather inside the kernel that consumes them (``api/indexing.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.reductions import BLOCK_THREADS
from . import keys
from .codegen import CPU_CHUNK, _function, _indent

MODES = ("count", "index")
ROW = 4096      # mask elements per row: a block of 256 threads, 16 a thread


@dataclass(frozen=True)
class CompactPlan:
    """One of the two kernels, for an index type ``code`` (``i32`` or ``i64``; ``count``
    stores int64 counts whatever it is)."""

    mode: str
    code: str

    def __post_init__(self):
        if self.mode not in MODES or self.code not in ("i32", "i64"):
            raise ValueError(f"no compaction kernel {self.mode!r} storing {self.code!r}")

    # what the runtime's kernel cache and its records read of a plan
    body = ()
    scalars = ()

    @property
    def operands(self) -> tuple[str, ...]:
        """The pointers' element types: the mask, then counts (``count``) or the running
        counts and the output (``index``)."""
        return ("b1", "i64") if self.mode == "count" else ("b1", "i64", self.code)

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
        """``n`` (rows), a pointer per operand, then ``c`` (elements a row) and ``total``."""
        return ("i64",) + ("ptr",) * len(self.operands) + ("i64", "i64")

    def param_names(self) -> list[str]:
        return ["n"] + [f"p{k}" for k in range(len(self.operands))] + ["c", "total"]

    @staticmethod
    def geometry(rows: int) -> tuple:
        """A block per row (the reductions' launch shape)."""
        return ("reduce", "rows", rows)


def render_compact(plan: CompactPlan, target: str) -> str:
    """The kernel's source for ``target`` ``"cuda"`` (also run by the simulator) or ``"cpu"``."""
    if target == "cpu":
        return _function(plan.name, ["k0", "k1"] + plan.param_names(), _cpu(plan))
    if target != "cuda":
        raise ValueError(f"unknown target {target!r}")
    return _function(plan.name, plan.param_names(), _cuda(plan))


def _row_pass(plan: CompactPlan, lo: str, hi: str) -> list[str]:
    """Elements ``lo`` to ``hi`` of row ``row`` in order: counted into ``acc`` (``count``), or
    each true one's index stored from ``pos`` on (``index``)."""
    if plan.mode == "count":
        return ["acc = cv_i64(0)", f"for j in range({lo}, {hi}):",
                "    if ld_b1(p0, j):", "        acc += 1"]
    return [f"for j in range({lo}, {hi}):", "    if ld_b1(p0, j):",
            f"        st_{plan.code}(p2, pos, cv_{plan.code}(j))", "        pos += 1"]


def _cpu(plan: CompactPlan) -> list[str]:
    row = ["lo = row * c", "hi = min(lo + c, total)"]
    if plan.mode == "count":
        row += _row_pass(plan, "lo", "hi") + ["st_i64(p1, row, acc)"]
    else:
        row += ["pos = cv_i64(0)", "if row > 0:", "    pos = ld_i64(p1, row - 1)"]
        row += _row_pass(plan, "lo", "hi")
    return ([f"grain = max(1, {CPU_CHUNK} // max(c, 1))", "chunks = (n + grain - 1) // grain",
             "if k0 >= k1:", "    return chunks",
             "for k in range(k0, min(k1, chunks)):",
             "    for row in range(k * grain, min(k * grain + grain, n)):"]
            + _indent(row, 2) + ["return chunks"])


def _cuda(plan: CompactPlan) -> list[str]:
    # the thread's run: counted (both kernels), then the block's inclusive scan of the counts
    run = ["lo = min(row * c + tx * per, end)", "hi = min(lo + per, end)"]
    run += _row_pass(CompactPlan("count", plan.code), "lo", "hi")
    scan = ["own = acc", "st[tx] = acc", "cuda.syncthreads()", "h = cv_i64(1)",
            "while h < bdim:"] + _indent(
        ["w = cv_i64(0)", "if tx >= h:", "    w = st[tx - h]", "cuda.syncthreads()",
         "if tx >= h:", "    acc = acc + w", "    st[tx] = acc", "cuda.syncthreads()",
         "h = h * 2"])
    if plan.mode == "count":
        tail = ["if tx == bdim - 1:", "    st_i64(p1, row, acc)"]
    else:
        tail = ["pos = acc - own", "if row > 0:", "    pos += ld_i64(p1, row - 1)"]
        tail += _row_pass(plan, "lo", "hi")
    body = (["end = min(row * c + c, total)"] + run + scan + tail
            + ["cuda.syncthreads()", "row += rstep"])
    return ([f"st = cuda.shared.array({BLOCK_THREADS}, sh_i64)",
             "tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
             "row = cv_i64(cuda.blockIdx.x)", "rstep = cv_i64(cuda.gridDim.x)",
             "per = (c + bdim - 1) // bdim", "while row < n:"] + _indent(body))
