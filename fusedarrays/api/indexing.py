"""Indexing beyond views: gathers through integer arrays and boolean masks (reads).

``fa.take(x, idx, axis)``, ``fa.take_along_axis`` and ``x[idx]`` / ``x[:, idx]`` (one integer
array among slices) are a gather node (``graph.gather``): the kernel that consumes them loads
``x``'s elements through the index values, with no copy of the gathered values. A pending
elementwise ``x`` is gathered through its leaves (``ir/gathers.py``: ``fa.take(a * 2, idx)`` is
``a[idx] * 2``, one kernel); one holding a draw or a reduction is computed first. The index may
be any pending integer expression.

**Index checks.** Index values the host knows (a NumPy array, a list, an index this module
uploaded: :func:`host_values`) are checked when the gather is built, and an out-of-range one
raises NumPy's ``IndexError`` there. An index fusedarrays holds or computes is *not* copied to
the host (that would synchronise in the middle of a lazy program): the gather is flagged
(``graph.gather`` with a site), its kernel clamps each index into range (no out-of-bounds read)
and records an out-of-range one in the device's error word, and the next evaluation point
(``.get()``, ``np.asarray``, ``item``/``float``/``int``/``bool``, ``tolist``, ``str``,
``__dlpack__``, ``__cuda_array_interface__``) raises NumPy's ``IndexError`` naming the index,
the axis and the expression, once (``runtime/indexflags.py`` says how, and about threads).
Several index arrays: each one the host does not know is wrapped and clamped on its own by a
flagged gather of ``arange(extent)`` before the offsets are summed.

Several index arrays, integers beside arrays and boolean masks (``x[i, j]``, ``x[0, :, idx]``,
``x[mask]``, ``x[:, mask]``) follow NumPy's advanced indexing (:mod:`.indexkeys` reads the key):
the index arrays broadcast together; their dimensions replace the indexed axes in place where the
advanced entries stand next to each other in the key, and come first otherwise. A mask stands
for its ``nonzero()`` arrays. Such a gather is one node too: the indexed axes' element offsets
``sum(i_k * stride_k)`` form one index over their span of the buffer (made on the host when every
index is, else a fused integer expression of the index arrays).

**Boolean masks are compacted on the device.** ``x[mask]`` with a fusedarrays mask finds the
mask's true elements there (:mod:`.compaction`: the rows' counts, their running sum, the indices
stored in order; the host reads only the count, the result's size) and gathers ``x`` through
those indices inside the kernel that consumes the selection, as for ``x[idx]``. A NumPy mask
(or list) is read on the host, where it is, and its ``nonzero()`` uploaded.

**Inside fa.fuse.** ``fa.take``, ``x[idx]``, ``x[i, idx]`` and ``fa.take_along_axis`` with an
index the function gets as an argument or computes are flagged gathers of the traced program:
one kernel with their consumer, no copy of the index, no synchronisation; each call replays
them with its own arguments, and an out-of-range index of any call raises at the next
evaluation point after it (``.get()`` of a result, ``np.asarray``, an export: as for a lazy
gather; a fused call is not one), naming the fused function. The site is a constant of the
program, so new index values never recompile. An index given as a NumPy array or a list is a
constant of the trace, checked on the host when the function is traced. A mask array is
refused there (the result's size depends on its values); a NumPy mask is a constant too.

Writes through index arrays and masks are :mod:`.scatter`'s.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import gathers, graph, layout
from ..runtime import indexflags
from . import indexkeys
from .array import _tracing, _wrap, asarray, ndarray
from .compaction import nonzero_arrays

# The host values of index arrays this module uploaded (buffer uid → flat NumPy array): nobody
# else holds those buffers, so the values never change; scatter.py reads them to recognise a
# selection written back to where it was read (``x[idx] += v``, one kernel).
_HOST_INDEX: dict[int, np.ndarray] = {}


def upload_index(host: np.ndarray) -> ndarray:
    """``host`` (an integer array) as a ``fa.ndarray`` whose values :func:`host_values` knows."""
    host = np.ascontiguousarray(host)
    array = asarray(host)
    buffer = graph.leaf_view(array._node)[0]
    _HOST_INDEX[buffer.uid] = host.reshape(-1)
    weakref.finalize(buffer, _HOST_INDEX.pop, buffer.uid, None)
    return array


def host_values(node: graph.Node) -> np.ndarray | None:
    """The values of a leaf over a buffer :func:`upload_index` made, through its view; else
    None."""
    if node.kind != "leaf":
        return None
    buffer, shape, strides, offset = graph.leaf_view(node)
    flat = _HOST_INDEX.get(buffer.uid)
    if flat is None:
        return None
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], shape, [s * item for s in strides],
                                           writeable=False)


def _no_tracing(what: str) -> None:
    if _tracing.tracer is not None:
        raise UnsupportedOperationError(
            f"{what} inside fa.fuse is not supported (the index values are checked on the "
            "host); index outside the fused function and pass the result")


def _no_mask_while_tracing(key) -> None:
    """Inside ``fa.fuse``, refuse ``x[mask]`` with a mask array fusedarrays holds (an argument,
    a value the function computes, a captured array): the selection's size depends on the
    mask's values, and a traced program has one shape for every call. A NumPy mask is a
    constant of the trace: its ``nonzero()`` is taken once, when the function is traced."""
    if _tracing.tracer is None:
        return
    for k in key if type(key) is tuple else (key,):
        if isinstance(k, ndarray) and k.dtype == np.bool_:
            raise UnsupportedOperationError(
                f"x[mask] with a fusedarrays mask (shape {k.shape}) inside fa.fuse is not "
                "supported: the result's size depends on the mask's values, and a fused "
                "function is traced once into kernels of fixed shapes. Use fa.where(mask, x, "
                "0) for a result of x's shape, x[mask] = v for a masked write, a NumPy mask "
                "(a constant of the trace), or select outside the fused function")


def _leaf_of(x: ndarray, what: str) -> graph.Node:
    """``x``'s leaf: an array holding memory, or inside ``fa.fuse`` an argument's placeholder,
    as it is; a pending expression computed first. Inside ``fa.fuse`` there is no "first"
    (the trace is one program of fused kernels), so a pending value is refused there."""
    node = x._resolved()
    if node.is_leaf:
        return node
    if _tracing.tracer is not None:
        raise UnsupportedOperationError(
            f"{what} of a pending {node.label()} inside fa.fuse is not supported: this gather "
            "reads its source from memory, and the source would need a launch of its own "
            "first. Gather from the arguments (an elementwise expression of them is gathered "
            "through its leaves: fa.take(a * 2, idx) is one kernel), or split the function")
    return x.compute()._resolved()


def take(x, indices, axis=None) -> ndarray:
    """Elements of ``x`` at ``indices`` along ``axis`` (None: of ``x`` flattened), as
    ``numpy.take``, gathered inside the kernel that consumes the result.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.take(fa.asarray(np.arange(10.0) * 2), np.array([[3, -1], [0, 0]])).get().tolist()
    [[6.0, 18.0], [0.0, 0.0]]
    """
    x = asarray(x)
    if axis is None:
        try:
            x, axis = x.reshape(-1), 0
        except layout.NotAView:     # a strided view held in memory: flattened through a copy
            x, axis = x.copy().reshape(-1), 0
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"fa.take: axis {axis} is out of bounds for an array of dimension "
                         f"{x.ndim}")
    return take_axis(x, indices, axis % x.ndim)


def take_axis(x: ndarray, indices, axis: int, named: int | None = None,
              what: str = "fa.take") -> ndarray:
    """:func:`take` along ``axis`` (in range), an index out of bounds named as axis ``named``
    (``x[key]`` names the indexed array's axis, not its view's) in the expression ``what``."""
    named = axis if named is None else named
    index, site = checked_index(indices, x.shape[axis], named, what)
    if axis:
        x = x.transpose([axis] + [a for a in range(x.ndim) if a != axis])
    result = gather0(x, index, site, what)
    if axis:    # the index's axes back to where the gathered axis was
        result = _move_front(result, index.ndim, axis, index)
    return result


def _move_front(result: ndarray, k: int, to: int, index: ndarray | None = None) -> ndarray:
    """``result`` with its first ``k`` axes moved to stand at axis ``to``. A new array, not a
    view: ``result`` is a gather nobody else holds, and a view could not stay pending through
    an in-place op (``x[:, idx] += v``, api/scatter.py). A gather of a leaf whose ``index``
    holds a pending reduction or scan (which no view enters) is made again in place, its index
    over fewer trailing unit axes, and stays pending (inside ``fa.fuse`` too)."""
    axes = list(range(k, k + to)) + list(range(k)) + list(range(k + to, result.ndim))
    try:
        return _wrap(graph.transform(result._resolved(), lambda v: layout.transpose(v, axes)))
    except layout.NotAView:
        node = result._resolved()
        if index is None or node.kind != "gather" or node.inputs[0].kind != "leaf":
            return result.transpose(axes)
        source = graph.transform(node.inputs[0], lambda v: layout.transpose(v, axes))
        idx = _index_over(index, index.shape, result.ndim - k - to)
        return _wrap(graph.gather(source, idx, *node.attrs, *node.inputs[2:]))


def checked_index(indices, extent: int, axis: int, what: str
                  ) -> tuple[ndarray, graph.Node | None]:
    """``(index array, site)``: values the host knows checked there against ``extent`` (site
    None); an index fusedarrays computed or holds (values unknown here) checked on the device
    instead, its gather flagged with a new site (``runtime/indexflags.py``): no copy to the
    host, no synchronisation."""
    if isinstance(indices, ndarray) and host_values(indices._resolved()) is None:
        _integer_index(indices.dtype, indices.size, extent, axis)
        return indices, flag_site(what, axis, extent)
    host = checked_host(indices, extent, axis)
    return (indices if isinstance(indices, ndarray) else upload_index(_narrow(host, extent)),
            None)


def flag_site(what: str, axis: int, extent: int) -> graph.Node:
    """The site scalar of a flagged gather of ``what`` along ``axis`` of ``extent``. Inside
    ``fa.fuse`` the site is a constant of the traced program, named after the function and
    kept while the program lives (``Tracer.sites``): every call launches it again."""
    tracer = _tracing.tracer
    if tracer is None:
        return graph.scalar(indexflags.new_site(what, axis, extent), np.dtype(np.int64))
    number = tracer.sites.new(f"{what} in fa.fuse function {tracer.name}", axis, extent)
    return graph.scalar(number, np.dtype(np.int64))


def _integer_index(dtype: np.dtype, size: int = 0, extent: int = 1, axis: int = 0) -> None:
    """Refuse an index array that is no integer array, and, for one whose values the host
    does not know, any index into an axis of no elements (every value is out of bounds there,
    and a clamp has nothing to clamp to)."""
    if dtype == np.bool_:
        raise IndexError("a boolean array as the index of fa.take selects by mask; use "
                         "x[mask] or fa.take(x, fa.flatnonzero(mask))")
    if dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer (or boolean) type; got "
                         f"{dtype}")
    if size and not extent:
        raise IndexError(f"index out of bounds for axis {axis} with size 0 (every index is: "
                         f"{size} indices into an empty axis)")


def _narrow(host: np.ndarray, extent: int) -> np.ndarray:
    """Host index values as int32 where ``extent`` allows: the upload copies them anyway, and
    4-byte indices halve the index's traffic and let 4-byte operands beside them take 128-bit
    accesses (mixed widths take none)."""
    return host.astype(np.int32) if extent < 2**31 else host


def checked_host(indices, extent: int, axis: int) -> np.ndarray:
    """The index values on the host, checked against ``extent`` (NumPy's ``IndexError``); an
    index array fusedarrays holds is copied there unless :func:`host_values` knows it."""
    known = host_values(indices._resolved()) if isinstance(indices, ndarray) else None
    host = (known if known is not None else indices.get() if isinstance(indices, ndarray)
            else np.asarray(indices))
    if host.dtype.kind not in "iu" and host.dtype != np.bool_ and host.size == 0 \
            and not isinstance(indices, (ndarray, np.ndarray)):
        return host.astype(np.intp)     # [] indexes nothing, as in NumPy
    _integer_index(host.dtype)
    if host.size:
        low, high = int(host.min()), int(host.max())
        bad = high if high >= extent else low if low < -extent else None
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {extent}")
    return host


def gather0(x: ndarray, index: ndarray, site: graph.Node | None = None,
            what: str = "fa.take") -> ndarray:
    """``x`` gathered along axis 0 at ``index``: shape ``index.shape + x.shape[1:]``. A
    pending elementwise ``x`` is gathered through its leaves; anything else is computed first
    (refused inside ``fa.fuse``, :func:`_leaf_of`, naming ``what``). ``site``: the gather is
    flagged (:func:`checked_index`)."""
    k, rest = index.ndim, x.ndim - 1
    idx = index._resolved()
    if rest:    # the index over the result's leading axes, constant along x's other axes
        idx = _index_over(index, index.shape, rest)
    node = x._resolved()
    if not node.is_leaf:
        try:
            return _wrap(gathers.gather_expression(node, idx, k, site=site))
        except layout.NotAView:
            node = _leaf_of(x, what)
    buffer, shape, strides, offset = graph.leaf_view(node)
    source = graph.leaf(buffer, node.dtype, (1,) * k + shape[1:], (0,) * k + strides[1:],
                        offset)
    return _wrap(graph.gather(source, idx, shape[0], strides[0], site))


def _index_over(index: ndarray, shape: tuple, m: int) -> graph.Node:
    """``index`` (broadcast to ``shape``) viewed over ``m`` more trailing unit axes, the index
    of a gather whose result is ``shape`` and then ``x``'s other axes. A pending reduction or
    scan in it stays pending (``ir/gathers.py``); a product is computed first."""
    if index.shape != shape:    # (a view; computed first where it can't be one)
        index = index._view(lambda v: layout.broadcast_to(v, shape))
    try:
        return gathers.with_unit_axes(index._resolved(), m)
    except layout.NotAView:
        return index.reshape(shape + (1,) * m)._resolved()


def take_along_axis(x, indices, axis: int = -1) -> ndarray:
    """``numpy.take_along_axis``: ``x`` gathered along ``axis`` at ``indices`` (an integer array
    of ``x``'s rank, broadcast with it on the other axes), inside the consuming kernel. A
    pending elementwise ``x`` is gathered through its leaves, as :func:`take`'s.

    >>> import fusedarrays as fa, numpy as np
    >>> x = fa.asarray(np.array([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]]))
    >>> fa.take_along_axis(x, np.array([[1], [0]]), axis=1).get().tolist()
    [[30.0], [60.0]]
    """
    x = asarray(x)
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"fa.take_along_axis: axis {axis} is out of bounds for an array of "
                         f"dimension {x.ndim}")
    axis %= x.ndim
    index, site = checked_index(indices, x.shape[axis], axis, "fa.take_along_axis")
    if index.ndim != x.ndim:
        raise ValueError(f"fa.take_along_axis: indices of dimension {index.ndim} for an array "
                         f"of dimension {x.ndim}; they must match (as in NumPy)")
    node = x._resolved()
    if not node.is_leaf:
        try:
            return _along_expression(x, index, axis, site)
        except layout.NotAView:
            node = _leaf_of(x, "fa.take_along_axis")
    buffer, shape, strides, offset = graph.leaf_view(node)
    rest = tuple(1 if a == axis else e for a, e in enumerate(shape))
    source = graph.leaf(buffer, node.dtype, rest,
                        tuple(0 if a == axis else s for a, s in enumerate(strides)), offset)
    return _wrap(graph.gather(source, index._resolved(), shape[axis], strides[axis], site))


def _along_expression(x: ndarray, index: ndarray, axis: int, site) -> ndarray:
    """:func:`take_along_axis` of a pending elementwise ``x`` through its leaves: both moved to
    gather along their first axis and broadcast on the others, the index varying along them
    (``gathers.gather_expression`` takes any index of the result's shape); raises
    ``layout.NotAView`` where the expression can't be gathered so."""
    order = [axis] + [a for a in range(x.ndim) if a != axis]
    moved, taken = x.transpose(order), index.transpose(order)
    rest = layout.broadcast_shapes(moved.shape[1:], taken.shape[1:])
    node = graph.transform(moved._resolved(),
                           lambda v: layout.broadcast_to(v, moved.shape[:1] + rest))
    idx = graph.transform(taken._resolved(),
                          lambda v: layout.broadcast_to(v, taken.shape[:1] + rest))
    result = _wrap(gathers.gather_expression(node, idx, 1, site=site))
    return _move_front(result, 1, axis) if axis else result


def getitem_array(x: ndarray, key) -> ndarray:
    """``x[key]`` for a key with index arrays or masks: NumPy's advanced indexing (module
    docstring), one gather node. Inside ``fa.fuse`` an index array the function gets or
    computes is a flagged gather of the traced program; a mask array is refused
    (:func:`_no_mask_while_tracing`)."""
    _no_mask_while_tracing(key)
    parsed = indexkeys.parse(x.shape, key)
    view = x[parsed.basic] if parsed.basic else x
    entries = indexkeys.index_arrays(parsed, _device_nonzero)
    if len(entries) == 1 and not isinstance(entries[0][1], (int, np.integer)):
        (axis, index), = entries          # one array: the gather of fa.take, along its axis
        return take_axis(view, index, axis, parsed.x_axis(axis), "x[idx]")
    axes = [a for a, _ in entries]
    return gather_axes(view, axes, [i for _, i in entries], parsed.adjacent,
                       [parsed.x_axis(a) for a in axes])


def _device_nonzero(mask: ndarray) -> tuple[ndarray, ...]:
    """A fusedarrays mask's ``nonzero()`` arrays found on the device (:mod:`.compaction`), as
    int32 where its size allows (4-byte indices halve what the gather reads)."""
    return nonzero_arrays(mask, np.int32 if mask.size < 2**31 else np.int64)


def gather_axes(view: ndarray, axes: list, indices: list, adjacent: bool,
                named: list) -> ndarray:
    """``view`` gathered at several index arrays (or integers) standing for its ``axes``: one
    gather over the span of those axes' elements, the broadcast index shape ``B`` in place of
    the axes when ``adjacent``, else first (NumPy's rule). An index out of bounds is named as
    axis ``named[k]`` of the indexed array."""
    from .creation import empty

    shapes = [np.shape(i) if not isinstance(i, ndarray) else i.shape for i in indices]
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with "
                         "shapes " + " ".join(str(tuple(s)) for s in shapes)) from None
    others = [a for a in range(view.ndim) if a not in axes]
    moved = view.transpose(list(axes) + others) if list(axes) != list(range(len(axes))) \
        else view
    extents = moved.shape[:len(axes)]
    hosts = [_checked_entry(i, n, a) for i, n, a in zip(indices, extents, named)]
    rest = moved.shape[len(axes):]
    if layout.size_of(bshape) == 0 or 0 in extents:
        result = empty(bshape + rest, view.dtype)
    else:
        node = _leaf_of(moved, "x[i, j, ...]")
        buffer, _, strides, offset = graph.leaf_view(node)
        lead, tail = strides[:len(axes)], strides[len(axes):]
        low = sum(s * (n - 1) for s, n in zip(lead, extents) if s < 0)
        span = sum(abs(s) * (n - 1) for s, n in zip(lead, extents)) + 1
        k = len(bshape)
        source = graph.leaf(buffer, node.dtype, (1,) * k + rest, (0,) * k + tail, offset + low)
        lin = _offsets(indices, hosts, extents, lead, low, span)
        try:
            idx = graph.transform(lin._resolved(), lambda v: layout.reshape(
                layout.broadcast_to(v, bshape), bshape + (1,) * len(rest)))
        except layout.NotAView:     # a pending reduction or scan among the indices
            idx = _index_over(lin, bshape, len(rest))
        result = _wrap(graph.gather(source, idx, span, 1))
    if adjacent and axes[0]:
        result = _move_front(result, len(bshape), axes[0])
    return result


def _checked_entry(index, extent: int, axis: int):
    """One entry of a several-array key: its host values, checked (an integer, or an array the
    host knows), or for an index fusedarrays computed or holds, that index wrapped and clamped
    into ``[0, extent)`` on the device by a flagged gather of ``arange(extent)`` (an
    ``ndarray``: its out-of-range values are flagged, ``runtime/indexflags.py``; no copy to the
    host). The combined offset of checked entries always lies in the span."""
    if isinstance(index, ndarray) and host_values(index._resolved()) is None:
        _integer_index(index.dtype, index.size, extent, axis)
        table = upload_index(np.arange(extent, dtype=np.int64))
        return gather0(table, index, flag_site("x[i, j, ...]", axis, extent))
    return checked_host(index, extent, axis)


def _offsets(indices: list, hosts: list, extents: tuple, strides: tuple, low: int,
             span: int) -> ndarray:
    """``sum(i_k * stride_k) - low`` (negative indices counted from the end): on the host when
    every index is a host value, else a fused integer expression of the fa arrays (an entry
    checked on the device is already wrapped: :func:`_checked_entry`)."""
    if not any(isinstance(i, ndarray) for i in indices):
        total = np.zeros((), np.int64)
        for h, n, s in zip(hosts, extents, strides):
            h = h.astype(np.int64)
            total = total + np.where(h < 0, h + n, h) * s
        return upload_index(_narrow(total - low, span))
    from .elementwise import FUNCTIONS

    total = None
    for i, h, n, s in zip(indices, hosts, extents, strides):
        if isinstance(h, ndarray):     # wrapped and clamped on the device
            total = h * s if total is None else total + h * s
            continue
        i = asarray(i).astype(np.int64)
        term = FUNCTIONS["where"](i < 0, i + n, i) * s
        total = term if total is None else total + term
    return total - low


ndarray._take = getitem_array
