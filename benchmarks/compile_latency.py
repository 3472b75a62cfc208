"""Compile latency of new kernels in a warm process, stage by stage; no GPU needed.

"Warm process": numba imported and one other kernel compiled before the clock starts. Each
kernel ``fa.<unary>(x) * y + 1.5`` (float32, one per op in ``UNARY``) is compiled into an empty
disk cache by ``fa.precompile(..., arch=--arch, workers=0)``, and ``fa.timings()`` splits it:
numba typing and lowering, NVVM, nvJitLink (``total`` also holds planning, rendering and the disk
write). Reports the median and minimum of each stage over the kernels, per layout: ``flat``
(1-D contiguous), ``rows`` (a broadcast row added), ``tiled`` (a transposed input).

Usage: python benchmarks/compile_latency.py [--arch sm_90] [--schedules flat,rows,tiled]
       [--smoke] [--out F.json] [--commit C]
"""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import tempfile

# On a machine with a CUDA driver nvJitLink keeps what it linked in the CUDA JIT cache: a kernel
# this script (or anything) linked there before links in ~1 ms. Measured with that cache off,
# and into a disk cache of this run's own, where every kernel is new.
os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
os.environ["FUSEDARRAYS_CACHE_DIR"] = CACHE = tempfile.mkdtemp(prefix="fa-compile-latency-")
atexit.register(shutil.rmtree, CACHE, ignore_errors=True)

import harness  # noqa: E402  (first of the package's importers: it puts this checkout on the path)
import numpy as np  # noqa: E402

import fusedarrays as fa  # noqa: E402

UNARY = ["sin", "cos", "tan", "exp", "exp2", "expm1", "log1p", "sqrt", "cbrt", "tanh",
         "arctan", "sinh", "cosh", "arcsinh", "floor", "rint"]
STAGES = ("numba typing+lowering", "nvvm", "link", "total")


def expression(layout: str, op: str, rng):
    if layout == "flat":
        x, y = (fa.asarray(rng.random(1 << 20, np.float32)) for _ in range(2))
        return getattr(fa, op)(x) * y + 1.5
    x, y = (fa.asarray(rng.random((1024, 1024), np.float32)) for _ in range(2))
    if layout == "rows":
        return getattr(fa, op)(x + y[0][None, :]) * y + 1.5
    return getattr(fa, op)(x.T) * y + 1.5


def compile_one(array, arch: str) -> dict:
    """Seconds by stage of compiling ``array``'s kernel."""
    fa.reset_stats()
    report = fa.precompile(array, arch=arch, workers=0, progress=False)
    assert report["compiled"] == 1, report
    return {**{stage: total for stage, (_, total) in fa.timings().items()},
            "total": report["seconds"]}


def main() -> int:
    parser = harness.arguments(__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--schedules", default="flat,rows,tiled")
    args = parser.parse_args()
    run = harness.Run("compile_latency", args)
    run.env["arch"] = args.arch
    rng = run.rng()
    compile_one(fa.asarray(np.ones(1024, np.float32)) * 3.0 - 1.0, args.arch)   # the warm-up
    ops = UNARY[:2] if run.smoke else UNARY
    for layout in args.schedules.split(","):
        runs = [compile_one(expression(layout, op, rng), args.arch) for op in ops]
        figures = {stage: {"median_ms": statistics.median(r.get(stage, 0.0) for r in runs) * 1e3,
                           "min_ms": min(r.get(stage, 0.0) for r in runs) * 1e3}
                   for stage in STAGES}
        run.row(f"new {layout} kernel in a warm process, median of {len(runs)}",
                figures["total"]["median_ms"], "<= 100" if layout == "flat" else "—", "ms",
                **{stage.replace(" ", "_"): f for stage, f in figures.items()})
        print("    " + ", ".join(f"{stage} {f['median_ms']:.0f} ms (min {f['min_ms']:.0f})"
                                 for stage, f in figures.items()))
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
