"""Figures on the GPU machine, printed as a table and written as JSON: one run, side by side.

- a 10-op expression over 2^26 float32 as one kernel, bandwidth as a fraction of a
  device-to-device copy measured in the same run (bytes read + written, CUDA events, median);
- host time per call of a cached 3-op expression on 1 K elements (fa lazy, against CuPy's
  ElementwiseKernel and cupy.fuse where CuPy is installed).

Usage: python benchmarks/gpu_figures.py [out.json]
"""

import json
import statistics
import sys
import time

import numpy as np

import fusedarrays as fa


def median_ms(fn, repeat=15, batch=10):
    """Median device time per call of ``batch`` back-to-back calls between two events, so that
    the host work of one call overlaps the kernel of the previous one."""
    import cupy as cp
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / batch)
    return statistics.median(times)


def main(path=None):
    import cupy as cp
    n = 1 << 26
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    x, y, z = fa.asarray(a), fa.asarray(b), fa.asarray(c)
    src = cp.asarray(a)
    dst = cp.empty_like(src)
    copy_ms = median_ms(lambda: cp.copyto(dst, src))
    copy_gbs = 2 * n * 4 / copy_ms / 1e6

    def ten_ops():
        return (fa.sqrt(fa.abs(x * y + z)) * 0.5 - fa.exp(-fa.abs(z))
                + fa.maximum(x, y) / 3.0).compute()
    fa.reset_stats()
    ten_ops()
    launches = fa.stats()["launches"]
    fused_ms = median_ms(ten_ops)
    fused_gbs = 4 * n * 4 / fused_ms / 1e6   # 3 inputs read, 1 output written

    xa = cp.asarray(a)
    ya, za = cp.asarray(b), cp.asarray(c)
    def ten_ops_cupy(p, q, r):
        return (cp.sqrt(cp.abs(p * q + r)) * np.float32(0.5) - cp.exp(-cp.abs(r))
                + cp.maximum(p, q) / np.float32(3.0))
    cupy_fused = cp.fuse(ten_ops_cupy)
    cupy_ms = median_ms(lambda: cupy_fused(xa, ya, za))
    cupy_gbs = 4 * n * 4 / cupy_ms / 1e6

    small = [fa.asarray(rng.standard_normal(1024).astype(np.float32)) for _ in range(2)]
    (small[0] * small[1] + 1.5).compute()
    cp.cuda.Device().synchronize()
    calls = 2000
    t0 = time.perf_counter()
    for _ in range(calls):
        (small[0] * small[1] + 1.5).compute()
    host_us = (time.perf_counter() - t0) / calls * 1e6
    cp.cuda.Device().synchronize()
    ek = cp.ElementwiseKernel("float32 p, float32 q, float32 s", "float32 o", "o = p * q + s")
    p1, q1 = cp.asarray(small[0].get()), cp.asarray(small[1].get())
    ek(p1, q1, np.float32(1.5))
    t0 = time.perf_counter()
    for _ in range(calls):
        ek(p1, q1, np.float32(1.5))
    ek_us = (time.perf_counter() - t0) / calls * 1e6
    cp.cuda.Device().synchronize()

    got = ten_ops().get()
    want = (np.sqrt(np.abs(a * b + c)) * np.float32(0.5) - np.exp(-np.abs(c))
            + np.maximum(a, b) / np.float32(3.0))
    max_rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-3)))
    result = {
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "n": n, "copy_GBps": copy_gbs, "ten_op_GBps": fused_gbs,
        "ten_op_fraction_of_copy": fused_gbs / copy_gbs, "ten_op_launches": launches,
        "cupy_fuse_ten_op_fraction_of_copy": cupy_gbs / copy_gbs,
        "host_us_per_cached_3op_1K_lazy": host_us, "host_us_cupy_elementwise_kernel": ek_us,
        "ten_op_max_err_vs_numpy_rel_or_abs_below_1e-3": max_rel, "stats": fa.stats(),
        "timings": fa.timings(),
    }
    print(json.dumps(result, indent=1, default=str))
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    main(*sys.argv[1:])
