"""NumPy's linear algebra on ``fa.ndarray``: ``np.linalg.*`` and ``np.dot inner outer vdot trace
diagonal cross kron``, with NumPy's signatures, over ``fa.linalg`` (:mod:`.linalg`).

Where it sits: :data:`FUNCTIONS` is registered in ``npfunctions.IMPLEMENTED`` (NEP 18), so
``np.linalg.svd(x)`` on a fa array returns fa arrays. Each row takes NumPy's arguments and
calls the ``fa.linalg`` function of the same route (views, fused, a product kernel or a
library's kernel: :mod:`.linalg` lists them). ``out=`` is refused (assign the result instead).

- ``np.dot``, ``np.inner``: ``tensordot`` over NumPy's axes (a product kernel); a 0-d operand
  is a fused multiply. ``np.vdot``: a fused reduction of ``conj(a) * b`` over the flattened
  operands. ``np.outer`` flattens, then broadcasts (fused). ``np.kron``: one broadcast product
  (fused), reshaped.
- ``np.linalg.svd(hermitian=True)`` and ``pinv(hermitian=True)`` take the general SVD (a valid
  result; NumPy's goes through ``eigh``). ``np.linalg.multi_dot`` multiplies in the cheapest
  order, as NumPy chooses it.

>>> import fusedarrays as fa, numpy as np
>>> a = fa.asarray(np.array([[2.0, 0.0], [0.0, 3.0]]))
>>> np.linalg.det(a).get()
array(6.)
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from ..errors import LinAlgError
from . import linalg
from .array import asarray, ndarray
from .elementwise import FUNCTIONS
from .linalg_factor import _float_dtype
from .manipulation import moveaxis
from .products import matmul, tensordot, vecdot
from .reductions import reduce
from .refusals import refusal

_NO = np._NoValue


def _no_out(name: str, out) -> None:
    if out is not None:
        raise refusal(f"np.{name} with out=", f"assign the result: out[...] = np.{name}(...)")


def dot(a, b, out=None) -> ndarray:
    _no_out("dot", out)
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return FUNCTIONS["multiply"](a, b)
    if b.ndim == 1:
        return matmul(a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


def inner(a, b, /) -> ndarray:
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return FUNCTIONS["multiply"](a, b)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def vdot(a, b, /) -> ndarray:
    a, b = asarray(a).reshape(-1), asarray(b).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"vdot: vectors of sizes {a.shape[0]} and {b.shape[0]} (different)")
    return vecdot(a, b)     # conjugates a, as np.vdot


def outer(a, b, out=None) -> ndarray:
    _no_out("outer", out)
    return linalg.outer(asarray(a).reshape(-1), asarray(b).reshape(-1))


def kron(a, b) -> ndarray:
    """Each element of ``a`` times the whole of ``b``: one broadcast product over interleaved
    axes, reshaped (the reshape copies the product, as NumPy's ``kron`` makes a new array)."""
    a, b = asarray(a), asarray(b)
    nd = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    b = b.reshape((1,) * (nd - b.ndim) + b.shape)
    wide_a = a.reshape(tuple(v for n in a.shape for v in (n, 1)))
    wide_b = b.reshape(tuple(v for n in b.shape for v in (1, n)))
    product = FUNCTIONS["multiply"](wide_a, wide_b)
    return product.reshape(tuple(m * n for m, n in zip(a.shape, b.shape)))


def _two_axes_last(a, axis1: int, axis2: int) -> ndarray:
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1, axis2 = (operator.index(v) for v in (axis1, axis2))
    for v in (axis1, axis2):
        if not -a.ndim <= v < a.ndim:
            raise np.exceptions.AxisError(v, a.ndim)
    if axis1 % a.ndim == axis2 % a.ndim:
        raise ValueError("axis1 and axis2 cannot be the same")
    return moveaxis(a, (axis1, axis2), (-2, -1))


def diagonal(a, offset=0, axis1=0, axis2=1) -> ndarray:
    return linalg.diagonal(_two_axes_last(a, axis1, axis2), offset=offset)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> ndarray:
    _no_out("trace", out)
    return linalg.trace(_two_axes_last(a, axis1, axis2), offset=offset, dtype=dtype)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> ndarray:
    a, b = asarray(a), asarray(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if a.shape[-1] == 2 or b.shape[-1] == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
    return linalg.vector_cross(a, b, axisc)


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return linalg.svdvals(a)
    return linalg.svd(a, full_matrices=full_matrices)


def _pinv(a, rcond=None, hermitian=False, *, rtol=_NO):
    if rcond is not None and rtol is not _NO:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if rcond is None:       # NumPy 2's defaults: 1e-15 unless rtol (None: the standard's) given
        rcond = 1e-15 if rtol is _NO else rtol
    return linalg.pinv(a, rtol=rcond)


def _matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    A = asarray(A)
    if A.ndim < 2:      # NumPy: a vector's rank is 1 unless it is all zeros
        return reduce("any", FUNCTIONS["not_equal"](A, 0)).astype(np.int64)
    return linalg.matrix_rank(A, rtol=rtol, tol=tol)


def _cond(x, p=None):
    """NumPy's condition number: the ratio of extreme singular values (``p`` None, 2, -2),
    else ``norm(x, p) * norm(inv(x), p)``; a singular matrix's is ``inf``, as NumPy's."""
    x = asarray(x)
    _float_dtype("cond", x)     # a refused dtype named under this function's name
    if p in (None, 2, -2):
        s = linalg.svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    r = linalg.matrix_norm(x, ord=p) * linalg.matrix_norm(linalg.inv(x), ord=p)
    return FUNCTIONS["where"](FUNCTIONS["isnan"](r), np.inf, r)


def _multi_dot(arrays, *, out=None):
    _no_out("linalg.multi_dot", out)
    arrays = [asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first:
        arrays[0] = arrays[0].reshape((1, -1))
    if last:
        arrays[-1] = arrays[-1].reshape((-1, 1))
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"np.linalg.multi_dot: {a.ndim}-dimensional array given. "
                              "Array must be two-dimensional")
    result = _chain(arrays, _chain_order([a.shape[0] for a in arrays] + [arrays[-1].shape[1]]),
                    0, len(arrays) - 1)
    if first and last:
        return result[0, 0]
    return result[0] if first else result[:, 0] if last else result


def _chain_order(dims: list) -> list:
    """The split of each sub-chain that multiplies it in the fewest scalar products (the
    classic dynamic program over chain lengths, as NumPy's ``multi_dot`` uses)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays: list, split: list, i: int, j: int) -> ndarray:
    if i == j:
        return arrays[i]
    k = split[i][j]
    return matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


def _linalg_cross(x1, x2, /, *, axis=-1):
    return linalg.cross(x1, x2, axis=axis)


# NumPy function → its implementation on fa arrays (registered in npfunctions.IMPLEMENTED)
FUNCTIONS_LINALG: dict = {
    np.dot: dot, np.inner: inner, np.vdot: vdot, np.outer: outer, np.kron: kron,
    np.diagonal: diagonal, np.trace: trace, np.cross: cross,
    np.linalg.svd: _svd,
    np.linalg.svdvals: lambda x, /: linalg.svdvals(x),
    np.linalg.eigh: lambda a, UPLO="L": linalg.eigh(a, UPLO=UPLO),
    np.linalg.eigvalsh: lambda a, UPLO="L": linalg.eigvalsh(a, UPLO=UPLO),
    np.linalg.qr: lambda a, mode="reduced": linalg.qr(a, mode=mode),
    np.linalg.cholesky: lambda a, /, *, upper=False: linalg.cholesky(a, upper=upper),
    np.linalg.solve: lambda a, b: linalg.solve(a, b),
    np.linalg.inv: lambda a: linalg.inv(a),
    np.linalg.det: lambda a: linalg.det(a),
    np.linalg.slogdet: lambda a: linalg.slogdet(a),
    np.linalg.pinv: _pinv,
    np.linalg.lstsq: lambda a, b, rcond=None: linalg.lstsq(a, b, rcond=rcond),
    np.linalg.matrix_rank: _matrix_rank,
    np.linalg.matrix_power: lambda a, n: linalg.matrix_power(a, n),
    np.linalg.multi_dot: _multi_dot,
    np.linalg.cond: _cond,
    np.linalg.norm: linalg.norm,
    np.linalg.matrix_norm: lambda x, /, *, keepdims=False, ord="fro": linalg.matrix_norm(
        x, keepdims=keepdims, ord=ord),
    np.linalg.vector_norm: lambda x, /, *, axis=None, keepdims=False, ord=2: linalg.vector_norm(
        x, axis=axis, keepdims=keepdims, ord=ord),
    np.linalg.trace: lambda x, /, *, offset=0, dtype=None: linalg.trace(
        x, offset=offset, dtype=dtype),
    np.linalg.diagonal: lambda x, /, *, offset=0: linalg.diagonal(x, offset=offset),
    np.linalg.cross: _linalg_cross,
    np.linalg.outer: lambda x1, x2, /: linalg.outer(x1, x2),
    np.linalg.matmul: lambda x1, x2, /: matmul(x1, x2),
    np.linalg.vecdot: lambda x1, x2, /, *, axis=-1: vecdot(x1, x2, axis=axis),
    np.linalg.tensordot: lambda x1, x2, /, *, axes=2: tensordot(x1, x2, axes=axes),
    np.linalg.matrix_transpose: lambda x, /: linalg.matrix_transpose(x),
}
