"""The cpu kernels' threads: a kernel's chunks shared out to a persistent pool, claimed as they go.

Where it sits: :meth:`.backend.CpuBackend.launch` (and its ``direct_launch``) calls
:func:`run_chunks` with a compiled kernel, ``kernel(k0, k1, n, *args)`` running chunks
``k0 .. k1`` of its walk (``kernel(0, 0, …)`` returns the chunk count without touching memory).

Why claimed, not split: a static split into one share per CPU makes the caller wait for the
slowest thread, and on a busy machine (the 2-core one that the cpu rows of issue #36 are measured
on, where other work holds the other core) a helper thread may start late or not at all — a
(10^6,) ``a*b+c`` ran slower on two threads than on one. Here the work is cut into a few pieces
per thread, each thread (the caller first) takes the next piece from one shared iterator, and the
caller waits only for pieces a helper has already taken: a helper that never starts costs nothing
but the wake-up. Small launches stay on the caller's thread (waking a helper costs about as much
as the few chunks would). The helpers are daemon threads, started once and waiting on a queue:
no thread start per launch. A forked child starts its own pool when it needs one.

Why the caller spins at the end: blocked on a lock, it woke 15-40 µs after a helper's last piece
(the futex wake, then the GIL back from the helper) — a fifth of a (10^6,) ``a*b+c``. It polls
the job's count of unfinished pieces instead, in a compiled loop that holds no GIL
(:func:`_spinner`), for at most :data:`SPINS` polls (a few ms), then blocks as before.
"""

from __future__ import annotations

import os
import queue
import threading
import time

import numpy as np

from .. import config

# Below this many chunks (16 K elements of the lightest kernel each, ~4 µs of a flat a*b+c in
# cache) a launch runs on the calling thread: a helper's wake-up and the hand-over cost more.
MIN_CHUNKS = 8
PIECES_PER_THREAD = 4   # pieces per thread: enough to even out a late start, few calls each
SPINS = 200_000         # the caller's polls of a job's count before it blocks: ~2-4 ms


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


CPUS = _cpus()


class _Job:
    """One launch's pieces, taken by every thread that works on it from the same iterator."""

    __slots__ = ("kernel", "args", "pieces", "left", "lock", "done", "error")

    def __init__(self, kernel, args: tuple, bounds: list[int]):
        self.kernel, self.args = kernel, args
        # next() on a list iterator is atomic under the GIL: each piece goes to one thread
        self.pieces = iter(list(zip(bounds, bounds[1:])))
        # pieces not finished, in memory the spinning caller reads (changed under the lock)
        self.left = np.full(1, len(bounds) - 1, np.int64)
        self.lock = threading.Lock()
        self.done = threading.Lock()   # held until the last piece is finished
        self.done.acquire()
        self.error: BaseException | None = None

    def work(self) -> None:
        kernel, args = self.kernel, self.args
        for lo, hi in self.pieces:
            try:
                kernel(lo, hi, *args)
            except BaseException as exc:   # noqa: BLE001 - raised by the caller
                self.error = exc
            with self.lock:
                self.left[0] -= 1
                if not self.left[0]:
                    self.done.release()

    def wait(self) -> None:
        with self.lock:
            pending = self.left[0]
        if pending:
            spin = _spinner()
            if spin is not None and spin(self.left.ctypes.data, SPINS):
                pending = 0   # done is released too (under the lock, after the count)
        if pending:
            try:
                self.done.acquire()
            except BaseException:   # interrupted: the helpers still write the operands
                self.done.acquire()
                raise
        if self.error is not None:
            raise self.error


_spin: list = []   # [the compiled poll loop, or None where numba could not make it]
_spin_lock = [threading.Lock()]


def _spinner():
    """``spin(address, polls)``: whether the int64 at ``address`` reached 0 within ``polls``
    polls, read with a compare-and-swap (no compiler may keep the value in a register), in
    numba code that releases the GIL. Compiled at the first shared launch (~50 ms)."""
    if not _spin:
        with _spin_lock[0]:
            if not _spin:
                _spin.append(_compile_spin())
    return _spin[0]


def _compile_spin():
    try:
        import numba

        from .intrinsics import cas_i64

        def spin(address, polls):
            for _ in range(polls):
                if cas_i64(address, 0, -1, -1) == 0:
                    return True
            return False

        return numba.njit("boolean(int64, int64)", nogil=True, no_cfunc_wrapper=True)(spin)
    except Exception:   # noqa: BLE001 - the caller blocks on the lock as before
        return None


class _Pool:
    """``helpers`` daemon threads running the jobs put on one queue."""

    def __init__(self, helpers: int):
        _spinner()
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.helpers = helpers
        for k in range(helpers):
            threading.Thread(target=self._serve, name=f"fusedarrays-cpu-{k}",
                             daemon=True).start()

    def _serve(self) -> None:
        while True:
            self.jobs.get().work()


_pool: list = [None, threading.Lock()]   # the pool (made on first use), its lock


