"""``fa.linalg`` against NumPy, shared by the cpu and gpu tiers (and a few by sim): fresh random
matrices from fixed seeds (printed on failure), well conditioned where a routine needs it
(``M @ M^H + n I`` for Cholesky and eigh), single matrices, ``(2, 3, n, n)`` stacks, transposed
and negative-step views, pending operands, float32/float64/complex64/complex128.

Factorizations whose factors are unique only up to signs or phases (eigenvectors, singular
vectors, QR) are compared by what is unique: the reconstruction, orthonormality, triangularity and
the values NumPy gives; the rest against NumPy directly. Tolerances scale with the dtype's epsilon
and the matrix size (LAPACK and cuSOLVER order their sums differently)."""

from __future__ import annotations

import zlib

import numpy as np

import fusedarrays as fa

FLOATS = ("float32", "float64")
COMPLEX = ("complex64", "complex128")


def seed_of(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def sample(rng, dtype, shape) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def hermitian_pd(rng, dtype, shape) -> np.ndarray:
    """``M @ M^H + n I``: Hermitian, positive definite, condition number a few tens."""
    m = sample(rng, dtype, shape).astype(np.complex128 if np.dtype(dtype).kind == "c"
                                         else np.float64)
    n = shape[-1]
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)).astype(dtype)


def tol(dtype, n: int = 4) -> float:
    return 50 * n * float(np.finfo(np.dtype(dtype)).eps)


def close(got, want, dtype, what: str, n: int = 4) -> None:
    got = got.get() if isinstance(got, fa.ndarray) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=tol(dtype, n), atol=tol(dtype, n) * scale,
                               err_msg=what)


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _eyes(q: np.ndarray) -> np.ndarray:
    """The identity ``q^H q`` is for orthonormal columns: one per matrix of ``q``."""
    k = q.shape[-1]
    return np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k))


def views(h: np.ndarray):
    """``(name, fa array, the same values in NumPy)``: the array itself, a transposed view and
    a view with negative steps on both matrix axes, each holding the values of ``h``."""
    t = fa.asarray(np.ascontiguousarray(np.swapaxes(h, -1, -2)))
    flipped = fa.asarray(np.ascontiguousarray(h[..., ::-1, ::-1]))
    return [("plain", fa.asarray(h), h), ("transposed", fa.linalg.matrix_transpose(t), h),
            ("negative steps", flipped[..., ::-1, ::-1], h)]


def check_decompositions(dtype, shape, tag: str) -> None:
    """cholesky (both triangles), eigh, eigvalsh, inv, det, slogdet, solve on Hermitian
    positive-definite matrices of ``shape`` (stacked where it has more than two axes)."""
    seed = seed_of("decompositions", dtype, shape, tag)
    rng = np.random.default_rng(seed)
    h = hermitian_pd(rng, dtype, shape)
    n = shape[-1]
    for name, a, ref in views(h):
        what = f"{name} {dtype} {shape} (seed {seed})"
        low = fa.linalg.cholesky(a)
        assert low.dtype == np.linalg.cholesky(ref).dtype, what
        close(low, np.linalg.cholesky(ref), dtype, f"cholesky {what}", n)
        close(fa.linalg.cholesky(a, upper=True), _h(np.linalg.cholesky(ref)), dtype,
              f"cholesky upper {what}", n)
        w, v = fa.linalg.eigh(a)
        assert w.dtype == np.linalg.eigvalsh(ref).dtype and v.dtype == ref.dtype, what
        close(w, np.linalg.eigvalsh(ref), dtype, f"eigh values {what}", n)
        vh = v.get()
        close((vh * w.get()[..., None, :]) @ _h(vh), ref, dtype, f"eigh V W V^H {what}", n)
        close(fa.linalg.eigvalsh(a), np.linalg.eigvalsh(ref), dtype, f"eigvalsh {what}", n)
        close(fa.linalg.inv(a), np.linalg.inv(ref), dtype, f"inv {what}", n)
        close(fa.linalg.det(a), np.linalg.det(ref), dtype, f"det {what}", n)
        sign, logabs = fa.linalg.slogdet(a)
        ws, wl = np.linalg.slogdet(ref)
        close(sign, ws, dtype, f"slogdet sign {what}", n)
        close(logabs, wl, dtype, f"slogdet log {what}", n)
    a = fa.asarray(h)
    b = sample(rng, dtype, (n,))
    close(fa.linalg.solve(a, fa.asarray(b)), np.linalg.solve(h, b), dtype,
          f"solve (M,) {dtype} {shape} (seed {seed})", n)
    bs = sample(rng, dtype, (3, n, 2) if len(shape) > 2 else (n, 2))
    close(fa.linalg.solve(a, fa.asarray(bs)), np.linalg.solve(h, bs), dtype,
          f"solve stack {dtype} {shape} (seed {seed})", n)


