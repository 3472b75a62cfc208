"""Stand-ins for the device under the cuda backend's memory and thread code, to test it without a
GPU: a pool that hands out made-up addresses (and runs out of memory on request), the driver calls
``fusedarrays.cuda.memory`` makes about the pool and the device, and a ``CudaBackend`` over them.

Nothing here is dereferenced: the buffers are ``cuda.core`` buffers over addresses that no memory
backs. Import after ``pytest.importorskip("cuda.core")``.
"""

from __future__ import annotations

import itertools

GIB = 1 << 30


class FakeAttributes:
    """What a pool's ``attributes`` report, as plain numbers the test or the fake driver set."""

    def __init__(self):
        self.reserved_mem_current = 0
        self.used_mem_current = 0


class FakePool:
    """Hands out ``cuda.core`` buffers over made-up addresses. The next ``fail`` allocations raise
    what cuda.core raises when the device is full."""

    device_id = 0

    def __init__(self, fail: int = 0):
        self.allocated = []
        self.fail = fail
        self.attributes = FakeAttributes()
        self.handle = self   # what memory passes to the (fake) driver's pool calls
        self._addresses = itertools.count()

    def allocate(self, size, stream=None):
        from cuda.core import Buffer
        from cuda.core._utils.cuda_utils import CUDAError

        if self.fail:
            self.fail -= 1
            # the text cuda.core's _check_driver_error gives CUDA_ERROR_OUT_OF_MEMORY
            raise CUDAError("CUDA_ERROR_OUT_OF_MEMORY: out of memory")
        address = 0x7F00_0000_0000 + (next(self._addresses) << 24)
        block = Buffer.from_handle(address, size)
        self.allocated.append(block)
        return block


class FakeDriver:
    """The driver calls memory.py makes about pools and the device, recorded in ``calls``.

    ``cuMemPoolTrimTo`` shrinks the pool's reservation to what it hands out (the driver cannot
    give back memory in use); ``cuMemGetInfo`` reports ``free`` and ``total``.
    """

    def __init__(self, free: int = 3 * GIB, total: int = 80 * GIB):
        self.free, self.total = free, total
        self.calls: list[tuple] = []

    def install(self, monkeypatch) -> FakeDriver:
        from fusedarrays.cuda import memory

        ok = memory.driver.CUresult.CUDA_SUCCESS

        def synchronize(stream):
            self.calls.append(("sync", stream))
            return (ok,)

        def trim(pool, keep):
            self.calls.append(("trim", pool, keep))
            attributes = pool.attributes
            attributes.reserved_mem_current = max(keep, attributes.used_mem_current)
            return (ok,)

        def set_attribute(pool, attribute, value):
            self.calls.append(("set", pool, attribute, int(value)))
            return (ok,)

        def mem_info():
            return (ok, self.free, self.total)

        for name, fn in [("cuStreamSynchronize", synchronize), ("cuMemPoolTrimTo", trim),
                         ("cuMemPoolSetAttribute", set_attribute), ("cuMemGetInfo", mem_info)]:
            monkeypatch.setattr(memory.driver, name, fn)
        return self

    def names(self) -> list[str]:
        return [call[0] for call in self.calls]


class FakeContexts:
    """The driver's current context per thread, for :class:`FakeContext`: ``current()`` is the
    calling thread's (0: none); another library switching it is ``switch(handle)``."""

    def __init__(self):
        import threading

        self._local = threading.local()
        self.switches: list[tuple[int, int]] = []   # (thread, handle made current)

    def current(self) -> int:
        return getattr(self._local, "handle", 0)

    def switch(self, handle: int) -> None:
        import threading

        self._local.handle = handle
        self.switches.append((threading.get_ident(), handle))


class FakeContext:
    """A ``cuda.context.DeviceContext`` over :class:`FakeContexts`: the same enter and leave."""

    def __init__(self, contexts: FakeContexts, handle: int):
        import threading

        self.contexts, self.handle, self.context = contexts, handle, handle
        self._stack = threading.local()

    def enter(self) -> int:
        previous = self.contexts.current()
        if previous == self.handle:
            return 0
        self.contexts.switch(self.handle)
        return previous

    def leave(self, previous: int) -> None:
        if previous:
            self.contexts.switch(previous)

    def __enter__(self):
        self._stack.__dict__.setdefault("items", []).append(self.enter())
        return self

    def __exit__(self, *exc):
        self.leave(self._stack.items.pop())


def fake_backend(pool, device_id: int = 0, contexts: FakeContexts | None = None):
    """A ``CudaBackend`` whose methods work over ``pool``, on a fake device ``device_id`` whose
    context (handle ``0xC0 + device_id``) ``contexts`` tracks per thread, current in this thread
    (as its constructor leaves it)."""
    from fusedarrays.cuda.backend import CudaBackend
    from fusedarrays.runtime.devices import Device

    contexts = contexts or FakeContexts()
    cuda = CudaBackend.__new__(CudaBackend)
    cuda._pool, cuda.device_id, cuda.arch = pool, device_id, "sm_90"
    cuda.device = Device("cuda", device_id)
    cuda.device_key = f"cuda:{device_id}:sm_90"
    cuda._context = FakeContext(contexts, 0xC0 + device_id)
    cuda._context.enter()
    return cuda
