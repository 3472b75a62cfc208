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
"""

from __future__ import annotations

from ..ir.dtypes import BY_CODE, COMPUTE_CODE
from ..ir.reductions import BLOCK_THREADS, REDUCTIONS, accumulator_code, identity
from .codegen import CPU_CHUNK, _function, _indent, _Renderer, render_kernel
from .plan import kernel_param_names
from .product import ProductPlan
from .product_codegen import render_product_kernel
from .reduction import ReducePlan
from .rowfusion import RowPlan, block_tree, render_rows_kernel, step
from .scan import ScanPlan
from .scan_codegen import render_scan_kernel

_INF = "(1e308 * 10.0)"   # a float infinity every target folds (the simulator has no math.inf)


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


def render_plan(plan, target: str) -> str:
    """The source of any plan evaluation launches: a reduction's, a scan's, a product's, a row
    program's or an elementwise one's."""
    if isinstance(plan, ProductPlan):
        return render_product_kernel(plan, target)
    if isinstance(plan, ReducePlan):
        return render_reduce_kernel(plan, target)
    if isinstance(plan, ScanPlan):
        return render_scan_kernel(plan, target)
    if isinstance(plan, RowPlan):
        return render_rows_kernel(plan, target)
    return render_kernel(plan, target)


class _ReduceRenderer:
    def __init__(self, plan: ReducePlan, target: str):
        self.plan = plan
        self.row = REDUCTIONS[plan.reduction]
        self.acc = accumulator_code(plan.reduction, plan.value_code, target)
        self.element = _Renderer(plan)   # reads body, operands (U or S) and schedule only
        self.inputs = [k for k, o in enumerate(plan.operands) if not o.output]
        self.out = len(plan.operands) - 1
        self.split = plan.split > 1

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
        value = identity(self.plan.reduction, _dtype(COMPUTE_CODE[self.plan.value_code]))
        if isinstance(value, float):
            text = _INF if value > 0 else f"-{_INF}"
        else:
            text = str(int(value))
        lines = [f"acc = cv_{self.acc}({text})"]
        return lines + (["idx = cv_i64(0)"] if self.row.arg else [])

    def fold(self) -> list[str]:
        """The element's lines (loads at index ``i<k>``) and its folding into ``acc``."""
        def load(ins, ln):
            return f"ld_{ins.code}(p{ins.arg}, i{ins.arg})"
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
        out = self.plan.operands[self.out].code
        if self.row.arg:
            value = idx
        elif COMPUTE_CODE[out] == self.acc:
            value = acc
        else:
            value = f"cv_{out}({acc})"
        where = f"o{self.out} + g * gstep" if self.split else f"o{self.out}"
        return f"st_{out}(p{self.out}, {where}, {value})"

    def hoisted(self) -> list[str]:
        return self.element._constant_loads(0, lambda k: f"b{k}")

    # -- schedules -----------------------------------------------------------------------------
    def cpu(self) -> list[str]:
        size = " * ".join(f"e{j}" for j in range(len(self.plan.red)))
        per_item = "gc" if self.split else "kk"
        return ([f"kk = {size}", "total = n",
                 f"grain = max(1, {CPU_CHUNK} // max({per_item}, 1))",
                 "chunks = (total + grain - 1) // grain", "if k0 >= k1:", "    return chunks"]
                + self.hoisted()
                + ["for k in range(k0, min(k1, chunks)):",
                   "    top = min(k * grain + grain, total)",
                   "    for op in range(k * grain, top):"]
                + _indent(self.per_output(), 2) + ["return chunks"])

    def thread_per_output(self) -> list[str]:
        size = " * ".join(f"e{j}" for j in range(len(self.plan.red)))
        return (["op = cv_i64(cuda.grid(1))", "ostep = cv_i64(cuda.gridsize(1))", f"kk = {size}"]
                + self.hoisted() + ["while op < n:"]
                + _indent(self.per_output() + ["op += ostep"]))

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
        per_output = (self.part() + self.kept_bases("o") + self.start() + walk + save + tree
                      + final + ["cuda.syncthreads()", "op += ostep"])
        return (shared + ["tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
                          "op = cv_i64(cuda.blockIdx.x)", "ostep = cv_i64(cuda.gridDim.x)",
                          f"kk = {size}"]
                + self.hoisted() + ["while op < n:"] + _indent(per_output))


def _dtype(code: str):
    return BY_CODE[code]
