"""Multi-tensor plans → kernel source: ``f.foreach``'s launch over a whole list, and the launch
before it where the function reduces across the list (``fa.global_norm``).

Pure text, like :mod:`.codegen`, whose renderer writes the per-element lines: ``i`` is the
element within its tensor, so they are the per-tensor plan's own. Both kernels walk the
concatenation of the tensors through the same tables (``meta``, the pointer table: see
:class:`~.foreach_plan.ForeachPlan`).

A reduction across the list takes two launches and no atomics. The first
(:func:`render_across_kernel`) stores ``np_`` partial results per reduction, each the fold of a
fixed range of the concatenation (a block's threads interleaved along it, then a tree in shared
memory); the second, the foreach kernel, folds them in its prologue (:func:`_fold`): every
block reads the same few thousand bytes, folds them in the same order and so holds the same
value before its first element, which the element lines read as a hoisted constant. The order
is a function of the sizes and the block size only: the same tensors give the same bits every
call.
"""

from __future__ import annotations

import dataclasses

from ..ir.dtypes import BY_CODE
from ..ir.reductions import BLOCK_THREADS, REDUCTIONS, accumulator_code, identity
from .codegen import _function, _indent, _Renderer
from .foreach_plan import AcrossPlan, ForeachPlan

_INF = "(1e308 * 10.0)"   # a float infinity every target folds (the simulator has no math.inf)
_FOLD_SLOTS = 1024        # the largest CUDA block: the prologue's tree has a slot per thread


def render_foreach_kernel(plan: ForeachPlan, target: str) -> str:
    """The source of a multi-tensor kernel (see :class:`~.foreach_plan.ForeachPlan` for its
    parameters).

    cuda (and sim): blocks walk the concatenated elements in chunks of ``2**chunk_shift``; a
    block finds its chunk's first tensor in ``meta`` and loads that tensor's operand addresses
    from ``ptrs`` once (the same for every thread), then its threads walk the chunk; only where a
    chunk crosses into a later tensor does a thread step along the starts and reload. ``i`` is
    the element within the tensor, so the per-element lines are the tensor plan's own. cpu: a
    loop over the tensors (the chunks the backend spreads over threads), each tensor's operand
    addresses from ``ptrs``.
    """
    r = _Renderer(plan.tensor)
    count = plan.width
    first: dict[int, int] = {}
    for k, c in enumerate(plan.columns):
        if c >= 0:
            first.setdefault(c, k)
    # operand k's pointer: its column's, loaded once (a load and a store of one array share it)
    pointers = [f"p{k} = p{first[c]}" for k, c in enumerate(plan.columns)
                if c >= 0 and first[c] != k]
    folded = {k for k, _, _ in plan.globals}
    # scalar-only instructions, and the reductions across the list (their folded values)
    hoisted = r.lines_at(0, "", lambda ins, ln: f"gv{ins.arg}" if ins.arg in folded
                         else f"ld_{r.access(ins.arg)}(p{ins.arg}, 0)")
    if getattr(plan, "per_tensor", False):   # a value per tensor (compiler/tensor_fold.py):
        # loaded, with what it feeds, wherever the walk enters a tensor
        pointers += [f"gv{k} = cv_{plan.tensor.operands[k].code}(ld_{code}(q{j}, t))"
                     for j, (k, _, code) in enumerate(plan.globals)] + hoisted
        hoisted = []
    element = r.scalar_element(lambda k: "i")
    scalars = [f"a{m}" for m in range(len(plan.tensor.scalars))]
    across = (["np_"] + [f"q{j}" for j in range(len(plan.globals))]) if plan.globals else []
    if target == "cpu":   # tensors are the chunks (see _Renderer.cpu): k0 == k1 asks for nt
        params = ["k0", "k1", "n", "meta", "ptrs", "nt"]
        per_tensor = ([f"p{k} = ld_u64(ptrs, t * {count} + {c})" for c, k in first.items()]
                      + pointers
                      + ["for i in range(m):"] + _indent(element))
        return _foreach_cpu(plan, params + across + scalars, hoisted, per_tensor)
    if target != "cuda":
        raise ValueError(f"unknown target {target!r}")
    shift = plan.chunk_shift
    head = ["cb = nt + 1", f"chunks = (n + {(1 << shift) - 1}) >> {shift}",
            "c = cv_i64(cuda.blockIdx.x)", "cstep = cv_i64(cuda.gridDim.x)",
            "tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)", "t = cv_i64(0)"]
    head += _fold(plan, "cuda")
    params = ["n", "meta", "ptrs", "nt"] + across + scalars
    if plan.vector_width > 1:
        return _foreach_vectors(plan, first, pointers, hoisted, head, params)
    tensor = (["start = ld_i64(meta, t)", "end = ld_i64(meta, t + 1)"]
              + [f"p{k} = ld_u64(ptrs, t * {count} + {c})" for c, k in first.items()]
              + pointers)
    chunk = ([f"g = (c << {shift}) + tx", f"last = min((c + 1) << {shift}, n)",
              "t = ld_i64(meta, cb + c)"] + tensor
             + ["while g < last:"]
             + _indent(["if g >= end:"] + _indent(["while ld_i64(meta, t + 1) <= g:",
                                                    "    t += 1"] + tensor)
                       + ["i = g - start"] + element + ["g += bdim"])
             + ["c += cstep"])
    # the first tensor's values type every variable before the loop assigns them
    return _function(plan.name, params,
                     head + tensor + hoisted + ["while c < chunks:"] + _indent(chunk))


