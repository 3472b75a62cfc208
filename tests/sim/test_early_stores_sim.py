"""Writes made by a foreach's first launch (fuse/earlystores.py) on the sim backend: LAMB's
partials kernel, rendered for CUDA, also stores m and v (inside its block walk, padding
skipped), and the step reads them; against NumPy. Tiny arrays: every simulated thread is a
Python thread."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.optim import functional as F

SEED = 34083


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_lamb_first_launch_stores_m_and_v():
    rng = np.random.default_rng(SEED)
    sizes = (1, 5, 300, 3)
    P, G, M = ([rng.standard_normal(n).astype(np.float32) for n in sizes] for _ in range(3))
    p, g, m = ([fa.asarray(a.copy()) for a in X] for X in (P, G, M))
    v = [fa.zeros(n, np.float32) for n in sizes]
    fa.reset_stats()
    F.lamb(p, g, m, v, step=1, lr=1e-2, weight_decay=0.1)
    assert fa.stats()["launches"] == 3
    f = np.float32
    for k in range(len(sizes)):
        mm, vv = M[k] * f(0.9) + G[k] * f(0.1), G[k] * G[k] * f(1 - 0.999)
        u = (mm / f(0.1)) / (np.sqrt(vv / f(1 - 0.999)) + f(1e-6)) + f(0.1) * P[k]
        trust = np.linalg.norm(P[k]) / np.linalg.norm(u)
        for name, got, want in (("m", m[k], mm), ("v", v[k], vv),
                                ("p", p[k], P[k] - f(1e-2 * trust) * u)):
            np.testing.assert_allclose(got.get(), want, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name} of tensor {k} (seed {SEED})")
