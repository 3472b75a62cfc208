"""KernelPlan → Python source of the kernel: a ``@cuda.jit`` kernel, or the cpu variant.

Pure text; imports no numba. The body is rendered once from the plan's instructions and wrapped
either in a grid-stride loop (cuda and sim) or in a ``prange`` loop (cpu). Generated code calls
names each backend supplies: ``ld_<t>``/``st_<t>`` for memory, ``cv_<t>`` for NumPy-style casts,
``math``, and the helpers of :mod:`devicelib`; see ``fusedarrays/cuda/intrinsics.py`` and
``fusedarrays/cpu/backend.py``. Snapshot tests pin the output.
"""

from __future__ import annotations

from . import ops
from .dtypes import BY_CODE, COMPUTE_CODE
from .plan import Instr, KernelPlan


def render_kernel(plan: KernelPlan, target: str) -> str:
    """The kernel's source for ``target`` ``"cuda"`` (also run by the simulator) or ``"cpu"``."""
    params = ", ".join(_param_names(plan))
    codes = {i.var: i.code for i in plan.body if i.var is not None}
    body = _index_lines(plan) + [_line(plan, i, codes) for i in plan.body]
    if target == "cuda":
        head = ["i = cv_i64(cuda.grid(1))", "step = cv_i64(cuda.gridsize(1))", "while i < n:"]
        lines = head + ["    " + b for b in body] + ["    i += step"]
    elif target == "cpu":
        lines = ["for i in prange(n):"] + ["    " + b for b in body]
    else:
        raise ValueError(f"unknown target {target!r}")
    return f"def {plan.name}({params}):\n" + "".join(f"    {ln}\n" for ln in lines)


def _param_names(plan: KernelPlan) -> list[str]:
    names = ["n"] + [f"p{k}" for k in range(len(plan.operands))]
    if plan.strided:
        names += [f"d{j}" for j in range(len(plan.dims))]
        for k, o in enumerate(plan.operands):
            if o.layout == "S":
                names += [f"b{k}"] + [f"s{k}_{j}" for j in range(len(plan.dims))]
    names += [f"a{m}" for m in range(len(plan.scalars))]
    return names


def _index_lines(plan: KernelPlan) -> list[str]:
    """Decompose the flat index into coordinates once; each strided operand dots them."""
    if not plan.strided:
        return []
    rank = len(plan.dims)
    if rank == 1:
        lines = ["c0 = i"]
    else:
        lines = ["r = i"]
        for j in range(rank - 1, 0, -1):
            lines += [f"c{j} = r % d{j}", f"r = r // d{j}"]
        lines.append("c0 = r")
    for k, o in enumerate(plan.operands):
        if o.layout == "S":
            terms = " + ".join(f"c{j} * s{k}_{j}" for j in range(rank))
            lines.append(f"o{k} = b{k} + {terms}")
    return lines


def _index(plan: KernelPlan, k: int) -> str:
    return f"o{k}" if plan.operands[k].layout == "S" else "i"


def _convert(var: int, have: str, want: str) -> str:
    return f"v{var}" if have == want else f"cv_{want}(v{var})"


def _line(plan: KernelPlan, ins: Instr, codes: dict[int, str]) -> str:
    if ins.kind == "load":
        return f"v{ins.var} = ld_{ins.code}(p{ins.arg}, {_index(plan, ins.arg)})"
    if ins.kind == "scalar":
        value = f"a{ins.arg}"
        return f"v{ins.var} = {'cv_b1(' + value + ')' if ins.code == 'b1' else value}"
    if ins.kind == "cast":
        return f"v{ins.var} = cv_{ins.code}(v{ins.inputs[0]})"
    if ins.kind == "store":
        (src,) = ins.inputs
        value = _convert(src, codes[src], ins.code)
        return f"st_{ins.code}(p{ins.arg}, {_index(plan, ins.arg)}, {value})"
    name, loop = ins.arg
    row = ops.OPS[name]
    loop_dtypes = tuple(BY_CODE[c] for c in loop)
    template = row.template(ops.template_kind(row, loop_dtypes))
    args = [_convert(v, codes[v], c) for v, c in zip(ins.inputs, loop)]
    expr = template.format(*args, t=COMPUTE_CODE[loop[0]] if row.rule == "ufunc" else
                           COMPUTE_CODE[loop[-1]], bits=loop_dtypes[0].itemsize * 8)
    return f"v{ins.var} = cv_{ins.code}({expr})"
