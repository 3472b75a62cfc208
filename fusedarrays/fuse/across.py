"""``fa.global_norm``: one norm over every tensor of a list, and the launch before a foreach's own
where its function reduces across its lists (clip-by-global-norm, then Adam: two launches).

Where it sits: beside :mod:`foreach`. Inside a function that ``f.foreach`` traces, an argument
stands for every tensor of its list, and ``fa.global_norm(g)`` for the norm of all of them as one
vector (``torch.nn.utils.clip_grad_norm_``'s total norm, ``optax.global_norm``): the trace cuts
each reduction that norm is made of out of the graph (:func:`cut`) and puts a 0-d *global* leaf
in its place, so the rest of the function — the step that reads the norm — is still one
elementwise launch over the list, which reads the leaf as a constant. The reductions' inputs,
resolved over the arguments' values before any write of the step, become an
:class:`~..compiler.foreach_plan.AcrossPlan`: a first launch over the same tables stores a
fixed number of
partial results per reduction, and the foreach kernel folds them in a fixed order before its
first element (``compiler/foreach_codegen.py``). No atomics: the same tensors give the same bits
on every call. Elsewhere ``fa.global_norm`` is ``fa.linalg.vector_norm`` of the concatenation, so
``f(p, g, ...)`` computes what ``f.foreach([p], [g], ...)`` does.
"""

from __future__ import annotations

from .. import compiler
from ..api import array
from ..api.array import asarray, ndarray
from ..api.linalg import vector_norm
from ..api.manipulation import concat
from ..compiler import TempBuffer
from ..errors import UnsupportedOperationError
from ..ir import graph
from ..ir.dtypes import BY_CODE
from ..runtime import realize
from ..runtime.backend import new_buffer
from ..runtime.launch import LaunchRecord
from .packers import make_scalar_packer


def global_norm(x, ord=2) -> ndarray:
    """The ``ord``-norm of every element of ``x`` as one vector (``fa.linalg.vector_norm``'s
    orders: 2 by default, 1, ``inf``, ``-inf``, 0, any p).

    Inside a function that ``f.foreach`` runs, ``x`` (an argument, or an elementwise expression
    of arguments) stands for every tensor of its list, and the norm is the norm of all of them
    together, as ``torch.nn.utils.clip_grad_norm_`` and ``optax.clip_by_global_norm`` compute
    it: the whole step takes two launches however many tensors there are. A list or tuple of
    arrays: the norm of their concatenation. Anything else: ``fa.linalg.vector_norm(x)``.

    >>> import fusedarrays as fa, numpy as np
    >>> @fa.fuse
    ... def clip(g, max_norm):
    ...     g *= fa.minimum(1.0, max_norm / fa.global_norm(g))
    >>> gs = [fa.asarray(np.full(3, 2.0, np.float32)), fa.asarray(np.full(1, 2.0, np.float32))]
    >>> clip.foreach(gs, 1.0)          # the norm of all four elements is 4: each scaled by 1/4
    >>> [g.get().tolist() for g in gs]
    [[0.5, 0.5, 0.5], [0.5]]
    """
    if isinstance(x, (list, tuple)):
        return vector_norm(concat([asarray(a).reshape(-1) for a in x]), ord=ord)
    norm = vector_norm(x, ord=ord)
    tracer = array._tracing.tracer
    if tracer is None or tracer.across is None:
        return norm
    return ndarray(cut(tracer, norm._resolved()))


def cut(tracer, node: graph.Node) -> graph.Node:
    """``node`` with each reduction in it replaced by a new 0-d global leaf of ``tracer``
    (recorded in ``tracer.across`` as ``(leaf's index, reduction)``)."""
    subst = {}
    for red in graph.walk([node]):
        if red.kind != "reduce":
            continue
        if compiler.has_cut([red.inputs[0]]):   # (a norm folds sums, max or min of its input)
            raise UnsupportedOperationError(
                f"fuse: {tracer.name}: fa.global_norm reduces an elementwise expression of the "
                f"list arguments across the lists; its input has a reduction of its own "
                f"({red.inputs[0].label()}); compute that first, or call the function per tensor")
        buffer = tracer._fresh_buffer("global", red.dtype.itemsize)
        subst[red.serial] = graph.leaf(buffer, red.dtype, (), (), 0)
        tracer.across.append((buffer.index, red))
    return compiler.rebuild(node, subst)


