"""The nan-functions and the quantiles on the sim backend: the generated CUDA kernels (nanmax's
NaN-started accumulator in the block tree and in a row kernel, nanmean's complex sum and count,
the nan quantiles' gathers through the device-computed positions) run in numba's simulator,
against NumPy (tests/nancases.py). Tiny shapes: every simulated thread is a Python thread."""

import nancases as nc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 7


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_nan_reductions_on_both_cuda_schedules():
    x = nc.values(np.random.default_rng(SEED), np.float32, (4, 8))    # row 3 and column 2 NaN
    a = fa.asarray(x)
    for name in ("nanmax", "nanmean", "nanvar"):
        for axis in (1, 0):     # a block per output (rows), a thread per output (cols)
            nc.check_nan_call(name, x, a, axis, f"sim axis={axis} (seed {SEED})")
    nc.check_nan_call("nanmin", x, a, None, f"sim (seed {SEED})")
    y = nc.values(np.random.default_rng(SEED), np.float32, (4, 8), "arg", all_nan=False)
    nc.check_nan_call("nanargmax", y, fa.asarray(y), 1, f"sim (seed {SEED})")
    nc.check_nan_call("nancumsum", y, fa.asarray(y), 1, f"sim (seed {SEED})")
    # nanmax inside a row kernel: the row's NaN-started maximum beside the elementwise work
    got = (a - fa.nanmax(a, axis=1, keepdims=True)).get()
    nc.check(got, x - nc.numpy_of("nanmax", x, axis=1, keepdims=True), "row kernel")


def test_nan_quantile_and_median():
    x = nc.values(np.random.default_rng(SEED), np.float32, (4, 8))
    a = fa.asarray(x)
    nc.check(fa.nanquantile(a, [0.25, 0.5], axis=1).get(),
             nc.numpy_of("nanquantile", x, q=[0.25, 0.5], axis=1), "sim nanquantile")
    nc.check(fa.median(a, axis=0).get(), np.median(x, axis=0), "sim median")
