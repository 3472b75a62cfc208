"""``fa.profile()``: what the launches and compiles inside a ``with`` block cost.

Where it sits: what users touch, over the runtime's records. While a profile is active,
``runtime/records.profiling`` holds it: :meth:`LaunchRecord.launch_with` (the one launch path)
times each launch on the device (CUDA events on cuda, which wait for the kernel; wall time on the
host backends, whose launches return when the work is done) and reports it with the bytes the
launch moves; compiles report their stages by what they are (numba typing+lowering, NVVM, link;
the cpu backend's numba compile). Each evaluation entry (``x.compute()``, ``x.get()``,
``np.asarray(x)``, ``fa.compute``, a write ``x[...] = e``, a fused function's call and its
``.foreach``) hands itself to :meth:`Profile.evaluate` while a profile is active, which times
the whole evaluation on the host: key, look-up, planning and compiling on a miss, packing, the
launch calls, wrapping the result. An evaluation inside another (``fa.compute(out=)``'s writes,
``.get()``'s ``.compute()``) is part of the outer one. With no profile active, a launch and an
entry each look at one flag.

Bandwidth is stated against the device's copy bandwidth, measured once per device and process
when the first profile ends (a 256 MiB device-to-device copy on cuda, a 64 MiB copy split over the
CPUs on cpu). A profile renders as an HTML table with an inline SVG bar chart in a notebook and as
text elsewhere.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.ones(1000, np.float32))
>>> with fa.profile() as p:
...     y = (x * 2 + 1).get()
>>> p.launches[0]["elements"]
1000
"""

from __future__ import annotations

import html
import threading
import time

from ..runtime import records

_copy_bandwidth: dict[str, float | None] = {}   # device key → bytes/s (None: not measurable)
_lock = threading.Lock()


def _seconds(t: float) -> str:
    if t >= 1:
        return f"{t:.2f} s"
    return f"{t * 1e3:.2f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} µs"


def _amount(n: float, unit: str) -> str:
    for prefix in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or prefix == "T":
            return f"{n:.0f} {unit}" if prefix == "" else f"{n:.1f} {prefix}{unit}"
        n /= 1000
    return ""


class _Local(threading.local):
    evaluation = None     # the evaluation this thread is in (a dict of Profile.evaluations)


