"""Captured steps (``runtime/capture.py``), by tier: ``fa.capture`` / ``fa.graph`` record launches
and ``replay()`` runs them again, with a step count and learning rate as 0-d arrays on the device.

- cpu: a device step count and learning rate shared by every tensor of a ``foreach``;
  ``fusedarrays.optim``'s ``capturable=True`` against ``torch.optim``; the refusals; foreach
  holding no old arrays; PyTorch cpu tensors written in place.
- sim: the CUDA foreach kernel reading a 0-d step count and learning rate shared by every tensor
  (through row 0 of its pointer table, vector and element paths), replayed, against NumPy. Arrays
  stay tiny: each simulated thread is a Python thread.
- cuda (``cuda/graphs.py``): a fused Adam step over many tensors captured once (one CUDA graph
  through ``cuda.core``'s graph builder) and replayed 10 times equals 10 eager steps, its bias
  correction from the on-device step count; the captured launches run only at replay; arrays a
  captured function returns are kept by the graph; ``fusedarrays.optim.AdamW(capturable=True)``
  captured inside ``torch.cuda.graph`` (fa on PyTorch's capturing stream) equals torch's own
  capturable AdamW; an allocation inside ``fa.on_stream`` is refused; host microseconds per
  replay.
"""

from __future__ import annotations

import gc
import time
import weakref

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.fuse.function import fuse
from fusedarrays.optim import functional as F

SEED = 3401
SIZES = [5, 300, 7001]     # several tensors, one not a whole number of vectors
SIM_SEED = 3402
CUDA_SEED = 34041
CUDA_SIZES = [1, 5, 4096, 4099, 70_001, 300_000] + [257] * 40   # 46 tensors, odd and whole


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


# sim

@pytest.mark.tiers("sim")
def test_replayed_foreach_reads_the_device_step_and_lr():
    rng = np.random.default_rng(SIM_SEED)
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
        np.testing.assert_allclose(got.get(), w, rtol=2e-6, atol=1e-6, err_msg=f"seed {SIM_SEED}")


# cuda

def _state(rng):
    host = {k: [rng.standard_normal(n).astype(np.float32) for n in CUDA_SIZES] for k in "pg"}
    host["m"] = [np.zeros(n, np.float32) for n in CUDA_SIZES]
    host["v"] = [np.zeros(n, np.float32) for n in CUDA_SIZES]
    return host, {k: [fa.asarray(x) for x in xs] for k, xs in host.items()}


@pytest.mark.tiers("cuda")
def test_adam_over_many_tensors_replayed_equals_eager_steps():
    rng = np.random.default_rng(CUDA_SEED)
    host, eager = _state(rng)
    graphed = {k: [fa.asarray(x) for x in xs] for k, xs in host.items()}
    step, lr = fa.zeros((), np.float32), fa.asarray(np.float32(1e-2))
    kw = dict(beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.05)
    F.increment(step)
    F.adamw(graphed["p"], graphed["g"], graphed["m"], graphed["v"], step=step, lr=lr, **kw)
    F.adamw(eager["p"], eager["g"], eager["m"], eager["v"], step=1, lr=1e-2, **kw)
    before = graphed["p"][3].get()
    with fa.capture() as graph:
        F.increment(step)
        F.adamw(graphed["p"], graphed["g"], graphed["m"], graphed["v"], step=step, lr=lr, **kw)
    assert len(graph.launches) == 2
    np.testing.assert_array_equal(graphed["p"][3].get(), before)  # capturing ran nothing
    for k in range(2, 12):
        graph.replay()
        F.adamw(eager["p"], eager["g"], eager["m"], eager["v"], step=k, lr=1e-2, **kw)
    assert float(step.get()) == 11.0
    for name in "pmv":
        for t, (a, b) in enumerate(zip(graphed[name], eager[name])):
            # float32 bias corrections on the device against float64 ones on the host
            np.testing.assert_allclose(a.get(), b.get(), rtol=2e-5, atol=1e-6,
                                       err_msg=f"{name} of tensor {t} (seed {CUDA_SEED})")


@pytest.mark.tiers("cuda")
def test_lr_written_between_replays_is_read_and_outputs_are_kept():
    rng = np.random.default_rng(CUDA_SEED + 1)
    x = fa.asarray(rng.standard_normal((300, 257)).astype(np.float32))
    scale = fa.asarray(np.float32(2.0))
    recorded = fa.graph(lambda: (x * scale).sum(axis=1))
    for value in (3.0, -0.5):
        scale[...] = np.float32(value)
        recorded.replay()
        np.testing.assert_allclose(recorded.outputs.get(), x.get().sum(axis=1) * value,
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.tiers("cuda")
def test_host_microseconds_per_replay():
    @fuse
    def step_fn(p, g, lr, step):
        p[...] = p - lr * g / (1 - 0.9 ** step)

    @fuse
    def add_one(s):
        s += 1

    p = [fa.ones(n, np.float32) for n in [4096] * 148]
    g = [fa.ones(n, np.float32) for n in [4096] * 148]
    lr, step = fa.asarray(np.float32(1e-3)), fa.zeros((), np.float32)
    step_fn.foreach(p, g, lr, step)
    with fa.capture() as graph:
        add_one(step)
        step_fn.foreach(p, g, lr, step)
    graph.replay()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(200):
            graph.replay()
        best = min(best, (time.perf_counter() - start) / 200 * 1e6)
        float(step.get())                       # the queue drained between batches
    print(f"host µs per replay: {best:.2f}")
    assert best < 30, f"{best:.1f} µs per replay (target <= 10)"


@pytest.mark.tiers("cuda")
def test_fa_step_inside_torch_cuda_graph_equals_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    import fusedarrays.optim as fo

    gen = torch.Generator(device="cuda").manual_seed(CUDA_SEED)
    shapes = [(7,), (300, 11), (4, 5000), (1000,)]
    grads = [[torch.randn(s, device="cuda", generator=gen) for s in shapes] for _ in range(11)]
    start = [torch.randn(s, device="cuda", generator=gen) for s in shapes]
    kw = dict(lr=torch.tensor(1e-2, device="cuda"), betas=(0.9, 0.99), weight_decay=0.05)
    ref = [torch.nn.Parameter(t.clone()) for t in start]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    theirs = torch.optim.AdamW(ref, capturable=True, foreach=True, **kw)
    opt = fo.AdamW(ours, capturable=True, **{**kw, "lr": kw["lr"].clone()})
    for p, q, g in zip(ours, ref, grads[0]):
        p.grad, q.grad = g.clone(), g.clone()
    side = torch.cuda.Stream()                  # torch's warm-up recipe, on a side stream
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        opt.step()
        theirs.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        opt.step()                              # fa launches on torch's capturing stream
    for k in range(1, 11):
        for p, q, g in zip(ours, ref, grads[k]):
            p.grad.copy_(g)
            q.grad.copy_(g)
        graph.replay()
        theirs.step()
    torch.cuda.synchronize()
    for p, q in zip(ours, ref):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)
    assert float(opt.state[ours[0]]["step"]) == 11.0


@pytest.mark.tiers("cuda")
def test_on_stream_refuses_an_allocation():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    x = fa.ones(10, np.float32)
    with pytest.raises(fa.CaptureError, match="would allocate memory"):
        with fa.on_stream(torch.cuda.Stream()):
            (x * 2).compute()


@pytest.mark.tiers("cuda")
def test_a_host_read_inside_a_capture_raises():
    x = fa.ones(10, np.float32)
    with pytest.raises(fa.CaptureError, match="reads device memory on the host"):
        with fa.capture():
            float((x * 2).sum())
