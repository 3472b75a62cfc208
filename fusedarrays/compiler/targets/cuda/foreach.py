"""The cuda multi-tensor kernels: ``foreach`` over a whole list, the across launch before it
(``fa.global_norm``), and the per-tensor fold (``fa.tensor_norm``, ``compiler/tensor_fold.py``).

Pure text over :mod:`...foreach_codegen`'s pieces. Blocks walk the concatenation of the tensors
in chunks of ``2**chunk_shift`` (``meta``: each tensor's start, then each chunk's first tensor);
a block finds its chunk's first tensor in ``meta`` and loads that tensor's operand addresses
from ``ptrs`` once (the same for every thread), then its threads walk the chunk; only where a
chunk crosses into a later tensor does a thread step along the starts and reload. A reduction
across the list: the across kernel's block per partial folds its range (threads interleaved,
then a tree in shared memory), and every block of the foreach kernel folds the partials the
same way in its prologue.
"""

from __future__ import annotations

import dataclasses

from ....ir.reductions import BLOCK_THREADS
from ...codegen import _function, _indent, _Renderer
from ...foreach_codegen import AcrossRenderer, ForeachRenderer, merge, start
from ...foreach_plan import AcrossPlan, ForeachPlan
from ...tensor_fold import TensorFoldPlan, fold_lines, fold_params
from .reduce import WIDE_SUMS

_FOLD_SLOTS = 1024        # the largest CUDA block: the prologue's tree has a slot per thread


def render_foreach(plan: ForeachPlan) -> str:
    """Threads of a block at elements ``tx, tx + bdim, …`` of its chunk, ``i`` the element
    within its tensor; with a vector width, :func:`_foreach_vectors`."""
    f = ForeachRenderer(plan)
    shift = plan.chunk_shift
    head = ["cb = nt + 1", f"chunks = (n + {(1 << shift) - 1}) >> {shift}",
            "c = cv_i64(cuda.blockIdx.x)", "cstep = cv_i64(cuda.gridDim.x)",
            "tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)", "t = cv_i64(0)"]
    head += _fold(f)
    params = ["n", "meta", "ptrs", "nt"] + f.tail
    if plan.vector_width > 1:
        return _foreach_vectors(f, head, params)
    tensor = (["start = ld_i64(meta, t)", "end = ld_i64(meta, t + 1)"] + f.loads()
              + f.draw_offset("(cb + chunks)"))
    chunk = ([f"g = (c << {shift}) + tx", f"last = min((c + 1) << {shift}, n)",
              "t = ld_i64(meta, cb + c)"] + tensor
             + ["while g < last:"]
             + _indent(["if g >= end:"] + _indent(["while ld_i64(meta, t + 1) <= g:",
                                                    "    t += 1"] + tensor)
                       + ["i = g - start"] + f.element + ["g += bdim"])
             + ["c += cstep"])
    # the first tensor's values type every variable before the loop assigns them
    return _function(plan.name, params,
                     head + tensor + f.hoisted + ["while c < chunks:"] + _indent(chunk))


def _foreach_vectors(f: ForeachRenderer, head: list, params: list) -> str:
    """The walk with 128-bit accesses: threads take groups of ``width`` elements; tensors start
    on whole groups (``meta`` pads them), so a group lies in one tensor; a tensor whose operands
    are all 16-byte aligned (its ``meta`` flag) and a full group take vector accesses,
    everything else (misaligned tensors, a tensor's last partial group) goes element by
    element."""
    plan = f.plan
    width, shift = plan.vector_width, plan.chunk_shift
    r = _Renderer(dataclasses.replace(plan.tensor, vector_width=width))
    if f.draws:   # lane L of the group at g: element g - start + L of its tensor
        r.pos = lambda lane: f"(doff + g - start + {lane[1:]})" if lane else "(doff + i)"
    tensor = (["start = ld_i64(meta, t)", "pend = ld_i64(meta, t + 1)",
               "end = start + ld_i64(meta, sz0 + t)", "aligned = ld_i64(meta, sz0 + nt + t)"]
              + f.loads() + f.draw_offset("sz0"))
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
                     head + tensor + f.hoisted + ["while c < chunks:"] + _indent(chunk))


