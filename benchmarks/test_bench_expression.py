"""A 10-op expression, fused against NumPy, on the active backend (pytest-benchmark).

Run: python -m pytest benchmarks -q --benchmark-only   (FUSEDARRAYS_BACKEND picks the backend)
"""

import numpy as np
import pytest

import fusedarrays as fa

N = 1 << 20


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng()
    return [rng.standard_normal(N).astype(np.float32) for _ in range(3)]


def ten_ops(m, x, y, z):
    return m.sqrt(m.abs(x * y + z)) * np.float32(0.5) - m.exp(-m.abs(z)) + m.maximum(x, y) / 3


def test_numpy(benchmark, data):
    benchmark(ten_ops, np, *data)


def test_fused(benchmark, data):
    x, y, z = (fa.asarray(d) for d in data)
    got = ten_ops(fa, x, y, z).get()
    np.testing.assert_allclose(got, ten_ops(np, *data), rtol=1e-5, atol=2e-5)
    benchmark(lambda: ten_ops(fa, x, y, z).compute())
