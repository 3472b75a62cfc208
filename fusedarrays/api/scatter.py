"""Writes through index arrays and masks, and ``ufunc.at`` (``fa.add.at``, ``np.add.at``).

Where it sits: beside :mod:`.indexing` (the reads), under ``ndarray.__setitem__``; the key is
read by :mod:`.indexkeys` with NumPy's rules.

- ``x[mask] = v`` with a scalar (or one-element) ``v`` is ``x[...] = where(mask, v, x)``: one
  kernel, the mask never leaves the device.
- ``x[mask] = array`` with an fa mask (its only index) stays on the device, the host reading
  only the mask's count (``api/compaction.py``): into an ``x`` one stride apart in C order
  (contiguous, reversed, every k-th element, a column) with the mask over all of it, one
  kernel writes the selected elements from the values in order; elsewhere each element's
  rank among the true ones picks its value, ``where(mask, take(values, ranks), x)``. Values
  that read ``x`` (``x[mask] += v``) are computed first.
- Every other write, ``x[idx] = v``, ``x[i, idx] = v``, ``x[idx1, :, idx2] = v``,
  ``x[np_mask] = array``, rewrites the indexed axes of ``x`` in one kernel:
  ``where(hit, v gathered through the inverse index, x)``. The inverse index (for each position
  of the indexed axes, the last selection element naming it) is made on the host from the
  checked index values (a mask: its ``nonzero()`` on the host), so repeated indices give
  NumPy's result (the last value wins), at the cost of one pass over ``x``'s indexed axes.
- ``x[idx] += v`` (and ``-=``, ``*=`` …, for masks too) is Python's ``x[idx] = x[idx] + v``:
  the selection ``x[idx]`` is a gather and ``+=`` on it stays pending (``elementwise.inplace``),
  so the write receives ``gather + v``. Gathered back through the inverse index, a gather that
  reads ``x`` at exactly the element written there is ``x`` itself (recognised from the
  uploaded index values, ``indexing.host_values``): ``where(hit, x + v, x)``, one kernel that
  reads ``x`` once. NumPy's buffered semantics: each element gets ``x + v`` once, however often
  its index repeats.
- ``fa.add.at(x, idx, v)`` (every binary and unary op-table ufunc has ``.at``; ``np.add.at`` on a
  fa array comes here) is unbuffered: a repeated index applies the op once per occurrence, in
  the order of the selection, as NumPy does, so the results are NumPy's bit for bit, on every
  backend and every run. It runs as passes of the fused write above, pass ``r`` applying each
  index's ``r``-th occurrence (16 passes to a kernel): an index repeated ``m`` times costs
  ``ceil(m / 16)`` launches over ``x``'s indexed axes. GPU atomics would take one launch, but
  the code generator has no store through an index (let alone an atomic one), and atomic float
  additions give run-to-run different roundings.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import gathers, graph, layout, ops
from . import compaction, indexkeys
from .array import _as_node, _tracing, _wrap, asarray, ndarray, runtime_write
from .elementwise import FUNCTIONS, UFUNC_METHODS, apply
from .indexing import checked_host, host_values, take_axis, upload_index
from .manipulation import broadcast_to

_PASSES = 16    # ufunc.at passes fused into one kernel (each adds ~6 nodes to its graph)


def _one_value(value) -> bool:
    return not isinstance(value, (ndarray, np.ndarray, list, tuple)) or np.size(value) == 1


def _scalar(value):
    """A one-element array as a 0-d one (a Python or NumPy scalar as it is)."""
    if isinstance(value, (ndarray, np.ndarray)):
        return value.reshape(())
    return np.asarray(value).reshape(()) if isinstance(value, (list, tuple)) else value


def _no_values_error(value_shape: tuple, x_shape: tuple) -> str:
    """NumPy's text for ``x[True] = v`` with ``v`` of no elements."""
    if not x_shape:
        return ("NumPy boolean array indexing assignment cannot assign 0 input values to the "
                "1 output values where the mask is true")
    def text(shape):
        return "(" + ",".join(map(str, shape)) + ")"
    return (f"shape mismatch: value array of shape {text(value_shape)} could not be broadcast "
            f"to indexing result of shape {text((1, *x_shape))}")


