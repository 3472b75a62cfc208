"""``fa.precompile``: compile, without running, the kernels that evaluating lazy arrays needs.

Where it sits: beside :mod:`runtime`. It plans the kernels exactly as evaluation would (grouping by
shape as ``fa.compute`` does), keys them for a GPU arch, skips those already in the disk cache, and
compiles the rest to PTX and cubin (``cuda/compile.py``) into the disk cache, so a later process
— on this machine or one sharing the cache folder — loads them without compiling or importing
numba. No GPU is needed when ``arch`` is given.

Many kernels compile as a batch. This process compiles them as a pipeline: numba's typing and
lowering (under numba's global compile lock, holding the GIL) here, one kernel after another,
while threads run NVVM and nvJitLink (which release both) on the kernels lowered before. Beside
it, workers forked by the process's compile server (``cuda/compile_server.py``: numba imported
once, in the background, from the first batch on) take jobs from the front of the list while
this process takes them from the back.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import config
from ..compiler import Plan, plan_evaluation, render
from ..compiler import helpers as kernel_helpers
from ..errors import DeviceUnavailableError
from ..ir import graph, layout
from ..ir.params import roots_params
from ..ir.products import matmul_node
from ..ir.reductions import reduction_node
from ..ir.scans import scan_node
from . import realize, records
from .backend import arch_compiler, get_backend
from .launch import scalar_arg

_POOL_ALIGN = 256  # a stream-ordered pool allocation is aligned to at least this
# From this many CPUs a batch gets workers by default. The compile server's warm-up costs a CPU
# ~2.5 s while the batch that started it compiles; a warm server forks a worker in ~3 ms.
_SERVER_CPUS = 4
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
    CUDA device's; given, no GPU is needed. Without ``arch`` on the cpu backend, the cpu kernels
    are compiled (for the argument types their evaluations pass) into its disk cache. Where the
    arrays are not on a CUDA device of that arch, the kernels are planned as if their buffers
    were fresh device allocations (aligned as the pool aligns them). ``workers``: worker
    processes for a batch, forked by a compile server that the first batch starts (default
    ``FUSEDARRAYS_COMPILE_WORKERS``, else one fewer than the CPUs from 4 CPUs on; this process
    compiles too; 0 compiles here only and starts no server). A progress bar shows when the
    batch takes over a second (``progress=False`` hides it).

    Returns ``{"arch", "kernels", "compiled", "cached", "seconds", "workers",
    "worker_kernels"}`` (``worker_kernels``: how many the workers compiled).

    >>> import fusedarrays as fa, numpy as np  # doctest: +SKIP
    >>> x = fa.asarray(np.ones(8, np.float32))  # doctest: +SKIP
    >>> fa.precompile(fa.sqrt(x) + 1, x * 2, arch="sm_90")["kernels"]  # doctest: +SKIP
    2
    """
    compiler = arch_compiler()
    start = time.perf_counter()
    report = {"arch": arch, "kernels": 0, "compiled": 0, "cached": 0, "seconds": 0.0,
              "workers": 0, "worker_kernels": 0}
    device_arch = _device_arch()
    arch = arch or device_arch
    if arch is None and _active_name() == "cpu":
        return _precompile_cpu(arrays, report, start, progress)
    if arch is None:
        raise DeviceUnavailableError(
            "fa.precompile needs a GPU arch: no CUDA device is the active backend here, so "
            "pass one, e.g. fa.precompile(y, arch='sm_90') (no GPU is needed then)")
    compiler.check(arch)  # a malformed arch fails here, before any work
    plans = []
    for group in _evaluations(arrays):
        plans += kernel_plans(group, real_buffers=arch == device_arch)
    todo, report["cached"] = _misses(plans, arch, compiler.toolchain())
    jobs = [(render(p, "cuda"), p.name, p.param_types(), arch)
            for p in todo.values()]
    results, done_by = compile_batch(jobs, workers, progress)
    report.update(done_by)
    in_memory = 0
    for (dkey, plan), job, (ptx, cubin, entry, times) in zip(todo.items(), jobs, results):
        artifact = {"ptx": ptx, "cubin": cubin, "entry": entry}
        in_memory += not realize.keep_artifact(arch, dkey, plan, artifact)
        records.note_compile(plan, f"precompiled for {arch}", job[0], times)
    if in_memory:
        warnings.warn(f"fa.precompile: the kernel disk cache is off or unusable, so {in_memory} "
                      f"kernel(s) for {arch} are kept in this process's memory only "
                      f"(see fa.cache_info())", RuntimeWarning, stacklevel=2)
    _prepare_records(arrays, arch)
    report.update(arch=arch, kernels=report["cached"] + len(todo), compiled=len(todo),
                  seconds=time.perf_counter() - start)
    return report


