"""Writes made by a foreach's first launch (fuse/earlystores.py): where a function reduces across
its lists or per tensor, a write that doesn't need the reduced value is stored by the launch
that computes the partials, and the last launch reads it. LAMB's bytes per parameter from the
plans' traffic (40 against the 28-byte floor, was 44), three launches, results against NumPy;
a write whose old value the step still reads stays in the last launch.

- cpu: every case, tensors up to 9000 elements.
- sim: LAMB's partials kernel, rendered for CUDA, also stores m and v (inside its block walk,
  padding skipped), and the step reads them; against NumPy. Tiny arrays: every simulated thread
  is a Python thread.
- cuda: the same on the device, tensors up to 70001 elements with misaligned tails, 40 bytes a
  parameter by the plans.
"""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.fuse.pertensor import tensor_norm
from fusedarrays.optim import functional as F

SEED = 34081
SIM_SEED = 34083
CUDA_SEED = 34097
CUDA_SIZES = [5, 4097, 3, 70_001, 1 << 16]     # misaligned tails, several chunks
SIZES = [1, 3, 4097, 9000, 70]


def host(dtype, scale=1.0, seed=SEED):
    rng = np.random.default_rng(seed)
    return [(scale * rng.standard_normal(n)).astype(dtype) for n in SIZES]


def plans_of(fused) -> list:
    # the entry of the fused function's last call (one dtype group): optim's shared steps may
    # hold entries that earlier tests in the process traced
    (group,) = fused._foreach._last[2]
    return [plan for plan, _ in group.entry.plans()]


def bytes_per_element(fused) -> list[int]:
    return [plan.traffic()[1] for plan in plans_of(fused)]


def lamb_reference(p, g, m, v, step, lr, wd, b1=0.9, b2=0.999, eps=1e-6):
    """LAMB in float32 NumPy, operation by operation as optim/functional.py."""
    f = np.float32
    m = m * f(b1) + g * f(1 - b1)
    v = v * f(b2) + g * g * f(1 - b2)
    u = (m / f(1 - b1 ** step)) / (np.sqrt(v / f(1 - b2 ** step)) + f(eps)) + f(wd) * p
    wn, un = np.linalg.norm(p.astype(np.float64)), np.linalg.norm(u.astype(np.float64))
    trust = wn / un if wn > 0 and un > 0 else 1.0
    return p - f(lr * trust) * u, m, v


def test_lamb_moves_40_bytes_per_parameter_in_three_launches():
    P, G, M = host(np.float32), host(np.float32, seed=SEED + 1), host(np.float32, 0.1, SEED + 2)
    V = [np.abs(a) for a in host(np.float32, 0.1, SEED + 3)]
    p, g, m, v = ([fa.asarray(a.copy()) for a in X] for X in (P, G, M, V))
    before = fa.stats()["launches"]
    F.lamb(p, g, m, v, step=3, lr=1e-2, weight_decay=0.1)
    assert fa.stats()["launches"] - before == 3
    for k in range(len(SIZES)):
        want = lamb_reference(P[k], G[k], M[k], V[k], 3, 1e-2, 0.1)
        for name, got, w in zip("pmv", (p[k], m[k], v[k]), want):
            np.testing.assert_allclose(got.get(), w, rtol=2e-6, atol=1e-7,
                                       err_msg=f"{name} of tensor {k} (seed {SEED})")
    # the partials' launch reads p, g, m, v and stores m, v; the fold moves a few partials;
    # the step reads p, m, v and stores p: 24 + 0 + 16 = 40 bytes (the floor: 28)
    assert bytes_per_element(F.kernels()["lamb"]) == [24, 0, 16]
    across = plans_of(F.kernels()["lamb"])[0]
    assert sum(o.output for o in across.operands) == 2


def test_lamb_master_weights_bytes():
    # bfloat16 parameters and gradients, float32 masters and states: the floor reads w, g, m,
    # v and writes w, m, v, p (4 + 2 + 4 + 4 + 4 + 4 + 4 + 2 = 28); the step moves 22 + 18
    W = host(np.float32)
    p = [fa.asarray(a).astype(fa.bfloat16) for a in W]
    w = [fa.asarray(a.copy()) for a in W]
    g = [fa.asarray(a).astype(fa.bfloat16) for a in host(np.float32, seed=SEED + 1)]
    m = [fa.zeros(n, np.float32) for n in SIZES]
    v = [fa.zeros(n, np.float32) for n in SIZES]
    F.lamb(p, g, m, v, step=1, lr=1e-2, weight_decay=0.1, master_params=w)
    assert bytes_per_element(F.kernels()["lamb_master"]) == [22, 0, 18]
    for k in range(len(SIZES)):
        np.testing.assert_array_equal(p[k].astype(np.float32).get(),
                                      w[k].astype(fa.bfloat16).astype(np.float32).get())


