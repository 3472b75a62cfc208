"""Several GPUs in one process (issue 33 item 3): arrays carry their device, foreign arrays land on
theirs, moves between GPUs are peer copies, a device scope chooses where new arrays go, work runs on
its operands' device, two devices in one operation raise naming both, another library switching the
thread's current device never breaks fusedarrays, and one thread per GPU works at once.

Needs two GPUs or more (skipped below two) and PyTorch with CUDA for the foreign-array and
``set_device`` cases (skipped without it). The cpu tier checks the same API on two host devices
(tests/cpu/test_devices.py).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.runtime.backend import device_count

SEED = 33

pytestmark = pytest.mark.skipif(device_count("cuda") < 2, reason="needs two GPUs or more")


def rng():
    return np.random.default_rng(SEED)


def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs PyTorch with two CUDA devices")
    return torch


@pytest.fixture(autouse=True)
def torch_device_zero_after():
    yield
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.set_device(0)
    except ImportError:
        pass


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


def test_the_scope_chooses_where_new_arrays_go():
    with fa.Device("cuda:1"):
        made = [fa.zeros(3), fa.asarray(np.ones(4)), fa.arange(5), fa.eye(2)]
        assert fa.default_device() == "cuda:1"
    assert all(a.device == "cuda:1" for a in made)
    assert fa.zeros(2).device == "cuda:0" and fa.default_device() == "cuda:0"
    assert fa.devices()[:2] == [fa.Device("cuda", 0), fa.Device("cuda", 1)]


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


def test_two_devices_in_one_operation_raise_naming_both():
    x = fa.asarray(np.arange(4.0))
    y = fa.asarray(np.arange(4.0), device="cuda:1")
    with pytest.raises(fa.DeviceMismatchError, match=r"two devices, cuda:[01] and cuda:[01]"):
        (x + y).get()
    with pytest.raises(fa.DeviceMismatchError, match=r"fuse: .*cuda:0 and cuda:1"):
        fa.fuse(lambda a, b: a + b)(x, y)
    np.testing.assert_array_equal((x.to_device("cuda:1") + y).get(), np.arange(4.0) * 2)


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
