"""realize(arrays): plan → key → memory cache → disk cache → codegen/compile → load → launch.

The one place the pipeline's stages meet. Pending arrays are grouped by shape; each group becomes
one kernel launch. Kernels are kept in memory per ``(device, structure key)``; on a backend with an
``arch`` the PTX and the linked cubin are also kept on disk per arch, so a new process loads the
cubin without compiling (or importing numba). Counters, stage timings and why each kernel
compiled are recorded in :mod:`records` (re-exported here).

The hot path (an expression evaluated again with the same structure and sizes) is a dictionary
look-up: every node carries its structure's sid and its params from creation (``ir/graph.py``),
so :func:`run` keys the evaluation without walking the graph and finds the *launch record*
(``launch.py``: loaded kernel, generated argument packer, geometry) that the first such
evaluation built from its plan (the compiler's front door, ``compiler/__init__.py``, plans it);
packing binds the graph's params.
"""

from __future__ import annotations

import logging

from .. import compiler, config
from ..compiler import Plan, plan_evaluation
from ..ir import graph, layout
from ..ir.params import roots_params
from ..ir.sids import VECTOR_ALIGN
from .backend import Backend, Buffer, check_one_device, new_buffer, product_blas
from .diskcache import DiskCache
from .launch import LaunchRecord, graph_packer
from .program import program_record
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


# -- the disk level -------------------------------------------------------------------------------

def disk_cache() -> DiskCache:
    """The disk cache the current settings name (one instance per folder, size and switch)."""
    spec = (config.get("CACHE_DIR"), config.get("CACHE_SIZE"), config.get("CACHE"))
    cache = _disk.get(spec)
    if cache is None:
        cache = _disk[spec] = DiskCache(spec[0], max_bytes=spec[1], enabled=spec[2])
    return cache


class CacheInfo(dict):
    """:func:`cache_info`'s dict; shown as a small table (a notebook) or lines of text."""

    def rows(self) -> list[tuple[str, str]]:
        size = float(self["bytes"])
        for unit in ("bytes", "KiB", "MiB", "GiB"):
            if size < 1024 or unit == "GiB":
                break
            size /= 1024
        state = ("on" if self["usable"] else "on, but not writable: memory only") \
            if self["enabled"] else "off (FUSEDARRAYS_CACHE=0)"
        return [("disk cache", self["dir"]), ("state", state),
                ("files", f"{self['entries']:,}"),
                ("size", f"{self['bytes']:,} bytes" if unit == "bytes" else
                 f"{size:.1f} {unit} ({self['bytes']:,} bytes)"),
                ("kernels loaded in this process", str(self["memory_entries"]))]

    def __str__(self) -> str:
        rows = self.rows()
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)

    def _repr_html_(self) -> str:
        import html
        cell = "<td style=\"text-align:left;padding:1px 12px 1px 0;{}\">{}</td>"
        return "<table style=\"border-collapse:collapse;font-size:12px\">" + "".join(
            "<tr>" + cell.format("color:#555", html.escape(name))
            + cell.format("font-family:monospace", html.escape(value)) + "</tr>"
            for name, value in self.rows()) + "</table>"


def cache_info() -> CacheInfo:
    """The disk cache: ``{"dir", "entries", "bytes", "enabled", "usable", "memory_entries"}``
    (a dict; a table in notebooks).

    ``entries`` counts files (a kernel is a ``.ptx`` and a ``.cubin``); ``memory_entries`` the
    kernels loaded in this process.

    >>> sorted(cache_info())[:3]
    ['bytes', 'dir', 'enabled']
    """
    info = disk_cache().info()
    return CacheInfo(dir=info["dir"], entries=info["entries"], bytes=info["bytes"],
                     enabled=bool(config.get("CACHE")), usable=info["usable"],
                     memory_entries=len(_memory))


