"""``fa.linalg``: the Array API 2024.12 ``linalg`` extension whole, and NumPy's ``norm``.

Where it sits: the namespace module itself (``fa.linalg`` is this module); over
:mod:`.products` (``matmul tensordot vecdot``), :mod:`.linalg_factor` (the factorizations and
solvers: a library's kernels, not fused) and the reductions and views of the core. NumPy's
``np.linalg.*`` on fa arrays comes here through :mod:`.linalg_numpy`.

Routes, each function's:

- **views**: ``diagonal`` (the last two axes' diagonal: one axis whose stride is the sum of
  theirs) and ``matrix_transpose``: metadata, no copy, never a cut in a fusion.
- **fused**: ``outer`` (a broadcast product), ``cross`` (elementwise over the three components,
  written into one result), ``trace`` (a reduction over the diagonal view), ``vector_norm``
  and ``matrix_norm``'s ``'fro'``, ``1``, ``-1``, ``inf``, ``-inf`` (reductions of
  ``abs(x)``), ``vecdot`` (a reduction of ``conj(x1) * x2``).
- **product kernels**: ``matmul``, ``tensordot``, ``matrix_power`` (repeated squaring by
  ``matmul``; a negative power through ``inv`` first).
- **a library's kernel** (:mod:`.linalg_factor`): ``cholesky det eigh eigvalsh inv pinv qr
  slogdet solve svd svdvals matrix_rank``, and ``matrix_norm``'s ``'nuc'``, ``2``, ``-2`` (from
  ``svdvals``).

Integer input to a norm is taken as float64, as NumPy's ``norm`` does; a complex input's norm is
real.

>>> import fusedarrays as fa, numpy as np
>>> float(fa.linalg.vector_norm(fa.asarray(np.array([3.0, 4.0]))))
5.0
>>> fa.linalg.trace(fa.asarray(np.arange(9.0).reshape(3, 3))).get()
array(12.)
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ..errors import LinAlgError
from ..ir import dtypes, layout
from .array import asarray, ndarray
from .creation import eye
from .elementwise import FUNCTIONS
from .linalg_factor import (
    EighResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from .manipulation import broadcast_to, expand_dims, matrix_transpose, moveaxis, stack
from .products import matmul, tensordot, vecdot
from .reductions import FUNCTIONS_REDUCING, normalize_axes, reduce


def diagonal(x, /, *, offset: int = 0) -> ndarray:
    """The ``offset`` diagonal (positive: above the main one) of each matrix of ``x``, a view
    of shape ``(..., K)``: one axis whose stride is the sum of the last two axes' strides.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.linalg.diagonal(fa.asarray(np.arange(6).reshape(2, 3)), offset=1).get()
    array([1, 5])
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"fa.linalg.diagonal: needs at least 2 dimensions, got shape {x.shape}")
    offset = operator.index(offset)

    def view(v):
        shape, strides, start = v
        n, m = shape[-2:]
        s0, s1 = strides[-2:]
        k = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
        if k:
            start += offset * s1 if offset >= 0 else -offset * s0
        return shape[:-2] + (k,), strides[:-2] + (s0 + s1,), start
    return x._view(view)


def outer(x1, x2, /) -> ndarray:
    """The outer product of two vectors, ``x1[:, None] * x2[None, :]`` (fused, lazy)."""
    a, b = asarray(x1), asarray(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"fa.linalg.outer: takes two vectors, got shapes {a.shape} and "
                         f"{b.shape} (np.outer flattens its operands first)")
    return FUNCTIONS["multiply"](expand_dims(a, 1), expand_dims(b, 0))


