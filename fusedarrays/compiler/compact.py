"""Mask compaction on the device: a :class:`CompactPlan` and its two kernels' source, for
``x[mask]``, ``fa.nonzero``, ``fa.flatnonzero`` and ``fa.argwhere`` (``api/masks.py``).

Pure text, like :mod:`.codegen`. A mask (contiguous bytes, ``total`` of them) is cut into rows of
:data:`ROW` elements; two kernels walk the rows, a block per row on cuda (grid-stride over rows):

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

How a cuda block walks its row is :func:`_cuda`'s to say; the cpu target walks each row in
order, chunks of rows on threads. The output's order is the mask's C order on every backend and
for every block width; no atomics.

A compaction stores through a computed index, which the elementwise code generator has no
instruction for; its values are the indices themselves, so a selection's values are then read by
a gather inside the kernel that consumes them (``api/indexing.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.reductions import BLOCK_THREADS
from . import keys
from .codegen import CPU_CHUNK, _function, _indent
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


def render_compact(plan: CompactPlan, target: str) -> str:
    """The kernel's source for ``target`` ``"cuda"`` (also run by the simulator) or ``"cpu"``."""
    if target == "cpu":
        return _function(plan.name, ["k0", "k1"] + plan.param_names(), _cpu(plan))
    if target != "cuda":
        raise ValueError(f"unknown target {target!r}")
    return _function(plan.name, plan.param_names(), _cuda(plan))


def _row_pass(plan: CompactPlan, lo: str, hi: str) -> list[str]:
    """Elements ``lo`` to ``hi`` of row ``row`` in order (the cpu target's walk): counted into
    ``acc`` (``count``), each true one's index stored from ``pos`` on (``index``), each one's
    rank (``rank``), or each true one written from the value at its rank (``scatter``)."""
    if plan.mode == "count":
        return ["acc = cv_i64(0)", f"for j in range({lo}, {hi}):",
                "    if ld_b1(p0, j):", "        acc += 1"]
    if plan.mode == "scatter":
        return [f"for j in range({lo}, {hi}):", "    if ld_b1(p0, j):",
                f"        st_{plan.code}(p3, xo + j * xs, ld_{plan.code}(p2, pos))",
                "        pos += 1"]
    if plan.mode == "rank":
        return [f"for j in range({lo}, {hi}):", "    if ld_b1(p0, j):",
                f"        st_{plan.code}(p2, j, cv_{plan.code}(pos))", "        pos += 1",
                "    else:", f"        st_{plan.code}(p2, j, cv_{plan.code}(0))"]
    return [f"for j in range({lo}, {hi}):", "    if ld_b1(p0, j):",
            f"        st_{plan.code}(p2, pos, cv_{plan.code}(j))", "        pos += 1"]


def _cpu(plan: CompactPlan) -> list[str]:
    row = [f"lo = row * {ROW}", f"hi = min(lo + {ROW}, total)"]
    if plan.mode == "count":
        row += _row_pass(plan, "lo", "hi") + ["st_i64(p1, row, acc)"]
    else:
        row += ["pos = cv_i64(0)", "if row > 0:", "    pos = ld_i64(p1, row - 1)"]
        row += _row_pass(plan, "lo", "hi")
    return ([f"grain = {max(1, CPU_CHUNK // ROW)}", "chunks = (n + grain - 1) // grain",
             "if k0 >= k1:", "    return chunks",
             "for k in range(k0, min(k1, chunks)):",
             "    for row in range(k * grain, min(k * grain + grain, n)):"]
            + _indent(row, 2) + ["return chunks"])


# elements a thread loads before it uses any: its loads in flight at once (one at a time, each
# waited for, left the kernels at a tenth of the memory's bandwidth). ROW / blockDim is a
# multiple of it for every power-of-two block up to 256: 4096 / 256 = 16.
UNROLL = 16


def _full_or_last(full: list[str], last: list[str]) -> list[str]:
    return [f"if width == {ROW}:"] + _indent(full) + ["else:"] + _indent(last)


def _loads(at) -> list[str]:
    return [f"a{u} = ld_b1(p0, {at(u)})" for u in range(UNROLL)]


