"""``fa.linalg``'s factorizations and solvers: ``cholesky det eigh eigvalsh inv pinv qr slogdet
solve svd svdvals matrix_rank`` (the Array API 2024.12 signatures) and NumPy's ``lstsq``.

Where it sits: over :mod:`.libraries` (``borrowed`` / ``adopt``), under the ``fa.linalg``
namespace (:mod:`.linalg`) and NumPy's ``np.linalg.*`` on fa arrays (:mod:`.linalg_numpy`).
These are **a library's kernels, not fused**: pending operands are computed first, then on the
host backends NumPy's LAPACK runs on views of fusedarrays' memory, and on cuda CuPy's
``cupy.linalg`` (cuSOLVER, cuBLAS) runs on the same device memory, on fusedarrays' stream; the
results are ``fa.ndarray`` leaves that later fused work reads.

- **Dtypes as NumPy's LAPACK**: float32, float64, complex64 and complex128 stay what they are;
  bool and integers are taken as float64; float16 (and the ml_dtypes formats) are refused with
  a :class:`~.errors.DTypeError`, as NumPy refuses them.
- **Stacks**: every routine takes ``(..., M, N)``, the batch axes first.
- **Errors as NumPy's**: a singular matrix (``inv``, ``solve``), one that is not positive
  definite (``cholesky``) or a routine that did not converge raises
  :class:`~.errors.LinAlgError` (an ``np.linalg.LinAlgError``) with NumPy's words. cuSOLVER
  reports these in a status word and CuPy, by default, returns NaNs instead: here CuPy is asked
  to check it (``cupyx.errstate(linalg="raise")``), which waits for the routine to finish.
- ``pinv`` and ``matrix_rank`` are built here from the library's SVD (the same code for NumPy
  and CuPy, whose ``pinv`` defaults differ); ``matrix_rank``'s count is a fused reduction over
  the singular values.

>>> import fusedarrays as fa, numpy as np
>>> a = fa.asarray(np.array([[4.0, 2.0], [2.0, 3.0]]))
>>> fa.linalg.cholesky(a).get()
array([[2.        , 0.        ],
       [1.        , 1.41421356]])
"""

from __future__ import annotations

import contextlib
import operator
from typing import NamedTuple

import numpy as np

from ..errors import DTypeError, LinAlgError
from ..ir import layout
from .array import asarray, ndarray
from .creation import empty, zeros
from .libraries import adopt, borrowed
from .manipulation import broadcast_to, matrix_transpose
from .reductions import reduce


class EighResult(NamedTuple):
    eigenvalues: ndarray
    eigenvectors: ndarray


class QRResult(NamedTuple):
    Q: ndarray
    R: ndarray


class SlogdetResult(NamedTuple):
    sign: ndarray
    logabsdet: ndarray


class SVDResult(NamedTuple):
    U: ndarray
    S: ndarray
    Vh: ndarray


# NumPy's words for what a routine reports; cuSOLVER's status word is added on cuda
_NUMPY_WORDS = {"cholesky": "Matrix is not positive definite", "inv": "Singular matrix",
                "solve": "Singular matrix", "eigh": "Eigenvalues did not converge",
                "eigvalsh": "Eigenvalues did not converge"}


def _float_dtype(name: str, *xs: ndarray) -> np.dtype:
    """The dtype LAPACK computes ``xs`` in, as NumPy's ``linalg`` chooses it."""
    dtype = np.result_type(*(x.dtype for x in xs))
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype in (np.float32, np.float64, np.complex64, np.complex128):
        return dtype
    raise DTypeError(f"fa.linalg.{name}: array type {dtype} is unsupported in linalg (LAPACK "
                     "and cuSOLVER take float32, float64, complex64 and complex128, as NumPy's "
                     "linalg does); convert first, e.g. x.astype(fa.float32)")


def _matrices(name: str, x, square: bool = True) -> ndarray:
    """``x`` as a stack of matrices in LAPACK's dtype; NumPy's errors for other shapes."""
    x = asarray(x)
    if x.ndim < 2:
        raise LinAlgError(f"fa.linalg.{name}: {x.ndim}-dimensional array given. Array must be "
                          f"at least two-dimensional (shape {x.shape})")
    if square and x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"fa.linalg.{name}: Last 2 dimensions of the array must be square "
                          f"(shape {x.shape})")
    dtype = _float_dtype(name, x)
    return x if x.dtype == dtype else x.astype(dtype)


@contextlib.contextmanager
def _numpy_errors(xp, name: str):
    """The library's failure reports as :class:`LinAlgError` with NumPy's words; on CuPy the
    status words are checked (``cupyx.errstate``), which NumPy's LAPACK wrappers always do."""
    checked = contextlib.nullcontext()
    if xp is not np:
        import cupyx
        checked = cupyx.errstate(linalg="raise")
    try:
        with checked, np.errstate(divide="ignore", invalid="ignore"):
            yield
    except np.linalg.LinAlgError as e:
        if isinstance(e, LinAlgError):
            raise
        words = str(e) if xp is np else f"{_NUMPY_WORDS.get(name, 'SVD did not converge')} " \
            f"(cuSOLVER: {e})"
        raise LinAlgError(f"fa.linalg.{name}: {words}") from None


