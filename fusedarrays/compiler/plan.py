"""Pending outputs → :class:`KernelPlan`: the data the code generator and the launcher need.

Pure. Given the graph nodes to compute and the views to store them in, the planner walks the graph
once (inputs first), gives every distinct leaf view an operand slot and every scalar a parameter
slot, broadcasts each operand's strides into the kernel's iteration space, collapses dimensions,
classifies layouts, and writes the instruction list in a canonical numbering. The canonical text,
with dtypes and layout classes but no sizes, no scalar values and no buffer identities, is what the
structure key hashes: a new learning rate or a new length never recompiles.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np

from .. import config
from ..errors import ShapeError
from ..ir import graph, layout
from ..ir.dtypes import CODES
from ..ir.params import roots_params
from . import keys
from .protocol import Plan


@dataclass(frozen=True)
class Operand:
    buffer: object          # the runtime's buffer (opaque here)
    dtype: np.dtype
    strides: tuple          # element strides over the collapsed iteration shape
    offset: int             # element offset of the view's first element
    layout: str             # class under the plan's schedule: C, B, S or T (see layout.schedule)
    output: bool
    # a complex operand read and written by parts whatever its buffer: a foreach kernel's, whose
    # addresses are many tensors' and unknown when it is planned (see :attr:`access`)
    by_parts: bool = False

    @property
    def code(self) -> str:
        return CODES[self.dtype]

    @property
    def access(self) -> str:
        """The ``ld_``/``st_`` suffix of one element's access: the dtype code, or
        ``<code>_split`` (by parts) for a complex operand whose elements are not aligned to
        their size (a complex128 view of float64 data at an odd element), where the device's
        whole-element access faults. Strides count elements: the buffer's class says it all."""
        code = CODES[self.dtype]
        if self.dtype.kind == "c" and (self.by_parts or graph.align_class(
                getattr(self.buffer, "align", 256)) < self.dtype.itemsize):
            return code + "_split"
        return code

    @property
    def folded(self) -> bool:
        """Contiguous operands get a pointer to their first element; the others a base pointer
        and an offset parameter (so that negative strides index forward on every backend)."""
        return self.layout == "C"


def kernel_param_names(plan) -> list[str]:
    """The kernel's parameter names, in :func:`operand_param_types`' order: ``n``, ``p<k>`` per
    operand, ``cnt`` where the plan counts finished parts (``plan.counters``: a split
    reduction), ``err`` where it holds a flagged gather (``plan.flags_index_errors``),
    ``plan.int_params()``, ``a<m>`` per scalar."""
    return (["n"] + [f"p{k}" for k in range(len(plan.operands))]
            + (["cnt"] if plan.counters else [])
            + (["err"] if plan.flags_index_errors else []) + plan.int_params()
            + [f"a{m}" for m in range(len(plan.scalars))])


def operand_param_types(plan) -> tuple[str, ...]:
    """Kernel parameter types, in order: n, one pointer per operand, the counters' pointer (a
    split reduction), the error word's pointer (a flagged gather), the integers of
    ``plan.int_params()``, the scalars: every plan that binds its operands one by one (an
    elementwise, reduction, row or scan kernel)."""
    pointers = (1 if plan.counters else 0) + (1 if plan.flags_index_errors else 0)
    return (("i64",) + ("ptr",) * (len(plan.operands) + pointers)
            + ("i64",) * len(plan.int_params()) + tuple(CODES[dt] for _, dt in plan.scalars))


@dataclass(frozen=True)
class Instr:
    """One line of the kernel body: ``var = kind(args)`` or a store (var is None)."""

    var: int | None
    kind: str               # "load" | "scalar" | "cast" | "op" | "random" | "gather" | "store"
    arg: object             # operand or scalar index, (op name, loop codes), (dist, mapping),
    #                         (operand, extent, stride) of a gather (inputs: the index, and
    #                         a flagged gather's site)
    inputs: tuple[int, ...]
    code: str               # result dtype code (for a store, the stored operand's)


def value_levels(plan) -> dict[int, int]:
    """Each value's level: 0 computed from scalars alone, 1 constant along a row (a broadcast
    operand of a 2-D walk), 2 per element. Codegen computes a value once outside the loops
    above its level."""
    level: dict[int, int] = {}
    for ins in plan.body:
        if ins.var is None:
            continue
        if ins.kind in ("random", "gather"):  # per element, whatever their inputs
            level[ins.var] = 2
        elif ins.kind == "scalar":
            level[ins.var] = 0
        elif ins.kind == "load":
            cls = plan.operands[ins.arg].layout
            level[ins.var] = 0 if cls == "B" and plan.schedule == "flat" else 1 if cls == "B" else 2
        else:
            level[ins.var] = max((level[v] for v in ins.inputs), default=0)
    return level