def _prepare_records(arrays, arch: str) -> None:
    """The launch records of the evaluations ``arrays`` stand for, where the arrays live on a
    device of ``arch`` (kernels from the caches just filled): a first evaluation then plans and
    loads nothing."""
    for group in _evaluations(arrays):
        for backend, nodes in _groups(group):
            if backend is not None and backend.arch == arch:
                realize.prepare(nodes, backend)


def _misses(plans: list[Plan], arch: str, toolchain: dict) -> tuple[dict, int]:
    """``({disk key: plan} not in the disk cache, how many are)``, each kernel once."""
    cache = realize.disk_cache()
    todo: dict[str, Plan] = {}
    cached: set[str] = set()
    for plan in plans:
        dkey = realize.disk_key(plan, arch, toolchain)
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


def _active_name() -> str | None:
    try:
        return get_backend().name
    except DeviceUnavailableError:
        return None


def _precompile_cpu(arrays, report: dict, start: float, progress: bool | None) -> dict:
    """``precompile`` on the cpu backend: each kernel built and compiled by numba for the
    argument types its evaluation passes (without running it), so the disk cache holds it; a
    progress bar as for a batch (numba's compile of a kernel takes a good part of a second)."""
    backend = get_backend()
    plans: dict[str, Plan] = {}
    for group in _evaluations(arrays):
        for plan in kernel_plans(group):
            plans.setdefault(plan.key, plan)
    bar = _progress_bar(len(plans), progress)
    try:
        for plan in plans.values():
            compiles = records.stats()["compiles"]
            kernel = realize.kernel_for(plan, backend)
            scratch = np.empty(16, np.uint8)   # only the arguments' types matter here
            args = [backend.operand_arg(scratch, o.dtype, 0) for o in plan.operands]
            args += plan.int_args() + [scalar_arg(v, dt) for v, dt in plan.scalars]
            backend.prepare(kernel, plan.size, args)
            report["compiled" if records.stats()["compiles"] > compiles else "cached"] += 1
            bar.update(1)
    finally:
        bar.close()
    _prepare_records(arrays, backend.arch)
    report.update(arch=backend.arch, kernels=len(plans), seconds=time.perf_counter() - start)
    return report


def _device_arch() -> str | None:
    try:
        backend = get_backend()
    except DeviceUnavailableError:  # FUSEDARRAYS_BACKEND=cuda without a GPU: arch= may do
        return None
    return backend.arch if backend.name == "cuda" else None


def kernel_plans(arrays, real_buffers: bool = True) -> list[Plan]:
    """The plans evaluating ``arrays`` together launches: one per group of pending arrays of one
    backend and shape, as ``fa.compute`` groups them, computing into fresh contiguous buffers.

    With ``real_buffers`` False each buffer is replaced by a pool-aligned stand-in (keeping which
    leaves share a buffer), so the plan is the one a CUDA device's pool allocations give.
    """
    plans = []
    for backend, nodes in _groups(arrays):
        if not real_buffers:
            nodes = _with_stand_in_buffers(nodes)
        outputs = [(n, (_Slot(0), n.dtype, n.shape, layout.contiguous_strides(n.shape), 0))
                   for n in nodes]
        # a cut graph's temporaries aligned as allocated
        align = _POOL_ALIGN if not real_buffers else (backend.alloc_align or 1)
        program = plan_evaluation(outputs, roots_params(nodes)[0], align)
        plans += [step.plan for step in program.steps if step.plan.size]
    return plans


