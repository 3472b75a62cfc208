"""``fa.precompile``: compile, without running, the kernels that evaluating lazy arrays needs.

Where it sits: beside :mod:`runtime`. It plans the kernels exactly as evaluation would (grouping by
shape as ``fa.compute`` does), keys them for a GPU arch, skips those already in the disk cache, and
compiles the rest to PTX and cubin (``cuda/compile.py``) into the disk cache, so a later process
— on this machine or one sharing the cache folder — loads them without compiling or importing
numba. No GPU is needed when ``arch`` is given.

Many kernels compile as a batch. This process compiles them as a pipeline: numba's typing and
lowering (under numba's global compile lock, holding the GIL) here, one kernel after another,
while threads run NVVM and nvJitLink (which release both) on the kernels lowered before. A batch
long enough to repay their start also gets worker processes (``spawn``: no fork of a process
that may hold CUDA or numba state), which take jobs from the front of the list while this
process takes them from the back; a job neither has started is cancelled in the pool and done
here.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import warnings
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait

from . import codegen, graph, layout, runtime
from .backend import get_backend
from .errors import CompileError, DeviceUnavailableError
from .plan import KernelPlan, plan_kernel

_POOL_ALIGN = 256  # a stream-ordered pool allocation is aligned to at least this
# Batches from this many kernels start worker processes. A spawned worker takes ~2.5 s to
# import numba and compile its first kernel, while this process's pipeline (below) compiles a
# kernel every ~75 ms once warm. On the H100 host (16 CPUs, 2026-11-22, benchmarks/warm_start.py)
# a fresh process compiled 16 kernels in 2.56 s alone and in 3.41 s with 15 workers; a warm one
# 48 kernels in 3.68 s alone and in 3.75 s with 15 workers: workers pay off only past that.
_WORKER_BATCH = 48
# Threads running NVVM and nvJitLink for the kernels this thread lowers: per kernel the two take
# about as long as numba's typing and lowering (24 + 36 ms against 51 ms on the H100 host), so
# two keep up; a third covers a kernel whose link is slow.
_FINISHERS = 3
_SWITCH_INTERVAL = 0.0005   # seconds: the GIL switch interval while a batch compiles


class _Slot:
    """Stands in for a buffer while planning: what the planner reads of one, nothing else."""

    __slots__ = ("uid", "align", "backend")

    def __init__(self, uid: int, align: int = _POOL_ALIGN):
        self.uid, self.align, self.backend = uid, align, None


def precompile(*arrays, arch: str | None = None, workers: int | None = None,
               progress: bool | None = None) -> dict:
    """Compile the kernels that evaluating ``arrays`` needs, for ``arch``, into the disk cache.

    Each array is planned as its own evaluation (``a.compute()``); a tuple of arrays as one
    evaluation of them together (``fa.compute(a, b)``); a list is a batch of such arguments.
    Nothing runs and the arrays stay pending. ``arch`` (``"sm_90"``) defaults to the current
    CUDA device's; given, no GPU is needed. Where the arrays are not on a CUDA device of that
    arch, the kernels are planned as if their buffers were fresh device allocations (aligned as
    the pool aligns them). ``workers``: processes for a batch (default: one fewer than the CPUs
    for a batch of 48 kernels or more, else none; this process compiles too; 0 compiles here
    only). A progress bar shows when the batch takes over a second (``progress=False`` hides
    it).

    Returns ``{"arch", "kernels", "compiled", "cached", "seconds", "workers"}``.

    >>> import fusedarrays as fa, numpy as np  # doctest: +SKIP
    >>> x = fa.asarray(np.ones(8, np.float32))  # doctest: +SKIP
    >>> fa.precompile(fa.sqrt(x) + 1, x * 2, arch="sm_90")["kernels"]  # doctest: +SKIP
    2
    """
    from .cuda.compile import arch_cc
    from .cuda.toolchain import toolchain_versions

    start = time.perf_counter()
    report = {"arch": arch, "kernels": 0, "compiled": 0, "cached": 0, "seconds": 0.0,
              "workers": 0}
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        return report  # a worker re-importing an unguarded __main__: the parent does the work
    device_arch = _device_arch()
    arch = arch or device_arch
    if arch is None:
        raise DeviceUnavailableError(
            "fa.precompile needs a GPU arch: no CUDA device is the active backend here, so "
            "pass one, e.g. fa.precompile(y, arch='sm_90') (no GPU is needed then)")
    arch_cc(arch)  # a malformed arch fails here, before any work
    plans = []
    for group in _evaluations(arrays):
        plans += kernel_plans(group, real_buffers=arch == device_arch)
    todo, report["cached"] = _misses(plans, arch, toolchain_versions())
    jobs = [(codegen.render_kernel(p, "cuda"), p.name, p.param_types(), arch)
            for p in todo.values()]
    results, report["workers"] = compile_batch(jobs, workers, progress)
    in_memory = 0
    for (dkey, plan), job, (ptx, cubin, entry, times) in zip(todo.items(), jobs, results):
        artifact = {"ptx": ptx, "cubin": cubin, "entry": entry}
        in_memory += not runtime.keep_artifact(arch, dkey, plan, artifact)
        runtime.note_compile(plan, f"precompiled for {arch}", job[0], times)
    if in_memory:
        warnings.warn(f"fa.precompile: the kernel disk cache is off or unusable, so {in_memory} "
                      f"kernel(s) for {arch} are kept in this process's memory only "
                      f"(see fa.cache_info())", RuntimeWarning, stacklevel=2)
    report.update(arch=arch, kernels=report["cached"] + len(todo), compiled=len(todo),
                  seconds=time.perf_counter() - start)
    return report


def _misses(plans: list[KernelPlan], arch: str, toolchain: dict) -> tuple[dict, int]:
    """``({disk key: plan} not in the disk cache, how many are)``, each kernel once."""
    cache = runtime.disk_cache()
    todo: dict[str, KernelPlan] = {}
    cached: set[str] = set()
    for plan in plans:
        dkey = runtime.disk_key(plan, arch, toolchain)
        if dkey in todo or dkey in cached:
            continue
        if cache.get(arch, dkey, "cubin") is not None:
            cached.add(dkey)
        else:
            todo[dkey] = plan
    return todo, len(cached)


def _evaluations(arrays) -> list[tuple]:
    """The evaluations ``precompile``'s arguments stand for: arrays alone, tuples together."""
    found = []
    for a in arrays:
        if isinstance(a, list):
            found += _evaluations(a)
        else:
            found.append(a if isinstance(a, tuple) else (a,))
    return found


