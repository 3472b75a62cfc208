"""The cuda backend from any thread and beside other devices, without a GPU: every method that
reaches the driver makes its device's context current around its calls, whatever was current
before (none: a new thread; another device's: another library's choice, or another fa device),
and makes the previous one current again after them.

The driver keeps a current context per thread; fusedarrays never assumes it. Here the driver's
per-thread current context is a stand-in (``cudafakes.FakeContexts``), and everything the backend
calls below it records which context was current when it reached the "driver".
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from cudafakes import FakeContexts, FakeDriver, FakePool, fake_backend  # noqa: E402

TORCH_CONTEXT = 0xD1   # a context another library made current (torch.cuda.set_device(1))


class Driver:
    """What reached the 'driver', with the context current in the calling thread then."""

    def __init__(self, contexts: FakeContexts):
        self.contexts = contexts
        self.calls: list[tuple[int, str, int]] = []   # (thread, what, current context)
        self.lock = threading.Lock()

    def reach(self, what: str) -> None:
        with self.lock:
            self.calls.append((threading.get_ident(), what, self.contexts.current()))


@pytest.fixture
def driver(monkeypatch):
    """Two fake devices' ``CudaBackend``s over stand-ins, made in this thread; every stand-in of
    a driver-reaching function records the calling thread's current context."""
    from fusedarrays.cuda import backend as cuda_backend
    from fusedarrays.cuda import compile as compile_module
    from fusedarrays.cuda import memory, peers

    contexts = FakeContexts()
    drv = Driver(contexts)
    monkeypatch.setattr(memory, "_BLOCKS", memory._BlockCache())
    FakeDriver().install(monkeypatch)

    class Pool(FakePool):
        def allocate(self, size, stream=None):
            drv.reach("allocate")
            return super().allocate(size, stream)

    def stand_in(name, result=None):
        def fn(*args, **kwargs):
            drv.reach(name)
            return result() if callable(result) else result
        return fn

    monkeypatch.setattr(memory, "from_host", stand_in(
        "from_host", lambda: memory.DeviceStorage(0x7F00_0000_0000, 64, None)))
    monkeypatch.setattr(memory, "to_host", stand_in("to_host", lambda: np.arange(3.0)))
    monkeypatch.setattr(memory, "import_array", stand_in("import_array", ()))
    monkeypatch.setattr(peers, "device_of", lambda obj: getattr(obj, "fake_device", None))
    monkeypatch.setattr(peers, "peer_copy", lambda dst, dd, src, sd, n: (
        drv.reach(f"peer copy {dd.handle:#x} <- {sd.handle:#x}")))
    monkeypatch.setattr(memory, "usage", stand_in("usage", lambda: dict.fromkeys(
        ("in_use", "cached", "device_free", "device_total"), 0)))
    monkeypatch.setattr(memory, "give_back", stand_in("give_back", 0))
    monkeypatch.setattr(cuda_backend, "load_kernel", stand_in("load_kernel", "kernel"))
    monkeypatch.setattr(compile_module, "compile_kernel",
                        stand_in("compile_kernel", ("ptx", b"cubin", "entry", {})))
    monkeypatch.setattr(cuda_backend, "Launcher", lambda kernel, types, sms, context: kernel)
    devices = []
    for k in range(2):
        cuda = fake_backend(Pool(), k, contexts)
        cuda._sm_count = 132
        cuda._device = type("FakeDevice", (), {"sync": staticmethod(stand_in("sync"))})()
        devices.append(cuda)
    monkeypatch.setattr(cuda_backend, "backend_for", lambda device: devices[device.ordinal])
    drv.devices = devices
    return drv


def launcher(drv):
    return lambda n, args, geometry: drv.reach("launch")


