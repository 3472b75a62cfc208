"""The op rows added with the namespace compile to PTX for sm_90 (no GPU needed): fa.special
(libdevice's erf, erfc and lgamma, the erfinv/expit/logit helpers) and the new ufuncs, every
one of them in one kernel per dtype."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

pytest.importorskip("numba.cuda")

SEED = 20261124


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):
        yield


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_and_new_float_rows_compile_into_one_kernel(dtype):
    rng = np.random.default_rng(SEED)
    x, y = (fa.asarray(rng.uniform(0.1, 0.9, 4096).astype(dtype)) for _ in range(2))
    s = fa.special
    expr = (s.erf(x) + s.erfc(y) + s.erfinv(x) + s.expit(y) + s.logit(x) + s.gammaln(y)
            + fa.logaddexp(x, y) + fa.logaddexp2(x, y) + fa.heaviside(x, y) + fa.deg2rad(x)
            + fa.rad2deg(y) + fa.fabs(x))
    ptx = fa.explain(expr, arch="sm_90").ptx
    assert ".entry" in ptx and "ld.global" in ptx
    assert expr.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", ["int64", "uint32"])
def test_integer_rows_compile(dtype):
    rng = np.random.default_rng(SEED)
    x, y = (fa.asarray(rng.integers(1, 1000, 4096).astype(dtype)) for _ in range(2))
    expr = fa.gcd(x, y) + fa.lcm(y, x) + fa.fmod(x, y) + fa.bitwise_count(x)
    ptx = fa.explain(expr, arch="sm_90").ptx
    assert ".entry" in ptx and "rem." in ptx