def _device_arch() -> str | None:
    try:
        backend = get_backend()
    except DeviceUnavailableError:  # FUSEDARRAYS_BACKEND=cuda without a GPU: arch= may do
        return None
    return backend.arch if backend.name == "cuda" else None


def kernel_plans(arrays, real_buffers: bool = True) -> list[KernelPlan]:
    """The plans evaluating ``arrays`` together launches: one per group of pending arrays of one
    backend and shape, as ``fa.compute`` groups them, computing into fresh contiguous buffers.

    With ``real_buffers`` False each buffer is replaced by a pool-aligned stand-in (keeping which
    leaves share a buffer), so the plan is the one a CUDA device's pool allocations give.
    """
    groups: dict[tuple, list[graph.Node]] = {}
    for a in arrays:
        root = a
        while root._view_of is not None and root.pending:
            root = root._view_of[0]
        node = root._resolved()
        if node.is_leaf or any(node is n for nodes in groups.values() for n in nodes):
            continue
        owner = next(iter(node.buffers), None)
        backend = owner.backend if owner is not None else None
        groups.setdefault((id(backend), node.shape), []).append(node)
    plans = []
    for nodes in groups.values():
        if not real_buffers:
            nodes = _with_stand_in_buffers(nodes)
        outputs = [(n, (_Slot(0), n.dtype, n.shape, layout.contiguous_strides(n.shape), 0))
                   for n in nodes]
        plan = plan_kernel(outputs)
        if plan.size:
            plans.append(plan)
    return plans


def _with_stand_in_buffers(nodes: list[graph.Node]) -> list[graph.Node]:
    """The same graphs over pool-aligned stand-in buffers (one per distinct real buffer)."""
    slots: dict[int, _Slot] = {}
    built: dict[int, graph.Node] = {}
    for n in graph.walk(nodes):
        if n.kind == "leaf":
            buffer, (shape, strides, offset) = n.attrs
            slot = slots.setdefault(id(buffer), _Slot(-1 - len(slots)))
            built[n.serial] = graph.leaf(slot, n.dtype, shape, strides, offset)
        elif n.kind == "scalar":
            built[n.serial] = n
        else:
            inputs = tuple(built[(i.realized or i).serial] for i in n.inputs)
            built[n.serial] = (graph.cast(inputs[0], n.dtype) if n.kind == "cast"
                               else graph.op(n.attrs[0], inputs, n.attrs[1]))
    return [built[(n.realized or n).serial] for n in nodes]


