"""Sorting, searching a sorted array and the set functions: ``sort argsort searchsorted
unique_all unique_counts unique_inverse unique_values`` as the Array API standard defines them,
and NumPy's ``np.unique``.

Where it sits: over :mod:`.array` and :mod:`.libraries`, re-exported by the namespace, behind
``np.sort`` and the others' ``__array_function__``. These are **not fused**: each runs the
kernels of the backend's array library on fusedarrays' memory, without a copy and in stream
order (:mod:`.libraries`); a pending operand is computed first and the results are arrays that
later fused work reads. Inside ``fa.fuse`` they are refused, naming the function.

- **cuda**: CuPy's sorts (CUB's radix sort through Thrust for one row of bool, integer and
  float keys; a merge sort of (row, value) pairs for several rows; both stable), its
  ``searchsorted`` and ``unique``. ``sort`` writes its operand once, laid out as it is sorted
  (the sorted axis last, contiguous), into a new buffer that nothing else reads: the copy any
  out-of-place sort makes, fused with a pending operand's own kernel. CuPy sorts that buffer in
  place.
- **cpu, sim**: NumPy's functions on views of the same host memory.
- **NaN**: a radix sort orders float keys by their bits, so a NaN whose sign bit is set (``-x``
  of a NaN, or the x86 default NaN made on the host and uploaded) would come first. On cuda
  the keys are written with every NaN positive, so each NaN sorts last, as NumPy's sort puts
  it (for ``argsort`` and ``unique`` of a computed float array this costs one pass more than
  CuPy alone). -0.0 and 0.0 are equal keys in CUB's sort, as in NumPy's: their order is kept.
- **descending**: ``sort`` is the ascending result reversed (a view: equal values are
  interchangeable). ``argsort`` sorts the reversed operand ascending and maps that order back
  (``n - 1 - i`` of its reversal, fused into whatever reads it), so equal elements keep their
  order, as the standard requires, and NaN comes first, as in the reversed ascending order.
- ``stable=False``: NumPy's default kind on the host backends (NumPy's order of equal
  elements); CuPy's sorts are always stable.
- **bfloat16, float8**: sorted, searched and made unique as their float32 values (exact both
  ways; one fused cast pass), the values cast back: CuPy has no such dtypes, and ml_dtypes' own
  NumPy sort misplaces NaN (its comparison is no total order), where float32's puts it last.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes
from .array import asarray, ndarray
from .creation import empty
from .elementwise import FUNCTIONS
from .libraries import adopt, borrowed, library
from .manipulation import flip, moveaxis
from .refusals import refusal

# NumPy 2 gives np.unique's inverse the input's shape (axis=None); NumPy 1 a flat one
_INVERSE_SHAPED = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _axis(axis: int, ndim: int, name: str) -> int:
    if ndim == 0:
        raise ValueError(f"{name}: a 0-d array has no axis to sort; reshape it to 1-d first")
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{name}: axis {axis} is out of bounds for an array of "
                                      f"dimension {ndim}")
    return axis % ndim


def _exact32(x: ndarray) -> ndarray:
    """``x``, or for a training format its float32 values (exact; module docstring)."""
    return x.astype(np.float32) if dtypes.is_minifloat(x.dtype) else x


def sort_keys(x: ndarray) -> ndarray:
    """``x``'s values in a new C-contiguous buffer that nothing else reads (a library may sort it
    in place), every NaN written positive (module docstring): one fused pass."""
    keys = empty(x.shape, x.dtype)
    if x.size:
        keys[...] = (FUNCTIONS["where"](FUNCTIONS["isnan"](x), np.nan, x)
                     if x.dtype.kind == "f" else x)
    return keys


def sort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """``x`` sorted along ``axis`` (NaN last when ascending, as NumPy's ``sort``; first when
    descending, the reversed order). On the device: CuPy's stable sort, in place in a copy.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.sort(fa.asarray(np.array([3.0, 1.0, 2.0])), descending=True).get().tolist()
    [3.0, 2.0, 1.0]
    """
    x = asarray(x)
    axis = _axis(axis, x.ndim, "sort")
    if dtypes.is_minifloat(x.dtype):
        return sort(_exact32(x), axis=axis, descending=descending,
                    stable=stable).astype(x.dtype)
    if library("sort", x) is np:
        with borrowed("sort", x) as (_, (h,)):
            out = adopt(np.sort(h, axis=axis, kind="stable" if stable else None))
    else:
        out = sort_keys(moveaxis(x, axis, -1))
        if out.size:
            with borrowed("sort", out) as (_, (h,)):
                h.sort(axis=-1)         # CuPy's ndarray.sort: stable, in place
        out = moveaxis(out, -1, axis)
    return flip(out, axis=axis) if descending else out


def argsort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """The indices (int64) that sort ``x`` along ``axis``; ``stable`` keeps equal elements in
    their order, descending too (the standard's rule).

    >>> import fusedarrays as fa, numpy as np
    >>> fa.argsort(fa.asarray(np.array([2, 1, 2])), descending=True).get().tolist()
    [0, 2, 1]
    """
    x = _exact32(asarray(x))
    axis = _axis(axis, x.ndim, "argsort")
    keys = flip(x, axis=axis) if descending else x
    if x.size == 0:
        order = empty(x.shape, np.int64)
    elif library("argsort", x) is np:
        with borrowed("argsort", keys) as (_, (h,)):
            found = np.argsort(h, axis=axis, kind="stable" if stable else None)
        order = adopt(found.astype(np.int64, copy=False))
    else:
        keys = moveaxis(keys, axis, -1)
        with borrowed("argsort", sort_keys(keys) if keys.dtype.kind == "f" else keys) as (
                cp, (h,)):
            order = moveaxis(adopt(cp.argsort(h, axis=-1)), -1, axis)   # stable, int64
    if descending:
        order = (x.shape[axis] - 1) - flip(order, axis=axis)
    return order


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None) -> ndarray:
    """Where each element of ``x2`` would be inserted into the sorted 1-d ``x1`` (int64), as
    ``np.searchsorted`` (NaN sorts last); ``sorter`` sorts ``x1`` where it is not.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.searchsorted(fa.asarray(np.array([1.0, 2.0, 3.0])), 2.5).get().tolist()
    2
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    table = asarray(x1)
    if table.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-d, got {table.ndim}-d")
    # both compared in their common dtype, NumPy's rule (a Python scalar x2 is weak, NEP 50;
    # JAX's with a training format, compared as its exact float32 values)
    common = dtypes.promote([table.dtype, dtypes.scalar_type(x2) if isinstance(
        x2, (bool, int, float, complex)) else asarray(x2).dtype])
    if dtypes.is_minifloat(common):
        common = np.dtype(np.float32)
    operands = [table.astype(common) if table.dtype != common else table, asarray(x2, common)]
    if sorter is not None:
        operands.append(asarray(sorter))
        if operands[2].dtype.kind not in "iu":
            raise DTypeError(f"searchsorted: sorter must be integer indices, got "
                             f"{operands[2].dtype}; pass fa.argsort(x1)")
    with borrowed("searchsorted", *operands) as (xp, views):
        found = xp.searchsorted(views[0], views[1], side=side,
                                sorter=views[2] if sorter is not None else None)
        return adopt(xp.asarray(found, dtype=np.int64))


class UniqueAll(NamedTuple):
    values: ndarray
    indices: ndarray
    inverse_indices: ndarray
    counts: ndarray


class UniqueCounts(NamedTuple):
    values: ndarray
    counts: ndarray


class UniqueInverse(NamedTuple):
    values: ndarray
    inverse_indices: ndarray


def _unique(name: str, x, equal_nan: bool, inverse_shape=None, **want) -> tuple:
    """(values, *the positions asked for in NumPy's order), each NaN distinct unless
    ``equal_nan``; the inverse reshaped to ``inverse_shape`` (default ``x``'s)."""
    x = asarray(x)
    keys = _exact32(x)
    keys = keys if library(name, x) is np or keys.dtype.kind != "f" else sort_keys(keys)
    with borrowed(name, keys) as (xp, (h,)):
        found = xp.unique(h.reshape(-1), equal_nan=equal_nan, **want)
        values, *positions = found if isinstance(found, tuple) else (found,)
        positions = [p.astype(np.int64, copy=False) for p in positions]
        if want.get("return_inverse"):
            at = 1 if want.get("return_index") else 0
            positions[at] = positions[at].reshape(x.shape if inverse_shape is None
                                                  else inverse_shape)
        values = adopt(values)
        return (values.astype(x.dtype) if values.dtype != x.dtype else values,
                *(adopt(p) for p in positions))


def unique_all(x, /) -> UniqueAll:
    """The sorted distinct values of ``x`` (flattened; each NaN distinct), the first index of
    each, each element's index into the values (``x``'s shape) and the counts."""
    return UniqueAll(*_unique("unique_all", x, False, return_index=True, return_inverse=True,
                              return_counts=True))


def unique_counts(x, /) -> UniqueCounts:
    """The sorted distinct values of ``x`` (each NaN distinct) and how often each occurs."""
    return UniqueCounts(*_unique("unique_counts", x, False, return_counts=True))


def unique_inverse(x, /) -> UniqueInverse:
    """The sorted distinct values of ``x`` (each NaN distinct) and each element's index into
    them (``x``'s shape)."""
    return UniqueInverse(*_unique("unique_inverse", x, False, return_inverse=True))


def unique_values(x, /) -> ndarray:
    """The sorted distinct values of ``x`` (flattened; each NaN distinct)."""
    return _unique("unique_values", x, False)[0]


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """``np.unique`` on a fa array: the flattened array's sorted distinct values (NaNs one
    value unless ``equal_nan=False``) and the arrays asked for, int64, as NumPy returns them.
    ``axis`` (unique rows or columns) is refused; ``sorted=False`` still sorts.

    >>> import fusedarrays as fa, numpy as np
    >>> values, counts = fa.unique(fa.asarray(np.array([2, 1, 2])), return_counts=True)
    >>> values.get().tolist(), counts.get().tolist()
    ([1, 2], [1, 2])
    """
    if axis is not None:
        raise refusal(f"np.unique with axis={axis!r}", "fusedarrays finds the distinct "
                      "elements of the flattened array (axis=None)")
    x = asarray(ar)
    want = {"return_index": bool(return_index), "return_inverse": bool(return_inverse),
            "return_counts": bool(return_counts)}
    found = _unique("unique", x, bool(equal_nan), x.shape if _INVERSE_SHAPED else (-1,),
                    **want)
    return found[0] if len(found) == 1 else found
