"""What the benchmark scripts share: a run's record, device timing, the same-run copy reference,
peers, checks against NumPy, and the JSON a run leaves.

A :class:`Run` records commit, device, driver and versions once; :meth:`Run.device_time` times a
batch of calls between device-wide synchronisations; figures are ratios ``copy_time / time`` at
equal bytes moved (:meth:`Run.copy_time`); each row has its target, unit, command and peers
(:meth:`Row.peer`); a figure in copies beyond what memory can deliver is a failed check, not a
figure (:data:`COPY_LIMIT`, :meth:`Run.physical`); results are checked against NumPy after
timing (:meth:`Run.check`);
:meth:`Run.finish` writes ``benchmarks/results/<date>-<device>/<script>.json``. Importing this
imports the standard library and NumPy only. Self-check: ``python benchmarks/harness.py --smoke``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import importlib.metadata as metadata
import importlib.util
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:   # the figures are recorded against this checkout: measure its package
    sys.path.insert(0, REPO)
DISTRIBUTIONS = ("numpy", "numba", "numba-cuda", "cuda-core", "cuda-bindings", "torch")
# The unit of bandwidth figures: copy time / workload time, the copy moving the same bytes (read
# plus written) as the least the workload must move: each input read once, each output written once.
COPY_UNIT = "fraction of copy"
# The most such a figure can physically read. A kernel streaming from HBM moves at most the
# device's peak bytes per second; the copy reference reaches ~88 % of it (cupy.copyto 4.2 of the
# H200's 4.8 TB/s, 2.98 of the H100's 3.35), and the best kernels ~90-93 % (peers read 1.04 of the
# copy in bandwidth.py). 1.15 copies is 4.84 TB/s on the H200 and 3.43 on the H100: above the
# spec sheet's peak on both, so a figure beyond it is a measurement or accounting error (work
# hoisted or skipped, bytes miscounted), never a kernel, leaving ~10 % for timing noise and the
# copy's own shortfall. Only data served from L2 across repeated calls can exceed it: rows whose
# inputs may sit in L2 say so (``cache_resident=``) and are not held to it.
COPY_LIMIT = 1.15


def arguments(description: str) -> argparse.ArgumentParser:
    """The options every script takes; a script adds its own to the parser returned."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, few repeats, no peers, "
                        "no JSON unless --out: shows that the script runs (any backend)")
    parser.add_argument("--out", help="the JSON (default benchmarks/results/<date>-<device>/"
                        "<script>.json)")
    parser.add_argument("--commit", help="the commit measured, where this checkout's .git is "
                        "missing or stale (default: git rev-parse HEAD)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random input")
    parser.add_argument("--no-peers", action="store_true", help="measure fusedarrays alone")
    return parser


def device_time(fn, repeat: int = 10, sync=None, batches: int = 5) -> float:
    """Seconds per call: ``repeat`` calls of ``fn`` between two device-wide synchronisations,
    the best of ``batches`` batches. A call's host work overlaps the previous call's device work,
    and the synchronisation waits for every library's streams (one library's events would not)."""
    sync = sync or (lambda: None)
    fn()
    sync()
    best = float("inf")
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best / repeat


def compare(got, want, rtol: float, atol: float) -> dict:
    """``{"ok", "max_abs_err", "max_rel_err"}``: ``|got - want| <= atol + rtol * |want|`` for
    every element (NumPy's ``allclose`` rule, complex values by their modulus; NaN fails)."""
    wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    got, want = np.asarray(got, wide), np.asarray(want, wide)
    if got.shape != want.shape:
        return {"ok": False, "error": f"shape {got.shape} != {want.shape}"}
    err = np.abs(got - want)
    rel = err / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    return {"ok": bool(np.all(err <= atol + rtol * np.abs(want))),
            "max_abs_err": float(np.max(err, initial=0.0)),
            "max_rel_err": float(np.max(rel, initial=0.0))}


def backend():
    """The active fusedarrays backend object (the runtime's backend seam)."""
    return importlib.import_module("fusedarrays.runtime.backend").get_backend()


def launch_records() -> list:
    """Every live launch record of the package (a walk of the collector's objects: for a
    benchmark's set-up, never timed)."""
    import gc

    record_type = importlib.import_module("fusedarrays.runtime.launch").LaunchRecord
    return [r for r in gc.get_objects() if type(r) is record_type]


