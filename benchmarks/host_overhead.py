"""fusedarrays' own host time per cached evaluation, without a GPU and without the backend's costs.

Two statements, each timed with the backend's launch, allocation, address and operand-argument
calls replaced by the cheapest stand-ins (what is left is graph building, views, tracing, the
plan or its cached recipe, argument assembly and bookkeeping):

- ``(x * y + 1.5).compute()`` on 1 K float32 (a new result each call);
- ``out[...] = (x + b[None, :]) * s[:, None]`` and the same with ``x.T``, on 256² float32 (an
  in-place write through three basic-indexing views; the launch is stubbed, so the size only
  has to make the views real).

Prints µs per call (best of several rounds) and, with ``--profile``, a profile's top entries for
each statement.

Usage: python benchmarks/host_overhead.py [--calls 5000] [--rounds 7] [--profile]
"""

from __future__ import annotations

import argparse
import importlib
import time

import numpy as np

import fusedarrays as fa
from fusedarrays import config


def stub_backend():
    backend = importlib.import_module("fusedarrays.backend").get_backend()
    storage = np.empty(4096, np.uint8)
    backend.launch = lambda kernel, n, args, geometry=(): None
    backend.alloc = lambda nbytes: storage
    backend.address = lambda storage: 0x7F00_0000_0000       # as a pool allocation: aligned
    backend.operand_arg = lambda storage, dtype, offset: 0x7F00_0000_0000 + offset * 4
    return backend


def statements(rng):
    """name → a function running one statement (each compiled for real once, unstubbed)."""
    x = fa.asarray(rng.standard_normal(1024).astype(np.float32))
    y = fa.asarray(rng.standard_normal(1024).astype(np.float32))
    m = 256
    xm = fa.asarray(rng.standard_normal((m, m)).astype(np.float32))
    b = fa.asarray(rng.standard_normal(m).astype(np.float32))
    s = fa.asarray(rng.standard_normal(m).astype(np.float32))
    out = fa.empty((m, m), np.float32)

    def expression():
        (x * y + 1.5).compute()

    def view_write():
        out[...] = (xm + b[None, :]) * s[:, None]

    def view_write_t():
        out[...] = (xm.T + b[None, :]) * s[:, None]

    return {"(x * y + 1.5).compute(), 1 K": expression,
            "out[...] = (x + b[None, :]) * s[:, None], 256²": view_write,
            "out[...] = (x.T + b[None, :]) * s[:, None], 256²": view_write_t}


def best_of(call, calls: int, rounds: int) -> list[float]:
    for _ in range(500):
        call()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with config.override(BACKEND="cpu", CPU_PARALLEL=False):
        cases = statements(np.random.default_rng(0))
        for call in cases.values():
            call()                       # compile (for real) before the stand-ins go in
        stub_backend()
        for name, call in cases.items():
            rounds = best_of(call, args.calls, args.rounds)
            print(f"fusedarrays host overhead per cached {name}: {min(rounds):.1f} µs "
                  f"(best of {args.rounds}; median {sorted(rounds)[len(rounds) // 2]:.1f} µs)")
        if args.profile:
            import cProfile
            import pstats

            for name, call in cases.items():
                print(f"\n--- profile: {name}")
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(args.calls):
                    call()
                profile.disable()
                pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
