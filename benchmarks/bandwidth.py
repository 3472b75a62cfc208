"""Bandwidth of fused expressions as fractions of a device-to-device copy moving the same bytes,
with ``cupy.fuse`` and ``torch.compile`` beside them in the same run.

Cases: ``a*b+c`` over 2^26 float32 and float16; ``(x + b[None,:]) * s[:,None]`` over 4096²
float32, and the same with ``x.T``; a 10-op expression over 2^26 float32. Each is timed as a
user's loop runs it: ``out[...] = expr`` into a preallocated array, the lazy expression built,
planned (from the cache) and launched each call; at these sizes the device, not the host, bounds
the loop, so that is the kernel's time. ``out`` starts as NaN and is checked against NumPy after
timing: the timed calls wrote every element.

Usage: python benchmarks/bandwidth.py [--smoke] [--out F.json] [--commit C] [--no-peers]
"""

from __future__ import annotations

import harness  # first: it puts this checkout's package on the path
import numpy as np

import fusedarrays as fa


def cases(rng, n: int, m: int) -> dict:
    """name → (host inputs, expression over a namespace, bytes moved, target, tolerance)."""
    f32 = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    f16 = [a.astype(np.float16) for a in f32]
    x = rng.standard_normal((m, m)).astype(np.float32)
    b, s = (rng.standard_normal(m).astype(np.float32) for _ in range(2))
    views, size = 2 * m * m * 4 + 2 * m * 4, f"2^{n.bit_length() - 1}"

    def axpy(mod, a, b_, c):
        return a * b_ + c

    def rows(mod, x_, b_, s_):
        return (x_ + b_[None, :]) * s_[:, None]

    def rows_t(mod, x_, b_, s_):
        return (x_.T + b_[None, :]) * s_[:, None]

    def ten_ops(mod, a, b_, c):
        return mod.sqrt(mod.abs(a * b_ + c)) * 0.5 - mod.exp(-mod.abs(c)) + mod.maximum(a, b_) / 3.0
    return {f"a*b+c, {size} f32": (f32, axpy, 4 * n * 4, ">= 0.98", 1e-5),
            f"a*b+c, {size} f16": (f16, axpy, 4 * n * 2, ">= 0.97", 1e-2),
            f"(x + b[None,:]) * s[:,None], {m}² f32": ([x, b, s], rows, views, ">= 0.90", 1e-5),
            f"(x.T + b[None,:]) * s[:,None], {m}² f32": ([x, b, s], rows_t, views, ">= 0.93",
                                                        1e-5),
            # sqrt(|a*b + c|) near a*b + c = 0: the device contracts a*b + c into one rounding
            # (FMA), NumPy rounds twice, and the square root magnifies that last bit there
            f"10-op expression, {size} f32": (f32, ten_ops, 4 * n * 4, "—", (1e-5, 1e-3))}


def bound(mod, fn):
    def case(*args):
        return fn(mod, *args)
    case.__name__ = fn.__name__   # cupy.fuse names its kernel after the function
    return case


def cupy_call(fn, host):
    import cupy as cp

    fused, args = cp.fuse(bound(cp, fn)), [cp.asarray(h) for h in host]
    return lambda: fused(*args)


def torch_call(fn, host):
    import torch

    compiled = torch.compile(bound(torch, fn))
    args = [torch.as_tensor(h, device="cuda") for h in host]
    return lambda: compiled(*args)


def measure(run: harness.Run, name: str, host, fn, moved: int, target: str, tolerance: float):
    dev = [fa.asarray(h) for h in host]
    want = fn(np, *host)
    out = fa.full(want.shape, np.nan, want.dtype)

    def write():
        out[...] = fn(fa, *dev)
    copy = run.copy_time(moved)
    # enough calls that a batch's start (the first launch, the sync) is a small part of it:
    # 4096² cases run ~45 µs a call
    repeat = 3 if run.smoke else 50
    row = run.row(f"{name}: out[...] =, × copy", copy / run.device_time(write, repeat), target,
                  "fraction of copy", bytes_moved=moved, launches=run.launches(write))
    row.peer("cupy.fuse", lambda: copy / run.device_time(cupy_call(fn, host), repeat))
    row.peer("torch.compile", lambda: copy / run.device_time(torch_call(fn, host), repeat))
    rtol, atol = tolerance if isinstance(tolerance, tuple) else (tolerance, tolerance)
    run.check(name, out.get(), want, rtol=rtol, atol=atol)


def main() -> int:
    args = harness.arguments(__doc__.splitlines()[0]).parse_args()
    run = harness.Run("bandwidth", args)
    n, m = (1 << 12, 64) if run.smoke else (1 << 26, 4096)
    for name, case in cases(run.rng(), n, m).items():
        measure(run, name, *case)
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
