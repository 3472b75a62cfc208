"""Compile latency of new kernels in a warm process, stage by stage; works without a GPU.

"Warm process": numba imported and one other kernel compiled before the clock starts (DESIGN.md,
"new kernel, compile in a warm process"). Each kernel ``fa.<unary>(x) * y + 1.5`` (float32,
one per op in ``UNARY``) is planned on the cpu backend as pool-aligned device buffers would be,
rendered, and compiled with ``cuda.compile.compile_kernel`` for ``--arch``: numba typing and
lowering, NVVM, nvJitLink. Reports the median and minimum of each stage over the kernels, per
schedule (``flat`` 1-D contiguous, ``rows`` a broadcast row added, ``tiled`` a transposed input).

Usage: python benchmarks/compile_latency.py [--arch sm_90] [--schedules flat,rows,tiled] [--json F]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# On a machine with a CUDA driver nvJitLink keeps what it linked in the CUDA JIT cache: a kernel
# this script (or anything) linked there before links in ~1 ms. Measured with that cache off.
os.environ.setdefault("CUDA_CACHE_DISABLE", "1")

import numpy as np  # noqa: E402

import fusedarrays as fa  # noqa: E402
from fusedarrays import config  # noqa: E402
from fusedarrays.compiler import codegen  # noqa: E402

precompile = importlib.import_module("fusedarrays.runtime.precompile")
UNARY = ["sin", "cos", "tan", "exp", "exp2", "expm1", "log1p", "sqrt", "cbrt", "tanh",
         "arctan", "sinh", "cosh", "arcsinh", "floor", "rint"]


def expression(schedule: str, op: str):
    rng = np.random.default_rng(0)
    if schedule == "flat":
        x, y = (fa.asarray(rng.random(1 << 20, np.float32)) for _ in range(2))
        return getattr(fa, op)(x) * y + 1.5
    x, y = (fa.asarray(rng.random((1024, 1024), np.float32)) for _ in range(2))
    if schedule == "rows":
        return getattr(fa, op)(x + y[0][None, :]) * y + 1.5
    return getattr(fa, op)(x.T) * y + 1.5


def plans(schedule: str, ops: list[str]):
    with config.override(BACKEND="cpu"):
        found = [precompile.kernel_plans([expression(schedule, op)], real_buffers=False)[0]
                 for op in ops]
    assert all(p.schedule == schedule for p in found), [p.schedule for p in found]
    return found


def compile_one(plan, arch: str) -> dict:
    from fusedarrays.cuda.compile import compile_kernel

    source = codegen.render_kernel(plan, "cuda")
    start = time.perf_counter()
    _, _, _, stages = compile_kernel(source, plan.name, plan.param_types(), arch)
    return {**stages, "total": time.perf_counter() - start, "lines": source.count("\n")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--schedules", default="flat,rows,tiled")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    with config.override(BACKEND="cpu"):
        x = fa.asarray(np.ones(1024, np.float32))
        warm = precompile.kernel_plans([x * 3.0 - 1.0], real_buffers=False)[0]
    compile_one(warm, args.arch)  # the warm-up: numba imported, a first kernel compiled
    result = {"arch": args.arch, "cpus": os.cpu_count(), "schedules": {}}
    for schedule in args.schedules.split(","):
        runs = [compile_one(p, args.arch) for p in plans(schedule, UNARY)]
        figures = {stage: {"median_ms": statistics.median(r[stage] for r in runs) * 1e3,
                           "min_ms": min(r[stage] for r in runs) * 1e3}
                   for stage in ("numba typing+lowering", "nvvm", "link", "total")}
        result["schedules"][schedule] = {"kernels": len(runs), "lines": runs[0]["lines"],
                                         **figures}
        print(f"{schedule:6s} ({len(runs)} kernels, {runs[0]['lines']} lines): " + ", ".join(
            f"{stage} {f['median_ms']:.0f} ms (min {f['min_ms']:.0f})"
            for stage, f in figures.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
