"""What the runtime records: counters, compile-stage timings, and why each kernel compiled.

Where it sits: beside the disk cache, below the runtime. :mod:`runtime` (and ``precompile``,
``fuse``) count launches and cache hits here and add the seconds each stage took; ``fa.stats()``,
``fa.timings()`` (a table) and ``fa.explain(x).why`` read it. A kernel's *family* is its
expression without dtypes; a compile is explained against the nearest kernel of its family seen
before (``compiler/keys.py``'s ``explain_miss``).
"""

from __future__ import annotations

import time
from collections import Counter

from .. import compiler
from ..compiler import Plan

_perf = time.perf_counter
_stats: Counter = Counter()
_timings: dict[str, list] = {}
# Every launch after a kernel's first, counted in place: [launches, host seconds] (the "launch"
# stage; _stats counts first launches). A cached evaluation's bookkeeping is then two additions
# to this list (runtime/launch.py), no call or look-up: it is on every evaluation's host time.
_launched: list = [0, 0.0]
_compiled: dict[str, dict] = {}          # structure key → what explain() shows of it
_by_family: dict[str, list] = {}         # family → key parts of kernels seen (newest last)
_SEEN_PER_FAMILY = 16                    # parts kept per family to explain the next compile

# Stage names in pipeline order: what fa.timings() reports.
STAGES = ("plan", "codegen", "compile", "numba typing+lowering", "nvvm", "link", "disk read",
          "disk write", "load", "cpu compile (numba)", "cpu load (numba cache)", "first launch",
          "launch")
# The active ``fa.profile()`` collector (``api/profile.py``), or None: the one flag a launch
# and an evaluation entry read, so that profiling costs nothing while none is active.
profiling: list = [None]


def stats() -> dict[str, int]:
    """Counters since start or :func:`reset_stats`: compiles, launches, memory_hits, disk_hits."""
    found = {k: _stats[k] for k in ("compiles", "launches", "memory_hits", "disk_hits")}
    found["launches"] += _launched[0]
    return found


def reset_stats() -> None:
    """Zero the counters and the stage timings (caches are kept)."""
    _stats.clear()
    _timings.clear()
    _launched[:] = [0, 0.0]     # in place: runtime/launch.py holds this list


class Timings(dict):
    """Stage → ``(count, total seconds)``; ``str()`` is a table (GPUCompiler.jl's ``timings()``).

    >>> t = Timings({"nvvm": (2, 0.0842), "launch": (3, 0.00003)})
    >>> t["nvvm"]
    (2, 0.0842)
    >>> print(t)
    stage   count    total       mean
    nvvm        2  84.2 ms    42.1 ms
    launch      3  30.0 µs    10.0 µs
    """

    def __str__(self) -> str:
        width = max([len("stage")] + [len(s) for s in self])
        lines = [f"{'stage':<{width}}  {'count':>5}  {'total':>7}  {'mean':>9}"]
        for stage, (count, total) in self.items():
            mean = _seconds(total / count) if count else "-"
            lines.append(f"{stage:<{width}}  {count:>5}  {_seconds(total):>7}  {mean:>9}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html
        cell = "<td style=\"text-align:{};padding:1px 12px 1px 0;font-family:monospace\">{}</td>"
        rows = ["<tr>" + cell.format("left", "stage") + "".join(
            cell.format("right", h) for h in ("count", "total", "mean")) + "</tr>"]
        for stage, (count, total) in self.items():
            mean = _seconds(total / count) if count else "-"
            rows.append("<tr>" + cell.format("left", html.escape(stage)) + "".join(
                cell.format("right", v) for v in (count, _seconds(total), mean)) + "</tr>")
        return f"<table style=\"border-collapse:collapse\">{''.join(rows)}</table>"


def _seconds(t: float) -> str:
    if t >= 1:
        return f"{t:.2f} s"
    return f"{t * 1e3:.1f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} µs"


def timings() -> Timings:
    """Where the time went since start or :func:`reset_stats`, by compile and launch stage.

    ``plan`` counts evaluations that had to plan (the first of each structure and sizes);
    ``compile`` is a backend's whole compile where it reports no finer stages (sim; on cpu the
    check that the generated source parses); the cuda backend reports ``numba typing+lowering``,
    ``nvvm`` and ``link``; the cpu backend's numba compile, which needs the first call's
    argument types, is ``cpu compile (numba)`` (``cpu load (numba cache)`` where numba found
    its machine code on disk). ``first launch`` is each new kernel's first launch (the compile
    before it not included); ``launch`` every other launch call.
    """
    order = {s: k for k, s in enumerate(STAGES)}
    found = dict(_timings, launch=list(_launched)) if _launched[0] else dict(_timings)
    stages = sorted(found, key=lambda s: order.get(s, len(order)))
    return Timings((s, (int(found[s][0]), float(found[s][1]))) for s in stages)


def _add_time(stage: str, seconds: float) -> None:
    entry = _timings.get(stage)
    if entry is None:
        entry = _timings[stage] = [0, 0.0]
    entry[0] += 1
    entry[1] += seconds


class _timed:
    __slots__ = ("stage", "start")

    def __init__(self, stage: str):
        self.stage = stage

    def __enter__(self):
        self.start = _perf()

    def __exit__(self, *exc):
        _add_time(self.stage, _perf() - self.start)


def family(plan: Plan) -> str:
    """The plan's expression without its dtypes: kernels that differ only in dtypes, layouts or
    vector width are one family, and a miss is explained against the family's other kernels."""
    text = "\n".join(f"{i.var}={i.kind}:{i.arg[0] if i.kind == 'op' else i.arg}:{i.inputs}"
                     for i in plan.body)
    return f"{len(plan.operands)}:{len(plan.scalars)}:{hash_text(text)}"


def hash_text(text: str) -> str:
    return compiler.digest((("text", text),))[:32]


def why_compile(plan: Plan) -> str:
    """Why ``plan``'s kernel compiles now: first of its family, or which key parts differ from
    the nearest kernel of the family this process compiled or loaded."""
    return compiler.explain_miss(plan.key_parts, _by_family.get(family(plan), ()))


def note_kernel(plan: Plan, why: str, source: str | None = None) -> None:
    """Remember a kernel this process compiled or loaded, for explain() and the next miss."""
    seen = _by_family.setdefault(family(plan), [])
    if plan.key_parts not in seen:
        seen.append(plan.key_parts)
        del seen[:-_SEEN_PER_FAMILY]
    _compiled[plan.key] = {"why": why, "source": source, "parts": plan.key_parts}


def note_compile(plan: Plan, why: str, source: str, times: dict[str, float]) -> None:
    """Count one compile, add its stage ``times`` (seconds) to :func:`timings`, remember it."""
    _stats["compiles"] += 1
    for stage, seconds in times.items():
        _add_time(stage, seconds)
    note_kernel(plan, why, source)
    if profiling[0] is not None:
        profiling[0].compiled(plan.name, why, times)


def compiled_info(key: str) -> dict | None:
    """``{"why", "source", "parts"}`` of a kernel compiled or loaded in this process."""
    return _compiled.get(key)
