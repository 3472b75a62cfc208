"""The cuda mask compaction kernels (``compiler/compact.py``): a block per row of the mask.

Pure text. How each mode's block walks its row: :func:`_lines`.
"""

from __future__ import annotations

from ....ir.reductions import BLOCK_THREADS
from ...codegen import _function, _indent
from ...compact import ROW, CompactPlan


def render_compact(plan: CompactPlan) -> str:
    return _function(plan.name, plan.param_names(), _lines(plan))


# elements a thread loads before it uses any: its loads in flight at once (one at a time, each
# waited for, left the kernels at a tenth of the memory's bandwidth). ROW / blockDim is a
# multiple of it for every power-of-two block up to 256: 4096 / 256 = 16.
UNROLL = 16


def _full_or_last(full: list[str], last: list[str]) -> list[str]:
    return [f"if width == {ROW}:"] + _indent(full) + ["else:"] + _indent(last)


def _loads(at) -> list[str]:
    return [f"a{u} = ld_b1(p0, {at(u)})" for u in range(UNROLL)]


def _lines(plan: CompactPlan) -> list[str]:
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