def check_svd_qr(dtype, shape, tag: str) -> None:
    """svd (both ``full_matrices``), svdvals, qr (both modes), pinv, matrix_rank on general
    matrices of ``shape``."""
    seed = seed_of("svd qr", dtype, shape, tag)
    rng = np.random.default_rng(seed)
    h = sample(rng, dtype, shape)
    m, n = shape[-2:]
    k = min(m, n)
    for name, a, ref in views(h):
        what = f"{name} {dtype} {shape} (seed {seed})"
        for full in (True, False):
            u, s, vh = fa.linalg.svd(a, full_matrices=full)
            wu, ws, wvh = np.linalg.svd(ref, full_matrices=full)
            assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape), what
            assert (u.dtype, s.dtype, vh.dtype) == (wu.dtype, ws.dtype, wvh.dtype), what
            close(s, ws, dtype, f"svd S {what}", max(m, n))
            uh, sh, vhh = u.get(), s.get(), vh.get()
            close((uh[..., :, :k] * sh[..., None, :]) @ vhh[..., :k, :], ref, dtype,
                  f"svd U S Vh {what}", max(m, n))
            close(_h(uh) @ uh, _eyes(uh), dtype,
                  f"svd U^H U {what}", max(m, n))
        close(fa.linalg.svdvals(a), np.linalg.svdvals(ref), dtype, f"svdvals {what}", max(m, n))
        for mode in ("reduced", "complete"):
            q, r = fa.linalg.qr(a, mode=mode)
            wq, wr = np.linalg.qr(ref, mode=mode)
            assert (q.shape, r.shape, q.dtype) == (wq.shape, wr.shape, wq.dtype), what
            qh, rh = q.get(), r.get()
            close(qh @ rh, ref, dtype, f"qr {mode} Q R {what}", max(m, n))
            assert np.all(np.tril(rh, -1) == 0), f"qr {mode}: R not upper triangular {what}"
            close(_h(qh) @ qh, _eyes(qh), dtype,
                  f"qr {mode} Q^H Q {what}", max(m, n))
        close(fa.linalg.pinv(a), np.linalg.pinv(ref), dtype, f"pinv {what}", max(m, n))
    low = sample(rng, dtype, shape[:-1] + (2,)) @ sample(rng, dtype, shape[:-2] + (2, n))
    got = fa.linalg.matrix_rank(fa.asarray(low))
    want = np.linalg.matrix_rank(low)
    assert got.dtype == np.int64 and np.array_equal(got.get(), want), (got.get(), want, seed)


def check_feeds_fused_work(tag: str) -> None:
    """A pending operand is computed before the library's kernel; its results are fa arrays
    that a later fused expression reads."""
    seed = seed_of("feeds", tag)
    rng = np.random.default_rng(seed)
    h = hermitian_pd(rng, "float64", (2, 5, 5))
    a = fa.asarray(h)
    pending = a * 2.0 + 1.0
    assert pending.pending
    inverse = fa.linalg.inv(pending)
    assert not inverse.pending
    got = (inverse * 3.0 - fa.linalg.diagonal(inverse)[..., None]).get()
    inv = np.linalg.inv(h * 2.0 + 1.0)
    close(got, inv * 3.0 - np.diagonal(inv, axis1=-2, axis2=-1)[..., None], "float64",
          f"inv of a pending operand, read by a fused expression (seed {seed})")
    s = fa.linalg.svdvals(fa.linalg.matrix_transpose(a) + 0.5)
    close(fa.sum(s * s, axis=-1), np.sum((np.swapaxes(h, -1, -2) + 0.5) ** 2, axis=(-2, -1)),
          "float64", f"sum of squared singular values = Frobenius (seed {seed})")


def check_errors() -> None:
    """NumPy's LinAlgError for singular and not positive-definite matrices, whatever the
    backend; ValueError-like shapes; float16 refused."""
    import pytest
    singular = fa.asarray(np.array([[1.0, 2.0], [2.0, 4.0]]))
    for call in (lambda: fa.linalg.inv(singular),
                 lambda: fa.linalg.solve(singular, fa.asarray(np.array([1.0, 1.0])))):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix") as info:
            call()
        assert isinstance(info.value, fa.linalg.LinAlgError)
    not_pd = fa.asarray(np.array([[1.0, 2.0], [2.0, 1.0]], dtype=np.float32))
    with pytest.raises(fa.linalg.LinAlgError, match="not positive definite"):
        fa.linalg.cholesky(not_pd)
    stack = fa.asarray(np.stack([np.eye(3), np.zeros((3, 3))]))
    with pytest.raises(fa.linalg.LinAlgError, match="Singular matrix"):
        fa.linalg.inv(stack)
    # NumPy's values for a singular matrix: det 0, slogdet (0, -inf)
    assert float(fa.linalg.det(singular)) == 0.0
    sign, logabs = fa.linalg.slogdet(singular)
    assert float(sign) == 0.0 and float(logabs) == -np.inf
