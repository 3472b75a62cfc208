"""Threads that start using fusedarrays at the same moment get one backend object.

Two backend objects would split arrays between them (a kernel can't read both) and, on cuda, open
the device twice. Uses a stand-in backend whose start takes a while (as numba's import or a CUDA
context does), so that every thread asks while the first is still starting it.
"""

import importlib
import threading
import time

backend = importlib.import_module("fusedarrays.runtime.backend")   # fa.backend is the function

starts = []


class SlowBackend:
    name = "slow"

    def __init__(self):
        starts.append(threading.get_ident())
        time.sleep(0.05)


def test_threads_asking_at_once_get_one_backend(monkeypatch):
    monkeypatch.setitem(backend._MODULES, "slow", __name__)
    monkeypatch.setitem(backend._CLASSES, "slow", "SlowBackend")
    start = threading.Barrier(8)
    got = []

    def ask():
        start.wait()
        got.append(backend.get_backend("slow"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        backend._active.pop("slow", None)   # not through monkeypatch, which would put it back
    assert len(starts) == 1 and len(got) == 8
    assert all(b is got[0] for b in got)
