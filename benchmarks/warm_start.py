"""Warm start, batch compile and cached-call host time, each in fresh processes; JSON and a table.

Figures (issue 3; DESIGN.md "Figures to reach"):

- warm start: a fresh process with a warm disk cache — ``import fusedarrays``, CUDA context and
  pool, then the *first evaluation* of ``x * y + 1.5`` (1 K float32) to a synchronized result;
  whether numba was imported. Beside it, in the same run: CuPy's ``ElementwiseKernel`` from its
  own disk cache and a numba ``@cuda.jit(cache=True)`` kernel from numba's cache (GPU only);
- batch compile: ``fa.precompile`` of 1 and of 16 new kernels for ``--arch``, in a fresh process
  (numba's import and first compile included), in a warm one (a kernel compiled before) and in
  a warm one whose compile server is warm (an earlier batch started it: "served"), with worker
  processes as ``precompile`` chooses them; ``--large N`` adds a batch of N kernels with
  workers and with none (this process's pipeline only); medians of ``--repeat`` runs, each with
  the CUDA JIT cache off; "one kernel" is the first op's, and beside it the median of the 16
  compiled one call at a time in a warm process (works without a GPU);
- host time per call of the cached ``(x * y + 1.5).compute()`` on 1 K float32 (GPU only; the cpu
  backend's figures come from a numba call, not fusedarrays).

Usage: python benchmarks/warm_start.py OUT.json [--arch sm_90] [--repeat 3] [--large 48]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# On a machine with a CUDA driver nvJitLink keeps what it linked in the CUDA JIT cache
# (~/.nv/ComputeCache): a kernel linked there before, by any process, links in ~1 ms. Each batch
# compiles the same kernels as the last, so compile figures are taken with that cache off.
NO_JIT_CACHE = {"CUDA_CACHE_DISABLE": "1"}
UNARY = ["sin", "cos", "tan", "exp", "exp2", "expm1", "log1p", "sqrt", "cbrt", "tanh",
         "arctan", "sinh", "cosh", "arcsinh", "floor", "rint"]

# --- children: each prints one JSON line last -------------------------------------------------

WARM_FA = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import fusedarrays as fa
t1 = time.perf_counter()
backend = fa._get_backend()
t2 = time.perf_counter()
x = fa.asarray(np.arange(1024, dtype=np.float32))
y = fa.asarray(np.ones(1024, dtype=np.float32))
backend.synchronize()
t3 = time.perf_counter()
r = (x * y + 1.5).compute()
backend.synchronize()
t4 = time.perf_counter()
(x * y + 1.5).compute()
backend.synchronize()
t5 = time.perf_counter()
ok = bool(np.allclose(r.get(), np.arange(1024, dtype=np.float32) + 1.5))
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3,
                  "inputs_ms": (t3 - t2) * 1e3, "first_eval_ms": (t4 - t3) * 1e3,
                  "second_eval_ms": (t5 - t4) * 1e3, "numba_imported": "numba" in sys.modules,
                  "correct": ok, "stats": fa.stats(), "backend": backend.name}))
"""

WARM_CUPY = """
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import cupy as cp
t1 = time.perf_counter()
x = cp.arange(1024, dtype=cp.float32); y = cp.ones(1024, dtype=cp.float32)
cp.cuda.Device().synchronize()
t2 = time.perf_counter()
k = cp.ElementwiseKernel("float32 p, float32 q, float32 s", "float32 o", "o = p * q + s",
                         "fa_bench_axpb")
r = k(x, y, np.float32(1.5))
cp.cuda.Device().synchronize()
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3,
                  "first_eval_ms": (t3 - t2) * 1e3}))
"""

NUMBA_MODULE = """
from numba import cuda

@cuda.jit(cache=True)
def axpb(p, q, s, o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = p[i] * q[i] + s
"""

