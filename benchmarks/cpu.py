"""The cpu backend against NumPy and numexpr, on this machine, in the same run (issue #36 item 4).

Every figure is a speed ratio against NumPy doing the same work: NumPy's time / fusedarrays' time
(above 1: fusedarrays is faster); numexpr is a peer in the same unit. Each row's contenders
alternate within each round (the host's speed drifts, and other work shares it), each timed as
the best of its batches over the rounds; the µs of each are in the row's details.

- ``a*b+c`` float32, a lazy ``(a * b + c).compute()`` into a new array, at 1 K (the fixed cost of
  a cached evaluation), 10^4, 10^6 and 10^7 elements;
- a 10-op expression with ``sqrt``, ``exp`` and ``sin`` at 10^4 and 10^6 float32 elements;
- a (2000, 300) float32 pipeline: normalise each row, clip, row softmax, mask the small
  probabilities, cumulative sum along rows (numexpr's peer: numexpr for the elementwise parts,
  NumPy for the reductions and the scan, which numexpr lacks);
- one AdamW step over 5 float32 tensors (``fa.fuse`` + ``foreach``, one launch) against NumPy's
  in-place ufunc calls and numexpr's ``evaluate(out=)`` per tensor.

Results are checked against NumPy after timing. numexpr is optional: without it its peers are
recorded as not installed. Usage:
python benchmarks/cpu.py [--smoke] [--out F.json] [--commit C] [--no-peers] [--rounds N]
"""

from __future__ import annotations

import time

import harness  # first: it puts this checkout's package on the path
import numpy as np

import fusedarrays as fa

UNIT = "× NumPy's speed"
ADAMW = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2)


