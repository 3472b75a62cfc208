"""The cuda row kernel (``compiler/rowfusion.py``): a block per row, each reduction of the row a
walk and the block's tree, its result handed to every thread through shared memory.

Pure text over :class:`~...rowfusion.RowRenderer`'s pieces. Thread ``tx`` takes elements
``tx, tx + blockDim, …`` of each walk; vectorised (``plan.vector_width``), whole 16-byte
vectors, the first walk issuing the loads of ``FIRST_TURN`` of a thread's vectors before it
waits on the first. A section's result: the block's tree (``reduce.block_tree``), thread 0 puts
it in shared memory (a slot per section: the next section's tree writes the accumulators'
array while a slower thread may still be reading this result), and after a barrier every thread
takes it from there. With ``row_slots``, each thread keeps its vectors of the row, and what the
walks compute of them, in registers across the walks (:class:`_RowCache`).
"""

from __future__ import annotations

from ....ir.reductions import BLOCK_THREADS, REDUCTIONS
from ...codegen import _function, _indent, _Renderer
from ...plan import kernel_param_names
from ...rowfusion import FIRST_TURN, RowPlan, RowRenderer, _renderer, row_bases
from .reduce import WIDE_SUMS, block_tree


def render_rows(plan: RowPlan) -> str:
    r = _CudaRows(plan)
    body = r.body()
    size = " * ".join(f"e{j}" for j in range(len(plan.red)))
    head = [f"{sh} = cuda.shared.array({length}, sh_{kind})"
            for sh, (length, kind) in r.shared.items()]
    head += ["tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
             "op = cv_i64(cuda.blockIdx.x)", "ostep = cv_i64(cuda.gridDim.x)",
             f"kk = {size}", f"kv = kk // {r.width}"] + r.hoisted()
    if r.cache:   # each slot's vector, and where a slot past the row's end reads instead
        head += [ln for u in range(plan.row_slots)
                 for ln in (f"jv{u} = tx + {u} * bdim" if u else "jv0 = tx",
                            f"jc{u} = min(jv{u}, kv - 1)")]
    lines = head + ["while op < n:"] + _indent(row_bases(plan, r.width) + body
                                               + ["cuda.syncthreads()", "op += ostep"])
    return _function(plan.name, kernel_param_names(plan), lines)


class _CudaRows(RowRenderer):
    steps = ("j = tx", "j += bdim")
    wide_sums = WIDE_SUMS

    def __init__(self, plan: RowPlan):
        super().__init__(plan)
        self.width = plan.vector_width
        self.cache = _RowCache(plan, self.width, self.rows) if plan.row_slots else None

    def renderer(self, var: int) -> _Renderer:
        return self.cache.renderer(var) if self.cache else super().renderer(var)

    def walk(self, r: _Renderer, per_element, after, first: bool = False) -> list[str]:
        """Vectorised, a loop turn takes ``FIRST_TURN`` of a thread's vectors in the first walk
        (one in the others), every load issued before the first is used, folded in the same
        order."""
        if self.cache:
            return self.cache.walk(r, per_element, after)
        if self.width == 1:
            return super().walk(r, per_element, after, first)
        plan, width, turn = self.plan, self.width, FIRST_TURN if first else 1
        lines = self.constants(r)
        read = sorted({ins.arg for ins in r.plan.body
                       if ins.kind == "load" and plan.operands[ins.arg].layout != "B"})

        def vector(at: str, tag: str) -> tuple[list, list]:
            """The loads of the vector at ``at`` (named with ``tag``) and the work on them."""
            loads = [f"vw{k}{tag} = ldv{width}_{plan.operands[k].code}(p{k}, ov{k} + {at})"
                     for k in read]
            work = []
            for lane in range(width):
                work += r.lines_at(2, f"_{lane}",
                                   lambda ins, ln, lane=lane: f"vw{ins.arg}{tag}[{lane}]")
                work += per_element(f"_{lane}")
            return loads, work + after(at)
        lines.append("jv = tx")
        if turn > 1:
            parts = [vector("jv" if u == 0 else f"jv + {u} * bdim", f"_{u}") for u in range(turn)]
            lines += [f"while jv + {turn - 1} * bdim < kv:"] + _indent(
                [ln for loads, _ in parts for ln in loads]
                + [ln for _, work in parts for ln in work] + [f"jv += {turn} * bdim"])
        loads, work = vector("jv", "")
        return lines + ["while jv < kv:"] + _indent(loads + work + ["jv += bdim"])

    def result(self, number: int, section: tuple, acc: str, lines: list[str],
               result: str) -> list[str]:
        name, _, temp = section
        a, w = f"acc{number}", f"w{number}"
        out = self.plan.operands[temp].code
        sh = f"sacc_{acc}"
        self.shared[sh] = (BLOCK_THREADS, acc)
        res = f"sres_{out}"
        self.shared[res] = (len(self.plan.sections), out)
        self.rows[temp] = f"r{temp}"
        merge = [s.format(w=w).replace("acc", a) for s in REDUCTIONS[name].merge]
        return (lines + [f"{sh}[tx] = {a}"]
                + block_tree([f"{w} = {sh}[tx + h]"], merge, [f"{sh}[tx] = {a}"])
                + ["if tx == 0:", f"    {res}[{number}] = {result}", "cuda.syncthreads()",
                   f"r{temp} = cv_{out}({res}[{number}])"])


