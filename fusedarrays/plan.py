"""Pending outputs → :class:`KernelPlan`: the data the code generator and the launcher need.

Pure. Given the graph nodes to compute and the views to store them in, the planner walks the graph
once (inputs first), gives every distinct leaf view an operand slot and every scalar a parameter
slot, broadcasts each operand's strides into the kernel's iteration space, collapses dimensions,
classifies layouts, and writes the instruction list in a canonical numbering. The canonical text,
with dtypes and layout classes but no sizes, no scalar values and no buffer identities, is what the
structure key hashes: a new learning rate or a new length never recompiles.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from . import config, graph, keys, layout
from .dtypes import CODES
from .errors import ShapeError

CODEGEN_VERSION = "1"


@dataclass(frozen=True)
class Operand:
    buffer: object          # the runtime's buffer (opaque here)
    dtype: np.dtype
    strides: tuple          # element strides over the collapsed iteration shape
    offset: int             # element offset of the view's first element
    layout: str             # "C" contiguous or "S" strided
    output: bool

    @property
    def code(self) -> str:
        return CODES[self.dtype]


@dataclass(frozen=True)
class Instr:
    """One line of the kernel body: ``var = kind(args)`` or a store (var is None)."""

    var: int | None
    kind: str               # "load" | "scalar" | "cast" | "op" | "store"
    arg: object             # operand index, scalar index, op name or (op name, loop codes)
    inputs: tuple[int, ...]
    code: str               # result dtype code (for a store, the stored operand's)


@dataclass(frozen=True)
class KernelPlan:
    shape: tuple            # iteration shape, as the user sees it
    dims: tuple             # collapsed iteration shape
    operands: tuple[Operand, ...]
    scalars: tuple[tuple[object, np.dtype], ...]
    body: tuple[Instr, ...]
    key_parts: tuple[tuple[str, str], ...]
    key: str
    vector_width: int = 1
    index_width: int = 64

    @property
    def size(self) -> int:
        return layout.size_of(self.shape)

    @property
    def strided(self) -> bool:
        return any(o.layout == "S" for o in self.operands)

    @property
    def name(self) -> str:
        return "fa_" + self.key[:16]

    def param_types(self) -> tuple[str, ...]:
        """Kernel parameter types, in order: n, one pointer per operand, sizes, strides, scalars."""
        types = ["i64"] + ["ptr"] * len(self.operands)
        if self.strided:
            types += ["i64"] * len(self.dims)
            for o in self.operands:
                if o.layout == "S":
                    types += ["i64"] * (1 + len(self.dims))
        types += [CODES[dt] for _, dt in self.scalars]
        return tuple(types)

    def int_args(self) -> list[int]:
        """The integer parameters after the pointers: sizes, then each strided operand's base
        offset and strides."""
        if not self.strided:
            return []
        ints = list(self.dims)
        for o in self.operands:
            if o.layout == "S":
                ints.append(o.offset)
                ints.extend(o.strides)
        return ints


def plan_kernel(outputs: list[tuple[graph.Node, tuple]]) -> KernelPlan:
    """Plan one kernel computing each ``node`` into its ``(buffer, dtype, shape, strides,
    offset)``."""
    shape = outputs[0][1][2]
    for node, (_, _, out_shape, _, _) in outputs:
        if tuple(out_shape) != tuple(shape):
            raise ShapeError(f"one kernel computes one shape; got {out_shape} and {shape}")
        layout.broadcast_strides(node.shape, (0,) * node.ndim, shape)
    roots = [_resolved(node) for node, _ in outputs]
    order = graph.walk(roots)
    views, scalars, body, var_of = [], [], [], {}
    view_index: dict[tuple, int] = {}
    for n in order:
        n = _resolved(n)
        if n.key in var_of:
            continue
        var = len(var_of)
        if n.kind == "leaf":
            buffer, lshape, lstrides, offset = graph.leaf_view(n)
            full = layout.broadcast_strides(lshape, lstrides, shape)
            ident = (buffer.uid, n.dtype.str, full, offset)
            if ident not in view_index:
                view_index[ident] = len(views)
                views.append((buffer, n.dtype, full, offset, False))
            body.append(Instr(var, "load", view_index[ident], (), CODES[n.dtype]))
        elif n.kind == "scalar":
            scalars.append((n.attrs[1], n.dtype))
            body.append(Instr(var, "scalar", len(scalars) - 1, (), CODES[n.dtype]))
        elif n.kind == "cast":
            body.append(Instr(var, "cast", None, (var_of[_resolved(n.inputs[0]).key],),
                              CODES[n.dtype]))
        else:
            name, loop = n.attrs
            args = tuple(var_of[_resolved(i).key] for i in n.inputs)
            body.append(Instr(var, "op", (name, tuple(CODES[d] for d in loop)), args,
                              CODES[n.dtype]))
        var_of[n.key] = var
    for root, (buffer, dtype, _, strides, offset) in zip(roots, (o[1] for o in outputs)):
        views.append((buffer, np.dtype(dtype), tuple(strides), offset, True))
        body.append(Instr(None, "store", len(views) - 1, (var_of[root.key],),
                          CODES[np.dtype(dtype)]))
    return _finish(tuple(shape), views, scalars, body)


def _resolved(node: graph.Node) -> graph.Node:
    return node.realized if node.realized is not None else node


def _finish(shape, views, scalars, body) -> KernelPlan:
    dims, stride_sets = layout.collapse(shape, [v[2] for v in views])
    operands = tuple(
        Operand(buffer, dtype, strides, offset, layout.classify(dims, strides), output)
        for (buffer, dtype, _, offset, output), strides in zip(views, stride_sets))
    canonical = "\n".join(_canonical(i) for i in body)
    parts = (
        ("graph", hashlib.sha256(canonical.encode()).hexdigest()[:32]),
        ("operands", " ".join(f"{'out' if o.output else 'in'}:{o.code}:{o.layout}"
                              for o in operands)),
        ("scalars", " ".join(CODES[dt] for _, dt in scalars) or "-"),
        ("rank", str(len(dims))),
        ("vector_width", "1"),
        ("index_width", "64"),
        ("config", repr(config.codegen_settings())),
        ("codegen", CODEGEN_VERSION),
    )
    parts = keys.structure_parts(parts)
    key = keys.digest(parts)
    return KernelPlan(shape, dims, operands, tuple(scalars), tuple(body), parts, key)


def _canonical(i: Instr) -> str:
    return f"{i.var}={i.kind}:{i.arg}:{','.join(map(str, i.inputs))}:{i.code}"
