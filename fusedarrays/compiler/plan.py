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
    reduction), ``err`` where it holds a flagged gather (:func:`flags_index_errors`),
    ``plan.int_params()``, ``a<m>`` per scalar."""
    return (["n"] + [f"p{k}" for k in range(len(plan.operands))]
            + (["cnt"] if getattr(plan, "counters", 0) else [])
            + (["err"] if flags_index_errors(plan) else []) + plan.int_params()
            + [f"a{m}" for m in range(len(plan.scalars))])


def operand_param_types(plan) -> tuple[str, ...]:
    """Kernel parameter types, in order: n, one pointer per operand, the counters' pointer (a
    split reduction), the error word's pointer (a flagged gather), the integers of
    ``plan.int_params()``, the scalars: every plan that binds its operands one by one (an
    elementwise, reduction, row or scan kernel)."""
    pointers = ((1 if getattr(plan, "counters", 0) else 0)
                + (1 if flags_index_errors(plan) else 0))
    return (("i64",) + ("ptr",) * (len(plan.operands) + pointers)
            + ("i64",) * len(plan.int_params()) + tuple(CODES[dt] for _, dt in plan.scalars))


def flags_index_errors(plan) -> bool:
    """Whether ``plan`` holds a flagged gather (its index unchecked on the host: an instruction
    with the site as a second input), whose kernel takes the device's error word
    (``runtime/indexflags.py``)."""
    return any(i.kind == "gather" and len(i.inputs) == 2 for i in getattr(plan, "body", ()))


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


def operand_params(schedule: str, cls: str, rank: int, k: int) -> list[str]:
    """Names of operand ``k``'s integer parameters: base offset ``b``, strides ``s_j``."""
    if schedule == "flat":
        return {"C": [], "B": [f"b{k}"], "S": [f"b{k}", f"s{k}_0"]}[cls]
    if schedule in ("rows", "tiled"):
        return {"C": [f"s{k}_0"], "B": [f"b{k}", f"s{k}_0"]}.get(
            cls, [f"b{k}", f"s{k}_0", f"s{k}_1"])
    return [] if cls == "C" else [f"b{k}"] + [f"s{k}_{j}" for j in range(rank)]


@dataclass(frozen=True)
class KernelPlan:
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
    variable (by serial); ``var_of`` maps each param's serial to its operand or scalar slot."""
    body, var = [], {}
    for n in graph.walk(roots):
        v = len(body)
        if n.kind == "leaf":
            body.append(Instr(v, "load", var_of[n.serial], (), CODES[n.dtype]))
        elif n.kind == "scalar":
            body.append(Instr(v, "scalar", var_of[n.serial], (), CODES[n.dtype]))
        elif n.kind == "cast":
            body.append(Instr(v, "cast", None, (var[n.inputs[0].serial],), CODES[n.dtype]))
        elif n.kind in ("random", "gather"):
            body.append(_draw_or_gather(n, v, var, var_of))
        elif n.kind == "op":
            name, loop = n.attrs
            args = tuple(var[i.serial] for i in n.inputs)
            body.append(Instr(v, "op", (name, tuple(CODES[d] for d in loop)), args,
                              CODES[n.dtype]))
        else:   # a reduction is cut out of the graph before planning (compiler/reduction.py)
            raise ValueError(f"{n.label()} reached an elementwise plan")
        var[n.serial] = v
    return body, var


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


# -- multi-tensor launches (fuse's foreach) -----------------------------------------------------
FOREACH_CHUNK_SHIFT = 12   # meta holds one tensor number per 4096 elements of the concatenation


