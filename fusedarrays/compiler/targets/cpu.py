"""The cpu target: serial numba functions over chunks of each plan's walk, which the cpu backend
runs on threads.

Pure text, no numba. Every kernel is ``<name>(k0, k1, ...)``: it runs chunks ``k0`` to ``k1`` of
its walk and returns the number of chunks, so ``k0 == k1`` asks for the count alone; the cpu
backend (``cpu/backend.py``) spreads the chunks over threads, and numba compiles each function
without the GIL and without parfors. There are no vectors, no shared memory and no block-wide
trees: a reduction's or a scan's elements are folded in order by one thread, and a split
reduction's partials by a pass of the same function once every chunk is done (``k0 < 0``).
``RENDERERS``: plan kind → the source of that plan's kernel; :func:`walk_text`: the walk in
words (``fa.explain``).
"""

from __future__ import annotations

import re

from ...ir.layout import TILE
from ..codegen import _function, _indent, _Renderer
from ..compact import ROW, CompactPlan
from ..foreach_codegen import AcrossRenderer, ForeachRenderer, merge, start
from ..foreach_plan import AcrossPlan, ForeachPlan
from ..plan import KernelPlan, kernel_param_names
from ..product_codegen import ProductRenderer
from ..reduction import ReducePlan
from ..reduction_codegen import ReduceRenderer
from ..rowfusion import RowPlan, RowRenderer, row_bases, row_coordinates
from ..scan_codegen import ScanRenderer
from ..tensor_fold import TensorFoldPlan, fold_lines, fold_params

# float32 (complex64) sums accumulate in float64 (complex128): one thread folds an output's
# elements in order, and float64 makes that as accurate as NumPy's pairwise sum
# (ir/reductions.accumulator_code)
WIDE_SUMS = True

# A walk is cut into chunks of this many elements (whole rows in 2-D walks): large enough that
# a thread's hand-off costs nothing next to a chunk, small enough to balance threads.
CPU_CHUNK = 1 << 14

_NUMPY = {"f32": "np.float32", "f64": "np.float64", "i64": "np.int64", "u64": "np.uint64",
          "c64": "np.complex64", "c128": "np.complex128"}


def _chunked(total: str, grain: str, hoisted: list[str], item: str, per_item: list[str],
             head: list[str] = (), before: list[str] = ()) -> list[str]:
    """Items ``0 … total - 1`` in chunks of ``grain``: chunks ``k0`` to ``k1`` of them, each
    item ``item`` by ``per_item``, after the ``hoisted`` lines (``head``: lines before the
    count, ``before``: after it, before the check for a count alone)."""
    return ([*head, f"total = {total}", f"grain = {grain}",
             "chunks = (total + grain - 1) // grain", *before, "if k0 >= k1:",
             "    return chunks"] + hoisted
            + ["for k in range(k0, min(k1, chunks)):", "    top = min(k * grain + grain, total)",
               f"    for {item} in range(k * grain, top):"]
            + _indent(per_item, 2) + ["return chunks"])


# A reduction's or a scan's elements along the last axis are computed a block at a time into a
# buffer, then folded in order: the block's loop carries no dependence, so LLVM vectorises its
# arithmetic, and the fold keeps the order, so the bits, of one loop. A strided operand's stride
# along that axis is unknown to LLVM, which then keeps the loop scalar; the common one, zero (a
# row's mean or max broadcast along it), gets a loop of its own. Only elements that call a math
# function or divide are blocked: it doubles numba's compile of a reduction (~0.15 s to ~0.3),
# and a plain sum's time is its fold's. (2000, 300) float32 row sums of exp(x - max): 3.5 ms to
# 0.7 on the 2-core machine.
FOLD_BLOCK = 64
_COSTLY = re.compile(r"\bmath\.|\bfa_div|\bfa_pow|\bfa_exp")


def _worth_blocking(value: list[str]) -> bool:
    """Whether an element's lines call a math function or divide (what vectorising speeds)."""
    return any(_COSTLY.search(line) for line in value)


