"""``fa.nextafter`` on the sim backend: the CUDA kernel source (devicelib's bit steps over the
simulator's bit views) gives NumPy's bits at every edge of float16, float32 and float64, in one
small kernel per width."""

import nextafter_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.mark.parametrize("dtype", cases.FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_edge_toward_every_direction(dtype):
    x, y = cases.edges(dtype)[:, None], cases.directions(dtype)[None, :]
    with config.override(BACKEND="sim"), np.errstate(all="ignore"):
        got = fa.nextafter(fa.asarray(x)[::-1], fa.asarray(y)).get()
        assert fa.backend() == "sim"
        cases.assert_same_bits(got, np.nextafter(x[::-1], y), f"nextafter({np.dtype(dtype)})")
