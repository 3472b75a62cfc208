"""Indexing beyond views: gathers and writes through integer arrays, boolean-mask writes.

``fa.take(x, idx, axis)``, ``fa.take_along_axis`` and ``x[idx]`` / ``x[:, idx]`` (one integer
array among slices, NumPy's or fusedarrays') are a gather node (``graph.gather``): the kernel
that consumes them loads ``x``'s elements through the index values, with no copy of the
gathered values (a pending ``x`` is computed first: the gather reads memory; the index may be
any pending integer expression). The index values are checked on the host when the gather is
built (an out-of-range index raises NumPy's ``IndexError``); an index held by fusedarrays is
copied to the host for that check (a synchronisation). Other advanced indexing (several index
arrays, an array beside integers) raises ``IndexError``.

``x[idx] = v`` and ``x[:, idx] = v`` (and ``x[idx] += v``, which Python runs as a gather and a
write) rewrite the indexed axis in one kernel: ``where(hit, v gathered through the inverse
index, x)``, the inverse index (for each position along the axis, the last index naming it)
made on the host from the checked values: NumPy's results, repeated indices included (the last
value wins), at the cost of one pass over ``x`` rather than over the indexed rows alone.

``x[mask] = v`` (``mask`` a boolean array of ``x``'s shape, ``v`` a scalar or a one-element
array) is ``x[...] = where(mask, v, x)``: one kernel, no compaction, and the same result as
NumPy's. Reading ``x[mask]`` (a data-dependent size) and assigning an array of the selected
elements' values in order are not supported yet; they raise ``IndexError`` naming the
alternative.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import graph, layout
from .array import _tracing, _wrap, asarray, ndarray


def is_mask(key) -> bool:
    """Whether ``key`` is a boolean array (fa or NumPy): a mask, not a basic index."""
    return isinstance(key, (ndarray, np.ndarray)) and key.dtype == np.bool_


def masked_write(x: ndarray, mask, value) -> None:
    """``x[mask] = value`` as ``x[...] = where(mask, value, x)``."""
    from .elementwise import FUNCTIONS

    if tuple(mask.shape) != x.shape:
        raise IndexError(f"x[mask] = v: the mask's shape {tuple(mask.shape)} must equal the "
                         f"array's {x.shape} (a mask over leading axes is not supported)")
    if isinstance(value, (ndarray, np.ndarray)) and value.size != 1:
        raise IndexError(f"x[mask] = v with an array v of shape {value.shape} assigns v's values "
                         "to the selected elements in order, which fusedarrays does not support; "
                         "a scalar v is supported, and fa.where(mask, v, x) chooses elementwise")
    if isinstance(value, (ndarray, np.ndarray)) and value.ndim:
        value = value.reshape(())
    x[...] = FUNCTIONS["where"](mask, value, x)


def take(x, indices, axis=None) -> ndarray:
    """Elements of ``x`` at ``indices`` along ``axis`` (None: of ``x`` flattened), as
    ``numpy.take``, gathered inside the kernel that consumes the result.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.take(fa.asarray(np.arange(10.0) * 2), np.array([[3, -1], [0, 0]])).get().tolist()
    [[6.0, 18.0], [0.0, 0.0]]
    """
    if _tracing.tracer is not None:
        raise UnsupportedOperationError(
            "fa.take and x[idx] inside fa.fuse are not supported (the gathered array and the "
            "index values are checked on the host); gather outside and pass the result")
    x = asarray(x)
    if axis is None:
        try:
            x, axis = x.reshape(-1), 0
        except layout.NotAView:     # a strided view held in memory: flattened through a copy
            x, axis = x.copy().reshape(-1), 0
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"fa.take: axis {axis} is out of bounds for an array of dimension "
                         f"{x.ndim}")
    axis %= x.ndim
    index = _checked_index(indices, x.shape[axis], axis)
    if axis:
        x = x.transpose([axis] + [a for a in range(x.ndim) if a != axis])
    result = _gather0(x, index)
    if axis:    # the index's axes back to where the gathered axis was
        k = index.ndim
        result = result.transpose(list(range(k, k + axis)) + list(range(k))
                                  + list(range(k + axis, result.ndim)))
    return result


def _checked_index(indices, extent: int, axis: int) -> ndarray:
    """The index array, its values checked on the host against ``extent``."""
    host = _checked_host(indices, extent, axis)
    return indices if isinstance(indices, ndarray) else asarray(host)


def _checked_host(indices, extent: int, axis: int) -> np.ndarray:
    """The index values on the host, checked against ``extent`` (NumPy's ``IndexError``)."""
    host = indices.get() if isinstance(indices, ndarray) else np.asarray(indices)
    if host.dtype == np.bool_:
        raise IndexError("reading x[mask] (a boolean mask: its size depends on the data) is not "
                         "supported; x[mask] = v is (a fused where), and fa.where(mask, x, fill) "
                         "or x.get()[mask] read")
    if host.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer type; got {host.dtype}")
    if host.size:
        low, high = int(host.min()), int(host.max())
        bad = high if high >= extent else low if low < -extent else None
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {extent}")
    return host


def _gather0(x: ndarray, index: ndarray) -> ndarray:
    """``x`` gathered along axis 0 at ``index``: shape ``index.shape + x.shape[1:]``."""
    node = x.compute()._resolved()      # the gathered array holds memory
    buffer, shape, strides, offset = graph.leaf_view(node)
    k, rest = index.ndim, x.ndim - 1
    source = graph.leaf(buffer, node.dtype, (1,) * k + shape[1:], (0,) * k + strides[1:],
                        offset)
    idx = index._resolved()
    if rest:    # the index over the result's leading axes, constant along x's other axes
        idx = graph.transform(idx, lambda v: layout.reshape(v, index.shape + (1,) * rest))
    return _wrap(graph.gather(source, idx, shape[0], strides[0]))


def take_along_axis(x, indices, axis: int) -> ndarray:
    """``numpy.take_along_axis``: ``x`` gathered along ``axis`` at ``indices`` (an integer array
    of ``x``'s rank, broadcast with it on the other axes), inside the consuming kernel.

    >>> import fusedarrays as fa, numpy as np
    >>> x = fa.asarray(np.array([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]]))
    >>> fa.take_along_axis(x, np.array([[1], [0]]), axis=1).get().tolist()
    [[30.0], [60.0]]
    """
    if _tracing.tracer is not None:
        raise UnsupportedOperationError(
            "fa.take_along_axis inside fa.fuse is not supported (the index values are checked "
            "on the host); gather outside and pass the result")
    x = asarray(x)
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"fa.take_along_axis: axis {axis} is out of bounds for an array of "
                         f"dimension {x.ndim}")
    axis %= x.ndim
    index = _checked_index(indices, x.shape[axis], axis)
    if index.ndim != x.ndim:
        raise ValueError(f"fa.take_along_axis: indices of dimension {index.ndim} for an array "
                         f"of dimension {x.ndim}; they must match (as in NumPy)")
    node = x.compute()._resolved()
    buffer, shape, strides, offset = graph.leaf_view(node)
    rest = tuple(1 if a == axis else e for a, e in enumerate(shape))
    source = graph.leaf(buffer, node.dtype, rest,
                        tuple(0 if a == axis else s for a, s in enumerate(strides)), offset)
    return _wrap(graph.gather(source, index._resolved(), shape[axis], strides[axis]))


