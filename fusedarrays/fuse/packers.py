"""A traced signature's argument recipe: generated code that packs a cached call's arguments.

Where it sits: between :mod:`fuse` (and :mod:`foreach`), which trace and plan once per signature,
and the backend's launch. For each planned launch, :func:`make_packer` writes a small Python
function that maps the call's values to the kernel arguments after ``n``: each operand's pointer
(from an argument's, an output's or a temporary's storage, with the offset
``realize.launch_plan`` would fold in), the plan's integer parameters, and each scalar parameter
computed on the host from the traced scalars (``1 - beta1 ** step``) and converted to its kernel
type. A cached call runs it and launches: no tracing, no planning, no interpretation.
"""

from __future__ import annotations

import functools

import numpy as np

from ..runtime import realize
from .trace import TracedScalar


def render_scalar(value, names: dict) -> str:
    """Python source computing ``value`` from ``A`` (the call's values by position). Constants
    and functions enter ``names`` (the generated code's globals) by name, never by repr."""
    if isinstance(value, TracedScalar):
        if value.expr[0] == "arg":
            return f"A[{value.expr[1]}]"
        _, fn, operands = value.expr
        args = ", ".join(render_scalar(o, names) for o in operands)
        return f"{_named(names, fn)}({args})"
    return _named(names, value)


def _named(names: dict, value) -> str:
    name = f"k{len(names)}"
    names[name] = value
    return name


def _converter(dtype: np.dtype):
    """Host value → kernel parameter, as :func:`realize.scalar_arg` converts it."""
    if dtype == np.float16 or dtype == np.bool_:
        return functools.partial(realize.scalar_arg, dtype=dtype)
    return dtype.type


class _Packer:
    """Straight-line source of a generated ``pack`` function.

    Generated code rather than a loop over a recipe: a cached call's host time is the point.
    Each converted argument is memoised on the identity of what it came from (``M[slot]`` holds
    the pair, replaced in one store, so concurrent calls never see a torn pair): an optimizer loop
    passes the same arrays and mostly the same scalar objects at every step. Constants are
    converted once; new outputs and temporaries are new memory at every call, so their pointers
    are not memoised (a memo would only keep the last call's memory alive).
    """

    def __init__(self):
        self.names: dict = {"M": []}
        self.lines: list[str] = []
        self.parts: list[str] = []

    def memo(self, source: str, convert: str) -> None:
        slot = len(self.names["M"])
        self.names["M"].append((None, None))
        self.lines += [f"s = {source}", f"m{slot} = M[{slot}]", f"if m{slot}[0] is not s:",
                       f"    m{slot} = M[{slot}] = (s, {convert})"]
        self.parts.append(f"m{slot}[1]")

    def scalars(self, plan) -> None:
        for value, dtype in plan.scalars:
            if not isinstance(value, TracedScalar):   # a constant: converted once, here
                self.parts.append(_named(self.names, _converter(dtype)(value)))
                continue
            convert = render_scalar(_converter(dtype), self.names)
            if value.expr[0] == "arg":
                self.memo(f"A[{value.expr[1]}]", f"{convert}(s)")
            else:   # host arithmetic on the arguments
                self.parts.append(f"{convert}({render_scalar(value, self.names)})")

    def function(self, params: str, what: str):
        body = self.lines + ["return [" + ", ".join(self.parts) + "]"]
        source = f"def pack({params}):\n" + "".join(f"    {ln}\n" for ln in body)
        exec(compile(source, f"<fusedarrays {what}>", "exec"), self.names)
        return self.names["pack"]


def make_packer(plan, sources: tuple, roots: dict, backend):
    """A generated ``pack(A, O, T)`` → the launch arguments after ``n``: each operand's pointer
    from argument, output or temporary storage (as ``realize.launch_plan`` passes it), the plan's
    integer parameters, and each scalar computed from the call's values ``A``."""
    packer = _Packer()
    names = packer.names
    names["oparg"] = backend.operand_arg
    for o, (kind, k) in zip(plan.operands, sources):
        dtype = render_scalar(o.dtype, names)
        offset = o.offset if o.folded else 0
        if kind in ("out", "tmp"):   # new memory at every call: nothing to memoise, nor to keep
            packer.parts.append(f"oparg({'O' if kind == 'out' else 'T'}[{k}].storage, {dtype}, "
                                f"{offset})")
            continue
        if kind == "const":
            storage = render_scalar(k.storage, names)   # a captured array
        else:
            storage = f"A[{roots.get(k)}].attrs[0].storage"
        packer.memo(storage, f"oparg(s, {dtype}, {offset})")
    ints = plan.int_args()
    if ints:
        packer.parts.append("*" + render_scalar(tuple(ints), names))
    packer.scalars(plan)
    return packer.function("A, O, T", f"packer {plan.name}")


def make_scalar_packer(plan):
    """A generated ``pack(A)`` → the plan's scalar parameters computed from the values ``A``."""
    packer = _Packer()
    packer.scalars(plan)
    return packer.function("A", f"scalars {plan.name}")