def _foreach_cpu(plan: ForeachPlan, params: list, hoisted: list, per_tensor: list) -> str:
    """The cpu multi-tensor kernel: tensors ``k0`` to ``k1`` one after another, tensor ``t``'s
    ``m`` elements by ``per_tensor``."""
    # the real sizes follow the starts and the chunk table in meta (see foreach_plan.foreach_meta)
    sizes = f"nt + 1 + ((n + {(1 << plan.chunk_shift) - 1}) >> {plan.chunk_shift})"
    return _function(plan.name, params, ["if k0 >= k1:", "    return nt"]
                     + _fold(plan, "cpu") + hoisted
                     + [f"sz0 = {sizes}", "for t in range(k0, min(k1, nt)):"]
                     + _indent(["m = ld_i64(meta, sz0 + t)"] + per_tensor) + ["return nt"])


def _foreach_vectors(plan: ForeachPlan, first, pointers, hoisted, head, params) -> str:
    """The cuda multi-tensor walk with 128-bit accesses: threads take groups of ``width``
    elements; tensors start on whole groups (``meta`` pads them), so a group lies in one tensor;
    a tensor whose operands are all 16-byte aligned (its ``meta`` flag) and a full group take
    vector accesses, everything else (misaligned tensors, a tensor's last partial group) goes
    element by element."""
    width, shift, count = plan.vector_width, plan.chunk_shift, plan.width
    r = _Renderer(dataclasses.replace(plan.tensor, vector_width=width))
    tensor = (["start = ld_i64(meta, t)", "pend = ld_i64(meta, t + 1)",
               "end = start + ld_i64(meta, sz0 + t)", "aligned = ld_i64(meta, sz0 + nt + t)"]
              + [f"p{k} = ld_u64(ptrs, t * {count} + {c})" for c, k in first.items()]
              + pointers)
    head = head + ["sz0 = cb + chunks"]
    # every operand a 4-lane dtype (plan.foreach_plan): one access each (per == 1)
    vector = ["j = (g - start) // " + str(width)] + r.vector_block(lambda k, per, m: "j", None)
    scalar = ["q = g", f"while q < g + {width} and q < end:"] + _indent(
        ["i = q - start"] + r.scalar_element(lambda k: "i") + ["q += 1"])
    group = (["if g >= pend:"] + _indent(["while ld_i64(meta, t + 1) <= g:", "    t += 1"]
                                         + tensor)
             + [f"if aligned != 0 and g + {width} <= end:"] + _indent(vector)
             + ["else:"] + _indent(scalar) + [f"g += bdim * {width}"])
    chunk = ([f"g = (c << {shift}) + tx * {width}", f"last = min((c + 1) << {shift}, n)",
              "t = ld_i64(meta, cb + c)"] + tensor + ["while g < last:"] + _indent(group)
             + ["c += cstep"])
    return _function(plan.name, params,
                     head + tensor + hoisted + ["while c < chunks:"] + _indent(chunk))


