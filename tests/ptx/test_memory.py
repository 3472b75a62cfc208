"""Host-side parts of the cuda backend's memory module, without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from fusedarrays.cuda.memory import DeviceStorage, element_span, import_array  # noqa: E402


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


class FakePool:
    """Hands out ``cuda.core`` buffers over made-up addresses (nothing is dereferenced)."""

    def __init__(self):
        self.allocated = []

    def allocate(self, size, stream=None):
        from cuda.core import Buffer

        block = Buffer.from_handle(0x7F00_0000_0000 + (len(self.allocated) << 24), size)
        self.allocated.append(block)
        return block


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
    from fusedarrays.backend import new_buffer
    from fusedarrays.cuda import memory
    from fusedarrays.cuda.backend import CudaBackend

    cache = memory._BlockCache()
    monkeypatch.setattr(memory, "_BLOCKS", cache)
    cuda = CudaBackend.__new__(CudaBackend)        # its memory methods over a made-up pool
    cuda._pool = pool = FakePool()
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
