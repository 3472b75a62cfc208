"""A traced signature's argument packers: the launch records' ``pack`` for ``fa.fuse``.

Where it sits: between :mod:`function` (and :mod:`foreach`), which trace and plan once per
signature, and the launch records of ``runtime/launch.py``. For each planned launch,
:func:`make_packer` has a :class:`~..runtime.launch.Packer` write a small Python function that
maps a call's values to the kernel arguments after ``n``: each operand's pointer (from an
argument's, an output's or a temporary's storage), the plan's integer parameters, and each
scalar parameter computed on the host from the traced scalars (``1 - beta1 ** step``). A cached
call runs it and launches: no tracing, no planning, no interpretation.
"""

from __future__ import annotations

from ..runtime.launch import Packer, converter, elem_offset
from .trace import TracedScalar


def render_scalar(value, packer: Packer) -> str:
    """Python source computing ``value`` from ``A`` (the call's values by position)."""
    if isinstance(value, TracedScalar):
        if value.expr[0] == "arg":
            return f"A[{value.expr[1]}]"
        _, fn, operands = value.expr
        args = ", ".join(render_scalar(o, packer) for o in operands)
        return f"{packer.name(fn)}({args})"
    return packer.name(value)


def _scalars(packer: Packer, plan) -> None:
    for value, dtype in plan.scalars:
        if not isinstance(value, TracedScalar):   # a constant: converted once, here
            packer.constant(value, dtype)
        elif value.expr[0] == "arg":              # an argument: converted when it is new
            packer.memo(f"A[{value.expr[1]}]", f"{packer.name(converter(dtype))}(s)")
        else:                                     # host arithmetic on the arguments
            packer.scalar(render_scalar(value, packer), dtype)


def make_packer(plan, sources: tuple, roots: dict, backend):
    """A generated ``pack(A, O, T)`` → the launch arguments after ``n``: each operand's pointer
    from argument, output or temporary storage, the plan's integer parameters, and each scalar
    computed from the call's values ``A``. Argument pointers are memoised (the same arrays come
    back every step); new outputs and temporaries are new memory at every call."""
    packer = Packer(backend)
    for o, (kind, k) in zip(plan.operands, sources):
        offset = elem_offset(o)
        if kind in ("out", "tmp"):
            packer.pointer(f"{'O' if kind == 'out' else 'T'}[{k}].storage", o.dtype, offset)
        elif kind == "const":                     # a captured array
            packer.pointer(packer.name(k.storage), o.dtype, offset, memo=True)
        else:
            packer.pointer(f"A[{roots.get(k)}].attrs[0].storage", o.dtype, offset, memo=True)
    packer.counters(plan)
    packer.index_errors(plan)
    packer.ints(plan)
    _scalars(packer, plan)
    return packer.function("A, O, T", f"packer {plan.name}")


def make_scalar_packer(plan, backend):
    """A generated ``pack(A)`` → the plan's scalar parameters computed from the values ``A``."""
    packer = Packer(backend)
    _scalars(packer, plan)
    return packer.function("A", f"scalars {plan.name}")
