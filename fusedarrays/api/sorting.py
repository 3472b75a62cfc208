"""Sorting, searching a sorted array and the set functions: ``sort argsort searchsorted
unique_all unique_counts unique_inverse unique_values``, as the Array API standard defines them.

Where it sits: over :mod:`.array`, re-exported by the namespace, behind ``np.sort`` and the
others' ``__array_function__``. These are **not fused and not run by a generated kernel**: the
operands are computed, copied to the host, sorted by NumPy and the results uploaded, so on the
GPU each call costs a synchronisation and two transfers (the set functions' result shapes
depend on the values, as a mask's do). A device sort is to replace these bodies without
changing their signatures. Inside ``fa.fuse`` they are refused, naming the function.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import DTypeError
from .array import _no_host_value_while_tracing, asarray, ndarray


def _on_host(name: str, *arrays) -> list[np.ndarray]:
    """The arrays' values on the host (computed first where pending)."""
    xs = [asarray(a) for a in arrays]
    _no_host_value_while_tracing(tuple(xs), f"fa.{name} (sorted by NumPy on the host, unfused)")
    return [x.get() for x in xs]


def _axis(axis: int, ndim: int, name: str) -> int:
    if ndim == 0:
        raise ValueError(f"{name}: a 0-d array has no axis to sort; reshape it to 1-d first")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{name}: axis {axis} is out of bounds for an array of "
                                      f"dimension {ndim}")
    return axis % ndim


def sort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """``x`` sorted along ``axis`` (NaN last when ascending, as NumPy's ``sort``), on the host.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.sort(fa.asarray(np.array([3.0, 1.0, 2.0])), descending=True).get().tolist()
    [3.0, 2.0, 1.0]
    """
    (h,) = _on_host("sort", x)
    axis = _axis(axis, h.ndim, "sort")
    out = np.sort(h, axis=axis, kind="stable" if stable else None)
    return asarray(np.flip(out, axis) if descending else out)


def argsort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> ndarray:
    """The indices (int64) that sort ``x`` along ``axis``; ``stable`` keeps equal elements in
    their order, descending too (the standard's rule). Computed on the host."""
    (h,) = _on_host("argsort", x)
    axis = _axis(axis, h.ndim, "argsort")
    kind = "stable" if stable else None
    if not descending:
        return asarray(np.argsort(h, axis=axis, kind=kind).astype(np.int64))
    # descending and stable: sort the reversed array ascending, reverse that order, and map
    # the positions back: equal elements keep their original order
    n = h.shape[axis]
    order = np.flip(np.argsort(np.flip(h, axis), axis=axis, kind=kind), axis)
    return asarray((n - 1 - order).astype(np.int64))


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None) -> ndarray:
    """Where each element of ``x2`` would be inserted into the sorted 1-d ``x1`` (int64), as
    ``np.searchsorted``; ``sorter`` sorts ``x1`` where it is not. Computed on the host."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    arrays = [x1, x2] + ([] if sorter is None else [sorter])
    host = _on_host("searchsorted", *arrays)
    if host[0].ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-d, got {host[0].ndim}-d")
    if sorter is not None and host[2].dtype.kind not in "iu":
        raise DTypeError(f"searchsorted: sorter must be integer indices, got {host[2].dtype}")
    found = np.searchsorted(host[0], host[1], side=side,
                            sorter=None if sorter is None else host[2])
    return asarray(np.asarray(found, np.int64))


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


def _unique(name: str, x, **want) -> tuple:
    (h,) = _on_host(name, x)
    # the standard counts each NaN as distinct; NumPy 2 does too with equal_nan=False
    found = np.unique(h.reshape(-1), equal_nan=False, **want)
    values, *positions = found if isinstance(found, tuple) else (found,)
    return (asarray(values), *(asarray(p.astype(np.int64)) for p in positions))


def unique_all(x, /) -> UniqueAll:
    """The sorted distinct values of ``x`` (flattened), the first index of each, each element's
    index into the values (``x``'s shape) and the counts. Computed on the host."""
    values, indices, inverse, counts = _unique("unique_all", x, return_index=True,
                                               return_inverse=True, return_counts=True)
    return UniqueAll(values, indices, inverse.reshape(asarray(x).shape), counts)


def unique_counts(x, /) -> UniqueCounts:
    """The sorted distinct values of ``x`` and how often each occurs. Computed on the host."""
    return UniqueCounts(*_unique("unique_counts", x, return_counts=True))


def unique_inverse(x, /) -> UniqueInverse:
    """The sorted distinct values of ``x`` and each element's index into them (``x``'s
    shape). Computed on the host."""
    values, inverse = _unique("unique_inverse", x, return_inverse=True)
    return UniqueInverse(values, inverse.reshape(asarray(x).shape))


def unique_values(x, /) -> ndarray:
    """The sorted distinct values of ``x`` (flattened). Computed on the host."""
    return _unique("unique_values", x)[0]
