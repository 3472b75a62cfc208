"""Plans of the multi-tensor launches (``fa.fuse``'s ``foreach``): :class:`ForeachPlan` applies a
per-tensor :class:`~.plan.KernelPlan` to every tensor of a list in one launch,
:class:`AcrossPlan` reduces across the whole list (a global norm) in one more.

Pure, beside :mod:`.plan` (whose per-tensor plan they wrap) and :mod:`.foreach_codegen` (their
kernels' source text).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from ..ir.dtypes import CODES
from . import keys
from .plan import KernelPlan
from .protocol import Plan

FOREACH_CHUNK_SHIFT = 12   # meta holds one tensor number per 4096 elements of the concatenation


@dataclass(frozen=True)
class ForeachPlan(Plan):
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

    # the protocol (compiler/protocol.py); sized per call: size 0, no geometry of its own
    kind = "foreach"
    name = property(lambda self: "fe_" + self.key[:16])
    operands = property(lambda self: self.tensor.operands)
    scalars = property(lambda self: self.tensor.scalars)
    body = property(lambda self: self.tensor.body)

    def traffic(self) -> tuple[int, int]:
        """Per element of the concatenation: each contiguous operand's item (the 0-d folded
        values are read once a block)."""
        return 0, sum(o.dtype.itemsize for o in self.operands if o.layout == "C")

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
    # B: a 0-d array shared by every tensor (read once: foreach_codegen.shared_load)
    shared = {k for k, o in enumerate(tensor.operands) if o.layout == "B" and not o.output}
    bad = [k for k, o in enumerate(tensor.operands)
           if o.layout != "C" and k not in across and k not in shared]
    if bad or len(tensor.dims) != 1:
        raise ShapeError(f"a foreach kernel reads and writes every operand contiguously; "
                         f"operands {bad} of {tensor.name} are "
                         f"{[tensor.operands[k].layout for k in bad]}")
    # The element body is the scalar one; the foreach walk adds 128-bit accesses of 4-byte
    # dtypes (Adam over 200 tensors on the H100: 520 µs with scalar accesses), each tensor's
    # start padded to a whole vector and a per-tensor flag in `meta` saying whether all its
    # operands are 16-byte aligned (else that tensor goes element by element).
    width = 4 if all(o.code in ("f32", "i32", "u32") for k, o in enumerate(tensor.operands)
                     if k not in across and k not in shared) else 1
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
class AcrossPlan(Plan):
    """The first of a foreach's two launches where its function reduces across the whole list
    (``fa.global_norm``): one kernel computes each reduction's input expression for every
    element of every tensor and stores ``np_`` partial results per reduction, partial ``o``
    folding elements ``o * gc`` to ``(o + 1) * gc`` of the concatenation in a fixed order (a
    block's threads interleaved, then a tree); the :class:`ForeachPlan` launch folds them.

    ``tensor`` is the per-tensor plan of the inputs and of the writes the launch makes too
    (``fuse/earlystores.py``: LAMB's ``m`` and ``v``, stored where they are computed for the
    norms, so the foreach kernel reads them instead of their inputs); ``reductions`` name
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

    kind = "across"     # the protocol (compiler/protocol.py); sized per call
    name = property(lambda self: "fg_" + self.key[:16])
    operands = property(lambda self: self.tensor.operands)
    scalars = property(lambda self: self.tensor.scalars)
    body = property(lambda self: self.tensor.body)

    def traffic(self) -> tuple[int, int]:
        """Per element of the concatenation: each operand's item (loads and stores)."""
        return 0, sum(o.dtype.itemsize for o in self.operands)

    def param_types(self) -> tuple[str, ...]:
        return (("i64", "ptr", "ptr", "i64", "i64", "i64") + ("ptr",) * len(self.reductions)
                + tuple(CODES[dt] for _, dt in self.scalars))


def plan_across(tensor: KernelPlan, columns: tuple[int, ...], table: int,
                names: tuple[str, ...]) -> AcrossPlan:
    """The first launch of a foreach reducing across its list: ``tensor`` computes reduction
    ``names[j]``'s input into its last outputs, in order, after the writes the launch makes
    too (its other outputs, stored as the foreach kernel would; operands contiguous and
    1-D)."""
    kept = len(tensor.operands) - len(names)   # the partials' outputs go
    inputs = tensor.operands[:kept]
    bad = [k for k, o in enumerate(inputs) if o.layout not in (("C",) if o.output
                                                                 else ("C", "B"))]
    if bad or len(tensor.dims) != 1:   # B: a shared 0-d array
        raise ShapeError(f"a reduction across a foreach list reads and writes every operand "
                         f"whole; operands {bad} of {tensor.name} are not")
    stores = [i for i in tensor.body if i.kind == "store" and i.arg >= kept]
    reductions = tuple((name, ins.inputs[0], partials_code(name, tensor.operands[ins.arg].dtype))
                       for name, ins in zip(names, stores))
    tensor = dataclasses.replace(  # complex by parts, as in plan_foreach
        tensor, operands=tuple(dataclasses.replace(o, by_parts=True) for o in inputs),
        vector_width=1, body=tuple(i for i in tensor.body
                                   if i.kind != "store" or i.arg < kept))
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