def index_write(x: ndarray, key, value) -> None:
    """``x[key] = value`` for a key with index arrays or masks (module docstring)."""
    mask = key[0] if type(key) is tuple and len(key) == 1 else key
    if isinstance(mask, (bool, np.bool_)):
        mask = np.asarray(mask)
    if isinstance(mask, (ndarray, np.ndarray)) and mask.dtype == np.bool_ and mask.ndim == 0:
        # a 0-d mask selects all of x (under a new axis of one) or nothing: a where over x
        if getattr(value, "ndim", 0) == x.ndim + 1 and value.shape[0] == 0:
            # no values: right only where the mask is false (SciPy's apply_where writes so);
            # its one bool is read to raise NumPy's error otherwise
            if bool(mask):
                raise ValueError(_no_values_error(value.shape, x.shape))
            return
        if getattr(value, "ndim", 0) == x.ndim + 1 and value.shape[0] == 1:
            value = value[0]
        x[...] = FUNCTIONS["where"](mask, value, x)
        return
    parsed = indexkeys.parse(x.shape, key)
    if len(parsed.entries) == 1 and parsed.masks_only and _one_value(value):
        _masked_where(x, parsed, _scalar(value))    # inside fa.fuse too: no host step
        return
    if _tracing.tracer is not None:
        raise UnsupportedOperationError(
            "x[idx] = v and x[mask] = array inside fa.fuse are not supported (the index values "
            "are read on the host); x[mask] = scalar and fa.where(mask, v, x) are, or index "
            "outside the fused function")
    if len(parsed.entries) == 1 and parsed.masks_only and isinstance(parsed.entries[0][1],
                                                                     ndarray):
        _device_masked_write(x, parsed, value)
        return
    sel = _Selection(x, parsed)
    if sel.count == 0:
        return
    node, replaced = _rewritten(sel, value)
    read = _reread(value, replaced, sel)
    runtime_write(sel.target._destination(), node, keep=() if read is None else (value,))
    if read is not None:
        value._node = read


def _rewritten(sel: _Selection, value) -> tuple[graph.Node, dict]:
    """The node of the target's new values, and the gathers of ``value`` it replaced by the
    target. A function of its own so that the arrays made on the way are gone by the write
    (a pending array reading the target would be computed before it)."""
    if _one_value(value):
        source, replaced = _scalar(value), {}
    else:
        source, replaced = sel.scattered(sel.values(value, "x[key] = v"))
    return _as_node(FUNCTIONS["where"](sel.hit(sel.inverse), source, sel.target)), replaced


def _reread(value, replaced: dict, sel: _Selection) -> graph.Node | None:
    """Where ``value`` is a pending selection of the target written back in place (``x[idx] +=
    v``: ``value`` is ``x[idx] + v``), the gather of the target it read: after the write, that
    gather reads exactly ``value``'s values (each element's index names an element just written
    with its own value), so ``value`` can take it as its node instead of being computed before
    the write, which would cost a launch. Else None.

    That holds when ``value`` reached the write untransformed (its node is the one gathered),
    has the target's dtype, and each position is written by one selection element, or by
    several whose values differ only through the gather (the rest of ``value`` is constant
    along the selection: ``x[idx] += 1.0`` with repeated indices)."""
    if len(replaced) != 1 or not isinstance(value, ndarray) or value.dtype != sel.target.dtype:
        return None
    node = value._resolved()
    found = [n for n in graph.walk([node]) if n.serial in replaced]
    if len(found) != 1 or found[0].shape != node.shape or node.ndim != 1 + len(sel.rest):
        return None     # transformed on its way (broadcast, moved axes): computed first
    gathered = found[0]
    if np.unique(sel.flat).size != sel.count:   # repeated: the rest must not vary along axis 0
        inside = {n.serial for n in graph.walk([gathered])}
        for n in graph.walk([node]):
            if n.serial in inside or n.kind in ("scalar", "cast", "op"):
                continue
            if n.kind != "leaf":
                return None
            _, shape, strides, _ = graph.leaf_view(n)
            if layout.broadcast_strides(shape, strides, node.shape)[0] != 0:
                return None
    return gathered


