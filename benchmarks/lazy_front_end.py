"""What the lazy front end costs a user: whole expressions against a copy's bandwidth, host time
per cached call, and the cost of building a graph, each beside its target.

- Black-Scholes (``tests/blackscholes.py``) over 2^24 float32: ``fa.compute(call, put)`` with the
  graph built inside the timed loop (what a user pays), as a fraction of a copy moving the same
  bytes (5 inputs and 2 outputs); the same function under ``fa.fuse``; launches per evaluation;
  peers ``torch.compile`` and ``cupy.fuse`` of the same ``prices``;
- the same Black-Scholes with its normal CDF through ``fa.special.erf`` (an exact erf, one op
  of the table): lazy and under ``fa.fuse``, launches, checked against ``scipy.special.erf``
  in float64 where SciPy is installed;
- ``(x + b[None,:]) * s[:,None]`` over 4096² float32 with ``.compute()`` (a new array each call,
  the previous one dropped) and with ``out[...] =``, and the same with ``x.T``; peer
  ``torch.compile``;
- host µs per cached lazy ``(x*y + z*2).compute()`` on 1 K float32, and per cached ``fa.fuse``
  call returning a new array for the same expression (rounds of thousands of calls, the two
  alternating; one synchronisation per round);
- host µs of one launch of Black-Scholes' kernel (its packed arguments, 48 after ``n``) through
  the C launch (``cuda/fastlaunch``) and through ``cuda.core.launch``, alternating (cuda only);
- µs per op to build (not evaluate) Black-Scholes' graph, and the cost of one more op in a lazy
  expression (built and evaluated: chains of 2k and 8k ops on one element, rounds taken in
  turn) over one NumPy ufunc call on 1-element arrays, in the same process (any backend).

Usage: python benchmarks/lazy_front_end.py [--smoke] [--out F.json] [--commit C] [--no-peers]
"""

from __future__ import annotations

import importlib.util
import os
import sys

import harness  # first: it puts this checkout's package on the path
import numpy as np

import fusedarrays as fa


