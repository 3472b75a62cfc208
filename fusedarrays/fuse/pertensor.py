"""``fa.tensor_norm``: inside ``foreach``, a norm of each tensor separately (LAMB's trust ratio,
per-tensor clipping), in three launches for any number of tensors.

Where it sits: beside :mod:`across` (the norm of a whole list), whose machinery it reuses. The
trace cuts each reduction of the norm out of the graph and puts a 0-d leaf of role ``tensor`` in
its place (:func:`cut`), so the rest of the function stays one elementwise launch that reads
the leaf as its tensor's value. A call then runs, per dtype group: the
:class:`~..compiler.foreach_plan.AcrossPlan` kernel over a table whose tensors start on whole
ranges of ``gc`` elements (``compiler/tensor_fold.py``), so each partial result lies in one
tensor; a fold, a thread per tensor folding its partials in order; and the foreach kernel,
loading its tensor's value as it enters the tensor. No atomics: the same bits every call. The
reductions' inputs are resolved over the values before the step's writes (as
``fa.global_norm``'s). Outside ``foreach`` (a plain call) the norm is the array's own, so
``f(p, ...)`` computes what ``f.foreach([p], ...)`` does.
"""

from __future__ import annotations

from .. import compiler
from ..api import array
from ..api.array import ndarray
from ..api.linalg import vector_norm
from ..errors import UnsupportedOperationError
from ..ir import graph, layout
from ..ir.dtypes import BY_CODE
from ..runtime import realize
from ..runtime.backend import new_buffer
from ..runtime.launch import LaunchRecord


def tensor_norm(x, ord=2) -> ndarray:
    """The ``ord``-norm of ``x`` (``fa.linalg.vector_norm``'s orders); inside a function that
    ``f.foreach`` runs, where ``x`` (an argument, or an elementwise expression of arguments)
    stands for every tensor of its list, the norm of each tensor separately: the function
    then takes three launches however many tensors there are.

    >>> import fusedarrays as fa, numpy as np
    >>> @fa.fuse
    ... def normalize(g):
    ...     g /= fa.tensor_norm(g)
    >>> gs = [fa.asarray(np.full(4, 2.0, np.float32)), fa.asarray(np.full(1, 3.0, np.float32))]
    >>> normalize.foreach(gs)
    >>> [g.get().tolist() for g in gs]
    [[0.5, 0.5, 0.5, 0.5], [1.0]]
    """
    norm = vector_norm(x, ord=ord)
    tracer = array._tracing.tracer
    if tracer is None or tracer.across is None:
        return norm
    return ndarray(cut(tracer, norm._resolved()))


def cut(tracer, node: graph.Node) -> graph.Node:
    """``node`` with each reduction replaced by a new 0-d leaf of role ``tensor`` (recorded in
    ``tracer.across`` as ``(("tensor", leaf's index), reduction)``)."""
    subst = {}
    for red in graph.walk([node]):
        if red.kind != "reduce":
            continue
        if compiler.has_cut([red.inputs[0]]):
            raise UnsupportedOperationError(
                f"fuse: {tracer.name}: fa.tensor_norm reduces an elementwise expression of the "
                f"list arguments per tensor; its input has a reduction of its own "
                f"({red.inputs[0].label()}); compute that first, or call the function per tensor")
        buffer = tracer._fresh_buffer("tensor", red.dtype.itemsize)
        subst[red.serial] = graph.leaf(buffer, red.dtype, (), (), 0)
        tracer.across.append((("tensor", buffer.index), red))
    return compiler.rebuild(node, subst)


def split(fused, found: list, globals_: tuple, tensors: tuple) -> list:
    """The reductions a foreach entry folds: ``found`` (the trace's cuts) of one kind, with
    plain indices; both kinds in one function are refused."""
    if globals_ and tensors:
        raise UnsupportedOperationError(
            f"foreach: {fused.__qualname__} has both fa.global_norm and fa.tensor_norm; one "
            "function may reduce across its lists or per tensor, not both: split it in two")
    per = bool(tensors)
    return [((f[0][1] if per else f[0]),) + tuple(f[1:]) for f in found
            if isinstance(f[0], tuple) == per]


def per_tensor(plan, across, backend) -> tuple:
    """The entry's foreach plan marked per tensor, and its fold: ``(plan, record)``."""
    fold = compiler.plan_tensor_fold(tuple(across.kinds[i] for i in across.used))
    record = LaunchRecord(backend, realize.kernel_for(fold, backend), lambda values: [],
                          name=fold.name)
    return compiler.per_tensor_plan(plan), (fold, record)


def _tables(group):
    """The across launch's tables for ``group``: tensors padded to whole ranges of ``gc``
    (kept with the group while its foreach tables are)."""
    found = getattr(group, "tensor_tables", None)
    if found is not None and group.tables is not None:
        return found
    entry = group.entry
    sizes = [layout.size_of(group.shapes[k]) for k in group.live]
    gc = compiler.tensor_partials(sum(sizes))
    meta = compiler.foreach_meta(sizes, width=gc)
    rows = [[group._operand(k, kind, c, None) for kind, c in entry.sources]
            for k in group.live]
    args, keep = entry.backend.foreach_args(meta, rows)
    found = (args, keep, gc, int(meta[len(sizes)]) // gc)
    group.tensor_tables = found
    return found


def run(groups: list, values: list) -> list:
    """Per group its three launches (partials, fold, step). Returns ``[(group, outputs)]``."""
    results = []
    for g in groups:
        entry = g.entry
        outs, tables = g.start(values)
        if not g.live:
            results.append((g, g.finish(values, outs, tables, [])))
            continue
        if any(kind == "out" for kind, _ in entry.sources):
            raise UnsupportedOperationError(
                "foreach: a function with fa.tensor_norm returns no new arrays yet; write "
                "into its arguments")
        args, _, gc, count = _tables(g)
        backend, across = entry.backend, entry.across
        kinds = [across.kinds[i] for i in across.used]
        partials = [new_buffer(backend, count * BY_CODE[code].itemsize) for _, code in kinds]
        folded = [new_buffer(backend, len(g.live) * BY_CODE[code].itemsize) for _, code in kinds]
        q = [backend.operand_arg(b.storage, BY_CODE[code], 0)
             for b, (_, code) in zip(partials, kinds)]
        record = across.record
        record.launch_with(args + [count, gc] + q + record.pack(values), count * gc,
                           ("reduce", "rows", count))
        fold_args = [args[0], gc]
        for b_in, b_out, (_, code) in zip(partials, folded, kinds):
            fold_args += [backend.operand_arg(b_in.storage, BY_CODE[code], 0),
                          backend.operand_arg(b_out.storage, BY_CODE[code], 0)]
        entry.fold[1].launch_with(fold_args, len(g.live), ("reduce", "flat", len(g.live)))
        by_index = dict(zip(across.used, zip(folded, kinds)))
        q = [backend.operand_arg(by_index[i][0].storage, BY_CODE[by_index[i][1][1]], 0)
             for i in entry.fold_from]
        results.append((g, g.finish(values, outs, tables, [len(g.live)] + q)))
    return results


__all__ = ["cut", "per_tensor", "run", "split", "tensor_norm"]
