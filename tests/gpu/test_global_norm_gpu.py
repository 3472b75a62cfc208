"""Clip-by-global-norm then Adam on the GPU: two launches over many tensors, against a float64
NumPy reference and against ``torch.nn.utils.clip_grad_norm_`` + ``torch.optim.Adam``, and the
same bits on every call (no atomics). Skipped without a device."""

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

KW = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def sizes(seed, count=60):
    rng = np.random.default_rng(seed)
    return [int(n) for n in rng.integers(1, 100_000, count)] + [1, 3, 4097]


def test_two_launches_against_float64_numpy_and_the_same_bits_every_call():
    seed = 71
    clipped = fa.fuse(ex.clipped_adam)
    st = [ex.state(n, seed * 1000 + k) for k, n in enumerate(sizes(seed))]
    runs = []
    for _ in range(2):
        lists = [[fa.asarray(s[j].copy()) for s in st] for j in range(4)]
        fa.reset_stats()
        clipped.foreach(*lists, **KW, step=1, max_norm=1.0)
        assert fa.stats()["launches"] == 2
        runs.append([a.get() for column in lists for a in column])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    want = ex.clipped_adam_reference(st, **KW, step=1, max_norm=1.0)
    for k, w in enumerate(want):
        for got, ref, name in zip((lists[0][k], lists[2][k], lists[3][k]), w, "pmv"):
            np.testing.assert_allclose(got.get(), ref, rtol=2e-5, atol=1e-6,
                                       err_msg=f"{name} of tensor {k} (seed {seed})")


def test_matches_torch_clip_grad_norm_and_adam():
    torch = pytest.importorskip("torch")
    seed = 72
    gen = torch.Generator(device="cuda").manual_seed(seed)
    ns = sizes(seed, 40)
    params = [torch.randn(n, device="cuda", generator=gen) for n in ns]
    ours = [p.clone() for p in params]
    ms, vs = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=KW["lr"], betas=(KW["beta1"], KW["beta2"]),
                           eps=KW["eps"], foreach=True)
    clipped = fa.fuse(ex.clipped_adam)
    for step in range(1, 4):
        grads = [3 * torch.randn(n, device="cuda", generator=gen) for n in ns]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        opt.step()
        clipped.foreach([fa.asarray(p) for p in ours], [fa.asarray(g) for g in grads],
                        [fa.asarray(m) for m in ms], [fa.asarray(v) for v in vs], **KW,
                        step=step, max_norm=1.0)
    torch.cuda.synchronize()
    for k, (a, b) in enumerate(zip(ours, params)):
        np.testing.assert_allclose(a.cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=f"tensor {k} (seed {seed})")