def _forget_pool() -> None:
    # A forked child has none of its parent's threads (and a thread of the parent may have held
    # the lock at the fork): it makes a pool of its own when it needs one.
    _pool[:] = [None, threading.Lock()]
    _spin_lock[0] = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def pool() -> _Pool:
    found = _pool[0]
    if found is None:
        with _pool[1]:
            if _pool[0] is None:
                _pool[0] = _Pool(CPUS - 1)
            found = _pool[0]
    return found


class Choice:
    """Whether one kernel's large launches run on the pool or on the calling thread alone,
    learnt from its own launches: seconds per chunk of each way (a moving average), the faster
    taken, the other tried again every :data:`RETRY` th launch (the machine's load changes).
    On a 2-core machine whose other core is busy, two threads ran a (10^6,) ``a*b+c`` 10 %
    slower than one; on an idle one they run it faster: neither rule fits both."""

    __slots__ = ("per_chunk", "launches")

    def __init__(self):
        self.per_chunk = [0.0, 0.0]   # serial, shared; 0: not measured yet
        self.launches = 0

    def shared(self) -> bool:
        serial, shared = self.per_chunk
        self.launches += 1
        if not serial or not shared:
            return not shared and bool(serial)
        faster = shared < serial
        return faster != (self.launches % RETRY == 0)

    def record(self, shared: bool, seconds: float, chunks: int) -> None:
        old = self.per_chunk[shared]
        now = seconds / chunks
        self.per_chunk[shared] = now if not old else 0.75 * old + 0.25 * now


RETRY = 32


def run_shared(kernel, args: tuple, chunks: int, threads: int) -> None:
    """Chunks ``0 .. chunks`` of ``kernel`` on ``threads`` threads (this one and helpers):
    contiguous pieces, a few per thread, each taken by whichever thread is free first."""
    count = min(chunks, threads * PIECES_PER_THREAD)
    job = _Job(kernel, args, [chunks * p // count for p in range(count + 1)])
    jobs = pool()
    for _ in range(min(threads - 1, jobs.helpers)):
        jobs.jobs.put(job)
    job.work()
    job.wait()


def run_chunks(kernel, args: tuple, choice: Choice | None = None,
               chunks: int | None = None) -> None:
    """Run all chunks of ``kernel(k0, k1, *args)`` (``chunks``: their count, asked of the kernel
    where None): on this thread when there are few (or the serial setting, or one CPU), else as
    ``choice`` finds faster (:class:`Choice`; always shared without one) on the pool's threads
    (:func:`run_shared`) or on this one."""
    if chunks is None:
        chunks = kernel(0, 0, *args)
    if chunks < MIN_CHUNKS or CPUS < 2 or not config.get("CPU_PARALLEL"):
        kernel(0, chunks, *args)
        return
    if choice is None:
        run_shared(kernel, args, chunks, min(CPUS, chunks))
        return
    shared = choice.shared()
    if shared and _pool[0] is None:
        pool()   # its threads and spin loop made before the launch is timed
    start = time.perf_counter()
    if shared:
        run_shared(kernel, args, chunks, min(CPUS, chunks))
    else:
        kernel(0, chunks, *args)
    choice.record(shared, time.perf_counter() - start, chunks)


class Prepared:
    """A launch record's later launches (the cpu backend's ``direct_launch``): the kernel's chunk
    count and numba's compiled function for the record's argument types, found at the first
    launch through here and kept. A record launches over one size with arguments of the same
    types every time (its packer converts each scalar to its kernel type; pointers are ints),
    so neither changes; the count call and numba's dispatch on the arguments' types cost ~0.4
    and ~0.25 µs of a cached 1 K ``a*b+c``'s ~7 here. ``fold``: a split reduction, whose
    partials are folded once all are in (``k0 < 0``)."""

    __slots__ = ("kernel", "fold", "entry", "chunks", "serial")

    def __init__(self, kernel: list, fold: bool):
        self.kernel, self.fold = kernel, fold   # kernel: the backend's [dispatcher, …, Choice]
        self.entry = self.chunks = None
        self.serial = True

    def run(self, n: int, args: list) -> None:
        """Every chunk over ``n`` with ``args`` (after ``n``): ``(Prepared.run, self)`` is the
        record's ``(call, config)``."""
        entry = self.entry
        if entry is None:
            entry = self._prepare(n, args)
        if self.serial:
            entry(0, self.chunks, n, *args)
        else:
            run_chunks(entry, (n, *args), self.kernel[3], self.chunks)
        if self.fold:
            entry(-1, -1, n, *args)

    def _prepare(self, n: int, args: list):
        dispatcher = self.kernel[0]
        self.chunks = chunks = dispatcher(0, 0, n, *args)
        self.serial = chunks < MIN_CHUNKS or CPUS < 2   # what run_chunks decides first
        types = tuple(dispatcher.typeof_pyval(a) for a in (0, 0, n, *args))
        found = dispatcher.overloads.get(types)
        # entry_point: the compiled function's CPython wrapper, what the dispatcher calls once
        # it has matched the types (it unboxes the arguments the same way)
        self.entry = dispatcher if found is None else found.entry_point
        return self.entry
