"""Where an array is nonzero: ``fa.nonzero``, ``fa.argwhere``, ``fa.flatnonzero`` and
``fa.count_nonzero`` (also as ``np.<name>(x)`` and ``x.nonzero()``).

Where it sits: beside :mod:`.indexing`, whose mask reads (``x[mask]``) find the mask's true
elements the same way (:mod:`.compaction`).
``count_nonzero`` is a fused reduction, ``(x != 0).sum(axis, dtype=intp)``: one kernel, nothing
leaves the device. The others have a size that depends on the data: ``x != 0`` is compacted on
the device (:mod:`.compaction`: counts, their running sum, the indices stored in order), and
only the count comes to the host. The results are int64 (NumPy's intp); ``nonzero``'s arrays
are the flat indices unravelled by lazy integer ops.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.array([[0.0, 1.5], [2.0, 0.0]]))
>>> [a.get().tolist() for a in fa.nonzero(x)]
[[0, 1], [1, 0]]
>>> int(fa.count_nonzero(x)), fa.count_nonzero(x, axis=0).get().tolist()
(2, [1, 1])
"""

from __future__ import annotations

import numpy as np

from .array import asarray, ndarray
from .compaction import nonzero_arrays, true_indices
from .elementwise import FUNCTIONS
from .indexing import upload_index
from .manipulation import stack
from .reductions import reduce

_INTP = np.dtype(np.intp)


def _truth(x: ndarray) -> ndarray:
    """``x != 0`` as booleans (a bool array as it is): NaN counts as nonzero, as in NumPy."""
    return x if x.dtype == np.bool_ else FUNCTIONS["not_equal"](x, 0)


def _not_0d(x: ndarray, what: str) -> ndarray:
    if x.ndim == 0:
        raise ValueError(f"fa.{what} of a 0-d array is not allowed (NumPy's nonzero neither); "
                         f"use fa.reshape(x, (1,)) first")
    return x


def nonzero(x, /) -> tuple[ndarray, ...]:
    """The indices of the nonzero elements, one int64 array per axis (``np.nonzero``)."""
    return nonzero_arrays(_truth(_not_0d(asarray(x), "nonzero")), _INTP)


def argwhere(x) -> ndarray:
    """The indices of the nonzero elements as rows, shape ``(count, ndim)``
    (``np.argwhere``; a 0-d ``x`` gives shape ``(0 or 1, 0)``)."""
    x = asarray(x)
    if x.ndim == 0:     # NumPy's 0-d case: one empty row where x is nonzero
        return upload_index(np.argwhere(_truth(x).get()))
    return stack(nonzero_arrays(_truth(x), _INTP), axis=1)


def flatnonzero(x) -> ndarray:
    """The indices of the nonzero elements of ``x`` flattened (``np.flatnonzero``)."""
    return true_indices(_truth(asarray(x)), _INTP)


def count_nonzero(x, axis=None, *, keepdims=False) -> ndarray:
    """How many elements are nonzero, over ``axis`` (None: all), as intp (``np.count_nonzero``;
    lazy, one fused reduction)."""
    return reduce("sum", _truth(asarray(x)), axis, keepdims, _INTP)


ndarray.nonzero = lambda self: nonzero(self)
ndarray.nonzero.__doc__ = nonzero.__doc__
