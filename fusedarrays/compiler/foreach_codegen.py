"""Multi-tensor plans → the pieces of their kernels' source every target's walk shares:
``f.foreach``'s launch over a whole list, and the launch before it where the function reduces
across the list (``fa.global_norm``).

Pure text, like :mod:`.codegen`, whose renderer writes the per-element lines: ``i`` is the
element within its tensor, so they are the per-tensor plan's own. Both kernels walk the
concatenation of the tensors through the same tables (``meta``, the pointer table: see
:class:`~.foreach_plan.ForeachPlan`); how, is each target's (``targets/cuda/foreach.py``: blocks
over chunks of the concatenation; ``targets/cpu.py``: the tensors one after another).

A reduction across the list takes two launches and no atomics. The first (the across kernel)
stores ``np_`` partial results per reduction, each the fold of a fixed range of the
concatenation (on cuda a block's threads interleaved along it, then a tree in shared memory);
the second, the foreach kernel, folds them in its prologue (:meth:`ForeachRenderer.folds`):
every block reads the same few thousand bytes, folds them in the same order and so holds the
same value before its first element, which the element lines read as a hoisted constant. The
order is a function of the sizes and the block size only: the same tensors give the same bits
every call.
"""

from __future__ import annotations

from ..ir.dtypes import BY_CODE
from ..ir.reductions import REDUCTIONS, accumulator_code, identity
from .codegen import _Renderer
from .foreach_plan import AcrossPlan, ForeachPlan

_INF = "(1e308 * 10.0)"   # a float infinity every target folds (the simulator has no math.inf)


class ForeachRenderer:
    """The pieces of a :class:`~.foreach_plan.ForeachPlan` kernel: operand ``k``'s pointer
    ``p<k>`` loaded from its column of ``ptrs`` (:attr:`first`: column → the first operand
    reading it; :attr:`pointers`: the others, which share its pointer), the lines computed
    once (:attr:`hoisted`), those of element ``i`` of a tensor (:attr:`element`) and the
    parameters after the tables (:attr:`tail`)."""

    def __init__(self, plan: ForeachPlan):
        self.plan = plan
        self.r = r = _Renderer(plan.tensor)
        # fa.random draws (inside fa.fuse): element i's stream index is its tensor's start in
        # the concatenation of every tuple (``doff``, after the flags in meta: fuse/foreach.py)
        # plus i, so no two tensors draw the same numbers
        self.draws = any(i.kind == "random" for i in plan.tensor.body)
        if self.draws:
            r.pos = lambda lane: "(doff + i)"
        self.first: dict[int, int] = {}
        for k, c in enumerate(plan.columns):
            if c >= 0:
                self.first.setdefault(c, k)
        # operand k's pointer: its column's, loaded once (a load and a store of one array
        # share it)
        self.pointers = [f"p{k} = p{self.first[c]}" for k, c in enumerate(plan.columns)
                         if c >= 0 and self.first[c] != k]
        folded = {k for k, _, _ in plan.globals}
        # scalar-only instructions, and the reductions across the list (their folded values);
        # a 0-d array shared by every tensor (a device step count) is read through row 0 of
        # the table, which every row repeats, wherever the lines stand
        self.hoisted = r.lines_at(0, "", lambda ins, ln: f"gv{ins.arg}" if ins.arg in folded
                                  else shared_load(r, ins.arg, plan.columns[ins.arg]))
        if getattr(plan, "per_tensor", False):   # a value per tensor (compiler/tensor_fold.py):
            # loaded, with what it feeds, wherever the walk enters a tensor
            self.pointers += [f"gv{k} = cv_{plan.tensor.operands[k].code}(ld_{code}(q{j}, t))"
                              for j, (k, _, code) in enumerate(plan.globals)] + self.hoisted
            self.hoisted = []
        self.element = r.scalar_element(lambda k: "i")
        scalars = [f"a{m}" for m in range(len(plan.tensor.scalars))]
        across = (["np_"] + [f"q{j}" for j in range(len(plan.globals))]) if plan.globals else []
        self.tail = across + scalars

    def loads(self, table: str = "ptrs") -> list[str]:
        """Tensor ``t``'s operand pointers."""
        return ([f"p{k} = ld_u64({table}, t * {self.plan.width} + {c})"
                 for c, k in self.first.items()] + self.pointers)

    def draw_offset(self, sizes_at: str) -> list[str]:
        """Tensor ``t``'s start in the draws' stream, where the kernel draws (``sizes_at``: the
        index of the real sizes in ``meta``; the flags, then the starts follow them)."""
        return [f"doff = ld_i64(meta, {sizes_at} + 2 * nt + t)"] if self.draws else []

    def folds(self) -> list[tuple]:
        """Per reduction across the list folded in the prologue: ``(j, k, name, code)``,
        its partials ``q<j>`` of ``code`` folded into ``gv<k>`` (none where the values are
        per tensor: folded by a launch of their own)."""
        if getattr(self.plan, "per_tensor", False):
            return []
        return [(j, k, name, code) for j, (k, name, code) in enumerate(self.plan.globals)]


