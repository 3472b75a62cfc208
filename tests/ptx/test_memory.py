"""Host-side parts of the cuda backend's memory module, without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from cudafakes import GIB, FakeDriver, FakePool, fake_backend  # noqa: E402

from fusedarrays.cuda.memory import (  # noqa: E402
    DeviceStorage,
    check_alignment,
    element_span,
    import_array,
)


@pytest.mark.parametrize(("shape", "strides", "span"), [
    ((5,), (1,), (0, 4)),
    ((5,), (-1,), (-4, 0)),
    ((3, 4), (4, 1), (0, 11)),
    ((3, 4), (1, 3), (0, 11)),        # transposed
    ((3, 4), (-4, 2), (-8, 6)),       # rows reversed, every other column
    ((3, 4), (0, 1), (0, 3)),         # broadcast rows
    ((3, 0), (0, 1), (0, -1)),        # empty: no bytes
    ((), (), (0, 0)),                 # a 0-d array is one element
])
def test_element_span(shape, strides, span):
    assert element_span(shape, strides) == span
    low, high = span
    if shape and 0 not in shape:  # brute force: every index's offset lies inside, both ends hit
        offsets = [int(np.dot(ix, strides)) for ix in np.ndindex(*shape)]
        assert (min(offsets), max(offsets)) == span


def test_host_arrays_are_refused():
    with pytest.raises(TypeError, match="CUDA"):
        import_array(np.zeros(3), 0)
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        import_array(object(), 0)


@pytest.mark.parametrize("dtype, ptr, ok", [
    (np.float32, 0x7F0000000004, True), (np.float32, 0x7F0000000002, False),
    (np.float16, 0x7F0000000002, True), (np.float16, 0x7F0000000001, False),
    (np.bool_, 0x7F0000000001, True), (np.int64, 0x7F0000000004, False),
    (np.complex128, 0x7F0000000008, True), (np.complex128, 0x7F0000000004, False),
    (np.complex64, 0x7F0000000004, True), (np.complex64, 0x7F0000000002, False)])
def test_foreign_data_not_aligned_to_its_component_is_refused(dtype, ptr, ok):
    """An import whose elements (a complex value's parts) are not aligned to their size would
    fault in the first kernel that loads them; it is refused, naming the dtype and what to do.
    A complex element aligned only to its part is accepted (it is read by parts)."""
    dtype = np.dtype(dtype)
    if ok:
        check_alignment(ptr, dtype, "ndarray")
        return
    with pytest.raises(ValueError, match=f"{dtype}.*{ptr:#x}.*copy it into a new array"):
        check_alignment(ptr, dtype, "ndarray")


def test_storage_is_plain_data():
    owner = object()
    s = DeviceStorage(0x1000, 64, owner)
    assert (s.ptr, s.nbytes, s.owner) == (0x1000, 64, owner)
    assert "64 bytes at 0x1000" in repr(s)


def test_check_unpacks_results_and_names_the_error(monkeypatch):
    from cuda.bindings import driver

    from fusedarrays.cuda import memory

    ok = driver.CUresult.CUDA_SUCCESS
    assert memory.check((ok,)) is None
    assert memory.check((ok, 5)) == 5
    assert memory.check((ok, 1, 2)) == (1, 2)
    monkeypatch.setattr(memory.driver, "cuGetErrorString", lambda err: (ok, b"out of memory"))
    with pytest.raises(memory.CudaDriverError, match="CUDA_ERROR_OUT_OF_MEMORY: out of memory"):
        memory.check((driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY, 0))
    assert issubclass(memory.CudaDriverError, RuntimeError)


def test_freed_blocks_are_reused_by_size_class(monkeypatch):
    from fusedarrays.cuda import memory

    cache = memory._BlockCache()
    monkeypatch.setattr(memory, "_BLOCKS", cache)
    pool = FakePool()
    first = memory.alloc(pool, 4000)
    assert (first.nbytes, first.owner.size) == (4000, 4096)       # rounded up to 512 bytes
    address = first.ptr
    del first                                                     # back to the cache
    assert cache.bytes == 4096
    again = memory.alloc(pool, 3900)                              # same class: the same block
    assert again.ptr == address and again.nbytes == 3900 and len(pool.allocated) == 1
    other = memory.alloc(pool, 5000)                              # another class: a new block
    assert other.ptr != address and len(pool.allocated) == 2
    del again, other
    assert cache.bytes == 4096 + 5120


def test_the_cache_keeps_at_most_its_cap(monkeypatch):
    from fusedarrays.cuda import memory

    cache = memory._BlockCache()
    cache.MAX_BYTES = 8192
    monkeypatch.setattr(memory, "_BLOCKS", cache)
    pool = FakePool()
    blocks = [memory.alloc(pool, 4096) for _ in range(3)]
    del blocks                                                    # the third goes to the pool
    assert cache.bytes == 8192
    assert len(cache.free[(id(pool), 4096)]) == 2


def test_a_new_buffer_takes_the_pool_alignment_and_frees_its_block_when_it_dies(monkeypatch):
    from fusedarrays.cuda import memory
    from fusedarrays.runtime.backend import new_buffer

    cache = memory._BlockCache()
    monkeypatch.setattr(memory, "_BLOCKS", cache)
    cuda = fake_backend(pool := FakePool())
    first = new_buffer(cuda, 4096)
    assert first.align == 256 and first.storage.ptr % 256 == 0   # as address() would say
    second = new_buffer(cuda, 4000)                 # same class, while the first lives: another
    assert second.storage.ptr != first.storage.ptr and cache.bytes == 0
    address = first.storage.ptr
    del first                                       # its block waits in the cache ...
    assert cache.bytes == 4096 and len(pool.allocated) == 2
    third = new_buffer(cuda, 3600)                  # ... for the next take of its class
    assert third.storage.ptr == address and third.storage.nbytes == 3600
    assert len(pool.allocated) == 2 and cache.bytes == 0
    assert new_buffer(cuda, 0).align == 256


def test_a_misaligned_pool_block_is_refused(monkeypatch):
    from fusedarrays.cuda import memory
    from fusedarrays.errors import FusedArraysError

    class SkewedPool(FakePool):
        def allocate(self, size, stream=None):
            from cuda.core import Buffer

            return Buffer.from_handle(0x7F00_0000_0010, size)

    monkeypatch.setattr(memory, "_BLOCKS", memory._BlockCache())
    with pytest.raises(FusedArraysError, match="not 256-byte aligned"):
        memory.alloc(SkewedPool(), 64)


def test_a_full_cache_gives_big_blocks_back_to_keep_small_ones(monkeypatch):
    """Freed big arrays fill the cap; a small block freed after them still goes to the cache (the
    biggest cached blocks go back to the pool to make room), and a big block freed into a cache
    full of small ones goes to the pool."""
    from fusedarrays.cuda import memory

    cache = memory._BlockCache()
    cache.MAX_BYTES = 3 << 20
    monkeypatch.setattr(memory, "_BLOCKS", cache)
    pool = FakePool()
    big = [memory.alloc(pool, 3 << 20), memory.alloc(pool, 1 << 20)]
    small = [memory.alloc(pool, 4096) for _ in range(3)]
    del big[0]                                    # 3 MiB cached: the cap is reached
    assert cache.bytes == 3 << 20
    del small[0]                                  # room made: the 3 MiB block goes
    assert cache.bytes == 4096 and not cache.free[(id(pool), 3 << 20)]
    assert len(cache.free[(id(pool), 4096)]) == 1
    del big[0]                                    # 1 MiB fits beside it
    assert cache.bytes == (1 << 20) + 4096
    again = memory.alloc(pool, 4096)              # a small allocation is served from the cache
    assert len(pool.allocated) == 5
    del small, again
    assert cache.bytes == (1 << 20) + 3 * 4096
    cache.MAX_BYTES = cache.bytes
    late = memory.alloc(pool, 2 << 20)
    del late                                      # bigger than every cached block: not kept
    assert cache.bytes == (1 << 20) + 3 * 4096 and not cache.free[(id(pool), 2 << 20)]


# --- what is kept, what goes back, and out of memory ------------------------------------------

@pytest.fixture
def cache(monkeypatch):
    """A fresh block cache in place of the module's (every storage a test makes dies in it)."""
    from fusedarrays.cuda import memory

    fresh = memory._BlockCache()
    monkeypatch.setattr(memory, "_BLOCKS", fresh)
    return fresh


def test_out_of_memory_gives_the_cache_back_trims_the_pool_and_retries(monkeypatch, cache):
    from fusedarrays.cuda import memory

    driver = FakeDriver().install(monkeypatch)
    pool = FakePool()
    kept = memory.alloc(pool, 4096)
    del kept                                      # freed: its block waits in the cache
    assert cache.bytes == 4096
    pool.fail = 1                                 # the device is full for the next allocation
    got = memory.alloc(pool, 8192)
    assert got.ptr == pool.allocated[-1].handle and got.nbytes == 8192
    assert cache.bytes == 0 and not cache.free[(id(pool), 4096)]    # given back first
    # the frees must be seen complete before the pool can give their memory to the driver
    assert driver.calls == [("sync", memory._LEGACY), ("trim", pool, 0)]
    assert cache.used == 8192
    del got
    assert cache.used == 0 and cache.bytes == 8192


def test_out_of_memory_after_the_retries_is_a_memory_error_with_the_figures(monkeypatch, cache):
    from cuda.core._utils.cuda_utils import CUDAError

    from fusedarrays.cuda import memory
    from fusedarrays.errors import FusedArraysError, OutOfMemoryError

    driver = FakeDriver(free=512 << 20, total=80 * GIB).install(monkeypatch)
    collections = []
    monkeypatch.setattr(memory.gc, "collect", lambda: collections.append(1) or 0)
    pool = FakePool()
    live = memory.alloc(pool, 3 << 20)            # what fusedarrays' live arrays hold
    pool.attributes.reserved_mem_current = 70 * GIB
    pool.attributes.used_mem_current = 69 * GIB   # trimming keeps what is handed out
    pool.fail = 3
    request = 5 * GIB + 7
    with pytest.raises(OutOfMemoryError) as caught:
        memory.alloc(pool, request)
    error = caught.value
    assert isinstance(error, MemoryError) and isinstance(error, FusedArraysError)
    assert isinstance(error.__cause__, CUDAError)
    text = str(error)
    for part in (f"{request} bytes (5.00 GiB)", "live arrays hold 3.00 MiB",
                 "reserves 69.00 GiB", "512.00 MiB free of 80.00 GiB", "cuda:0"):
        assert part in text, (part, text)
    assert pool.fail == 0 and collections == [1]  # tried three times, collected before the last
    assert driver.names() == ["sync", "trim", "sync", "trim"]
    assert cache.used == 3 << 20                  # the failed request is not counted
    del live
    assert cache.used == 0


def test_another_driver_error_is_not_taken_for_out_of_memory(monkeypatch, cache):
    from cuda.core._utils.cuda_utils import CUDAError

    from fusedarrays.cuda import memory

    class LostContextPool(FakePool):
        def allocate(self, size, stream=None):
            raise CUDAError("CUDA_ERROR_INVALID_CONTEXT: invalid device context")

    driver = FakeDriver().install(monkeypatch)
    with pytest.raises(CUDAError, match="INVALID_CONTEXT"):
        memory.alloc(LostContextPool(), 64)
    assert driver.calls == [] and cache.used == 0


def test_big_blocks_go_back_to_the_pool_and_in_use_counts_live_blocks(cache):
    from fusedarrays.cuda import memory

    pool = FakePool()
    big_size = cache.size_class(cache.MAX_BLOCK + 1)
    big = memory.alloc(pool, cache.MAX_BLOCK + 1)
    small = memory.alloc(pool, 4000)
    assert cache.used == big_size + 4096
    del big                                       # past MAX_BLOCK: never cached
    assert cache.bytes == 0 and cache.used == 4096
    again = memory.alloc(pool, cache.MAX_BLOCK + 1)
    assert len(pool.allocated) == 3               # a new block from the pool
    del small                                     # small: cached
    assert cache.bytes == 4096 and cache.used == big_size
    del again
    assert cache.used == 0 and cache.bytes == 4096


def test_give_back_empties_the_cache_and_trims_the_pool(monkeypatch, cache):
    from fusedarrays.cuda import memory

    driver = FakeDriver().install(monkeypatch)
    pool = FakePool()
    blocks = [memory.alloc(pool, 4096) for _ in range(3)]
    live = memory.alloc(pool, 1 << 20)
    del blocks
    assert cache.bytes == 3 * 4096
    pool.attributes.reserved_mem_current, pool.attributes.used_mem_current = 3 * GIB, GIB
    assert memory.give_back(pool) == 2 * GIB     # what the pool's reservation shrank by
    assert cache.bytes == 0 and driver.names() == ["sync", "trim"]
    assert cache.used == 1 << 20                  # live arrays keep their memory
    del live


def test_memory_info_and_free_cached_memory_through_the_backend(monkeypatch, cache):
    from fusedarrays.cuda import memory
    from fusedarrays.runtime.backend import MemoryInfo

    driver = FakeDriver(free=60 * GIB, total=80 * GIB).install(monkeypatch)
    pool = FakePool()
    cuda = fake_backend(pool)
    live, freed = cuda.alloc(4096), cuda.alloc(8192)
    del freed
    pool.attributes.reserved_mem_current, pool.attributes.used_mem_current = 3 * GIB, 2 * GIB
    assert memory.usage(pool) == {"in_use": 4096, "cached": 8192 + GIB,
                                  "device_free": 60 * GIB, "device_total": 80 * GIB}
    assert cuda.memory_info() == MemoryInfo("cuda", 4096, 8192 + GIB, 60 * GIB, 80 * GIB)
    assert cuda.free_cached_memory() == GIB
    assert cuda.memory_info().cached == 0 and driver.names() == ["sync", "trim"]
    del live


def test_open_device_sets_the_pools_release_threshold(monkeypatch):
    from fusedarrays.cuda import memory

    class FakeDevice:
        device_id = 0
        current = False

        def __init__(self, device_id):
            assert device_id == 0

        def set_current(self):
            FakeDevice.current = True

    driver = FakeDriver(total=80 * GIB).install(monkeypatch)
    monkeypatch.setattr(memory, "Device", FakeDevice)
    monkeypatch.setattr(memory, "DeviceMemoryResource", lambda device_id: FakePool())
    device, pool = memory.open_device(0)
    assert FakeDevice.current
    threshold = memory.driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    assert driver.calls == [("set", pool, threshold, 10 * GIB)]   # 1/8 of the device


def test_the_block_cache_keeps_its_counts_when_threads_share_it(monkeypatch, cache):
    """Eight threads take and release blocks of random sizes, some kept across iterations, and
    other threads run before and after every free-list operation (a call: where CPython may
    switch threads): afterwards nothing is counted in use, the cached bytes are what the free
    lists hold, no block is cached twice, and the cap held."""
    import random
    import sys
    import threading
    import time

    from fusedarrays.cuda import memory

    class YieldingFreeList(memory._FreeList):
        __slots__ = ()

        def pop(self, *args):
            time.sleep(0)
            try:
                return super().pop(*args)
            finally:
                time.sleep(0)

        def append(self, entry):
            time.sleep(0)
            super().append(entry)
            time.sleep(0)

    monkeypatch.setattr(memory, "_FreeList", YieldingFreeList)
    cache.MAX_BYTES = 64 * 4096                   # small: the cap and _make_room are exercised
    pool = FakePool()
    start = threading.Barrier(8)

    errors = []

    def work(seed):
        rng = random.Random(seed)
        held = []
        start.wait()
        try:
            for _ in range(600):
                held.append(memory.alloc(pool, rng.choice([512, 4096, 12_288, 10_000, 20_000])))
                if len(held) > rng.randrange(1, 6):
                    del held[rng.randrange(len(held))]
        except Exception as e:
            errors.append(f"seed {seed}: {e!r}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert cache.used == 0
    assert cache.bytes == sum(len(free) * free.size for free in cache.free.values())
    assert cache.bytes <= cache.MAX_BYTES
    addresses = [ptr for free in cache.free.values() for ptr, _ in free]
    assert len(addresses) == len(set(addresses))  # no block cached twice