@dataclass(frozen=True)
class ForeachPlan:
    """One launch applying ``body`` to every tensor of a list (``Fused.foreach``).

    ``tensor`` is the per-tensor plan: every operand contiguous and 1-D, scalar (V = 1), its
    addresses unknown. The tensors are concatenated into one flat index space of ``n`` elements;
    a thread maps its index to (tensor, element) and loads the tensor's operand addresses from a
    table, so any number of tensors of any sizes take one launch and no kernel-argument space.

    Parameters (cuda and sim): ``n``; ``meta`` (int64: ``starts[0..T]``, the prefix sums of the
    sizes, then per chunk of ``2**chunk_shift`` elements the tensor holding its first element);
    ``ptrs`` (uint64 ``[T, C]``: column c's address in tensor t; operands that are one array, a
    load and a store of it, share a column); ``nt`` (T); where the function reduces across the
    list (``globals``), the partials' count ``np_`` and one pointer ``q<j>`` per reduction (the
    :class:`AcrossPlan` kernel's results, folded in each block's prologue); the scalars. The cpu
    variant takes ``n, meta, nt``, then per column a list of arrays, then the same.
    """

    tensor: KernelPlan      # the per-tensor plan
    columns: tuple[int, ...]  # operand k's address is column columns[k] of the table (-1: a
    #                           global, see globals)
    key_parts: tuple[tuple[str, str], ...]
    key: str
    chunk_shift: int = FOREACH_CHUNK_SHIFT
    vector_width: int = 1   # elements per 128-bit access where a tensor's operands are aligned
    # per reduction across the list: (operand k, reduction name, partials' dtype code); operand
    # k is the 0-d value it stands for, read as the fold of the partials
    globals: tuple[tuple[int, str, str], ...] = ()
    table: int = 0          # columns of the pointer table (0: max(columns) + 1)

    # what the runtime reads of any plan
    name = property(lambda self: "fe_" + self.key[:16])
    operands = property(lambda self: self.tensor.operands)
    scalars = property(lambda self: self.tensor.scalars)
    body = property(lambda self: self.tensor.body)

    @property
    def width(self) -> int:
        """Columns of the pointer table (a row's stride)."""
        return self.table or max(self.columns) + 1

    def param_types(self) -> tuple[str, ...]:
        across = ("i64",) + ("ptr",) * len(self.globals) if self.globals else ()
        return (("i64", "ptr", "ptr", "i64") + across
                + tuple(CODES[dt] for _, dt in self.scalars))


def plan_foreach(tensor: KernelPlan, columns: tuple[int, ...], globals: tuple = (),
                 table: int = 0) -> ForeachPlan:
    """The multi-tensor plan of a per-tensor plan whose operands are all contiguous (but the
    0-d ``globals``, see :class:`ForeachPlan`); operand k is table column ``columns[k]``."""
    across = {k for k, _, _ in globals}
    bad = [k for k, o in enumerate(tensor.operands) if o.layout != "C" and k not in across]
    if bad or len(tensor.dims) != 1:
        raise ShapeError(f"a foreach kernel reads and writes every operand contiguously; "
                         f"operands {bad} of {tensor.name} are "
                         f"{[tensor.operands[k].layout for k in bad]}")
    # The element body is the scalar one; the foreach walk adds 128-bit accesses of 4-byte
    # dtypes (Adam over 200 tensors on the H100: 520 µs with scalar accesses), each tensor's
    # start padded to a whole vector and a per-tensor flag in `meta` saying whether all its
    # operands are 16-byte aligned (else that tensor goes element by element).
    width = 4 if all(o.code in ("f32", "i32", "u32") for k, o in enumerate(tensor.operands)
                     if k not in across) else 1
    # complex by parts: a tensor's address may be only its parts' alignment
    tensor = dataclasses.replace(tensor, vector_width=1, operands=tuple(
        dataclasses.replace(o, by_parts=True) for o in tensor.operands))
    parts = tuple((name, str(width) if name == "vector_width" else
                   keys.operands_part(tensor.operands)[1] if name == "operands" else value)
                  for name, value in tensor.key_parts)
    parts += (("foreach", f"columns {','.join(map(str, columns))}, chunk "
                          f"2**{FOREACH_CHUNK_SHIFT}"),)
    if globals:
        parts += (("across", f"table {table}; " + "; ".join(
            f"operand {k}: {name} of {code} partials" for k, name, code in globals)),)
    return ForeachPlan(tensor, tuple(columns), parts, keys.digest(parts),
                       vector_width=width, globals=tuple(globals), table=table)


ACROSS_PARTIALS = 1024      # at most this many partial results per reduction across a list
ACROSS_GRAIN = 8192         # and at least this many elements (of the concatenation) in each


