"""fa.arcsin, arccos, arctan, arcsinh, arccosh and arctanh of complex64 and complex128 (Array API:
every elementwise function takes complex operands): NumPy's values at every special pair of
parts on every tier (on sim the CUDA kernel source, one small kernel per dtype; on cuda
numba-cuda's cmath over libdevice), random values through views on cpu and cuda
(tests/complex_inverse_cases.py), and in PTX for sm_90 all six in one kernel with no call."""

import complex_inverse_cases as cases
import numpy as np
import pytest

import fusedarrays as fa

DTYPES = [np.complex64, np.complex128]


@pytest.mark.tiers("cpu", "sim", "cuda")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_special_values(dtype):
    cases.check_special_values(np.dtype(dtype))


RANDOM_VIEWS = {"cpu": {"seed": 3207}, "cuda": {"seed": 3208, "shape": (300, 1024)}}


@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_views(dtype, tier):
    cases.check_random_views(np.dtype(dtype), **RANDOM_VIEWS[tier])


@pytest.mark.tiers("ptx")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_all_six_in_one_kernel(dtype):
    """numba-cuda's cmath acos, asinh and atanh inline; acosh, whose cmath form needs a device
    to compile, comes from acos."""
    rng = np.random.default_rng(3209)
    x = fa.asarray((rng.standard_normal(4096) + 1j).astype(dtype))
    expr = (fa.asin(x) + fa.acos(x) * fa.atan(x) - fa.asinh(x) / fa.acosh(x)
            + fa.atanh(x))
    ptx = fa.explain(expr, arch="sm_90").ptx
    body = ptx.split(".entry", 1)[1]
    assert "call" not in body
