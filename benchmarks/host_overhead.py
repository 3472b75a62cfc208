"""fusedarrays' own host time per cached evaluation, without a GPU and without the backend's costs.

Builds ``(x * y + 1.5).compute()`` on 1 K float32 and times it with the backend's launch,
allocation, address and operand-argument calls replaced by the cheapest stand-ins (what is left
is graph building, tracing, the plan or its cached recipe, argument assembly and bookkeeping).
Prints µs per call (best of several rounds) and a profile's top entries with ``--profile``.

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with config.override(BACKEND="cpu", CPU_PARALLEL=False):
        rng = np.random.default_rng(0)
        x = fa.asarray(rng.standard_normal(1024).astype(np.float32))
        y = fa.asarray(rng.standard_normal(1024).astype(np.float32))
        (x * y + 1.5).compute()          # compile (for real) before the stand-ins go in
        stub_backend()

        def call():
            (x * y + 1.5).compute()

        for _ in range(500):
            call()
        rounds = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(args.calls):
                call()
            rounds.append((time.perf_counter() - start) / args.calls * 1e6)
        print(f"fusedarrays host overhead per cached (x * y + 1.5).compute(): "
              f"{min(rounds):.1f} µs (best of {args.rounds}; median "
              f"{sorted(rounds)[len(rounds) // 2]:.1f} µs)")
        if args.profile:
            import cProfile
            import pstats

            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.calls):
                call()
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
