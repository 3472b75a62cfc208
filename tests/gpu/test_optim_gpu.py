"""fusedarrays.optim on PyTorch's cuda tensors: each optimizer against torch.optim (Lion and LAMB
against torch-op references) over several steps, the state round trip with torch's fused AdamW,
bfloat16 parameters with float32 masters, fa.tensor_norm's three kernels on the device, and the
stream-ordering test: gradients written by a long kernel on a side stream of PyTorch's, then
the step, with no synchronisation by the caller. Skipped without a device or without a cuda
build of torch."""

import copy

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch without cuda", allow_module_level=True)

import fusedarrays.optim as fo  # noqa: E402

SEED = 34031
CASES = [
    ("AdamW", dict(lr=1e-2, weight_decay=0.1)),
    ("Adam", dict(lr=1e-2, weight_decay=0.05, maximize=True)),
    ("SGD", dict(lr=1e-2, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=1e-2, momentum=0.9, dampening=0.2)),
]


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def net(dtype=torch.float32):
    torch.manual_seed(SEED)
    return torch.nn.Sequential(torch.nn.Linear(64, 1000), torch.nn.Tanh(),
                               torch.nn.Linear(1000, 10)).cuda().to(dtype)


DATA = None


def loss_of(model):
    global DATA
    if DATA is None:
        gen = torch.Generator(device="cuda").manual_seed(SEED)
        DATA = (torch.randn(128, 64, device="cuda", generator=gen),
                torch.randn(128, 10, device="cuda", generator=gen))
    x, y = DATA
    dtype = next(model.parameters()).dtype
    return ((model(x.to(dtype)) - y.to(dtype)) ** 2).float().mean()


def train(model, opt, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss_of(model).backward()
        opt.step()


def assert_same(a, b, what=""):
    for k, (pa, pb) in enumerate(zip(a.parameters(), b.parameters())):
        np.testing.assert_allclose(pa.detach().cpu().numpy(), pb.detach().cpu().numpy(),
                                   rtol=2e-5, atol=2e-6, err_msg=f"param {k} {what} "
                                   f"(seed {SEED})")


@pytest.mark.parametrize("name,kw", CASES)
def test_against_torch(name, kw):
    a, b = net(), net()
    train(a, getattr(torch.optim, name)(a.parameters(), **kw), 5)
    train(b, getattr(fo, name)(b.parameters(), **kw), 5)
    assert_same(a, b, f"{name} {kw}")


def test_adamw_against_torch_fused_and_state_both_ways():
    a, b = net(), net()
    ta = torch.optim.AdamW(a.parameters(), lr=1e-2, fused=True)
    fb = fo.AdamW(b.parameters(), lr=1e-2)
    train(a, ta, 3)
    train(b, fb, 3)
    assert_same(a, b, "fused")
    fa_state, torch_state = fb.state_dict(), ta.state_dict()
    c, d = net(), net()
    c.load_state_dict(b.state_dict())
    d.load_state_dict(a.state_dict())
    tc = torch.optim.AdamW(c.parameters(), lr=1e-2, fused=True)
    fd = fo.AdamW(d.parameters(), lr=1e-2)
    tc.load_state_dict(copy.deepcopy(fa_state))
    fd.load_state_dict(copy.deepcopy(torch_state))   # its steps on the device come back to cpu
    assert all(s["step"].device.type == "cpu" for s in fd.state.values())
    for model, opt in ((a, ta), (b, fb), (c, tc), (d, fd)):
        train(model, opt, 2)
    assert_same(a, d, "torch's state into fa")
    assert_same(b, c, "fa's state into torch")


def test_lamb_three_launches_against_reference():
    a, b = net(), net()
    opt = fo.LAMB(b.parameters(), lr=1e-2, weight_decay=0.1)
    states = {}
    for step in range(1, 4):
        for model in (a, b):
            model.zero_grad()
            loss_of(model).backward()
        with torch.no_grad():
            for p in a.parameters():
                m, v = states.setdefault(p, (torch.zeros_like(p), torch.zeros_like(p)))
                m.mul_(0.9).add_(p.grad * 0.1)
                v.mul_(0.999).add_(p.grad * p.grad * (1 - 0.999))
                u = (m / (1 - 0.9 ** step)) / ((v / (1 - 0.999 ** step)).sqrt() + 1e-6) \
                    + 0.1 * p
                trust = p.norm() / u.norm()
                p.sub_(1e-2 * trust * u)
        fa.reset_stats()
        opt.step()
        assert fa.stats()["launches"] == 3
    assert_same(a, b, "LAMB")


def test_lion_against_reference():
    a, b = net(), net()
    opt = fo.Lion(b.parameters(), lr=1e-3, weight_decay=0.1)
    ms = {}
    for _ in range(3):
        for model in (a, b):
            model.zero_grad()
            loss_of(model).backward()
        with torch.no_grad():
            for p in a.parameters():
                m = ms.setdefault(p, torch.zeros_like(p))
                update = (m * 0.9 + p.grad * 0.1).sign()
                p.mul_(1 - 1e-3 * 0.1).sub_(1e-3 * update)
                m.mul_(0.99).add_(p.grad * 0.01)
        opt.step()
    assert_same(a, b, "Lion")


def test_bfloat16_with_float32_master_weights():
    b = net(torch.bfloat16)
    ref = [p.detach().float().requires_grad_() for p in b.parameters()]
    ta = torch.optim.AdamW(ref, lr=1e-2, fused=True)
    fb = fo.AdamW(b.parameters(), lr=1e-2, master_weights=True)
    for _ in range(3):
        fb.zero_grad()
        loss_of(b).backward()
        for r, p in zip(ref, b.parameters()):
            r.grad = p.grad.float()
        ta.step()
        fb.step()
    for r, p in zip(ref, b.parameters()):
        master = fb.state[p]["master_param"]
        np.testing.assert_allclose(master.cpu().numpy(), r.detach().cpu().numpy(), rtol=2e-5,
                                   atol=2e-6, err_msg=f"seed {SEED}")
        assert torch.equal(p.detach(), master.to(torch.bfloat16))


def test_ordered_on_torchs_current_stream():
    """Gradients written on a side stream after a long kernel, then the step with no
    synchronisation by the caller, then the parameters read on that stream: without ordering
    the step would read the old gradients (zeros here) and the read would see old values."""
    n = 1 << 22
    p = torch.nn.Parameter(torch.ones(n, device="cuda"))
    opt = fo.SGD([p], lr=1.0)
    p.grad = torch.zeros_like(p)
    opt.step()                                   # warm: trace, compile, views
    side = torch.cuda.Stream()
    big = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        for _ in range(20):                      # ~tens of ms of work queued before the grads
            big = torch.tanh(big @ big * 1e-3)
        p.grad.copy_(torch.full_like(p, 0.25) + big[0, 0] * 0)
        opt.step()                               # p = 1 - 0.25
        out = p.detach() * 2                     # read on the side stream after the step
    torch.cuda.synchronize()
    assert torch.all(out == 1.5), out[:4]
