"""``fa.linalg`` (the Array API 2024.12 extension whole) and NumPy's linear algebra on fa arrays
against NumPy, on every tier: the factorizations and solvers (tests/linalgcases.py) through
NumPy's LAPACK on fa's memory on cpu and sim, through CuPy's ``cupy.linalg`` (cuSOLVER, cuBLAS)
on fusedarrays' device memory on cuda; results read by later fused kernels.

- cpu at its default settings: the views (``diagonal``, ``matrix_transpose``), the fused ones
  (``outer cross trace vector_norm matrix_norm``), ``matrix_power``, ``np.linalg.*`` and
  ``np.dot inner outer vdot trace diagonal cross kron`` with NumPy's signatures, the dtypes and
  the errors.
- sim, small: a factorization's results feed generated CUDA kernels run in numba's simulator (a
  diagonal view's trace, a matrix norm's fused reductions).
- cuda: results left on the device; NumPy's LinAlgError for singular and not
  positive-definite matrices (CuPy's status words checked); without CuPy, one error naming the
  ``cuda-libs`` extra. The fused functions (diagonal, trace, norms) run as generated kernels
  there like any other.
"""


import importlib.util
import math
import sys
import warnings

import linalgcases as lc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.ir import graph

EXTENSION = ("cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power "
             "matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot "
             "trace vecdot vector_norm").split()

TAG = {"cpu": "cpu", "cuda": "gpu"}     # the tier's name in linalgcases' seeds
# each tier's shapes: on cuda also past cuSOLVER's batched sizes, and gesvd rather than the
# batched Jacobi route
DECOMPOSITIONS = {"cpu": [(4, 4), (2, 3, 5, 5)], "cuda": [(4, 4), (2, 3, 5, 5), (40, 40)]}
SVD_QR = {"cpu": [(6, 4), (2, 3, 3, 5)], "cuda": [(6, 4), (2, 3, 3, 5), (70, 40)]}
needs_cupy = pytest.mark.skipif(
    importlib.util.find_spec("cupy") is None,
    reason="CuPy is not installed (pip install 'fusedarrays[cuda-libs]')")


def _library(tier):
    if tier == "cuda" and importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed (pip install 'fusedarrays[cuda-libs]')")


def test_the_namespace_has_the_whole_extension():
    assert hasattr(fa, "linalg")
    for name in EXTENSION:
        assert callable(getattr(fa.linalg, name)), name
        assert name in fa.linalg.__all__, name


@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", lc.FLOATS + lc.COMPLEX)
def test_decompositions_of_matrices_and_stacks(dtype, tier):
    _library(tier)
    for shape in DECOMPOSITIONS[tier]:
        lc.check_decompositions(dtype, shape, TAG[tier])


@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", lc.FLOATS + lc.COMPLEX)
def test_svd_qr_pinv_rank_of_wide_tall_and_stacked_matrices(dtype, tier):
    _library(tier)
    for shape in SVD_QR[tier]:
        lc.check_svd_qr(dtype, shape, TAG[tier])


def test_pending_operands_are_computed_first_and_results_feed_fused_work():
    lc.check_feeds_fused_work("cpu")
    x = fa.asarray(lc.hermitian_pd(np.random.default_rng(5), "float64", (4, 4))) * 2.0
    fa.reset_stats()
    fa.linalg.cholesky(x)
    assert fa.stats()["launches"] == 1       # the pending product, then LAPACK


def test_errors_are_numpys():
    lc.check_errors()
    with pytest.raises(np.linalg.LinAlgError, match="fa.linalg.det: 1-dimensional array"):
        fa.linalg.det(fa.asarray(np.ones(3)))
    with pytest.raises(np.linalg.LinAlgError, match="Last 2 dimensions of the array must be "
                       r"square \(shape \(2, 3\)\)"):
        fa.linalg.inv(fa.asarray(np.ones((2, 3))))
    with pytest.raises(fa.DTypeError, match="float16 is unsupported in linalg.*float32"):
        fa.linalg.svd(fa.asarray(np.eye(3, dtype=np.float16)))
    with pytest.raises(ValueError, match="size 4 is different from 3"):
        fa.linalg.solve(fa.asarray(np.eye(3)), fa.asarray(np.ones((4, 2))))
    with pytest.raises(ValueError, match="unrecognized mode 'economic'"):
        fa.linalg.qr(fa.asarray(np.eye(3)), mode="economic")
    with pytest.raises(ValueError, match="Invalid norm order 3 for matrices"):
        fa.linalg.matrix_norm(fa.asarray(np.eye(3)), ord=3)
    with pytest.raises(TypeError, match="exponent must be an integer"):
        fa.linalg.matrix_power(fa.asarray(np.eye(3)), 1.5)