def _groups(arrays) -> list[tuple]:
    """``(backend, pending nodes)`` per group ``fa.compute(*arrays)`` launches once: pending
    arrays of one backend and shape."""
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
        groups.setdefault((backend, node.shape), []).append(node)
    return [(backend, nodes) for (backend, _), nodes in groups.items()]


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
        elif n.kind == "random":    # reads no buffer: the draw itself
            built[n.serial] = n
        else:
            inputs = tuple(built[i.serial] for i in n.inputs)
            built[n.serial] = (graph.gather(inputs[0], inputs[1], *n.attrs, *inputs[2:])
                               if n.kind == "gather" else
                               reduction_node(n.attrs[0], inputs[0], n.attrs[1], n.attrs[2],
                                            n.dtype) if n.kind == "reduce" else
                               scan_node(n.attrs[0], inputs[0], n.attrs[1], n.attrs[2],
                                         n.dtype) if n.kind == "scan" else
                               matmul_node(inputs[0], inputs[1], n.dtype, n.attrs[1],
                                           n.attrs[2]) if n.kind == "matmul" else
                               graph.cast(inputs[0], n.dtype) if n.kind == "cast"
                               else graph.op(n.attrs[0], inputs, n.attrs[1]))
    return [built[n.serial] for n in nodes]


def compile_batch(jobs: list[tuple], workers: int | None = None, progress: bool | None = None
                  ) -> tuple[list[tuple], dict]:
    """Run :func:`~.cuda.compile.compile_kernel` on each ``(source, name, param types, arch)``.

    Returns the results in job order and ``{"workers", "worker_kernels"}``: the workers asked
    for (0: all here) and how many kernels they compiled. This thread compiles from the back of
    the list, as a pipeline: it types and lowers one kernel after another (numba's part, which
    holds numba's lock and the GIL) and hands each lowered kernel to a few threads for NVVM and
    nvJitLink, which release both, so a batch costs about its lowering time. Workers (default:
    :func:`default_workers`) are forks of this process's compile server
    (:mod:`.cuda.compile_server`, started by the first batch and warm a few seconds later): a
    dispatcher thread keeps up to ``workers`` jobs from the front of the list at the server.
    Once no job is left to start, this thread also compiles the one sent to a worker last, and
    the first result of a job counts, so the batch never waits on a slow worker. The first
    failure is raised.
    """
    if workers is None:
        workers = default_workers()
    if not hasattr(os, "fork"):   # the server forks its workers
        workers = 0
    workers = max(min(workers, len(jobs) - 1), 0)
    batch = _Batch(jobs, _progress_bar(len(jobs), progress))
    dispatcher = threading.Thread(target=batch.dispatch, args=(workers,), daemon=True,
                                  name="fusedarrays-dispatch")
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
    return batch.results, {"workers": workers, "worker_kernels": batch.worker_kernels}


def default_workers() -> int:
    """``FUSEDARRAYS_COMPILE_WORKERS``, else one fewer than the CPUs from :data:`_SERVER_CPUS`
    CPUs on (on fewer, the server's warm-up, ~2.5 s of a CPU, would slow this process's first
    batch more than its workers speed later ones)."""
    chosen = config.get("COMPILE_WORKERS")
    if chosen is not None:
        return chosen
    cpus = os.cpu_count() or 1
    return cpus - 1 if cpus >= _SERVER_CPUS else 0