def _masked_where(x: ndarray, parsed: indexkeys.Key, value) -> None:
    """``x[..., mask, ...] = value`` (a scalar) as ``target[...] = where(mask, value, target)``."""
    (_, mask, axis), = parsed.entries
    if mask.size == 0:      # selects nothing (an empty mask axis may stand for any axis)
        return
    target = x[parsed.basic]
    after = target.ndim - axis - mask.ndim
    shaped = mask.reshape((1,) * axis + tuple(mask.shape) + (1,) * after)
    target[...] = FUNCTIONS["where"](shaped, value, target)


def _device_masked_write(x: ndarray, parsed: indexkeys.Key, value) -> None:
    """``x[..., mask, ...] = values`` with an fa mask, on the device; the host reads only the
    mask's count (:mod:`.compaction`). Into an ``x`` whose C order is one stride (contiguous,
    reversed, every k-th element, a column) with the mask over all of it, one kernel writes
    each selected element from its rank's value (``compaction.scatter``); elsewhere each
    element's rank picks it, ``target[...] = where(mask, take(values, ranks, axis), target)``.
    No repeats, so NumPy's order of assignment never matters. Values that read ``x``
    (``x[mask] += v``) are computed first, so the write reads ``x`` only where it writes it."""
    (_, mask, axis), = parsed.entries
    target = x[parsed.basic]
    found = compaction.counted(mask)
    shape = target.shape[:axis] + (found.count,) + target.shape[axis + mask.ndim:]
    value = asarray(value)
    if value.pending and target._resolved().buffers & value._resolved().buffers:
        value.compute()
    try:
        values = broadcast_to(value, shape)
    except (ValueError, layout.ShapeError):
        raise ValueError(f"x[key] = v: shape mismatch: value array of shape {value.shape} "
                         f"could not be broadcast to indexing result of shape {shape}") from None
    if not found.count:
        return
    node = target._resolved()
    stride = compaction.scatter_stride(node, mask.ndim)
    if stride is not None and value.shape == shape:
        values = value if value.dtype == node.dtype else value.astype(node.dtype)
        source = values._resolved()
        if not (source.is_leaf and layout.is_contiguous(source.shape, graph.leaf_view(source)[2])
                and graph.leaf_view(source)[0] is not graph.leaf_view(node)[0]):
            source = values.copy().compute()._resolved()
        compaction.scatter(found, node, source, stride)
        return
    ranks = compaction.ranks(found, mask.shape, np.int32 if mask.size < 2**31 else np.int64)
    runtime_write(target._destination(), _ranked(target, mask, axis, values, ranks))


def _ranked(target: ndarray, mask: ndarray, axis: int, values: ndarray,
            ranks: ndarray) -> graph.Node:
    """The node of ``where(mask, take(values, ranks, axis), target)``: a function of its own,
    so that the arrays made on the way are gone by the write (a pending array reading the
    target would be computed before it)."""
    gathered = take_axis(values, ranks, axis, axis, "x[mask] = v")
    shaped = mask.reshape((1,) * axis + tuple(mask.shape)
                          + (1,) * (target.ndim - axis - mask.ndim))
    return _as_node(FUNCTIONS["where"](shaped, gathered, target))


