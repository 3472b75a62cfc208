"""Captured steps on the cpu backend (``runtime/capture.py``): ``fa.capture`` / ``fa.graph`` record
launches and ``replay()`` runs them again; a device step count and learning rate as 0-d arrays
shared by every tensor of a ``foreach``; ``fusedarrays.optim``'s ``capturable=True`` against
``torch.optim``; the refusals; foreach holding no old arrays; PyTorch cpu tensors written in place.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.fuse.function import fuse
from fusedarrays.optim import functional as F

SEED = 3401
SIZES = [5, 300, 7001]     # several tensors, one not a whole number of vectors


@fuse
def _add_one(s):
    s += 1


@fuse
def _scaled_step(p, g, lr, step):
    p[...] = p - lr * g / (1 - 0.9 ** step)


def _lists(rng, dtype=np.float32):
    host = [rng.standard_normal(n).astype(dtype) for n in SIZES]
    return host, [fa.asarray(x) for x in host]


def _reference(p, g, lr, step):
    return p - np.float32(lr) * g / (np.float32(1) - np.float32(0.9) ** np.float32(step))


def test_capture_replays_a_foreach_step_with_a_device_step_count():
    rng = np.random.default_rng(SEED)
    P, p = _lists(rng)
    G, g = _lists(rng)
    lr, step = fa.asarray(np.float32(0.05)), fa.zeros((), np.float32)
    _add_one(step)
    _scaled_step.foreach(p, g, lr, step)          # eager: compiles, makes the tables
    want = [_reference(x, y, 0.05, 1) for x, y in zip(P, G)]
    launches = fa.stats()["launches"]
    with fa.capture() as graph:
        _add_one(step)
        _scaled_step.foreach(p, g, lr, step)
    assert fa.stats()["launches"] == launches, "a capture runs nothing"
    assert float(step.get()) == 1.0
    for k in range(2, 12):                        # 10 replays = 10 eager steps
        if k == 7:
            lr[...] = np.float32(0.01)            # a schedule: the kernel reads the new value
        graph.replay()
        want = [_reference(w, y, 0.05 if k < 7 else 0.01, k) for w, y in zip(want, G)]
    assert float(step.get()) == 11.0
    for got, w in zip(p, want):
        np.testing.assert_allclose(got.get(), w, rtol=2e-6, atol=1e-6, err_msg=f"seed {SEED}")


def test_graph_of_a_function_keeps_its_outputs_and_temporaries():
    rng = np.random.default_rng(SEED + 1)
    x = fa.asarray(rng.standard_normal((300, 257)).astype(np.float32))
    scale = fa.asarray(np.float32(2.0))
    recorded = fa.graph(lambda: (fa.sqrt(x * x) * scale).sum(axis=1))
    out = recorded.outputs
    ref = weakref.ref(graph_buffer(out))
    del out
    gc.collect()
    assert ref() is not None, "the graph keeps what it writes"
    for value in (3.0, 0.5):
        scale[...] = np.float32(value)
        recorded.replay()
        np.testing.assert_allclose(recorded.outputs.get(),
                                   (np.abs(x.get()) * value).sum(axis=1), rtol=1e-5)


def graph_buffer(a):
    return a._node.attrs[0]


def test_a_host_read_inside_a_capture_raises_and_the_capture_ends():
    step = fa.zeros((), np.float32)
    with pytest.raises(fa.CaptureError, match=r"x\.get\(\) reads device memory"):
        with fa.capture():
            _add_one(step)
            step.get()
    _add_one(step)                                # no capture left active: it runs
    assert float(step.get()) == 1.0
    with pytest.raises(fa.CaptureError, match="captures do not nest"):
        with fa.capture():
            with fa.capture():
                pass


def test_on_stream_changes_nothing_on_the_host_backend():
    step = fa.zeros((), np.float32)
    with fa.on_stream(0):
        _add_one(step)
    assert float(step.get()) == 1.0


def test_foreach_refuses_writing_a_shared_array_and_a_shared_vector():
    @fuse
    def bump(p, s):
        p += s
        s += 1

    p = [fa.ones(4, np.float32), fa.ones(6, np.float32)]
    with pytest.raises(fa.UnsupportedOperationError, match="writes a 0-d array that every"):
        bump.foreach(p, fa.zeros((), np.float32))
    with pytest.raises(TypeError, match=r"shape \(4,\); pass arrays as lists"):
        _scaled_step.foreach(p, p, fa.ones(4, np.float32), 1.0)


def test_foreach_holds_no_arrays_of_its_last_call():
    rng = np.random.default_rng(SEED + 2)
    _, p = _lists(rng)
    _, g = _lists(rng)
    _scaled_step.foreach(p, g, 0.1, 1.0)
    refs = [weakref.ref(graph_buffer(a)) for a in g]
    del g
    gc.collect()
    assert all(r() is None for r in refs), "the old gradients' memory was kept"
    _, g2 = _lists(rng)
    _scaled_step.foreach(p, g2, 0.1, 1.0)         # a new call over new arrays works


def test_a_torch_cpu_tensor_is_written_in_place():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(SEED + 3)
    host = rng.standard_normal(300).astype(np.float32)
    p, g = torch.from_numpy(host.copy()), torch.ones(300)
    _scaled_step(p, g, 0.5, 1.0)
    np.testing.assert_allclose(p.numpy(), _reference(host, 1.0, 0.5, 1), rtol=1e-6)
    plist = [torch.from_numpy(host.copy())]
    _scaled_step.foreach(plist, [g], 0.5, 1.0)
    np.testing.assert_allclose(plist[0].numpy(), _reference(host, 1.0, 0.5, 1), rtol=1e-6)
    with pytest.raises(fa.UnsupportedOperationError, match=r"requires grad: tensor\.detach"):
        _scaled_step(torch.ones(3, requires_grad=True), torch.ones(3), 0.5, 1.0)


def test_functional_adamw_with_device_step_and_lr_equals_host_scalars():
    rng = np.random.default_rng(SEED + 4)
    P, p1 = _lists(rng)
    G, g = _lists(rng)
    p2 = [fa.asarray(x) for x in P]
    m1, v1 = [fa.zeros(n, np.float32) for n in SIZES], [fa.zeros(n, np.float32) for n in SIZES]
    m2, v2 = [fa.zeros(n, np.float32) for n in SIZES], [fa.zeros(n, np.float32) for n in SIZES]
    step, lr = fa.zeros((), np.float32), fa.asarray(np.float32(1e-2))
    for k in range(1, 4):
        F.adamw(p1, g, m1, v1, step=k, lr=1e-2)
        F.increment(step)
        F.adamw(p2, g, m2, v2, step=step, lr=lr)
    for a, b in zip(p1, p2):
        # float32 bias corrections in the kernel against float64 ones on the host
        np.testing.assert_allclose(b.get(), a.get(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt_name", ["AdamW", "Adam"])
def test_capturable_torch_optimizer_replayed_equals_torch(opt_name):
    torch = pytest.importorskip("torch")
    import fusedarrays.optim as fo

    gen = torch.Generator().manual_seed(SEED)
    shapes = [(7,), (30, 11), (4, 5000)]
    ref = [torch.randn(s, generator=gen) for s in shapes]
    ours = [t.clone() for t in ref]
    grads = [[torch.randn(s, generator=gen) for s in shapes] for _ in range(11)]
    kw = dict(lr=torch.tensor(1e-2), betas=(0.9, 0.99), weight_decay=0.05)
    opt_ref = getattr(torch.optim, opt_name)([torch.nn.Parameter(t) for t in ref], **kw)
    params = [torch.nn.Parameter(t) for t in ours]
    opt = getattr(fo, opt_name)(params, capturable=True, **kw)
    for p, gr in zip(params, grads[0]):
        p.grad = gr.clone()
    opt.step()                                     # eager: states, tables, compiles
    recorded = fa.graph(opt.step)
    for k in range(11):
        for p, q, gr in zip(params, opt_ref.param_groups[0]["params"], grads[k]):
            q.grad = gr.clone()
            if k:
                p.grad.copy_(gr)                   # the captured step reads p.grad in place
        opt_ref.step()
        if k:
            recorded.replay()
        if k == 5:                                 # a schedule: lr is a tensor both read
            opt.param_groups[0]["lr"].fill_(5e-3)
            opt_ref.param_groups[0]["lr"].fill_(5e-3)
    for p, q in zip(params, opt_ref.param_groups[0]["params"]):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)
    steps = {id(opt.state[p]["step"]) for p in params}
    assert len(steps) == 1 and float(opt.state[params[0]]["step"]) == 11.0
    saved = opt.state_dict()                       # each parameter its own count, as torch's
    assert len({id(s["step"]) for s in saved["state"].values()}) == len(params)
    opt_ref.load_state_dict(saved)
    opt.load_state_dict(opt_ref.state_dict())
    assert len({id(opt.state[p]["step"]) for p in params}) == 1


def test_a_captured_step_without_capturable_raises():
    torch = pytest.importorskip("torch")
    import fusedarrays.optim as fo

    p = torch.nn.Parameter(torch.ones(10))
    p.grad = torch.ones(10)
    opt = fo.AdamW([p], lr=1e-3)
    with pytest.raises(fa.CaptureError, match="needs capturable=True"):
        fa.graph(opt.step)