def _blocked(length: str, value: list[str], fold: list[str], strides: list[str] = (),
             v: str = "v", buffer: str = "vb") -> list[str]:
    """Elements ``0 … length - 1``: ``value`` (the element ``xb + t``'s lines, its value in
    ``v``) for a block of them into ``buffer``, then ``fold`` (over ``v``) for each in order;
    where every one of ``strides`` (names in ``value``) is zero, a copy of the loop with them
    0."""
    loop = [f"for xb in range(0, {length}, {FOLD_BLOCK}):",
            f"    m = min({FOLD_BLOCK}, {length} - xb)", "    for t in range(m):"] + _indent(
        value + [f"{buffer}[t] = {v}"], 2) + [
        "    for t in range(m):", f"        {v} = {buffer}[t]"] + _indent(fold, 2)
    if not strides:
        return loop
    zero = re.compile(r"\b(" + "|".join(map(re.escape, strides)) + r")\b")
    return ([f"if {' == 0 and '.join(strides)} == 0:"] + _indent([zero.sub("0", ln) for ln in loop])
            + ["else:"] + _indent(loop))


class _CpuReduce(ReduceRenderer):
    def blocked(self) -> bool:
        """Whether the last axis is walked in blocks: an element worth it, not an arg reduction
        (its index counts along), not a split one (a part's elements are walked by flat
        index)."""
        return (not self.row.arg and not self.split and self.acc in _NUMPY
                and _worth_blocking(self.value()))

    def innermost(self, last: int) -> list[str]:
        if not self.blocked():
            return super().innermost(last)
        strides = [f"t{k}_{last}" for k in self.inputs if self.plan.operands[k].layout != "U"]
        return _blocked(f"e{last}", [f"x{last} = xb + t"] + self.base(last) + [
            f"i{k} = r{k}_{last}" for k in self.inputs] + self.value(), self.combine(), strides)

    def hoisted(self) -> list[str]:
        return super().hoisted() + ([f"vb = np.empty({FOLD_BLOCK}, {_NUMPY[self.acc]})"]
                                    if self.blocked() else [])


class _CpuScan(ScanRenderer):
    def blocked(self) -> bool:
        return self.acc in _NUMPY and _worth_blocking(self.value("j"))

    def serial(self) -> list[str]:
        if not self.blocked():
            return super().serial()
        strides = [f"t{k}" for k in self.inputs if self.plan.operands[k].layout != "U"]
        return self.initial() + [f"acc = {self.start}"] + _blocked(
            "e0", ["j = xb + t"] + self.value("j"),
            [f"acc = {self.combine('acc', 'v')}", self.store("(xb + t)", "acc")], strides)

    def hoisted(self) -> list[str]:
        return super().hoisted() + ([f"vb = np.empty({FOLD_BLOCK}, {_NUMPY[self.acc]})"]
                                    if self.blocked() else [])


def render_reduce(plan: ReducePlan) -> str:
    """Chunks of the outputs (or, split, of the outputs' parts), each output's elements in C
    order, computed a block at a time (:data:`FOLD_BLOCK`); split, a fold pass (``k0 < 0``:
    ``cpu/backend.py`` calls it once every chunk is done) folds each output's partials in
    order."""
    r = _CpuReduce(plan, WIDE_SUMS)
    size = " * ".join(f"e{j}" for j in range(len(plan.red)))
    fold = []
    if r.split:   # the fold pass, each output in turn
        gstep = "cv_i64(1)" if plan.schedule == "rows" else "n // gs"
        fold = ["if k0 < 0:"] + _indent(
            [f"gstep = {gstep}", "for o in range(n // gs):"]
            + _indent(r.kept_bases("o") + r.fold_serial()) + ["return chunks"])
    lines = _chunked("n", f"max(1, {CPU_CHUNK} // max({'gc' if r.split else 'kk'}, 1))",
                     r.hoisted(), "op", r.per_output(), head=[f"kk = {size}"], before=fold)
    return _function(plan.name, ["k0", "k1"] + kernel_param_names(plan), lines)