def shared_load(r: _Renderer, k: int, column: int) -> str:
    """Operand ``k``'s one element, a 0-d array every tensor shares (class B), read through
    the address in row 0, column ``column`` of the pointer table ``ptrs``."""
    return f"ld_{r.access(k)}(ld_u64(ptrs, {column}), 0)"


def start(name: str, code: str, acc: str) -> str:
    """``acc``'s starting value for reduction ``name`` in type ``code``."""
    value = identity(name, BY_CODE[code])
    if isinstance(value, float):
        text = _INF if value > 0 else f"-{_INF}"
    else:
        text = str(int(value))
    return f"{acc} = cv_{code}({text})"


def merge(name: str, acc: str, w: str) -> list[str]:
    """The statements folding ``w`` (a partial, or another thread's accumulator) into ``acc``."""
    return [s.format(w=w, iw="").replace("acc", acc) for s in REDUCTIONS[name].merge]


class AcrossRenderer:
    """The pieces of an :class:`~.foreach_plan.AcrossPlan` kernel: per reduction ``j`` its
    accumulator ``acc<j>`` (of :func:`accumulator_code`'s type: ``wide_sums`` as the target
    asks), its element ``u<j>`` and its partials ``q<j>``."""

    def __init__(self, plan: AcrossPlan, wide_sums: bool):
        self.plan = plan
        r = self.r = _Renderer(plan.tensor)
        self.first: dict[int, int] = {}
        for k, c in enumerate(plan.columns):
            self.first.setdefault(c, k)
        self.pointers = [f"p{k} = p{self.first[c]}" for k, c in enumerate(plan.columns)
                         if self.first[c] != k]
        self.accs = [(f"acc{j}", accumulator_code(name, r.codes[var], wide_sums))
                     for j, (name, var, _) in enumerate(plan.reductions)]
        pairs = list(zip(plan.reductions, self.accs))
        self.starts = [start(name, code, acc) for (name, _, _), (acc, code) in pairs]
        self.element = r.lines_at(2, "", lambda ins, ln: f"ld_{r.access(ins.arg)}(p{ins.arg}, i)")
        for j, ((name, var, _), (acc, code)) in enumerate(pairs):
            self.element.append(f"u{j} = {r.convert(var, code, '')}")
            self.element += [s.format(v=f"u{j}").replace("acc", acc)
                             for s in REDUCTIONS[name].combine]
        self.element += r.stores("", lambda k: "i")   # the writes it makes too, if any
        self.stores = [f"st_{pc}(q{j}, op, cv_{pc}({acc}))"
                       for j, ((_, _, pc), (acc, _)) in enumerate(pairs)]
        shift = plan.chunk_shift
        self.head = ["cb = nt + 1", f"chunks = (n + {(1 << shift) - 1}) >> {shift}",
                     "sz0 = cb + chunks"]
        self.find = [f"t = ld_i64(meta, cb + (g >> {shift}))", "while ld_i64(meta, t + 1) <= g:",
                     "    t += 1"]
        # after the partials' count, range and pointers
        self.tail = ["np_", "gc"] + [f"q{j}" for j in range(len(plan.reductions))] + [
            f"a{m}" for m in range(len(plan.tensor.scalars))]
        self.hoisted = r.lines_at(0, "", lambda ins, ln: shared_load(r, ins.arg,
                                                                     plan.columns[ins.arg]))

    def loads(self) -> list[str]:
        """Tensor ``t``'s operand pointers."""
        return ([f"p{k} = ld_u64(ptrs, t * {self.plan.table} + {c})"
                 for c, k in self.first.items()] + self.pointers)