def load(relative: str):
    """The module at ``relative`` (a path from the repository root), imported by path."""
    path = os.path.join(harness.REPO, relative)
    name = os.path.basename(path)[:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # torch.compile traces into functions of registered modules only
    spec.loader.exec_module(module)
    return module


bs = load("tests/blackscholes.py")   # call and put prices, one text for NumPy and fusedarrays
NAMES = ("S", "K", "T", "r", "sigma")


def bs_fused(S, K, T, r, sigma):
    return bs.prices(fa, S, K, T, r, sigma)


class Counted(np.lib.mixins.NDArrayOperatorsMixin):
    """A NumPy array that counts the ufunc calls made on it, operators included: run through a
    text written for any namespace, the count of the ops that text builds."""

    def __init__(self, value, counter):
        self.value, self.counter = value, counter

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self.counter[0] += 1
        values = [i.value if isinstance(i, Counted) else i for i in inputs]
        return Counted(getattr(ufunc, method)(*values, **kwargs), self.counter)


def op_count() -> int:
    counter = [0]
    bs.prices(np, *(Counted(v, counter) for v in bs.inputs(4, 0).values()))
    return counter[0]


def black_scholes(run: harness.Run, n: int) -> None:
    host = bs.inputs(n, run.seed)
    dev = [fa.asarray(host[k]) for k in NAMES]
    moved, size = 7 * n * 4, f"2^{n.bit_length() - 1}"
    copy = run.copy_time(moved)

    def lazy():
        fa.compute(*bs.prices(fa, *dev))
    fused = fa.fuse(bs_fused)
    repeat = 3 if run.smoke else 20
    row = run.row(f"lazy Black-Scholes fa.compute(call, put), {size} f32, × copy",
                  copy / run.device_time(lazy, repeat), ">= 0.90", "fraction of copy",
                  bytes_moved=moved)
    row.peer("torch.compile", lambda: copy / run.device_time(torch_prices(host), repeat))
    row.peer("cupy.fuse", lambda: copy / run.device_time(cupy_prices(host), repeat))
    run.row(f"the same function under fa.fuse, {size} f32, × copy",
            copy / run.device_time(lambda: fused(*dev), repeat), "—", "fraction of copy")
    run.row("launches per lazy Black-Scholes evaluation", run.launches(lazy), "== 1",
            "launches", fa_fuse_launches=run.launches(lambda: fused(*dev)))
    want = bs.prices(np, *(host[k] for k in NAMES))
    for name, got in (("lazy", fa.compute(*bs.prices(fa, *dev))), ("fa.fuse", fused(*dev))):
        for which, g, w in zip(("call", "put"), got, want):
            run.check(f"Black-Scholes {name} {which}", g.get(), w, rtol=1e-4, atol=2e-3)


def bs_erf_fused(S, K, T, r, sigma):
    return bs.prices_erf(fa, fa.special.erf, S, K, T, r, sigma)


def black_scholes_erf(run: harness.Run, n: int) -> None:
    host = bs.inputs(n, run.seed)
    dev = [fa.asarray(host[k]) for k in NAMES]
    moved, size = 7 * n * 4, f"2^{n.bit_length() - 1}"
    copy = run.copy_time(moved)

    def lazy():
        fa.compute(*bs.prices_erf(fa, fa.special.erf, *dev))
    fused = fa.fuse(bs_erf_fused)
    repeat = 3 if run.smoke else 20
    run.row(f"lazy Black-Scholes through fa.special.erf, {size} f32, × copy",
            copy / run.device_time(lazy, repeat), ">= 0.90", "fraction of copy",
            bytes_moved=moved)
    run.row(f"Black-Scholes through fa.special.erf under fa.fuse, {size} f32, × copy",
            copy / run.device_time(lambda: fused(*dev), repeat), ">= 0.95", "fraction of copy")
    run.row("launches per lazy Black-Scholes through erf", run.launches(lazy), "== 1",
            "launches", fa_fuse_launches=run.launches(lambda: fused(*dev)))
    try:
        from scipy.special import erf
    except ImportError:
        return
    want = bs.prices_erf(np, erf, *(host[k].astype(np.float64) for k in NAMES))
    got = fused(*dev)
    for which, g, w in zip(("call", "put"), got, want):
        run.check(f"Black-Scholes through erf {which}", g.get(), w, rtol=1e-4, atol=2e-4)


def torch_prices(host):
    import torch

    compiled = torch.compile(lambda *a: bs.prices(torch, *a))
    args = [torch.as_tensor(host[k], device="cuda") for k in NAMES]
    return lambda: compiled(*args)


def cupy_prices(host):
    import cupy as cp

    def prices(S, K, T, r, sigma):  # cupy.fuse wants a named function
        return bs.prices(cp, S, K, T, r, sigma)
    fused, args = cp.fuse(prices), [cp.asarray(host[k]) for k in NAMES]
    return lambda: fused(*args)


def broadcast(run: harness.Run, m: int) -> None:
    rng = run.rng()
    x = rng.standard_normal((m, m)).astype(np.float32)
    b, s = (rng.standard_normal(m).astype(np.float32) for _ in range(2))
    dx, db, ds = fa.asarray(x), fa.asarray(b), fa.asarray(s)
    moved = 2 * m * m * 4 + 2 * m * 4
    copy = run.copy_time(moved)
    repeat = 3 if run.smoke else 50
    for label, transpose, target in (("x", False, ">= 0.90"), ("x.T", True, ">= 0.88")):
        def expr(mod, x_, b_, s_, transpose=transpose):
            return ((x_.T if transpose else x_) + b_[None, :]) * s_[:, None]
        want = expr(np, x, b, s)
        row = run.row(f"({label} + b[None,:]) * s[:,None] {m}² f32 .compute(), × copy",
                      copy / run.device_time(lambda: expr(fa, dx, db, ds).compute(), repeat),
                      target, "fraction of copy", bytes_moved=moved)
        row.peer("torch.compile", lambda: copy / run.device_time(torch_broadcast(
            expr, x, b, s), repeat))
        run.check(f"{label} .compute()", expr(fa, dx, db, ds).get(), want)
        out = fa.full((m, m), np.nan, np.float32)   # every element written by the timed calls

        def write(out=out, expr=expr):
            out[...] = expr(fa, dx, db, ds)
        run.row(f"({label} + b[None,:]) * s[:,None] {m}² f32 out[...] =, × copy",
                copy / run.device_time(write, repeat), "—", "fraction of copy")
        run.check(f"{label} out[...] =", out.get(), want)


def torch_broadcast(expr, *host):
    import torch

    compiled = torch.compile(lambda *a: expr(torch, *a))
    args = [torch.as_tensor(h, device="cuda") for h in host]
    return lambda: compiled(*args)


def host_time(run: harness.Run, calls: int, rounds: int) -> None:
    rng = run.rng()
    host = [rng.standard_normal(1024).astype(np.float32) for _ in range(3)]
    x, y, z = (fa.asarray(h) for h in host)
    fused = fa.fuse(lambda x, y, z: x * y + z * 2)
    contenders = {"lazy": lambda: (x * y + z * 2).compute(), "fuse": lambda: fused(x, y, z)}
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):   # alternating, so that drift of the host touches both alike
        for name, call in contenders.items():
            best[name] = min(best[name], run.device_time(call, calls, batches=1))
    lazy, fuse = best["lazy"] * 1e6, best["fuse"] * 1e6
    run.row("host µs per cached lazy (x*y + z*2).compute(), 1 K f32", lazy, "<= 15",
            "µs", goal="<= 12", launches=run.launches(contenders["lazy"]))
    run.row("host µs per cached fa.fuse call, same expression, new array", fuse, "—", "µs",
            launches=run.launches(contenders["fuse"]))
    run.row("lazy / fa.fuse, host time per cached call", lazy / fuse, "<= 1.6", "ratio")
    want = host[0] * host[1] + host[2] * np.float32(2)
    run.check("(x*y + z*2).compute()", contenders["lazy"]().get(), want)
    run.check("fa.fuse x*y + z*2", contenders["fuse"]().get(), want)


