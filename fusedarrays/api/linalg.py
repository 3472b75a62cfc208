"""``fa.linalg``: the vector norms, built from the reductions (``api/reductions.py``).

``vector_norm(x, axis=None, keepdims=False, ord=2)`` follows the Array API standard and
``norm(x, ord=None, axis=None, keepdims=False)`` NumPy's ``np.linalg.norm`` for vectors (and the
Frobenius norm of a whole array); matrix norms are refused with a message. Integer input is
taken as float64, as NumPy's ``norm`` does. Each norm is one lazy expression: the reduction
kernel computes ``abs(x) ** ord`` as it reads ``x``.

>>> import fusedarrays as fa, numpy as np
>>> float(fa.linalg.vector_norm(fa.asarray(np.array([3.0, 4.0]))))
5.0
"""

from __future__ import annotations

import math

import numpy as np

from .array import asarray, ndarray
from .elementwise import FUNCTIONS
from .products import matmul, tensordot, vecdot
from .reductions import normalize_axes, reduce
from .refusals import refusal


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> ndarray:
    """The ``ord``-norm of ``x`` over ``axis`` (None: every element, as one vector):
    ``inf`` max, ``-inf`` min of the magnitudes, ``0`` the count of non-zeros, else
    ``sum(abs(x)**ord)**(1/ord)``."""
    x = asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    normalize_axes(axis, x.ndim)        # NumPy's errors first
    a = FUNCTIONS["absolute"](x)
    if ord == math.inf:
        return reduce("max", a, axis, keepdims) if _size(x, axis) else \
            reduce("sum", a, axis, keepdims)        # an empty vector's norm is 0
    if ord == -math.inf:
        return reduce("min", a, axis, keepdims)
    if ord == 0:
        return reduce("sum", FUNCTIONS["not_equal"](x, 0), axis, keepdims).astype(x.dtype)
    if ord == 1:
        return reduce("sum", a, axis, keepdims)
    if ord == 2:
        return FUNCTIONS["sqrt"](reduce("sum", x * x, axis, keepdims))
    p = float(ord)
    return FUNCTIONS["power"](reduce("sum", FUNCTIONS["power"](a, p), axis, keepdims), 1.0 / p)


def norm(x, ord=None, axis=None, keepdims: bool = False) -> ndarray:
    """``np.linalg.norm`` for vectors: a 1-D ``x`` or one ``axis``; with ``axis`` and ``ord``
    None, the 2-norm of every element; ``ord="fro"`` of a matrix (the Frobenius norm)."""
    x = asarray(x)
    one_axis = axis is not None and (not isinstance(axis, (tuple, list)) or len(axis) == 1)
    if ord is None and (axis is None or one_axis):
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2)
    two_axes = (axis is None and x.ndim == 2) or (isinstance(axis, (tuple, list))
                                                  and len(axis) == 2)
    if ord == "fro" and two_axes:     # the Frobenius norm: every element's square
        return vector_norm(x, axis=None if axis is None else tuple(axis), keepdims=keepdims)
    if one_axis or (axis is None and x.ndim == 1):
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    raise refusal(f"np.linalg.norm with ord={ord!r} over a matrix",
                  "fa.linalg.vector_norm over one axis")


def _size(x: ndarray, axis) -> int:
    return int(np.prod([x.shape[k] for k in normalize_axes(axis, x.ndim)], dtype=np.int64))


__all__ = ["matmul", "norm", "tensordot", "vecdot", "vector_norm"]