WARM_NUMBA = """
import json, sys, time
import numpy as np
t0 = time.perf_counter()
from numba import cuda
import fa_numba_cached as m
t1 = time.perf_counter()
x = cuda.to_device(np.arange(1024, dtype=np.float32)); y = cuda.to_device(np.ones(1024, np.float32))
o = cuda.device_array(1024, np.float32)
cuda.synchronize()
t2 = time.perf_counter()
m.axpb[4, 256](x, y, np.float32(1.5), o)
cuda.synchronize()
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3,
                  "first_eval_ms": (t3 - t2) * 1e3}))
"""

BATCH = """
import json, os, sys, time
import numpy as np
import fusedarrays as fa
arch, state, count, workers = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
workers = {"auto": None, "singles": "singles"}.get(workers, workers)
workers = workers if workers in (None, "singles") else int(workers)
ops = sys.argv[5].split(",")
x = fa.asarray(np.arange(1024, dtype=np.float32))
y = fa.asarray(np.ones(1024, dtype=np.float32))
if state == "warm":  # numba imported and one kernel compiled: a warm process
    fa.precompile(x * y - 3.0, arch=arch, workers=0, progress=False)
elif state == "served":  # a warm process whose earlier batch started its compile server
    fa.precompile([x * y - 3.0, x * y + 3.0], arch=arch, progress=False)
    from fusedarrays.cuda.compile_server import shared_server
    assert shared_server().ready(timeout=120), "the compile server did not warm up"
forms = [lambda f: f(x) * y + 1.5, lambda f: f(x) + y * 1.5, lambda f: f(x * y) - 1.5,
         lambda f: f(x - y) * 2.5]   # past len(ops) kernels, the next form of each op
arrays = [forms[k // len(ops)](getattr(fa, ops[k % len(ops)])) for k in range(count)]
fa.reset_stats()
singles = []
if workers == "singles":  # the same kernels one precompile call at a time, in this order
    for a in arrays:
        t = time.perf_counter()
        assert fa.precompile(a, arch=arch, workers=0, progress=False)["compiled"] == 1
        singles.append(time.perf_counter() - t)
    report = {"workers": 0}
else:
    t = time.perf_counter()
    report = fa.precompile(arrays, arch=arch, workers=workers, progress=False)
    assert report["compiled"] == count, report
seconds = sum(singles) if singles else time.perf_counter() - t
stages = {stage: total for stage, (_, total) in fa.timings().items()}  # summed over kernels
print(json.dumps({"seconds": seconds, "workers": report["workers"], "cpus": os.cpu_count(),
                  "worker_kernels": report.get("worker_kernels", 0), "stage_seconds": stages,
                  "singles": singles}))
"""

HOST_TIME = """
import json, time
import numpy as np
import fusedarrays as fa
x = fa.asarray(np.random.default_rng(0).standard_normal(1024).astype(np.float32))
y = fa.asarray(np.random.default_rng(1).standard_normal(1024).astype(np.float32))
backend = fa._get_backend()
for _ in range(200):
    (x * y + 1.5).compute()
backend.synchronize()
best = []
for _ in range(5):
    t = time.perf_counter()
    for _ in range(2000):
        (x * y + 1.5).compute()
    best.append((time.perf_counter() - t) / 2000 * 1e6)
    backend.synchronize()
print(json.dumps({"host_us_per_call": min(best), "all": best, "stats": fa.stats()}))
"""


def child(script: str, *args: str, env: dict | None = None, cwd: str | None = None) -> dict:
    # Keep what PYTHONPATH held (on the GPU machine: the NumPy that numba-cuda can import).
    path = os.pathsep.join([REPO, cwd or "", os.environ.get("PYTHONPATH", "")])
    full = {**os.environ, "PYTHONPATH": path, **(env or {})}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=full,
                          capture_output=True, text=True, timeout=1800, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"child failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def have_gpu() -> bool:
    sys.path.insert(0, REPO)
    from fusedarrays.cuda.backend import CudaBackend

    return bool(CudaBackend.available())