def clear_cache() -> int:
    """Empty the disk cache folder and this process's loaded kernels; return files removed.

    The next evaluation of every expression compiles again (and writes the disk cache again).
    """
    _memory.clear()
    _records.clear()
    _artifacts.clear()
    return disk_cache().clear()


def disk_key(plan: Plan, arch: str, toolchain: dict[str, str]) -> str:
    return compiler.digest(compiler.disk_parts(plan.key, arch, toolchain))


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


def keep_artifact(arch: str, dkey: str | None, plan: Plan, artifact: dict) -> bool:
    """Keep a compiled kernel for every device of ``arch``: on disk (True) where the disk cache
    is on and usable, else in this process's memory (False)."""
    if dkey is not None and config.get("CACHE") and store(arch, dkey, plan.key_parts, artifact):
        return True
    _artifacts[(arch, plan.key)] = {kind: artifact[kind] for kind in ("cubin", "src", "entry")
                                    if kind in artifact}
    return False


# -- the memory level and compiling ----------------------------------------------------------------

def kernel_for(plan: Plan, backend: Backend):
    """The loaded kernel for ``plan`` (any kind) on ``backend``, compiling it only on a miss of
    both levels; its source from the compiler's :func:`~..compiler.render` (the backend's
    target's table, by the plan's kind)."""
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
    kernel = _compile_and_load(plan, backend, ptypes, dkey)
    _memory[mkey] = kernel
    return kernel


def _compile_and_load(plan, backend, ptypes, dkey):
    why = why_compile(plan)
    if config.get("LOG_COMPILES"):
        log.warning("fusedarrays: compiling %s on %s: %s", plan.name, backend.device_key, why)
    with _timed("codegen"):
        source = compiler.render(plan, backend.target)
    start = _perf()
    artifact = backend.compile(source, plan.name, ptypes, compiler.helpers())
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


# -- evaluating -----------------------------------------------------------------------------------
# (backend, structure, distinct buffers read, outputs) → launch record. The structure is the
# root's sid (several roots: their sids and placements). The outputs come in two forms, decided
# by who evaluates: one fresh result (compute_one, _fresh_key) is its alignment class alone, an
# int (its dtype and shape are the sid's, its strides contiguous, its offset 0, and the graph
# can't read it), which keeps the hot path's key to four plain values; any other evaluation
# (run, _run_key) is a tuple, per output, of dtype, shape, strides, offset, alignment class and
# whether the graph reads it. An int never equals a tuple, so the two never meet (the same
# evaluation keyed both ways is two records of one loaded kernel); evaluated_before tells them
# apart by that type. Where leaves share a buffer, or an output is read, which ones is part of
# the key too (_record_for). Everything the planner reads is in it.
_records: dict[tuple, LaunchRecord] = {}
_MAX_RECORDS = 4096                      # then the table starts over (a loop of new shapes)
_settings_seen: list = [None, None]      # (config generation, codegen settings) of the table


def _check_settings() -> None:
    """Start the record table over when a setting that changes generated code, or how an
    evaluation is planned (``FUSEDARRAYS_CUBLAS``), changed."""
    generation = config.generation()
    if _settings_seen[0] != generation:
        settings = (config.codegen_settings(), config.plan_settings())
        if settings != _settings_seen[1]:
            _records.clear()
        _settings_seen[:] = [generation, settings]


def run(outputs: list[tuple[graph.Node, tuple]]) -> LaunchRecord:
    """Compute each node into its ``(buffer, dtype, shape, strides, offset)`` in one launch;
    return the record launched."""
    params, key = _run_key(outputs)
    record = _records.get(key)
    if record is None:
        record = _record_for(outputs, params, key)
    else:
        _stats["memory_hits"] += 1
    record.launch(params, [target[0] for _, target in outputs])
    return record


