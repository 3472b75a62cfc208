"""The cuda reduction kernel (``compiler/reduction.py``): a thread or a block per output, and a
split output's partials folded in the same launch; and the block's fixed-order tree that the
row kernels (``rows.py``) use too.

Pure text over :class:`~...reduction_codegen.ReduceRenderer`'s pieces. Schedules:

- ``cols``: a thread per output (grid-stride), its elements in nested loops over the collapsed
  reduced axes, in C order (no division per element).
- ``rows``: a block per output (grid-stride over outputs); thread ``tx`` folds elements
  ``tx, tx + blockDim, …`` in order, then the block's accumulators are combined by a tree in
  shared memory (pairs ``tx`` and ``tx + h`` for halving ``h``: a fixed order, no atomics), and
  thread 0 stores. ``blockDim.x`` must be a power of two up to ``BLOCK_THREADS``.

Split, the partials are folded into the result in the same launch by whoever stores an output's
last partial (CUDA's threadFenceReduction pattern): it stores its partial,
``cuda.threadfence()``, and adds one to the output's counter with an integer atomic
(``fa_count_i32``); the one that sees ``split - 1`` knows every other part's partial is
visible, fences again, folds the output's partials and sets the counter back to 0. The atomics
decide only *who* folds, never the order: it is the order of the separate fold kernel of
earlier versions (so the bits are a function of shape and schedule only, and unchanged):
``fold_serial`` (parts in order, one thread), or, for 128 parts and more lying side by side,
``fold_block`` (thread ``tx`` folds parts ``tx, tx + blockDim, …``, then the block's tree).
That kernel had ``BLOCK_THREADS`` threads a block on cuda and the sim backend's power of two on
sim; the block that folds here has the same on both schedules (``cuda/launch.py``,
``cuda/sim.py``). Who counts: on ``rows`` a block per part; on ``cols`` a thread per part,
except for a single output, where each block counts once after its walk and the grid's last
block folds with all its threads.

The counters are the backend's (``counters(slots)``: one zeroed int32 buffer per device, grown
as needed). Every launch leaves its slots zero, and kernels on one device run one after another
(fusedarrays launches on the legacy default stream only, from whatever thread), so every launch
uses slots ``0 … outputs - 1``; two reductions of one program are two launches and take them in
turn.
"""

from __future__ import annotations

from ....ir.reductions import BLOCK_THREADS
from ...codegen import _function, _indent
from ...plan import kernel_param_names
from ...reduction import ROWS_MIN_ELEMENTS, ReducePlan
from ...reduction_codegen import ReduceRenderer

# Vectors of each input a thread's ``rows`` walk loads in one loop turn, all issued before the
# first is folded (plan.vector_width > 1): 16 * VECTORS_PER_TURN bytes of each input in flight a
# thread, where a scalar walk had 4 (16 KB an SM at 2048 threads; an H200 needs ~40 KB an SM to
# keep HBM busy: ((x - y)**2).sum() read at 0.52 of a copy's rate that way).
VECTORS_PER_TURN = 4
# Elements of its part a thread of a split ``cols`` walk loads in one loop turn, all issued
# before the first is folded (column sums): NVVM unrolled the plain loop by 4, 16 bytes in flight
# a thread, ~16 KB an SM for 4096² column sums (0.65 of a copy on the H200).
COLS_TURN = 16


# float32 (complex64) sums accumulate in their own type here, as NumPy's do; the cpu target,
# one thread summing an output's elements in order, widens them instead
# (ir/reductions.accumulator_code)
WIDE_SUMS = False


def render_reduce(plan: ReducePlan) -> str:
    r = _CudaReduce(plan, wide_sums=WIDE_SUMS)
    lines = r.block_per_output() if plan.schedule == "rows" else r.thread_per_output()
    return _function(plan.name, kernel_param_names(plan), lines)


