"""fusedarrays' own host time per cached evaluation, without a GPU and without the backend's costs.

Two statements, each timed with the backend's launch, allocation, address and operand-argument
calls replaced by the cheapest stand-ins (what is left is graph building, views, tracing, the
plan or its cached recipe, argument assembly and bookkeeping):

- ``(x * y + 1.5).compute()`` on 1 K float32 (a new result each call);
- ``out[...] = (x + b[None, :]) * s[:, None]`` and the same with ``x.T``, on 256² float32 (an
  in-place write through three basic-indexing views; the launch is stubbed, so the size only
  has to make the views real);
- a cached ``@fa.fuse`` call on 1 K float32 returning ``x * y + 1.5`` (a new array each call),
  and the same function writing it into ``out`` in place (the difference is what a new output
  costs: allocation, its buffer, its leaf node and its array).

Prints µs per call (best of several rounds) and, with ``--profile``, a profile's top entries for
each statement. The stand-in allocation hands out one NumPy buffer; with ``--pool`` allocations go
through the cuda backend's own ``alloc`` (``cuda/memory.py``: its block cache, ``DeviceStorage``
and the free when an array dies) over a made-up pool, which needs ``cuda.core`` but no GPU.
The fused functions are traced after the stand-ins go in (their argument packers keep the
backend's methods they were made with).

Usage: python benchmarks/host_overhead.py [--calls 5000] [--rounds 7] [--profile] [--pool]
"""

from __future__ import annotations

import argparse
import importlib
import time

import numpy as np

import fusedarrays as fa
from fusedarrays import config


def stub_backend(pool: bool = False):
    backend = importlib.import_module("fusedarrays.runtime.backend").get_backend()
    storage = np.empty(4096, np.uint8)
    backend.launch = lambda kernel, n, args, geometry=(): None
    backend.alloc = lambda nbytes: storage
    backend.address = lambda storage: 0x7F00_0000_0000       # as a pool allocation: aligned
    backend.operand_arg = lambda storage, dtype, offset: 0x7F00_0000_0000 + offset * 4
    if pool:
        from fusedarrays.cuda.backend import CudaBackend
        from fusedarrays.cuda.memory import DeviceStorage

        cuda = CudaBackend.__new__(CudaBackend)   # its memory methods, over a made-up pool
        cuda._pool = MadeUpPool()
        backend.alloc, backend.alloc_align = cuda.alloc, cuda.alloc_align
        backend.operand_arg = lambda storage, dtype, offset: (
            storage.ptr if type(storage) is DeviceStorage else 0x7F00_0000_0000) + offset * 4
    return backend


class MadeUpPool:
    """Hands out ``cuda.core`` buffers over made-up addresses (nothing is dereferenced)."""

    def __init__(self):
        self.next = 0x7F00_0000_0000

    def allocate(self, size, stream=None):
        from cuda.core import Buffer

        self.next += size
        return Buffer.from_handle(self.next - size, size)


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


def fused_calls(rng):
    """name → a cached ``fa.fuse`` call on 1 K float32 (traced on its first call)."""
    x = fa.asarray(rng.standard_normal(1024).astype(np.float32))
    y = fa.asarray(rng.standard_normal(1024).astype(np.float32))
    out = fa.empty(1024, np.float32)

    @fa.fuse
    def new_array(x, y):
        return x * y + 1.5

    @fa.fuse
    def in_place(out, x, y):
        out[...] = x * y + 1.5

    return {"fa.fuse call returning x * y + 1.5 (a new array), 1 K": lambda: new_array(x, y),
            "fa.fuse call writing out[...] = x * y + 1.5, 1 K": lambda: in_place(out, x, y)}


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
    parser.add_argument("--pool", action="store_true",
                        help="allocate through the cuda backend's block cache (needs cuda.core)")
    args = parser.parse_args()
    with config.override(BACKEND="cpu", CPU_PARALLEL=False):
        cases = statements(np.random.default_rng(0))
        for call in cases.values():
            call()                       # compile (for real) before the stand-ins go in
        stub_backend(args.pool)
        cases.update(fused_calls(np.random.default_rng(1)))
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
