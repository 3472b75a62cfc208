"""Leaving on the cpu backend at its defaults: numpy.from_dlpack takes fa arrays (pending ones
computed first, views with negative steps, every dtype) without a copy and keeps their memory
alive; no CUDA array interface in host memory; fa.compute(..., out=...) writes into targets."""

import gc

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api import interop

pytestmark = pytest.mark.usefixtures("cpu_backend")

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.uint64, np.float16, np.float32,
          np.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_from_dlpack_views_and_pending(dtype):
    seed = 140
    host = (np.random.default_rng(seed).standard_normal((130, 70)) * 50).astype(dtype)
    x = fa.asarray(host)
    for view, expect in ((x, host), (x[::-3, 5:60:2], host[::-3, 5:60:2]), (x.T, host.T),
                         (x[7], host[7]), (x[2, 3], host[2, 3])):
        got = np.from_dlpack(view)
        np.testing.assert_array_equal(got, expect, err_msg=f"{seed=}")
        assert got.shape == expect.shape and got.dtype == expect.dtype
    pending = x[::-1] == x[::-1]            # a pending bool expression computes first
    assert pending.pending and np.from_dlpack(pending).all() and not pending.pending


def test_zero_copy_and_lifetime():
    seed = 141
    host = np.random.default_rng(seed).standard_normal(1000)
    y = fa.asarray(host) * 2.0
    got = np.from_dlpack(y)
    y[0] = 123.0                          # the same memory: the write shows
    assert got[0] == 123.0
    expect = got.copy()
    del y
    gc.collect()
    np.testing.assert_array_equal(got, expect)   # the capsule kept the buffer alive
    before = len(interop._live)
    capsule = fa.asarray(host).__dlpack__()       # never consumed: freed with the capsule
    assert len(interop._live) == before + 1
    del capsule
    gc.collect()
    assert len(interop._live) == before


def test_device_stream_and_errors():
    x = fa.asarray(np.arange(5.0))
    assert x.__dlpack_device__() == (1, 0)
    assert not hasattr(x, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="host memory"):
        x.__cuda_array_interface__  # noqa: B018
    with pytest.raises(BufferError, match="device"):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="copy"):
        x.__dlpack__(copy=True)
    with pytest.raises(ValueError, match="stream"):
        x.__dlpack__(stream=5)


def test_compute_into_targets():
    seed = 142
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(300), rng.standard_normal(300)
    x, y = fa.asarray(a), fa.asarray(b)
    out_fa, out_np = fa.empty(300), np.zeros(300)
    result = fa.compute(x * y + 1, np.sqrt(x * x), out=(out_fa, out_np))
    assert result[0] is out_fa and result[1] is out_np
    np.testing.assert_array_equal(out_fa.get(), a * b + 1, err_msg=f"{seed=}")
    np.testing.assert_array_equal(out_np, np.sqrt(a * a), err_msg=f"{seed=}")
    big = fa.asarray(np.zeros((4, 300)))
    fa.compute(x - y, out=big[::-2][0])           # a view as the target
    np.testing.assert_array_equal(big.get()[3], a - b)
    fa.compute(y + 0.0, x + 0.0, out=(x, y))      # targets read by the other array: swapped
    np.testing.assert_array_equal(x.get(), b)
    np.testing.assert_array_equal(y.get(), a)
    with pytest.raises(ValueError, match="one target per array"):
        fa.compute(x, y, out=(out_fa,))
    with pytest.raises(ValueError, match="shape"):
        fa.compute(x, out=fa.empty(3))


def test_release_waits_for_the_consumer_stream():
    """The deleter of a capsule exported to a consumer's stream orders the buffer's reuse after
    that stream (the cuda backend's release_after), falling back to a device synchronisation
    where the stream is gone. A stand-in backend records the calls (no GPU here)."""
    calls = []

    class Recorder:
        def release_after(self, stream):
            calls.append(("after", stream))
            raise RuntimeError("stream destroyed")

        def synchronize(self):
            calls.append(("sync",))

    capsule = fa.asarray(np.ones(3)).__dlpack__()
    ctx = max(interop._live)
    interop._live[ctx] = interop._live[ctx][:4] + ((Recorder(), 77),)
    del capsule
    gc.collect()
    assert calls == [("after", 77), ("sync",)] and ctx not in interop._live
