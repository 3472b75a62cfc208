"""On the device: fa.random draws inside fa.fuse (a call's draw, foreach's draws by the tensors'
places in the concatenation on the element and the 128-bit vector walks, stochastic rounding of
bfloat16 parameters from float32 masters in fusedarrays.optim), the same bits as lazy code; and
LAMB's first launch storing m and v (fuse/earlystores.py) against NumPy, 40 bytes a parameter
by the plans."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.optim import functional as F

SEED = 34097
SIZES = [5, 4097, 3, 70_001, 1 << 16]     # misaligned tails, several chunks


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def data(n, k):
    return np.random.default_rng(SEED + k).standard_normal(n).astype(np.float32)


@fa.fuse
def noisy(x, rng):
    x += rng.random(x.shape, dtype=np.float32)


@fa.fuse
def rounded(w, p, rng):
    p[...] = rng.stochastic_round(w, fa.bfloat16)


def test_fused_call_draws_as_lazy_code():
    x = fa.asarray(data(1 << 20, 0).reshape(1024, 1024))
    rng, lazy = fa.random.default_rng(1), fa.random.default_rng(1)
    for _ in range(2):
        y = x.copy()
        noisy(y, rng)
        np.testing.assert_array_equal(y.get(), (x + lazy.random(x.shape, dtype=np.float32))
                                      .get())


def test_foreach_vector_walk_draws_the_concatenation():
    host = [data(n, k) for k, n in enumerate(SIZES)]
    xs = [fa.asarray(a.copy()) for a in host]
    noisy.foreach(xs, fa.random.default_rng(2))
    u = fa.random.default_rng(2).random(sum(SIZES), dtype=np.float32).get()
    starts = np.cumsum([0] + SIZES)
    for k, (x, a) in enumerate(zip(xs, host)):
        np.testing.assert_array_equal(x.get(), a + u[starts[k]:starts[k + 1]],
                                      err_msg=f"tensor {k} (seed {SEED})")


def test_foreach_stochastic_round_equals_lazy():
    ws = [fa.asarray(data(n, k)) for k, n in enumerate(SIZES)]
    ps = [fa.zeros(n, fa.bfloat16) for n in SIZES]
    rng, lazy = fa.random.default_rng(3), fa.random.default_rng(3)
    for _ in range(2):
        rounded.foreach(ws, ps, rng)
        want = lazy.stochastic_round(fa.concat(ws), fa.bfloat16).astype(np.float32).get()
        np.testing.assert_array_equal(
            np.concatenate([p.astype(np.float32).get() for p in ps]), want)


def test_lamb_first_launch_stores_m_and_v():
    P, G, M = ([data(n, k + 10 * s) for k, n in enumerate(SIZES)] for s in range(3))
    p, g, m = ([fa.asarray(a.copy()) for a in X] for X in (P, G, M))
    v = [fa.zeros(n, np.float32) for n in SIZES]
    before = fa.stats()["launches"]
    F.lamb(p, g, m, v, step=1, lr=1e-2, weight_decay=0.1)
    assert fa.stats()["launches"] - before == 3
    f = np.float32
    for k in range(len(SIZES)):
        mm, vv = M[k] * f(0.9) + G[k] * f(0.1), G[k] * G[k] * f(1 - 0.999)
        u = (mm / f(0.1)) / (np.sqrt(vv / f(1 - 0.999)) + f(1e-6)) + f(0.1) * P[k]
        trust = np.linalg.norm(P[k].astype(np.float64)) / np.linalg.norm(u.astype(np.float64))
        for name, got, want in (("m", m[k], mm), ("v", v[k], vv),
                                ("p", p[k], P[k] - f(1e-2 * trust) * u)):
            np.testing.assert_allclose(got.get(), want, rtol=2e-5, atol=1e-7,
                                       err_msg=f"{name} of tensor {k} (seed {SEED})")
    for entry in [e for _, e in F.kernels()["lamb"]._foreach.entries()]:
        assert [plan.traffic()[1] for plan, _ in entry.plans()] == [24, 0, 16]


def test_torch_adamw_master_weights_stochastic_rounding():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    import fusedarrays.optim as fo

    torch.manual_seed(SEED)
    lin = torch.nn.Linear(256, 300).cuda().to(torch.bfloat16)
    opt = fo.AdamW(lin.parameters(), lr=1e-3, master_weights=True, stochastic_rounding=True)
    lin(torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)).float().square().sum() \
        .backward()
    opt.step()
    torch.cuda.synchronize()
    differs = 0
    for q in lin.parameters():
        w = opt.state[q]["master_param"]
        gap = (q.float() - w).abs()
        ulp = (w.abs() * 2.0 ** -7).clamp_min(2.0 ** -133)
        assert bool((gap <= ulp).all())
        differs += int((q != w.to(torch.bfloat16)).sum())
    assert differs > 0          # some parameters rounded away from nearest
