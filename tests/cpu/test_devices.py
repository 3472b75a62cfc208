"""Devices as values on the cpu backend: two host devices (``FUSEDARRAYS_CPU_DEVICES=2``, the
non-default setting this file is about) stand in for two GPUs, each with its own backend object,
memory, launch records and loaded kernels.

Covers what tests/gpu/test_devices_gpu.py checks on two GPUs, in host memory: ``x.device``, the
device scope (nested, per thread), ``device=`` of creation functions, ``to_device`` and
``asarray(device=)`` of views, work on its operands' device (elementwise, reductions at the
``rows`` and ``tiled`` shapes, ``fa.fuse``, ``foreach``), and the error that names both devices
when operands are on two.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 33


@pytest.fixture(autouse=True)
def two_host_devices():
    # two host devices stand in for two GPUs (the default is one): every case here is about
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