def launch_cost(run: harness.Run, calls: int, rounds: int) -> None:
    """The launch alone: Black-Scholes' record and packed arguments, caught once, then launched
    through each route in turn (the C launch, and cuda.core's with the C one set aside)."""
    from fusedarrays.runtime import launch as runtime_launch

    dev = [fa.asarray(v) for v in bs.inputs(1024, run.seed).values()]
    caught, launch_with = [], runtime_launch.LaunchRecord.launch_with
    runtime_launch.LaunchRecord.launch_with = lambda record, *rest: caught.append((record, rest))
    try:
        fa.compute(*bs.prices(fa, *dev))
    finally:
        runtime_launch.LaunchRecord.launch_with = launch_with
    (record, (args, size, geometry)), = caught
    launcher = record.kernel
    fast = getattr(launcher, "_fast", None)
    if fast is None:
        print("  the launch alone: no C launch on this backend (cuda only), not measured")
        return
    best = {"C launch": float("inf"), "cuda.core.launch": float("inf")}
    try:
        for _ in range(rounds):
            for route in best:
                launcher._fast = fast if route == "C launch" else None
                best[route] = min(best[route], run.device_time(
                    lambda: record.backend.launch(launcher, size, args, geometry), calls, 1))
    finally:
        launcher._fast = fast
    for route, seconds in best.items():
        run.row(f"host µs per launch of Black-Scholes' kernel ({len(args) + 1} arguments), "
                f"through {route}", seconds * 1e6, "—", "µs")


def chain(a, steps: int):
    # a new pair of constants per step: equal Python numbers are one param (ir/scalarops), and
    # an op that adds one costs more than one that finds it
    for k in range(steps):
        a = a * (1.0001 + k * 1e-9) + (0.5 + k * 1e-9)
    return a


def build_cost(run: harness.Run, calls: int, steps: int) -> None:
    ops = op_count()
    print(f"  Black-Scholes builds {ops} ops (call and put together)")
    dev = [fa.asarray(v) for v in bs.inputs(1024, run.seed).values()]
    build = run.device_time(lambda: bs.prices(fa, *dev), max(calls // 20, 1))
    run.row("build Black-Scholes' graph (not evaluated), µs per op", build / ops * 1e6, "<= 1",
            "µs per op", ops=ops, build_us=build * 1e6)
    one = fa.asarray(np.full(1, 0.25, np.float32))
    # The slope between chains of k and 4k steps, each the best of rounds taken in turn, so a
    # burst of load on a shared host falls on both lengths rather than on one.
    lengths, times = (steps, 4 * steps), {}
    for _ in range(5):
        for k in lengths:
            t = run.device_time(lambda k=k: chain(one, k).compute(), max(calls // 20, 1), 2)
            times[k] = min(times.get(k, t), t)
    per_op = (times[lengths[1]] - times[lengths[0]]) / (2 * (lengths[1] - lengths[0]))
    a, b = np.ones(1, np.float32), np.ones(1, np.float32)
    ufunc = run.device_time(lambda: np.add(a, b), calls * 10)
    run.row("one more op in a lazy expression (built + evaluated) / NumPy ufunc call",
            per_op / ufunc, "<= 4", "ratio", per_op_us=per_op * 1e6, ufunc_us=ufunc * 1e6,
            chain_ops=[2 * k for k in lengths], launches=run.launches(
                lambda: chain(one, steps).compute()))
    run.check("chain", chain(one, 2 * steps).get(),
              chain(np.full(1, 0.25, np.float32), 2 * steps), rtol=1e-5)


def main() -> int:
    args = harness.arguments(__doc__.splitlines()[0]).parse_args()
    run = harness.Run("lazy_front_end", args)
    # The host-time rows first: the peers below start compiler threads and processes
    # (torch.compile's workers) that would share the host with them.
    host_time(run, 200 if run.smoke else 3000, 2 if run.smoke else 7)
    build_cost(run, 200 if run.smoke else 3000, 8 if run.smoke else 16)
    launch_cost(run, 200 if run.smoke else 2000, 2 if run.smoke else 5)
    black_scholes(run, 1 << (10 if run.smoke else 24))
    black_scholes_erf(run, 1 << (10 if run.smoke else 24))
    broadcast(run, 64 if run.smoke else 4096)
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