class _Selection:
    """The elements a key selects, as a write sees them: ``target`` (the basic view of ``x``,
    its indexed axes first), ``extents`` (those axes), ``flat`` (each selection element's
    position over them, NumPy's order of the selection), and the inverse index."""

    def __init__(self, x: ndarray, parsed: indexkeys.Key):
        entries = indexkeys.index_arrays(parsed)
        axes = [a for a, _ in entries]
        view = x[parsed.basic]
        others = [a for a in range(view.ndim) if a not in axes]
        order = axes + others
        self.target = view.transpose(order) if order != list(range(view.ndim)) else view
        k = len(axes)
        self.extents, self.rest = self.target.shape[:k], self.target.shape[k:]
        hosts = []
        for (a, index), n in zip(entries, self.extents):
            h = checked_host(index, n, parsed.x_axis(a)).astype(np.int64)
            hosts.append(np.where(h < 0, h + n, h))
        try:
            hosts = np.broadcast_arrays(*hosts)
        except ValueError:
            raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                             "with shapes " + " ".join(str(h.shape) for h in hosts)) from None
        self.bshape = hosts[0].shape
        self.flat = np.ravel_multi_index(hosts, self.extents).reshape(-1)
        self.count = self.flat.size
        self.at = axes[0] if parsed.adjacent else 0     # where NumPy puts the index's axes
        self.inverse = self.inverse_of(np.arange(self.count))

    def inverse_of(self, chosen: np.ndarray) -> np.ndarray:
        """For each position of the indexed axes, the last of the ``chosen`` selection elements
        naming it, else -1 (NumPy's assignment order: the last one stays)."""
        inverse = np.full(layout.size_of(self.extents), -1, np.int64)
        inverse[self.flat[chosen]] = chosen
        return inverse

    def hit(self, inverse: np.ndarray) -> np.ndarray:
        return (inverse >= 0).reshape(self.extents + (1,) * len(self.rest))

    def values(self, value, what: str) -> ndarray:
        """``value`` broadcast to NumPy's shape of ``x[key]``, the index's axes first and
        flattened: shape ``(count,) + rest``."""
        k = len(self.bshape)
        shape = self.rest[:self.at] + self.bshape + self.rest[self.at:]
        value = asarray(value)
        if value.shape == shape and not self.at and k == 1:
            return value        # as it is: a pending selection keeps its nodes (_reread)
        try:
            values = broadcast_to(value, shape)
        except (ValueError, layout.ShapeError):
            raise ValueError(f"{what}: shape mismatch: value array of shape {value.shape} "
                             f"could not be broadcast to indexing result of shape "
                             f"{shape}") from None
        if self.at:
            values = values.transpose(list(range(self.at, self.at + k)) + list(range(self.at))
                                      + list(range(self.at + k, values.ndim)))
        return values if k == 1 else values.reshape((self.count,) + self.rest)

    def scattered(self, values: ndarray, inverse: np.ndarray | None = None) -> tuple:
        """``values`` (one per selection element) at the positions of the indexed axes, through
        ``inverse``: shape ``extents + rest``, and the gathers of ``values`` replaced by the
        target (serial → target leaf). A pending elementwise ``values`` is gathered through its
        leaves; a selection of the target read back in place is the target."""
        inverse = self.inverse if inverse is None else inverse
        k = len(self.extents)
        idx = upload_index(np.maximum(inverse, 0).reshape(self.extents + (1,) * len(self.rest)))
        node = values._resolved()
        replace = self._in_place(node)
        try:
            return _wrap(gathers.gather_expression(node, idx._resolved(), k, replace)), replace
        except layout.NotAView:
            node = values.compute()._resolved()
            return _wrap(gathers.gather_expression(node, idx._resolved(), k)), {}

    def _in_place(self, node: graph.Node) -> dict:
        """The gathers in ``node``'s graph that read, for each selection element, the target's
        element at that element's position: serial → the target's leaf."""
        target = self.target._resolved()
        if not target.is_leaf or node.is_leaf:
            return {}
        buffer, shape, strides, offset = graph.leaf_view(target)
        k = len(self.extents)
        rest = layout.broadcast_strides(self.rest, strides[k:], self.rest)
        where = offset + sum(u * s for u, s in zip(np.unravel_index(self.flat, self.extents),
                                                   strides))
        found = {}
        for n in graph.walk([node]):
            if n.kind != "gather" or n.shape != node.shape:
                continue
            source, index = n.inputs[:2]     # a flagged gather's third input is its site
            sbuf, sshape, sstrides, soff = graph.leaf_view(source)
            sstrides = layout.broadcast_strides(sshape, sstrides, node.shape)
            if sbuf is not buffer or source.dtype != target.dtype or sstrides[0] != 0 \
                    or sstrides[1:] != rest:
                continue
            values = host_values(index)
            if values is None:      # found on the device (x[mask] of an fa mask): read them
                values = ndarray(index).get()
            if index.ndim != node.ndim or any(
                    layout.broadcast_strides(index.shape, values.strides, node.shape)[1:]):
                continue        # not one index per selection element
            extent, stride = n.attrs
            per = values.reshape(values.shape[0], -1)[:, 0].astype(np.int64)
            per = np.where(per < 0, per + extent, per)
            if per.shape == where.shape and np.array_equal(soff + per * stride, where):
                found[n.serial] = target
        return found


