"""``fa.linalg`` on the cuda backend: the factorizations and solvers through CuPy's
``cupy.linalg`` (cuSOLVER, cuBLAS) on fusedarrays' device memory, the same cases as the cpu tier
(tests/linalgcases.py) against NumPy on the host; results left on the device and read by later
fused kernels; NumPy's LinAlgError for singular and not positive-definite matrices (CuPy's
status words checked); without CuPy, one error naming the ``cuda-libs`` extra. The fused
functions (diagonal, trace, norms) run as generated kernels here like any other."""

import importlib.util
import sys

import linalgcases as lc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.ir import graph

needs_cupy = pytest.mark.skipif(
    importlib.util.find_spec("cupy") is None,
    reason="CuPy is not installed (pip install 'fusedarrays[cuda-libs]')")


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@needs_cupy
@pytest.mark.parametrize("dtype", lc.FLOATS + lc.COMPLEX)
def test_decompositions_of_matrices_and_stacks(dtype):
    lc.check_decompositions(dtype, (4, 4), "gpu")
    lc.check_decompositions(dtype, (2, 3, 5, 5), "gpu")
    lc.check_decompositions(dtype, (40, 40), "gpu")       # past cuSOLVER's batched sizes


@needs_cupy
@pytest.mark.parametrize("dtype", lc.FLOATS + lc.COMPLEX)
def test_svd_qr_pinv_rank(dtype):
    lc.check_svd_qr(dtype, (6, 4), "gpu")
    lc.check_svd_qr(dtype, (2, 3, 3, 5), "gpu")
    lc.check_svd_qr(dtype, (70, 40), "gpu")     # gesvd rather than the batched Jacobi route


@needs_cupy
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
def test_errors_are_numpys_on_the_device():
    lc.check_errors()
    singular = fa.asarray(np.zeros((3, 4, 4), np.float32) + np.eye(4, dtype=np.float32))
    singular[1, 2, 2] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        fa.linalg.solve(singular, fa.asarray(np.ones((3, 4, 1), np.float32)))


@needs_cupy
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


def test_without_cupy_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)      # import cupy raises ImportError
    a = fa.asarray(np.eye(3))
    with pytest.raises(fa.UnsupportedOperationError, match=r"fusedarrays\[cuda-libs\]"):
        fa.linalg.inv(a)
