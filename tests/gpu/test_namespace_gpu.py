"""The Array API namespace on the cuda backend: manipulation cases at every schedule
(tests/namespace_cases.py), fa.special against SciPy (libdevice's erf, erfc, lgamma and the
device helpers), Black-Scholes through erf as one launch, products (the tiled product kernel)."""

import blackscholes
import namespace_cases
import numpy as np
import productcases as pc
import pytest
import special_cases

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.ir import ops

SEED = 20261124


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("name", list(namespace_cases.CASES))
def test_case_matches_numpy(name):
    namespace_cases.check_case(name)


@pytest.mark.parametrize("name", ["concat axis 1", "stack", "roll two axes", "tile", "flip 3-D",
                                  "tril", "repeat axis"])
def test_case_matches_numpy_on_integers(name):
    namespace_cases.check_case(name, np.int16)


def test_writes_through_namespace_views():
    namespace_cases.check_view_writes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "float16"])
@pytest.mark.parametrize("name", list(ops.SPECIAL))
def test_special_matches_scipy(name, dtype):
    pytest.importorskip("scipy.special")
    special_cases.check_special(name, np.dtype(dtype))


def test_black_scholes_with_erf_is_one_launch_and_matches_scipy():
    scipy_special = pytest.importorskip("scipy.special")
    data = blackscholes.inputs(1 << 20, seed=SEED)
    call, put = blackscholes.prices_erf(fa, scipy_special.erf,
                                        **{k: fa.asarray(v) for k, v in data.items()})
    before = fa.stats()["launches"]
    fa.compute(call, put)
    assert fa.stats()["launches"] - before == 1
    want = blackscholes.prices_erf(np, scipy_special.erf,
                                   **{k: v.astype(np.float64) for k, v in data.items()})
    for got, ref in zip((call, put), want):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=2e-4)


def test_products_and_protocols_on_the_device():
    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((64, 30)).astype(np.float32)
    x = fa.asarray(a)
    pc.check((x @ x.T).get(), a, a.T, f"x @ x.T (seed {SEED})")   # not BLAS's order
    assert str(x.device) == "cuda:0" and x.to_device(x.device) is x
    assert x.tolist() == a.tolist() and f"{x[3, 4]:.4f}" == f"{a[3, 4]:.4f}"
