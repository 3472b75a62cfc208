"""realize(arrays): plan → key → memory cache → disk cache → codegen/compile → load → launch.

The one place the pipeline's stages meet. Pending arrays are grouped by shape; each group becomes
one kernel launch. Kernels are kept in memory per ``(device, structure key)``; on a backend with an
``arch`` the PTX and the linked cubin are also kept on disk per arch, so a new process loads the
cubin without compiling (or importing numba). Counters, stage timings and why each kernel
compiled are recorded in :mod:`records` (re-exported here).

The hot path (an expression evaluated again with the same structure and sizes) skips planning:
:func:`run` traces the graph into a cheap signature and reuses the *launch recipe* (loaded kernel,
which buffer feeds which pointer, the integer parameters, scalar converters) that the first such
evaluation derived from its :class:`~.plan.KernelPlan`.
"""

from __future__ import annotations

import logging
import weakref

import numpy as np

from .. import config
from ..compiler import codegen, devicelib, keys
from ..compiler.plan import KernelPlan, plan_kernel
from ..ir import graph, layout
from .backend import Backend, Buffer, append_weak, new_buffer
from .diskcache import DiskCache
from .records import (
    _add_time,
    _perf,
    _stats,
    _timed,
    note_compile,
    note_kernel,
    why_compile,
)

log = logging.getLogger("fusedarrays.compile")

_memory: dict[tuple[str, str], object] = {}
_disk: dict[tuple, DiskCache] = {}
_artifacts: dict[tuple[str, str], dict] = {}  # (arch, key) → cubin where there's no disk level
_recipes: dict[tuple, _Recipe] = {}      # trace signature → launch recipe (the hot path)
_MAX_RECIPES = 4096                      # then the table starts over (a loop of new shapes)


# -- the disk level -------------------------------------------------------------------------------

def disk_cache() -> DiskCache:
    """The disk cache the current settings name (one instance per folder, size and switch)."""
    spec = (config.get("CACHE_DIR"), config.get("CACHE_SIZE"), config.get("CACHE"))
    cache = _disk.get(spec)
    if cache is None:
        cache = _disk[spec] = DiskCache(spec[0], max_bytes=spec[1], enabled=spec[2])
    return cache


def cache_info() -> dict:
    """The disk cache: ``{"dir", "entries", "bytes", "enabled", "usable", "memory_entries"}``.

    ``entries`` counts files (a kernel is a ``.ptx`` and a ``.cubin``); ``memory_entries`` the
    kernels loaded in this process.

    >>> sorted(cache_info())[:3]
    ['bytes', 'dir', 'enabled']
    """
    info = disk_cache().info()
    return {"dir": info["dir"], "entries": info["entries"], "bytes": info["bytes"],
            "enabled": bool(config.get("CACHE")), "usable": info["usable"],
            "memory_entries": len(_memory)}


def clear_cache() -> int:
    """Empty the disk cache folder and this process's loaded kernels; return files removed.

    The next evaluation of every expression compiles again (and writes the disk cache again).
    """
    _memory.clear()
    _recipes.clear()
    _artifacts.clear()
    return disk_cache().clear()


def disk_key(plan: KernelPlan, arch: str, toolchain: dict[str, str]) -> str:
    return keys.digest(keys.disk_parts(plan.key, arch, toolchain))


def store(arch: str, dkey: str, parts, artifact: dict) -> bool:
    """Put a compiled artifact's files on disk (PTX and cubin, or the cpu backend's kernel
    module; the one a hit looks for last: its presence is a hit); True if all are there now."""
    cache = disk_cache()
    meta = {"parts": dict(parts), "entry": artifact["entry"]}
    start = _perf()
    # the kind a hit looks for (the cubin, or the cpu backend's kernel module) goes last
    stored = all(cache.put(arch, dkey, kind, body.encode() if isinstance(body, str) else body,
                           meta)
                 for kind, body in _disk_kinds(artifact))
    _add_time("disk write", _perf() - start)
    return stored


def _disk_kinds(artifact: dict) -> list[tuple[str, object]]:
    return [(kind, artifact[kind]) for kind in ("ptx", "cubin", "src") if kind in artifact]


