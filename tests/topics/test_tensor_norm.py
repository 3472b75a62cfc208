"""fa.tensor_norm inside foreach: each tensor's own norm in three launches for any number of
tensors, against NumPy; the same bits on every call; a plain call is the array's norm; what
it refuses.

- cpu: every case, tensors up to 70000 elements.
- sim: the three CUDA kernels of a per-tensor norm (the partials' block trees over a table padded
  to whole ranges, the fold's thread per tensor, the foreach kernel reloading its tensor's value
  at each tensor it enters) in numba's simulator, four small tensors: every simulated thread is a
  Python thread.
"""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.fuse.pertensor import tensor_norm

SEED = 34003
SIM_SEED = 34017
SIZES = [1, 3, 4097, 20000, 8192 * 3 + 5, 7, 70000]
SIM_SIZES = [1, 5, 9000, 3]


@fa.fuse
def normalize(g, scale):
    g *= scale / tensor_norm(g)


@fa.fuse
def by_other(p, u, lr):
    # a LAMB-like trust ratio: two norms, one of an expression, feeding a scalar
    w, n = tensor_norm(p), tensor_norm(u * 2.0)
    p -= lr * fa.where((w > 0) & (n > 0), w / n, 1.0) * u


def arrays(dtype, seed=SEED, sizes=SIZES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype) for n in sizes]


@pytest.mark.parametrize("tier, dtype, seed, sizes", [
    ("cpu", np.float32, SEED, SIZES), ("cpu", np.float64, SEED, SIZES),
    ("sim", np.float32, SIM_SEED, SIM_SIZES)], indirect=["tier"],
    ids=["cpu-float32", "cpu-float64", "sim-float32"])
def test_each_tensor_its_own_norm(tier, dtype, seed, sizes):
    host = arrays(dtype, seed, sizes)
    gs = [fa.asarray(a) for a in host]
    before = fa.stats()["launches"]
    normalize.foreach(gs, 2.0)
    assert fa.stats()["launches"] - before == 3
    for k, (g, a) in enumerate(zip(gs, host)):
        np.testing.assert_allclose(g.get(), 2.0 * a / np.linalg.norm(a.astype(np.float64)),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   err_msg=f"tensor {k} of size {a.size} (seed {seed})")


def test_two_norms_and_zero_norm():
    host, other = arrays(np.float32), arrays(np.float32, SEED + 1)
    host[1][:] = 0.0                   # a zero norm: the ratio falls back to 1
    ps, us = [fa.asarray(a) for a in host], [fa.asarray(a) for a in other]
    by_other.foreach(ps, us, 0.1)
    for k, (p, a, u) in enumerate(zip(ps, host, other)):
        w, n = np.linalg.norm(a), np.linalg.norm(2 * u)
        trust = w / n if w > 0 and n > 0 else 1.0
        np.testing.assert_allclose(p.get(), a - 0.1 * trust * u, rtol=1e-5, atol=1e-7,
                                   err_msg=f"tensor {k} (seed {SEED})")


def test_same_bits_every_call_and_plain_call():
    host = arrays(np.float32)
    first, second = [fa.asarray(a) for a in host], [fa.asarray(a) for a in host]
    normalize.foreach(first, 1.0)
    normalize.foreach(second, 1.0)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.get(), b.get())
    one = fa.asarray(host[3])
    normalize(one, 1.0)             # outside foreach: the array's own norm
    np.testing.assert_allclose(one.get(), first[3].get(), rtol=1e-6)


def test_refusals():
    @fa.fuse
    def both(g):
        g /= tensor_norm(g) + fa.global_norm(g)

    gs = [fa.asarray(a) for a in arrays(np.float32)[:2]]
    with pytest.raises(fa.UnsupportedOperationError, match="global_norm and fa.tensor_norm"):
        both.foreach(gs)