def batch_seconds(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def race(run: harness.Run, contenders: dict, rounds: int) -> dict[str, float]:
    """Seconds per call of each contender: rounds in which every contender runs one batch of
    about 20 ms (the contenders alternating), the best batch of each."""
    calls = {}
    for name, fn in contenders.items():
        fn()   # the first calls compile (or load) fusedarrays' kernels; the second of a large
        fn()   # one makes the thread pool: the batch size is set from the calls after them
        once = min(batch_seconds(fn, 1) for _ in range(3))
        calls[name] = max(1, min(20_000, int((0.002 if run.smoke else 0.02) / max(once, 1e-7))))
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for name, fn in contenders.items():
            best[name] = min(best[name], batch_seconds(fn, calls[name]))
    return best


def row(run: harness.Run, figure: str, contenders: dict, target: str, rounds: int,
        **details) -> dict[str, float]:
    """Race ``contenders`` (``fusedarrays``, ``numpy`` and, where given, peers) and record the
    row; the peers' figures in the same unit."""
    names = [n for n in contenders if n in ("fusedarrays", "numpy") or run.peers]
    # each row starts with no block kept from an earlier row's sizes (which would change how
    # malloc serves the peers' temporaries)
    fa.free_cached_memory()
    best = race(run, {n: contenders[n] for n in names}, rounds)
    us = {f"{n}_us": round(t * 1e6, 3) for n, t in best.items()}
    r = run.row(figure, best["numpy"] / best["fusedarrays"], target, UNIT, **us, **details)
    for name in contenders:
        if name not in ("fusedarrays", "numpy"):
            r.peer(name, lambda name=name: best["numpy"] / best[name])
    return best


def numexpr():
    import numexpr as ne  # ImportError: the peer is recorded as not installed

    return ne


def evaluate(expr: str, **names):
    return lambda: numexpr().evaluate(expr, local_dict=names)


def abc(run: harness.Run, n: int, rounds: int) -> None:
    rng = run.rng()
    A, B, C = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    a, b, c = (fa.asarray(x) for x in (A, B, C))
    target = ">= 0.25" if n < 10_000 else ">= 1" if n < 1_000_000 else ">= 2"
    row(run, f"a*b+c, {n:.0e} float32, lazy .compute()".replace("e+0", "e"),
        {"fusedarrays": lambda: (a * b + c).compute(), "numpy": lambda: A * B + C,
         "numexpr": evaluate("a * b + c", a=A, b=B, c=C)}, target, rounds, elements=n)
    run.check(f"a*b+c at {n}", (a * b + c).get(), A * B + C)


def ten_ops(m, a, b, c):
    """sqrt(|a|) * exp(-b*b) + sin(c) * 2 - a / (1 + b*b): 10 ops (b*b once)."""
    bb = b * b
    return m.sqrt(m.abs(a)) * m.exp(-bb) + m.sin(c) * 2.0 - a / (1.0 + bb)


def ten(run: harness.Run, n: int, rounds: int) -> None:
    rng = run.rng()
    A, B, C = (rng.standard_normal(n).astype(np.float32) * 3 for _ in range(3))
    a, b, c = (fa.asarray(x) for x in (A, B, C))
    row(run, f"10 ops with sqrt exp sin, {n:.0e} float32, lazy".replace("e+0", "e"),
        {"fusedarrays": lambda: ten_ops(fa, a, b, c).compute(),
         "numpy": lambda: ten_ops(np, A, B, C),
         "numexpr": evaluate("sqrt(abs(a)) * exp(-(b * b)) + sin(c) * 2 - a / (1 + b * b)",
                             a=A, b=B, c=C)},
        ">= 1" if n < 1_000_000 else ">= 2", rounds, elements=n)
    run.check(f"10 ops at {n}", ten_ops(fa, a, b, c).get(), ten_ops(np, A, B, C),
              rtol=2e-6, atol=2e-6)


def pipeline(m, x):
    """Normalise rows, clip, row softmax, mask probabilities below 1/width, cumsum along rows."""
    z = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
    z = m.clip(z, -3.0, 3.0)
    e = m.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return m.cumsum(m.where(p > 1.0 / x.shape[1], p, 0.0), axis=1)


def pipeline_numexpr(x):
    ne = numexpr()
    z = ne.evaluate("(x - mean) / std", local_dict={
        "x": x, "mean": x.mean(axis=1, keepdims=True), "std": x.std(axis=1, keepdims=True)})
    z = ne.evaluate("where(z < -3, -3, where(z > 3, 3, z))", local_dict={"z": z})
    e = ne.evaluate("exp(z - zmax)", local_dict={"z": z, "zmax": z.max(axis=1, keepdims=True)})
    p = ne.evaluate("e / s", local_dict={"e": e, "s": e.sum(axis=1, keepdims=True)})
    w = np.float32(1.0 / x.shape[1])
    return np.cumsum(ne.evaluate("where(p > w, p, 0)", local_dict={"p": p, "w": w}), axis=1)


def softmax_pipeline(run: harness.Run, shape: tuple, rounds: int) -> None:
    X = run.rng().standard_normal(shape).astype(np.float32)
    x = fa.asarray(X)
    row(run, f"normalise, clip, softmax, mask, cumsum of {shape} float32, lazy",
        {"fusedarrays": lambda: pipeline(fa, x).compute(), "numpy": lambda: pipeline(np, X),
         "numexpr": lambda: pipeline_numexpr(X)}, ">= 1", rounds, shape=list(shape),
        launches=run.launches(lambda: pipeline(fa, x).compute()))
    run.check("softmax pipeline", pipeline(fa, x).get(), pipeline(np, X), rtol=1e-4, atol=1e-5)


def adamw(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step):
    """torch's AdamW: decoupled weight decay, then Adam's bias-corrected step, all in place."""
    p *= 1 - lr * weight_decay
    m[...] = beta1 * m + (1 - beta1) * g
    v[...] = beta2 * v + (1 - beta2) * g * g
    step_size = lr / (1 - beta1 ** step)
    denom = np.sqrt(v) / (1 - beta2 ** step) ** 0.5 + eps
    p -= step_size * (m / denom)


ADAMW_NE = ("p * (1 - lr * wd) - step_size * ((beta1 * m + (1 - beta1) * g)"
            " / (sqrt(beta2 * v + (1 - beta2) * g * g) / bc2 + eps))")


def numexpr_adamw(tensors, step):
    ne, k = numexpr(), ADAMW
    names = dict(lr=k["lr"], wd=k["weight_decay"], beta1=k["beta1"], beta2=k["beta2"],
                 eps=k["eps"], step_size=k["lr"] / (1 - k["beta1"] ** step),
                 bc2=(1 - k["beta2"] ** step) ** 0.5)
    for p, g, m, v in tensors:   # p reads the old m and v: written first, then m and v
        ne.evaluate(ADAMW_NE, local_dict={**names, "p": p, "g": g, "m": m, "v": v}, out=p)
        ne.evaluate("beta1 * m + (1 - beta1) * g", local_dict={**names, "m": m, "g": g}, out=m)
        ne.evaluate("beta2 * v + (1 - beta2) * g * g", local_dict={**names, "v": v, "g": g},
                    out=v)


def adamw_state(rng, sizes):
    return [[rng.standard_normal(n).astype(np.float32) for _ in range(3)]
            + [np.abs(rng.standard_normal(n)).astype(np.float32)] for n in sizes]


def adamw_step(run: harness.Run, sizes: list[int], rounds: int) -> None:
    fused = fa.fuse(adamw)
    host = adamw_state(run.rng(), sizes)
    lists = [[fa.asarray(t[k]) for t in host] for k in range(4)]
    # every contender steps its own copy at a fixed step count: the same work each call
    numpy_copy, ne_copy = ([[a.copy() for a in t] for t in host] for _ in range(2))
    row(run, f"AdamW step over {len(sizes)} float32 tensors ({sum(sizes)} params), "
        "fa.fuse foreach",
        {"fusedarrays": lambda: fused.foreach(*lists, **ADAMW, step=10),
         "numpy": lambda: [adamw(*t, **ADAMW, step=10) for t in numpy_copy],
         "numexpr": lambda: numexpr_adamw(ne_copy, 10)},
        ">= 1" if sum(sizes) < 1_000_000 else ">= 2", rounds, sizes=sizes,
        launches=run.launches(lambda: fused.foreach(*lists, **ADAMW, step=10)))
    fresh = adamw_state(run.rng(), sizes)
    arrays = [[fa.asarray(a) for a in t] for t in fresh]
    for k in range(1, 4):
        fused.foreach(*([t[j] for t in arrays] for j in range(4)), **ADAMW, step=k)
        for t in fresh:
            adamw(*t, **ADAMW, step=k)
    run.check("AdamW foreach", np.concatenate([t[0].get() for t in arrays]),
              np.concatenate([t[0] for t in fresh]), rtol=1e-5, atol=1e-6)


def main() -> int:
    parser = harness.arguments(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of alternating batches")
    args = parser.parse_args()
    run = harness.Run("cpu", args)
    rounds = 2 if run.smoke else args.rounds
    try:
        run.env["numexpr"] = f"{numexpr().__version__}, {numexpr().get_num_threads()} threads"
    except ImportError:
        run.env["numexpr"] = "not installed"
    run.env["cpu_parallel"] = fa.config.get("CPU_PARALLEL")
    for n in (1000, 10_000) if run.smoke else (1000, 10_000, 10**6, 10**7):
        abc(run, n, rounds)
    for n in (10_000,) if run.smoke else (10_000, 10**6):
        ten(run, n, rounds)
    softmax_pipeline(run, (40, 30) if run.smoke else (2000, 300), rounds)
    adamw_step(run, [300, 1000, 50, 700, 2000] if run.smoke else
               [300_000, 1_000, 200_000, 50_000, 450_000], rounds)
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