def test_integers_and_bools_are_taken_as_float64_as_numpy_does():
    rng = np.random.default_rng(lc.seed_of("ints"))
    h = rng.integers(-5, 5, (3, 4, 4)).astype(np.int32) + 20 * np.eye(4, dtype=np.int32)
    got = fa.linalg.inv(fa.asarray(h))
    assert got.dtype == np.float64
    lc.close(got, np.linalg.inv(h), "float64", "inv of int32")
    s = np.linalg.svd(fa.asarray(h > 0), compute_uv=False)
    assert s.dtype == np.float64
    lc.close(s, np.linalg.svd(h > 0, compute_uv=False), "float64", "svd of bool")


def test_diagonal_is_a_view_for_every_offset_and_layout():
    rng = np.random.default_rng(lc.seed_of("diagonal"))
    h = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    base = fa.asarray(h)
    layouts = [("plain", base, h), ("transposed", fa.linalg.matrix_transpose(base),
                                    np.swapaxes(h, -1, -2)),
               ("negative steps", base[:, ::-1, ::-2, ::-1], h[:, ::-1, ::-2, ::-1])]
    for name, a, ref in layouts:
        for offset in (-6, -4, -1, 0, 1, 3, 4, 7):
            d = fa.linalg.diagonal(a, offset=offset)
            buffer, *_ = graph.leaf_view(d._resolved())
            assert buffer is graph.leaf_view(base._resolved())[0], f"{name} {offset}: a copy"
            want = np.diagonal(ref, offset, -2, -1)
            assert d.shape == want.shape, (name, offset)
            np.testing.assert_array_equal(d.get(), want, err_msg=f"{name} offset {offset}")
    np.testing.assert_array_equal(np.diagonal(base, 1, 3, 0).get(), np.diagonal(h, 1, 3, 0))
    lazy = fa.linalg.diagonal(base * 2 + 1)
    assert lazy.pending
    np.testing.assert_array_equal(lazy.get(), np.diagonal(h * 2 + 1, 0, -2, -1))


def test_trace_is_a_reduction_over_the_diagonal():
    rng = np.random.default_rng(lc.seed_of("trace"))
    h = rng.standard_normal((300, 257)).astype(np.float32)
    a = fa.asarray(h)
    for offset in (0, 5, -7):
        lc.close(fa.linalg.trace(a, offset=offset), np.trace(h, offset), "float32",
                 f"trace offset {offset}", 300)
    lc.close(np.trace(a.T, dtype=np.float64), np.trace(h.T, dtype=np.float64), "float64",
             "trace dtype=float64", 300)
    ints = rng.integers(-100, 100, (3, 4, 6)).astype(np.int32)
    got = fa.linalg.trace(fa.asarray(ints), offset=1)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.get(), np.linalg.trace(ints, offset=1))
    np.testing.assert_array_equal(np.trace(fa.asarray(ints), 0, 2, 0).get(),
                                  np.trace(ints, 0, 2, 0))


