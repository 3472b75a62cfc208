"""Processes and threads: a fork after an evaluation, multiprocessing pools of every start
method, evaluations and in-place writes from a thread pool (cpu and sim), and the cuda backend's
refusal in a forked child, simulated without a GPU (tests/gpu/test_fork_gpu.py forks for real).

Children never hang the suite: every wait is bounded, and a child that outlives it is killed.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pathlib
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import forkwork
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.cuda.sim import SimBackend
from fusedarrays.runtime import realize as runtime

backend_module = importlib.import_module("fusedarrays.runtime.backend")  # fa.backend is a function
REPO = pathlib.Path(__file__).resolve().parents[2]
SEED = 20261123

pytestmark = [
    # Python 3.12+ warns on fork() in a process with threads, which these tests do on purpose
    # (the cpu backend's chunk threads are running).
    pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning"),
]


@pytest.fixture
def evaluated():
    """An evaluation on the cpu backend at its default settings, large enough to run on the
    chunk threads, so they are running when the test forks."""
    a, b, c = forkwork.inputs(SEED, 1 << 17)
    with config.override(BACKEND="cpu"):
        x, y, z = fa.asarray(a), fa.asarray(b), fa.asarray(c)
        np.testing.assert_allclose((x * y + z).get(), a * b + c, rtol=1e-6)
        yield x, y, z


def _child_evaluates(seed: int, n: int) -> int:
    """In a forked child: drop the inherited kernels (so this process builds its own) and
    evaluate; 0 if the values are NumPy's."""
    runtime._memory.clear()
    runtime._records.clear()
    _, pid, got = forkwork.evaluate(("cpu", seed, n))
    ok = pid == os.getpid() and np.allclose(got, forkwork.expected(seed, n), rtol=1e-6)
    return 0 if ok else 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_a_forked_child_evaluates(evaluated):
    pid = forkwork.fork_child(lambda: _child_evaluates(SEED + 1, 3001))
    code = forkwork.wait_or_kill(pid, timeout=120)
    assert code == 0, f"the forked child exited with {code} (None: killed after 120 s)"
    x, y, z = evaluated
    a, b, c = forkwork.inputs(SEED, 1 << 17)
    np.testing.assert_allclose((x * y - z).get(), a * b - c, rtol=1e-6)  # the parent goes on