def _is_index_array(k) -> bool:
    return isinstance(k, (ndarray, np.ndarray, list))


def _array_axis(x: ndarray, key) -> tuple[tuple, int, object]:
    """For ``key`` holding one integer array among slices, ``None`` and ``...``: the basic
    key with ``:`` in the array's place, the axis the array indexes in ``x[basic]``, and the
    array. Anything else raises ``IndexError``."""
    arrays = [j for j, k in enumerate(key) if _is_index_array(k)]
    if len(arrays) != 1 or any(isinstance(k, (int, np.integer)) for k in key):
        raise IndexError("only one integer array among slices, None and ... is supported as an "
                         "index (several index arrays, or an array beside integers, is advanced "
                         "indexing fusedarrays does not support); index in steps, e.g. "
                         "x[i][:, idx]")
    (at,) = arrays
    basic = key[:at] + (slice(None),) + key[at + 1:]
    if any(k is Ellipsis for k in key[:at]):
        after = sum(1 for k in key[at + 1:] if k is not None and k is not Ellipsis)
        axis = x[basic].ndim - 1 - after - sum(1 for k in key[at + 1:] if k is None)
    else:
        axis = at
    return basic, axis, key[at]


def getitem_array(x: ndarray, key) -> ndarray:
    """``x[idx]`` and ``x[..., idx, :]``: one integer array among slices, ``None`` and ``...``
    (no integers beside it, which NumPy would broadcast with it), a gather along the axis it
    stands for, its dimensions where it stands (NumPy's rule for one advanced index)."""
    if not isinstance(key, tuple):
        return take(x, key, axis=0)
    basic, axis, index = _array_axis(x, key)
    return take(x[basic], index, axis=axis)


def index_write(x: ndarray, key, value) -> None:
    """``x[mask] = v`` (:func:`masked_write`) and ``x[idx] = v``, ``x[:, idx] = v`` (one
    integer array among slices): NumPy's assignment, repeated indices included (the last value
    wins), as one fused rewrite of the indexed axis: ``where(hit, v gathered by the inverse
    index, x)``, the inverse index made on the host from the checked index values."""
    if is_mask(key) or (isinstance(key, list) and np.asarray(key).dtype == np.bool_):
        masked_write(x, np.asarray(key) if isinstance(key, list) else key, value)
        return
    if isinstance(key, tuple):
        basic, axis, index = _array_axis(x, key)
        target = x[basic]
    else:
        target, axis, index = x, 0, key
    if axis:
        target = target.transpose([axis] + [a for a in range(target.ndim) if a != axis])
    _scatter0(target, index, value, axis)


def _scatter0(target: ndarray, index, value, axis: int) -> None:
    from .creation import empty
    from .elementwise import FUNCTIONS
    from .manipulation import broadcast_to

    extent, rest = target.shape[0], target.shape[1:]
    host = _checked_host(index, extent, axis)
    flat = np.where(host < 0, host + extent, host).reshape(-1).astype(np.int64)
    if not flat.size:
        return
    inverse = np.full(extent, -1, np.int64)
    inverse[flat] = np.arange(flat.size)          # NumPy's assignment: the last one stays
    hit = (inverse >= 0).reshape((extent,) + (1,) * len(rest))
    if isinstance(value, (bool, int, float, complex, np.generic)) or np.size(value) == 1:
        source = value if not isinstance(value, (ndarray, np.ndarray)) else value.reshape(())
    else:
        # v broadcasts to NumPy's indexing result (the index's axes where the array stood),
        # then goes into index order: the index's axes first, as ``target`` has them
        k = host.ndim
        values = broadcast_to(asarray(value), rest[:axis] + host.shape + rest[axis:])
        if axis:
            values = values.transpose(list(range(axis, axis + k)) + list(range(axis))
                                      + list(range(axis + k, values.ndim)))
        rows = empty((flat.size,) + rest, values.dtype)
        rows.reshape(host.shape + rest)[...] = values
        source = take(rows, np.maximum(inverse, 0), axis=0)
    target[...] = FUNCTIONS["where"](hit, source, target)


ndarray._index_write = index_write
ndarray._take = getitem_array
