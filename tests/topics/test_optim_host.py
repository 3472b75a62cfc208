"""fusedarrays.optim's host work per step (issue 34 item 5): a step whose parameters and
gradients are the last step's makes as many Python calls for 256 tensors as for 16 (counted
with ``sys.setprofile``: deterministic), and the kept step (optim/plan.py) follows every change
torch.optim follows: gradients written in place, new gradient tensors, a gradient turning
``None`` (that parameter skipped) and back, a parameter's memory replaced, a new param group,
``load_state_dict``, SGD's first momentum step; ``state_dict`` gives each parameter its own
``step``. Tiers cpu and cuda (PyTorch tensors on the backend's device).
"""

import copy
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fusedarrays.optim as fo  # noqa: E402

pytestmark = pytest.mark.tiers("cpu", "cuda")
SEED = 3405


@pytest.fixture
def device(tier):
    if tier == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    return "cuda" if tier == "cuda" else "cpu"


def _params(n, device, seed=SEED):
    g = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(5 + i % 3, generator=g).to(device))
              for i in range(n)]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g).to(device)
    return params


def _python_calls(opt, steps=3) -> int:
    calls = [0]

    def count(frame, event, arg):
        if event == "call":
            calls[0] += 1

    sys.setprofile(count)
    try:
        for _ in range(steps):
            opt.step()
    finally:
        sys.setprofile(None)
    return calls[0]


KINDS = [("AdamW", dict(lr=1e-2)), ("SGD", dict(lr=1e-2, momentum=0.9)),
         ("Lion", dict(lr=1e-3)), ("LAMB", dict(lr=1e-2, weight_decay=0.1))]


@pytest.mark.parametrize("name,kw", KINDS, ids=[k[0] for k in KINDS])
def test_a_kept_step_makes_no_python_call_per_tensor(name, kw, device):
    counts = {}
    for n in (16, 256):
        opt = getattr(fo, name)(_params(n, device), **kw)
        for _ in range(2):      # the first steps build the states and the plan
            opt.step()
        counts[n] = _python_calls(opt)
    assert counts[256] == counts[16], f"{name}: Python calls per 3 steps {counts} (seed {SEED})"


def _assert_same(a, b, what):
    for i, (pa, pb) in enumerate(zip(a, b)):
        np.testing.assert_allclose(pa.detach().cpu().numpy(), pb.detach().cpu().numpy(),
                                   rtol=2e-5, atol=2e-6, err_msg=f"param {i}: {what} "
                                   f"(seed {SEED})")


def test_the_kept_step_follows_changes_as_torch_does(device):
    a, b = _params(9, device), _params(9, device)
    ta, fb = torch.optim.AdamW(a, lr=1e-2), fo.AdamW(b, lr=1e-2)
    rng = np.random.default_rng(SEED)

    def step(change, what):
        for params in (a, b):
            change(params)
        ta.step()
        fb.step()
        _assert_same(a, b, what)

    def written(params):      # the same gradient tensors, new values
        for i, p in enumerate(params):
            p.grad.copy_(torch.from_numpy(draws[i]).to(device))

    def fresh(params):        # new gradient tensors (zero_grad, backward)
        for i, p in enumerate(params):
            p.grad = torch.from_numpy(draws[i]).to(device)

    for what, change, zero in [("first", written, False), ("in place", written, False),
                               ("new tensors", fresh, True), ("new tensors again", fresh, True)]:
        draws = [rng.standard_normal(p.shape).astype(np.float32) for p in a]
        if zero:
            ta.zero_grad()
            fb.zero_grad()
        step(change, what)
    draws = [rng.standard_normal(p.shape).astype(np.float32) for p in a]
    step(lambda ps: setattr(ps[3], "grad", None), "a gradient None: that parameter skipped")
    step(fresh, "its gradient back")
    step(lambda ps: setattr(ps[5], "data", ps[5].data.clone() * 0.5), "a parameter replaced")
    extra = [_params(2, device, SEED + 1) for _ in range(2)]
    ta.add_param_group({"params": extra[0], "lr": 3e-2})
    fb.add_param_group({"params": extra[1], "lr": 3e-2})
    step(written, "a new param group")
    _assert_same(extra[0], extra[1], "the new group")
    state = fb.state_dict()
    want = ta.state_dict()
    steps = [s["step"] for s in state["state"].values()]
    assert len({id(s) for s in steps}) == len(steps), "each parameter its own step"
    assert [float(s) for s in steps] == [float(s["step"]) for s in want["state"].values()]
    fb.load_state_dict(copy.deepcopy(want))    # (as torch.load hands it over)
    step(written, "after load_state_dict")
    assert float(fb.state[b[0]]["step"]) == float(ta.state[a[0]]["step"]) == 9.0
    assert float(fb.state[b[3]]["step"]) == 8.0, "the skipped parameter's count"


def test_sgd_first_momentum_step_then_kept(device):
    a, b = _params(6, device), _params(6, device)
    ta = torch.optim.SGD(a, lr=1e-2, momentum=0.9, dampening=0.3)
    fb = fo.SGD(b, lr=1e-2, momentum=0.9, dampening=0.3)
    b[2].grad = a[2].grad = None     # its buffer's first step comes later
    for k in range(4):
        ta.step()
        fb.step()
        _assert_same(a, b, f"SGD step {k}")
        if k == 1:
            a[2].grad = torch.ones_like(a[2])
            b[2].grad = torch.ones_like(b[2])