def _run_key(outputs: list) -> tuple[dict, tuple]:
    """The params :func:`run` binds and the key it looks its record up by (its outputs a tuple
    per output: the table's comment)."""
    if _settings_seen[0] != config._generation:
        _check_settings()
    if len(outputs) == 1:
        node = outputs[0][0]
        params = node.params if node.params is not None else {node: 0}
        structure, buffers = node.sid, node.buffers
    else:
        roots = [node for node, _ in outputs]
        params, structure = roots_params(roots)
        buffers = frozenset().union(*[r.buffers for r in roots])
    targets = tuple([(dtype, shape, strides, offset, graph.align_class(b.align), b in buffers)
                     for _, (b, dtype, shape, strides, offset) in outputs])
    return params, (outputs[0][1][0].backend, structure, len(buffers), targets)


def _fresh_key(node: graph.Node, backend: Backend, buffer: Buffer) -> tuple:
    """The key :func:`compute_one` looks its record up by: a fresh result is never read by the
    graph, so the sid, the distinct buffers and the result's alignment class (an int, where
    :func:`_run_key` has a tuple of outputs) say it all."""
    if _settings_seen[0] != config._generation:
        _check_settings()
    return (backend, node.sid, len(node.buffers), graph.align_class(buffer.align))


def prepare(nodes: list[graph.Node], backend: Backend) -> None:
    """Build, without launching, the record that computing ``nodes`` (pending, one shape) into
    fresh buffers uses, so that their first evaluation is a look-up (``fa.precompile``)."""
    outputs = []
    for node in nodes:
        strides = layout.contiguous_strides(node.shape)
        buffer = new_buffer(backend, layout.size_of(node.shape) * node.dtype.itemsize)
        outputs.append((node, (buffer, node.dtype, node.shape, strides, 0)))
    if len(outputs) == 1:
        node = nodes[0]
        params, key = node.params, _fresh_key(node, backend, outputs[0][1][0])
    else:
        params, key = _run_key(outputs)
    if key not in _records:
        _record_for(outputs, params, key)


def _record_for(outputs: list, params: dict, key: tuple) -> LaunchRecord:
    """The record of an evaluation that missed the table by ``key``: found under the key with
    which leaves and outputs share buffers (where some do), else planned and built."""
    mine = [p.attrs[0] for p in params if p.kind == "leaf"] + [t[0] for _, t in outputs]
    if len(set(mine)) < len(mine):
        numbers: dict = {}
        key += (tuple([numbers.setdefault(b, len(numbers)) for b in mine]),)
        record = _records.get(key)
        if record is not None:
            _stats["memory_hits"] += 1
            return record
    backend = outputs[0][1][0].backend
    # a record is found by the sids of its leaves, which hold their devices: checked once here
    check_one_device("evaluating an expression", backend, mine)
    with _timed("plan"):
        program = plan_evaluation(outputs, params, backend.alloc_align or 1,
                                  blas=lambda: product_blas(backend))
    if program.cut:     # kernels passing results through temporaries (runtime/program.py)
        record = program_record(backend, program, len(params), kernel_for)
    else:
        plan = program.steps[0].plan
        kernel = kernel_for(plan, backend) if plan.size else None
        record = LaunchRecord.of_plan(backend, kernel, plan,
                                      graph_packer(plan, len(params), backend))
    if len(_records) >= _MAX_RECORDS:
        _records.clear()
    _records[key] = record
    return record


