"""Manipulation functions: ``broadcast_arrays broadcast_to concat stack expand_dims flip moveaxis
permute_dims reshape roll squeeze tile repeat unstack`` (and NumPy's ``transpose``,
``concatenate``).

Where it sits: over :mod:`.array`, re-exported by the namespace. Views are metadata on the
leaves under an array (:meth:`ndarray._view`): ``broadcast_to``, ``broadcast_arrays``,
``expand_dims``, ``flip``, ``moveaxis``, ``permute_dims``, ``squeeze``, ``unstack`` and a
``reshape`` that needs no copy never copy and never cut a fusion. The others need an index map
that the kernels don't express yet, so they evaluate now into new memory: ``concat`` and
``stack`` write each input into its slice of the result (one launch per distinct input shape:
``stack`` is one launch), ``roll`` is a ``concat`` of two slices, ``tile`` and ``repeat`` one
copy of a broadcast view. Their results are computed arrays (``fa.explain`` shows a leaf).
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import ShapeError
from ..ir import dtypes, graph, layout
from ..runtime import realize
from ..runtime.records import profiling
from .array import _as_node, _no_host_value_while_tracing, asarray, ndarray
from .creation import empty


def broadcast_to(x, /, shape) -> ndarray:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return asarray(x)._view(lambda v: layout.broadcast_to(v, shape))


def broadcast_arrays(*arrays) -> list[ndarray]:
    """Views of the arrays broadcast to their common shape."""
    arrays = [asarray(a) for a in arrays]
    shape = layout.broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def expand_dims(x, /, axis=0) -> ndarray:
    """``x`` with a new axis of extent 1 at ``axis`` (a view); an axis past the result's
    dimensions raises ``IndexError``, as the standard asks."""
    x = asarray(x)
    for a in (axis,) if isinstance(axis, int) else axis:
        ndim = x.ndim + (1 if isinstance(axis, int) else len(axis))
        if not -ndim <= a < ndim:
            raise IndexError(f"expand_dims: axis {a} is out of range for a result of {ndim} "
                             "dimensions")
    return x._view(lambda v: layout.expand_dims(v, axis))


def squeeze(x, /, axis=None) -> ndarray:
    return asarray(x).squeeze(axis)


def reshape(x, /, shape, *, copy: bool | None = None) -> ndarray:
    """``x`` with a new shape: a view where the strides allow, else (not with ``copy=False``,
    which raises ``ValueError``) a copy. ``copy=True`` always copies."""
    x = asarray(x)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if copy is False:
        try:
            layout.reshape((x.shape, layout.contiguous_strides(x.shape), 0), shape)
            if not x.pending:
                _, lshape, lstrides, offset = graph.leaf_view(x._resolved())
                layout.reshape((lshape, lstrides, offset), shape)
        except layout.NotAView:
            raise ValueError(f"reshape(copy=False): shape {x.shape} with its strides can't "
                             f"be viewed as {shape} without a copy") from None
    out = x.reshape(shape)
    return out.copy() if copy else out


def transpose(x, /, axes=None) -> ndarray:
    return asarray(x).transpose(axes)


def permute_dims(x, /, axes) -> ndarray:
    """The axes of ``x`` in the order ``axes`` (a view)."""
    return asarray(x).transpose(tuple(axes))


def matrix_transpose(x, /) -> ndarray:
    """The last two axes of ``x`` swapped (``x.mT``, a view)."""
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got shape {x.shape}")
    return x.transpose(tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _axis(axis, ndim: int, what: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{what}: axis {axis} is out of range for {ndim} dimensions")
    return axis % ndim


def moveaxis(x, source, destination, /) -> ndarray:
    """``x`` with the axes ``source`` moved to ``destination`` (a view)."""
    x = asarray(x)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need as many axes")
    src = [_axis(a, x.ndim, "moveaxis") for a in src]
    dst = [_axis(a, x.ndim, "moveaxis") for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axis")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.transpose(tuple(order))


def flip(x, /, *, axis=None) -> ndarray:
    """``x`` with the order of elements along ``axis`` (all axes by default) reversed: a view
    with negative steps."""
    x = asarray(x)
    axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = {_axis(a, x.ndim, "flip") for a in axes}
    key = tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(x.ndim))
    return x[key]


def unstack(x, /, *, axis: int = 0) -> tuple[ndarray, ...]:
    """The slices of ``x`` along ``axis``, as views."""
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError("unstack needs an array of at least one dimension")
    axis = _axis(axis, x.ndim, "unstack")
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


def concat(arrays, /, *, axis: int | None = 0) -> ndarray:
    """The arrays joined along ``axis`` (flattened first where ``axis=None``), in new memory:
    each input is written into its slice of the result, one launch per distinct input shape
    (the inputs' pending expressions fused into those writes)."""
    if profiling[0] is not None and profiling[0].outside():
        return profiling[0].evaluate("fa.concat", concat, arrays, axis=axis)
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("concat needs at least one array")
    _no_host_value_while_tracing(tuple(arrays), "fa.concat/stack/roll (one copy kernel)")
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    ndim = arrays[0].ndim
    if ndim == 0 or any(a.ndim != ndim for a in arrays):
        raise ShapeError(f"concat: arrays need one number (≥ 1) of dimensions; got shapes "
                         f"{[a.shape for a in arrays]}")
    axis = _axis(axis, ndim, "concat")
    rest = {a.shape[:axis] + a.shape[axis + 1:] for a in arrays}
    if len(rest) > 1:
        raise ShapeError(f"concat along axis {axis}: the other extents differ in "
                         f"{[a.shape for a in arrays]}")
    dt = dtypes.promote([a.dtype for a in arrays])
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = empty(tuple(shape), dt)
    buffer, oshape, ostrides, offset = graph.leaf_view(out._node)
    groups: dict[tuple, list] = {}
    start = 0
    for a in arrays:
        n = a.shape[axis]
        key = (slice(None),) * axis + (slice(start, start + n),)
        start += n
        if a.size == 0:
            continue
        node = _as_node(a)
        if node.dtype != dt:
            node = graph.cast(node, dt)
        target = (buffer, dt, *layout.getitem((oshape, ostrides, offset), key))
        groups.setdefault(a.shape, []).append((node, target))
    for outputs in groups.values():
        realize.run(outputs)
    return out


def stack(arrays, /, *, axis: int = 0) -> ndarray:
    """The arrays (of one shape) joined along a new ``axis``: one launch into new memory."""
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("stack needs at least one array")
    if len({a.shape for a in arrays}) > 1:
        raise ShapeError(f"stack: all arrays need one shape; got {[a.shape for a in arrays]}")
    axis = _axis(axis, arrays[0].ndim + 1, "stack")
    return concat([expand_dims(a, axis=axis) for a in arrays], axis=axis)


def roll(x, /, shift, *, axis=None) -> ndarray:
    """``x`` shifted cyclically by ``shift`` along ``axis`` (flattened where None), in new
    memory (a ``concat`` of two slices per axis)."""
    x = asarray(x)
    if axis is None:
        return roll(x.reshape(-1), shift, axis=0).reshape(x.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) != len(axes):
        shifts, axes = np.broadcast_arrays(np.asarray(shifts), np.asarray(axes))
    out = x
    for s, a in zip(shifts, axes):
        a = _axis(int(a), x.ndim, "roll")
        n = x.shape[a]
        s = int(s) % n if n else 0
        if s:
            head = (slice(None),) * a
            out = concat([out[head + (slice(n - s, None),)], out[head + (slice(0, n - s),)]],
                         axis=a)
    return out if out is not x else x.copy()


def _copy_reshaped(view: ndarray, shape: tuple) -> ndarray:
    """A contiguous copy of ``view`` (broadcast data) with ``shape``: one copy kernel."""
    return view.copy().compute().reshape(shape)


def tile(x, repetitions, /) -> ndarray:
    """``x`` repeated ``repetitions[i]`` times along axis ``i``, as NumPy's ``tile``: one copy
    kernel of a broadcast view."""
    x = asarray(x)
    # NumPy's np.tile (dispatched here) takes one int too; the standard's tile takes a tuple
    reps = tuple(map(operator.index, np.atleast_1d(np.asarray(repetitions, dtype=object))))
    ndim = max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - x.ndim) + x.shape
    spread = x.reshape(tuple(v for e in shape for v in (1, e)))
    view = broadcast_to(spread, tuple(v for r, e in zip(reps, shape) for v in (r, e)))
    return _copy_reshaped(view, tuple(r * e for r, e in zip(reps, shape)))


