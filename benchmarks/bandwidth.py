"""Bandwidth of fused kernels as fractions of a device-to-device copy, measured in one run.

Cases (issue 4): ``a*b+c`` over 2^26 float32 and float16; ``(x + b[None,:]) * s[:,None]`` over
4096² float32, and the same with ``x.T``; plus a 10-op expression. Fractions are of a copy of
2^26 float32 (``vs 2^26 copy``, the reference of the project's targets) and of a copy as large as
the case's output (``vs same-size copy``: a 64 MB copy runs slower than a 256 MB one, so this is
the like-for-like figure for the 4096² cases). Each case is timed two ways:
``kernel`` launches the already-planned kernel back to back (device time of the kernel alone) and
``call`` builds, plans and launches the lazy expression each time, storing into a preallocated
array (what a user's loop costs).
CuPy's ``cupy.fuse`` and ``torch.compile`` run side by side where installed. Median of 15 batches of
10 back-to-back calls, wall clock between device-wide synchronisations (CUDA events recorded on
one library's stream did not bound work queued by another in a first version of this script).

Usage: python benchmarks/bandwidth.py [out.json]
"""

import functools
import json
import statistics
import sys
import time

import numpy as np

import fusedarrays as fa
from fusedarrays.compiler.plan import plan_kernel
from fusedarrays.ir import layout
from fusedarrays.runtime import realize as runtime
from fusedarrays.runtime.backend import new_buffer