def render_kernel(plan: KernelPlan) -> str:
    """Chunks of ``CPU_CHUNK`` elements (whole rows in a 2-D walk; a tiled walk: ``TILE`` rows
    walked ``TILE`` columns at a time, so a transposed operand's cache lines are read once); a
    chunk whose float32 ``sin``/``cos`` arguments are all below ``NEAR`` takes the near ones
    (:func:`_near_chunks`)."""
    r = _Renderer(plan)
    params = kernel_param_names(plan)
    r.pos = lambda lane: "(r * d1 + c)" if plan.schedule in ("rows", "tiled") else "i"
    if plan.schedule in ("rows", "tiled"):
        row = r._row_base() + r._constant_loads(1, r._rb)
        index = lambda k: r._row_index(k, "c")   # noqa: E731
        # tiled: TILE rows walked TILE columns at a time (a transposed operand's lines reused)
        tiled, cols = plan.schedule == "tiled", f"c0, min(c0 + {TILE}, d1)"

        def walk(body: list[str]) -> list[str]:
            loop = ["for r in range(lo, hi):"] + _indent(
                row + [f"for c in range({cols if tiled else 'd1'}):"] + _indent(body))
            return [f"for c0 in range(0, d1, {TILE}):"] + _indent(loop) if tiled else loop
        total, grain = "d0", str(TILE) if tiled else f"max(1, {CPU_CHUNK} // max(d1, 1))"
        coordinates = []
    else:
        strided = plan.schedule == "nd" and any(o.layout != "C" for o in plan.operands)
        flat = r._flat_index
        index = (lambda k: flat(k, "i")) if plan.schedule == "flat" else (   # noqa: E731
            lambda k: r._nd_index(k))
        coordinates = r._nd_coordinates() if strided else []

        def walk(body: list[str]) -> list[str]:
            return ["for i in range(lo, hi):"] + _indent(coordinates + body)
        total, grain = "n", str(CPU_CHUNK)
    lines = [f"total = {total}", f"grain = {grain}", "chunks = (total + grain - 1) // grain",
             "if k0 >= k1:", "    return chunks"]
    lines += r._constant_loads(0, lambda k: f"b{k}")
    lines += ["for k in range(k0, min(k1, chunks)):", "    lo = k * grain",
              "    hi = min(lo + grain, total)"] + _indent(_near_chunks(r, index, walk)) + [
        "return chunks"]
    return _function(plan.name, ["k0", "k1"] + params, lines)


# float32 sin and cos of a chunk whose arguments are all below this take the near functions
# (cpu/vecmath.py: accurate below its NEAR, which a test holds this to)
NEAR_LIMIT = 65536.0
_NEAR = {"sin": "fa_sin_near_f32", "cos": "fa_cos_near_f32"}
_FAR = {"sin": "fa_sin_far_f32", "cos": "fa_cos_far_f32"}


def _near_chunks(r: _Renderer, index, walk) -> list[str]:
    """A chunk's elements (``walk(body)``: the loops around an element's lines). Where the
    elements compute float32 ``sin`` or ``cos``, a first pass computes only their arguments and
    counts those at or above ``NEAR`` (or not finite; it stores nothing, so an operand written
    in place is read as it was): with none, the chunk takes ``cpu/vecmath.py``'s float32 near
    functions (NumPy's accuracy, 3-4x faster), else calls of the ones exact over the whole
    range (compiled once, not inlined into every kernel)."""
    plan = r.plan

    def load(ins, lane):
        return f"ld_{r.access(ins.arg)}(p{ins.arg}, {index(ins.arg)})"
    values = r.lines_at(2, "", load)
    body = values + r.stores("", index)
    calls = [ins for ins in plan.body if ins.kind == "op" and ins.arg[0] in _NEAR
             and ins.arg[1][0] == "f32" and ins.var is not None and r.level[ins.var] == 2]
    if not calls or any(ins.kind in ("random", "gather") for ins in plan.body):
        return walk(body)
    cone, by_var = {ins.inputs[0] for ins in calls}, {ins.var: ins for ins in plan.body}
    for ins in reversed(plan.body):
        if ins.var in cone:
            cone.update(ins.inputs)
    needed = {r.name(v, "") for v in cone if v in by_var} | {
        r.recip_name(v) for v in cone if v in r.recips}
    check = [line for line in values if line.split(" = ", 1)[0] in needed] + [
        f"far += 0 if abs({r.name(ins.inputs[0], '')}) < {NEAR_LIMIT} else 1" for ins in calls]
    heads = {f"{r.name(ins.var, '')} = math.{ins.arg[0]}(": ins.arg[0] for ins in calls}

    def calling(names: dict) -> list[str]:
        """The element's lines with those calls made to ``names[sin or cos]``."""
        return [next((f"{h[:h.index('math.')]}{names[fn]}({ln[len(h):]}"
                      for h, fn in heads.items() if ln.startswith(h)), ln) for ln in body]
    return ["far = 0"] + walk(check) + ["if far == 0:"] + _indent(walk(calling(_NEAR))) + [
        "else:"] + _indent(walk(calling(_FAR)))