def _cuda(plan: CompactPlan) -> list[str]:
    """``count`` reads a row coalesced (every ``blockDim``-th element a thread: a count takes
    them in any order) and sums the threads' counts by a tree in shared memory. ``index``:
    thread ``tx`` owns the contiguous run ``[tx * per, tx * per + per)`` of the row; it counts
    its run, the block scans the counts (Hillis-Steele), and the thread reads its run again,
    putting each element's index at the run's next rank in a shared row of indices (every
    element written, a false one's to a spare slot past the row, the rank moved on by true ones
    only: no branch); the block stores the row's indices coalesced after the earlier rows' total
    (loaded first: its wait overlaps the row's loads). ``rank`` walks as ``index`` does but puts
    each element's rank (0 where false) at the element's own place in the shared row, and the
    block stores the whole row. ``scatter`` stages the row of ``x`` (one stride apart: coalesced
    where it is 1 or -1) in the shared row, walks as ``index`` does putting each true element's
    value, read at its rank, in its place there, and the block stores the row back. In a full
    row each thread issues UNROLL loads before it uses any; the last row goes one element at a
    time."""
    head = ["tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
            "row = cv_i64(cuda.blockIdx.x)", "rstep = cv_i64(cuda.gridDim.x)",
            f"per = {ROW} // bdim"]
    rows = [f"start = row * {ROW}", f"width = min({ROW}, total - start)", "acc = cv_i64(0)"]
    if plan.mode == "count":
        count = _full_or_last(
            ["k = tx", f"while k < {ROW}:"] + _indent(
                _loads(lambda u: f"start + k + {u} * bdim")
                + [f"acc += cv_i64(a{u})" for u in range(UNROLL)] + [f"k += {UNROLL} * bdim"]),
            ["k = tx", "while k < width:", "    acc += cv_i64(ld_b1(p0, start + k))",
             "    k += bdim"])
        tree = ["st[tx] = acc", "cuda.syncthreads()", "h = bdim >> 1", "while h > 0:",
                "    if tx < h:", "        st[tx] += st[tx + h]", "    cuda.syncthreads()",
                "    h = h >> 1", "if tx == 0:", "    st_i64(p1, row, st[0])",
                "cuda.syncthreads()"]
        return ([f"st = cuda.shared.array({BLOCK_THREADS}, sh_i64)"] + head
                + ["while row < n:"] + _indent(rows + count + tree + ["row += rstep"]))

    def walk(use):
        """The thread's run in order, ``use(index, value)``'s lines per element."""
        return _full_or_last(
            ["c = lo", "while c < lo + per:"] + _indent(
                _loads(lambda u: f"c + {u}")
                + [ln for u in range(UNROLL) for ln in use(f"c + {u}", f"a{u}")]
                + [f"c += {UNROLL}"]),
            ["j = lo", "while j < min(lo + per, start + width):"]
            + _indent(use("j", "ld_b1(p0, j)") + ["j += 1"]))
    base = ["base = cv_i64(0)", "if row > 0:", "    base = ld_i64(p1, row - 1)",
            "lo = start + tx * per"]
    count = walk(lambda j, v: [f"acc += cv_i64({v})"])
    scan = ["own = acc", "st[tx] = acc", "cuda.syncthreads()", "h = cv_i64(1)",
            "while h < bdim:"] + _indent(
        ["w = cv_i64(0)", "if tx >= h:", "    w = st[tx - h]", "cuda.syncthreads()",
         "if tx >= h:", "    acc = acc + w", "    st[tx] = acc", "cuda.syncthreads()",
         "h = h * 2"])
    if plan.mode == "scatter":
        # the row of x staged in shared memory (read coalesced, UNROLL loads in flight), the
        # selected elements' values put in it (a full row's values loaded before any is put:
        # a false element's load reads values[0], a launch has one at least), the row stored
        # back whole and coalesced: whole sectors, where stores of the selected elements
        # alone left holes for the memory to fill by reading
        code = plan.code
        stage = ["at = xo + start * xs", "step = bdim * xs"] + _full_or_last(
            ["k = tx", f"while k < {ROW}:"] + _indent(
                [f"a{u} = ld_{code}(p3, at + k * xs + {u} * step)" for u in range(UNROLL)]
                + [f"so[k + {u} * bdim] = a{u}" for u in range(UNROLL)]
                + [f"k += {UNROLL} * bdim"]),
            ["k = tx", "while k < width:", f"    so[k] = ld_{code}(p3, at + k * xs)",
             "    k += bdim"]) + ["cuda.syncthreads()"]
        full = ["c = lo", "while c < lo + per:"] + _indent(
            _loads(lambda u: f"c + {u}")
            + [ln for u in range(UNROLL)
               for ln in (f"b{u} = ld_{code}(p2, pos if a{u} else 0)", f"pos += cv_i64(a{u})")]
            + [ln for u in range(UNROLL)
               for ln in (f"if a{u}:", f"    so[c + {u} - start] = b{u}")]
            + [f"c += {UNROLL}"])
        last = ["j = lo", "while j < min(lo + per, start + width):"] + _indent(
            ["if ld_b1(p0, j):", f"    so[j - start] = ld_{code}(p2, pos)", "    pos += 1",
             "j += 1"])
        place = stage + ["pos = base + acc - own"] + _full_or_last(full, last)
        store = ["k = tx", "while k < width:", f"    st_{code}(p3, at + k * xs, so[k])",
                 "    k += bdim"]
    elif plan.mode == "index":
        place = ["pos = acc - own"] + walk(
            lambda j, v: [f"so[pos if {v} else {ROW}] = cv_{plan.code}({j})",
                          f"pos += cv_i64({v})"])
        store = ["count = st[bdim - 1]", "k = tx", "while k < count:",
                 f"    st_{plan.code}(p2, base + k, so[k])", "    k += bdim"]
    else:   # every element's rank (0 where false) at its place in the row, the row stored
        place = ["pos = base + acc - own"] + walk(
            lambda j, v: [f"so[{j} - start] = cv_{plan.code}(pos if {v} else 0)",
                          f"pos += cv_i64({v})"])
        store = ["k = tx", "while k < width:", f"    st_{plan.code}(p2, start + k, so[k])",
                 "    k += bdim"]
    place += ["cuda.syncthreads()"]
    store += ["cuda.syncthreads()"]
    return ([f"so = cuda.shared.array({ROW + 1}, sh_{plan.code})",
             f"st = cuda.shared.array({BLOCK_THREADS}, sh_i64)"]
            + head + ["while row < n:"]
            + _indent(rows + base + count + scan + place + store + ["row += rstep"]))
