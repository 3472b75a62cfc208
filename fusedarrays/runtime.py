"""realize(arrays): plan → key → memory cache → disk cache → codegen/compile → load → launch.

The one place the pipeline's stages meet. Pending arrays are grouped by shape; each group becomes
one
kernel launch. Kernels are kept in memory per ``(device, structure key)``; on a backend with an
``arch`` the PTX and the linked cubin are also kept on disk per arch, so a new process loads the
cubin without compiling (or importing numba). Counters (:func:`stats`) and stage timings
(:func:`timings`) are kept here for tests and people.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict

import numpy as np

from . import codegen, config, devicelib, graph, keys, layout
from .backend import Backend, Buffer, new_buffer
from .diskcache import DiskCache
from .plan import KernelPlan, plan_kernel

log = logging.getLogger("fusedarrays.compile")

_stats: Counter = Counter()
_timings: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
_memory: dict[tuple[str, str], object] = {}
_compiled: dict[str, dict] = {}          # structure key → what explain() shows of it
_by_graph: dict[str, tuple] = {}         # graph part → the parts of its last compile
_disk: dict[str, DiskCache] = {}


def stats() -> dict[str, int]:
    """Counters since start or :func:`reset_stats`: compiles, launches, memory_hits, disk_hits."""
    return {k: _stats[k] for k in ("compiles", "launches", "memory_hits", "disk_hits")}


def reset_stats() -> None:
    _stats.clear()
    _timings.clear()


def timings() -> dict[str, tuple[int, float]]:
    """Stage → (count, total seconds): plan, codegen, compile, load, launch."""
    return {stage: (int(c), t) for stage, (c, t) in _timings.items()}


class _timed:
    __slots__ = ("stage", "start")

    def __init__(self, stage: str):
        self.stage = stage

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        entry = _timings[self.stage]
        entry[0] += 1
        entry[1] += time.perf_counter() - self.start


def disk_cache() -> DiskCache:
    root = config.get("CACHE_DIR")
    if root not in _disk:
        _disk[root] = DiskCache(root, max_bytes=config.get("CACHE_SIZE"),
                                enabled=config.get("CACHE"))
    return _disk[root]


def target_of(backend: Backend) -> str:
    return "cpu" if backend.name == "cpu" else "cuda"


def kernel_for(plan: KernelPlan, backend: Backend):
    """The loaded kernel for ``plan`` on ``backend``, compiling it only on a miss of both levels."""
    mkey = (backend.device_key, plan.key)
    kernel = _memory.get(mkey)
    if kernel is not None:
        _stats["memory_hits"] += 1
        return kernel
    ptypes = plan.param_types()
    disk, dkey = None, None
    if backend.arch is not None and config.get("CACHE"):
        disk = disk_cache()
        dkey = keys.digest(keys.disk_parts(plan.key, backend.arch, backend.toolchain()))
        hit = disk.get(backend.arch, dkey, "cubin")
        if hit is not None:
            with _timed("load"):
                kernel = backend.load({"cubin": hit[0], "entry": hit[1]["entry"]}, ptypes)
            _stats["disk_hits"] += 1
            _memory[mkey] = kernel
            return kernel
    kernel = _compile_and_load(plan, backend, ptypes, disk, dkey)
    _memory[mkey] = kernel
    return kernel


def _compile_and_load(plan, backend, ptypes, disk, dkey):
    graph_part = dict(plan.key_parts)["graph"]
    why = keys.explain_miss(plan.key_parts, _by_graph.get(graph_part))
    if config.get("LOG_COMPILES"):
        log.warning("fusedarrays: compiling %s on %s: %s", plan.name, backend.device_key, why)
    with _timed("codegen"):
        source = codegen.render_kernel(plan, target_of(backend))
    with _timed("compile"):
        artifact = backend.compile(source, plan.name, ptypes, devicelib.helpers())
    _stats["compiles"] += 1
    _by_graph[graph_part] = plan.key_parts
    _compiled[plan.key] = {"source": source, "why": why}
    if disk is not None:
        meta = {"parts": dict(plan.key_parts), "entry": artifact["entry"]}
        disk.put(backend.arch, dkey, "ptx", artifact["ptx"].encode(), meta)
        disk.put(backend.arch, dkey, "cubin", artifact["cubin"], meta)
    with _timed("load"):
        return backend.load(artifact, ptypes)


def compiled_info(key: str) -> dict | None:
    return _compiled.get(key)


def scalar_arg(value, dtype: np.dtype):
    """A scalar parameter in its kernel type: float16 travels as float32, bool as uint8."""
    if dtype == np.float16:
        return np.float32(np.float16(value))
    if dtype == np.bool_:
        return np.uint8(bool(value))
    return dtype.type(value)


def launch_plan(plan: KernelPlan) -> None:
    """Compile-or-fetch and launch one planned kernel (nothing to do for an empty shape)."""
    if plan.size == 0:
        return
    backend = plan.operands[-1].buffer.backend
    kernel = kernel_for(plan, backend)
    args = [backend.operand_arg(o.buffer.storage, o.dtype, o.offset if o.layout == "C" else 0)
            for o in plan.operands]
    args += plan.int_args()
    args += [scalar_arg(v, dt) for v, dt in plan.scalars]
    with _timed("launch"):
        backend.launch(kernel, plan.size, args)
    _stats["launches"] += 1


def run(outputs: list[tuple[graph.Node, tuple]]) -> None:
    """Compute each node into its ``(buffer, dtype, shape, strides, offset)`` in one launch."""
    with _timed("plan"):
        plan = plan_kernel(outputs)
    launch_plan(plan)


def compute_nodes(nodes: list[graph.Node], backend: Backend) -> list[graph.Node]:
    """Compute pending nodes of one shape into fresh contiguous buffers, in one launch; return
    the leaves that now hold them (and remember them on the nodes)."""
    outputs, results = [], []
    for node in nodes:
        node = node.realized or node
        if node.is_leaf:
            results.append(node)
            continue
        strides = layout.contiguous_strides(node.shape)
        buffer = new_buffer(backend, layout.size_of(node.shape) * node.dtype.itemsize)
        outputs.append((node, (buffer, node.dtype, node.shape, strides, 0)))
        results.append(None)
    if outputs:
        run(outputs)
    done = iter(outputs)
    for k, result in enumerate(results):
        if result is None:
            node, (buffer, dtype, shape, strides, _) = next(done)
            leaf = graph.leaf(buffer, dtype, shape, strides, 0)
            node.realized = leaf
            results[k] = leaf
    return results


def reads_through_other_map(node: graph.Node, buffer: Buffer, target: tuple) -> bool:
    """Whether ``node`` reads ``buffer`` at any element other than the one it writes there.

    Each thread reads its inputs before it stores, so reading the destination at the same index
    is safe; any other index map (``x += x.T``, a shifted or broadcast view) must be staged.
    """
    _, _, shape, strides, offset = target
    want = layout.broadcast_strides(shape, strides, shape)
    for n in graph.walk([node]):
        n = n.realized or n
        if n.is_leaf:
            buf, lshape, lstrides, loffset = graph.leaf_view(n)
            if buf is buffer and (loffset != offset or
                                  layout.broadcast_strides(lshape, lstrides, shape) != want):
                return True
    return False