def median_ms(fn, sync, event=None, repeat=15, batch=10):
    """Median wall time per call of ``batch`` back-to-back calls, the device synchronised (every
    stream) before and after each batch: the host work of one call overlaps the kernel of the
    previous one, and no library's choice of stream can hide work from the clock."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times) / batch


def kernel_only(lazy):
    """A closure launching ``lazy``'s planned kernel into a preallocated output, and a function
    returning that output (to check that the timed launches wrote every element)."""
    node = lazy._resolved()
    backend = fa.array._backend_of(node)
    out = new_buffer(backend, layout.size_of(node.shape) * node.dtype.itemsize)
    poison = np.full(node.shape, np.nan, node.dtype)
    backend_poison = backend.from_host(poison)
    backend.synchronize()
    from fusedarrays.cuda import memory
    memory.copy(out.storage, backend_poison, poison.nbytes)
    plan = plan_kernel([(node, (out, node.dtype, node.shape,
                                layout.contiguous_strides(node.shape), 0))])
    kernel = runtime.kernel_for(plan, backend)
    args = [backend.operand_arg(o.buffer.storage, o.dtype, o.offset if o.layout == "C" else 0)
            for o in plan.operands] + plan.int_args()
    args += [runtime.scalar_arg(v, dt) for v, dt in plan.scalars]
    geometry = plan.geometry()

    def result():
        backend.synchronize()
        return backend.to_host(out.storage, node.dtype, plan.size, 0).reshape(node.shape)
    return (lambda: backend.launch(kernel, plan.size, args, geometry)), plan, result


def cases(rng):
    n = 1 << 26
    f32 = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    f16 = [a.astype(np.float16) for a in f32]
    m = 4096
    x = rng.standard_normal((m, m)).astype(np.float32)
    b, s = rng.standard_normal(m).astype(np.float32), rng.standard_normal(m).astype(np.float32)
    return {
        "a*b+c f32": (f32, lambda mod, a, b_, c: a * b_ + c, 4 * n * 4),
        "a*b+c f16": (f16, lambda mod, a, b_, c: a * b_ + c, 4 * n * 2),
        "(x+b[None,:])*s[:,None] f32": ([x, b, s], lambda mod, x_, b_, s_:
                                        (x_ + b_[None, :]) * s_[:, None], 2 * m * m * 4),
        "(x.T+b[None,:])*s[:,None] f32": ([x, b, s], lambda mod, x_, b_, s_:
                                          (x_.T + b_[None, :]) * s_[:, None], 2 * m * m * 4),
        "10-op f32": (f32, lambda mod, a, b_, c: mod.sqrt(mod.abs(a * b_ + c)) * 0.5
                      - mod.exp(-mod.abs(c)) + mod.maximum(a, b_) / 3.0, 4 * n * 4),
    }


def _call(fn, dev, out):
    # Into a preallocated array: rebuilding an expression of unchanged arrays with no scalar
    # would return the remembered result of the same (hash-consed) node and launch nothing.
    out[...] = fn(fa, *dev)


def _for(mod, fn):
    def fused_case(*args):  # cupy.fuse wants a named function
        return fn(mod, *args)
    return fused_case


def main(path=None):
    import cupy as cp
    try:
        import torch
    except ImportError:
        torch = None
    rng = np.random.default_rng()
    ev = cp.cuda.Event
    sync = cp.cuda.Device().synchronize
    n = 1 << 26
    src = cp.asarray(rng.standard_normal(n).astype(np.float32))
    dst = cp.empty_like(src)
    copy_ms = median_ms(lambda: cp.copyto(dst, src), sync, ev)
    copy_bw = 2 * n * 4 / copy_ms / 1e6
    rows = {"copy GB/s": copy_bw}
    for name, (host, fn, nbytes) in cases(rng).items():
        dev = [fa.asarray(h) for h in host]
        lazy = fn(fa, *dev)
        got = lazy.get()
        want = fn(np, *host)
        err = float(np.max(np.abs(got.astype(np.float64) - want) /
                           np.maximum(np.abs(want.astype(np.float64)), 1e-2)))
        launch, plan, written = kernel_only(fn(fa, *dev))
        same = cp.empty(got.nbytes // 4, np.float32)
        same_out = cp.empty_like(same)
        same_bw = 2 * same.nbytes / median_ms(functools.partial(cp.copyto, same_out, same),
                                               sync, ev) / 1e6

        def frac(call, nbytes=nbytes):
            return nbytes / median_ms(call, sync, ev) / 1e6 / copy_bw
        kernel_frac = frac(launch)
        if not np.array_equal(written(), got, equal_nan=True):
            raise AssertionError(f"{name}: the timed kernel did not write what .get() returned")
        row = {"kernel": kernel_frac, "call": frac(functools.partial(_call, fn, dev,
                                                                   fa.empty(got.shape, got.dtype))),
               "vector_width": plan.vector_width, "schedule": plan.schedule,
               "max_rel_err": err, "same_size_copy_GBps": same_bw,
               "kernel_vs_same_size_copy": kernel_frac * copy_bw / same_bw}
        cdev = [cp.asarray(h) for h in host]
        try:
            fused = cp.fuse(_for(cp, fn))
            row["cupy.fuse"] = frac(functools.partial(fused, *cdev))
        except Exception as exc:  # cupy.fuse refuses some indexing: report, don't hide
            row["cupy.fuse"] = f"failed: {type(exc).__name__}"
        if torch is not None:
            tdev = [torch.as_tensor(h, device="cuda") for h in host]
            compiled = torch.compile(_for(torch, fn))
            row["torch.compile"] = frac(functools.partial(compiled, *tdev))
        rows[name] = row
        print(name, row, flush=True)
    print(json.dumps(rows, indent=1))
    print(f"\n{'case':31s} {'V':>2s} {'kernel':>7s} {'same':>7s} {'call':>7s} {'cupy':>7s} "
          f"{'torch':>7s}   (fractions of the 2^26 copy; same = kernel vs same-size copy)")
    for name, row in rows.items():
        if isinstance(row, dict):
            cells = [row.get(k) for k in ("kernel", "kernel_vs_same_size_copy", "call",
                                          "cupy.fuse", "torch.compile")]
            text = " ".join(f"{c:7.3f}" if isinstance(c, float) else f"{str(c)[:7]:>7s}"
                            for c in cells)
            print(f"{name:31s} {row['vector_width']:2d} {text}")
    print(f"copy: {copy_bw:.0f} GB/s (bytes read + written)")
    if path:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