def test_outer_cross_and_the_numpy_products():
    rng = np.random.default_rng(lc.seed_of("products"))
    u, v = rng.standard_normal(7), rng.standard_normal(5).astype(np.float32)
    fu, fv = fa.asarray(u), fa.asarray(v)
    out = fa.linalg.outer(fu, fv)
    assert out.pending and out.dtype == np.float64
    np.testing.assert_array_equal(out.get(), np.outer(u, v))
    m = rng.standard_normal((3, 4))
    np.testing.assert_array_equal(np.outer(fa.asarray(m), fv).get(), np.outer(m, v))
    with pytest.raises(ValueError, match="takes two vectors"):
        fa.linalg.outer(fa.asarray(m), fv)
    p, q = rng.standard_normal((4, 3, 2)), rng.standard_normal((3, 1))
    lc.close(fa.linalg.cross(fa.asarray(p), fa.asarray(q), axis=-2),
             np.linalg.cross(p, q, axis=-2), "float64", "cross over axis -2")
    lc.close(np.cross(fa.asarray(p[..., 0]), fa.asarray(q[:, 0])), np.cross(p[..., 0], q[:, 0]),
             "float64", "np.cross")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for a, b in ((p[:2, :2, 0], q[:2, 0]), (p[:2, :, 0], q[:2, 0]), (p[:2, :2, 0], q[:, 0])):
            lc.close(np.cross(fa.asarray(a), fa.asarray(b)), np.cross(a, b), "float64",
                     f"np.cross {a.shape} x {b.shape}")
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        np.cross(fa.asarray(p[0, :2, 0]), fa.asarray(q[:2, 0]))
    with pytest.raises(ValueError, match="3 elements along axis"):
        fa.linalg.cross(fa.asarray(p), fa.asarray(q))
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    for name, got, want in (
            ("dot N-d", np.dot(fa.asarray(x), fa.asarray(y)), np.dot(x, y)),
            ("dot vector", np.dot(fa.asarray(x), fa.asarray(y[:, 0])), np.dot(x, y[:, 0])),
            ("dot 0-d", np.dot(fa.asarray(x), 2.0), np.dot(x, 2.0)),
            ("dot 1-d", np.dot(fa.asarray(y[:, 1]), fa.asarray(y[:, 2])), np.dot(y[:, 1], y[:, 2])),
            ("inner", np.inner(fa.asarray(x), fa.asarray(y.T)), np.inner(x, y.T)),
            ("kron", np.kron(fa.asarray(x[0]), fa.asarray(y[:2, :2])), np.kron(x[0], y[:2, :2])),
            ("kron ndims", np.kron(fa.asarray(y[0]), fa.asarray(x)), np.kron(y[0], x)),
            ("multi_dot", np.linalg.multi_dot([fa.asarray(y[0]), fa.asarray(y.T),
                                               fa.asarray(x[0].T), fa.asarray(x[1])]),
             np.linalg.multi_dot([y[0], y.T, x[0].T, x[1]]))):
        lc.close(got, want, "float64", name)
    z = (x + 1j * x[::-1]).astype(np.complex64)
    lc.close(np.vdot(fa.asarray(z), fa.asarray(z[:, ::-1])), np.vdot(z, z[:, ::-1]),
             "complex64", "vdot conjugates its first operand", 24)
    lc.close(fa.linalg.vecdot(fa.asarray(z), fa.asarray(z[::-1]), axis=1),
             np.linalg.vecdot(z, z[::-1], axis=1), "complex64", "vecdot conjugates x1")


@pytest.mark.parametrize("dtype, shape", [("float64", (300, 257)), ("float32", (4, 50, 100)),
                                          ("complex64", (3, 4, 5))])
def test_matrix_norms(dtype, shape):
    seed = lc.seed_of("matrix_norm", dtype, shape)
    h = lc.sample(np.random.default_rng(seed), dtype, shape)
    a = fa.asarray(h)
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        got = fa.linalg.matrix_norm(a, ord=ord, keepdims=ord == 1)
        want = np.linalg.matrix_norm(h, ord=ord, keepdims=ord == 1)
        assert got.dtype == want.dtype, (ord, got.dtype, want.dtype)
        lc.close(got, want, dtype, f"matrix_norm ord={ord} (seed {seed})", max(shape))
    t = fa.linalg.matrix_transpose(a)
    lc.close(np.linalg.norm(t, ord=1, axis=(-1, -2)), np.linalg.norm(h, ord=1, axis=(-2, -1)),
             dtype, f"norm of a transposed view (seed {seed})", max(shape))


