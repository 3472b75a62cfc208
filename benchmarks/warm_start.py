"""Warm start, batch compile and cached-call host time, each in fresh processes.

- warm start: a fresh process with a warm disk cache: ``import fusedarrays``, the backend's
  context and pool, then the *first evaluation* of ``x * y + 1.5`` (1 K float32) to a
  synchronised result; whether numba was imported. Beside it in the same run: CuPy's
  ``ElementwiseKernel`` from its own disk cache and a numba ``@cuda.jit(cache=True)`` kernel
  from numba's cache (GPU only);
- batch compile: ``fa.precompile`` of 1 and of 16 new kernels for ``--arch``, in a fresh process
  (numba's import and first compile included), in a warm one (a kernel compiled before) and in a
  warm one whose compile server is warm ("served": an earlier batch started it ``--server-wait``
  seconds before; the figure's worker count shows whether it served), workers as ``precompile``
  chooses them; ``--large N`` adds a batch of N kernels with workers and with none; medians of
  ``--repeat`` runs, the CUDA JIT cache off; "one kernel" is the first op's, and beside it the
  median of the 16 compiled one call at a time in a warm process (no GPU needed);
- host µs per call of the cached ``(x * y + 1.5).compute()`` on 1 K float32 (GPU only).

Usage: python benchmarks/warm_start.py [--arch sm_90] [--repeat 3] [--large 48] [--smoke]
       [--out F.json] [--commit C] [--no-peers]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

import harness

# On a machine with a CUDA driver nvJitLink keeps what it linked in the CUDA JIT cache
# (~/.nv/ComputeCache): a kernel linked there before, by any process, links in ~1 ms. Each batch
# compiles the same kernels as the last, so compile figures are taken with that cache off.
NO_JIT_CACHE = {"CUDA_CACHE_DISABLE": "1"}
UNARY = ["sin", "cos", "tan", "exp", "exp2", "expm1", "log1p", "sqrt", "cbrt", "tanh",
         "arctan", "sinh", "cosh", "arcsinh", "floor", "rint"]

# --- children: each prints one JSON line last -------------------------------------------------

WARM_FA = """
import importlib, json, sys, time
t0 = time.perf_counter()
import numpy as np
import fusedarrays as fa
t1 = time.perf_counter()
backend = importlib.import_module("fusedarrays.runtime.backend").get_backend()
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
ops, server_wait = sys.argv[5].split(","), float(sys.argv[6])
x = fa.asarray(np.arange(1024, dtype=np.float32))
y = fa.asarray(np.ones(1024, dtype=np.float32))
if state == "warm":  # numba imported and one kernel compiled: a warm process
    fa.precompile(x * y - 3.0, arch=arch, workers=0, progress=False)
elif state == "served":  # a warm process whose earlier batch started its compile server
    fa.precompile([x * y - 3.0, x * y + 3.0], arch=arch, progress=False)
    time.sleep(server_wait)
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
import json, sys
import harness
import numpy as np
import fusedarrays as fa
x = fa.asarray(np.random.default_rng(0).standard_normal(1024).astype(np.float32))
y = fa.asarray(np.random.default_rng(1).standard_normal(1024).astype(np.float32))
for _ in range(200):
    (x * y + 1.5).compute()
best = harness.device_time(lambda: (x * y + 1.5).compute(), int(sys.argv[1]),
                           harness.backend().synchronize, batches=5)
