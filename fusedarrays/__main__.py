"""``python -m fusedarrays``: a short demo, checked against NumPy.

A 10-op expression and an in-place Adam step on 10^6 float32 elements, each one kernel launch;
prints the backend, kernels compiled and launched, compile and run times, and the generated source.
"""

from __future__ import annotations

import time

import numpy as np

import fusedarrays as fa

from .ir import native


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main() -> int:
    n = 1_000_000
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    x, y, z = fa.asarray(a), fa.asarray(b), fa.asarray(c)
    print(f"backend: {fa.backend()}; lazy expressions built "
          + ("in C" if native.NATIVE else "in Python (FUSEDARRAYS_NATIVE=0, or the C "
             "extension is not built where this fusedarrays is: python -m pip install -e .)"))

    def ten_ops():
        return (fa.sqrt(fa.abs(x * y + z)) * 0.5 - fa.exp(-fa.abs(z))
                + fa.maximum(x, y) / 3.0).get()
    fa.reset_stats()
    got, first = _timed(ten_ops)
    _, again = _timed(ten_ops)
    want = (np.sqrt(np.abs(a * b + c)) * np.float32(0.5) - np.exp(-np.abs(c))
            + np.maximum(a, b) / np.float32(3.0))
    ok = np.allclose(got, want, rtol=1e-5, atol=2e-5)
    print(f"10-op expression: {'matches NumPy' if ok else 'DIFFERS FROM NumPy'}; "
          f"first call {first * 1e3:.1f} ms (compile included), cached call {again * 1e3:.2f} ms")

    # Adam, in place: p, m, v updated by one kernel per step (the state is read before it is
    # overwritten, element by element).
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    p, g = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    m, v = np.zeros(n, np.float32), np.zeros(n, np.float32)
    fp, fg, fm, fv = (fa.asarray(t) for t in (p, g, m, v))
    for step in (1, 2, 3):
        fm[...] = b1 * fm + (1 - b1) * fg
        fv[...] = b2 * fv + (1 - b2) * fg * fg
        fp -= lr * (fm / (1 - b1**step)) / (fa.sqrt(fv / (1 - b2**step)) + eps)
        m = np.float32(b1) * m + np.float32(1 - b1) * g
        v = np.float32(b2) * v + np.float32(1 - b2) * g * g
        p -= np.float32(lr) * (m / np.float32(1 - b1**step)) / (
            np.sqrt(v / np.float32(1 - b2**step)) + np.float32(eps))
    adam_ok = np.allclose(fp.get(), p, rtol=1e-5, atol=1e-6)
    print(f"Adam, 3 steps in place: {'matches NumPy' if adam_ok else 'DIFFERS FROM NumPy'}")

    s, t = fa.stats(), fa.timings()
    print(f"kernels compiled: {s['compiles']}, launched: {s['launches']}, memory-cache hits: "
          f"{s['memory_hits']}, disk-cache hits: {s['disk_hits']}")
    print("time by stage: " + ", ".join(f"{k} {v[1] * 1e3:.1f} ms ×{v[0]}" for k, v in t.items()))
    print("\ngenerated kernel of the 10-op expression:\n")
    print(fa.explain(fa.sqrt(fa.abs(x * y + z)) * 0.5 - fa.exp(-fa.abs(z))
                     + fa.maximum(x, y) / 3.0).source)
    return 0 if ok and adam_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