def test_numpys_norm_in_every_form():
    rng = np.random.default_rng(lc.seed_of("norm"))
    h = rng.standard_normal((3, 4, 5))
    a = fa.asarray(h)
    for kwargs in ({}, {"axis": (2, 0)}, {"axis": (0, 1), "ord": "nuc", "keepdims": True},
                   {"axis": (2, 1), "ord": -math.inf, "keepdims": True}, {"axis": 1, "ord": 3},
                   {"axis": -1, "ord": 0}, {"keepdims": True}):
        lc.close(np.linalg.norm(a, **kwargs), np.linalg.norm(h, **kwargs), "float64",
                 f"norm {kwargs}")
    for kwargs in ({"ord": "fro"}, {"ord": 2}, {"ord": -1}):
        lc.close(np.linalg.norm(a[0], **kwargs), np.linalg.norm(h[0], **kwargs), "float64",
                 f"norm of a matrix {kwargs}")
        lc.close(np.linalg.norm(a[0, 0], ord=kwargs["ord"] if kwargs["ord"] != "fro" else 2),
                 np.linalg.norm(h[0, 0], ord=kwargs["ord"] if kwargs["ord"] != "fro" else 2),
                 "float64", f"norm of a vector {kwargs}")
    z = (h + 2j * h[::-1]).astype(np.complex128)
    lc.close(fa.linalg.vector_norm(fa.asarray(z), axis=(0, 2)),
             np.linalg.vector_norm(z, axis=(0, 2)), "float64", "complex vector_norm")
    for kwargs, error in (({"ord": 2}, "Improper number of dimensions"),
                          ({"axis": (1, 1)}, "Duplicate axes"),
                          ({"axis": 0, "ord": "fro"}, "Invalid norm order 'fro' for vectors")):
        with pytest.raises(ValueError, match=error):
            np.linalg.norm(a, **kwargs)


