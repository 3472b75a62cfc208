"""Products through cuBLAS (nvmath-python) on the cuda backend against NumPy
(tests/productcases.py, its tolerances): the shared cases (shapes past any tile, vectors, a
broadcast batch, transposed and negative-step views) for each dtype cuBLAS takes, each checked
to have run through nvmath; results written into arrays full of NaN (cuBLAS must not read the
target: beta = 0) and into a transposed view (a column-major result); pending operands and
readers; the same bits every run; and, with the route switched off, the tiled kernel on the same
cases. Skipped where nvmath-python is not installed."""

import numpy as np
import productcases as pc
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.compiler.product import ProductPlan

pytest.importorskip("nvmath")
from fusedarrays.cuda import blas as cuda_blas  # noqa: E402


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def _route(x) -> list[str]:
    return [plan.library or "tiled" for plan, _ in fa.explain(x).kernels
            if isinstance(plan, ProductPlan)]


def test_nvmath_is_found_and_products_of_float_dtypes_take_it():
    assert cuda_blas.probe().name.startswith("cuBLAS via nvmath-python"), cuda_blas.probe()
    for dtype in ("float16", "float32", "float64", "complex64", "complex128"):
        assert _route(fa.ones((3, 4), dtype=dtype) @ fa.ones((4, 2), dtype=dtype)) == [
            cuda_blas.probe().name]
    assert _route(fa.ones((3, 4), dtype="int32") @ fa.ones((4, 2), dtype="int32")) == ["tiled"]


@pytest.mark.parametrize("m, k, n, dtypes", [
    (67, 130, 45, ["float32"]),
    (300, 257, 129, ["float64"]),
    (100, 70, 90, ["float16", "complex64", "complex128"]),
])
def test_the_shared_cases_through_cublas_match_numpy(m, k, n, dtypes):
    cuda_blas.free_plans()
    pc.check_matmul_cases(m, k, n, dtypes, "gpu cublas")
    assert cuda_blas._plans, "no product went through nvmath"


def test_results_written_over_nan_and_into_a_transposed_view():
    seed = pc.seed_of("gpu cublas targets")
    rng = np.random.default_rng(seed)
    for dtype in ("float32", "float16", "complex128"):
        a, b = pc.sample(rng, dtype, (130, 70)), pc.sample(rng, dtype, (70, 90))
        x, y = fa.asarray(a), fa.asarray(b)
        out = fa.asarray(np.full((130, 90), np.nan, dtype))
        out[...] = x @ y
        pc.check(out.get(), a, b, f"{dtype} into NaN (seed {seed})")
        column_major = fa.asarray(np.full((90, 130), np.nan, dtype))
        column_major.T[...] = x @ y
        pc.check(column_major.get().T, a, b, f"{dtype} into a transposed view (seed {seed})")


def test_pending_operands_readers_and_the_same_bits_every_run():
    seed = pc.seed_of("gpu cublas pending")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((512, 384)).astype(np.float32)
    b = rng.standard_normal((384, 640)).astype(np.float32)
    x, y = fa.asarray(a), fa.asarray(b)
    got = ((x * 2) @ y.T.T + 1).get() - np.float32(1)
    np.testing.assert_allclose(got, (a * 2) @ b, rtol=1e-4, atol=1e-3, err_msg=f"seed {seed}")
    first = (x @ y).get()
    pc.check(first, a, b, f"512 x 384 x 640 (seed {seed})")
    assert first.tobytes() == (x @ y).get().tobytes()


def test_the_tiled_kernel_where_cublas_is_switched_off():
    # FUSEDARRAYS_CUBLAS=0: the tiled kernel every float product takes without nvmath-python,
    # checked on the device that has nvmath too
    with config.override(CUBLAS=False):
        assert _route(fa.ones((3, 4)) @ fa.ones((4, 2))) == ["tiled"]
        pc.check_matmul_cases(67, 130, 45, ["float32", "complex64"], "gpu tiled")
