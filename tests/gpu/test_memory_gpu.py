"""Device memory on the GPU: what ``fa.memory_info`` counts, ``fa.OutOfMemoryError`` once the
device is full, and memory given back to the driver for another library (PyTorch).

The policy (the block cache's sizes, the pool's release threshold) is in the docstring of
``fusedarrays/cuda/memory.py``; its logic is tested without a GPU in ``tests/ptx/test_memory.py``.
Skipped without a device.
"""

import gc

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.cuda import memory

GIB = 1 << 30
MIB = 1 << 20
SEED = 1122


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def test_memory_info_counts_live_arrays_and_the_cache():
    fa.free_cached_memory()
    gc.collect()
    gc.disable()   # no other test's garbage freed between the readings
    try:
        before = fa.memory_info()
        assert before.backend == "cuda"
        assert 0 < before.device_free <= before.device_total
        host = np.random.default_rng(SEED).standard_normal(MIB).astype(np.float32)
        x = fa.asarray(host)
        y = fa.empty(MIB, np.float32)            # 4 MiB each, a size class of its own
        held = fa.memory_info()
        assert held.in_use - before.in_use == 8 * MIB
        del y                                    # small: its block is kept for reuse
        freed = fa.memory_info()
        assert held.in_use - freed.in_use == 4 * MIB
        assert freed.cached >= 4 * MIB
        assert fa.free_cached_memory() >= 0
        after = fa.memory_info()
    finally:
        gc.enable()
    assert after.in_use == freed.in_use          # live arrays keep their memory
    assert memory._BLOCKS.bytes == 0             # the cached blocks went back to the pool
    np.testing.assert_array_equal(x[:4].get(), host[:4])


def test_out_of_memory_is_a_memory_error_and_freed_memory_goes_to_pytorch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    torch.empty(1, device="cuda")                # PyTorch's context starts before the device fills
    torch.cuda.empty_cache()
    fa.free_cached_memory()
    total = fa.memory_info().device_total
    n = GIB // 4                                 # float32 elements of a 1 GiB result
    held = []
    try:
        with pytest.raises(fa.OutOfMemoryError) as caught:
            for k in range(total // GIB + 8):    # bounded: the device holds fewer than this
                held.append(fa.full(n, float(k % 7 + 1), np.float32))
        text = str(caught.value)
        assert isinstance(caught.value, MemoryError)
        assert f"{GIB} bytes (1.00 GiB)" in text, text
        assert "live arrays hold" in text and "free of" in text, text
        assert len(held) >= total // GIB // 2, (len(held), total)   # full, not refused early
        assert fa.memory_info().in_use >= len(held) * GIB
        for k in (0, len(held) - 1):             # the results are real
            np.testing.assert_array_equal(held[k][-3:].get(), np.full(3, k % 7 + 1, np.float32))
    finally:
        held.clear()                             # the device must not stay full for later tests
        caught = None

    fa._get_backend().synchronize()
    # At a synchronisation the pool gives back what it reserves beyond its release threshold.
    threshold = total // memory.RELEASE_FRACTION
    info = fa.memory_info()
    assert info.cached <= threshold + memory._BlockCache.MAX_BYTES + 256 * MIB, (info, threshold)
    assert fa.free_cached_memory() >= 0
    info = fa.memory_info()
    assert info.cached <= GIB, info              # what is left: pool memory shared with live blocks
    assert info.device_free >= total * 0.7, info

    big = torch.empty(int(total * 0.6), dtype=torch.uint8, device="cuda")
    big[-1] = 7
    assert int(big[-1]) == 7
    del big
    torch.cuda.empty_cache()
