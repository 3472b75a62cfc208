"""The GPU from any thread: lazy evaluations, in-place writes and a fused in-place step from a
thread pool, each thread on its own arrays and one shared input, against NumPy.

Four threads start together (a barrier), so each thread's first call reaches the driver while the
others are in flight: every one of them must get the device's context made current. Skipped
without a device.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 1122
N = 100_003                 # not a multiple of the block or the vector width
THREADS, ITERATIONS = 4, 20


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def run_in_threads(work):
    """``work(k)`` for k in 0..THREADS-1 on a pool of THREADS threads, all in flight at once;
    the results, and the set of threads they ran on."""
    start = threading.Barrier(THREADS, timeout=120)
    idents = set()

    def task(k):
        start.wait()
        idents.add(threading.get_ident())
        return work(k)

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        results = list(pool.map(task, range(THREADS)))
    assert len(idents) == THREADS
    return results


def test_threads_evaluate_and_write_in_place_on_their_own_arrays_and_a_shared_one():
    shared_h = np.random.default_rng(SEED).standard_normal(N).astype(np.float32)
    shared = fa.asarray(shared_h)     # made in this thread, read by all

    def work(k):
        own_h = np.random.default_rng(SEED + 1 + k).standard_normal(N).astype(np.float32)
        own = fa.asarray(own_h)       # made in the worker thread
        own_h = own_h.copy()
        for i in range(ITERATIONS):
            where = f"seed {SEED}, thread {k}, iteration {i}"
            got = ((shared + k) * 2 - i).get()
            want = (shared_h + np.float32(k)) * np.float32(2) - np.float32(i)
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=where)
            own += shared * 0.5
            own_h += shared_h * np.float32(0.5)
            own[::3] = own[::3] - i
            own_h[::3] -= np.float32(i)
            if i % 5 == 4:
                np.testing.assert_allclose(own.get(), own_h, rtol=1e-6, err_msg=where)
        return own.get(), own_h

    for k, (got, want) in enumerate(run_in_threads(work)):
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"seed {SEED}, thread {k}")
    np.testing.assert_array_equal(shared.get(), shared_h)   # read by all, written by none


def test_threads_run_one_fused_in_place_step_on_their_own_arrays():
    g_h = np.random.default_rng(SEED).standard_normal(N).astype(np.float32)
    g = fa.asarray(g_h)
    step = fa.fuse(ex.sgd)
    kw = dict(momentum=0.9, dampening=0.0, weight_decay=1e-2, nesterov=True)
    # Traced here, before the threads: while a trace runs it records the array operations of
    # every thread (fusedarrays has one tracer per process).
    warm = np.random.default_rng(SEED + 9).standard_normal(N).astype(np.float32)
    step(fa.asarray(warm), g, fa.asarray(np.zeros(N, np.float32)), lr=0.1, **kw)
    assert step.traces == 1

    def work(k):
        p_h = np.random.default_rng(SEED + 10 + k).standard_normal(N).astype(np.float32)
        b_h = np.zeros(N, np.float32)
        p, b = fa.asarray(p_h), fa.asarray(b_h)
        for _ in range(ITERATIONS):
            step(p, g, b, lr=0.01 * (k + 1), **kw)        # a different learning rate per thread
            ex.sgd(p_h, g_h, b_h, lr=0.01 * (k + 1), **kw)
        return p.get(), b.get(), p_h, b_h

    results = run_in_threads(work)
    assert step.traces == 1                              # the threads only ran the cached step
    for k, (p, b, p_h, b_h) in enumerate(results):
        where = f"seed {SEED}, thread {k}"
        np.testing.assert_allclose(p, p_h, rtol=2e-5, atol=2e-6, err_msg=where)
        np.testing.assert_allclose(b, b_h, rtol=2e-5, atol=2e-6, err_msg=where)


def test_a_thread_whose_first_call_is_a_cached_in_place_launch():
    """A launch record prepares the C launch after its first launch (``direct_launch``); a new
    thread has no current context, so the driver refuses that call there and the record goes
    through the backend, which makes the device current: nothing else in the thread did."""
    from fusedarrays.runtime import launch as runtime_launch

    rng = np.random.default_rng(SEED + 20)
    x_h = rng.standard_normal(N).astype(np.float32)
    x, out = fa.asarray(x_h), fa.asarray(rng.standard_normal(N).astype(np.float32))

    @fa.fuse
    def scale(out, x, s):
        out[...] = x * s + 1.0

    for s in (2.0, 3.0):                      # the second launch goes through the prepared call
        scale(out, x, s)
    np.testing.assert_allclose(out.get(), x_h * np.float32(3.0) + np.float32(1.0), rtol=1e-6,
                               atol=1e-6)
    prepared = [r for r in gc_records(runtime_launch.LaunchRecord) if r.direct is not None]
    assert prepared, "no launch record holds a prepared launch"
    errors = []

    def first_call():
        try:
            scale(out, x, -0.5)
        except Exception as exc:   # reported below, in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=first_call)
    thread.start()
    thread.join()
    assert not errors, errors
    # the kernel may fuse x * s + 1.0 into one rounding: an absolute tolerance near zero
    np.testing.assert_allclose(out.get(), x_h * np.float32(-0.5) + np.float32(1.0), rtol=1e-6,
                               atol=1e-6, err_msg=f"seed {SEED + 20}")


def gc_records(kind):
    import gc

    return [o for o in gc.get_objects() if type(o) is kind]