def ufunc_at(row: ops.Op, a, indices, b=None) -> None:
    """``np.<ufunc>.at(a, indices, b)``: unbuffered, in place (module docstring)."""
    name = f"{row.name}.at"
    if not isinstance(a, ndarray):
        raise UnsupportedOperationError(
            f"{name}: the array written must be a fa.ndarray, got {type(a).__name__}; "
            "convert it with fa.asarray first")
    if (b is None) != (row.nin == 1):
        raise TypeError(f"{name} takes {'no' if row.nin == 1 else 'one'} value operand "
                        f"(the ufunc has {row.nin} input(s))")
    if _tracing.tracer is not None:
        raise UnsupportedOperationError(f"{name} inside fa.fuse is not supported (the index "
                                        "values are read on the host)")
    if not _has_array(indices):      # a basic key: no repeats, one fused write
        view = a[indices]
        view[...] = _applied(row, view, () if b is None else (b,), a.dtype)
        return
    sel = _Selection(a, indexkeys.parse(a.shape, indices))
    if sel.count == 0:
        return
    values = None
    if b is not None:
        values = _scalar(b) if _one_value(b) and not isinstance(b, ndarray) \
            else sel.values(b, name)
        if isinstance(values, ndarray):
            values = values.compute()      # read once per pass: computed once
    rank = _occurrence(sel.flat)
    order = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[order], np.arange(int(rank.max()) + 2))
    acc = sel.target
    for r in range(len(bounds) - 1):
        inverse = sel.inverse_of(order[bounds[r]:bounds[r + 1]])
        operand = () if values is None else (
            sel.scattered(values, inverse)[0] if isinstance(values, ndarray) else values,)
        acc = FUNCTIONS["where"](sel.hit(inverse), _applied(row, acc, operand, a.dtype), acc)
        if (r + 1) % _PASSES == 0 or r == len(bounds) - 2:
            node, acc = acc._resolved(), sel.target   # no pending array left reading it
            runtime_write(sel.target._destination(), node)


def _has_array(key) -> bool:
    return any(isinstance(k, (ndarray, np.ndarray, list))
               for k in (key if isinstance(key, tuple) else (key,)))


def _occurrence(flat: np.ndarray) -> np.ndarray:
    """For each selection element, how many earlier ones name the same position."""
    order = np.argsort(flat, kind="stable")
    ranked = flat[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, flat.size]))
    rank = np.empty_like(flat)
    rank[order] = np.arange(flat.size) - first
    return rank


def _applied(row: ops.Op, acc, operand: tuple, dtype: np.dtype) -> ndarray:
    """``row(acc, *operand)`` cast back to ``dtype`` as NumPy's ufunc.at does (``same_kind``)."""
    result = apply(row, acc, *operand)
    if not np.can_cast(result.dtype, dtype, "same_kind"):
        raise UnsupportedOperationError(
            f"{row.name}.at: Cannot cast ufunc '{row.name}' output from {result.dtype} to "
            f"{dtype} with casting rule 'same_kind'; cast the values first (.astype({dtype}))")
    return result.astype(dtype)


def _at_method(row: ops.Op):
    def at(a, indices, b=None, /):
        return ufunc_at(row, a, indices, b)
    at.__name__ = at.__qualname__ = "at"
    at.__doc__ = (f"``np.{row.name}.at(a, indices, b)``: {row.name} applied in place at each "
                  "index, once per occurrence (unbuffered), NumPy's results and order.")
    return at


def _ufunc_at_method(ufunc, inputs, kwargs):
    """``np.<ufunc>.at(a, indices[, b])`` with a fa array among the operands."""
    row = ops.BY_UFUNC.get(ufunc)
    if row is None or kwargs or not 2 <= len(inputs) <= 3:
        from .refusals import refusal

        raise refusal(f"np.{ufunc.__name__}.at")
    return ufunc_at(row, *inputs)


for _row in ops.OPS.values():
    if _row.rule == "ufunc" and not _row.module and _row.nin in (1, 2):
        FUNCTIONS[_row.name].at = _at_method(_row)
UFUNC_METHODS["at"] = _ufunc_at_method
ndarray._index_write = index_write