class _CudaReduce(ReduceRenderer):
    """The cuda schedules, and the block's fold of a split output's partials."""

    def fold_block(self, shared: str) -> list[str]:
        """Output ``o``'s partials into its result by the whole block (every thread runs it):
        threads interleaved, then the block's tree in ``shared``; 128 parts and more only."""
        walk = ([f"facc = cv_{self.facc}({self.identity(self.pcode)})", "jg = tx",
                 "while jg < gs:"]
                + _indent(self.fold_value("jg") + self.fold_statements(self.row.combine, "fv")
                          + ["jg += bdim"]))
        tree = block_tree([f"fw = {shared}[tx + h]"], self.fold_statements(self.row.merge, "fw"),
                          [f"{shared}[tx] = facc"])
        final = ["if tx == 0:"] + _indent(
            [f"facc = {shared}[0]", self.store_in(self.out, f"o{self.out}", "facc", self.facc)])
        return walk + [f"{shared}[tx] = facc"] + tree + final

    def fold_by_block(self, shared: str) -> list[str]:
        """The block that stored output ``o``'s last partial folds them and zeroes its counter:
        with its threads where the earlier fold kernel took a block (``ROWS_MIN_ELEMENTS`` parts
        and more, side by side), else thread 0 in order."""
        return (["cuda.threadfence()",   # the other parts' stores, seen before their counts
                 f"if gs >= {ROWS_MIN_ELEMENTS} and gstep == 1:"]
                + _indent(self.fold_block(shared))
                + ["elif tx == 0:"] + _indent(self.fold_serial())
                + ["if tx == 0:", "    st_i32(cnt, o, 0)", "cuda.syncthreads()"])

    def shared_fold(self) -> tuple[list[str], str]:
        """The fold tree's shared array (the walk's where the types agree), and its name."""
        if self.facc == self.acc:
            return [], "sacc"
        return [f"sfold = cuda.shared.array({BLOCK_THREADS}, sh_{self.facc})"], "sfold"

    def serial(self) -> list[str]:
        """A part's elements in order (split ``cols``), ``COLS_TURN`` a loop turn: every
        element's loads issued before the first is folded, folded in the same order."""
        if not self.split or len(self.plan.red) != 1 or self.row.arg or any(
                i.kind in ("random", "gather") for i in self.plan.body):
            return super().serial()
        turn = COLS_TURN

        def element(u: int) -> list[str]:
            index = [f"i{k}_{u} = i{k}_0 + {u} * t{k}_0" for k in self.inputs] if u else [
                f"i{k}_0 = o{k} + j * t{k}_0" for k in self.inputs]
            return index + self.element.lines_at(
                2, f"_{u}", lambda ins, ln: f"ld_{self.plan.operands[ins.arg].access}"
                                            f"(p{ins.arg}, i{ins.arg}_{u})")

        def fold(u: int) -> list[str]:
            value = self.element.convert(self.plan.value, self.acc, f"_{u}")
            return [f"v = {value}"] + [s.format(v="v") for s in self.row.combine]
        unrolled = [ln for u in range(turn) for ln in element(u)]
        unrolled += [ln for u in range(turn) for ln in fold(u)]
        return (["j = lo", f"while j + {turn - 1} < hi:"] + _indent(unrolled + [f"j += {turn}"])
                + ["while j < hi:"] + _indent(self.coordinates() + self.fold() + ["j += 1"]))

    def thread_per_output(self) -> list[str]:
        size = " * ".join(f"e{j}" for j in range(len(self.plan.red)))
        head = ["op = cv_i64(cuda.grid(1))", "ostep = cv_i64(cuda.gridsize(1))", f"kk = {size}"]
        if not self.split:
            return head + self.hoisted() + ["while op < n:"] + _indent(
                self.per_output() + ["op += ostep"])
        # Several outputs: the thread that stores an output's last partial folds its partials
        # in order. One output: each block counts once, after its walk (every thread's stores
        # fenced before the barrier), and the last block folds them with all its threads.
        own = (["if n > gs:"] + _indent(
            ["cuda.threadfence()", "if fa_count_i32(cnt, o) == gs - 1:"]
            + _indent(["cuda.threadfence()"] + self.fold_serial() + ["st_i32(cnt, o, 0)"])))
        fold_shared, name = self.shared_fold()
        last = (["if n == gs:"] + _indent(
            ["cuda.threadfence()", "cuda.syncthreads()", "if tx == 0:",
             "    sflag[0] = fa_count_i32(cnt, 0)", "cuda.syncthreads()",
             "if sflag[0] == cv_i64(cuda.gridDim.x) - 1:"]
            + _indent(["o = cv_i64(0)", "gstep = cv_i64(1)"] + self.kept_bases("o")
                      + self.fold_by_block(name))))
        return ([f"sacc = cuda.shared.array({BLOCK_THREADS}, sh_{self.acc})"] + fold_shared
                + ["sflag = cuda.shared.array(1, sh_i32)", "tx = cv_i64(cuda.threadIdx.x)",
                   "bdim = cv_i64(cuda.blockDim.x)"] + head + self.hoisted() + ["while op < n:"]
                + _indent(self.per_output() + own + ["op += ostep"]) + last)

    def block_per_output(self) -> list[str]:
        rank = len(self.plan.red)
        size = " * ".join(f"e{j}" for j in range(rank))
        if self.plan.vector_width > 1:
            walk = self.vector_walk()
        else:
            first, last = ("lo + tx", "hi") if self.split else ("tx", "kk")
            walk = [f"j = {first}", f"while j < {last}:"] + _indent(
                self.coordinates() + self.fold() + ["j += bdim"])
        shared = [f"sacc = cuda.shared.array({BLOCK_THREADS}, sh_{self.acc})"]
        save = ["sacc[tx] = acc"]
        take = ["w = sacc[tx + h]"]
        merge = [s.format(w="w", iw="iw") for s in self.row.merge]
        back = ["sacc[tx] = acc"]
        if self.row.arg:
            shared.append(f"sidx = cuda.shared.array({BLOCK_THREADS}, sh_i64)")
            save.append("sidx[tx] = idx")
            take.append("iw = sidx[tx + h]")
            back.append("sidx[tx] = idx")
        tree = block_tree(take, merge, back)
        final = ["if tx == 0:"] + _indent(
            ["acc = sacc[0]"] + (["idx = sidx[0]"] if self.row.arg else []) + [self.store()])
        if self.split:   # the block that stores an output's last partial folds them
            fold_shared, name = self.shared_fold()
            shared += fold_shared + ["sflag = cuda.shared.array(1, sh_i32)"]
            final += _indent(["cuda.threadfence()", "sflag[0] = fa_count_i32(cnt, o)"])
            final += ["cuda.syncthreads()", "if sflag[0] == gs - 1:"] + _indent(
                self.fold_by_block(name))
        else:
            final.append("cuda.syncthreads()")
        per_output = (self.part() + self.kept_bases("o") + self.start() + walk + save + tree
                      + final + ["op += ostep"])
        return (shared + ["tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
                          "op = cv_i64(cuda.blockIdx.x)", "ostep = cv_i64(cuda.gridDim.x)",
                          f"kk = {size}"]
                + self.hoisted() + ["while op < n:"] + _indent(per_output))

    def vector_walk(self) -> list[str]:
        """The ``rows`` walk in 16-byte loads (``plan.vector_width`` lanes): thread ``tx``
        folds vectors ``tx, tx + bdim, …`` of its output (or part), each vector's lanes in
        order; a loop turn takes ``VECTORS_PER_TURN`` of them, every input's loads issued
        before the first is folded, the rest one a turn: the same order either way."""
        width, turn = self.plan.vector_width, VECTORS_PER_TURN
        bounds = (["jv = lo // {w} + tx", "hv = hi // {w}"] if self.split
                  else ["jv = tx", "hv = kk // {w}"])
        lines = [b.format(w=width) for b in bounds]
        lines += [f"ov{k} = o{k} // {width}" for k in self.inputs]

        def vectors(offsets: list[str]) -> list[str]:
            loads, work = [], []
            for u, at in enumerate(offsets):
                loads += [f"vw{k}_{u} = ldv{width}_{self.plan.operands[k].code}"
                          f"(p{k}, ov{k} + {at})" for k in self.inputs]
                for lane in range(width):
                    work += self.fold_lane(u, lane)
            return loads + work
        lines += [f"while jv + {turn - 1} * bdim < hv:"] + _indent(
            vectors(["jv"] + [f"jv + {u} * bdim" for u in range(1, turn)])
            + [f"jv += {turn} * bdim"])
        return lines + ["while jv < hv:"] + _indent(vectors(["jv"]) + ["jv += bdim"])

    def fold_lane(self, u: int, lane: int) -> list[str]:
        """Lane ``lane`` of a turn's vector ``u``: its element's lines and its folding."""
        tag = f"_{u}_{lane}"
        lines = self.element.lines_at(2, tag, lambda ins, ln: f"vw{ins.arg}_{u}[{lane}]")
        value = self.element.convert(self.plan.value, self.acc, tag)
        return lines + [f"v = {value}"] + [s.format(v="v") for s in self.row.combine]


