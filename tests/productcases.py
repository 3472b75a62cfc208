"""Products (``matmul``/``@``, ``vecdot``, ``tensordot``) against NumPy, shared by the cpu, sim
and gpu tiers: fresh random data from fixed seeds (printed on failure, never zeros), shapes that
are not multiples of the 64 x 64 tile, vectors on either side, broadcast batches, transposed and
negative-step views, each dtype kind. Dtypes and shapes compared exactly; integers and bools
exactly (NumPy's wraparound); floats against a float64 product within the classical bound of a
sum of ``K`` rounded products, ``K * eps * (|a| @ |b|)`` (BLAS sums in another order than the
kernel, so equality with NumPy's float result is not expected), plus the result's own
rounding."""

from __future__ import annotations

import zlib

import numpy as np

import fusedarrays as fa


def seed_of(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def sample(rng, dtype, shape) -> np.ndarray:
    """Fresh values of ``dtype``: normals for floats; integers wide enough that the sums wrap
    (int8 products of up to 100 * 100, int32 of up to 2**20 squared); bools of both values."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    high = {1: 100, 2: 300, 4: 1 << 20, 8: 1 << 40}[dtype.itemsize]
    low = 1 if dtype.kind == "u" else -high
    return rng.integers(low, high, shape).astype(dtype)


def check(got: np.ndarray, a: np.ndarray, b: np.ndarray, what: str, want=None) -> None:
    """``got`` (a fusedarrays result, on the host) against ``a @ b`` (or ``want``)."""
    want = np.matmul(a, b) if want is None else want
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    a64, b64 = np.asarray(a, wide), np.asarray(b, wide)
    exact = np.matmul(a64, b64) if want is None or want.shape == got.shape else want
    k = a.shape[-1] if a.ndim else 1
    sum_eps = np.finfo(np.float64 if want.dtype in (np.float64, np.complex128)
                       else np.float32).eps
    # a complex product rounds its two real products and their sum: twice the real bound
    factor = 4 if want.dtype.kind == "c" else 2
    bound = (factor * k * sum_eps * np.matmul(np.abs(a64), np.abs(b64))
             + np.finfo(want.dtype).eps * np.abs(exact) + np.finfo(want.dtype).tiny)
    err = np.abs(got.astype(wide) - exact)
    assert np.all(err <= bound), (f"{what}: max error {err.max()} over the bound "
                                  f"{bound.flat[np.argmax(err - bound)]}")


def matmul_cases(rng, m: int, k: int, n: int, dtypes) -> list[tuple]:
    """``(what, a, b, a_fa, b_fa)``: the layouts and shapes every tier checks, at its sizes."""
    cases = []
    for dtype in dtypes:
        a, b = sample(rng, dtype, (m, k)), sample(rng, dtype, (k, n))
        cases.append((f"{np.dtype(dtype)} ({m}, {k}) @ ({k}, {n})", a, b, fa.asarray(a),
                      fa.asarray(b)))
    dtype = dtypes[0]
    v, w = sample(rng, dtype, (k,)), sample(rng, dtype, (k,))
    mat_a, mat_b = sample(rng, dtype, (m, k)), sample(rng, dtype, (k, n))
    cases += [("vector @ matrix", v, mat_b, fa.asarray(v), fa.asarray(mat_b)),
              ("matrix @ vector", mat_a, w, fa.asarray(mat_a), fa.asarray(w)),
              ("vector @ vector", v, w, fa.asarray(v), fa.asarray(w))]
    ba, bb = sample(rng, dtype, (3, 1, 5, 7)), sample(rng, dtype, (4, 7, 2))
    cases.append(("batch (3, 1, 5, 7) @ (4, 7, 2)", ba, bb, fa.asarray(ba), fa.asarray(bb)))
    bv = sample(rng, dtype, (7,))
    cases.append(("batch (3, 1, 5, 7) @ vector", ba, bv, fa.asarray(ba), fa.asarray(bv)))
    t_a, t_b = sample(rng, dtype, (k, m)), sample(rng, dtype, (n, k))
    cases.append(("transposed @ transposed", t_a.T, t_b.T, fa.asarray(t_a).T,
                  fa.asarray(t_b).T))
    s_a, s_b = sample(rng, dtype, (2 * m, k)), sample(rng, dtype, (k, 3 * n))
    cases.append(("negative steps on both axes", s_a[::-2, ::-1], s_b[::-1, ::-3],
                  fa.asarray(s_a)[::-2, ::-1], fa.asarray(s_b)[::-1, ::-3]))
    cases.append(("a transposed negative-step view", t_a[::-1].T, mat_b,
                  fa.asarray(t_a)[::-1].T, fa.asarray(mat_b)))
    return cases


def check_matmul_cases(m: int, k: int, n: int, dtypes, tier: str) -> None:
    seed = seed_of("matmul", tier, m, k, n, [np.dtype(d).str for d in dtypes])
    rng = np.random.default_rng(seed)
    for what, a, b, a_fa, b_fa in matmul_cases(rng, m, k, n, dtypes):
        check((a_fa @ b_fa).get(), a, b, f"{what} (seed {seed})")


def check_vecdot_and_tensordot(tier: str) -> None:
    seed = seed_of("vecdot tensordot", tier)
    rng = np.random.default_rng(seed)
    for dtype in ("float32", "float16", "int8", "bool", "float64"):
        x, y = sample(rng, dtype, (4, 3, 9)), sample(rng, dtype, (3, 9))
        for axis in (-1, 1):
            yy = y if axis == -1 else sample(rng, dtype, (1, 3, 9))
            want = np.vecdot(x, yy, axis=axis)
            got = fa.vecdot(fa.asarray(x), fa.asarray(yy), axis=axis).get()
            _check_reduced(got, want, f"vecdot {dtype} axis {axis} (seed {seed})")
    x = sample(rng, "float32", (4, 3, 9))
    z = sample(rng, "float32", (9, 3, 2))
    for axes in (1, ([1, 2], [1, 0]), 0):
        zz = z if axes != 1 else sample(rng, "float32", (9, 5))
        want = np.tensordot(x, zz, axes)
        got = fa.tensordot(fa.asarray(x), fa.asarray(zz), axes=axes).get()
        _check_reduced(got, want, f"tensordot axes {axes} (seed {seed})")


def _check_reduced(got, want, what) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        rtol = 2e-3 if want.dtype == np.float16 else 1e-4
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=what)
