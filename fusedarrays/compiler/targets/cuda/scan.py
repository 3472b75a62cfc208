"""The cuda scan kernel: a thread or a block per row, by the plan's schedule (``compiler/scan.py``).

Pure text over :class:`~...scan_codegen.ScanRenderer`'s pieces:

- ``cols``: a thread per row (grid-stride), the row's elements in order.
- ``rows``: a block per row (grid-stride over rows), walking the row in tiles of
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

from ....ir.reductions import BLOCK_THREADS
from ...codegen import _function, _indent
from ...plan import kernel_param_names
from ...rowfusion import row_bases
from ...scan import SCAN_CHUNK, ScanPlan
from ...scan_codegen import ScanRenderer

# shared slots of a tile: its elements and one padding slot per 32 of them
_TILE_SLOTS = BLOCK_THREADS * SCAN_CHUNK + (BLOCK_THREADS * SCAN_CHUNK >> 5)


def render_scan(plan: ScanPlan) -> str:
    r = ScanRenderer(plan)
    lines = _block_per_row(r) if plan.schedule == "rows" else _thread_per_row(r)
    return _function(plan.name, kernel_param_names(plan), lines)


def _thread_per_row(r: ScanRenderer) -> list[str]:
    return (["op = cv_i64(cuda.grid(1))", "ostep = cv_i64(cuda.gridsize(1))"]
            + r.hoisted() + ["while op < n:"]
            + _indent(row_bases(r.plan) + r.serial() + ["op += ostep"]))


def _block_per_row(r: ScanRenderer) -> list[str]:
    chunk = SCAN_CHUNK
    load = ["m = tx", "while m < tile:"] + _indent(
        ["j = j0 + m", f"v = {r.start}", "if j < e0:"] + _indent(r.value("j"))
        + ["sv[m + (m >> 5)] = v", "m += bdim"])
    # a chunk's slots are consecutive: its 8 elements sit within one run of 32
    own = ["acc = sv[mine]", f"for c in range(1, {chunk}):"] + _indent(
        [f"acc = {r.combine('acc', 'sv[mine + c]')}", "sv[mine + c] = acc"])
    own += ["st[tx] = acc", "cuda.syncthreads()"]
    totals = ["h = cv_i64(1)", "while h < bdim:"] + _indent(
        ["w = acc", "if tx >= h:", "    w = st[tx - h]", "cuda.syncthreads()",
         "if tx >= h:", f"    acc = {r.combine('w', 'acc')}", "    st[tx] = acc",
         "cuda.syncthreads()", "h = h * 2"])
    fix = ["prev = carry", "if tx > 0:", f"    prev = {r.combine('carry', 'st[tx - 1]')}",
           f"for c in range({chunk}):"] + _indent(
        [f"sv[mine + c] = {r.combine('prev', 'sv[mine + c]')}"]) + ["cuda.syncthreads()"]
    out = ["r = tx", "while r < tile and j0 + r < e0:"] + _indent(
        [r.store("(j0 + r)", "sv[r + (r >> 5)]"), "r += bdim"])
    out += ["r = tile - 1", "carry = sv[r + (r >> 5)]", "cuda.syncthreads()", "j0 += tile"]
    tiles = ["cuda.syncthreads()"] + own + totals + fix + out
    row = (row_bases(r.plan) + (["if tx == 0:"] + _indent(r.initial())
                                 if r.plan.initial else [])
           + [f"carry = {r.start}", "j0 = cv_i64(0)", "while j0 < e0:"]
           + _indent(load + tiles) + ["op += ostep"])
    head = [f"sv = cuda.shared.array({_TILE_SLOTS}, sh_{r.acc})",
            f"st = cuda.shared.array({BLOCK_THREADS}, sh_{r.acc})",
            "tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
            "op = cv_i64(cuda.blockIdx.x)", "ostep = cv_i64(cuda.gridDim.x)",
            f"tile = bdim * {chunk}", f"mine = tx * {chunk}", "mine = mine + (mine >> 5)"]
    return head + r.hoisted() + ["while op < n:"] + _indent(row)
