"""The complex inverse functions compile to PTX for sm_90 without a GPU (numba-cuda's cmath
acos, asinh and atanh inline; acosh, whose cmath form needs a device to compile, comes from acos),
all six in one kernel per dtype, with no call left in it."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=str)
def test_all_six_in_one_kernel(dtype):
    with config.override(BACKEND="cpu"):
        rng = np.random.default_rng(3209)
        x = fa.asarray((rng.standard_normal(4096) + 1j).astype(dtype))
        expr = (fa.asin(x) + fa.acos(x) * fa.atan(x) - fa.asinh(x) / fa.acosh(x)
                + fa.atanh(x))
        ptx = fa.explain(expr, arch="sm_90").ptx
    body = ptx.split(".entry", 1)[1]
    assert "call" not in body
