"""ScanPlan → Python source of the scan kernel: ``@cuda.jit`` (also run by the simulator) or the
cpu variant.

Pure text, like :mod:`.codegen`, whose renderer writes the per-element expression (the scan's
input, computed as it is read). The running value's type comes from
:func:`~..ir.scans.accumulator_code` (float16 in float32), the combining expression from the
scan's row. Schedules (``compiler/scan.py``):

- cpu: ``<name>(k0, k1, ...)`` runs chunks ``k0`` to ``k1`` of the rows, each row's elements in
  order (NumPy's loop); the cpu backend spreads the chunks over threads.
- cuda ``cols``: a thread per row (grid-stride), the same loop.
- cuda ``rows``: a block per row (grid-stride over rows), walking the row in tiles of
  ``blockDim * SCAN_CHUNK`` elements: (1) the block reads the tile coalesced into shared memory
  (``sv``, one padding slot per 32 so that a thread's chunk and its neighbours' fall in
  different banks); (2) thread ``tx`` scans elements ``tx * SCAN_CHUNK`` … serially; (3) the
  block scans the chunks' totals in ``st`` (Hillis-Steele: at step ``h`` each thread adds the
  total ``h`` before its own, a barrier between reading and writing); (4) each element gets
  ``carry + st[tx - 1]`` (the row's earlier tiles, then the earlier chunks of this tile) added;
  (5) the block stores the tile coalesced, and the tile's last value is the next tile's carry.
  Any ``blockDim`` up to ``BLOCK_THREADS`` works (the simulator uses a few threads).
"""

from __future__ import annotations

from ..ir.dtypes import BY_CODE, COMPUTE_CODE
from ..ir.reductions import BLOCK_THREADS
from ..ir.scans import SCANS, accumulator_code, initial_value, start_value
from .codegen import CPU_CHUNK, _function, _indent, _Renderer
from .plan import kernel_param_names
from .rowfusion import _row_bases
from .scan import SCAN_CHUNK, ScanPlan

# shared slots of a tile: its elements and one padding slot per 32 of them
_TILE_SLOTS = BLOCK_THREADS * SCAN_CHUNK + (BLOCK_THREADS * SCAN_CHUNK >> 5)


def render_scan_kernel(plan: ScanPlan, target: str) -> str:
    """The kernel's source for ``target`` ``"cuda"`` or ``"cpu"``."""
    if target not in ("cuda", "cpu"):
        raise ValueError(f"unknown target {target!r}")
    params = kernel_param_names(plan)
    r = _ScanRenderer(plan, target)
    if target == "cpu":
        return _function(plan.name, ["k0", "k1"] + params, r.cpu())
    return _function(plan.name, params, r.block_per_row() if plan.schedule == "rows"
                     else r.thread_per_row())


class _ScanRenderer:
    def __init__(self, plan: ScanPlan, target: str):
        self.plan, self.target = plan, target
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

    # -- schedules -----------------------------------------------------------------------------
    def cpu(self) -> list[str]:
        return (["total = n", f"grain = max(1, {CPU_CHUNK} // max(e0, 1))",
                 "chunks = (total + grain - 1) // grain", "if k0 >= k1:", "    return chunks"]
                + self.hoisted()
                + ["for k in range(k0, min(k1, chunks)):",
                   "    top = min(k * grain + grain, total)",
                   "    for op in range(k * grain, top):"]
                + _indent(_row_bases(self.plan) + self.serial(), 2) + ["return chunks"])

    def thread_per_row(self) -> list[str]:
        return (["op = cv_i64(cuda.grid(1))", "ostep = cv_i64(cuda.gridsize(1))"]
                + self.hoisted() + ["while op < n:"]
                + _indent(_row_bases(self.plan) + self.serial() + ["op += ostep"]))

    def block_per_row(self) -> list[str]:
        chunk = SCAN_CHUNK
        load = ["m = tx", "while m < tile:"] + _indent(
            ["j = j0 + m", f"v = {self.start}", "if j < e0:"] + _indent(self.value("j"))
            + ["sv[m + (m >> 5)] = v", "m += bdim"])
        # a chunk's slots are consecutive: its 8 elements sit within one run of 32
        own = ["acc = sv[mine]", f"for c in range(1, {chunk}):"] + _indent(
            [f"acc = {self.combine('acc', 'sv[mine + c]')}", "sv[mine + c] = acc"])
        own += ["st[tx] = acc", "cuda.syncthreads()"]
        totals = ["h = cv_i64(1)", "while h < bdim:"] + _indent(
            ["w = acc", "if tx >= h:", "    w = st[tx - h]", "cuda.syncthreads()",
             "if tx >= h:", f"    acc = {self.combine('w', 'acc')}", "    st[tx] = acc",
             "cuda.syncthreads()", "h = h * 2"])
        fix = ["prev = carry", "if tx > 0:", f"    prev = {self.combine('carry', 'st[tx - 1]')}",
               f"for c in range({chunk}):"] + _indent(
            [f"sv[mine + c] = {self.combine('prev', 'sv[mine + c]')}"]) + ["cuda.syncthreads()"]
        out = ["r = tx", "while r < tile and j0 + r < e0:"] + _indent(
            [self.store("(j0 + r)", "sv[r + (r >> 5)]"), "r += bdim"])
        out += ["r = tile - 1", "carry = sv[r + (r >> 5)]", "cuda.syncthreads()",
                "j0 += tile"]
        tiles = ["cuda.syncthreads()"] + own + totals + fix + out
        row = (_row_bases(self.plan) + (["if tx == 0:"] + _indent(self.initial())
                                        if self.plan.initial else [])
               + [f"carry = {self.start}", "j0 = cv_i64(0)", "while j0 < e0:"]
               + _indent(load + tiles) + ["op += ostep"])
        head = [f"sv = cuda.shared.array({_TILE_SLOTS}, sh_{self.acc})",
                f"st = cuda.shared.array({BLOCK_THREADS}, sh_{self.acc})",
                "tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
                "op = cv_i64(cuda.blockIdx.x)", "ostep = cv_i64(cuda.gridDim.x)",
                f"tile = bdim * {chunk}", f"mine = tx * {chunk}", "mine = mine + (mine >> 5)"]
        return head + self.hoisted() + ["while op < n:"] + _indent(row)