def trace(x, /, *, offset: int = 0, dtype=None) -> ndarray:
    """The sum of each matrix's ``offset`` diagonal: a fused reduction over
    :func:`diagonal`'s view, with ``fa.sum``'s result dtype (``dtype=`` to choose)."""
    return FUNCTIONS_REDUCING["sum"](diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1, x2, /, *, axis: int = -1) -> ndarray:
    """The cross product of 3-vectors along ``axis`` of each operand, the other axes broadcast:
    elementwise over the components, written into one result."""
    a, b = asarray(x1), asarray(x2)
    for x in (a, b):
        if not -x.ndim <= operator.index(axis) < x.ndim:
            raise np.exceptions.AxisError(axis, x.ndim)
        if x.shape[axis] != 3:
            raise ValueError(f"fa.linalg.cross: both operands need 3 elements along axis "
                             f"{axis}, got shapes {a.shape} and {b.shape}")
    return vector_cross(moveaxis(a, axis, -1), moveaxis(b, axis, -1), axis)


def vector_cross(a: ndarray, b: ndarray, axis: int) -> ndarray:
    """The cross product of 2- or 3-vectors along the last axis of ``a`` and ``b`` (a 2-vector's
    third component is 0; two 2-vectors give the third component alone, as ``np.cross``),
    its components along ``axis`` of the result."""
    mul, sub = FUNCTIONS["multiply"], FUNCTIONS["subtract"]
    try:
        layout.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    except ValueError:
        raise ValueError(f"fa.linalg.cross: shapes {a.shape} and {b.shape} don't broadcast "
                         "(besides the vectors' axis)") from None
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = sub(mul(a0, b1), mul(a1, b0))
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return z
    if a.shape[-1] == 3 and b.shape[-1] == 3:
        a2, b2 = a[..., 2], b[..., 2]
        x, y = sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2))
    elif a.shape[-1] == 3:             # b's third component is 0
        a2 = a[..., 2]
        x, y = FUNCTIONS["negative"](mul(a2, b1)), mul(a2, b0)
    else:
        b2 = b[..., 2]
        x, y = mul(a1, b2), FUNCTIONS["negative"](mul(a0, b2))
    x, y, z = (broadcast_to(c, layout.broadcast_shapes(x.shape, y.shape, z.shape))
               for c in (x, y, z))
    return stack([x, y, z], axis=axis)


def _inexact(x) -> ndarray:
    x = asarray(x)
    return x if dtypes.kind(x.dtype) in "fc" else x.astype(np.float64)


def _in_float32(norm):
    """``norm`` of a bfloat16 or float8 ``x`` computed on its float32 values and rounded once
    to ``x``'s dtype (JAX's float32 accumulation; per-op rounding would round every square)."""
    @functools.wraps(norm)
    def wrapper(x, /, **kwargs):
        x = _inexact(x)
        if not dtypes.is_minifloat(x.dtype):
            return norm(x, **kwargs)
        return norm(x.astype(np.float32), **kwargs).astype(x.dtype)
    return wrapper


def _squares(x: ndarray) -> ndarray:
    """``|x|**2`` in ``x``'s real dtype, without a square root for complex ``x``."""
    if x.dtype.kind == "c":
        re, im = FUNCTIONS["real"](x), FUNCTIONS["imag"](x)
        return re * re + im * im
    return x * x


@_in_float32
def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> ndarray:
    """The ``ord``-norm of ``x`` over ``axis`` (None: every element, as one vector):
    ``inf`` max, ``-inf`` min of the magnitudes, ``0`` the count of non-zeros, else
    ``sum(abs(x)**ord)**(1/ord)``; one fused reduction."""
    x = _inexact(x)
    normalize_axes(axis, x.ndim)        # NumPy's errors first
    a = FUNCTIONS["absolute"](x)
    if ord == math.inf:
        return reduce("max", a, axis, keepdims) if _size(x, axis) else \
            reduce("sum", a, axis, keepdims)        # an empty vector's norm is 0
    if ord == -math.inf:
        return reduce("min", a, axis, keepdims)
    if ord == 0:
        return reduce("sum", FUNCTIONS["not_equal"](x, 0), axis, keepdims).astype(a.dtype)
    if ord == 1:
        return reduce("sum", a, axis, keepdims)
    if ord == 2:
        return FUNCTIONS["sqrt"](reduce("sum", _squares(x), axis, keepdims))
    p = float(ord)
    return FUNCTIONS["power"](reduce("sum", FUNCTIONS["power"](a, p), axis, keepdims), 1.0 / p)