def keep_artifact(arch: str, dkey: str | None, plan: KernelPlan, artifact: dict) -> bool:
    """Keep a compiled kernel for every device of ``arch``: on disk (True) where the disk cache
    is on and usable, else in this process's memory (False)."""
    if dkey is not None and config.get("CACHE") and store(arch, dkey, plan.key_parts, artifact):
        return True
    _artifacts[(arch, plan.key)] = {kind: artifact[kind] for kind in ("cubin", "src", "entry")
                                    if kind in artifact}
    return False


# -- the memory level and compiling ----------------------------------------------------------------

def target_of(backend: Backend) -> str:
    return "cpu" if backend.name == "cpu" else "cuda"


def kernel_for(plan: KernelPlan, backend: Backend, render=None):
    """The loaded kernel for ``plan`` on ``backend``, compiling it only on a miss of both levels.

    ``render(plan, target)`` gives the source (default :func:`codegen.render_kernel`; fuse's
    multi-tensor plans pass :func:`codegen.render_foreach_kernel`)."""
    mkey = (backend.device_key, plan.key)
    kernel = _memory.get(mkey)
    if kernel is not None:
        _stats["memory_hits"] += 1
        return kernel
    ptypes = plan.param_types()
    dkey = None
    if backend.arch is not None:
        # Compiled for this arch already, for another device of this process: load it.
        artifact = _artifacts.get((backend.arch, plan.key))
        if artifact is None and config.get("CACHE"):
            dkey = disk_key(plan, backend.arch, backend.toolchain())
            kind = backend.disk_kind
            with _timed("disk read"):
                hit = disk_cache().get(backend.arch, dkey, kind)
            if hit is not None:
                artifact = {kind: hit[0], "entry": hit[1]["entry"]}
                _stats["disk_hits"] += 1
                note_kernel(plan, f"loaded from the disk cache ({backend.arch})")
        if artifact is not None:
            with _timed("load"):
                kernel = _memory[mkey] = backend.load(_with_folder(artifact, backend), ptypes)
            return kernel
    kernel = _compile_and_load(plan, backend, ptypes, dkey, render or codegen.render_kernel)
    _memory[mkey] = kernel
    return kernel


def _compile_and_load(plan, backend, ptypes, dkey, render):
    why = why_compile(plan)
    if config.get("LOG_COMPILES"):
        log.warning("fusedarrays: compiling %s on %s: %s", plan.name, backend.device_key, why)
    with _timed("codegen"):
        source = render(plan, target_of(backend))
    start = _perf()
    artifact = backend.compile(source, plan.name, ptypes, devicelib.helpers())
    times = artifact.get("times") if isinstance(artifact, dict) else None
    note_compile(plan, why, source, times or {"compile": _perf() - start})
    if backend.arch is not None:  # so other devices of this arch load it, not compile it
        keep_artifact(backend.arch, dkey, plan, artifact)
    with _timed("load"):
        return backend.load(_with_folder(artifact, backend), ptypes)


def _with_folder(artifact, backend):
    """The artifact with ``folder``: where the backend may keep files of its own for its arch
    (the cpu backend's kernel modules and numba's cache of them), None without a usable disk
    cache."""
    if isinstance(artifact, dict) and backend.arch is not None:
        artifact = dict(artifact, folder=disk_cache().folder(backend.arch)
                        if config.get("CACHE") else None)
    return artifact


# -- launching ------------------------------------------------------------------------------------

def scalar_arg(value, dtype: np.dtype):
    """A scalar parameter in its kernel type: float16 travels as float32, bool as uint8."""
    if dtype == np.float16:
        return np.float32(np.float16(value))
    if dtype == np.bool_:
        return np.uint8(bool(value))
    return dtype.type(value)


def _scalar_converter(dtype: np.dtype):
    if dtype == np.float16 or dtype == np.bool_:
        return lambda value: scalar_arg(value, dtype)
    return dtype.type


def _elem_offset(operand) -> int:
    """The element offset folded into an operand's pointer (0 where it is a parameter)."""
    return operand.offset if operand.folded else 0


def launch_plan(plan: KernelPlan) -> None:
    """Compile-or-fetch and launch one planned kernel (nothing to do for an empty shape)."""
    if plan.size == 0:
        return
    backend = plan.operands[-1].buffer.backend
    kernel = kernel_for(plan, backend)
    args = [backend.operand_arg(o.buffer.storage, o.dtype, _elem_offset(o))
            for o in plan.operands]
    args += plan.int_args()
    args += [scalar_arg(v, dt) for v, dt in plan.scalars]
    with _timed("launch"):
        backend.launch(kernel, plan.size, args, plan.geometry())
    _stats["launches"] += 1