def compile_batch(jobs: list[tuple], workers: int | None = None, progress: bool | None = None
                  ) -> tuple[list[tuple], int]:
    """Run :func:`~.cuda.compile.compile_kernel` on each ``(source, name, param types, arch)``.

    Returns the results in job order and the number of worker processes asked for (0: all
    here). This thread compiles from the back of the list, as a pipeline: it types and lowers
    one kernel after another (numba's part, which holds numba's lock and the GIL) and hands each
    lowered kernel to a few threads for NVVM and nvJitLink, which release both, so a batch costs
    about its lowering time. Worker processes (default: one fewer than the CPUs, for a batch
    worth starting them) are started by a dispatcher thread (each imports numba and compiles a
    first kernel, a second or two, while this thread works), which then feeds them from the
    front, one job per idle worker, so no job waits in a queue that this thread could have
    done. The first failure is raised.
    """
    if workers is None:
        cpus = os.cpu_count() or 1
        workers = min(len(jobs) - 1, max(cpus - 1, 1)) if len(jobs) >= _WORKER_BATCH else 0
    batch = _Batch(jobs, _progress_bar(len(jobs), progress))
    dispatcher = threading.Thread(target=batch.dispatch, args=(workers,), daemon=True)
    try:
        if workers > 0:
            dispatcher.start()
        _pipeline(batch)
    finally:
        batch.stop = True
        if dispatcher.is_alive():
            dispatcher.join()
        batch.bar.close()
    failed = [r for r in batch.results if isinstance(r, BaseException)]
    if failed:
        raise failed[0]
    return batch.results, max(workers, 0)


def _pipeline(batch: _Batch) -> None:
    """This thread's share of a batch: lower here, NVVM and link on :data:`_FINISHERS` threads.
    Returns once every job of the batch (the workers' too) has a result."""
    from . import devicelib
    from .cuda.compile import finish_kernel, lower_kernel

    helpers = devicelib.helpers()

    def finish(k: int, lowered) -> None:
        try:
            batch.finish(k, finish_kernel(lowered))
        except Exception as e:
            batch.finish(k, e)

    threads = min(_FINISHERS, os.cpu_count() or 1)
    switch = sys.getswitchinterval()
    # A finisher takes the GIL back after each NVVM or nvJitLink call (a dozen per kernel) from
    # this thread, which gives it up only every switch interval while it lowers: at the default
    # 5 ms, NVVM and the link of a kernel took 57 and 53 ms in a batch against 20 and 34 alone
    # (H100 host, 2026-11-22).
    sys.setswitchinterval(min(switch, _SWITCH_INTERVAL))
    try:
        with ThreadPoolExecutor(threads, thread_name_prefix="fusedarrays-nvvm") as finishers:
            while (k := batch.take(from_back=True)) is not None:
                try:
                    lowered = lower_kernel(*batch.jobs[k], helpers)
                except Exception as e:
                    batch.finish(k, e)
                    continue
                finishers.submit(finish, k, lowered)
    finally:
        sys.setswitchinterval(switch)


class _Batch:
    """Jobs shared by this thread and the pool's dispatcher; results in job order."""

    def __init__(self, jobs: list[tuple], bar):
        self.jobs, self.bar = jobs, bar
        self.pending = deque(range(len(jobs)))
        self.results: list = [None] * len(jobs)
        self.remaining = len(jobs)
        self.stop = False
        self.cond = threading.Condition()

    def take(self, from_back: bool) -> int | None:
        """The next job, or None once none is left (this thread waits for the workers' last)."""
        with self.cond:
            while from_back and not self.pending and self.remaining:
                self.cond.wait()
            if not self.pending:
                return None
            return self.pending.pop() if from_back else self.pending.popleft()

    def finish(self, k: int, result) -> None:
        with self.cond:
            self.results[k] = result
            self.remaining -= 1
            self.cond.notify_all()
        self.bar.update()

    def give_back(self, k: int) -> None:
        with self.cond:
            self.pending.append(k)
            self.cond.notify_all()

    def dispatch(self, workers: int) -> None:
        from .cuda.compile import compile_kernel

        running: dict = {}
        # spawn: never a fork of this process, which may hold a CUDA context and numba's locks
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_warm_worker)
        try:
            warming = {pool.submit(int) for _ in range(workers)}
            while warming and self.pending and not self.stop:
                _, warming = wait(warming, timeout=0.05)
            while not self.stop:
                while len(running) < workers and (k := self.take(from_back=False)) is not None:
                    running[pool.submit(compile_kernel, *self.jobs[k])] = k
                if not running:
                    return
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    k = running.pop(future)
                    try:
                        self.finish(k, future.result())
                    except CompileError as e:
                        self.finish(k, e)
                    except Exception:
                        self.give_back(k)  # a broken worker: the other thread compiles it
        except Exception:  # the pool broke: the other thread compiles what is left
            for k in running.values():
                self.give_back(k)
        finally:
            # Workers still warming up finish that and exit on their own; nothing waits for them.
            pool.shutdown(wait=False, cancel_futures=True)


def _warm_worker() -> None:
    import fusedarrays.cuda.warm  # noqa: F401 - importing it is the warm-up


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, progress: bool | None):
    if progress is False or total == 0:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar()
    # delay: only a batch that takes over a second shows a bar
    return tqdm(total=total, desc="fusedarrays: compiling kernels", unit="kernel",
                delay=0.0 if progress else 1.0, leave=False)