ENTRY_POINTS = {
    "alloc": lambda drv, be: be.alloc(4096 + 512 * len(drv.calls)),   # a new size: the pool
    "from_host": lambda drv, be: be.from_host(np.ones(4, np.float32)),
    "to_host": lambda drv, be: be.to_host("storage", np.float32, 3, 0),
    "launch": lambda drv, be: be.launch(launcher(drv), 1024, []),
    "synchronize": lambda drv, be: be.synchronize(),
    "compile": lambda drv, be: be.compile("source", "k", ("i64",), {}),
    "load": lambda drv, be: be.load({"cubin": b"", "entry": "k"}, ("i64",)),
    "import_array": lambda drv, be: be.import_array(object()),
    "memory_info": lambda drv, be: be.memory_info(),
    "free_cached_memory": lambda drv, be: be.free_cached_memory(),
    # the multi-tensor tables are copied to the device (from_host)
    "foreach_args": lambda drv, be: be.foreach_args(np.zeros(2, np.int64), []),
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
def test_a_new_thread_gets_the_devices_context_before_each_driver_call(driver, name):
    call = ENTRY_POINTS[name]
    device = driver.devices[1]

    def twice():
        call(driver, device)
        call(driver, device)
        return driver.contexts.current()

    left, ident = in_thread(twice)
    mine = [c for c in driver.calls if c[0] == ident]
    assert mine and all(context == device._context.handle for _, _, context in mine), mine
    assert left == device._context.handle   # none was current: fa's stays, no switch per call
    assert [h for t, h in driver.contexts.switches if t == ident] == [device._context.handle]


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_another_librarys_device_is_current_again_after_each_call(driver, name):
    """torch.cuda.set_device(1), then fa on device 0: fa's calls reach device 0, and device 1
    is the thread's current device again afterwards."""
    device = driver.devices[0]
    driver.contexts.switch(TORCH_CONTEXT)
    ENTRY_POINTS[name](driver, device)
    assert driver.calls and all(context == device._context.handle
                                for _, _, context in driver.calls), driver.calls
    assert driver.contexts.current() == TORCH_CONTEXT


def test_two_devices_in_one_thread_each_call_on_its_own(driver):
    zero, one = driver.devices
    order = [zero, one, zero, zero, one, one, zero]
    for device in order:
        device.launch(launcher(driver), 1024, [])
        device.to_host("storage", np.float32, 3, 0)
    contexts = [context for _, _, context in driver.calls]
    assert contexts == [d._context.handle for d in order for _ in range(2)]
    # the context current before (device 1's: its constructor ran last) is current again
    assert driver.contexts.current() == one._context.handle


def test_a_foreign_array_lands_on_its_own_devices_backend(driver):
    zero, one = driver.devices

    class Foreign:
        fake_device = 1

    owner, *_ = zero.import_array(Foreign())
    assert owner is one
    assert [(what, context) for _, what, context in driver.calls] == [
        ("import_array", one._context.handle)]
    owner, *_ = zero.import_array(object())   # says no device: the asking backend's
    assert owner is zero


def test_a_peer_copy_allocates_on_the_destination_and_names_both_contexts(driver):
    zero, one = driver.devices
    source = zero.alloc(1 << 16)
    driver.calls.clear()
    out = one.receive(source, zero, 1 << 16)
    assert out.nbytes == 1 << 16 and out.cached is not None
    assert [(what, context) for _, what, context in driver.calls] == [
        ("allocate", one._context.handle), ("peer copy 0xc1 <- 0xc0", one._context.handle)]


def test_four_threads_on_two_devices_at_once(driver):
    """Four threads (two per device) allocate, launch and copy back twenty times each, all at
    once, while another library has made its own context current in each: every driver call
    of a device finds that device's context current, and each thread's own is current after."""
    start = threading.Barrier(4)
    errors, left = [], {}

    def work(k):
        device = driver.devices[k % 2]
        driver.contexts.switch(TORCH_CONTEXT)
        start.wait()
        try:
            for i in range(20):
                out = device.alloc(4096 * (k + 1) + 512 * i)
                device.launch(launcher(driver), 1024, [out.ptr])
                device.to_host(out, np.float32, 3, 0)
        except Exception as e:
            errors.append(f"thread {k}: {e!r}")
        left[k] = driver.contexts.current()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert left == dict.fromkeys(range(4), TORCH_CONTEXT)
    by_thread = {t.ident: driver.devices[k % 2]._context.handle for k, t in enumerate(threads)}
    assert {thread for thread, _, _ in driver.calls} == set(by_thread)
    assert all(context == by_thread[thread] for thread, _, context in driver.calls)
