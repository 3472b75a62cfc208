"""Tracing a function into kernel stores: placeholders, recorded in-place writes, traced scalars.

Where it sits: :mod:`fuse` builds a :class:`Tracer` on the first call of a signature. The function
runs once on *placeholder* arrays (leaves of :class:`TraceBuffer` versions of the argument
buffers) and on :class:`TracedScalar` stand-ins for its scalar arguments. Ops build graph nodes as
usual; in-place writes (``m[...] = e``, ``p -= e``, ``out=``) are recorded here instead of run
(``array.py`` consults ``array._tracing.tracer``, this thread's tracer), each making a new version
of the written buffer, and
every placeholder view of that buffer moves to the new version, so a later statement reads the
new value (sequential semantics). Evaluating a traced value on the host raises.

After the function returns, :meth:`Tracer.program` turns the record into launches:

1. resolve: a read of version k through view V becomes the value written (V is the written view,
   or lies inside it: the written expression through the composed view), or a read of version
   k-1 (V disjoint from it); so every stored expression reads the buffers' *original* contents.
   A read that only partly overlaps an earlier write raises.
2. stores: the last write to each view of each buffer, and one fresh output per returned array;
   writes to one buffer that partly overlap go to successive launches.
3. hazards: a load that a store of the same launch overwrites through a different index map
   (``x += x.T``, ``x[1:] += x[:-1]``), or that an earlier launch overwrote, reads a copy of the
   original made by a copy launch first: aliasing gives NumPy's result, never a race.
4. plans: the compiler's program (``compiler.plan_evaluation``: one kernel, or the kernels a
   reduction cuts it into) per (stage, shape), with each operand's source (argument root,
   output, temporary, captured constant) for the launch records' packers.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..api import array
from ..api.array import ScalarParam, ndarray
from ..compiler import plan_evaluation
from ..errors import TracerConversionError, UnsupportedOperationError
from ..ir import gathers, graph, layout
from ..ir.params import roots_params
from ..ir.reductions import reduction_node
from ..ir.scans import scan_node
from ..runtime import indexflags
from ..runtime.backend import Buffer
from .views import compose, disjoint, gathered_span, span

_HINT = ("traced functions must be straight-line array code; pass values that choose code paths "
         "as static arguments (fa.fuse(fn, static_argnames=...)) or as bools")


class TraceBuffer(Buffer):
    """A stand-in buffer while tracing: ``role`` is ``arg`` (``index`` = root number, one per
    distinct argument buffer; ``version`` counts the writes into it), ``out`` or ``tmp``.
    ``storage`` is the real storage of the tracing call (the planner may look at addresses); it is
    dropped once the program is planned."""

    __slots__ = ("role", "index", "version")
    traced = True

    def __init__(self, like, role: str, index: int, version: int = 0):
        super().__init__(like.storage, like.nbytes, like.backend)
        self.role, self.index, self.version = role, index, version


# -- traced scalars --------------------------------------------------------------------------------
class TracedScalar(ScalarParam):
    """A scalar argument, or host arithmetic on such, inside a traced function.

    Its value is computed on the host at every call (``expr``: ``("arg", position)`` or
    ``("call", function, operands)``) and passed as a kernel parameter, so new values never
    retrace. ``example`` is its value in the tracing call, which fixes its type: weak for a Python
    int or float (NEP 50), strong for a NumPy scalar.
    """

    __slots__ = ("expr", "example", "name")

    def __init__(self, expr: tuple, example, name: str):
        self.expr, self.example, self.name = expr, example, name

    def __repr__(self) -> str:
        return f"<traced scalar {self.name}: {type(self.example).__name__}>"

    def _refuse(self, *_):
        raise UnsupportedOperationError(
            f"fuse: {self.name} is a traced scalar (its value changes per call without a "
            f"retrace), so Python can't branch on it, compare it or pass it to math.*; use "
            f"operators or np.<ufunc> on it (np.sqrt(x), x ** 0.5); {_HINT}")

    __bool__ = __float__ = __int__ = __index__ = __complex__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _refuse
    __hash__ = object.__hash__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if (method != "__call__" or kwargs or ufunc.nout != 1
                or any(isinstance(i, (ndarray, np.ndarray)) for i in inputs)):
            return NotImplemented  # fa arrays take it from here (ndarray.__array_ufunc__)
        return _call(ufunc, inputs)


def _call(fn, operands) -> TracedScalar | object:
    examples = [o.example if isinstance(o, TracedScalar) else o for o in operands]
    example = fn(*examples)
    name = fn.__name__ + "(" + ", ".join(getattr(o, "name", "c") for o in operands) + ")"
    return TracedScalar(("call", fn, tuple(operands)), example, name)


def _install_scalar_operators() -> None:
    def binary(fn):
        def forward(self, other):
            if isinstance(other, (ndarray, np.ndarray)):
                return NotImplemented
            return _call(fn, (self, other))

        def reflected(self, other):
            if isinstance(other, (ndarray, np.ndarray)):
                return NotImplemented
            return _call(fn, (other, self))
        return forward, reflected

    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
        forward, reflected = binary(getattr(operator, name))
        setattr(TracedScalar, f"__{name}__", forward)
        setattr(TracedScalar, f"__r{name}__", reflected)
    def unary(fn):
        return lambda self: _call(fn, (self,))

    for name in ("neg", "pos", "abs"):
        setattr(TracedScalar, f"__{name}__", unary(getattr(operator, name)))


_install_scalar_operators()


def rebuild(node: graph.Node, leaf_fn, memo: dict, gather_fn=None) -> graph.Node:
    """``node`` with every leaf replaced by ``leaf_fn(leaf)``, memoised by node serial. A serial
    names a live node only, and nodes the tracer builds on the way (a read of a written view)
    die while the memo lives: it holds each node beside its result, so no serial is reused.
    ``gather_fn(gather, inputs)``, where given, rebuilds each gather from its rebuilt index
    (and site) ``inputs``, its source being the caller's to map."""
    found = memo.get(node.serial)
    if found is not None:
        return found[1]
    if node.kind == "leaf":
        out = leaf_fn(node)
    elif node.kind in ("scalar", "random"):    # a draw reads no leaf
        out = node
    elif node.kind == "gather" and gather_fn is not None:
        out = gather_fn(node, tuple(rebuild(i, leaf_fn, memo, gather_fn)
                                    for i in node.inputs[1:]))
    else:
        inputs = tuple(rebuild(i, leaf_fn, memo, gather_fn) for i in node.inputs)
        if node.kind == "gather":
            out = graph.gather(inputs[0], inputs[1], *node.attrs, *inputs[2:])
        elif node.kind in ("reduce", "scan"):   # attrs (name, axes or axis, a flag)
            make = reduction_node if node.kind == "reduce" else scan_node
            out = make(node.attrs[0], inputs[0], node.attrs[1], node.attrs[2], node.dtype)
        else:
            out = (graph.cast(inputs[0], node.dtype) if node.kind == "cast"
                   else graph.op(node.attrs[0], inputs, node.attrs[1]))
    memo[node.serial] = (node, out)
    return out


