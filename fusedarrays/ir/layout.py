"""Shapes, strides and views: broadcasting, basic indexing, reshape, and dimension collapsing.

Pure functions over ``(shape, strides, offset)`` triples, strides and offsets counted in elements.
The array layer uses them to make views (metadata only, never a copy); the planner uses
:func:`collapse` to merge dimensions that every operand walks contiguously, :func:`schedule` to
choose how the kernel walks them and each operand's layout class, and :func:`vector_width` for the
width of its accesses (all three are in the kernel's structure key).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..errors import ShapeError


class NotAView(Exception):
    """This view of this layout needs a copy (a reshape of broadcast or transposed data)."""


def contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: tuple, strides: tuple) -> bool:
    return all(e == 1 or s == c for e, s, c in zip(shape, strides, contiguous_strides(shape)))


def size_of(shape: tuple) -> int:
    return math.prod(shape)


# Memos of the view functions that every operator call or view of a broadcast or indexed
# operand runs: their arguments are tuples of ints (hashable, immutable), so a result is the
# same tuple every time; each memo starts over past _MEMO_MAX entries (a loop of new shapes).
_MEMO_MAX = 4096
_broadcast_memo: dict[tuple, tuple] = {}
_getitem_memo: dict[tuple, tuple] = {}


def broadcast_shapes(*shapes: tuple) -> tuple:
    found = _broadcast_memo.get(shapes)
    if found is None:
        found = _broadcast_shapes(shapes)
        if len(_broadcast_memo) >= _MEMO_MAX:
            _broadcast_memo.clear()
        _broadcast_memo[shapes] = found
    return found


def _broadcast_shapes(shapes: tuple) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(ndim):
        extents = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        extents.discard(1)
        if len(extents) > 1:
            raise ShapeError(f"shapes {' and '.join(map(str, shapes))} do not broadcast "
                             f"(axis {axis} has extents {sorted(extents)})")
        result.append(extents.pop() if extents else 1)
    return tuple(result)


def broadcast_strides(shape: tuple, strides: tuple, target: tuple) -> tuple:
    """Strides of a ``shape`` view broadcast to ``target``: stride 0 on new and size-1 axes."""
    if shape == target and 1 not in shape:
        return tuple(strides)
    if len(shape) > len(target):
        raise ShapeError(f"cannot broadcast shape {shape} to {target}")
    pad = len(target) - len(shape)
    out = [0] * pad
    for extent, stride, want in zip(shape, strides, target[pad:]):
        if extent == want:
            out.append(stride if want != 1 else 0)
        elif extent == 1:
            out.append(0)
        else:
            raise ShapeError(f"cannot broadcast shape {shape} to {target}")
    return tuple(out)


def broadcast_to(view, target: tuple):
    shape, strides, offset = view
    # Python ints: a client's NumPy integers (SciPy broadcasts to shapes it computed with
    # NumPy) would reach the launch grid, which takes only ints
    target = tuple(operator.index(e) for e in target)
    return target, broadcast_strides(shape, strides, target), offset


def transpose(view, axes=None):
    shape, strides, offset = view
    if axes is None:  # .T: reversed axes, always a permutation
        return tuple(shape)[::-1], tuple(strides)[::-1], offset
    axes = tuple(axes)
    if sorted(a % len(shape) if shape else a for a in axes) != list(range(len(shape))):
        raise ShapeError(f"axes {axes} are not a permutation of the {len(shape)} axes")
    axes = tuple(a % len(shape) for a in axes)
    return tuple(shape[a] for a in axes), tuple(strides[a] for a in axes), offset


def expand_dims(view, axis):
    shape, strides, offset = view
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = len(shape) + len(axes)
    axes = sorted(a % ndim for a in axes)
    shape, strides = list(shape), list(strides)
    for a in axes:
        shape.insert(a, 1)
        strides.insert(a, 0)
    return tuple(shape), tuple(strides), offset


def squeeze(view, axis=None):
    shape, strides, offset = view
    if axis is None:
        keep = [i for i, e in enumerate(shape) if e != 1]
    else:
        axes = {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}
        bad = [a for a in axes if shape[a] != 1]
        if bad:
            raise ShapeError(f"cannot squeeze axis {bad[0]} of shape {shape}: its extent is not 1")
        keep = [i for i in range(len(shape)) if i not in axes]
    return tuple(shape[i] for i in keep), tuple(strides[i] for i in keep), offset


def reshape(view, newshape):
    """A view with ``newshape`` over the same elements in C order, or :class:`NotAView`."""
    shape, strides, offset = view
    newshape = _resolve_newshape(shape, newshape)
    size = size_of(shape)
    if size == 0 or size == 1:
        return newshape, contiguous_strides(newshape), offset
    # Walk old and new axes in groups of equal element count; each old group must be one
    # contiguous run (strides chaining) for the new group to be expressible by strides.
    old = [(e, s) for e, s in zip(shape, strides) if e != 1]
    new_strides = [0] * len(newshape)
    oi = ni = 0
    while oi < len(old) and ni < len(newshape):
        op_count, np_count = old[oi][0], newshape[ni]
        oj, nj = oi + 1, ni + 1
        while op_count != np_count:
            if op_count < np_count:
                op_count *= old[oj][0]
                oj += 1
            else:
                np_count *= newshape[nj]
                nj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][1] * old[k + 1][0]:
                raise NotAView(f"cannot reshape {shape} with strides {strides} to {newshape}")
        step = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            new_strides[k] = step
            step *= newshape[k]
        oi, ni = oj, nj
    return newshape, tuple(new_strides), offset


def _resolve_newshape(shape: tuple, newshape) -> tuple:
    newshape = (newshape,) if isinstance(newshape, int) else tuple(operator.index(e)
                                                                    for e in newshape)
    size = size_of(shape)
    if newshape.count(-1) > 1:
        raise ShapeError(f"can only specify one unknown dimension in {newshape}")
    if -1 in newshape:
        known = size_of(tuple(e for e in newshape if e != -1))
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape array of size {size} into shape {newshape}")
        newshape = tuple(size // known if e == -1 else e for e in newshape)
    if size_of(newshape) != size or any(e < 0 for e in newshape):
        raise ShapeError(f"cannot reshape array of size {size} into shape {newshape}")
    return newshape


def getitem(view, key):
    """Basic indexing: ints, slices (with steps), ``None`` and ``...``."""
    memo = _index_memo_key(key)
    if memo is None:
        return _getitem(view, key)
    memo = (view, memo)
    found = _getitem_memo.get(memo)
    if found is None:
        found = _getitem(view, key)
        if len(_getitem_memo) >= _MEMO_MAX:
            _getitem_memo.clear()
        _getitem_memo[memo] = found
    return found


def _index_memo_key(key):
    """``key`` as a hashable value (slices are not hashable before Python 3.12) when every
    part is ``None``, ``...``, a Python int or a slice of Python ints and ``None``: the parts
    whose meaning is their value alone. None for any other key (it is not memoised)."""
    if type(key) is not tuple:
        key = (key,)
    parts = []
    for k in key:
        kind = type(k)
        if kind is slice:
            start, stop, step = k.start, k.stop, k.step
            if not ((start is None or type(start) is int) and (stop is None or type(stop) is int)
                    and (step is None or type(step) is int)):
                return None
            parts.append((start, stop, step))   # a tuple: no other part is one
        elif kind is int or k is None or k is Ellipsis:
            parts.append(k)
        else:
            return None
    return tuple(parts)


def _getitem(view, key):
    shape, strides, offset = view
    key = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, (bool, np.bool_)) for k in key):  # not the ints 0 and 1: masks
        raise IndexError("boolean indices select by mask (advanced indexing), which is not "
                         "supported; index with integers, slices, None and ...")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > len(shape):
        raise IndexError(f"too many indices: array is {len(shape)}-dimensional, "
                         f"but {consumed} were indexed")
    # identity, never ==: an array in the key would compare element-wise
    at = next((j for j, k in enumerate(key) if k is Ellipsis), None)
    if at is not None:
        key = key[:at] + (slice(None),) * (len(shape) - consumed) + key[at + 1:]
    else:
        key = key + (slice(None),) * (len(shape) - consumed)
    out_shape, out_strides, axis = [], [], 0
    for k in key:
        if k is None:
            out_shape.append(1)
            out_strides.append(0)
            continue
        extent, stride = shape[axis], strides[axis]
        axis += 1
        if isinstance(k, slice):
            start, stop, step = k.indices(extent)
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(stride * step)
            offset += start * stride if out_shape[-1] else 0
            continue
        try:
            if getattr(k, "ndim", 0):  # an array, even of one element, indexes by position
                raise TypeError
            index = operator.index(k)
        except TypeError:
            if getattr(getattr(k, "dtype", None), "kind", "") == "b":
                raise IndexError("reading x[mask] (a boolean mask: its size depends on the "
                                 "data) is not supported; x[mask] = v is (a fused where), and "
                                 "fa.where(mask, x, fill) or x.get()[mask] read") from None
            raise IndexError(f"only integers, slices, None and ... are valid indices; got "
                             f"{type(k).__name__} (advanced indexing is not supported)") from None
        if not -extent <= index < extent:
            raise IndexError(f"index {index} is out of bounds for axis {axis - 1} with size "
                             f"{extent}")
        offset += (index % extent) * stride
    return tuple(out_shape), tuple(out_strides), offset


def collapse(shape: tuple, stride_sets: list[tuple]) -> tuple[tuple, list[tuple]]:
    """Drop size-1 axes and merge neighbours that every operand walks as one run.

    Returns the collapsed shape and each operand's strides over it; a fully contiguous kernel
    collapses to one dimension, whatever its rank.
    """
    keep = [i for i, e in enumerate(shape) if e != 1]
    dims = [shape[i] for i in keep]
    sets = [[s[i] for i in keep] for s in stride_sets]
    k = len(dims) - 1
    while k > 0:
        if all(st[k - 1] == st[k] * dims[k] for st in sets):
            dims[k - 1] *= dims[k]
            for st in sets:
                st[k - 1] = st[k]
                del st[k]
            del dims[k]
        k -= 1
    if not dims:
        dims, sets = [1], [[1] for _ in sets]
    return tuple(dims), [tuple(st) for st in sets]


# -- schedules and vector width ---------------------------------------------------------------
VECTOR_BYTES = 16          # one 128-bit load or store per lane group
ROWS_MIN_INNER = 128       # a 2-D kernel walks rows only when a row fills at least half a block
TILE = 64                  # transposed operands are staged through TILE x TILE shared tiles
TILE_THREADS = (32, 8)     # ... by blocks of 32 x 8 threads (a warp spans 32 columns or rows)
TILE_LANES = 4             # a vectorised tile moves 4 elements (16 bytes) per thread and phase
# Lanes of one 16-byte access per dtype (a complex element is its two parts side by side: a
# complex64 access holds two elements, a complex128 access one). A dtype absent here has no
# vector access, and a contiguous operand of it keeps its kernel element by element.
VECTOR_LANES = {"f32": 4, "i32": 4, "u32": 4, "f16": 8, "bf16": 8, "c64": 2, "c128": 1}
# A thread's group of elements is as many as the widest operand's access holds; an operand with
# fewer lanes moves them in several 16-byte accesses, at most this many (float16 beside
# complex128 would take 8 of them, 128 bytes of registers per operand: element by element).
MAX_ACCESSES = 4


# Static shared memory a block may take: the tiles of the transposed operands must fit.
SHARED_BYTES = 48 * 1024


def schedule(dims: tuple, stride_sets: list[tuple],
             tile_itemsizes: list[int] | None = None) -> tuple[str, list[str]]:
    """How a kernel walks ``dims`` and each operand's layout class under that walk.

    ``flat`` (rank 1): ``C`` unit stride, ``B`` stride 0, ``S`` other. ``rows`` (rank 2, long rows;
    a 2-D grid, no division per element): ``C`` contiguous along the row, ``B`` constant along
    the row, ``S`` other. ``tiled``: ``rows`` where some input walks columns contiguously (``T``, a
    transposed operand): it is read through shared-memory tiles so reads and writes both
    coalesce. ``nd`` (rank ≥ 3 or short rows): ``C`` contiguous, ``S`` other, coordinates by
    division. ``tile_itemsizes`` (bytes of one tile element per operand) bounds the tiles: a
    transposed operand whose tile would pass ``SHARED_BYTES`` with those before it is read
    strided (``S``) instead.
    """
    if len(dims) == 1:
        return "flat", ["C" if s == (1,) else "B" if s == (0,) else "S" for s in stride_sets]
    if len(dims) == 2 and dims[1] >= ROWS_MIN_INNER:
        classes = ["C" if s1 == 1 else "B" if s1 == 0 else "T" if s0 == 1 else "S"
                   for s0, s1 in stride_sets]
        if "T" in classes and dims[0] >= TILE:
            shared = 0
            for k, cls in enumerate(classes):
                if cls == "T":
                    shared += TILE * (TILE + 1) * (tile_itemsizes[k] if tile_itemsizes else 8)
                    if shared > SHARED_BYTES:
                        classes[k] = "S"
            return ("tiled" if "T" in classes else "rows"), classes
        return "rows", ["S" if c == "T" else c for c in classes]
    contiguous = contiguous_strides(dims)
    return "nd", ["C" if tuple(s) == contiguous else "S" for s in stride_sets]


def lowest_bit(value: int) -> int:
    """The largest power of two dividing ``value`` (``1 << 30`` for 0: aligned to anything)."""
    return value & -value if value else 1 << 30


def vector_width(kind: str, operands: list[tuple[str, str, tuple, int]]) -> int:
    """Elements per thread per group: the lanes of the widest vector operand's 16-byte access.

    ``operands`` holds ``(class, dtype code, strides, byte address alignment)``; the vector
    operands are the ``C`` ones (and in a ``tiled`` walk the ``T`` ones, read 16 bytes down a
    column of the tile). Each must have a 128-bit access for its dtype (:data:`VECTOR_LANES`), a
    16-byte aligned first element and a stride between rows (columns, for ``T``) that keeps every
    row's start aligned. The group holds the most lanes any of them has; one with fewer lanes
    moves the group in several accesses (float32 beside complex64: 4 elements, the complex64
    operand in two 16-byte accesses), at most :data:`MAX_ACCESSES`. A tiled walk's groups are 4
    elements (its thread mapping is built for it) and its ``T`` operands 4-lane dtypes. Broadcast
    and strided operands never lower the width: they are read per lane or per row.
    """
    if kind not in ("flat", "rows", "tiled"):
        return 1
    vector = [(cls, code, strides, align) for cls, code, strides, align in operands
              if cls in ("C", "T")]
    if not vector or any(code not in VECTOR_LANES for _, code, _, _ in vector):
        return 1
    lanes = [VECTOR_LANES[code] for _, code, _, _ in vector]
    width = max(lanes)
    if width == 1 or width > MAX_ACCESSES * min(lanes):
        return 1
    if kind == "tiled" and (width != TILE_LANES or any(
            VECTOR_LANES[code] != TILE_LANES for cls, code, _, _ in vector if cls == "T")):
        return 1
    for cls, code, strides, align in vector:
        itemsize = VECTOR_BYTES // VECTOR_LANES[code]
        step = 0 if kind == "flat" else strides[1] if cls == "T" else strides[0]
        if align % VECTOR_BYTES or lowest_bit(abs(step * itemsize)) < VECTOR_BYTES:
            return 1
    return width