@contextlib.contextmanager
def launches_as_no_ops():
    """Inside the block every launch of the active backend does nothing: its ``launch``, and
    the call each launch record prepared for its later launches (``LaunchRecord.direct``, cuda's
    C launch), so that what is timed is fusedarrays' own host work."""
    found = backend()
    prepared = [(r, r.direct) for r in launch_records() if r.direct]
    found.launch = lambda *args: None
    for record, (_, config) in prepared:
        record.direct = ((lambda config, n, args: None), config)
    try:
        yield
    finally:
        del found.launch   # the class's method again
        for record, direct in prepared:
            record.direct = direct


def _attempt(fn):
    try:
        return fn()
    except Exception as exc:  # a tool that is missing leaves a gap in the record, no failure
        return f"unknown ({type(exc).__name__}: {exc})"[:200]


def _run(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True,
                          timeout=30).stdout.strip()


def _cuda():
    """``cuda.core``'s Device of GPU 0 (``cuda.core.experimental`` before cuda-core 0.4)."""
    core = importlib.import_module("cuda.core")
    core = core if hasattr(core, "Device") else importlib.import_module("cuda.core.experimental")
    return core.Device(0)


def _cuda_version(module: str, call: str) -> str:
    _, value = getattr(importlib.import_module(f"cuda.bindings.{module}"), call)()
    return f"{value // 1000}.{value % 1000 // 10}"


def _environment(name: str) -> dict:
    """Device, driver and CUDA versions (cuda), or the CPU (host backends)."""
    if name != "cuda":
        model = _attempt(lambda: re.search(r"model name\s*:\s*(.*)", pathlib.Path(
            "/proc/cpuinfo").read_text()).group(1))
        return {"device": f"{model} ({name} backend)", "slug": name}
    device = _cuda().name
    return {"device": device,
            "slug": re.sub(r"[^a-z0-9]+", "-", device.lower().replace("nvidia", "")).strip("-"),
            "driver": _attempt(lambda: _run("nvidia-smi", "-i", "0", "--format=csv,noheader",
                                            "--query-gpu=driver_version")),
            "cuda_driver_api": _attempt(lambda: _cuda_version("driver", "cuDriverGetVersion")),
            "cuda_runtime": _attempt(lambda: _cuda_version("runtime", "cudaRuntimeGetVersion"))}


def _versions() -> dict:
    """Python's and each package's: the module's ``__version__`` where it is imported, else the
    installed distribution's; packages not installed are left out."""
    found = {"python": platform.python_version()}
    for dist in (*DISTRIBUTIONS, *metadata.packages_distributions().get("cupy", [])):
        name = "cupy" if dist.startswith("cupy") else dist   # cupy-cuda13x and the like
        module = sys.modules.get(name) if name in ("numpy", "numba", "cupy", "torch") else None
        try:
            found[dist] = getattr(module, "__version__", None) or metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    found["fusedarrays"] = importlib.import_module("fusedarrays").__version__
    return found


def _sync(name: str):
    """(a device-wide synchronisation, its name); none on the host backends, where a call's
    work is done when it returns."""
    if name != "cuda":
        return (lambda: None), "none (host backend)"
    if importlib.util.find_spec("cuda") and importlib.util.find_spec("cuda.core"):
        device = _cuda()
        device.set_current()   # the primary context, which fusedarrays, CuPy and PyTorch share
        return device.sync, "cuda.core Device.sync"
    if importlib.util.find_spec("cupy"):
        cupy = importlib.import_module("cupy")
        return cupy.cuda.runtime.deviceSynchronize, "cupy.cuda.runtime.deviceSynchronize"
    if importlib.util.find_spec("torch"):
        return importlib.import_module("torch").cuda.synchronize, "torch.cuda.synchronize"
    raise RuntimeError("no device-wide synchronisation: install cuda-core, CuPy or PyTorch")