def _tree(name: str, acc: str, slots: str, w: str, pow2: bool) -> list[str]:
    """The block's accumulators ``acc`` combined through shared ``slots``: pairs ``tx`` and
    ``tx + h`` for halving ``h``, a fixed order. ``pow2``: the block size is a power of two;
    else ``h`` starts at the power of two below it and the pairs stop at the block's end."""
    begin = ["h = bdim // 2"] if pow2 else ["h = 1", "while h < bdim:", "    h = h * 2",
                                           "h = h // 2"]
    pair = "tx < h" if pow2 else "tx < h and tx + h < bdim"
    return ([f"{slots}[tx] = {acc}", "cuda.syncthreads()"] + begin
            + ["while h > 0:", f"    if {pair}:"]
            + _indent([f"{w} = {slots}[tx + h]"] + merge(name, acc, w)
                      + [f"{slots}[tx] = {acc}"], 2)
            + ["    cuda.syncthreads()", "    h = h // 2"])


def _fold(f: ForeachRenderer) -> list[str]:
    """The prologue: per reduction ``j`` across the list (global operand ``k``) the ``np_``
    partials at ``q<j>``, the block's threads interleaved, then a tree, into ``gv<k>``."""
    lines = []
    for j, k, name, code in f.folds():
        acc, want = f"fold{j}", f.plan.tensor.operands[k].code
        lines += [f"fsh{j} = cuda.shared.array({_FOLD_SLOTS}, sh_{code})",
                  start(name, code, acc), "kq = tx", "while kq < np_:"]
        lines += _indent([f"fw{j} = ld_{code}(q{j}, kq)"] + merge(name, acc, f"fw{j}")
                         + ["kq += bdim"])
        lines += _tree(name, acc, f"fsh{j}", f"fw{j}", pow2=False)
        lines.append(f"gv{k} = cv_{want}(fsh{j}[0])")
    return lines


def render_across(plan: AcrossPlan) -> str:
    """A block per partial (grid-stride), its threads at elements ``lo + tx, lo + tx + bdim,
    …`` of the partial's range, each stepping along the tensors' starts as it crosses them
    (padding between tensors skipped), then the tree, and thread 0 stores."""
    a = AcrossRenderer(plan, wide_sums=WIDE_SUMS)
    per = ["lo = op * gc", "hi = min(lo + gc, n)"] + a.starts
    tensor = (["start = ld_i64(meta, t)", "pend = ld_i64(meta, t + 1)",
               "end = start + ld_i64(meta, sz0 + t)"] + a.loads())
    per += (["g = lo + tx", "if g < hi:"] + _indent(a.find + tensor)
            + ["while g < hi:"]
            + _indent(["if g >= pend:"] + _indent(["while ld_i64(meta, t + 1) <= g:",
                                                   "    t += 1"] + tensor)
                      + ["if g < end:"] + _indent(["i = g - start"] + a.element)
                      + ["g += bdim"]))
    for j, ((name, _, _), (acc, _)) in enumerate(zip(plan.reductions, a.accs)):
        per += _tree(name, acc, f"sacc{j}", f"tw{j}", pow2=True)
    per += ["if tx == 0:"] + _indent(a.stores) + ["cuda.syncthreads()", "op += ostep"]
    head = [f"sacc{j} = cuda.shared.array({BLOCK_THREADS}, sh_{code})"
            for j, (_, code) in enumerate(a.accs)]
    head += ["tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)",
             "op = cv_i64(cuda.blockIdx.x)", "ostep = cv_i64(cuda.gridDim.x)",
             "t = cv_i64(0)"] + a.head
    # the first tensor's values type every variable before the loop assigns them
    return _function(plan.name, ["n", "meta", "ptrs", "nt"] + a.tail,
                     head + tensor + a.hoisted + ["while op < np_:"] + _indent(per))


def render_tensor_fold(plan: TensorFoldPlan) -> str:
    """A grid-stride loop of threads over the tensors."""
    return _function(plan.name, fold_params(plan),
                     ["t = cv_i64(cuda.blockIdx.x) * cv_i64(cuda.blockDim.x) "
                      "+ cv_i64(cuda.threadIdx.x)",
                      "step = cv_i64(cuda.gridDim.x) * cv_i64(cuda.blockDim.x)",
                      "while t < n:"] + _indent(fold_lines(plan) + ["t += step"]))