class _Recipe:
    """How to launch a planned kernel again given only the buffers and scalar values of a graph
    with the same trace signature: everything else the plan decided is fixed by the signature."""

    __slots__ = ("backend", "kernel", "size", "geometry", "operands", "ints", "converters")

    def __init__(self, backend, kernel, plan: KernelPlan, operands: tuple):
        self.backend = backend
        self.kernel = kernel
        self.size = plan.size
        self.geometry = plan.geometry()
        self.operands = operands            # (index into the trace's buffers, dtype, offset)
        self.ints = tuple(plan.int_args())
        self.converters = tuple(_scalar_converter(dt) for _, dt in plan.scalars)


def _trace(outputs: list[tuple[graph.Node, tuple]]):
    """``(signature, buffers, scalar values)`` of the kernel computing ``outputs``.

    The signature holds everything :func:`~.plan.plan_kernel` reads — every node's kind, dtype,
    op and inputs (in plan order), each leaf's view, which leaves and outputs share a buffer and
    each buffer's alignment, the output views, the codegen settings and the device — and nothing
    it doesn't (buffer identities, scalar values). Equal signatures therefore plan equal kernels
    with equal integer parameters. Anything new that the planner reads must be added here.

    One pass in :func:`graph.walk`'s order (inputs first, each node once; :func:`_recipe_of`
    checks that the plan saw the same order), written out here because it runs on every call.
    """
    entries, values, buffers = [], [], []
    where: dict[int, int] = {}
    bufs: dict[Buffer, int] = {}
    stack: list = [node for node, _ in outputs][::-1]
    while stack:
        n = stack.pop()
        if type(n) is tuple:                    # (node,): its inputs are placed
            n = n[0]
            if n.serial in where:
                continue
            ins = n.inputs
            if len(ins) == 2:  # most ops: no comprehension (a frame of its own before 3.12)
                a, b = ins
                inputs = (where[(a.realized or a).serial], where[(b.realized or b).serial])
            else:
                inputs = tuple([where[(i.realized or i).serial] for i in ins])
            entries.append((3, n.attrs, inputs) if n.kind == "op" else (2, n.dtype, inputs))
        else:
            n = n.realized or n
            if n.serial in where:
                continue
            if n.inputs:
                stack.append((n,))
                stack.extend(n.inputs[::-1])
                continue
            if n.kind == "leaf":
                buffer, view = n.attrs
                b = bufs.get(buffer)
                if b is None:
                    b = bufs[buffer] = len(buffers)
                    buffers.append(buffer)
                entries.append((0, n.dtype, view, b))
            else:
                values.append(n.attrs[1])
                entries.append((1, n.dtype))
        where[n.serial] = len(entries) - 1
    outs = []
    for node, (buffer, dtype, shape, strides, offset) in outputs:
        b = bufs.get(buffer)
        if b is None:
            b = bufs[buffer] = len(buffers)
            buffers.append(buffer)
        outs.append((where[(node.realized or node).serial], dtype, tuple(shape), tuple(strides),
                     offset, b))
    # Alignment matters up to the widest vector access; more would only split signatures.
    aligns = tuple([min(b.align, layout.VECTOR_BYTES) for b in buffers])
    signature = (tuple(entries), tuple(outs), aligns, buffers[-1].backend.device_key,
                 _codegen_settings())
    return signature, buffers, values


_settings_memo: list = [None, None]


def _codegen_settings():
    generation = config.generation()
    if _settings_memo[0] != generation:
        _settings_memo[:] = [generation, config.codegen_settings()]
    return _settings_memo[1]


def _recipe_of(plan: KernelPlan, buffers: list, values: list) -> _Recipe | None:
    """The plan's launch as a recipe over the trace's buffers; None if the plan doesn't map
    onto the trace (then every evaluation of it plans, which is slower but still right)."""
    index = {id(b): k for k, b in enumerate(buffers)}
    operands = []
    for o in plan.operands:
        k = index.get(id(o.buffer))
        if k is None:
            return None
        operands.append((k, o.dtype, _elem_offset(o)))
    if len(plan.scalars) != len(values) or any(
            v is not w for (v, _), w in zip(plan.scalars, values)):
        return None  # the plan ordered its scalars differently from the trace
    backend = buffers[-1].backend
    return _Recipe(backend, kernel_for(plan, backend), plan, tuple(operands))