def text(value) -> str:
    """A figure as the tables print it: three significant digits, or the peer's reason."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


class Row(dict):
    """One figure: ``{figure, fusedarrays, peers{name: figure or why not}, target, unit,
    command, details}``."""

    def __init__(self, run: Run, **fields):
        super().__init__(**fields)
        self.run = run

    def peer(self, name: str, measure) -> Row:
        """``measure()``: the peer's figure in this row's unit, or why it has none (a figure
        beyond :data:`COPY_LIMIT` is a failed check: :meth:`Run.physical`)."""
        try:
            value = measure() if self.run.peers else "not measured"
        except ImportError as exc:
            value = f"not installed ({exc.name or exc})"
        except Exception as exc:  # a peer that can't run this workload is a finding
            first = (str(exc).strip().splitlines() or [""])[0][:160]
            value = f"failed: {type(exc).__name__}: {first}".rstrip(": ")
        value = self.run.physical(self, name, value)
        self["peers"][name] = value
        print(f"    {name}: {text(value)}", flush=True)
        return self


class Run:
    """One run of a script: its environment (recorded once), copy times, rows and checks."""

    def __init__(self, script: str, args: argparse.Namespace):
        self.script, self.args, self.smoke, self.seed = script, args, args.smoke, args.seed
        self.peers = not (args.smoke or args.no_peers)
        self.backend = backend()
        self.sync, synced_by = _sync(self.backend.name)
        self.command = f"python benchmarks/{script}.py" + " --smoke" * self.smoke
        git = ("git", "-C", REPO)
        self.env = {"script": script, "argv": sys.argv[1:], "seed": self.seed,
                    "commit": args.commit or _attempt(lambda: _run(*git, "rev-parse", "HEAD")),
                    "dirty": None if args.commit else _attempt(lambda: bool(_run(
                        *git, "status", "--porcelain", "--untracked-files=no"))),
                    "time": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                    "backend": self.backend.name, **_environment(self.backend.name),
                    "sync": synced_by, "host": platform.node(), "cpus": os.cpu_count(),
                    # host figures depend on it: graphs built in C, or the Python path where
                    # ir/_fastgraph was not built on this machine (python -m fusedarrays says)
                    "native_graph": importlib.import_module("fusedarrays.ir.native").NATIVE}
        # the physical bound of COPY_UNIT figures: where the copy is a device-to-device copy by
        # CuPy or PyTorch, in a full-size run (a smoke run's tiny sizes, or a host backend's own
        # copy, bound nothing)
        self.copy_limit = COPY_LIMIT if self.backend.name == "cuda" and not self.smoke else None
        self.copies: dict[int, float] = {}
        self.rows: list[Row] = []
        self.checks: list[dict] = []
        print(f"{script}: commit {self.env['commit']}, {self.env['device']}, seed {self.seed}")

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)

    def device_time(self, fn, repeat: int = 10, batches: int = 5) -> float:
        return device_time(fn, repeat, self.sync, batches)

    def copy_time(self, moved: int) -> float:
        """Seconds per device-to-device copy of ``moved // 2`` bytes (``moved`` read plus
        written), by CuPy or else PyTorch on the cuda backend, else by fusedarrays' own
        ``y[...] = x``; measured once per size in a run."""
        n = max(moved // 8, 1)   # float32 elements, each read and written
        if n not in self.copies:
            import fusedarrays as fa
            cuda = self.backend.name == "cuda"
            if cuda and importlib.util.find_spec("cupy"):
                cp = importlib.import_module("cupy")
                src, dst = cp.full(n, 1.5, cp.float32), cp.empty(n, cp.float32)
                copy, self.env["copy_by"] = (lambda: cp.copyto(dst, src)), "cupy.copyto"
            elif cuda and importlib.util.find_spec("torch"):
                torch = importlib.import_module("torch")
                src, dst = (torch.full((n,), 1.5, device="cuda") for _ in range(2))
                copy, self.env["copy_by"] = (lambda: dst.copy_(src)), "torch copy_"
            else:
                src, dst = fa.full(n, 1.5, np.float32), fa.empty(n, np.float32)
                copy, self.env["copy_by"] = (lambda: dst.__setitem__(..., src)), "y[...] = x"
            self.copies[n] = self.device_time(copy, 3 if self.smoke else 20)
        return self.copies[n]

    def launches(self, fn) -> int:
        """Kernel launches of one call of ``fn`` (fusedarrays' counters)."""
        import fusedarrays as fa
        fa.reset_stats()
        fn()
        self.sync()
        return fa.stats()["launches"]

    def row(self, figure: str, value, target: str = "—", unit: str = "",
            cache_resident: str | None = None, **details) -> Row:
        """A row of fusedarrays' figure; peers are added by :meth:`Row.peer`. A figure in
        :data:`COPY_UNIT` is held to :data:`COPY_LIMIT` (:meth:`physical`) unless
        ``cache_resident`` gives the reason its data may be served from L2."""
        if cache_resident:
            details["cache_resident"] = cache_resident
        row = Row(self, figure=figure, fusedarrays=value, peers={}, target=target, unit=unit,
                  command=self.command, details=details)
        self.rows.append(row)
        row["fusedarrays"] = value = self.physical(row, "fusedarrays", value)
        print(f"  {figure}: {text(value)} {unit} (target {target})", flush=True)
        return row

    def physical(self, row: Row, who: str, value):
        """``value``, or, where it is a figure in copies beyond ``self.copy_limit`` on a row not
        marked ``cache_resident``, a failed check (recorded, printed, failing the run) and a
        string saying so in the figure's place: no bandwidth is faster than memory."""
        if (self.copy_limit is None or row["unit"] != COPY_UNIT
                or "cache_resident" in row["details"] or isinstance(value, bool)
                or not isinstance(value, (int, float)) or value <= self.copy_limit):
            return value
        self.checks.append({"name": f"{row['figure']}: {who} within {self.copy_limit} × copy",
                            "ok": False, "value": value, "limit": self.copy_limit,
                            "error": "beyond what memory can deliver: a measurement error"})
        print(f"  check {self.checks[-1]['name']}: FAILED, {text(value)} × copy", flush=True)
        return f"failed check: {text(value)} > {self.copy_limit} × copy, not physical"

    def check(self, name: str, got, want, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
        """Compare a result with NumPy's, after timing; a failure fails the run at its end."""
        self.checks.append({"name": name, "rtol": rtol, "atol": atol,
                            **compare(got, want, rtol, atol)})
        print(f"  check {name}: {self.checks[-1]}", flush=True)
        return self.checks[-1]["ok"]

    def write(self, path: str) -> None:
        """The JSON: the run's record (commit, device, driver, versions, copy times), its rows
        and its checks."""
        record = {**self.env, "versions": _versions(), "rows": self.rows, "checks": self.checks,
                  "copy_seconds_by_bytes_moved": {8 * n: t for n, t in self.copies.items()}}
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(record, f, indent=1, default=str)

    def finish(self) -> int:
        """Write the JSON (``--out``, else ``results/<date>-<device>/<script>.json``; none for a
        smoke run without ``--out``) and print the table; the exit status: 1 if a check failed."""
        day = datetime.date.today().isoformat()
        path = self.args.out or (None if self.smoke else os.path.join(
            HERE, "results", f"{day}-{self.env['slug']}", f"{self.script}.json"))
        if path:
            self.write(path)
        print(f"\n{'figure':<72} {'fusedarrays':>11} {'target':>9}  peers (same run)")
        for row in self.rows:
            peers = ", ".join(f"{k} {text(v)[:40]}" for k, v in row["peers"].items())
            print(f"{row['figure'][:72]:<72} {text(row['fusedarrays']):>11} "
                  f"{row['target']:>9}  {peers}")
        failed = [c["name"] for c in self.checks if not c["ok"]]
        print("\n" + ("checks FAILED: " + ", ".join(failed) if failed else
                      f"{len(self.checks)} checks ok") + (f"; wrote {path}" if path else ""))
        return 1 if failed else 0


def main() -> int:
    """Self-check: the timer, a copy, peers that can't run, a check, the JSON read back."""
    args = arguments(__doc__.splitlines()[0]).parse_args()
    run = Run("harness", args)
    run.peers = True   # the self-check's own peers, which never run a workload
    slept = device_time(lambda: time.sleep(0.002), repeat=3, batches=2)
    assert 0.002 <= slept < 0.2, slept
    moved = 1 << (20 if run.smoke else 30)
    row = run.row("copy reference", moved / run.copy_time(moved) / 1e9, unit="GB/s moved")
    row.peer("absent", lambda: importlib.import_module("no_such_module_here"))
    row.peer("failing", lambda: 1 / 0)
    assert row["peers"]["absent"].startswith("not installed"), row["peers"]
    assert row["peers"]["failing"].startswith("failed: ZeroDivisionError"), row["peers"]
    run.copy_limit = COPY_LIMIT   # held on any backend here, for rows made up below
    row = run.row("a figure beyond the copy, made up", 1.02, unit=COPY_UNIT)
    row.peer("impossible", lambda: 2.03)
    made_up = run.row("the same in L2, made up", 2.03, unit=COPY_UNIT, cache_resident="made up")
    assert row["fusedarrays"] == 1.02 and made_up["fusedarrays"] == 2.03, (row, made_up)
    assert row["peers"]["impossible"].startswith("failed check"), row["peers"]
    failed = [c for c in run.checks if not c["ok"]]
    assert [c["value"] for c in failed] == [2.03], failed
    run.checks.remove(failed[0])   # the made-up figure's failure is not this run's
    run.rows[-2:] = []
    a = np.ones(1)
    run.row("NumPy ufunc call, 1 element", device_time(lambda: np.add(a, a), 10_000) * 1e6,
            target="<= 100", unit="µs")
    assert not compare([1.0, np.nan], [1.0, 2.0], 1e-5, 0)["ok"]
    got = run.rng().standard_normal(16)
    run.check("a copy", got.copy(), got)
    status = run.finish()
    if args.out:
        with open(args.out) as f:
            written = json.load(f)
        assert [r["figure"] for r in written["rows"]] == [r["figure"] for r in run.rows]
        assert written["commit"] and written["versions"]["numpy"] == np.__version__, written
    return status


if __name__ == "__main__":
    raise SystemExit(main())
