"""Multi-tensor plans → kernel source: ``f.foreach``'s launch over a whole list.

Pure text, like :mod:`.codegen`, whose renderer writes the per-element lines: ``i`` is the
element within its tensor, so they are the per-tensor plan's own. The kernel walks the
concatenation of the tensors through tables (``meta``, the pointer table: see
:class:`~.plan.ForeachPlan`).
"""

from __future__ import annotations

import dataclasses

from .codegen import _function, _indent, _Renderer
from .plan import ForeachPlan


def render_foreach_kernel(plan: ForeachPlan, target: str) -> str:
    """The source of a multi-tensor kernel (see :class:`~.plan.ForeachPlan` for its parameters).

    cuda (and sim): blocks walk the concatenated elements in chunks of ``2**chunk_shift``; a
    block finds its chunk's first tensor in ``meta`` and loads that tensor's operand addresses
    from ``ptrs`` once (the same for every thread), then its threads walk the chunk; only where a
    chunk crosses into a later tensor does a thread step along the starts and reload. ``i`` is
    the element within the tensor, so the per-element lines are the tensor plan's own. cpu: a
    loop over the tensors (the chunks the backend spreads over threads), operands from lists of
    arrays.
    """
    r = _Renderer(plan.tensor)
    count = max(plan.columns) + 1
    first: dict[int, int] = {}
    for k, c in enumerate(plan.columns):
        first.setdefault(c, k)
    # operand k's pointer: its column's, loaded once (a load and a store of one array share it)
    pointers = [f"p{k} = p{first[c]}" for k, c in enumerate(plan.columns) if first[c] != k]
    hoisted = r._constant_loads(0, lambda k: "0")   # scalar-only instructions
    element = r.scalar_element(lambda k: "i")
    scalars = [f"a{m}" for m in range(len(plan.tensor.scalars))]
    if target == "cpu":   # tensors are the chunks (see _Renderer.cpu): k0 == k1 asks for nt
        params = ["k0", "k1", "n", "meta", "nt"] + [f"l{c}" for c in range(count)] + scalars
        # the real sizes follow the starts and the chunk table in meta (see plan.foreach_meta)
        sizes = f"nt + 1 + ((n + {(1 << plan.chunk_shift) - 1}) >> {plan.chunk_shift})"
        per_tensor = (["m = ld_i64(meta, sz0 + t)"]
                      + [f"p{k} = l{c}[t]" for c, k in first.items()] + pointers
                      + ["for i in range(m):"] + _indent(element))
        return _function(plan.name, params, ["if k0 >= k1:", "    return nt"] + hoisted
                         + [f"sz0 = {sizes}", "for t in range(k0, min(k1, nt)):"]
                         + _indent(per_tensor) + ["return nt"])
    if target != "cuda":
        raise ValueError(f"unknown target {target!r}")
    shift = plan.chunk_shift
    if plan.vector_width > 1:
        return _foreach_vectors(plan, first, pointers, hoisted, scalars, count)
    tensor = (["start = ld_i64(meta, t)", "end = ld_i64(meta, t + 1)"]
              + [f"p{k} = ld_u64(ptrs, t * {count} + {c})" for c, k in first.items()]
              + pointers)
    head = ["cb = nt + 1", f"chunks = (n + {(1 << shift) - 1}) >> {shift}",
            "c = cv_i64(cuda.blockIdx.x)", "cstep = cv_i64(cuda.gridDim.x)",
            "tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)", "t = cv_i64(0)"]
    chunk = ([f"g = (c << {shift}) + tx", f"last = min((c + 1) << {shift}, n)",
              "t = ld_i64(meta, cb + c)"] + tensor
             + ["while g < last:"]
             + _indent(["if g >= end:"] + _indent(["while ld_i64(meta, t + 1) <= g:",
                                                    "    t += 1"] + tensor)
                       + ["i = g - start"] + element + ["g += bdim"])
             + ["c += cstep"])
    # the first tensor's values type every variable before the loop assigns them
    return _function(plan.name, ["n", "meta", "ptrs", "nt"] + scalars,
                     head + tensor + hoisted + ["while c < chunks:"] + _indent(chunk))


def _foreach_vectors(plan: ForeachPlan, first, pointers, hoisted, scalars, count) -> str:
    """The cuda multi-tensor walk with 128-bit accesses: threads take groups of ``width``
    elements; tensors start on whole groups (``meta`` pads them), so a group lies in one tensor;
    a tensor whose operands are all 16-byte aligned (its ``meta`` flag) and a full group take
    vector accesses, everything else (misaligned tensors, a tensor's last partial group) goes
    element by element."""
    width, shift = plan.vector_width, plan.chunk_shift
    r = _Renderer(dataclasses.replace(plan.tensor, vector_width=width))
    tensor = (["start = ld_i64(meta, t)", "pend = ld_i64(meta, t + 1)",
               "end = start + ld_i64(meta, sz0 + t)", "aligned = ld_i64(meta, sz0 + nt + t)"]
              + [f"p{k} = ld_u64(ptrs, t * {count} + {c})" for c, k in first.items()]
              + pointers)
    head = ["cb = nt + 1", f"chunks = (n + {(1 << shift) - 1}) >> {shift}", "sz0 = cb + chunks",
            "c = cv_i64(cuda.blockIdx.x)", "cstep = cv_i64(cuda.gridDim.x)",
            "tx = cv_i64(cuda.threadIdx.x)", "bdim = cv_i64(cuda.blockDim.x)", "t = cv_i64(0)"]
    vector = ["j = (g - start) // " + str(width)] + r.vector_block(lambda k: "j", None)
    scalar = ["q = g", f"while q < g + {width} and q < end:"] + _indent(
        ["i = q - start"] + r.scalar_element(lambda k: "i") + ["q += 1"])
    group = (["if g >= pend:"] + _indent(["while ld_i64(meta, t + 1) <= g:", "    t += 1"]
                                         + tensor)
             + [f"if aligned != 0 and g + {width} <= end:"] + _indent(vector)
             + ["else:"] + _indent(scalar) + [f"g += bdim * {width}"])
    chunk = ([f"g = (c << {shift}) + tx * {width}", f"last = min((c + 1) << {shift}, n)",
              "t = ld_i64(meta, cb + c)"] + tensor + ["while g < last:"] + _indent(group)
             + ["c += cstep"])
    return _function(plan.name, ["n", "meta", "ptrs", "nt"] + scalars,
                     head + tensor + hoisted + ["while c < chunks:"] + _indent(chunk))
