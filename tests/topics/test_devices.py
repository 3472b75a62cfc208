"""Devices as values, by tier: arrays carry their device, a device scope (nested, per thread)
chooses where new arrays go, moves are copies, work runs on its operands' device, two devices in
one operation raise naming both, and one thread per device works at once.

- cpu: two host devices (``FUSEDARRAYS_CPU_DEVICES=2``, the non-default setting these cases are
  about) stand in for two GPUs, each with its own backend object, memory, launch records and
  loaded kernels: ``x.device``, the scope, ``device=`` of creation functions, ``to_device`` and
  ``asarray(device=)`` of views, work on its operands' device (elementwise, reductions at the
  ``rows`` and ``tiled`` shapes, ``fa.fuse``, ``foreach``), the errors.
- cuda (issue 33 item 3), several GPUs in one process: foreign arrays land on their device,
  moves between GPUs are peer copies, another library switching the thread's current device
  never breaks fusedarrays. Needs two GPUs or more (skipped below two) and PyTorch with CUDA for
  the foreign-array and ``set_device`` cases (skipped without it).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.runtime.backend import device_count

SEED = 33


@pytest.fixture(autouse=True)
def two_host_devices(tier):
    if tier != "cpu":
        yield
        return
    # cpu: two host devices stand in for two GPUs (the default is one): every case here is about
    # several devices; the default single device runs in every other test
    with config.override(CPU_DEVICES=2):
        yield


def rng():
    return np.random.default_rng(SEED)


VIEWS = {
    "whole": lambda a: a,
    "transposed": lambda a: a.T,
    "negative steps": lambda a: a[::-2, ::-1],
    "slice": lambda a: a[3:40:3, 5:],
}


def test_devices_and_the_scope():
    assert fa.devices() == [fa.Device("cpu"), fa.Device("cpu", 1)]
    assert fa.__array_namespace_info__().devices() == fa.devices()
    assert fa.default_device() == "cpu" and fa.zeros(2).device == "cpu"
    with fa.Device("cpu:1") as device:
        assert device == "cpu:1" and fa.default_device() == device
        assert fa.asarray(np.ones(3)).device == device and fa.arange(4).device == device
        with fa.Device("cpu"):
            assert fa.ones(2).device == "cpu"
        assert fa.full((2, 2), 7.0).device == device
    assert fa.default_device() == "cpu"
    for device in fa.devices():   # a Device of a Device is that device (as torch.device's)
        with fa.Device(device):
            assert fa.zeros(1).device == device


def test_the_scope_is_the_threads_own():
    seen = {}
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait()
        seen["other"] = str(fa.zeros(1).device)
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with fa.Device("cpu:1"):
        inside.set()
        done.wait(30)
        seen["mine"] = str(fa.zeros(1).device)
    thread.join()
    assert seen == {"other": "cpu", "mine": "cpu:1"}


def test_scopes_end_in_order():
    outer, inner = fa.Device("cpu:1"), fa.Device("cpu")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="ended out of order"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)


def test_creation_functions_take_device():
    one = fa.Device("cpu", 1)
    made = [fa.empty(3, device=one), fa.zeros((2, 3), device="cpu:1"),
            fa.arange(5, device=one), fa.linspace(0, 1, 5, device=one),
            fa.eye(3, device=one), fa.full(3, 2.0, device=1)]
    assert all(a.device == one for a in made), [a.device for a in made]
    x = fa.asarray(np.ones((2, 3)), device=one)
    assert fa.zeros_like(x).device == one and fa.ones_like(x, device="cpu").device == "cpu"
    np.testing.assert_array_equal(fa.eye(3, device=one).get(), np.eye(3))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128])
@pytest.mark.parametrize("view", list(VIEWS))
def test_to_device_both_ways_keeps_the_values(dtype, view):
    a = (rng().standard_normal((60, 45)) * 100).astype(dtype)
    x = fa.asarray(a)
    moved = VIEWS[view](x).to_device("cpu:1")
    assert moved.device == "cpu:1"
    np.testing.assert_array_equal(moved.get(), VIEWS[view](a))
    back = fa.asarray(moved, device="cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.get(), VIEWS[view](a))
    pending = (VIEWS[view](x) * 2).to_device(fa.Device("cpu", 1))   # computed first, moved
    np.testing.assert_array_equal(pending.get(), VIEWS[view](a) * 2)


def test_moving_is_a_copy_and_staying_is_not():
    x = fa.asarray(np.arange(6.0))
    assert x.to_device("cpu") is x and fa.asarray(x, device="cpu") is x
    y = x.to_device("cpu:1")
    y[0] = 100.0
    assert x.get()[0] == 0.0
    with pytest.raises(ValueError, match=r"copy=False.*cpu.*device=cpu:1 needs a copy"):
        fa.asarray(x, device="cpu:1", copy=False)


def test_work_runs_on_its_operands_device():
    g = rng()
    a, b = g.standard_normal((300, 257)), g.standard_normal((300, 257))
    with fa.Device("cpu:1"):
        x, y = fa.asarray(a), fa.asarray(b)
    outputs = {"expression": fa.sqrt(x * x + y * y) - 1.5,
               "row sums": fa.sum(x * y, axis=1), "column means": fa.mean(x, axis=0),
               "full max": fa.max(x - y)}
    expected = {"expression": np.sqrt(a * a + b * b) - 1.5, "row sums": np.sum(a * b, axis=1),
                "column means": a.mean(axis=0), "full max": np.max(a - b)}
    for name, out in outputs.items():
        assert out.device == "cpu:1", name
        np.testing.assert_allclose(out.get(), expected[name], rtol=1e-12, err_msg=name)
    wide = g.standard_normal((4, 5000)).astype(np.float32)
    total = fa.sum(fa.asarray(wide, device="cpu:1") * 2, axis=1)
    assert total.device == "cpu:1"
    np.testing.assert_allclose(total.get(), (wide * 2).sum(axis=1), rtol=1e-5)


def test_the_same_expression_on_each_device_uses_each_devices_record():
    a = rng().standard_normal(1000)
    for device in ("cpu", "cpu:1", "cpu", "cpu:1"):
        x = fa.asarray(a, device=device)
        out = x * 3.0 + 1.0
        np.testing.assert_allclose(out.get(), a * 3.0 + 1.0, rtol=1e-15)
        assert out.device == device


def adam(p, g, m, v, lr, beta1, beta2, eps):
    m[...] = beta1 * m + (1 - beta1) * g
    v[...] = beta2 * v + (1 - beta2) * g * g
    p[...] = p - lr * m / (fa.sqrt(v) + eps)


def adam_numpy(p, g, m, v, lr, beta1, beta2, eps):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * m / (np.sqrt(v) + eps), m, v


def test_fuse_runs_on_its_arguments_device():
    g = rng()
    host = [g.standard_normal(777).astype(np.float32) for _ in range(4)]
    host[3] = np.abs(host[3])
    step = fa.fuse(adam)
    expected = adam_numpy(*host, 1e-3, 0.9, 0.999, 1e-8)
    for device in ("cpu:1", "cpu"):
        p, grad, m, v = (fa.asarray(h, device=device) for h in host)
        step(p, grad, m, v, 1e-3, 0.9, 0.999, 1e-8)
        assert p.device == device
        for got, want in zip((p, m, v), expected):
            np.testing.assert_allclose(got.get(), want, rtol=2e-6, atol=1e-7)


def test_two_devices_in_one_operation_raise_naming_both():
    x = fa.asarray(np.arange(4.0))
    y = fa.asarray(np.arange(4.0), device="cpu:1")
    with pytest.raises(fa.DeviceMismatchError,
                       match=r"two devices, (cpu:1 and cpu|cpu and cpu:1); move one with"):
        (x + y).get()
    with pytest.raises(ValueError, match=r"fuse: adam: .*two devices, cpu and cpu:1"):
        fa.fuse(adam)(x, y, x.copy(), x.copy(), 1e-3, 0.9, 0.999, 1e-8)
    one = fa.fuse(lambda a, b: a * b)
    with pytest.raises(fa.DeviceMismatchError, match=r"foreach: .*cpu and cpu:1"):
        one.foreach([x, x], [x.copy(), y])
    np.testing.assert_array_equal((x + y.to_device("cpu")).get(), np.arange(4.0) * 2)


def test_an_unknown_device_says_which_there_are():
    with pytest.raises(fa.DeviceUnavailableError,
                       match=r"asarray: device cpu:2 is not available.*cpu, cpu:1"):
        fa.asarray([1.0], device="cpu:2")
    with pytest.raises(fa.DeviceUnavailableError, match=r"full: device cuda:0.*cpu backend"):
        fa.zeros(3, device="cuda:0")
    with pytest.raises(TypeError, match="to_device: 2.5 is not a device"):
        fa.zeros(3).to_device(2.5)


def test_one_thread_per_device_at_once():
    g = rng()
    data = {d: g.standard_normal((64, 300)).astype(np.float32) for d in ("cpu", "cpu:1")}
    results, errors = {}, []
    start = threading.Barrier(2)

    def work(device):
        try:
            with fa.Device(device):
                x = fa.asarray(data[device])
                start.wait()
                for _ in range(10):
                    x = x * 0.5 + 1.0
                results[device] = (fa.sum(x, axis=1).get(), x.device)
        except Exception as e:   # re-raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(d,)) for d in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for device, a in data.items():
        want = a.copy()
        for _ in range(10):
            want = want * 0.5 + 1.0
        got, where = results[device]
        assert where == device
        np.testing.assert_allclose(got, want.sum(axis=1), rtol=1e-5)


# cuda

def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs PyTorch with two CUDA devices")
    return torch


@pytest.fixture(autouse=True)
def two_gpus_and_torch_device_zero_after(tier):
    if tier != "cuda":
        yield
        return
    if device_count("cuda") < 2:
        pytest.skip("needs two GPUs or more")
    yield
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.set_device(0)
    except ImportError:
        pass


@pytest.mark.tiers("cuda")
def test_asarray_of_a_torch_tensor_on_cuda_1_lands_there_without_a_copy():
    torch = torch_cuda()
    t = torch.arange(12, dtype=torch.float32, device="cuda:1").reshape(3, 4)
    x = fa.asarray(t)
    assert x.device == "cuda:1" and x.device == fa.Device("cuda", 1)
    y = (x * 2 + 1).T
    assert y.device == "cuda:1"
    np.testing.assert_array_equal(y.get(), (np.arange(12.0).reshape(3, 4) * 2 + 1).T)
    x[0, 0] = 100.0            # a view of the tensor's memory
    torch.cuda.synchronize(1)
    assert t[0, 0].item() == 100.0
    back = torch.from_dlpack(y)
    assert back.device == torch.device("cuda:1")


@pytest.mark.tiers("cuda")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_to_device_both_ways_with_views(dtype):
    a = (rng().standard_normal((512, 300)) * 100).astype(dtype)
    x = fa.asarray(a)
    assert x.device == "cuda:0"
    for view, ref in [(x, a), (x.T, a.T), (x[::-3, ::-1], a[::-3, ::-1]), (x[7:200:2], a[7:200:2])]:
        there = view.to_device("cuda:1")
        assert there.device == "cuda:1"
        np.testing.assert_array_equal(there.get(), ref)
        again = fa.asarray(there * 1, device="cuda:0")
        assert again.device == "cuda:0"
        np.testing.assert_array_equal(again.get(), ref)


@pytest.mark.tiers("cuda")
def test_a_peer_copy_is_ordered_after_the_work_that_writes_its_source():
    """A long computation on cuda:0 then a move: the copy sees the finished values, and freeing
    the source right after cannot hand its memory to new work before the copy has read it."""
    n = 1 << 24
    x = fa.asarray(np.ones(n, np.float32))
    for _ in range(20):
        x = x * 1.0001 + 0.0001
    moved = x.to_device("cuda:1")
    del x
    junk = [fa.zeros(n, np.float32) + k for k in range(4)]   # reuses the freed blocks
    expected = np.float32(1)
    for _ in range(20):
        expected = np.float32(expected * np.float32(1.0001) + np.float32(0.0001))
    np.testing.assert_allclose(moved.get()[[0, n // 2, n - 1]], expected, rtol=1e-5)
    assert all(j.device == "cuda:0" for j in junk)


@pytest.mark.tiers("cuda")
def test_the_scope_chooses_where_new_arrays_go():
    with fa.Device("cuda:1"):
        made = [fa.zeros(3), fa.asarray(np.ones(4)), fa.arange(5), fa.eye(2)]
        assert fa.default_device() == "cuda:1"
    assert all(a.device == "cuda:1" for a in made)
    assert fa.zeros(2).device == "cuda:0" and fa.default_device() == "cuda:0"
    assert fa.devices()[:2] == [fa.Device("cuda", 0), fa.Device("cuda", 1)]


@pytest.mark.tiers("cuda")
def test_a_reduction_and_a_fused_adam_step_on_cuda_1():
    g = rng()
    a = g.standard_normal((300, 257)).astype(np.float32)
    with fa.Device(1):
        x = fa.asarray(a)
    for axis in (None, 0, 1):
        out = fa.sum(x * x, axis=axis)
        assert out.device == "cuda:1"
        np.testing.assert_allclose(out.get(), (a * a).sum(axis=axis), rtol=2e-4)
    host = [g.standard_normal(1 << 20).astype(np.float32) for _ in range(4)]
    host[3] = np.abs(host[3])

    @fa.fuse
    def adam(p, grad, m, v, lr, beta1, beta2, eps):
        m[...] = beta1 * m + (1 - beta1) * grad
        v[...] = beta2 * v + (1 - beta2) * grad * grad
        p[...] = p - lr * m / (fa.sqrt(v) + eps)

    p, grad, m, v = (fa.asarray(h, device="cuda:1") for h in host)
    adam(p, grad, m, v, 1e-3, 0.9, 0.999, 1e-8)
    m_ref = 0.9 * host[2] + 0.1 * host[1]
    v_ref = 0.999 * host[3] + 0.001 * host[1] ** 2
    p_ref = host[0] - 1e-3 * m_ref / (np.sqrt(v_ref) + 1e-8)
    assert p.device == "cuda:1"
    np.testing.assert_allclose(p.get(), p_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v.get(), v_ref, rtol=1e-5)


@pytest.mark.tiers("cuda")
def test_two_gpus_in_one_operation_raise_naming_both():
    x = fa.asarray(np.arange(4.0))
    y = fa.asarray(np.arange(4.0), device="cuda:1")
    with pytest.raises(fa.DeviceMismatchError, match=r"two devices, cuda:[01] and cuda:[01]"):
        (x + y).get()
    with pytest.raises(fa.DeviceMismatchError, match=r"fuse: .*cuda:0 and cuda:1"):
        fa.fuse(lambda a, b: a + b)(x, y)
    np.testing.assert_array_equal((x.to_device("cuda:1") + y).get(), np.arange(4.0) * 2)


@pytest.mark.tiers("cuda")
def test_another_library_switching_the_current_device_never_breaks_fa():
    torch = torch_cuda()
    a = rng().standard_normal(10000).astype(np.float32)
    x = fa.asarray(a)                           # cuda:0
    torch.cuda.set_device(1)
    y = fa.sqrt(x * x) + 1.0
    np.testing.assert_allclose(y.get(), np.abs(a) + 1.0, rtol=1e-6)
    z = fa.asarray(a)                           # no scope: cuda:0
    assert z.device == "cuda:0" and float(fa.sum(z - x)) == 0.0
    # and fa left torch's choice alone
    assert torch.cuda.current_device() == 1
    t = torch.ones(3, device="cuda")
    assert t.device == torch.device("cuda:1")


@pytest.mark.tiers("cuda")
def test_one_thread_per_gpu_at_once():
    count = min(device_count("cuda"), 8)
    g = rng()
    data = [g.standard_normal(1 << 22).astype(np.float32) for _ in range(count)]
    results, errors = {}, []
    start = threading.Barrier(count)

    def work(k):
        try:
            with fa.Device("cuda", k):
                x = fa.asarray(data[k])
                start.wait()
                for _ in range(50):
                    x = x * 0.5 + 1.0
                results[k] = (float(fa.sum(x)), str(x.device))
        except Exception as e:   # reported in the test's thread
            errors.append((k, e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(count):
        want = data[k].astype(np.float64)
        for _ in range(50):
            want = want * 0.5 + 1.0
        total, where = results[k]
        assert where == f"cuda:{k}"
        np.testing.assert_allclose(total, want.sum(), rtol=1e-4)