def _start(name: str, code: str, acc: str) -> str:
    value = identity(name, BY_CODE[code])
    if isinstance(value, float):
        text = _INF if value > 0 else f"-{_INF}"
    else:
        text = str(int(value))
    return f"{acc} = cv_{code}({text})"


def _merge(name: str, acc: str, w: str) -> list[str]:
    """The statements folding ``w`` (a partial, or another thread's accumulator) into ``acc``."""
    return [s.format(w=w, iw="").replace("acc", acc) for s in REDUCTIONS[name].merge]


def _tree(name: str, acc: str, slots: str, w: str, pow2: bool) -> list[str]:
    """The block's accumulators ``acc`` combined through shared ``slots``: pairs ``tx`` and
    ``tx + h`` for halving ``h``, a fixed order. ``pow2``: the block size is a power of two;
    else ``h`` starts at the power of two below it and the pairs stop at the block's end."""
    start = ["h = bdim // 2"] if pow2 else ["h = 1", "while h < bdim:", "    h = h * 2",
                                           "h = h // 2"]
    pair = "tx < h" if pow2 else "tx < h and tx + h < bdim"
    return ([f"{slots}[tx] = {acc}", "cuda.syncthreads()"] + start
            + ["while h > 0:", f"    if {pair}:"]
            + _indent([f"{w} = {slots}[tx + h]"] + _merge(name, acc, w)
                      + [f"{slots}[tx] = {acc}"], 2)
            + ["    cuda.syncthreads()", "    h = h // 2"])


def _fold(plan: ForeachPlan, target: str) -> list[str]:
    """The foreach kernel's prologue where it reduces across its list: per reduction ``j``
    (global operand ``k``) the ``np_`` partials at ``q<j>`` folded in a fixed order into
    ``gv<k>`` (cpu: in order; cuda: the block's threads interleaved, then a tree)."""
    lines = []
    if getattr(plan, "per_tensor", False):    # folded per tensor by a launch of its own
        return lines
    for j, (k, name, code) in enumerate(plan.globals):
        acc, want = f"fold{j}", plan.tensor.operands[k].code
        if target == "cpu":
            lines += [_start(name, code, acc), "for kq in range(np_):"]
            lines += _indent([f"fw{j} = ld_{code}(q{j}, kq)"] + _merge(name, acc, f"fw{j}"))
            lines.append(f"gv{k} = cv_{want}({acc})")
            continue
        lines += [f"fsh{j} = cuda.shared.array({_FOLD_SLOTS}, sh_{code})",
                  _start(name, code, acc), "kq = tx", "while kq < np_:"]
        lines += _indent([f"fw{j} = ld_{code}(q{j}, kq)"] + _merge(name, acc, f"fw{j}")
                         + ["kq += bdim"])
        lines += _tree(name, acc, f"fsh{j}", f"fw{j}", pow2=False)
        lines.append(f"gv{k} = cv_{want}(fsh{j}[0])")
    return lines


def render_across_kernel(plan: AcrossPlan, target: str) -> str:
    """The source of the first launch of a foreach reducing across its list (see
    :class:`~.foreach_plan.AcrossPlan` for its parameters). cuda: a block per partial
    (grid-stride), its
    threads at elements ``lo + tx, lo + tx + bdim, …`` of the partial's range, each stepping
    along the tensors' starts as it crosses them (padding between tensors skipped), then the
    tree, and thread 0 stores. cpu: a partial per chunk, its range walked tensor by tensor."""
    if target not in ("cuda", "cpu"):
        raise ValueError(f"unknown target {target!r}")
    return _AcrossRenderer(plan, target).render()