def repeat(x, repeats, /, *, axis: int | None = None) -> ndarray:
    """Each element of ``x`` repeated ``repeats`` times along ``axis`` (flattened where None).
    One int: one copy kernel of a broadcast view. An array of counts (one per element along the
    axis, or one for all): the counts are read on the host (a ``fa.ndarray`` of them is copied
    there: a synchronisation, as the result's shape depends on them) and the result is a gather
    of ``x`` (:func:`.indexing.take`), made inside the kernel that consumes it."""
    x = asarray(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim, "repeat")
    if not isinstance(repeats, (int, np.integer)):
        return _repeat_counts(x, repeats, axis)
    repeats = int(repeats)
    if repeats < 0:
        raise ValueError(f"repeat: repeats must be ≥ 0, got {repeats}")
    spread = expand_dims(x, axis=axis + 1)
    shape = x.shape[:axis + 1] + (repeats,) + x.shape[axis + 1:]
    out_shape = x.shape[:axis] + (x.shape[axis] * repeats,) + x.shape[axis + 1:]
    return _copy_reshaped(broadcast_to(spread, shape), out_shape)


def _repeat_counts(x: ndarray, repeats, axis: int) -> ndarray:
    """:func:`repeat` with an array of counts: ``x`` gathered along ``axis`` at each index
    ``i`` repeated ``repeats[i]`` times (NumPy's errors for counts of another length, negative
    or not integers)."""
    from .indexing import _no_tracing, take, upload_index

    _no_tracing("fa.repeat with an array of counts")
    counts = repeats.get() if isinstance(repeats, ndarray) else np.asarray(repeats)
    if counts.dtype.kind not in "iub" or counts.ndim > 1:
        raise TypeError(f"repeat: repeats must be an int or a 1-d array of integers; got "
                        f"{counts.ndim}-d {counts.dtype}")
    extent = x.shape[axis]
    if counts.size not in (1, extent):
        raise ValueError(f"repeat: {counts.size} counts for an axis of {extent} elements; give "
                         f"one count, or one per element")
    if (counts < 0).any():
        raise ValueError("repeat: repeats may not contain negative values")
    index = np.repeat(np.arange(extent, dtype=np.intp), np.broadcast_to(counts, (extent,)))
    return take(x, upload_index(index), axis=axis)