def test_matrix_power():
    rng = np.random.default_rng(lc.seed_of("matrix_power"))
    h = (rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
    a = fa.asarray(h)
    for n in (0, 1, 2, 5, -1, -3):
        got = fa.linalg.matrix_power(a, n)
        assert got.dtype == np.float32
        lc.close(got, np.linalg.matrix_power(h, n), "float32", f"matrix_power {n}", 100)
    ints = rng.integers(-3, 3, (3, 3)).astype(np.int64)
    np.testing.assert_array_equal(np.linalg.matrix_power(fa.asarray(ints), 3).get(),
                                  np.linalg.matrix_power(ints, 3))


def test_numpys_signatures_and_results():
    rng = np.random.default_rng(lc.seed_of("numpy signatures"))
    h = rng.standard_normal((6, 3))
    a = fa.asarray(h)
    result = np.linalg.svd(a)
    assert type(result).__name__ == "SVDResult" and isinstance(result.U, fa.ndarray)
    assert isinstance(np.linalg.svd(a, compute_uv=False), fa.ndarray)
    lc.close(np.linalg.svd(a @ a.T, hermitian=True).S, np.linalg.svd(h @ h.T).S, "float64",
             "svd hermitian=True")
    for mode in ("r", "raw"):
        got, want = np.linalg.qr(a, mode=mode), np.linalg.qr(h, mode=mode)
        for g, w in zip(got if mode == "raw" else [got], want if mode == "raw" else [want]):
            lc.close(g, w, "float64", f"qr mode={mode}")
    for b in (h[:, 0], h[:, 1:] * 2):
        x, res, rank, s = np.linalg.lstsq(a, fa.asarray(b))
        wx, wres, wrank, ws = np.linalg.lstsq(h, b)
        assert type(rank) is int and rank == wrank
        for g, w, name in ((x, wx, "x"), (res, wres, "residuals"), (s, ws, "s")):
            lc.close(g, w, "float64", f"lstsq {name} b {b.shape}")
    low = h[:, :2] @ h[:2].T[:2]
    assert int(np.linalg.matrix_rank(fa.asarray(low))) == np.linalg.matrix_rank(low) == 2
    assert int(np.linalg.matrix_rank(fa.asarray(low), tol=1e3)) == 0
    assert int(np.linalg.matrix_rank(fa.asarray(h[:, 0] * 0))) == 0
    assert int(np.linalg.matrix_rank(fa.asarray(h[:, 0]))) == 1
    for kwargs in ({}, {"rcond": 0.5}, {"rtol": None}, {"rtol": 0.3}):
        lc.close(np.linalg.pinv(a, **kwargs), np.linalg.pinv(h, **kwargs), "float64",
                 f"pinv {kwargs}")
    sym = lc.hermitian_pd(rng, "float64", (4, 4))
    for uplo in ("L", "U"):
        lc.close(np.linalg.eigvalsh(fa.asarray(np.triu(sym) if uplo == "U" else np.tril(sym)),
                                    UPLO=uplo), np.linalg.eigvalsh(sym), "float64",
                 f"eigvalsh UPLO={uplo}")
    lc.close(np.linalg.cholesky(fa.asarray(sym), upper=True),
             np.linalg.cholesky(sym, upper=True), "float64", "cholesky upper")


# sim

@pytest.mark.tiers("sim")
def test_a_factorization_feeds_simulated_kernels():
    seed = lc.seed_of("sim")
    h = lc.hermitian_pd(np.random.default_rng(seed), "float64", (4, 4))
    low = fa.linalg.cholesky(fa.asarray(h) * 1.0)
    lc.close(low, np.linalg.cholesky(h), "float64", f"cholesky (seed {seed})")
    lc.close(fa.linalg.trace(low, offset=-1), np.trace(np.linalg.cholesky(h), -1), "float64",
             f"trace of the factor (seed {seed})")
    lc.close(fa.linalg.matrix_norm(low, ord=1), np.linalg.norm(np.linalg.cholesky(h), 1),
             "float64", f"1-norm of the factor (seed {seed})")


# cuda

@needs_cupy
@pytest.mark.tiers("cuda")
def test_results_stay_on_the_device_and_feed_fused_work():
    lc.check_feeds_fused_work("gpu")
    h = lc.hermitian_pd(np.random.default_rng(3), "float32", (3, 6, 6))
    w, v = fa.linalg.eigh(fa.asarray(h) + 0.0)
    for x in (w, v):
        buffer, *_ = graph.leaf_view(x._resolved())
        assert buffer.backend.name == "cuda"
    lc.close(fa.linalg.matrix_norm(fa.asarray(h), ord=2), np.linalg.matrix_norm(h, ord=2),
             "float32", "matrix_norm ord=2 (svdvals on the device)", 6)
    lc.close(fa.linalg.trace(fa.asarray(h)), np.linalg.trace(h), "float32", "trace", 6)


@needs_cupy
@pytest.mark.tiers("cuda")
def test_errors_are_numpys_on_the_device():
    lc.check_errors()
    singular = fa.asarray(np.zeros((3, 4, 4), np.float32) + np.eye(4, dtype=np.float32))
    singular[1, 2, 2] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        fa.linalg.solve(singular, fa.asarray(np.ones((3, 4, 1), np.float32)))


@needs_cupy
@pytest.mark.tiers("cuda")
def test_numpys_functions_on_device_arrays():
    rng = np.random.default_rng(lc.seed_of("numpy on gpu"))
    h = rng.standard_normal((8, 5))
    a = fa.asarray(h)
    lc.close(np.linalg.svd(a, compute_uv=False), np.linalg.svd(h, compute_uv=False), "float64",
             "np.linalg.svd")
    x, res, rank, s = np.linalg.lstsq(a, fa.asarray(h[:, 0] + 1.0))
    wx, wres, wrank, ws = np.linalg.lstsq(h, h[:, 0] + 1.0)
    assert rank == wrank
    lc.close(x, wx, "float64", "lstsq x")
    lc.close(res, wres, "float64", "lstsq residuals")
    lc.close(np.linalg.pinv(a), np.linalg.pinv(h), "float64", "pinv")
    lc.close(np.linalg.norm(a, "nuc"), np.linalg.norm(h, "nuc"), "float64", "nuclear norm")
    lc.close(np.dot(a, a.T), np.dot(h, h.T), "float64", "np.dot")


@pytest.mark.tiers("cuda")
def test_without_cupy_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)      # import cupy raises ImportError
    a = fa.asarray(np.eye(3))
    with pytest.raises(fa.UnsupportedOperationError, match=r"fusedarrays\[cuda-libs\]"):
        fa.linalg.inv(a)