def _call(name: str, fn, *arrays):
    """``fn(xp, *views)`` run by the operands' library on their memory; each array it returns
    adopted as a ``fa.ndarray`` (a tuple stays a tuple, a Python int an int)."""
    with borrowed(f"linalg.{name}", *arrays) as (xp, views), _numpy_errors(xp, name):
        out = fn(xp, *views)
        if isinstance(out, tuple):
            return tuple(r if isinstance(r, int) else adopt(r) for r in out)
        return adopt(out)


def cholesky(x, /, *, upper: bool = False) -> ndarray:
    """The lower (``upper=True``: upper) Cholesky factor of each Hermitian positive-definite
    matrix of ``x``; only its lower triangle is read. :class:`LinAlgError` where a matrix is not
    positive definite. The upper factor is the conjugate transpose of the lower (a view)."""
    low = _call("cholesky", lambda xp, h: xp.linalg.cholesky(h), _matrices("cholesky", x))
    if not upper:
        return low
    return matrix_transpose(low.conj() if low.dtype.kind == "c" else low)


def det(x, /) -> ndarray:
    """The determinant of each square matrix of ``x`` (0 for a singular one)."""
    return _call("det", lambda xp, h: xp.linalg.det(h), _matrices("det", x))


def slogdet(x, /) -> SlogdetResult:
    """``(sign, logabsdet)`` of each determinant: the sign (a unit complex number for complex
    input; 0 for a singular matrix) and the natural log of its magnitude (``-inf`` there)."""
    sign, logabs = _call("slogdet", lambda xp, h: tuple(xp.linalg.slogdet(h)),
                         _matrices("slogdet", x))
    return SlogdetResult(sign, logabs)


def inv(x, /) -> ndarray:
    """The inverse of each square matrix of ``x``; :class:`LinAlgError` for a singular one."""
    return _call("inv", lambda xp, h: xp.linalg.inv(h), _matrices("inv", x))


def eigh(x, /, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of each Hermitian matrix of ``x``,
    from its lower (``UPLO="U"``: upper) triangle. The eigenvalues are real."""
    _uplo(UPLO)
    w, v = _call("eigh", lambda xp, h: tuple(xp.linalg.eigh(h, UPLO=UPLO)),
                 _matrices("eigh", x))
    return EighResult(w, v)


def eigvalsh(x, /, UPLO: str = "L") -> ndarray:
    """The eigenvalues (ascending, real) of each Hermitian matrix of ``x``."""
    _uplo(UPLO)
    return _call("eigvalsh", lambda xp, h: xp.linalg.eigvalsh(h, UPLO=UPLO),
                 _matrices("eigvalsh", x))


def _uplo(UPLO) -> None:
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO argument must be 'L' or 'U', got {UPLO!r}")


def svd(x, /, *, full_matrices: bool = True) -> SVDResult:
    """``(U, S, Vh)`` with ``x == U[..., :, :k] * S[..., None, :] @ Vh[..., :k, :]``; ``S``
    descending and real; ``full_matrices=False`` gives ``U`` ``(..., M, K)`` and ``Vh``
    ``(..., K, N)``, ``K = min(M, N)``."""
    u, s, vh = _call("svd", lambda xp, h: tuple(xp.linalg.svd(
        h, full_matrices=bool(full_matrices))), _matrices("svd", x, square=False))
    return SVDResult(u, s, vh)


def svdvals(x, /) -> ndarray:
    """The singular values of each matrix of ``x``, descending, real."""
    return _call("svdvals", lambda xp, h: xp.linalg.svd(h, compute_uv=False),
                 _matrices("svdvals", x, square=False))


def qr(x, /, *, mode: str = "reduced"):
    """``(Q, R)`` of each matrix of ``x`` (``mode="reduced"``: ``Q`` ``(..., M, K)``, ``R``
    ``(..., K, N)``; ``"complete"``: ``Q`` ``(..., M, M)``, ``R`` ``(..., M, N)``); NumPy's
    ``mode="r"`` gives ``R`` alone and ``"raw"`` LAPACK's ``(h, tau)``."""
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"fa.linalg.qr: unrecognized mode {mode!r} (the standard's 'reduced' "
                         "and 'complete', NumPy's 'r' and 'raw')")
    out = _call("qr", lambda xp, h: xp.linalg.qr(h, mode=mode) if mode == "r"
                else tuple(xp.linalg.qr(h, mode=mode)), _matrices("qr", x, square=False))
    return out if mode == "r" else QRResult(*out) if mode != "raw" else out