def operand_params(schedule: str, cls: str, rank: int, k: int) -> list[str]:
    """Names of operand ``k``'s integer parameters: base offset ``b``, strides ``s_j``."""
    if schedule == "flat":
        return {"C": [], "B": [f"b{k}"], "S": [f"b{k}", f"s{k}_0"]}[cls]
    if schedule in ("rows", "tiled"):
        return {"C": [f"s{k}_0"], "B": [f"b{k}", f"s{k}_0"]}.get(
            cls, [f"b{k}", f"s{k}_0", f"s{k}_1"])
    return [] if cls == "C" else [f"b{k}"] + [f"s{k}_{j}" for j in range(rank)]


@dataclass(frozen=True)
class KernelPlan(Plan):
    """An elementwise kernel: every output computed element by element over one shape."""

    kind = "kernel"
    shape: tuple            # iteration shape, as the user sees it
    dims: tuple             # collapsed iteration shape
    operands: tuple[Operand, ...]
    scalars: tuple[tuple[object, np.dtype], ...]   # (value in the planned graph, dtype)
    body: tuple[Instr, ...]
    key_parts: tuple[tuple[str, str], ...]
    key: str
    schedule: str = "flat"  # flat | rows | tiled | nd (layout.schedule)
    vector_width: int = 1
    index_width: int = 64
    sources: tuple[int, ...] = ()        # per input operand: the position of its first param
    scalar_sources: tuple[int, ...] = ()  # per scalar parameter: its param's position

    @property
    def size(self) -> int:
        return layout.size_of(self.shape)

    @property
    def name(self) -> str:
        return "fa_" + self.key[:16]

    def size_params(self) -> list[str]:
        if self.schedule == "flat":
            return []
        if self.schedule == "nd" and all(o.layout == "C" for o in self.operands):
            return []
        return [f"d{j}" for j in range(len(self.dims))]

    def int_params(self) -> list[str]:
        """Names of the integer parameters after the pointers: sizes, then per operand."""
        names = self.size_params()
        for k, o in enumerate(self.operands):
            names += operand_params(self.schedule, o.layout, len(self.dims), k)
        return names

    def param_types(self) -> tuple[str, ...]:
        return operand_param_types(self)

    def int_args(self) -> list[int]:
        """Values of :meth:`int_params`, in the same order."""
        ints = list(self.dims) if self.size_params() else []
        for k, o in enumerate(self.operands):
            for name in operand_params(self.schedule, o.layout, len(self.dims), k):
                ints.append(o.offset if name[0] == "b" else o.strides[int(name.rsplit("_")[1])])
        return ints

    def geometry(self) -> tuple:
        """What the launcher sizes the grid from: ``("flat", threads)``, ``("rows", rows,
        threads per row)`` or ``("tiled", tile rows, tile columns)``."""
        if self.schedule in ("rows",):
            return ("rows", self.dims[0], -(-self.dims[1] // self.vector_width))
        if self.schedule == "tiled":
            tile = layout.TILE
            return ("tiled", -(-self.dims[0] // tile), -(-self.dims[1] // tile))
        return ("flat", -(-self.size // self.vector_width))


def plan_kernel(outputs: list[tuple[graph.Node, tuple]], params: dict | None = None
                ) -> KernelPlan:
    """Plan one kernel computing each ``node`` into its ``(buffer, dtype, shape, strides,
    offset)``.

    ``params`` are the roots' params as evaluation binds them, each with its position (default:
    merged as :func:`~..ir.params.roots_params` merges them; a cut graph's steps bind only the
    params they read, at their positions in the whole graph's). Operands are the leaf params in
    that order (leaves of one buffer, dtype and broadcast view share one), then the outputs; scalar
    parameters are the scalar params in that order. So a plan made from one graph launches
    every graph of the same signature with that graph's params in the same places. The planner
    reads of a leaf only what its sid holds (dtype, view, alignment class), and of buffers only
    which are one.
    """
    shape = outputs[0][1][2]
    for node, (_, _, out_shape, _, _) in outputs:
        if tuple(out_shape) != tuple(shape):
            raise ShapeError(f"one kernel computes one shape; got {out_shape} and {shape}")
        layout.broadcast_strides(node.shape, (0,) * node.ndim, shape)
    roots = [node for node, _ in outputs]
    if params is None:
        params = roots_params(roots)[0]
    inputs, scalars, var_of, sources = number_params(params, params, shape)
    views = [(buffer, dtype, full, offset, False, graph.align_class(buffer.align))
             for buffer, dtype, full, offset in inputs]
    body, var = instructions(roots, var_of)
    for root, (buffer, dtype, _, strides, offset) in zip(roots, (o[1] for o in outputs)):
        views.append((buffer, np.dtype(dtype), tuple(strides), offset, True,
                      graph.align_class(getattr(buffer, "align", 256))))
        body.append(Instr(None, "store", len(views) - 1, (var[root.serial],),
                          CODES[np.dtype(dtype)]))
    return _finish(tuple(shape), views, scalars, body, tuple(sources))


def number_params(params, positions, shape: tuple) -> tuple[list, list, dict, list]:
    """A kernel's input operands and scalar parameters from the ``params`` it reads (leaf and
    scalar nodes), over its iteration ``shape``: ``(views, scalars, var_of, sources)``.

    ``views``: ``(buffer, dtype, strides broadcast to shape, offset)`` per operand, leaves of one
    buffer, dtype and broadcast view sharing one; ``scalars``: ``(value, dtype, position)``;
    ``var_of``: each param's serial → its operand or scalar slot; ``sources``: per operand the
    position of its first param. ``positions[n]`` is where evaluation binds param ``n``.
    """
    views, scalars, sources = [], [], []
    var_of: dict[int, int] = {}
    view_index: dict[tuple, int] = {}
    for n in params:
        if n.kind == "leaf":
            buffer, lshape, lstrides, offset = graph.leaf_view(n)
            full = layout.broadcast_strides(lshape, lstrides, shape)
            ident = (buffer.uid, n.dtype.str, full, offset)
            if ident not in view_index:
                view_index[ident] = len(views)
                views.append((buffer, n.dtype, full, offset))
                sources.append(positions[n])
            var_of[n.serial] = view_index[ident]
        else:
            var_of[n.serial] = len(scalars)
            scalars.append((n.attrs[1], n.dtype, positions[n]))
    return views, scalars, var_of, sources


def instructions(roots: list, var_of: dict) -> tuple[list[Instr], dict[int, int]]:
    """The instruction list computing ``roots`` (no stores), inputs first, and each node's
    variable (by serial); ``var_of`` maps each param's serial to its operand or scalar slot.

    Nodes that compute the same thing share one instruction (:func:`_same_as`): a text that
    writes ``cdf(d)`` and ``cdf(-d)`` out in full computes their common part once. The kernel's
    compiler can't do that itself: it sees distinct scalar parameters (equal Python scalars are
    one param: ``ir/scalarops.py``) and an ``abs`` of a negation kept apart from the ``abs``."""
    body, var, seen = [], {}, {}
    for n in graph.walk(roots):
        v = len(body)
        if n.kind == "leaf":
            ins = Instr(v, "load", var_of[n.serial], (), CODES[n.dtype])
        elif n.kind == "scalar":
            ins = Instr(v, "scalar", var_of[n.serial], (), CODES[n.dtype])
        elif n.kind == "cast":
            ins = Instr(v, "cast", None, (var[n.inputs[0].serial],), CODES[n.dtype])
        elif n.kind in ("random", "gather"):
            ins = _draw_or_gather(n, v, var, var_of)
        elif n.kind == "op":
            name, loop = n.attrs
            args = tuple(var[i.serial] for i in n.inputs)
            ins = Instr(v, "op", (name, tuple(CODES[d] for d in loop)), args, CODES[n.dtype])
        else:   # a reduction is cut out of the graph before planning (compiler/planner.py)
            raise ValueError(f"{n.label()} reached an elementwise plan")
        same = _same_as(ins, body)
        found = seen.get(same) if same is not None else None
        if found is None:
            body.append(ins)
            if same is not None:
                seen[same] = v
            found = v
        var[n.serial] = found
    return body, var


# abs(-x) is abs(x), bit for bit (NaN's sign included), where negation is exact: not for
# unsigned integers, whose negation wraps around.
_SIGNED = frozenset(("i8", "i16", "i32", "i64", "f16", "f32", "f64", "c64", "c128"))


def _same_as(ins: Instr, body: list) -> tuple | None:
    """What ``ins`` computes, equal for instructions that compute equal values (a load of one
    operand, one scalar, an op of one name and loop on the same variables), or None where
    ``ins`` must stay its own: a random draw (each reads its own stream) or a gather (which may
    flag its index)."""
    if ins.kind in ("random", "gather"):
        return None
    args = ins.inputs
    if ins.kind == "op" and ins.arg[0] == "absolute" and ins.arg[1][0] in _SIGNED:
        inner = body[args[0]]
        if inner.kind == "op" and inner.arg[0] == "negative":
            args = inner.inputs
    return (ins.kind, ins.arg, args, ins.code)


def _draw_or_gather(n: graph.Node, v: int, var: dict, var_of: dict) -> Instr:
    """The instruction of a random draw (``(dist, view)``, placed by :func:`_placed`) or of a
    gather (``(operand, extent, stride)``: a load of the operand at its index + index *
    stride)."""
    if n.kind == "random":
        return Instr(v, "random", n.attrs, tuple(var[i.serial] for i in n.inputs),
                     CODES[n.dtype])
    return Instr(v, "gather", (var_of[n.inputs[0].serial], *n.attrs),
                 tuple(var[i.serial] for i in n.inputs[1:]), CODES[n.dtype])


def _placed(body: list, shape: tuple) -> tuple[tuple, frozenset]:
    """The body with each draw's view turned into its ``(dist, mapping)``, and the gathered
    operands. ``mapping`` is None where the kernel reads the draw in its own C order (a fresh
    draw of the output's shape), else the map from the kernel's logical index to the stream's
    (``compiler/streams.py``)."""
    own = layout.contiguous_strides(shape)
    placed = []
    for ins in body:
        if ins.kind == "random":
            dist, (dshape, dstrides, offset) = ins.arg
            strides = layout.broadcast_strides(dshape, dstrides, shape)
            identity = offset == 0 and all(s == c for s, c, e in zip(strides, own, shape)
                                           if e != 1)
            ins = dataclasses.replace(ins, arg=(dist, None if identity else
                                                (shape, strides, offset)))
        placed.append(ins)
    return tuple(placed), frozenset(i.arg[0] for i in body if i.kind == "gather")


def _finish(shape, views, scalars, body, sources=()) -> KernelPlan:
    body, gathered = _placed(body, shape)
    dims, stride_sets = layout.collapse(shape, [v[2] for v in views])
    # a tile holds compute-type values (float16 as float32), bool as a byte: see codegen.tiled
    tile_bytes = [1 if v[1] == np.bool_ else max(v[1].itemsize, 4) if v[1].kind == "f"
                  else v[1].itemsize for v in views]
    schedule, classes = layout.schedule(dims, stride_sets, tile_bytes)
    if gathered:    # a gathered operand is read per element at an index plus a gathered offset
        schedule, classes = _gathered_classes(schedule, classes, gathered)
    operands = tuple(
        Operand(buffer, dtype, strides, offset, cls, output)
        for (buffer, dtype, _, offset, output, _), strides, cls in zip(views, stride_sets,
                                                                       classes))
    width = layout.vector_width(schedule, [
        (o.layout, o.code, o.strides,
         layout.lowest_bit(align | layout.lowest_bit(o.offset * o.dtype.itemsize)))
        for o, (*_, align) in zip(operands, views)])
    canonical = "\n".join(_canonical(i) for i in body)
    parts = (
        ("graph", hashlib.sha256(canonical.encode()).hexdigest()[:32]),
        keys.operands_part(operands),
        ("scalars", " ".join(CODES[s[1]] for s in scalars) or "-"),
        ("rank", str(len(dims))),
        ("schedule", schedule),
        ("vector_width", str(width)),
        ("index_width", "64"),
        ("config", repr(config.codegen_settings())),
    )
    parts = keys.structure_parts(parts)
    key = keys.digest(parts)
    return KernelPlan(shape, dims, operands, tuple((v, dt) for v, dt, _ in scalars),
                      tuple(body), parts, key, schedule, width,
                      sources=sources, scalar_sources=tuple(p for _, _, p in scalars))


def _gathered_classes(schedule: str, classes: list, gathered: frozenset) -> tuple[str, list]:
    """Gathered operands (``fa.take``) as class ``S``: no vector or tile access, since each
    element adds its own gathered offset; a tiled walk left without transposed operands walks
    rows."""
    classes = ["S" if k in gathered else c for k, c in enumerate(classes)]
    if schedule == "tiled" and "T" not in classes:
        schedule = "rows"
    return schedule, classes


def _canonical(i: Instr) -> str:
    return f"{i.var}={i.kind}:{i.arg}:{','.join(map(str, i.inputs))}:{i.code}"
