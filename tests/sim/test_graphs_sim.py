"""Captured steps on the sim backend: the CUDA foreach kernel reading a 0-d step count and
learning rate shared by every tensor (through row 0 of its pointer table, vector and element
paths), replayed by ``fa.capture``, against NumPy. Arrays stay tiny: each simulated thread is a
Python thread."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.fuse.function import fuse

SEED = 3402


@fuse
def _add_one(s):
    s += 1


@fuse
def _scaled_step(p, g, lr, step):
    p[...] = p - lr * g / (1 - 0.9 ** step)


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_replayed_foreach_reads_the_device_step_and_lr():
    rng = np.random.default_rng(SEED)
    sizes = [3, 9]                                  # a whole vector and a partial one
    P = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    G = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    p, g = [fa.asarray(x) for x in P], [fa.asarray(x) for x in G]
    lr, step = fa.asarray(np.float32(0.1)), fa.zeros((), np.float32)
    with fa.capture() as graph:
        _add_one(step)
        _scaled_step.foreach(p, g, lr, step)
    want = P
    for k in range(1, 4):
        if k == 3:
            lr[...] = np.float32(0.2)
        graph.replay()
        rate = np.float32(0.1 if k < 3 else 0.2)
        want = [w - rate * y / (np.float32(1) - np.float32(0.9) ** np.float32(k))
                for w, y in zip(want, G)]
    assert float(step.get()) == 3.0
    for got, w in zip(p, want):
        np.testing.assert_allclose(got.get(), w, rtol=2e-6, atol=1e-6, err_msg=f"seed {SEED}")