class _CpuRows(RowRenderer):
    """A row's sections one after another, each result passed through the reduction's
    temporary (which the cuda kernel leaves unwritten); a section whose elements call a math
    function or divide computes them a block at a time (:data:`FOLD_BLOCK`)."""

    wide_sums = WIDE_SUMS

    def __init__(self, plan: RowPlan):
        super().__init__(plan)
        self.buffers: dict[int, str] = {}   # a blocked section → its buffer's NumPy type

    def section_walk(self, number: int, r, fold, acc: str) -> list[str]:
        lines = fold("")
        value, combine = lines[:1], lines[1:]
        element = r.lines_at(2, "", lambda ins, lane: f"ld_{self.plan.operands[ins.arg].access}"
                                                      f"(p{ins.arg}, i{ins.arg})")
        if acc not in _NUMPY or not _worth_blocking(element + value):
            return super().section_walk(number, r, fold, acc)
        self.buffers[number] = _NUMPY[acc]
        block = ["j = xb + t"] + row_coordinates(self.plan) + element + value
        return self.constants(r) + _blocked("kk", block, combine, v=f"u{number}",
                                             buffer=f"vb{number}")

    def hoisted(self) -> list[str]:
        """After :meth:`body`: the blocked sections' buffers too."""
        return super().hoisted() + [f"vb{n} = np.empty({FOLD_BLOCK}, {t})"
                                    for n, t in self.buffers.items()]

    def result(self, number: int, section: tuple, acc: str, lines: list[str],
               result: str) -> list[str]:
        temp = section[2]
        return lines + [f"st_{self.plan.operands[temp].access}(p{temp}, o{temp}, {result})"]


def render_rows(plan: RowPlan) -> str:
    """Chunks of the rows, each row's sections one after another."""
    r = _CpuRows(plan)
    body = r.body()
    size = " * ".join(f"e{j}" for j in range(len(plan.red)))
    lines = _chunked("n", f"max(1, {CPU_CHUNK} // max(kk, 1))", r.hoisted(), "op",
                     row_bases(plan) + body, head=[f"kk = {size}"])
    return _function(plan.name, ["k0", "k1"] + kernel_param_names(plan), lines)


def render_scan(plan) -> str:
    r = _CpuScan(plan)
    lines = _chunked("n", f"max(1, {CPU_CHUNK} // max(e0, 1))", r.hoisted(), "op",
                     row_bases(plan) + r.serial())
    return _function(plan.name, ["k0", "k1"] + kernel_param_names(plan), lines)



def render_product(plan) -> str:
    """Chunks of the output rows (over the whole batch); a row's outputs are summed over ``k``
    in order in a row of accumulators, so the inner loop walks a row of ``b`` and of the
    accumulators."""
    r = ProductRenderer(plan)
    row = (["item = r // dm", "i = r - item * dm"] + r.bases("item")
           + ["for j in range(dn):", f"    acc[j] = {r.zero}",
              "for h in range(dk):", f"    x = {r.load(0, 'o0 + i * u0 + h * v0')}",
              "    for j in range(dn):",
              f"        acc[j] += x * {r.load(1, 'o1 + h * u1 + j * v1')}",
              "for j in range(dn):", "    " + r.store("o2 + i * u2 + j * v2", "acc[j]")])
    lines = ([f"rows = {r.batch_size()} * dm",
              f"grain = max(1, {CPU_CHUNK} // max(dn * dk, 1))",
              "chunks = (rows + grain - 1) // grain", "if k0 >= k1:", "    return chunks",
              f"acc = np.zeros(dn, {_NUMPY[r.acc]})",
              "for k in range(k0, min(k1, chunks)):",
              "    for r in range(k * grain, min(k * grain + grain, rows)):"]
             + _indent(row, 2) + ["return chunks"])
    return _function(plan.name, ["k0", "k1"] + kernel_param_names(plan), lines)


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


def render_compact(plan: CompactPlan) -> str:
    row = [f"lo = row * {ROW}", f"hi = min(lo + {ROW}, total)"]
    if plan.mode == "count":
        row += _row_pass(plan, "lo", "hi") + ["st_i64(p1, row, acc)"]
    else:
        row += ["pos = cv_i64(0)", "if row > 0:", "    pos = ld_i64(p1, row - 1)"]
        row += _row_pass(plan, "lo", "hi")
    lines = ([f"grain = {max(1, CPU_CHUNK // ROW)}", "chunks = (n + grain - 1) // grain",
              "if k0 >= k1:", "    return chunks",
              "for k in range(k0, min(k1, chunks)):",
              "    for row in range(k * grain, min(k * grain + grain, n)):"]
             + _indent(row, 2) + ["return chunks"])
    return _function(plan.name, ["k0", "k1"] + plan.param_names(), lines)