class Profile:
    """Launches, evaluations and compiles recorded inside ``with fa.profile() as p:``.

    ``p.launches``: one dict per launch (``kernel``, ``elements``, ``device_s``, ``host_s``: the
    launch call's time on the host (on cuda, queuing the kernel; on the host backends, running
    it), ``bytes``: what the launch reads and writes, ``device``); ``p.evaluations``: one dict
    per evaluation that launched or compiled (``entry``: what the user called, ``kernels``:
    those it launched, in order, ``host_s``: the whole evaluation on the host, from the entry
    to its return, less the profile's own timing (on cuda, waiting for the CUDA events),
    ``launch_s``: the part of it in launch calls, ``compiled``: whether it compiled or loaded a
    kernel); ``p.compiles``: one dict per compile stage (``kernel``, ``stage``, ``seconds``,
    ``why``); ``p.wall_s``: the block's wall time; ``p.copy_bandwidth``: the reference
    bandwidth per device (bytes/s). ``p.kernels()`` sums the launches per kernel,
    ``p.evaluation_groups()`` the evaluations per entry and kernels.
    """

    def __init__(self):
        self.launches: list[dict] = []
        self.evaluations: list[dict] = []
        self.compiles: list[dict] = []
        self._local = _Local()
        self.wall_s = 0.0
        self.copy_bandwidth: dict[str, float | None] = {}
        self._outer = None
        self._start = 0.0
        self._backends: dict = {}

    # -- the collector the runtime calls (runtime/launch.py, runtime/records.py) --------------
    def start(self, backend):
        """A started device timer for the launch about to be queued, or None (host time)."""
        begin = time.perf_counter()
        timer = backend.device_timer
        timer = timer() if timer is not None else None
        self._own(begin)
        return timer

    def launched(self, record, size: int, timer, host_s: float) -> None:
        begin = time.perf_counter()
        device_s = timer.stop() if timer is not None else host_s
        full, per_element = record.traffic
        whole = size == record.size
        nbytes = full if whole else per_element * size
        elements = record.elements if whole else size   # a reduction's size counts outputs
        self.launches.append({"kernel": record.name, "elements": elements,
                              "device_s": device_s, "host_s": host_s, "bytes": nbytes,
                              "device": record.backend.device_key})
        self._backends[record.backend.device_key] = record.backend
        evaluation = self._local.evaluation
        if evaluation is not None:
            evaluation["kernels"].append(record.name)
            evaluation["launch_s"] += host_s
        self._own(begin)

    def compiled(self, kernel: str, why: str, times: dict) -> None:
        if not why:   # a stage after the compile (cpu: numba's, at the first call): its why
            why = next((c["why"] for c in reversed(self.compiles)
                        if c["kernel"] == kernel and c["why"]), "")
        if not why and "cpu load (numba cache)" in times:
            why = "found in the disk cache"
        for stage, seconds in times.items():
            self.compiles.append({"kernel": kernel, "stage": stage, "seconds": seconds,
                                  "why": why})
        if self._local.evaluation is not None:
            self._local.evaluation["compiled"] = True

    def _own(self, begin: float) -> None:
        """Time since ``begin`` was the profile's own (a timer, its wait): not the
        evaluation's."""
        evaluation = self._local.evaluation
        if evaluation is not None:
            evaluation["own"] += time.perf_counter() - begin

    # -- the entry points call these (api/array.py, fuse/) -----------------------------------
    def outside(self) -> bool:
        """Whether this thread is in no evaluation: an entry point then calls :meth:`evaluate`
        (inside one, it is part of that one)."""
        return self._local.evaluation is None

    def evaluate(self, entry: str, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, the evaluation ``entry`` names, timed whole on the host.

        Entry points call it with themselves: ``fn`` runs the entry again, which now finds
        this thread inside an evaluation and does its work."""
        local = self._local
        evaluation = local.evaluation = {"entry": entry, "kernels": [], "host_s": 0.0,
                                         "launch_s": 0.0, "compiled": False, "own": 0.0}
        begin = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            host = time.perf_counter() - begin
            local.evaluation = None
            evaluation["host_s"] = host - evaluation.pop("own")
            if evaluation["kernels"] or evaluation["compiled"]:
                self.evaluations.append(evaluation)

    # -- the context manager --------------------------------------------------------------------
    def __enter__(self) -> Profile:
        self._outer = records.profiling[0]
        records.profiling[0] = self
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall_s = time.perf_counter() - self._start
        records.profiling[0] = self._outer
        if self._outer is not None:     # an enclosing profile sees what this one saw
            self._outer.launches += self.launches
            self._outer.evaluations += self.evaluations
            self._outer.compiles += self.compiles
            self._outer._backends.update(self._backends)
        for device, backend in self._backends.items():
            self.copy_bandwidth[device] = reference_bandwidth(backend)

    # -- summaries ------------------------------------------------------------------------------
    def kernels(self) -> list[dict]:
        """Per kernel, in order of first launch: launches, elements, device and host seconds,
        bytes, achieved bandwidth (bytes/s) and its fraction of the copy bandwidth."""
        rows: dict[str, dict] = {}
        for launch in self.launches:
            row = rows.setdefault(launch["kernel"], {
                "kernel": launch["kernel"], "device": launch["device"], "launches": 0,
                "elements": 0, "device_s": 0.0, "host_s": 0.0, "bytes": 0})
            row["launches"] += 1
            for k in ("elements", "device_s", "host_s", "bytes"):
                row[k] += launch[k]
        for row in rows.values():
            row["bandwidth"] = row["bytes"] / row["device_s"] if row["device_s"] > 0 else None
            copy = self.copy_bandwidth.get(row["device"])
            row["of_copy"] = row["bandwidth"] / copy if copy and row["bandwidth"] else None
        return list(rows.values())

    def compile_stages(self) -> dict[str, tuple[int, float]]:
        """Compile stage → (count, seconds)."""
        out: dict[str, tuple[int, float]] = {}
        for c in self.compiles:
            count, total = out.get(c["stage"], (0, 0.0))
            out[c["stage"]] = (count + 1, total + c["seconds"])
        return out

    def evaluation_groups(self) -> list[dict]:
        """Per entry and kernels launched, in order of first evaluation: ``count``; ``host_s``
        and ``launch_s``, the means over the evaluations that compiled nothing (None if all
        did); ``compiling`` and ``compiling_s``, how many compiled (or loaded) a kernel and
        their mean host time."""
        groups: dict[tuple, list] = {}
        for e in self.evaluations:
            groups.setdefault((e["entry"], tuple(e["kernels"])), []).append(e)
        rows = []
        for (entry, kernels), evaluations in groups.items():
            warm = [e for e in evaluations if not e["compiled"]]
            cold = [e for e in evaluations if e["compiled"]]
            rows.append({
                "entry": entry, "kernels": kernels, "count": len(evaluations),
                "host_s": sum(e["host_s"] for e in warm) / len(warm) if warm else None,
                "launch_s": sum(e["launch_s"] for e in warm) / len(warm) if warm else None,
                "compiling": len(cold),
                "compiling_s": sum(e["host_s"] for e in cold) / len(cold) if cold else None})
        return rows

    def _kernel_cells(self) -> list[list[str]]:
        cells = []
        for r in self.kernels():
            cells.append([r["kernel"], str(r["launches"]), _amount(r["elements"], ""),
                          _seconds(r["device_s"]), _seconds(r["device_s"] / r["launches"]),
                          _amount(r["bytes"], "B"),
                          _amount(r["bandwidth"], "B/s") if r["bandwidth"] else "-",
                          f"{r['of_copy']:.0%}" if r["of_copy"] else "-"])
        return cells

    def _evaluation_cells(self) -> list[list[str]]:
        cells = []
        for g in self.evaluation_groups():
            kernels = list(g["kernels"])
            if len(kernels) > 2:
                kernels = [kernels[0], f"{len(kernels) - 1} more"]
            cold = g["compiling_s"]
            cells.append([g["entry"], " + ".join(kernels) or "-", str(g["count"]),
                          _seconds(g["host_s"]) if g["host_s"] is not None else "-",
                          _seconds(g["launch_s"]) if g["launch_s"] is not None else "-",
                          "-" if cold is None else _seconds(cold) if g["compiling"] == 1
                          else f"{g['compiling']} × {_seconds(cold)}"])
        return cells

    def _compile_table(self) -> tuple[tuple, list]:
        """Head and cells of the compile stages (no ``why`` column where none says why)."""
        why = any(c["why"] for c in self.compiles)
        head = ("compile stage", "kernel", "time") + (("why",) if why else ())
        return head, [[c["stage"], c["kernel"], _seconds(c["seconds"])]
                      + ([c["why"]] if why else []) for c in self.compiles]

    def _header(self) -> str:
        refs = ", ".join(f"{d}: {_amount(b, 'B/s')}" for d, b in self.copy_bandwidth.items()
                         if b)
        return (f"fa.profile: {len(self.launches)} launch(es), {len(self.compiles)} compile "
                f"stage(s), {_seconds(self.wall_s)} wall" + (f"; copy bandwidth {refs}"
                                                             if refs else ""))

    def __str__(self) -> str:
        lines = [self._header()]
        if self.launches:
            lines += _text_table(_KERNEL_HEAD, self._kernel_cells())
        if self.evaluations:
            lines += _text_table(_EVALUATION_HEAD, self._evaluation_cells())
        if self.compiles:
            lines += _text_table(*self._compile_table())
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        parts = [f"<div class=\"fa-profile\" style=\"font-size:12px\"><b>"
                 f"{html.escape(self._header())}</b>"]
        if self.launches:
            parts.append(_html_table(_KERNEL_HEAD, self._kernel_cells()))
        if self.evaluations:
            parts.append(_html_table(_EVALUATION_HEAD, self._evaluation_cells()))
        if self.compiles:
            parts.append(_html_table(*self._compile_table()))
        bars = [(f"launch {r['kernel']}", r["device_s"], "#ea580c") for r in self.kernels()]
        bars += [(stage, total, "#7c3aed") for stage, (_, total) in
                 self.compile_stages().items()]
        if bars:
            parts.append(bar_chart(bars))
        parts.append("</div>")
        return "".join(parts)


_KERNEL_HEAD = ("kernel", "launches", "elements", "device time", "mean", "bytes", "bandwidth",
                "of copy")
# host times per evaluation (mean of those that compiled nothing), and of the compiling ones
_EVALUATION_HEAD = ("evaluation", "kernels", "count", "host each", "in launch calls",
                    "host, compiling")


def _text_table(head, cells) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *cells)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return ["", fmt.format(*head).rstrip()] + [fmt.format(*row).rstrip() for row in cells]


def _html_table(head, cells) -> str:
    th = "".join(f"<th style=\"text-align:left;padding:1px 10px 1px 0\">{html.escape(h)}</th>"
                 for h in head)
    rows = "".join("<tr>" + "".join(
        f"<td style=\"text-align:left;padding:1px 10px 1px 0;font-family:monospace\">"
        f"{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in cells)
    return f"<table style=\"border-collapse:collapse;margin:6px 0\"><tr>{th}</tr>{rows}</table>"


def bar_chart(bars: list[tuple[str, float, str]], width: int = 360) -> str:
    """A horizontal bar per ``(label, seconds, colour)``, scaled to the longest: inline SVG."""
    label_w = max(len(label) for label, _, _ in bars) * 6.6 + 8
    longest = max(seconds for _, seconds, _ in bars) or 1.0
    row = 18
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + width + 80:.0f}" '
           f'height="{row * len(bars) + 4}" font-family="monospace" font-size="11">']
    for k, (label, seconds, colour) in enumerate(bars):
        y = k * row + 2
        w = max(1.0, width * seconds / longest)
        out.append(f'<text x="{label_w - 6:.0f}" y="{y + 12}" text-anchor="end">'
                   f"{html.escape(label)}</text>"
                   f'<rect x="{label_w:.0f}" y="{y}" width="{w:.1f}" height="{row - 5}" '
                   f'fill="{colour}"/><text x="{label_w + w + 4:.1f}" y="{y + 12}">'
                   f"{html.escape(_seconds(seconds))}</text>")
    out.append("</svg>")
    return "".join(out)


def reference_bandwidth(backend) -> float | None:
    """The copy bandwidth of ``backend``'s device (bytes/s), measured once per process; None
    where the backend can't measure one (the simulator)."""
    key = backend.device_key
    if key not in _copy_bandwidth:
        with _lock:
            if key not in _copy_bandwidth:
                measure = backend.copy_bandwidth
                _copy_bandwidth[key] = measure() if measure is not None else None
    return _copy_bandwidth[key]


def profile() -> Profile:
    """A context manager recording what each launch and compile inside it cost (see
    :class:`Profile`); show it in a notebook, or ``print`` it."""
    return Profile()