def _pipeline(batch: _Batch) -> None:
    """This thread's share of a batch: lower here, NVVM and link on :data:`_FINISHERS` threads.
    Returns once every job of the batch (the workers' too) has a result."""
    compiler = arch_compiler()
    helpers = kernel_helpers()

    def finish(k: int, lowered) -> None:
        try:
            batch.finish(k, compiler.finish(lowered))
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
                    lowered = compiler.lower(*batch.jobs[k], helpers)
                except Exception as e:
                    batch.finish(k, e)
                    continue
                finishers.submit(finish, k, lowered)
    finally:
        sys.setswitchinterval(switch)


_BATCH_IDS = itertools.count()


class _Batch:
    """Jobs shared by this thread and the dispatcher; results in job order, the first result
    of each job counting."""

    def __init__(self, jobs: list[tuple], bar):
        self.jobs, self.bar = jobs, bar
        self.pending = deque(range(len(jobs)))
        self.here: list[int] = []   # given back by a worker: this thread's alone
        self.results: list = [None] * len(jobs)
        self.done = [False] * len(jobs)
        self.remaining = len(jobs)
        self.at_workers: dict[int, bool] = {}   # sent to a worker, in order → taken here too
        self.worker_kernels = 0
        self.stop = False
        self.cond = threading.Condition()

    def take(self, from_back: bool) -> int | None:
        """The next job, or None once none is left. This thread (``from_back``) then takes the
        job last sent to a worker that it has not taken yet, else waits for the workers."""
        with self.cond:
            while True:
                if from_back and self.here:
                    return self.here.pop()
                if self.pending:
                    k = self.pending.pop() if from_back else self.pending.popleft()
                    if not from_back:
                        self.at_workers[k] = False
                    return k
                if not from_back or not self.remaining:
                    return None
                spare = [k for k, taken in self.at_workers.items() if not taken]
                if spare:
                    self.at_workers[spare[-1]] = True
                    return spare[-1]
                self.cond.wait()

    def finish(self, k: int, result, by_worker: bool = False) -> None:
        with self.cond:
            if by_worker:
                self.at_workers.pop(k, None)
            if self.done[k]:
                return
            self.results[k], self.done[k] = result, True
            self.remaining -= 1
            self.worker_kernels += by_worker
            self.cond.notify_all()
        self.bar.update()

    def give_back(self, k: int) -> None:
        """A worker will not compile job ``k`` (it died, or the server went): this thread
        will, unless it has taken or finished it already. Never sent to a worker again: a job
        that kills its worker would kill the next."""
        with self.cond:
            taken_here = self.at_workers.pop(k, False)
            if not self.done[k] and not taken_here:
                self.here.append(k)
            self.cond.notify_all()

    def dispatch(self, workers: int) -> None:
        """The dispatcher thread: jobs to the compile server, up to ``workers`` at a time."""
        try:
            server = arch_compiler().server()
        except OSError:   # no process could be started: this batch compiles here
            return
        if not server.lock.acquire(blocking=False):
            return   # another thread's batch has the server: this one compiles alone
        batch, running = next(_BATCH_IDS), set()
        try:
            while not server.ready(timeout=0.05):
                if self.stop or not self.pending or not server.alive():
                    return
            while not self.stop and self.remaining:
                while len(running) < workers and (k := self.take(from_back=False)) is not None:
                    server.send("job", batch, k, self.jobs[k])
                    running.add(k)
                if not running:
                    return
                answer = server.receive(timeout=0.05)
                if answer is None or answer[1] != batch:
                    continue   # none yet, or one for a cancelled batch
                kind, _, k, payload = answer
                running.discard(k)
                if kind == "lost":
                    self.give_back(k)
                else:   # "done", or "failed" with a CompileError
                    self.finish(k, payload, by_worker=True)
        except (EOFError, OSError):
            pass   # the server is gone: this process compiles what is left
        finally:
            for k in running:
                self.give_back(k)
            if running:
                with contextlib.suppress(OSError):
                    server.send("cancel", batch)
            server.lock.release()


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