def render_foreach(plan: ForeachPlan) -> str:
    """Tensors ``k0`` to ``k1`` (the tensors are the chunks: ``k0 == k1`` asks for ``nt``) one
    after another, tensor ``t``'s ``m`` elements in order, its operand addresses from
    ``ptrs``; the partials of a reduction across the list folded in order first."""
    f = ForeachRenderer(plan)
    params = ["k0", "k1", "n", "meta", "ptrs", "nt"] + f.tail
    per_tensor = f.loads() + f.draw_offset("sz0") + ["for i in range(m):"] + _indent(f.element)
    fold = []
    for j, k, name, code in f.folds():
        acc, want = f"fold{j}", plan.tensor.operands[k].code
        fold += [start(name, code, acc), "for kq in range(np_):"]
        fold += _indent([f"fw{j} = ld_{code}(q{j}, kq)"] + merge(name, acc, f"fw{j}"))
        fold.append(f"gv{k} = cv_{want}({acc})")
    # the real sizes follow the starts and the chunk table in meta (see foreach_plan.foreach_meta)
    sizes = f"nt + 1 + ((n + {(1 << plan.chunk_shift) - 1}) >> {plan.chunk_shift})"
    return _function(plan.name, params, ["if k0 >= k1:", "    return nt"] + fold + f.hoisted
                     + [f"sz0 = {sizes}", "for t in range(k0, min(k1, nt)):"]
                     + _indent(["m = ld_i64(meta, sz0 + t)"] + per_tensor) + ["return nt"])


def render_across(plan: AcrossPlan) -> str:
    """A partial per chunk, its range walked tensor by tensor."""
    a = AcrossRenderer(plan, wide_sums=WIDE_SUMS)
    per = ["lo = op * gc", "hi = min(lo + gc, n)"] + a.starts
    tensor = ["start = ld_i64(meta, t)", "end = start + ld_i64(meta, sz0 + t)"] + a.loads()
    walk = a.find + ["while g < hi:"] + _indent(
        tensor + ["for i in range(g - start, min(end, hi) - start):"]
        + _indent(a.element) + ["g = ld_i64(meta, t + 1)", "t += 1"])
    per += ["g = lo", "if g < hi:"] + _indent(walk) + a.stores
    params = ["k0", "k1", "n", "meta", "ptrs", "nt"]
    return _function(plan.name, params + a.tail,
                     ["if k0 >= k1:", "    return np_"] + a.head + a.hoisted
                     + ["for op in range(k0, min(k1, np_)):"] + _indent(per) + ["return np_"])


def render_tensor_fold(plan: TensorFoldPlan) -> str:
    """Tensors ``k0`` to ``k1`` (the backend's chunks)."""
    return _function(plan.name, ["k0", "k1"] + fold_params(plan),
                     ["if k0 >= k1:", "    return n", "for t in range(k0, min(k1, n)):"]
                     + _indent(fold_lines(plan)) + ["return n"])


RENDERERS = {
    "kernel": render_kernel,
    "reduce": render_reduce,
    "rows": render_rows,
    "scan": render_scan,
    "product": render_product,
    "compact": render_compact,
    "foreach": render_foreach,
    "across": render_across,
    "tensor_fold": render_tensor_fold,
}

# What each plan kind's walk is here, by its schedule where it has several (fa.explain)
WALKS = {
    "kernel": {
        "flat": "flat: one loop over the collapsed elements, in chunks spread over the cores",
        "rows": "rows: row by row, no division per element, rows in chunks spread over the cores",
        "tiled": "tiled (on a GPU: transposed operands staged through shared-memory tiles); "
                 "here row by row, rows in chunks spread over the cores",
        "nd": "nd: coordinates by division per element, in chunks spread over the cores"},
    "reduce": "each output's elements folded in order by one thread; outputs in chunks spread "
              "over the cores",
    "scan": "each row scanned in order by one thread; rows in chunks spread over the cores",
    "product": "each output row summed over K in order by one thread; rows in chunks spread over "
               "the cores",
    "rows": "a row at a time per thread: each reduction a loop over the row, then the row's "
            "elements; rows in chunks spread over the cores",
}


def walk_text(plan) -> str:
    """How ``plan``'s kernel walks its data on this target, in words."""
    walk = WALKS.get(plan.kind, "")
    return walk.get(plan.schedule, plan.schedule) if isinstance(walk, dict) else walk
