"""``fa.special`` against SciPy (tests/special_cases.py) on every tier (on sim fa.special's
device helpers in the CUDA source, on small arrays; on cuda libdevice's erf, erfc, lgamma and
the device helpers), SciPy's ufuncs dispatching to it, and Black-Scholes through ``erf`` as one
kernel (on cuda through SciPy's erf dispatching to fa's)."""

import blackscholes
import numpy as np
import pytest
import special_cases

import fusedarrays as fa
from fusedarrays.ir import ops

scipy_special = pytest.importorskip("scipy.special")
SEED = 20261124


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "float16"])
@pytest.mark.parametrize("name", list(ops.SPECIAL))
@pytest.mark.tiers("cpu", "cuda")
def test_special_matches_scipy(name, dtype):
    special_cases.check_special(name, np.dtype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(ops.SPECIAL))
@pytest.mark.tiers("sim")
def test_special_matches_scipy_on_small_arrays(name, dtype):
    special_cases.check_special(name, np.dtype(dtype), n=64)


def test_scipy_ufuncs_dispatch_to_fa_special():
    x = fa.asarray(np.linspace(-0.9, 0.9, 301, dtype=np.float32))
    lazy = [getattr(scipy_special, name)(x[::-1]) for name in ops.SPECIAL]
    assert all(isinstance(y, fa.ndarray) and y.pending for y in lazy)
    before = fa.stats()["launches"]
    fa.compute(*lazy)
    assert fa.stats()["launches"] - before == 1
    np.testing.assert_array_equal(lazy[0].get(), fa.special.erf(x[::-1]).get())


# cpu: fa.special.erf over 2^14 values; cuda: SciPy's erf dispatching to fa's, over 2^20
BLACK_SCHOLES = {"cpu": (1 << 14, fa.special.erf), "cuda": (1 << 20, scipy_special.erf)}


@pytest.mark.tiers("cpu", "cuda")
def test_black_scholes_with_erf_is_one_kernel_and_matches_scipy(tier):
    size, erf = BLACK_SCHOLES[tier]
    data = blackscholes.inputs(size, seed=SEED)
    call, put = blackscholes.prices_erf(fa, erf, **{k: fa.asarray(v) for k, v in data.items()})
    before = fa.stats()["launches"]
    fa.compute(call, put)
    assert fa.stats()["launches"] - before == 1
    want = blackscholes.prices_erf(np, scipy_special.erf,
                                   **{k: v.astype(np.float64) for k, v in data.items()})
    for got, ref in zip((call, put), want):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=2e-4)


def test_gammaln_of_negative_arguments_matches_scipy():
    host = np.random.default_rng(20261124).uniform(-12, -0.01, 3001)
    got = fa.special.gammaln(fa.asarray(host)[::-3]).get()
    np.testing.assert_allclose(got, scipy_special.gammaln(host[::-3]), rtol=1e-13, atol=1e-13)
