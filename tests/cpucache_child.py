"""A fresh process for tests/cpu/test_cpu_disk_cache.py: ``evaluate`` runs expressions of every
schedule, a fused function and its foreach on the cpu backend and checks them against NumPy;
``precompile`` compiles the same lazy expressions into the disk cache. Prints one JSON line."""

import json
import sys

import numpy as np

import fusedarrays as fa

SEED = 20261123


def expressions(m, x, y):
    """Flat, rows (a reversed view), tiled (a transpose), nd (3-D transposes); ``m`` is fa or
    NumPy."""
    return [x.reshape(-1) * 2 + 1, x[::-1] * 2 + x, x.T + y.T, m.sqrt(m.abs(x)) + x[:, ::-1],
            x.reshape(6, 50, 400).transpose(2, 0, 1) * 3]


@fa.fuse
def sgd(p, g, lr):
    p -= lr * g


def main(mode: str) -> None:
    rng = np.random.default_rng(SEED)
    a, b = (rng.standard_normal((300, 400)).astype(np.float32) for _ in range(2))
    lazy = expressions(fa, fa.asarray(a), fa.asarray(b))
    if mode == "precompile":
        report = fa.precompile(*lazy)
        print(json.dumps({"report": report, "stats": fa.stats()}))
        return
    ok = all(np.array_equal(e.get(), want) for e, want in zip(lazy, expressions(np, a, b)))
    p, ps = fa.asarray(a.copy()), [fa.asarray(a[k].copy()) for k in range(3)]
    sgd(p, fa.asarray(b), 0.5)
    sgd.foreach(ps, [fa.asarray(b[k]) for k in range(3)], 0.5)
    ok = ok and np.allclose(p.get(), a - np.float32(0.5) * b) and all(
        np.allclose(q.get(), a[k] - np.float32(0.5) * b[k]) for k, q in enumerate(ps))
    print(json.dumps({"ok": bool(ok), "stats": fa.stats()}))


if __name__ == "__main__":
    main(sys.argv[1])
