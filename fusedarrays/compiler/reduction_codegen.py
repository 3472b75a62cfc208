"""ReducePlan → Python source of the reduction kernel: ``@cuda.jit`` (also run by the
simulator) or the cpu variant.

Pure text, like :mod:`.codegen`, whose renderer writes the per-element expression (the
reduction's input, computed as it is read). The accumulator's type comes from
:func:`~..ir.reductions.accumulator_code` (float16 in float32; on cpu float32 sums in float64),
its folding statements from the reduction's row. Schedules (``compiler/reduction.py``):

- cpu: ``<name>(k0, k1, ...)`` runs chunks ``k0`` to ``k1`` of the outputs, each output's
  elements in C order (nested loops over the collapsed reduced axes, no division per element);
  the cpu backend spreads the chunks over threads as it does elementwise kernels.
- cuda ``cols``: a thread per output (grid-stride), its elements in the same nested loops.
- cuda ``rows``: a block per output (grid-stride over outputs); thread ``tx`` folds elements
  ``tx, tx + blockDim, …`` in order, then the block's accumulators are combined by a tree in
  shared memory (pairs ``tx`` and ``tx + h`` for halving ``h``: a fixed order, no atomics), and
  thread 0 stores. ``blockDim.x`` must be a power of two up to ``BLOCK_THREADS``.

Split (``plan.split > 1``, ``reduction.choose_split``: few outputs of many elements), each item
is a part ``g`` of output ``o``: its elements ``lo`` to ``hi`` are folded as above into a partial
result, stored in the partials operand (the one before the result), and the partials are folded
into the result in the same launch by whoever stores an output's last partial (CUDA's
threadFenceReduction pattern): it stores its partial, ``cuda.threadfence()``, and adds one to the
output's counter with an integer atomic (``fa_count_i32``); the one that sees ``split - 1`` knows
every other part's partial is visible, fences again, folds the output's partials and sets the
counter back to 0. The atomics decide only *who* folds, never the order: it is the order of the
separate fold kernel of earlier versions (so the bits are a function of shape and schedule only,
and unchanged): ``fold_serial`` (parts in order, one thread), or, for 128 parts and more lying side
by side, ``fold_block`` (thread ``tx`` folds parts ``tx, tx + blockDim, …``, then the block's
tree). That kernel had ``BLOCK_THREADS`` threads a block on cuda and the sim backend's power of two
on sim; the block that folds here has the same on both schedules (``cuda/launch.py``,
``cuda/sim.py``). Who counts: on ``rows`` a block per part; on ``cols`` a thread per part, except
for a single output, where each block counts once after its walk and the grid's last block folds
with all its threads.

The counters are the backend's (``counters(slots)``: one zeroed int32 buffer per device, grown as
needed). Every launch leaves its slots zero, and kernels on one device run one after another
(fusedarrays launches on the legacy default stream only, from whatever thread), so every launch
uses slots ``0 … outputs - 1``; two reductions of one program are two launches and take them in
turn. The cpu backend runs the same plan: the parts in its chunks, then, once every chunk is done,
the fold pass of the same function (``k0 < 0``: ``cpu/backend.py``), the parts in order, with no
counters.
"""

from __future__ import annotations

import re

from ..ir.dtypes import BY_CODE, COMPUTE_CODE, ROUNDED
from ..ir.reductions import BLOCK_THREADS, REDUCTIONS, accumulator_code, identity
from .codegen import CPU_CHUNK, _function, _indent, _Renderer, cast
from .plan import kernel_param_names
from .reduction import ROWS_MIN_ELEMENTS, ReducePlan
from .rowfusion import block_tree, step

_INF = "(1e308 * 10.0)"   # a float infinity every target folds (the simulator has no math.inf)
_ACC = re.compile(r"\bacc\b")   # a fold statement's accumulator, renamed for the partials' fold


def render_reduce_kernel(plan: ReducePlan, target: str) -> str:
    """The kernel's source for ``target`` ``"cuda"`` or ``"cpu"``."""
    if target not in ("cuda", "cpu"):
        raise ValueError(f"unknown target {target!r}")
    params = kernel_param_names(plan)
    r = _ReduceRenderer(plan, target)
    if target == "cpu":
        return _function(plan.name, ["k0", "k1"] + params, r.cpu())
    lines = r.block_per_output() if plan.schedule == "rows" else r.thread_per_output()
    return _function(plan.name, params, lines)


class _ReduceRenderer:
    def __init__(self, plan: ReducePlan, target: str):
        self.plan = plan
        self.row = REDUCTIONS[plan.reduction]
        self.acc = accumulator_code(plan.reduction, plan.value_code, target == "cpu")
        self.element = _Renderer(plan)   # reads body, operands (U or S) and schedule only
        self.inputs = [k for k, o in enumerate(plan.operands) if not o.output]
        self.out = len(plan.operands) - 1
        self.split = plan.split > 1
        if self.split:   # the partials (the output before the result) and their fold's types
            self.partials = self.out - 1
            self.pcode = plan.operands[self.partials].code
            self.facc = accumulator_code(plan.reduction, self.pcode, target == "cpu")

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
        def load(ins, ln):
            return f"ld_{self.plan.operands[ins.arg].access}(p{ins.arg}, i{ins.arg})"
        lines = self.element.lines_at(2, "", load)
        value = self.element.convert(self.plan.value, self.acc, "")
        lines.append(f"v = {value}")
        return lines + [s.format(v="v") for s in self.row.combine]

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
        inner = [f"i{k} = r{k}_{rank - 1}" for k in self.inputs] + self.fold()
        if self.row.arg:
            inner.append("j += 1")
        for j in range(rank - 1, -1, -1):
            prev = "o" if j == 0 else "r"
            base = [f"r{k}_{j} = {prev}{k}{'' if j == 0 else f'_{j - 1}'} + "
                    + step(self.plan.operands[k], k, j, rank) for k in self.inputs]
            inner = [f"for x{j} in range(e{j}):"] + _indent(base + inner)
        return (["j = cv_i64(0)"] if self.row.arg else []) + inner

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

    def hoisted(self) -> list[str]:
        return self.element._constant_loads(0, lambda k: f"b{k}")

    # -- schedules -----------------------------------------------------------------------------
    def cpu(self) -> list[str]:
        size = " * ".join(f"e{j}" for j in range(len(self.plan.red)))
        per_item = "gc" if self.split else "kk"
        fold = []
        if self.split:   # the fold pass (k0 < 0), once every chunk is done: each output in turn
            gstep = "cv_i64(1)" if self.plan.schedule == "rows" else "n // gs"
            fold = ["if k0 < 0:"] + _indent(
                [f"gstep = {gstep}", "for o in range(n // gs):"]
                + _indent(self.kept_bases("o") + self.fold_serial()) + ["return chunks"])
        return ([f"kk = {size}", "total = n",
                 f"grain = max(1, {CPU_CHUNK} // max({per_item}, 1))",
                 "chunks = (total + grain - 1) // grain"] + fold
                + ["if k0 >= k1:", "    return chunks"]
                + self.hoisted()
                + ["for k in range(k0, min(k1, chunks)):",
                   "    top = min(k * grain + grain, total)",
                   "    for op in range(k * grain, top):"]
                + _indent(self.per_output(), 2) + ["return chunks"])

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
        coords = self.coordinates()
        first, last = ("lo + tx", "hi") if self.split else ("tx", "kk")
        walk = [f"j = {first}", f"while j < {last}:"] + _indent(
            coords + self.fold() + ["j += bdim"])
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


def _dtype(code: str):
    return BY_CODE[code]
