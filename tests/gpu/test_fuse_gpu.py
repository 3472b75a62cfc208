"""fa.fuse on the GPU against torch.optim: SGD with momentum, Adam, AdamW, RMSprop, in place on
PyTorch tensors (zero-copy through fa.asarray), one launch per step; foreach over many tensors in
one launch against torch's multi-tensor Adam. Skipped without a device or without PyTorch."""

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

torch = pytest.importorskip("torch")

STEPS = 4


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def tensors(n, count, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(n, device="cuda", generator=g) for _ in range(count)]


def close(ours, theirs):
    torch.cuda.synchronize()
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.detach().cpu().numpy(),
                               rtol=2e-5, atol=2e-6)


CASES = {
    "sgd": (ex.sgd, lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=1e-2,
                                              nesterov=True, foreach=False),
            dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=1e-2, nesterov=True),
            ["momentum_buffer"]),
    "adam": (ex.adam, lambda p: torch.optim.Adam([p], lr=1e-2, foreach=False),
             dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8), ["exp_avg", "exp_avg_sq"]),
    "adamw": (ex.adamw, lambda p: torch.optim.AdamW([p], lr=1e-2, weight_decay=0.1,
                                                    foreach=False),
              dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1),
              ["exp_avg", "exp_avg_sq"]),
    "rmsprop": (ex.rmsprop, lambda p: torch.optim.RMSprop([p], lr=1e-2, alpha=0.99, eps=1e-8,
                                                          foreach=False),
                dict(lr=1e-2, alpha=0.99, eps=1e-8), ["square_avg"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_optim_in_place_one_launch_per_step(name):
    fn, make, kw, state_names = CASES[name]
    fused = fa.fuse(fn)
    n = 100_003
    p_ref, *grads = tensors(n, 1 + STEPS, seed=len(name))
    p_ours = p_ref.clone()
    states = [torch.zeros_like(p_ours) for _ in state_names]
    p_ref.requires_grad_(True)
    opt = make(p_ref)
    ours = [fa.asarray(t) for t in (p_ours, grads[0], *states)]   # zero-copy views
    compiles = None
    for step in range(1, STEPS + 1):
        p_ref.grad = grads[step - 1].clone()
        opt.step()
        ours[1] = fa.asarray(grads[step - 1])
        extra = {"step": step} if "adam" in name else {}
        fa.reset_stats()
        fused(*ours, **kw, **extra)
        assert fa.stats()["launches"] == 1
        if compiles is not None:
            assert fa.stats()["compiles"] == 0     # new step values never recompile
        compiles = fa.stats()["compiles"]
    close(p_ours, p_ref)
    for state, key in zip(states, state_names):
        close(state, opt.state[p_ref][key])


def test_foreach_adam_over_200_tensors_is_one_launch_and_matches_torch():
    gen = np.random.default_rng(0)
    sizes = [int(s) for s in gen.integers(1_000, 30_000, 200)]
    params = [torch.randn(s, device="cuda") for s in sizes]
    grads = [torch.randn_like(p) for p in params]
    refs = [p.clone().requires_grad_(True) for p in params]
    opt = torch.optim.Adam(refs, lr=1e-2, foreach=True)
    ms = [torch.zeros_like(p) for p in params]
    vs = [torch.zeros_like(p) for p in params]
    lists = [[fa.asarray(t) for t in ts] for ts in (params, grads, ms, vs)]
    fused = fa.fuse(ex.adam)
    for step in range(1, STEPS + 1):
        for r, g in zip(refs, grads):
            r.grad = g
        opt.step()
        fa.reset_stats()
        fused.foreach(*lists, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, step=step)
        assert fa.stats()["launches"] == 1
    for k in (0, 77, 199):
        close(params[k], refs[k])
        close(ms[k], opt.state[refs[k]]["exp_avg"])


def test_returned_outputs_are_device_arrays_from_one_launch():
    @fa.fuse
    def both(x, y, s):
        return x * y + s, x - y

    a, b = tensors(4097, 2, seed=9)
    fa.reset_stats()
    first, second = both(fa.asarray(a), fa.asarray(b), 1.5)
    assert fa.stats()["launches"] == 1
    close(torch.from_numpy(first.get()), a * b + 1.5)
    close(torch.from_numpy(second.get()), a - b)