class Across:
    """A foreach entry's first launch: the inputs of its reductions across the lists, as one
    :class:`~..compiler.foreach_plan.AcrossPlan`, compiled, with its scalar packer.

    ``found``: per reduction the trace cut, ``(index, name, input resolved over the arguments'
    values before the step, dtype)``; ``used``: the indices the foreach kernel folds, in its
    order; ``early``: the ``(node, target)`` writes this launch makes too
    (:mod:`.earlystores`); ``column``: ``(kind, k)`` of an operand's source → its column of
    the entry's pointer table (added where the table lacks it); ``check``: the entry's test
    that every operand reads a list argument whole."""

    def __init__(self, fused, found: list, used: tuple, shape: tuple, column, check,
                 early: list = ()):
        message = ("foreach: fa.global_norm in {name} reduces across the list arguments: its "
                   "input must be elementwise over them (every array it reads one of them, read "
                   "whole; no captured arrays, no value of another fa.global_norm)")
        message = message.format(name=fused.__qualname__)
        by_index = {index: (name, node, dtype) for index, name, node, dtype in found}
        self.used = tuple(sorted(set(used)))
        # the writes it makes too (fuse/earlystores.py), before the partials: plan_across
        # drops the last outputs, the partials'
        outputs = list(early)
        for index in self.used:
            name, node, dtype = by_index[index]
            if node.shape != shape:
                raise UnsupportedOperationError(message)
            outputs.append((node, (TempBuffer(256), dtype, shape, (1,), 0)))
        tensor = compiler.plan_kernel(outputs)
        kept = len(tensor.operands) - len(self.used)
        sources = [_source(o.buffer) for o in tensor.operands[:kept]]
        check(tensor, sources, message)
        self.columns = tuple(column(s) for s in sources)
        self.names = tuple(by_index[index][0] for index in self.used)
        self.tensor = tensor

    def compile(self, table: int, backend) -> None:
        """Plan and compile against the entry's pointer table of ``table`` columns."""
        self.plan = compiler.plan_across(self.tensor, self.columns, table, self.names)
        # per reduction folded: (its name, its partials' dtype code)
        self.kinds = {index: (name, code) for index, (name, _, code) in zip(self.used,
                                                                           self.plan.reductions)}
        self.record = LaunchRecord(backend, realize.kernel_for(self.plan, backend),
                                   make_scalar_packer(self.plan, backend), name=self.plan.name,
                                   traffic=self.plan.traffic())


def _source(buffer) -> tuple:
    role = getattr(buffer, "role", None)
    return (role, buffer.index) if role is not None else ("const", buffer)


def run(groups: list, values: list) -> list:
    """Launch a call of groups whose function reduces across its lists: each group's first
    launch (its partials side by side, per reduction, in group order), then each group's
    foreach kernel, folding all of them. Returns ``[(group, outputs)]``."""
    entries = [g.entry for g in groups]
    kinds = entries[0].across.kinds
    if any(e.across is None or e.across.kinds != kinds for e in entries):
        raise UnsupportedOperationError(
            "foreach: the dtype groups of this call reduce across the lists differently "
            f"({[e.across.names if e.across else () for e in entries]}); give the tensors one "
            "dtype")
    started = [g.start(values) for g in groups]
    shapes = [compiler.across_partials(g.padded) if g.live else (0, 0) for g in groups]
    total = sum(count for count, _ in shapes)
    backend = groups[0].entry.backend
    partials = {index: (new_buffer(backend, max(total, 1) * BY_CODE[code].itemsize),
                        BY_CODE[code]) for index, (_, code) in kinds.items()}
    offset = 0
    for g, (count, gc), (_, tables) in zip(groups, shapes, started):
        if count:
            across = g.entry.across
            q = [backend.operand_arg(partials[i][0].storage, partials[i][1], offset)
                 for i in across.used]
            record = across.record
            record.launch_with(tables[0] + [count, gc] + q + record.pack(values), g.padded,
                               ("reduce", "rows", count))
        offset += count
    results = []
    for g, (outs, tables) in zip(groups, started):
        q = [backend.operand_arg(partials[i][0].storage, partials[i][1], 0)
             for i in g.entry.fold_from]
        results.append((g, g.finish(values, outs, tables, [total] + q)))
    return results


__all__ = ["Across", "cut", "global_norm", "run"]
