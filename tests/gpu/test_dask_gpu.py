"""fa chunks of dask on the GPU: distributed's ``cuda`` serializer family (device buffers as
frames, no host copy) and its host families, chunks launched by the end of their task, and
dask-cuda's ``LocalCUDACluster`` (one worker per GPU; skipped without dask-cuda, its two-worker
case without two GPUs) against NumPy.

Run on ``nvidia-h200-x2``: ``python -m pytest tests/gpu/test_dask_gpu.py -q``."""

import os

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
serialize = pytest.importorskip("distributed.protocol.serialize")
from dask.sizeof import sizeof  # noqa: E402

SEED = 20261206
ALL = ("cuda", "dask", "pickle")


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def views(dtype):
    x = np.random.default_rng(SEED).standard_normal((300, 257)) * 4
    a = fa.asarray(x.astype(dtype))
    pending = ~a[5:200] if dtype is np.bool_ else a[5:200] * 2
    return {"contiguous": a, "transposed": a.T, "negative steps": a[::-2, ::-3],
            "pending": pending}


def received(frame):
    """The frame as a comm hands it over: a new device buffer (CuPy's, where installed)."""
    try:
        import cupy
    except ImportError:
        return frame
    return cupy.asarray(frame).copy()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_, np.complex64])
def test_cuda_family_moves_device_buffers(dtype):
    for what, v in views(dtype).items():
        want = v.get()
        header, frames = serialize.serialize(v, serializers=ALL)
        assert header["serializer"] == "cuda", (what, header["serializer"])
        (frame,) = frames
        cai = frame.__cuda_array_interface__
        assert cai["shape"] == (want.nbytes,) and cai["typestr"] == "|u1", cai
        if what == "contiguous":        # the array's own memory, not a copy
            assert cai["data"][0] == v.__cuda_array_interface__["data"][0]
        for f in (frame, received(frame)):
            back = serialize.deserialize(header, [f])
            assert isinstance(back, fa.ndarray) and back.dtype == want.dtype, (what, back)
            np.testing.assert_array_equal(back.get(), want, f"{what} {np.dtype(dtype)}")
        for family in ("dask", "pickle"):
            header, frames = serialize.serialize(v, serializers=(family,))
            np.testing.assert_array_equal(serialize.deserialize(header, frames).get(), want,
                                          f"{family}: {what} {np.dtype(dtype)}")


def test_cuda_family_empty_array():
    x = fa.asarray(np.empty((0, 4), np.float32))
    header, frames = serialize.serialize(x, serializers=ALL)
    back = serialize.deserialize(header, frames)
    assert back.shape == (0, 4) and back.dtype == np.float32


def test_chunks_are_launched_by_the_end_of_their_task():
    x = np.random.default_rng(SEED).random((4096, 64), dtype=np.float32)
    f = da.from_array(x, chunks=(1024, 64)).to_backend("fusedarrays")
    with dask.config.set(scheduler="threads"):
        kept = (f * 2 + 1).persist()
        chunks = [kept.dask[k] for k in dask.core.flatten(kept.__dask_keys__())]
        got = ((f * 2 + 1) ** 2).sum(axis=0).compute()
    assert chunks and not any(c.pending for c in chunks)
    assert {sizeof(c) for c in chunks} == {1024 * 64 * 4}
    np.testing.assert_allclose(got.get(), ((x * 2 + 1) ** 2).sum(axis=0), rtol=1e-5)


# -- dask-cuda -----------------------------------------------------------------------------------

def _gpus() -> int:
    from cuda.bindings import driver

    driver.cuInit(0)
    return int(driver.cuDeviceGetCount()[1])


@pytest.fixture(scope="module")
def cuda_client():
    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("distributed")
    workers = min(_gpus(), 2)
    with dask_cuda.LocalCUDACluster(n_workers=workers, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client, workers


def test_local_cuda_cluster_graphs_equal_numpy(cuda_client):
    client, workers = cuda_client
    # each worker on its own GPU (dask-cuda rotates CUDA_VISIBLE_DEVICES per worker)
    seen = client.run(lambda: os.environ["CUDA_VISIBLE_DEVICES"].split(",")[0])
    assert len(set(seen.values())) == workers, seen
    with dask.config.set({"array.backend": "fusedarrays"}):
        u = da.random.default_rng(SEED).random((1 << 22,), chunks=1 << 19, dtype=np.float32)
    draws = u.compute().get()
    assert ((draws >= 0) & (draws < 1)).all()
    got = float(((2 * u + 1) ** 2).sum().compute())
    np.testing.assert_allclose(got, ((2 * draws.astype(np.float64) + 1) ** 2).sum(), rtol=1e-5)
    x = np.random.default_rng(SEED).standard_normal((1 << 14, 96)).astype(np.float32)
    f = da.from_array(x, chunks=(1 << 11, 96)).to_backend("fusedarrays")
    z = ((f - f.mean(axis=0)) / f.std(axis=0)).compute().get()
    np.testing.assert_allclose(z, (x - x.mean(0)) / x.std(0), rtol=2e-4, atol=2e-4)
    kept = (f * 2).persist()
    import distributed

    distributed.wait(kept)
    held = client.run(lambda dask_worker: [getattr(v, "pending", None)
                                           for v in dask_worker.data.values()])
    assert all(p is False for ps in held.values() for p in ps), held