@_in_float32
def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> ndarray:
    """The ``ord``-norm of each matrix of ``x``: ``'fro'`` (fused), ``1``/``-1`` the max/min
    column sum and ``inf``/``-inf`` the max/min row sum of ``abs(x)`` (fused reductions),
    ``2``/``-2`` the largest/smallest singular value and ``'nuc'`` their sum (from
    ``svdvals``, a library kernel)."""
    x = _inexact(x)
    if x.ndim < 2:
        raise ValueError(f"fa.linalg.matrix_norm: needs at least 2 dimensions, got shape "
                         f"{x.shape}")
    if ord in ("fro", "f"):
        r = FUNCTIONS["sqrt"](reduce("sum", _squares(x), (-2, -1)))
    elif ord in (1, -1, math.inf, -math.inf) and not isinstance(ord, bool):
        summed = -2 if ord in (1, -1) else -1
        a = FUNCTIONS["absolute"](x)
        r = reduce("max" if ord > 0 else "min", reduce("sum", a, summed), -1)
    elif ord in (2, -2, "nuc") and not isinstance(ord, bool):
        s = svdvals(x)
        if ord == "nuc" or not s.shape[-1]:     # an empty matrix: NumPy's 0, or its error
            r = reduce("sum" if ord != -2 else "min", s, -1)
        else:                                   # descending: the first or the last
            r = s[..., 0] if ord == 2 else s[..., -1]
    else:
        raise ValueError(f"fa.linalg.matrix_norm: Invalid norm order {ord!r} for matrices "
                         "(one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf)")
    return expand_dims(r, (-2, -1)) if keepdims else r


def matrix_power(x, n, /) -> ndarray:
    """``x`` (a stack of square matrices) to the integer power ``n``: repeated squaring with
    ``matmul`` kernels; ``n == 0`` the identity, ``n < 0`` the power of ``inv(x)``."""
    x = asarray(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"fa.linalg.matrix_power: needs a stack of square matrices, got "
                          f"shape {x.shape}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"fa.linalg.matrix_power: exponent must be an integer, got {n!r}") \
            from None
    if n == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype), x.shape).copy()
    if n < 0:
        x, n = inv(x), -n
    result, square = None, x
    while True:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if not n:
            return result
        square = matmul(square, square)


def norm(x, ord=None, axis=None, keepdims: bool = False) -> ndarray:
    """``np.linalg.norm``: a vector norm over one axis, a matrix norm over two, and with
    ``axis`` None the 2-norm of every element (``ord`` None) or the norm of a 1-D or 2-D ``x``."""
    x = _inexact(x)
    if axis is None:
        if ord is None or (x.ndim == 2 and ord in ("f", "fro")) or (x.ndim == 1 and ord == 2):
            r = vector_norm(x, ord=2)
            return r.reshape((1,) * x.ndim) if keepdims else r
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, (tuple, list)):
        axis = (operator.index(axis),)
    if len(axis) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        return vector_norm(x, axis=axis[0], keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    rows, cols = (normalize_axes(a, x.ndim)[0] for a in axis)
    if rows == cols:
        raise ValueError("Duplicate axes given.")
    r = matrix_norm(moveaxis(x, (rows, cols), (-2, -1)), ord="fro" if ord is None else ord)
    return expand_dims(r, tuple(sorted((rows, cols)))) if keepdims else r


def _size(x: ndarray, axis) -> int:
    return int(np.prod([x.shape[k] for k in normalize_axes(axis, x.ndim)], dtype=np.int64))


__all__ = ["EighResult", "LinAlgError", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
           "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "lstsq", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "norm", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]