# -- the tracer -----------------------------------------------------------------------------------
@dataclass
class _Write:
    made: TraceBuffer          # the version this write produced
    before: TraceBuffer        # the version it overwrote
    dtype: np.dtype
    view: tuple                # (shape, strides, offset) written
    node: graph.Node


@dataclass
class Program:
    """What a traced signature runs per call, in order."""

    launches: list             # (KernelPlan, sources); sources[k] is ("arg", root), ("out", k),
                               # ("tmp", k) or ("const", Buffer) for plan.operands[k]
    outputs: list              # (dtype, shape) of each fresh output array
    temps: list                # bytes of each temporary (staged copies)
    items: tuple | None        # the result: None, ("one", item) or ("tuple", items); an item is
                               # ("out", k) or ("arg", position)
    written: tuple             # roots stored into
    sites: object = None       # indexflags.Sites of its flagged gathers, kept while it lives


class Tracer:
    """Records one run of a function on placeholders; see the module docstring."""
    def host_scalar(self, fn, example, name: str) -> TracedScalar:   # fuse/draws.py
        self.hosts.append(fn)     # run once per call, its value after the call's (a draw's key)
        return TracedScalar(("arg", self.host_base + len(self.hosts) - 1), example, name)

    def __init__(self, name: str, backend):
        self.name, self.backend = name, backend
        self.roots: list[Buffer] = []               # real argument buffers, by root number
        self.originals: list[TraceBuffer] = []      # version 0 of each root
        self.latest: list[TraceBuffer] = []
        self.placeholders: dict[int, ndarray] = {}  # position → placeholder array
        self.writes: list[_Write] = []
        self._made: dict[int, _Write] = {}          # TraceBuffer uid → the write that made it
        self._fresh: list[TraceBuffer] = []         # outputs and temporaries
        self.across: list | None = None  # foreach: the reductions across its lists (fuse.across)
        # the sites of flagged gathers traced (api/indexing.flag_site), named after the function
        self.sites = indexflags.Sites()
        self.hosts, self.host_base = [], 0   # host_scalar's functions, where their values are

    # -- building the call --------------------------------------------------------------------
    def array(self, position: int, leaf: graph.Node) -> ndarray:
        """The placeholder for argument ``position``, whose value is the leaf ``leaf``."""
        buffer, shape, strides, offset = graph.leaf_view(leaf)
        r = next((k for k, known in enumerate(self.roots) if known is buffer), None)
        if r is None:
            r = len(self.roots)
            self.roots.append(buffer)
            self.originals.append(TraceBuffer(buffer, "arg", r))
            self.latest.append(self.originals[r])
        a = ndarray(graph.leaf(self.latest[r], leaf.dtype, shape, strides, offset))
        self.placeholders[position] = a
        return a

    def root_of(self, position: int) -> int:
        return graph.leaf_view(self.placeholders[position]._node)[0].index

    def run(self, fn, args, kwargs):
        previous, array._tracing.tracer = array._tracing.tracer, self
        try:
            return fn(*args, **kwargs)
        finally:
            array._tracing.tracer = previous

    # -- hooks array.py calls while tracing ---------------------------------------------------
    def records(self, target: tuple, node: graph.Node) -> bool:
        """Record a write into a placeholder (True), or let an unrelated write run (False)."""
        buffer, dtype, shape, strides, offset = target
        if not isinstance(buffer, TraceBuffer):
            if any(isinstance(b, TraceBuffer) for b in node.buffers):
                raise UnsupportedOperationError(
                    f"fuse: {self.name} writes a traced value into an array that is not one of "
                    "its arguments; pass that array as an argument (or return a new array)")
            return False
        layout.broadcast_strides(node.shape, (0,) * node.ndim, shape)
        before = self.latest[buffer.index]
        made = TraceBuffer(before, "arg", buffer.index, before.version + 1)
        write = _Write(made, before, np.dtype(dtype), (tuple(shape), tuple(strides), offset), node)
        self.writes.append(write)
        self._made[made.uid] = write
        self.latest[buffer.index] = made
        self._move_views(buffer.index, made)
        return True

    def check_compute(self, arrays, what: str) -> None:
        """Refuse ``what`` (a host conversion or an evaluation) of an array read from the
        arguments: while tracing, its values don't exist."""
        for a in arrays:
            node = a._resolved()
            if not any(isinstance(b, TraceBuffer) for b in node.buffers):
                continue
            if what == ".compute()" and any(n.kind == "gather" for n in graph.walk([node])):
                # api/reductions.py and api/scans.py compute a gathered input first
                raise TracerConversionError(
                    f"fuse: {self.name} reduces, scans or computes a gather of its arguments "
                    f"(shape {a.shape}, {a.dtype}): its values would be computed first, a "
                    "launch of their own that a traced function does not make. Gather in one "
                    "fused function and reduce the result outside it (or in another), or "
                    "reduce before gathering")
            raise TracerConversionError(
                f"fuse: {self.name} calls {what} on a traced array (shape {a.shape}, "
                f"{a.dtype}); inside a fused function an array computed from the "
                "arguments has no host value: the function is traced once into a kernel. "
                "Use fa.where(cond, a, b) for a data-dependent choice; pass a host value "
                "that chooses a code path as a static argument (fa.fuse(fn, "
                "static_argnames=...)) or as a bool")

    def _move_views(self, root: int, made: TraceBuffer) -> None:
        """Every placeholder array viewing ``root`` (views found through ``_views``) now reads
        version ``made``; pending expressions keep the version they were built on."""
        stack, seen = list(self.placeholders.values()), set()
        while stack:
            a = stack.pop()
            if id(a) in seen:
                continue
            seen.add(id(a))
            node = a._node
            if node.kind == "leaf":
                buffer, shape, strides, offset = graph.leaf_view(node)
                if _is_root(buffer, root):
                    a._node = graph.leaf(made, node.dtype, shape, strides, offset)
            if a._views is not None:
                stack.extend(a._views.values())

    # -- step 1: resolve ----------------------------------------------------------------------
    def resolve(self, node: graph.Node, memo: dict) -> graph.Node:
        """``node`` over the arguments' original contents only."""
        return rebuild(node, lambda leaf: self._resolve_leaf(leaf, memo), memo,
                       lambda gather, inputs: self._resolve_gather(gather, inputs, memo))

    def _resolve_gather(self, node: graph.Node, inputs: tuple, memo: dict) -> graph.Node:
        """A gather over the original contents. Its source views the gathered array without
        the gathered axis, so a read of a written version is resolved over the whole array
        (the axis put back in front) and the value found is gathered through its leaves
        (``ir/gathers.py``): a gather of an argument written earlier in the function reads
        the written expression at the index, in the same kernel."""
        source, (extent, stride) = node.inputs[0], node.attrs
        buffer, shape, strides, offset = graph.leaf_view(source)
        if not isinstance(buffer, TraceBuffer) or buffer.role != "arg" or buffer.version == 0:
            return graph.gather(source, inputs[0], extent, stride, *inputs[1:])
        whole = graph.leaf(buffer, source.dtype, (extent,) + shape, (stride,) + strides, offset)
        try:
            out = gathers.gather_expression(self.resolve(whole, memo), inputs[0], 0,
                                            site=inputs[1] if len(inputs) > 1 else None)
        except layout.NotAView:     # the written value reduces: no leaves to gather through
            raise UnsupportedOperationError(
                f"fuse: {self.name} gathers from an argument after an in-place write into it "
                "whose value has a reduction; gather before the write, or split the "
                "function") from None
        if out.shape != node.shape:     # every leaf was constant along the gathered axis
            out = graph.transform(out, lambda v: layout.broadcast_to(v, node.shape))
        return out

    def _resolve_leaf(self, leaf: graph.Node, memo: dict) -> graph.Node:
        buffer, shape, strides, offset = graph.leaf_view(leaf)
        if not isinstance(buffer, TraceBuffer) or buffer.role != "arg" or buffer.version == 0:
            return leaf
        write, view = self._made[buffer.uid], (shape, strides, offset)
        if view == write.view:
            value = graph.cast(write.node, leaf.dtype)
        elif disjoint(view, write.view):
            value = graph.leaf(write.before, leaf.dtype, shape, strides, offset)
        else:
            fn = compose(view, write.view)
            if fn is None:
                raise UnsupportedOperationError(
                    f"fuse: {self.name} reads an argument through a view {view} that partly "
                    f"overlaps an earlier in-place write through {write.view}; read the whole "
                    "written view (or views inside it), or split the function")
            try:
                value = graph.cast(graph.transform(write.node, fn), leaf.dtype)
            except layout.NotAView:    # the written value reduces: its leaves aren't the view's
                raise UnsupportedOperationError(
                    f"fuse: {self.name} reads an argument through a view {view} other than the "
                    f"in-place write through {write.view} whose value has a reduction; read it "
                    "through the written view, or split the function") from None
        return self.resolve(value, memo)

    # -- step 2: stores -----------------------------------------------------------------------
    def _stores(self, memo: dict) -> list:
        """(stage, node, target) of each write that survives to the end, in program order."""
        kept: list[tuple[int, _Write]] = []
        for k, w in enumerate(self.writes):
            if any(o.made.index == w.made.index and o.view == w.view for o in self.writes[k + 1:]):
                continue  # a later write to the same view replaces it
            stage = 1 + max((s for s, o in kept if o.made.index == w.made.index
                             and not disjoint(o.view, w.view)), default=-1)
            kept.append((stage, w))
        return [(stage, self.resolve(w.node, memo), (self.originals[w.made.index], w.dtype,
                                                     *w.view))
                for stage, w in kept]

    def _fresh_buffer(self, role: str, nbytes: int) -> TraceBuffer:
        like = Buffer(self.backend.alloc(nbytes), nbytes, self.backend)
        tb = TraceBuffer(like, role, sum(b.role == role for b in self._fresh))
        self._fresh.append(tb)
        return tb

    def _results(self, result, stores: list, memo: dict):
        """Fresh outputs for returned arrays (stores at stage 0), and the result structure."""
        outputs: list = []
        if result is None:
            return outputs, None
        many = isinstance(result, (tuple, list))
        items = []
        for value in (result if many else (result,)):
            position = next((p for p, a in self.placeholders.items() if a is value), None)
            if position is not None:
                items.append(("arg", position))
                continue
            if not isinstance(value, ndarray):
                raise UnsupportedOperationError(
                    f"fuse: {self.name} returned a {type(value).__name__}; a fused function "
                    "returns None, an array, or a tuple of arrays")
            dtype, shape = value.dtype, value.shape
            out = self._fresh_buffer("out", layout.size_of(shape) * dtype.itemsize)
            stores.append((0, self.resolve(value._resolved(), memo),
                           (out, dtype, shape, layout.contiguous_strides(shape), 0)))
            outputs.append((dtype, shape))
            items.append(("out", len(outputs) - 1))
        return outputs, (("tuple", tuple(items)) if many else ("one", items[0]))

    # -- step 3: hazards ----------------------------------------------------------------------
    def _hazardous(self, groups: list, k: int, leaf: graph.Node, reach=None) -> bool:
        """Whether ``leaf`` reads what a store of launch ``k`` or before overwrites; ``reach``:
        the span a gather through ``leaf`` loads (:func:`gathered_span`), any element of it
        (the index is known only on the device)."""
        buffer, shape, strides, offset = graph.leaf_view(leaf)
        if not isinstance(buffer, TraceBuffer) or buffer.role != "arg":
            return False
        for j, group in enumerate(groups[:k + 1]):
            for _, (tb, _, tshape, tstrides, toffset) in group:
                if not _is_root(tb, buffer.index):
                    continue
                if reach is not None:
                    low, high = span((tshape, tstrides, toffset))
                    if high >= low and reach[0] <= high and low <= reach[1]:
                        return True
                    continue
                if disjoint((shape, strides, offset), (tshape, tstrides, toffset)):
                    continue
                if j < k:
                    return True
                # same launch, same element per thread: the thread loads before it stores
                if offset != toffset or (layout.broadcast_strides(shape, strides, tshape)
                                         != layout.broadcast_strides(tshape, tstrides, tshape)):
                    return True
        return False

    def _stage_copies(self, groups: list, temps: list) -> list:
        """Redirect hazardous loads to copies of the original; return the copy launches."""
        hazards: dict[tuple, list] = {}   # (root, dtype) → [(launch, view, span read)]
        for k, group in enumerate(groups):
            nodes = list(graph.walk([node for node, _ in group]))
            gathered: dict[int, list] = {}    # a gather source's serial → (extent, stride)s
            for n in nodes:
                if n.kind == "gather":
                    gathered.setdefault(n.inputs[0].serial, []).append(n.attrs)
            for n in nodes:
                if n.kind != "leaf":
                    continue
                reach = gathered_span(n, gathered[n.serial]) if n.serial in gathered else None
                if self._hazardous(groups, k, n, reach):
                    buffer, shape, strides, offset = graph.leaf_view(n)
                    view = (shape, strides, offset)
                    hazards.setdefault((buffer.index, n.dtype), []).append(
                        (k, view, reach or span(view)))
        copies = []
        for (root, dtype), uses in hazards.items():
            spans = [read for _, _, read in uses]
            low, count = min(s[0] for s in spans), max(s[1] for s in spans) + 1
            count -= low
            tmp = self._fresh_buffer("tmp", count * dtype.itemsize)
            temps.append(count * dtype.itemsize)
            source = graph.leaf(self.originals[root], dtype, (count,), (1,), low)
            copies.append([(graph.op("copy", (source,), (dtype, dtype)),
                            (tmp, dtype, (count,), (1,), 0))])
            views = {view for _, view, _ in uses}

            def leaf_fn(leaf, root=root, views=views, tmp=tmp, low=low):
                buffer, shape, strides, offset = graph.leaf_view(leaf)
                if _is_root(buffer, root) and (shape, strides, offset) in views:
                    return graph.leaf(tmp, leaf.dtype, shape, strides, offset - low)
                return leaf
            for k in {k for k, _, _ in uses}:
                memo: dict = {}
                groups[k] = [(rebuild(node, leaf_fn, memo), t) for node, t in groups[k]]
        return copies

    # -- step 4: plans ------------------------------------------------------------------------
    def program(self, result, memo: dict, rewrite=None) -> Program:
        """The launches, outputs and result of the run (``memo``: resolve's, the caller's)."""
        stores = self._stores(memo)
        outputs, items = self._results(result, stores, memo)
        written = tuple(sorted({t[0].index for _, _, t in stores if t[0].role == "arg"}))
        stores = rewrite(stores) if rewrite else stores    # all counted written
        groups: dict[tuple, list] = {}
        for stage, node, target in stores:
            groups.setdefault((stage, tuple(target[2])), []).append((node, target))
        # launches that only fill fresh outputs first: they read originals and overwrite nothing
        ordered = [groups[key] for key in sorted(groups, key=lambda key: (
            key[0], any(t[0].role == "arg" for _, t in groups[key])))]
        temps: list[int] = []
        copies = self._stage_copies(ordered, temps)
        launches = []
        for group in copies + ordered:
            for plan in self._plans(group, temps):
                launches.append((plan, tuple(_source(o.buffer) for o in plan.operands)))
        for b in (*self.originals, *self.latest, *self._fresh):
            b.storage = None  # a cached program must not hold the tracing call's memory
        return Program(launches, outputs, temps, items, written, self.sites)

    def _plans(self, group: list, temps: list) -> list:
        """One launch's plan, or, where it reduces, the kernels the planner cuts it into (their
        temporaries are this program's, made per call)."""
        roots = [node for node, _ in group]

        def new_temp(nbytes: int) -> TraceBuffer:
            temps.append(nbytes)
            return self._fresh_buffer("tmp", nbytes)
        program = plan_evaluation(group, roots_params(roots)[0],
                                  self.backend.alloc_align or 1, new_temp)
        return [step.plan for step in program.steps]


def _is_root(buffer, root: int) -> bool:
    return isinstance(buffer, TraceBuffer) and buffer.role == "arg" and buffer.index == root


def _source(buffer) -> tuple:
    if isinstance(buffer, TraceBuffer):
        return (buffer.role, buffer.index)
    return ("const", buffer)