def solve(x1, x2, /) -> ndarray:
    """The solution ``y`` of ``x1 @ y == x2`` for each square matrix of ``x1``: ``x2`` of shape
    ``(M,)`` is one vector for every matrix, else a stack ``(..., M, K)`` broadcast against
    ``x1``'s batch (NumPy 2's rule). :class:`LinAlgError` for a singular matrix."""
    a, b = asarray(x1), asarray(x2)
    dtype = _float_dtype("solve", a, b)
    a = _matrices("solve", a.astype(dtype) if a.dtype != dtype else a)
    b = b if b.dtype == dtype else b.astype(dtype)
    m = a.shape[-1]
    if b.ndim == 0:
        raise ValueError("fa.linalg.solve: x2 needs at least one dimension, got a 0-d array")
    if b.ndim == 1:
        if b.shape[0] != m:
            raise _core_mismatch("solve", "(m,m),(m)->(m)", b.shape[0], m)
        b = broadcast_to(b, a.shape[:-1])
        return _call("solve", lambda xp, h, v: xp.linalg.solve(h, v[..., None])[..., 0], a, b)
    if b.shape[-2] != m:
        raise _core_mismatch("solve", "(m,m),(m,n)->(m,n)", b.shape[-2], m)
    try:
        batch = layout.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"fa.linalg.solve: the batch shapes of x1 {a.shape} and x2 "
                         f"{b.shape} don't broadcast") from None
    a, b = broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:])
    return _call("solve", lambda xp, h, v: xp.linalg.solve(h, v), a, b)


def _core_mismatch(name: str, signature: str, got: int, want: int) -> ValueError:
    return ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0, with "
                      f"gufunc signature {signature} (size {got} is different from {want})")


def _default_rtol(x: ndarray) -> float:
    return max(x.shape[-2:]) * float(np.finfo(x.dtype).eps)


def pinv(x, /, *, rtol=None) -> ndarray:
    """The Moore-Penrose pseudo-inverse of each matrix of ``x``, from its SVD: singular values
    at most ``rtol`` times the largest are taken as zero (``rtol`` None: ``max(M, N)`` times
    the dtype's epsilon, as the standard says; a float or an array broadcast over the stack)."""
    x = _matrices("pinv", x, square=False)
    m, n = x.shape[-2:]
    if x.size == 0:
        return empty(x.shape[:-2] + (n, m), dtype=x.dtype)
    rtol = _default_rtol(x) if rtol is None else rtol
    operands = (x, rtol) if isinstance(rtol, ndarray) else (x,)

    def kernel(xp, h, r=rtol):
        u, s, vh = xp.linalg.svd(h, full_matrices=False)
        cutoff = xp.asarray(r, dtype=s.dtype)[..., None] * xp.max(s, axis=-1, keepdims=True)
        s_inv = xp.where(s > cutoff, 1 / s, 0).astype(s.dtype)
        return xp.matmul(xp.conj(vh).swapaxes(-1, -2) * s_inv[..., None, :],
                         xp.conj(u).swapaxes(-1, -2))
    return _call("pinv", kernel, *operands)


def matrix_rank(x, /, *, rtol=None, tol=None) -> ndarray:
    """The rank of each matrix of ``x``: how many singular values exceed ``rtol`` times the
    largest (default ``max(M, N)`` times epsilon) or, NumPy's ``tol``, an absolute bound. The
    singular values come from the library's SVD; the count is a fused reduction (int64)."""
    x = _matrices("matrix_rank", x, square=False)
    if min(x.shape[-2:]) == 0:
        return zeros(x.shape[:-2], dtype=np.int64)
    s = svdvals(x)
    if tol is None:
        rtol = _default_rtol(x) if rtol is None else rtol
        bound = reduce("max", s, -1, True) * _last_axis_kept(rtol, s.dtype)
    else:
        bound = _last_axis_kept(tol, s.dtype)
    return reduce("sum", s > bound, -1).astype(np.int64)


def _last_axis_kept(value, dtype: np.dtype):
    """A tolerance broadcast against ``(..., K)`` singular values: a scalar as it is, an array
    of the stack's shape with a new last axis."""
    if isinstance(value, (int, float, np.floating, np.integer)):
        return float(value)
    return asarray(value).astype(dtype)[..., None]


def lstsq(a, b, rcond=None) -> tuple:
    """NumPy's ``np.linalg.lstsq`` (one matrix ``a`` ``(M, N)``, ``b`` ``(M,)`` or ``(M, K)``):
    ``(x, residuals, rank, s)``, ``rank`` a Python int, the others fa arrays."""
    a, b = asarray(a), asarray(b)
    dtype = _float_dtype("lstsq", a, b)
    a, b = (v if v.dtype == dtype else v.astype(dtype) for v in (a, b))
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise LinAlgError(f"fa.linalg.lstsq: a must be a matrix and b a vector or a matrix, "
                          f"got shapes {a.shape} and {b.shape}")
    if a.shape[0] != b.shape[0]:
        raise LinAlgError(f"fa.linalg.lstsq: Incompatible dimensions {a.shape} and {b.shape}")

    def kernel(xp, h, v):
        x, res, rank, s = xp.linalg.lstsq(h, v, rcond=rcond)
        return x, res, operator.index(int(rank)), s
    return _call("lstsq", kernel, a, b)


__all__ = ["EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "det", "eigh",
           "eigvalsh", "inv", "lstsq", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals"]
