"""``fa.nextafter`` on the GPU: libdevice's bit reinterpretations under devicelib's steps give
NumPy's bits at every edge of float16, float32 and float64 (no flush of subnormals), and on
random views at a size that takes the vector walk."""

import nextafter_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("dtype", cases.FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_edge_toward_every_direction(dtype):
    x, y = cases.edges(dtype)[:, None], cases.directions(dtype)[None, :]
    with np.errstate(all="ignore"):
        got = fa.nextafter(fa.asarray(x), fa.asarray(y)).get()
        cases.assert_same_bits(got, np.nextafter(x, y), f"nextafter({np.dtype(dtype)})")
        back = fa.nextafter(fa.asarray(y.T), fa.asarray(x.T)).get()
        cases.assert_same_bits(back, np.nextafter(y.T, x.T), "directions first")


@pytest.mark.parametrize("dtype", cases.FLOATS, ids=lambda d: np.dtype(d).name)
def test_random_views(dtype):
    seed = 3205
    rng = np.random.default_rng(seed)
    x, y = cases.random_pair(rng, dtype, (300, 1024))
    fx, fy = fa.asarray(x), fa.asarray(y)
    with np.errstate(all="ignore"):
        for got, want in ((fa.nextafter(fx, fy), np.nextafter(x, y)),
                          (fa.nextafter(fx.T, fy[::-1].T), np.nextafter(x.T, y[::-1].T))):
            cases.assert_same_bits(got.get(), want, f"{np.dtype(dtype)} seed {seed}")