def compute_nodes(nodes: list[graph.Node], backend: Backend) -> list[graph.Node]:
    """Compute pending nodes of one shape into fresh contiguous buffers, in one launch; return
    the leaves that now hold them (and remember them on the nodes)."""
    if len(nodes) == 1 and not (nodes[0].realized or nodes[0]).is_leaf:
        return [compute_one(nodes[0].realized or nodes[0], backend)]
    outputs, results = [], []
    for node in nodes:
        node = node.realized or node
        if node.is_leaf:
            results.append(node)
            continue
        strides, size = _contiguous(node.shape)
        buffer = new_buffer(backend, size * node.dtype.itemsize)
        outputs.append((node, (buffer, node.dtype, node.shape, strides, 0)))
        results.append(None)
    if not outputs:
        return results
    record = run(outputs)
    # The results' leaf sids are the record's: its key holds all they are made of (dtype, view,
    # alignment class, device), as compute_one's does; made once, a tuple here
    sids = record.result_sid
    if sids is None:
        sids = record.result_sid = tuple([graph.leaf_sid(t[0], t[1], (t[2], t[3], 0))
                                          for _, t in outputs])
    done = iter(zip(outputs, sids))
    for k, result in enumerate(results):
        if result is None:
            (node, (buffer, dtype, shape, strides, _)), sid = next(done)
            results[k] = node.realized = graph.fresh_leaf_with_sid(
                buffer, dtype, (shape, strides, 0), sid)
    return results


def compute_one(node: graph.Node, backend: Backend) -> graph.Node:
    """:func:`compute_nodes` of one pending node, kept short: every evaluation runs it."""
    shape, dtype = node.shape, node.dtype
    found = _strides.get(shape)     # _contiguous, written out
    if found is None:
        found = _contiguous(shape)
    strides = found[0]
    buffer = new_buffer(backend, found[1] * dtype.itemsize)
    if _settings_seen[0] != config._generation:
        _check_settings()
    align = buffer.align    # _fresh_key, written out
    key = (backend, node.sid, len(node.buffers), align if align < VECTOR_ALIGN else VECTOR_ALIGN)
    record = _records.get(key)
    # node.params, written out: a node without a token owns its dict (ir/params.py)
    params = node._params if node._open is None else node.params
    if record is None:
        record = _record_for([(node, (buffer, dtype, shape, strides, 0))], params, key)
    else:
        _stats["memory_hits"] += 1
    record.launch(params, (buffer,))
    # The buffer is new, so no node views it yet: no look-up (node's dtype and shape are what
    # graph.leaf would make them, and its sid the record's, made once).
    sid = record.result_sid
    if sid is None:
        sid = record.result_sid = graph.leaf_sid(buffer, dtype, (shape, strides, 0))
    leaf = node.realized = graph.fresh_leaf_with_sid(buffer, dtype, (shape, strides, 0), sid)
    return leaf


_strides: dict[tuple, tuple] = {}  # shape → (contiguous element strides, size)


def _contiguous(shape: tuple) -> tuple:
    """``(contiguous element strides, size)`` of ``shape``, kept."""
    found = _strides.get(shape)
    if found is None:
        if len(_strides) > 1024:
            _strides.clear()
        found = _strides[shape] = (layout.contiguous_strides(shape), layout.size_of(shape))
    return found


def reads_through_other_map(node: graph.Node, buffer: Buffer, target: tuple) -> bool:
    """Whether ``node`` reads ``buffer`` at any element other than the one it writes there.

    Each thread reads its inputs before it stores, so reading the destination at the same index
    is safe; any other index map (``x += x.T``, a shifted or broadcast view) must be staged.
    """
    _, _, shape, strides, offset = target
    want = layout.broadcast_strides(shape, strides, shape)
    for n in node.param_list():
        if n.is_leaf:
            buf, lshape, lstrides, loffset = graph.leaf_view(n)
            if buf is buffer and (loffset != offset or
                                  layout.broadcast_strides(lshape, lstrides, shape) != want):
                return True
    return False


def evaluated_before(node: graph.Node) -> bool:
    """Whether an evaluation of ``node``'s structure into a fresh result has a launch record in
    this process (its next evaluation is a look-up and a launch). For display: a scan of the
    record table, no planning."""
    backends = {b.backend for b in node.buffers}
    count = len(node.buffers)
    # a fresh result's key: (backend, sid, buffers, alignment class: an int[, shared buffers]);
    # run's keys have a tuple of outputs there (the table's comment)
    return any(k[0] in backends and k[1] == node.sid and k[2] == count and type(k[3]) is int
               for k in list(_records))
