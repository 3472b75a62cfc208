"""CUDA graphs on the device (``runtime/capture.py``, ``cuda/graphs.py``): a fused Adam step over
many tensors captured once by ``fa.capture`` (one CUDA graph through ``cuda.core``'s graph
builder) and replayed 10 times equals 10 eager steps, its bias correction from the on-device step
count; the captured launches run only at replay; arrays a captured function returns are kept by
the graph; ``fusedarrays.optim.AdamW(capturable=True)`` captured inside ``torch.cuda.graph`` (fa on
PyTorch's capturing stream) equals torch's own capturable AdamW; an allocation inside
``fa.on_stream`` is refused; host microseconds per replay."""

import time

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.fuse.function import fuse
from fusedarrays.optim import functional as F

SEED = 34041
SIZES = [1, 5, 4096, 4099, 70_001, 300_000] + [257] * 40    # 46 tensors, odd and whole sizes


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def _state(rng):
    host = {k: [rng.standard_normal(n).astype(np.float32) for n in SIZES] for k in "pg"}
    host["m"] = [np.zeros(n, np.float32) for n in SIZES]
    host["v"] = [np.zeros(n, np.float32) for n in SIZES]
    return host, {k: [fa.asarray(x) for x in xs] for k, xs in host.items()}


def test_adam_over_many_tensors_replayed_equals_eager_steps():
    rng = np.random.default_rng(SEED)
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
                                       err_msg=f"{name} of tensor {t} (seed {SEED})")


def test_lr_written_between_replays_is_read_and_outputs_are_kept():
    rng = np.random.default_rng(SEED + 1)
    x = fa.asarray(rng.standard_normal((300, 257)).astype(np.float32))
    scale = fa.asarray(np.float32(2.0))
    recorded = fa.graph(lambda: (x * scale).sum(axis=1))
    for value in (3.0, -0.5):
        scale[...] = np.float32(value)
        recorded.replay()
        np.testing.assert_allclose(recorded.outputs.get(), x.get().sum(axis=1) * value,
                                   rtol=1e-4, atol=1e-4)


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


def test_fa_step_inside_torch_cuda_graph_equals_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    import fusedarrays.optim as fo

    gen = torch.Generator(device="cuda").manual_seed(SEED)
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


def test_on_stream_refuses_an_allocation():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    x = fa.ones(10, np.float32)
    with pytest.raises(fa.CaptureError, match="would allocate memory"):
        with fa.on_stream(torch.cuda.Stream()):
            (x * 2).compute()


def test_a_host_read_inside_a_capture_raises():
    x = fa.ones(10, np.float32)
    with pytest.raises(fa.CaptureError, match="reads device memory on the host"):
        with fa.capture():
            float((x * 2).sum())