class _AcrossRenderer:
    """The pieces of an :class:`~.foreach_plan.AcrossPlan` kernel: per reduction ``j`` its
    accumulator
    ``acc<j>`` (of :func:`accumulator_code`'s type), its element ``u<j>`` and its partials
    ``q<j>``."""

    def __init__(self, plan: AcrossPlan, target: str):
        self.plan, self.target = plan, target
        r = self.r = _Renderer(plan.tensor)
        self.first: dict[int, int] = {}
        for k, c in enumerate(plan.columns):
            self.first.setdefault(c, k)
        self.pointers = [f"p{k} = p{self.first[c]}" for k, c in enumerate(plan.columns)
                         if self.first[c] != k]
        self.accs = [(f"acc{j}", accumulator_code(name, r.codes[var], target))
                     for j, (name, var, _) in enumerate(plan.reductions)]
        pairs = list(zip(plan.reductions, self.accs))
        self.starts = [_start(name, code, acc) for (name, _, _), (acc, code) in pairs]
        self.element = r.lines_at(2, "", lambda ins, ln: f"ld_{r.access(ins.arg)}(p{ins.arg}, i)")
        for j, ((name, var, _), (acc, code)) in enumerate(pairs):
            self.element.append(f"u{j} = {r.convert(var, code, '')}")
            self.element += [s.format(v=f"u{j}").replace("acc", acc)
                             for s in REDUCTIONS[name].combine]
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

    def render(self) -> str:
        plan, hoisted = self.plan, self.r._constant_loads(0, lambda k: "0")
        per = ["lo = op * gc", "hi = min(lo + gc, n)"] + self.starts
        if self.target == "cpu":
            tensor = (["start = ld_i64(meta, t)", "end = start + ld_i64(meta, sz0 + t)"]
                      + [f"p{k} = ld_u64(ptrs, t * {plan.table} + {c})"
                         for c, k in self.first.items()] + self.pointers)
            walk = self.find + ["while g < hi:"] + _indent(
                tensor + ["for i in range(g - start, min(end, hi) - start):"]
                + _indent(self.element) + ["g = ld_i64(meta, t + 1)", "t += 1"])
            per += ["g = lo", "if g < hi:"] + _indent(walk) + self.stores
            params = ["k0", "k1", "n", "meta", "ptrs", "nt"]
            return _function(plan.name, params + self.tail,
                             ["if k0 >= k1:", "    return np_"] + self.head + hoisted
                             + ["for op in range(k0, min(k1, np_)):"] + _indent(per)
                             + ["return np_"])
        tensor = (["start = ld_i64(meta, t)", "pend = ld_i64(meta, t + 1)",
                   "end = start + ld_i64(meta, sz0 + t)"]
                  + [f"p{k} = ld_u64(ptrs, t * {plan.table} + {c})"
                     for c, k in self.first.items()] + self.pointers)
        per += (["g = lo + tx", "if g < hi:"] + _indent(self.find + tensor)
                + ["while g < hi:"]
                + _indent(["if g >= pend:"] + _indent(["while ld_i64(meta, t + 1) <= g:",
                                                       "    t += 1"] + tensor)
                          + ["if g < end:"] + _indent(["i = g - start"] + self.element)
                          + ["g += bdim"]))
        for j, ((name, _, _), (acc, _)) in enumerate(zip(plan.reductions, self.accs)):
            per += _tree(name, acc, f"sacc{j}", f"tw{j}", pow2=True)
        per += ["if tx == 0:"] + _indent(self.stores) + ["cuda.syncthreads()", "op += ostep"]
        head = [f"sacc{j} = cuda.shared.array({BLOCK_THREADS}, sh_{code})"
                for j, (_, code) in enumerate(self.accs)]
        head += ["tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
                 "op = cv_i64(cuda.blockIdx.x)", "ostep = cv_i64(cuda.gridDim.x)",
                 "t = cv_i64(0)"] + self.head
        # the first tensor's values type every variable before the loop assigns them
        return _function(plan.name, ["n", "meta", "ptrs", "nt"] + self.tail,
                         head + tensor + hoisted + ["while op < np_:"] + _indent(per))
