"""fa.fuse traced in several threads at once: each trace sees its own thread's arrays only."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import fusedarrays as fa


def test_first_calls_from_many_threads_trace_their_own_functions():
    seed = 20261123
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(4096).astype(np.float32)

    @fa.fuse(static_argnames=("power",))
    def step(p, g, lr, power):
        time.sleep(0.02)   # runs while tracing only: the traces overlap
        p -= lr * g ** power

    def work(t: int):
        # while this thread traces, the others build and evaluate arrays of their own
        own = fa.asarray(base * (t + 1))
        noise = (own * 2 + t).get()
        p, g = fa.asarray(base.copy()), fa.asarray(base * 0.5 + t)
        step(p, g, 0.1, power=t % 3 + 1)
        return p.get(), noise

    for _ in range(5):
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(work, range(4)))
        for t, (p, noise) in enumerate(results):
            g = base * np.float32(0.5) + np.float32(t)
            want = base - np.float32(0.1) * g ** (t % 3 + 1)
            np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"thread {t}, seed {seed}")
            np.testing.assert_array_equal(noise, base * np.float32(t + 1) * 2 + np.float32(t))
        step._entries.clear()   # the next round traces again, concurrently


def test_a_trace_in_one_thread_is_not_another_threads():
    """While thread A is inside its trace, thread B's fused call traces its own signature (it is
    not inlined into A's trace) and B's arrays evaluate."""
    tracing, done = threading.Event(), threading.Event()

    @fa.fuse
    def slow(x):
        tracing.set()
        assert done.wait(30), "thread B did not finish"
        x += 1

    @fa.fuse
    def double(y):
        y *= 2

    a = fa.asarray(np.arange(8, dtype=np.float32))
    b = fa.asarray(np.arange(8, dtype=np.float32))
    seen = {}

    def thread_b():
        assert tracing.wait(30)
        double(b)
        seen["b"] = b.get()
        seen["traced"] = len(double._entries)
        done.set()

    worker = threading.Thread(target=thread_b)
    worker.start()
    slow(a)
    worker.join(30)
    np.testing.assert_array_equal(seen["b"], np.arange(8, dtype=np.float32) * 2)
    assert seen["traced"] == 1, "B's call was inlined into A's trace"
    np.testing.assert_array_equal(a.get(), np.arange(8, dtype=np.float32) + 1)
