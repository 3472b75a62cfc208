"""The cuda backend from any thread, without a GPU: every method that reaches the driver makes the
device's context current in its thread first, once per thread.

The driver keeps a current context per thread and a new thread has none; a launch or copy there
fails with CUDA_ERROR_INVALID_CONTEXT. Here ``memory.bind_thread`` and everything the backend calls
below it are stand-ins that record which threads have the context current, and fail as the driver
would where none is.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from cudafakes import FakeDriver, FakePool, fake_backend  # noqa: E402


class Device:
    """The driver's view: which threads have the context current, and what reached it."""

    def __init__(self):
        self.current = threading.local()
        self.binds: list[int] = []        # the thread of each bind_thread call
        self.calls: list[tuple[int, str]] = []
        self.lock = threading.Lock()

    def bind(self, device_id: int) -> None:
        assert device_id == 0
        with self.lock:
            self.binds.append(threading.get_ident())
        self.current.device = device_id

    def reach(self, what: str) -> None:
        if getattr(self.current, "device", None) != 0:
            raise AssertionError(f"{what} reached the driver in a thread with no current context "
                                 "(CUDA_ERROR_INVALID_CONTEXT)")
        with self.lock:
            self.calls.append((threading.get_ident(), what))


@pytest.fixture
def device(monkeypatch):
    """A ``CudaBackend`` over stand-ins, built in this thread (which it binds, as its constructor
    does); the stand-ins of every driver-reaching function check the calling thread's context."""
    from fusedarrays.cuda import backend as cuda_backend
    from fusedarrays.cuda import compile as compile_module
    from fusedarrays.cuda import memory

    dev = Device()
    monkeypatch.setattr(memory, "_BLOCKS", memory._BlockCache())
    monkeypatch.setattr(memory, "bind_thread", dev.bind)
    FakeDriver().install(monkeypatch)

    class Pool(FakePool):
        def allocate(self, size, stream=None):
            dev.reach("allocate")
            return super().allocate(size, stream)

    def stand_in(name, result=None):
        def fn(*args, **kwargs):
            dev.reach(name)
            return result() if callable(result) else result
        return fn

    monkeypatch.setattr(memory, "from_host", stand_in(
        "from_host", lambda: memory.DeviceStorage(0x7F00_0000_0000, 64, None)))
    monkeypatch.setattr(memory, "to_host", stand_in("to_host", lambda: np.arange(3.0)))
    monkeypatch.setattr(memory, "import_array", stand_in("import_array", ()))
    monkeypatch.setattr(memory, "usage", stand_in("usage", lambda: dict.fromkeys(
        ("in_use", "cached", "device_free", "device_total"), 0)))
    monkeypatch.setattr(memory, "give_back", stand_in("give_back", 0))
    monkeypatch.setattr(cuda_backend, "load_kernel", stand_in("load_kernel", "kernel"))
    monkeypatch.setattr(compile_module, "compile_kernel",
                        stand_in("compile_kernel", ("ptx", b"cubin", "entry", {})))
    monkeypatch.setattr(cuda_backend, "Launcher", lambda kernel, types, sms: kernel)
    cuda = fake_backend(Pool())
    cuda._sm_count = 132
    cuda.device = type("FakeDevice", (), {"sync": staticmethod(stand_in("sync"))})()
    dev.bind(0)   # the constructing thread: open_device made the context current there
    dev.binds.clear()
    dev.backend = cuda
    return dev


def launcher(dev):
    return lambda n, args, geometry: dev.reach("launch")


ENTRY_POINTS = {
    "alloc": lambda dev: dev.backend.alloc(4096),
    "from_host": lambda dev: dev.backend.from_host(np.ones(4, np.float32)),
    "to_host": lambda dev: dev.backend.to_host("storage", np.float32, 3, 0),
    "launch": lambda dev: dev.backend.launch(launcher(dev), 1024, []),
    "synchronize": lambda dev: dev.backend.synchronize(),
    "compile": lambda dev: dev.backend.compile("source", "k", ("i64",), {}),
    "load": lambda dev: dev.backend.load({"cubin": b"", "entry": "k"}, ("i64",)),
    "import_array": lambda dev: dev.backend.import_array(object()),
    "memory_info": lambda dev: dev.backend.memory_info(),
    "free_cached_memory": lambda dev: dev.backend.free_cached_memory(),
    # the multi-tensor tables are copied to the device (from_host)
    "foreach_args": lambda dev: dev.backend.foreach_args(np.zeros(2, np.int64), []),
}


def in_thread(fn):
    """Run ``fn`` in a new thread; its result and that thread's id."""
    out = {}

    def run():
        out["ident"] = threading.get_ident()
        try:
            out["result"] = fn()
        except BaseException as e:  # re-raised in the caller's thread
            out["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out.get("result"), out["ident"]


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_a_new_thread_gets_the_context_before_the_methods_first_driver_call(device, name):
    call = ENTRY_POINTS[name]

    def twice():
        call(device)
        call(device)   # bound already: not again

    _, ident = in_thread(twice)
    assert device.binds == [ident]
    assert device.calls and all(thread == ident for thread, _ in device.calls)


def test_the_constructing_thread_is_not_bound_again(device):
    for call in ENTRY_POINTS.values():
        call(device)
    assert device.binds == []


def test_four_threads_evaluating_at_once_each_bind_once(device):
    """Four threads allocate, launch and copy back twenty times each, all at once; each thread
    makes the context current once, before anything of it reaches the driver."""
    cuda = device.backend
    start = threading.Barrier(4)
    errors = []

    def work(k):
        start.wait()
        try:
            for i in range(20):
                out = cuda.alloc(4096 * (k + 1) + 512 * i)
                cuda.launch(launcher(device), 1024, [out.ptr])
                cuda.to_host(out, np.float32, 3, 0)
        except Exception as e:
            errors.append(f"thread {k}: {e!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    idents = {t.ident for t in threads}
    assert sorted(device.binds) == sorted(idents)     # once per thread
    assert {thread for thread, _ in device.calls} == idents
