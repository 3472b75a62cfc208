"""Where a fusedarrays mask is true, found on the device: the flat indices of its true elements
(:func:`true_indices`) and its ``nonzero()`` arrays (:func:`nonzero_arrays`), for ``x[mask]``
(``api/indexing.py``), ``fa.nonzero``, ``fa.flatnonzero`` and ``fa.argwhere`` (``api/masks.py``);
each element's rank among the true ones (:func:`ranks`) and the selected elements written in
place (:func:`scatter`), for ``x[mask] = values`` (``api/scatter.py``).

Three launches and one small read: the rows' counts of true elements (``compiler/compact.py``),
their running sum (a scan kernel), the total read by the host (8 bytes: the result's size, which
no lazy program can know), then the indices stored in order. The mask's bytes never leave the
device. A pending mask is computed first (a kernel of its own, into contiguous bytes), as is a
strided view of one; a contiguous one is read where it is.

>>> import fusedarrays as fa, numpy as np
>>> m = fa.asarray(np.array([[True, False, True], [False, True, True]]))
>>> true_indices(m).get().tolist()
[0, 2, 4, 5]
>>> [a.get().tolist() for a in nonzero_arrays(m)]
[[0, 0, 1, 1], [0, 2, 1, 2]]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import compiler
from ..ir import graph, layout
from ..ir.dtypes import CODES
from ..runtime import compaction
from .array import compute_readers, ndarray
from .creation import empty
from .scans import scan

_I64 = np.dtype(np.int64)


def _bytes_of(mask: ndarray) -> graph.Node:
    """A leaf over ``mask``'s values as contiguous booleans: its own where it is one."""
    if mask.dtype != np.bool_:
        raise TypeError(f"a mask compaction reads booleans, not {mask.dtype}")
    node = mask._resolved()
    if not node.is_leaf:
        node = mask.compute()._resolved()
    if not layout.is_contiguous(node.shape, graph.leaf_view(node)[2]):
        node = mask.copy().compute()._resolved()
    return node


def _buffer(array: ndarray):
    return graph.leaf_view(array._resolved())[0]


class Counted(NamedTuple):
    """A mask counted on the device: its leaf, its size, the rows' running counts (None for an
    empty mask) and the count of true elements, read by the host."""

    node: graph.Node
    total: int
    ends: ndarray | None
    count: int


def counted(mask: ndarray) -> Counted:
    """The count kernel and the scan launched over ``mask``, the count read by the host."""
    node = _bytes_of(mask)
    total = layout.size_of(node.shape)
    if total == 0:
        return Counted(node, 0, None, 0)
    buffer, _, _, offset = graph.leaf_view(node)
    rows = compaction.rows_of(total)
    counts = empty((rows,), _I64)
    compaction.launch("count", (buffer, offset, total), (_buffer(counts), _I64, 0))
    ends = scan("cumulative_sum", counts, 0).compute()
    return Counted(node, total, ends, int(ends[rows - 1]))


def _launch(mode: str, found: Counted, *operands: tuple, view: tuple = ()) -> None:
    """``mode``'s kernel over the counted mask, its running counts, then ``operands``."""
    buffer, _, _, offset = graph.leaf_view(found.node)
    ends_buffer, _, _, ends_offset = graph.leaf_view(found.ends._resolved())
    compaction.launch(mode, (buffer, offset, found.total), (ends_buffer, _I64, ends_offset),
                      *operands, view=view)


def true_indices(mask: ndarray, dtype=_I64) -> ndarray:
    """The flat (C-order) indices of ``mask``'s true elements, in order, as ``dtype`` (int32
    or int64): ``np.flatnonzero`` computed on the device."""
    found = counted(mask)
    out = empty((found.count,), dtype)
    if found.count:
        _launch("index", found, (_buffer(out), out.dtype, 0))
    return out


def ranks(found: Counted, shape: tuple, dtype=_I64) -> ndarray:
    """For each element of the counted mask (of ``shape``) its rank among the true ones in C
    order, 0 where false, as ``dtype``: the selected element ``j`` of ``x[mask] = values``
    takes ``values[ranks[j]]``."""
    out = empty(shape, dtype)
    if found.count:
        _launch("rank", found, (_buffer(out), out.dtype, 0))
    return out


def scatter(found: Counted, target: graph.Node, values: graph.Node, stride: int) -> None:
    """``target[mask] = values`` in one kernel: ``target`` a leaf over the counted mask's
    elements walked in C order by ``stride`` (:func:`scatter_stride`), ``values`` a contiguous
    leaf of its dtype with one element per true one, another buffer's; the pending readers of
    ``target``'s buffer computed first."""
    tbuffer, _, _, toffset = graph.leaf_view(target)
    vbuffer, _, _, voffset = graph.leaf_view(values)
    compute_readers(tbuffer)
    _launch("scatter", found, (vbuffer, values.dtype, voffset), (tbuffer, target.dtype, 0),
            view=(toffset, stride))


def scatter_stride(target: graph.Node, ndim: int) -> int | None:
    """The element stride with which :func:`scatter` writes ``target`` under a mask of
    ``ndim`` axes, or None where it can't: the mask must cover every axis, the dtype be one the
    kernel moves whole, and one stride walk the view in C order (contiguous, reversed, every
    k-th element, a column; not 0, a broadcast, which no write may target)."""
    if not (target.is_leaf and ndim == len(target.shape)
            and CODES[target.dtype] in compiler.SCATTER_CODES):
        return None
    dims, (strides,) = layout.collapse(target.shape, [graph.leaf_view(target)[2]])
    if len(dims) != 1 or (strides[0] == 0 and dims[0] > 1):
        return None
    return strides[0] if dims[0] > 1 else 1


def nonzero_arrays(mask: ndarray, dtype=_I64) -> tuple[ndarray, ...]:
    """``mask.nonzero()`` on the device: one index array per axis of ``mask`` (``dtype``), the
    flat indices of :func:`true_indices` unravelled by lazy integer ops (computed in the kernel
    that reads them)."""
    flat = true_indices(mask, dtype)
    shape = mask.shape
    strides = layout.contiguous_strides(shape)
    out = []
    for k, (extent, stride) in enumerate(zip(shape, strides)):
        index = flat // stride if stride > 1 else flat
        out.append(index % extent if k else index)
    return tuple(out)