print(json.dumps({"host_us_per_call": best * 1e6, "stats": fa.stats()}))
"""


def child(script: str, *args: str, env: dict | None = None, cwd: str | None = None) -> dict:
    # Keep what PYTHONPATH held (on the GPU machine: the NumPy that numba-cuda can import).
    path = os.pathsep.join([harness.REPO, harness.HERE, cwd or "",
                            os.environ.get("PYTHONPATH", "")])
    full = {**os.environ, "PYTHONPATH": path, **(env or {})}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=full,
                          capture_output=True, text=True, timeout=1800, cwd=cwd)
    if done.returncode != 0:
        raise RuntimeError(f"child failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def warm_start(run: harness.Run, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = {"FUSEDARRAYS_CACHE_DIR": cache, "FUSEDARRAYS_BACKEND": "cuda"}
        cold = child(WARM_FA, env=env)
        runs = [child(WARM_FA, env=env) for _ in range(repeat)]
    row = run.row("first evaluation in a fresh process, warm disk cache, after context start",
                  median_of(runs, "first_eval_ms"), "<= 3", "ms",
                  import_ms=median_of(runs, "import_ms"),
                  context_ms=median_of(runs, "context_ms"),
                  numba_imported=any(r["numba_imported"] for r in runs), cold=cold, runs=runs)
    run.row("compiles in that warm-started process",
            max(r["stats"]["compiles"] for r in runs), "== 0", "compiles",
            numba_imported=any(r["numba_imported"] for r in runs))
    run.check("warm start result", [r["correct"] for r in runs], [True] * repeat)

    def cupy():
        with tempfile.TemporaryDirectory() as cache:
            child(WARM_CUPY, env={"CUPY_CACHE_DIR": cache})
            return median_of([child(WARM_CUPY, env={"CUPY_CACHE_DIR": cache})
                              for _ in range(repeat)], "first_eval_ms")

    def numba():
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "fa_numba_cached.py"), "w") as f:
                f.write(textwrap.dedent(NUMBA_MODULE))
            child(WARM_NUMBA, cwd=folder)
            found = [child(WARM_NUMBA, cwd=folder) for _ in range(repeat)]
            row["details"]["numba_cache_import_ms"] = median_of(found, "import_ms")
            return median_of(found, "first_eval_ms")
    row.peer("CuPy ElementwiseKernel, warm cache", cupy)
    row.peer("numba cache=True, warm cache (import apart)", numba)


def batches(arch: str, backend: str, state: str, cases: list, repeat: int, wait: float) -> dict:
    """name → the runs of each ``(count, workers)`` batch in ``state``, each in a fresh cache."""
    found = {}
    for count, workers in cases:
        runs = []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as cache:
                runs.append(child(BATCH, arch, state, str(count), workers, ",".join(UNARY),
                                  str(wait), env={"FUSEDARRAYS_CACHE_DIR": cache,
                                                  "FUSEDARRAYS_BACKEND": backend,
                                                  **NO_JIT_CACHE}))
        found[(count, workers)] = runs
    return found


def batch_compile(run: harness.Run, arch: str, count: int, large: int, repeat: int,
                  wait: float) -> None:
    """Seconds to precompile 1 and ``count`` new kernels (and ``large``, with workers as
    ``precompile`` chooses them and with none) in fresh, warm and served processes. On the cpu
    backend (no GPU) numba is imported with the first array, before the clock starts."""
    backend = run.backend.name if run.backend.name == "cuda" else "cpu"
    singles = batches(arch, backend, "warm", [(count, "singles")], repeat, wait)
    single = statistics.median(statistics.median(r["singles"]) for r in singles[(count,
                                                                                 "singles")])
    one = {}
    for state, label in (("cold", "fresh process"), ("warm", "warm process"),
                         ("served", "warm process, compile server warm")):
        cases = ([] if state == "served" else [(1, "auto")]) + [(count, "auto")]
        cases += [(large, "auto"), (large, "0")] if large else []
        found = batches(arch, backend, state, cases, repeat, wait)
        if state != "served":
            one[state] = median_of(found[(1, "auto")], "seconds")
        base = one[state if state in one else "warm"]   # a single kernel never uses workers
        many = found[(count, "auto")]
        seconds = median_of(many, "seconds")
        run.row(f"batch compile, {label}: {count} kernels / 1", seconds / base,
                "<= 8", "ratio", seconds=seconds, one_seconds=base,
                workers=max(r["workers"] for r in many),
                worker_kernels=[r["worker_kernels"] for r in many],
                runs_seconds=[r["seconds"] for r in many], stage_seconds=many[0]["stage_seconds"])
        if state != "cold":
            run.row(f"batch compile, {label}: {count} kernels / median single", seconds / single,
                    "<= 8", "ratio", single_median_seconds=single)
        if large:
            run.row(f"batch compile, {label}: {large} kernels with workers",
                    median_of(found[(large, "auto")], "seconds"), "—", "s",
                    no_workers_seconds=median_of(found[(large, "0")], "seconds"))


def main() -> int:
    parser = harness.arguments(__doc__.splitlines()[0])
    parser.add_argument("--arch", default=None, help="arch for the batch compile (default: the "
                        "GPU's, else sm_90)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--large", type=int, default=0, help="also a batch of this many "
                        "kernels, with and without worker processes (at most 64)")
    parser.add_argument("--server-wait", type=float, default=10.0, help="seconds a 'served' "
                        "process waits after starting its compile server")
    args = parser.parse_args()
    run = harness.Run("warm_start", args)
    repeat = 1 if run.smoke else args.repeat
    gpu = run.backend.name == "cuda"
    if gpu:
        warm_start(run, repeat)
        host = child(HOST_TIME, "200" if run.smoke else "2000",
                     env={"FUSEDARRAYS_BACKEND": "cuda"})
        run.row("host µs per cached (x * y + 1.5).compute(), 1 K f32, fresh process",
                host["host_us_per_call"], "<= 15", "µs", goal="<= 12", stats=host["stats"])
    arch = args.arch or (run.backend.arch if gpu else "sm_90")
    run.env["arch"] = arch
    batch_compile(run, arch, 2 if run.smoke else 16, 0 if run.smoke else args.large, repeat,
                  1.0 if run.smoke else args.server_wait)
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
