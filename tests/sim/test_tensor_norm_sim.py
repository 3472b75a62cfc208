"""fa.tensor_norm on the sim backend: the three CUDA kernels of a per-tensor norm (the partials'
block trees over a table padded to whole ranges, the fold's thread per tensor, the foreach
kernel reloading its tensor's value at each tensor it enters) run in numba's simulator, against
NumPy. Arrays stay small: every simulated thread is a Python thread."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.fuse.pertensor import tensor_norm

SEED = 34017


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@fa.fuse
def scaled(g, s):
    g *= s / tensor_norm(g)


def test_each_tensor_its_own_norm_in_three_launches():
    rng = np.random.default_rng(SEED)
    host = [rng.standard_normal(n).astype(np.float32) for n in (1, 5, 9000, 3)]
    gs = [fa.asarray(a) for a in host]
    fa.reset_stats()
    scaled.foreach(gs, 2.0)
    assert fa.stats()["launches"] == 3
    for k, (g, a) in enumerate(zip(gs, host)):
        np.testing.assert_allclose(g.get(), 2 * a / np.linalg.norm(a), rtol=1e-5,
                                   err_msg=f"tensor {k} (seed {SEED})")