def warm_start(repeat: int) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {"FUSEDARRAYS_CACHE_DIR": cache, "FUSEDARRAYS_BACKEND": "cuda"}
        out["fa_cold"] = child(WARM_FA, env=env)
        runs = [child(WARM_FA, env=env) for _ in range(repeat)]
        out["fa_warm_runs"] = runs
        out["fa_warm_first_eval_ms"] = median_of(runs, "first_eval_ms")
        out["fa_warm_import_ms"] = median_of(runs, "import_ms")
        out["fa_warm_context_ms"] = median_of(runs, "context_ms")
        out["fa_warm_numba_imported"] = any(r["numba_imported"] for r in runs)
        out["fa_warm_compiles"] = max(r["stats"]["compiles"] for r in runs)
    try:
        with tempfile.TemporaryDirectory() as cache:
            env = {"CUPY_CACHE_DIR": cache}
            child(WARM_CUPY, env=env)
            runs = [child(WARM_CUPY, env=env) for _ in range(repeat)]
            out["cupy_warm_first_eval_ms"] = median_of(runs, "first_eval_ms")
            out["cupy_warm_import_ms"] = median_of(runs, "import_ms")
    except RuntimeError as e:
        out["cupy_error"] = str(e)[-300:]
    try:
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "fa_numba_cached.py"), "w") as f:
                f.write(textwrap.dedent(NUMBA_MODULE))
            child(WARM_NUMBA, cwd=folder)
            runs = [child(WARM_NUMBA, cwd=folder) for _ in range(repeat)]
            out["numba_cache_warm_first_eval_ms"] = median_of(runs, "first_eval_ms")
            out["numba_cache_warm_import_ms"] = median_of(runs, "import_ms")
    except RuntimeError as e:
        out["numba_cache_error"] = str(e)[-300:]
    return out


def batch_compile(arch: str, backend: str, large: int = 0, repeat: int = 3) -> dict:
    """Seconds to precompile 1 and 16 new kernels (and ``large``, with workers as ``precompile``
    chooses them and with none), in a fresh and in a warm process: the median of ``repeat``
    runs of each. On the cpu backend (no GPU) numba itself is imported with the first array,
    before the clock starts: "fresh" then excludes it."""
    out = {"backend": backend, "repeat": repeat}
    for state in ("cold", "warm", "served"):
        cases = [(1, "auto")] if state != "served" else []
        cases += [(16, "auto")] + ([(large, "auto"), (large, "0")] if large else [])
        for count, workers in cases:
            runs = []
            for _ in range(repeat):
                with tempfile.TemporaryDirectory() as cache:
                    runs.append(child(BATCH, arch, state, str(count), workers, ",".join(UNARY),
                                      env={"FUSEDARRAYS_CACHE_DIR": cache,
                                           "FUSEDARRAYS_BACKEND": backend, **NO_JIT_CACHE}))
            name = f"{state}_{count}" + ("_no_workers" if workers == "0" else "")
            out[name + "_runs_s"] = [r["seconds"] for r in runs]
            out[name + "_s"] = median_of(runs, "seconds")
            out[name + "_workers"] = max(r["workers"] for r in runs)
            out[name + "_worker_kernels"] = [r["worker_kernels"] for r in runs]
            out[name + "_stage_seconds"] = runs[0]["stage_seconds"]   # the first run's
            out["cpus"] = runs[0]["cpus"]
        one = out[f"{state}_1_s" if state != "served" else "warm_1_s"]   # a single: no workers
        out[f"{state}_16_over_1"] = out[f"{state}_16_s"] / one
    # "one kernel" above is the first op's (sin, among the slower to compile); beside it, the
    # median of the same 16 kernels precompiled one call at a time in a warm process
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            runs.append(child(BATCH, arch, "warm", "16", "singles", ",".join(UNARY),
                              env={"FUSEDARRAYS_CACHE_DIR": cache,
                                   "FUSEDARRAYS_BACKEND": backend, **NO_JIT_CACHE}))
    out["warm_16_singles_s"] = runs[0]["singles"]
    out["warm_single_median_s"] = statistics.median(statistics.median(r["singles"]) for r in runs)
    out["warm_16_over_single_median"] = out["warm_16_s"] / out["warm_single_median_s"]
    out["served_16_over_single_median"] = out["served_16_s"] / out["warm_single_median_s"]
    return out