@dataclass(frozen=True)
class AcrossPlan:
    """The first of a foreach's two launches where its function reduces across the whole list
    (``fa.global_norm``): one kernel computes each reduction's input expression for every
    element of every tensor and stores ``np_`` partial results per reduction, partial ``o``
    folding elements ``o * gc`` to ``(o + 1) * gc`` of the concatenation in a fixed order (a
    block's threads interleaved, then a tree); the :class:`ForeachPlan` launch folds them.

    ``tensor`` is the per-tensor plan of the inputs (its stores removed); ``reductions`` name
    the variable holding each reduction's element. Parameters (cuda and sim): ``n`` (the padded
    concatenation's length), ``meta``, ``ptrs``, ``nt`` as a :class:`ForeachPlan` has them (the
    same tables), the partials' count ``np_`` and ``gc``, one pointer ``q<j>`` per reduction,
    the scalars; the cpu variant takes ``n, meta, nt``, the column lists, then the same.
    """

    tensor: KernelPlan
    columns: tuple[int, ...]            # input operand k's table column
    table: int                          # columns of the pointer table
    reductions: tuple[tuple[str, int, str], ...]   # (name, value variable, partials' code)
    key_parts: tuple[tuple[str, str], ...]
    key: str
    chunk_shift: int = FOREACH_CHUNK_SHIFT

    name = property(lambda self: "fg_" + self.key[:16])
    operands = property(lambda self: self.tensor.operands)
    scalars = property(lambda self: self.tensor.scalars)
    body = property(lambda self: self.tensor.body)

    def param_types(self) -> tuple[str, ...]:
        return (("i64", "ptr", "ptr", "i64", "i64", "i64") + ("ptr",) * len(self.reductions)
                + tuple(CODES[dt] for _, dt in self.scalars))


def plan_across(tensor: KernelPlan, columns: tuple[int, ...], table: int,
                names: tuple[str, ...]) -> AcrossPlan:
    """The first launch of a foreach reducing across its list: ``tensor`` computes reduction
    ``names[j]``'s input into its ``j``-th output (operands contiguous and 1-D)."""
    inputs = [o for o in tensor.operands if not o.output]
    bad = [k for k, o in enumerate(inputs) if o.layout != "C"]
    if bad or len(tensor.dims) != 1:
        raise ShapeError(f"a reduction across a foreach list reads every operand whole; "
                         f"operands {bad} of {tensor.name} are not")
    stores = [i for i in tensor.body if i.kind == "store"]
    reductions = tuple((name, ins.inputs[0], partials_code(name, tensor.operands[ins.arg].dtype))
                       for name, ins in zip(names, stores))
    tensor = dataclasses.replace(  # complex by parts, as in plan_foreach
        tensor, operands=tuple(dataclasses.replace(o, by_parts=True) for o in inputs),
        vector_width=1, body=tuple(i for i in tensor.body if i.kind != "store"))
    parts = tuple((name, "1" if name == "vector_width" else
                   keys.operands_part(tensor.operands)[1] if name == "operands" else value)
                  for name, value in tensor.key_parts)
    parts += (("across", f"columns {','.join(map(str, columns))} of {table}, chunk "
                         f"2**{FOREACH_CHUNK_SHIFT}; " + "; ".join(
                             f"{n} of v{v} into {c}" for n, v, c in reductions)),)
    return AcrossPlan(tensor, tuple(columns), table, reductions, parts, keys.digest(parts))


def partials_code(name: str, dtype: np.dtype) -> str:
    """The dtype code of a reduction across a list's partial results: float64 for floats (the
    fold of up to a thousand of them loses nothing a float32 sum would keep), else the
    result's own (an integer count)."""
    return "f64" if np.dtype(dtype).kind == "f" else CODES[np.dtype(dtype)]


def across_partials(total: int) -> tuple[int, int]:
    """``(np_, gc)``: how many partial results a reduction across ``total`` elements (the
    padded concatenation) stores, and how many elements each folds. A function of the sizes
    only, so the same tensors give the same bits on every call."""
    count = max(1, min(ACROSS_PARTIALS, -(-total // ACROSS_GRAIN)))
    return count, max(1, -(-total // count))


def foreach_meta(sizes, chunk_shift: int = FOREACH_CHUNK_SHIFT, width: int = 1) -> np.ndarray:
    """``meta`` of :class:`ForeachPlan` for tensors of ``sizes`` (each > 0): the starts of the
    tensors in the concatenation (each size padded to a multiple of ``width``), per chunk its
    first tensor, the real sizes, and per tensor a flag (1: every operand 16-byte aligned, set by
    the caller once it knows the addresses).

    >>> foreach_meta([3, 5000, 2], chunk_shift=12, width=4).tolist()
    [0, 4, 5004, 5008, 0, 1, 3, 5000, 2, 0, 0, 0]
    """
    real = np.asarray(sizes, np.int64)
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(-(-real // width) * width, out=starts[1:])
    chunks = np.arange(0, starts[-1], 1 << chunk_shift, dtype=np.int64)
    first = np.searchsorted(starts, chunks, side="right") - 1
    flags = np.zeros(len(sizes), np.int64)
    return np.concatenate([starts, first.astype(np.int64), real, flags])
