"""The cpu backend's threads and memory (cpu/threads.py, cpu/memory.py): chunks shared with the
pool give NumPy's results whichever thread takes them, a kernel learns whether threads pay, a
large freed block is reused only when nothing holds it, large buffers are staggered within their
page, and addresses are remembered per array without ever naming a dead one's."""

import time

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.cpu import memory, threads
from fusedarrays.runtime.backend import get_backend

SEED = 3601


def rng(extra=0):
    print("seed", SEED + extra)
    return np.random.default_rng(SEED + extra)


def test_shared_chunks_match_numpy_whichever_way():
    g = rng()
    n = 40 * 16384 + 123   # 41 chunks of a flat kernel: above MIN_CHUNKS
    a, b, c = (g.standard_normal(n).astype(np.float32) for _ in range(3))
    x, y, z = (fa.asarray(v) for v in (a, b, c))
    with fa.config.override(CPU_PARALLEL=True):   # the default, set in case the run's env isn't
        for _ in range(2 * threads.RETRY + 3):   # serial, shared, then the faster, and retries
            np.testing.assert_array_equal((x * y + z).get(), a * b + c)
    with fa.config.override(CPU_PARALLEL=False):  # and the one-thread path, its other side
        np.testing.assert_array_equal((x[::-1] * y - z).get(), a[::-1] * b - c)


def test_a_choice_measures_both_ways_then_keeps_the_faster():
    choice = threads.Choice()
    ways = []
    for seconds in (2.0, 1.0):   # serial first, then shared
        ways.append(choice.shared())
        choice.record(ways[-1], seconds, 10)
    assert ways == [False, True]
    picks = [choice.shared() for _ in range(threads.RETRY)]
    assert picks.count(True) == threads.RETRY - 1   # shared was faster; the other way retried


def test_run_shared_runs_every_chunk_once_and_raises_a_kernel_error():
    seen = []

    def kernel(k0, k1, n):
        if k0 >= k1:
            return 50
        seen.extend(range(k0, k1))
        return 50

    threads.run_shared(kernel, (0,), 50, 2)
    assert sorted(seen) == list(range(50))

    def failing(k0, k1, n):
        if k0 >= 40:
            raise ValueError("chunk 40 failed")

    with pytest.raises(ValueError, match="chunk 40"):
        threads.run_shared(failing, (0,), 50, 2)


def test_the_callers_spin_sees_the_last_piece_and_gives_up_after_its_polls():
    spin = threads._spinner()
    assert spin is not None   # numba is a core dependency: the loop compiles
    count = np.full(1, 3, np.int64)
    assert not spin(count.ctypes.data, 1000)   # never reaches 0: it gives up (then blocks)
    count[0] = 0
    assert spin(count.ctypes.data, 1000)
    seen = []

    def slow(k0, k1, n):   # a helper's pieces finish while the caller spins
        if k0 >= k1:
            return 8
        time.sleep(0.001)
        seen.extend(range(k0, k1))
        return 8

    for _ in range(5):
        seen.clear()
        threads.run_shared(slow, (0,), 8, 2)
        assert sorted(seen) == list(range(8))


def test_a_large_block_is_reused_only_when_nothing_holds_it():
    pool = memory.HostPool()
    n = memory.REUSE_MIN + 4096
    first = pool.alloc(n)
    view = first.view(np.float32)[10:]
    del first
    second = pool.alloc(n)   # the first is still viewed: a new block
    assert memory.address(second) != memory.address(view) - 40
    assert pool.cached() == 0
    address = memory.address(second)
    del second
    assert pool.cached() == n
    again = pool.alloc(n)
    assert memory.address(again) == address and pool.cached() == 0
    mv = memoryview(again)
    del again
    assert pool.cached() == 0   # a memoryview holds it
    del mv
    assert pool.give_back() == n and pool.cached() == 0
    del view
    assert pool.give_back() == n


def test_results_in_reused_blocks_are_not_overwritten():
    g = rng(1)
    n = (memory.REUSE_MIN // 4) + 1000
    a, b = (g.standard_normal(n).astype(np.float32) for _ in range(2))
    x, y = fa.asarray(a), fa.asarray(b)
    kept = (x * y + 1).compute()
    for _ in range(3):
        (x - y).compute()   # freed at once: its block is the one reused
    np.testing.assert_array_equal(kept.get(), a * b + np.float32(1))
    info = fa.memory_info()
    assert info.cached >= 0
    fa.free_cached_memory()


def test_large_buffers_are_aligned_and_staggered():
    pool = memory.HostPool()
    blocks = [pool.alloc(memory.STAGGER_MIN + k) for k in range(8)]
    addresses = [memory.address(b) for b in blocks]
    assert all(a % memory.ALIGN == 0 for a in addresses)
    assert len({a % 4096 for a in addresses}) == 8
    assert [b.nbytes for b in blocks] == [memory.STAGGER_MIN + k for k in range(8)]
    # below malloc's mmap threshold a block's base may sit anywhere in its page: small
    # allocations between them move the bases, and the offsets stay distinct (CI found it)
    g = rng(3)
    held, sizes = [], [int(s) for s in g.integers(memory.STAGGER_MIN, 3 * memory.STAGGER_MIN, 64)]
    for _ in range(8):
        moved = []
        for n in sizes[:8]:
            held.append(np.empty(int(g.integers(1, 5000)), np.uint8))
            moved.append(pool.alloc(n))
        sizes = sizes[8:]
        assert len({memory.address(b) % 4096 for b in moved}) == 8
        assert all(memory.address(b) % memory.ALIGN == 0 for b in moved)


def test_addresses_are_numpys_and_never_a_dead_arrays():
    g = rng(2)
    for _ in range(200):
        x = g.standard_normal(int(g.integers(1, 50)))
        assert memory.address(x) == x.ctypes.data
        assert memory.address(x) == x.ctypes.data   # remembered
    y = np.arange(6.0)
    y.flags.writeable = False
    assert memory.address(y) == y.ctypes.data
    empty = np.empty(0)
    assert memory.address(empty) == empty.ctypes.data
    strided = g.standard_normal(20)[1::3]   # exports no contiguous buffer: NumPy's answer
    assert memory.address(strided) == strided.ctypes.data
    backend = get_backend("cpu")
    z = np.arange(10, dtype=np.float32)
    assert backend.operand_arg(z, np.dtype(np.float32), 3) == z.ctypes.data + 12
    host = g.standard_normal((7, 5)).astype(np.float32)[::2, ::-1]   # a view, not contiguous
    stored = backend.from_host(host)
    np.testing.assert_array_equal(backend.to_host(stored, host.dtype, host.size, 0),
                                  host.reshape(-1))