def table(result: dict) -> str:
    rows = []
    w, b = result.get("warm_start", {}), result["batch_compile"]
    if w:
        rows += [
            ("warm start: first eval after context (fa)", f"{w['fa_warm_first_eval_ms']:.2f} ms",
             "<= 3 ms"),
            ("  numba imported / compiles", f"{w['fa_warm_numba_imported']} / "
             f"{w['fa_warm_compiles']}", "False / 0"),
            ("  import fusedarrays, context+pool", f"{w['fa_warm_import_ms']:.0f} ms, "
             f"{w['fa_warm_context_ms']:.0f} ms", ""),
        ]
        if "cupy_warm_first_eval_ms" in w:
            rows.append(("  CuPy ElementwiseKernel, warm cache",
                         f"{w['cupy_warm_first_eval_ms']:.2f} ms", "1.6 ms (DESIGN)"))
        if "numba_cache_warm_first_eval_ms" in w:
            rows.append(("  numba cache=True, warm cache",
                         f"{w['numba_cache_warm_first_eval_ms']:.1f} ms "
                         f"(+ import {w['numba_cache_warm_import_ms']:.0f} ms)", "525 ms (DESIGN)"))
    for state, label in (("cold", "fresh"), ("warm", "warm"), ("served", "warm, server warm")):
        one = b[f"{state}_1_s" if state != "served" else "warm_1_s"]
        rows.append((f"batch compile, {label} process: 1 / 16 kernels "
                     f"({b[f'{state}_16_workers']} workers, median of {b['repeat']}; by workers "
                     f"{b[f'{state}_16_worker_kernels']})",
                     f"{one * 1e3:.0f} ms / {b[f'{state}_16_s']:.2f} s = "
                     f"{b[f'{state}_16_over_1']:.1f}x", "16 <= 8x one"))
        if state != "cold" and "warm_single_median_s" in b:
            rows.append(("  16 / the median of the 16 compiled one call at a time",
                         f"{b[f'{state}_16_s']:.2f} s / {b['warm_single_median_s'] * 1e3:.0f} ms"
                         f" = {b[f'{state}_16_over_single_median']:.1f}x", "16 <= 8x one"))
        stages = b.get(f"{state}_16_stage_seconds", {})
        if stages:
            rows.append(("  16: typing+lowering / NVVM / link, summed over kernels",
                         " / ".join(f"{stages.get(k, 0.0):.2f} s" for k in
                                    ("numba typing+lowering", "nvvm", "link")), ""))
        large = next((int(k.split("_")[1]) for k in b
                      if k.startswith(state) and k.endswith("_no_workers_s")), None)
        if large:
            rows.append((f"  {large} kernels: {b[f'{state}_{large}_workers']} workers / none",
                         f"{b[f'{state}_{large}_s']:.2f} s / "
                         f"{b[f'{state}_{large}_no_workers_s']:.2f} s", ""))
    if "host" in result:
        rows.append(("host time per cached (x*y+1.5).compute(), 1K f32",
                     f"{result['host']['host_us_per_call']:.1f} us", "<= 12 us"))
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    return "\n".join(f"{a:<{width}}  {v:<{vwidth}}  {t}" for a, v, t in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="where to write the JSON results")
    parser.add_argument("--arch", default=None, help="arch for the batch compile (default: the "
                        "GPU's, else sm_90)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", type=int, default=0, help="also a warm batch of this many "
                        "kernels, with and without worker processes (at most 64)")
    args = parser.parse_args()
    gpu = have_gpu()
    result: dict = {"gpu": gpu, "time": time.strftime("%Y-%m-%d %H:%M:%S"), "cpus": os.cpu_count()}
    arch = args.arch
    if gpu:
        result["warm_start"] = warm_start(args.repeat)
        result["host"] = child(HOST_TIME, env={"FUSEDARRAYS_BACKEND": "cuda"})
        if arch is None:
            from fusedarrays.cuda.backend import CudaBackend
            arch = CudaBackend(0).arch
    result["arch"] = arch = arch or "sm_90"
    result["batch_compile"] = batch_compile(arch, "cuda" if gpu else "cpu", args.large,
                                            args.repeat)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(json.dumps(result, indent=1, default=str))
    print()
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
