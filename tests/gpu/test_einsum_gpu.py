"""einsum on the cuda backend: the cpu tier's cases (tests/einsumcases.py) against
``np.einsum``, each on its route (views, one fused reduction, or ``matmul``), several dtypes and
views, ``optimize``, and xarray's ``xr.dot`` on device-backed DataArrays."""

import einsumcases
import numpy as np
import pytest
from einsumcases import CASES, SEED, check, host_operands

import fusedarrays as fa
from fusedarrays import config

LOOSER = 5.0        # float32 sums in the GPU's order (blocks, then their partials)


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield

products = einsumcases.products     # the fixture counting matmul calls (both tiers)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_each_subscript_matches_numpy_on_its_route(k, dtype, products):
    subscripts, shapes, route = CASES[k]
    host = host_operands(shapes, dtype, np.random.default_rng(SEED + k))
    got = check(subscripts, host, through_numpy=k % 2 == 0, looser=LOOSER)
    assert "on cuda" in repr(got.compute())
    assert bool(products) == (route == "matmul"), (subscripts, products)


@pytest.mark.parametrize("dtype", [np.int64, np.complex64, np.bool_])
@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,j->i", [(300, 257), (257,)]), ("ij,jk->ik", [(5, 6), (6, 7)]), ("ii", [(6, 6)]),
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
])
def test_dtypes_are_numpys(subscripts, shapes, dtype):
    host = host_operands(shapes, dtype, np.random.default_rng(SEED))
    check(subscripts, host, through_numpy=True, looser=LOOSER)


def test_a_fused_einsum_is_one_kernel_on_views():
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal((4096, 514)), rng.standard_normal(257)
    x, y = fa.asarray(a), fa.asarray(b)
    fa.reset_stats()
    got = fa.einsum("ij,j->i", x[::-1, ::2] * 2, y).get()
    assert fa.stats()["launches"] == 1
    np.testing.assert_allclose(got, np.einsum("ij,j->i", a[::-1, ::2] * 2, b), rtol=1e-12,
                               atol=1e-12, err_msg=f"seed {SEED}")


@pytest.mark.parametrize("optimize", [False, True, "optimal"])
def test_optimize_orders_the_contractions_only(optimize):
    host = host_operands([(3, 40), (40, 5), (5, 60), (60,)], np.float64,
                         np.random.default_rng(SEED))
    check("ij,jk,kl,l->i", host, through_numpy=True, optimize=optimize)


def test_xarray_dot_on_device_backed_dataarrays():
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5))
    want = xr.dot(xr.DataArray(a, dims=("x", "y", "z")), xr.DataArray(b, dims=("y", "z")))
    got = xr.dot(xr.DataArray(fa.asarray(a), dims=("x", "y", "z")),
                 xr.DataArray(fa.asarray(b), dims=("y", "z")))
    assert isinstance(got.data, fa.ndarray) and "on cuda" in repr(got.data.compute())
    np.testing.assert_allclose(got.data.get(), want.data, rtol=1e-12, err_msg=f"seed {SEED}")