@pytest.fixture
def forkserver_stopped():
    yield
    from multiprocessing import forkserver

    forkserver._forkserver._stop()  # started by the test: not left running after it


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_pool_evaluates_on_cpu(method, evaluated, forkserver_stopped, monkeypatch):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    # spawn and forkserver children take the parent's sys.path: this checkout's fusedarrays
    # first (tests/ is on it already, for forkwork, from tests/conftest.py)
    monkeypatch.syspath_prepend(str(REPO))
    jobs = [("cpu", SEED + 10 + k, 1000 + 7 * k) for k in range(4)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map_async(forkwork.evaluate, jobs).get(timeout=120)
    for (_, seed, n), (where, pid, got) in zip(jobs, results):
        assert where == fa.__file__ and pid != os.getpid()
        np.testing.assert_allclose(got, forkwork.expected(seed, n), rtol=1e-6,
                                   err_msg=f"{method} seed={seed}")


# -- threads ----------------------------------------------------------------------------------

@fa.fuse
def _momentum_step(p, g, m, lr):
    m *= 0.5
    m += g
    p -= lr * m
    return p * p


def _thread_work(t: int, shared, shared_h: np.ndarray, iters: int, start: threading.Barrier):
    """Thread ``t``'s own arrays, one shared read-only input: evaluations, in-place writes and
    fused calls, each checked against NumPy."""
    rng = np.random.default_rng(SEED + 100 + t)
    n = shared_h.size
    xh, yh, mh = (rng.uniform(0.5, 2.0, n).astype(np.float32) for _ in range(3))
    x, y, m = fa.asarray(xh), fa.asarray(yh), fa.asarray(mh)
    lr = np.float32(0.01 * (t + 1))
    start.wait()   # every thread's first calls at once: compiles and traces race
    for i in range(iters):
        where = f"thread {t} iteration {i} seed {SEED + 100 + t}"
        got = ((x + shared) * 2 - i).get()
        np.testing.assert_allclose(got, (xh + shared_h) * np.float32(2) - np.float32(i),
                                   rtol=1e-6, err_msg=where)
        x += y * 0.5
        xh += yh * np.float32(0.5)
        x[::2] = shared[::2] * (t + 1)
        xh[::2] = shared_h[::2] * np.float32(t + 1)
        squares = _momentum_step(x, y, m, lr)
        mh *= np.float32(0.5)
        mh += yh
        xh -= lr * mh
        np.testing.assert_allclose(x.get(), xh, rtol=1e-5, err_msg=where)
        np.testing.assert_allclose(squares.get(), xh * xh, rtol=1e-5, err_msg=where)
    return t


@pytest.mark.parametrize("backend,n,iters", [("cpu", 100_003, 20), ("sim", 64, 4)])
def test_threads_evaluate_and_write(backend, n, iters):
    """4 threads; sim with a short run on small arrays (each simulated GPU thread is a Python
    thread). cpu at its default settings: kernels large enough to run on the chunk threads."""
    shared_h = np.random.default_rng(SEED).uniform(-1.0, 1.0, n).astype(np.float32)
    with config.override(BACKEND=backend):
        shared = fa.asarray(shared_h)
        start = threading.Barrier(4)
        with ThreadPoolExecutor(4) as pool:
            done = list(pool.map(lambda t: _thread_work(t, shared, shared_h, iters, start),
                                 range(4)))
        assert done == [0, 1, 2, 3]
        np.testing.assert_array_equal(shared.get(), shared_h)   # read by all, written by none


def test_threads_opening_a_backend_share_one():
    saved = dict(backend_module._active)
    backend_module._active.pop("sim", None)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads often, so that they meet inside the opening
    try:
        start = threading.Barrier(4)

        def open_sim(_):
            start.wait()
            return backend_module.get_backend("sim")

        with ThreadPoolExecutor(4) as pool:
            opened = list(pool.map(open_sim, range(4)))
    finally:
        sys.setswitchinterval(interval)
        backend_module._active.clear()
        backend_module._active.update(saved)
    assert len({id(b) for b in opened}) == 1


# -- the cuda backend in a forked child, simulated ----------------------------------------------

class _FakeCuda(SimBackend):
    """Runs the CUDA kernels in the simulator, but is the 'cuda' backend and can't survive a
    fork."""

    name = "cuda"
    device_key = "fakecuda:0:sm_90"
    fork_safe = False


@pytest.fixture
def fake_cuda():
    saved = dict(backend_module._active)
    fake = backend_module._active["cuda"] = _FakeCuda()
    try:
        yield fake
    finally:
        backend_module._active.clear()
        backend_module._active.update(saved)


def test_a_fork_refuses_the_cuda_backend_naming_spawn(fake_cuda):
    a, b, _ = forkwork.inputs(SEED, 257)
    with config.override(BACKEND="cuda"):
        x = fa.asarray(a)
        pending = x * b[0]
        np.testing.assert_allclose((x + 1).get(), a + 1, rtol=1e-6)   # used before the fork
    cpu_before = backend_module.get_backend("cpu")
    backend_module._after_fork_in_child()   # what os.fork runs in the child
    assert isinstance(fake_cuda, _FakeCuda) and fake_cuda.forked_from == os.getppid()
    attempts = {
        "an array made before the fork": lambda: (x + 1).get(),
        "a pending array": lambda: pending.get(),
        "a new array": lambda: fa.asarray(b),
        "a new array, FUSEDARRAYS_BACKEND=auto": lambda: fa.zeros(3),
    }
    for what, attempt in attempts.items():
        backend = "auto" if "auto" in what else "cuda"
        with config.override(BACKEND=backend), pytest.raises(fa.DeviceUnavailableError) as info:
            attempt()
        assert isinstance(info.value, fa.ForkedDeviceError), what
        text = str(info.value)
        assert "'spawn'" in text and f"pid {os.getppid()}" in text and "fakecuda:0" in text, text
    # the host backends go on
    assert backend_module.get_backend("cpu") is cpu_before
    with config.override(BACKEND="cpu"):
        np.testing.assert_allclose((fa.asarray(a) * 2).get(), a * 2, rtol=1e-6)
    backend_module._after_fork_in_child()   # a fork of the fork keeps the first parent
    assert fake_cuda.forked_from == os.getppid()


def test_the_real_cuda_backend_refuses_after_a_fork():
    """CudaBackend's own methods (no GPU needed: nothing runs before the refusal)."""
    from fusedarrays.cuda.backend import CudaBackend

    assert CudaBackend.fork_safe is False
    be = CudaBackend.__new__(CudaBackend)   # no device opened
    be.device_key = "cuda:0:sm_90"
    backend_module.refuse_after_fork(be, 4242)
    assert isinstance(be, CudaBackend)
    for call in (lambda: be.alloc(64), lambda: be.launch(None, 1, []),
                 lambda: be.to_host(None, np.dtype(np.float32), 1, 0),
                 lambda: be.from_host(np.ones(3)), lambda: be.synchronize(),
                 lambda: be.compile("", "k", (), {})):
        with pytest.raises(fa.ForkedDeviceError, match=r"pid 4242.*'spawn'"):
            call()