class _RowCache:
    """A cuda row kernel whose threads keep their ``row_slots`` vectors of the row, and what
    the walks compute of them, in registers (module docstring): each walk writes only the
    values no earlier walk wrote, under the names the earlier walk gave them (lane suffix
    ``_<slot>_<lane>``), so a later walk reads them from there."""

    def __init__(self, plan: RowPlan, width: int, rows: dict):
        self.plan, self.width, self.rows = plan, width, rows
        self.body = plan.body
        self.done: set[int] = set()   # vars an earlier walk computed

    def renderer(self, var: int) -> _Renderer:
        """The renderer of merged ``var``'s instructions, those already computed skipped."""
        want, by_var = {var}, {i.var: i for i in self.body}
        for ins in reversed(self.body):
            if ins.var in want:
                want.update(ins.inputs)
        r = _renderer(self.plan, [by_var[v] for v in sorted(want)])
        r.skip = frozenset(self.done)
        return r

    def walk(self, r: _Renderer, per_element, after) -> list[str]:
        """A walk over the slots: the row's constants not yet computed, every slot's loads of
        operands not read before (all issued before the first is used), then per slot its
        elements' new values and, where the slot lies in the row, ``per_element`` of each lane
        (its fold) and ``after(at, lanes)`` (its store)."""
        plan, width, slots = self.plan, self.width, self.plan.row_slots
        lines = r.lines_at(1, "", lambda ins, lane: self.rows.get(ins.arg)
                           or f"ld_{plan.operands[ins.arg].access}(p{ins.arg}, o{ins.arg})")
        read = sorted({ins.arg for ins in r.plan.body if ins.kind == "load"
                       and ins.var not in r.skip and plan.operands[ins.arg].layout != "B"})
        # the first walk's (the plan has no other: row_slots): every slot's load in flight
        lines += [f"vw{k}_{u} = ldv{width}_{plan.operands[k].code}(p{k}, ov{k} + jc{u})"
                  for u in range(slots) for k in read]
        for u in range(slots):
            kept = []
            for lane in range(width):
                lines += r.lines_at(2, f"_{u}_{lane}",
                                    lambda ins, ln, u=u, lane=lane: f"vw{ins.arg}_{u}[{lane}]")
                kept += per_element(f"_{u}_{lane}")
            kept += after(f"jv{u}", lambda lane, u=u: f"_{u}_{lane}")
            if kept:
                lines += [f"if jv{u} < kv:"] + _indent(kept)
        self.done.update(ins.var for ins in r.plan.body)
        return lines