@fa.fuse
def momentum_normalized(p, g, m, lr):
    m[...] = 0.9 * m + g
    p -= lr * m / fa.global_norm(m)


def test_global_norm_first_launch_stores_the_momentum():
    P, G, M = (host(np.float64, seed=SEED + s) for s in range(3))
    p, g, m = ([fa.asarray(a.copy()) for a in X] for X in (P, G, M))
    momentum_normalized.foreach(p, g, m, 0.5)
    new_m = [0.9 * a + b for a, b in zip(M, G)]
    norm = np.linalg.norm(np.concatenate(new_m))
    for k in range(len(SIZES)):
        np.testing.assert_allclose(m[k].get(), new_m[k], rtol=1e-15, err_msg=f"m {k}")
        np.testing.assert_allclose(p[k].get(), P[k] - 0.5 * new_m[k] / norm, rtol=1e-12,
                                   err_msg=f"p {k} (seed {SEED})")
    # float64: the first launch reads g, m and stores m (24); the step reads p, m, stores p
    assert bytes_per_element(momentum_normalized) == [24, 24]


@fa.fuse
def keeps_old(p, m):
    old = m * 1.0
    m[...] = m * 0.5 + p
    p[...] = (p + old) / tensor_norm(m)


def test_a_write_whose_old_value_is_read_stays_in_the_step():
    P, M = host(np.float32), host(np.float32, seed=SEED + 1)
    p, m = ([fa.asarray(a.copy()) for a in X] for X in (P, M))
    keeps_old.foreach(p, m)
    for k in range(len(SIZES)):
        new_m = M[k] * np.float32(0.5) + P[k]
        np.testing.assert_allclose(m[k].get(), new_m, rtol=1e-6, err_msg=f"m {k}")
        want = (P[k] + M[k]) / np.float32(np.linalg.norm(new_m.astype(np.float64)))
        np.testing.assert_allclose(p[k].get(), want, rtol=2e-6, err_msg=f"p {k} (seed {SEED})")
    across = plans_of(keeps_old)[0]
    assert not any(o.output for o in across.operands)


@pytest.mark.parametrize("calls", [2])
def test_same_bits_every_call(calls):
    results = []
    for _ in range(calls):
        P, G = host(np.float32), host(np.float32, seed=SEED + 1)
        p, g = [fa.asarray(a.copy()) for a in P], [fa.asarray(a) for a in G]
        m = [fa.zeros(n, np.float32) for n in SIZES]
        v = [fa.zeros(n, np.float32) for n in SIZES]
        F.lamb(p, g, m, v, step=1, lr=1e-2, weight_decay=0.1)
        results.append([a.get() for a in p + m + v])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


# sim

@pytest.mark.tiers("sim")
def test_lamb_first_launch_stores_m_and_v():
    rng = np.random.default_rng(SIM_SEED)
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
                                       err_msg=f"{name} of tensor {k} (seed {SIM_SEED})")


# cuda

@pytest.mark.tiers("cuda")
def test_lamb_first_launch_stores_m_and_v_on_the_device():
    def data(n, k):
        return np.random.default_rng(CUDA_SEED + k).standard_normal(n).astype(np.float32)

    P, G, M = ([data(n, k + 10 * s) for k, n in enumerate(CUDA_SIZES)] for s in range(3))
    p, g, m = ([fa.asarray(a.copy()) for a in X] for X in (P, G, M))
    v = [fa.zeros(n, np.float32) for n in CUDA_SIZES]
    before = fa.stats()["launches"]
    F.lamb(p, g, m, v, step=1, lr=1e-2, weight_decay=0.1)
    assert fa.stats()["launches"] - before == 3
    f = np.float32
    for k in range(len(CUDA_SIZES)):
        mm, vv = M[k] * f(0.9) + G[k] * f(0.1), G[k] * G[k] * f(1 - 0.999)
        u = (mm / f(0.1)) / (np.sqrt(vv / f(1 - 0.999)) + f(1e-6)) + f(0.1) * P[k]
        trust = np.linalg.norm(P[k].astype(np.float64)) / np.linalg.norm(u.astype(np.float64))
        for name, got, want in (("m", m[k], mm), ("v", v[k], vv),
                                ("p", p[k], P[k] - f(1e-2 * trust) * u)):
            np.testing.assert_allclose(got.get(), want, rtol=2e-5, atol=1e-7,
                                       err_msg=f"{name} of tensor {k} (seed {CUDA_SEED})")
    for entry in [e for _, e in F.kernels()["lamb"]._foreach.entries()]:
        assert [plan.traffic()[1] for plan, _ in entry.plans()] == [24, 0, 16]