def run(outputs: list[tuple[graph.Node, tuple]]) -> None:
    """Compute each node into its ``(buffer, dtype, shape, strides, offset)`` in one launch."""
    signature, buffers, values = _trace(outputs)
    recipe = _recipes.get(signature)
    stage = "launch"
    if recipe is None:
        with _timed("plan"):
            plan = plan_kernel(outputs)
        if plan.size == 0:
            return
        compiles = _stats["compiles"]
        recipe = _recipe_of(plan, buffers, values)
        if _stats["compiles"] != compiles:
            stage = "first launch"  # where a backend compiles lazily (cpu: numba's first call)
        if recipe is None:
            launch_plan(plan)
            return
        if len(_recipes) >= _MAX_RECIPES:
            _recipes.clear()
        _recipes[signature] = recipe
    else:
        _stats["memory_hits"] += 1
    backend = recipe.backend
    operand_arg = backend.operand_arg
    args = [operand_arg(buffers[k].storage, dtype, offset) for k, dtype, offset in recipe.operands]
    args += recipe.ints
    args += [convert(v) for convert, v in zip(recipe.converters, values)]
    start = _perf()
    backend.launch(recipe.kernel, recipe.size, args, recipe.geometry)
    _add_time(stage, _perf() - start)
    _stats["launches"] += 1


def compute_nodes(nodes: list[graph.Node], backend: Backend) -> list[graph.Node]:
    """Compute pending nodes of one shape into fresh contiguous buffers, in one launch; return
    the leaves that now hold them (and remember them on the nodes)."""
    if len(nodes) == 1 and not (nodes[0].realized or nodes[0]).is_leaf:
        return [_compute_one(nodes[0].realized or nodes[0], backend)]
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
            _remember_derived(node, buffer)
            results[k] = leaf
    return results


def _compute_one(node: graph.Node, backend: Backend) -> graph.Node:
    """:func:`compute_nodes` of one pending node, kept short: every evaluation runs it."""
    shape, dtype = node.shape, node.dtype
    strides = _strides.get(shape)
    if strides is None:
        if len(_strides) > 1024:
            _strides.clear()
        strides = _strides[shape] = layout.contiguous_strides(shape)
    buffer = new_buffer(backend, layout.size_of(shape) * dtype.itemsize)
    run([(node, (buffer, dtype, shape, strides, 0))])
    # The buffer is new, so no node views it yet: no look-up (node's dtype and shape are what
    # graph.leaf would make them).
    leaf = node.realized = graph.fresh_leaf(buffer, dtype, (shape, strides, 0))
    _remember_derived(node, buffer)
    return leaf


_strides: dict[tuple, tuple] = {}  # shape → contiguous element strides


def forget_results_reading(buffer: Buffer) -> None:
    """Before ``buffer`` is written: results computed from it, and results stored in it, no
    longer stand for their nodes.

    Nodes are hash-consed, so building ``a * b`` again returns the node computed before, and its
    remembered result; once ``a``'s memory changes, that result is stale and must be dropped
    (arrays already holding it keep it, as NumPy arrays keep their values). Likewise once the
    memory holding ``a * b``'s result is written (``p = a * b; p.compute(); p += 1``): a pending
    graph built on ``a * b`` before it was computed reads the result through ``realized`` and
    would see the write; dropped, it computes ``a * b`` again from ``a`` and ``b``. Afterwards no
    graph reaches ``buffer`` except through its own leaves (in its node's ``buffers``).
    """
    if buffer.derived:
        for ref in buffer.derived:
            node = ref()
            if node is not None:
                node.realized = None
        buffer.derived = None


def _remember_derived(node: graph.Node, held_in: Buffer) -> None:
    """Note ``node``'s remembered result (held in ``held_in``) on the buffers that a write
    makes it stale by: those it was read from and its own."""
    ref = weakref.ref(node)
    for source in node.buffers:
        source.derived = append_weak(source.derived, ref)
    held_in.derived = append_weak(held_in.derived, ref)


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