def block_tree(take: list[str], merge: list[str], back: list[str]) -> list[str]:
    """The block's fixed-order tree over its threads' accumulators, once each thread stored its
    own at ``[tx]`` of shared memory: for halving ``h``, thread ``tx < h`` reads ``[tx + h]``
    (``take``), folds it into its own (``merge``: an argmax keeps the earlier index) and stores
    that (``back``); thread 0 ends with the block's result. ``blockDim.x`` must be a power of
    two, and on cuda at least a warp. The levels within the first warp (``h`` under
    ``fa_warp_lanes``: 32 on cuda; 1 in the simulator, whose threads keep no warps) wait on
    that warp alone rather than on the whole block, in the same order: with each row's result
    handed over in shared memory, a row kernel's layer norm went from 0.77 to 0.80 of a copy on
    the H100, softmax from 0.74 to 0.75. (Folding 16 at a time, two steps and three barriers for
    256 threads, measured slower there: a thread's 16 shared loads in a loop wait on each other,
    halving's barriers are cheap.)"""
    return (["cuda.syncthreads()", "h = bdim // 2", "while h >= fa_warp_lanes:",
             "    if tx < h:"] + _indent(take + merge + back, 2)
            + ["    cuda.syncthreads()", "    h = h // 2",
               "if tx < fa_warp_lanes:", "    while h > 0:", "        if tx < h:"]
            + _indent(take + merge + back, 3) + ["        cuda.syncwarp()", "        h = h // 2"])
