"""fusedarrays' own host time per cached call, with the backend's costs taken out: a front-end
regression shows on any laptop, no GPU needed (pytest-benchmark).

The active backend's ``launch``, ``direct_launch``, ``alloc``, ``address`` and ``operand_arg``
are replaced by the cheapest stand-ins, so what is timed is graph building, views, the plan's
cached recipe, argument packing and bookkeeping. Each statement runs for real first and is
checked against NumPy; the fused functions timed are traced after the stand-ins go in (a packer
keeps the backend methods it was made with).

Run: python -m pytest benchmarks -q   (``--benchmark-autosave``, then ``--benchmark-compare``
against an earlier run); or as a script, with the run's JSON and ``--profile``:
python benchmarks/test_host_overhead.py [--smoke] [--profile] [--out F.json]
"""

from __future__ import annotations

import contextlib

import harness  # first: it puts this checkout's package on the path
import numpy as np
import pytest
from lazy_front_end import bs, op_count

import fusedarrays as fa

ADDRESS = 0x7F00_0000_0000   # as a pool allocation would be: 256-byte aligned
STATEMENTS = {"cached (x*y + z*2).compute(), 1 K f32": "lazy",
              "cached out[...] = (x + b[None,:]) * s[:,None], 256² f32": "view_write",
              "cached out[...] = (x.T + b[None,:]) * s[:,None], 256² f32": "view_write_t",
              "build Black-Scholes' graph (not evaluated), 1 K f32": "build",
              "cached fa.fuse call returning x*y + z*2 (a new array), 1 K f32": "fused",
              "cached fa.fuse call writing out[...] = x*y + z*2, 1 K f32": "fused_in_place"}


def expression(x, y, z):
    return x * y + z * 2


def in_place(out, x, y, z):
    out[...] = x * y + z * 2


class Statements:
    """The statements timed, over inputs from ``seed``; ``check(compare)`` runs each for real."""

    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)
        self.host = [rng.standard_normal(1024).astype(np.float32) for _ in range(3)]
        self.x, self.y, self.z = (fa.asarray(h) for h in self.host)
        self.out = fa.empty(1024, np.float32)
        m = 256
        self.views = [rng.standard_normal((m, m)).astype(np.float32),
                      rng.standard_normal(m).astype(np.float32),
                      rng.standard_normal(m).astype(np.float32)]
        self.xm, self.b, self.s = (fa.asarray(h) for h in self.views)
        self.out_m = fa.empty((m, m), np.float32)
        self.market = bs.inputs(1024, seed)
        self.options = [fa.asarray(v) for v in self.market.values()]
        self.trace()

    def trace(self) -> None:
        """New fused functions, traced at their first call under the backend of that moment."""
        self.new_array, self.in_place = fa.fuse(expression), fa.fuse(in_place)

    def calls(self) -> dict:
        return {name: getattr(self, method) for name, method in STATEMENTS.items()}

    def lazy(self):
        return (self.x * self.y + self.z * 2).compute()

    def view_write(self):
        self.out_m[...] = (self.xm + self.b[None, :]) * self.s[:, None]

    def view_write_t(self):
        self.out_m[...] = (self.xm.T + self.b[None, :]) * self.s[:, None]

    def build(self):
        return bs.prices(fa, *self.options)

    def fused(self):
        return self.new_array(self.x, self.y, self.z)

    def fused_in_place(self):
        self.in_place(self.out, self.x, self.y, self.z)

    def check(self, check) -> None:
        """Each statement for real (the backend as it is), against NumPy, through ``check(name,
        got, want, rtol, atol)``; the kernels are compiled here, before any stand-in."""
        x, y, z = self.host
        want = x * y + z * np.float32(2)
        check("lazy", self.lazy().get(), want, 1e-6, 1e-6)
        check("fa.fuse new array", self.fused().get(), want, 1e-6, 1e-6)
        self.fused_in_place()
        check("fa.fuse in place", self.out.get(), want, 1e-6, 1e-6)
        xm, b, s = self.views
        self.view_write()
        check("out[...] = (x + b) * s", self.out_m.get(), (xm + b[None, :]) * s[:, None], 1e-6, 0)
        self.view_write_t()
        check("out[...] = (x.T + b) * s", self.out_m.get(), (xm.T + b[None, :]) * s[:, None],
              1e-6, 0)
        for got, ref in zip(fa.compute(*self.build()), bs.prices(np, *self.market.values())):
            check("Black-Scholes", got.get(), ref, 1e-4, 2e-3)


@contextlib.contextmanager
def stand_ins():
    """The active backend's ``launch``, ``direct_launch``, ``alloc``, ``address`` and
    ``operand_arg`` (the backend seam) replaced by the cheapest stand-ins inside a ``with``
    block."""
    storage = np.empty(4096, np.uint8)
    methods = {"launch": lambda kernel, n, args, geometry=(): None,
               # a launch record's prepared launch (cuda's C launch): queued, as None says
               "direct_launch": lambda kernel, n, geometry: ((lambda config, n, args: None), ()),
               "alloc": lambda nbytes: storage,
               "address": lambda storage: ADDRESS,
               "operand_arg": lambda storage, dtype, offset: ADDRESS + offset}
    backend = harness.backend()
    vars(backend).update(methods)
    _unprepare_records()     # records made before ask the stand-in
    try:
        yield backend
    finally:
        for name in methods:
            del vars(backend)[name]   # the class's methods again
        _unprepare_records()     # and now the backend itself again


def _unprepare_records() -> None:
    """Each launch record asks its backend for a prepared launch again at its next launch."""
    for record in harness.launch_records():
        record.direct = None


@pytest.fixture(scope="module")
def statements():
    found = Statements(seed=0)

    def check(name, got, want, rtol, atol):
        result = harness.compare(got, want, rtol, atol)
        assert result["ok"], (name, result)
    found.check(check)
    with stand_ins():
        found.trace()
        yield found


@pytest.mark.parametrize("name", list(STATEMENTS), ids=list(STATEMENTS.values()))
def test_host_overhead(benchmark, statements, name):
    benchmark(statements.calls()[name])


def main() -> int:
    parser = harness.arguments(__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="and a profile of each statement")
    args = parser.parse_args()
    run = harness.Run("test_host_overhead", args)
    calls, rounds = (200, 2) if run.smoke else (args.calls, args.rounds)
    found = Statements(run.seed)
    found.check(run.check)
    ops = op_count()
    with stand_ins():
        found.trace()
        for name, call in found.calls().items():
            seconds = harness.device_time(call, calls, batches=rounds)   # stubbed: nothing to sync
            run.row(f"{name} (stubbed)", seconds * 1e6, "—", "µs")
            if STATEMENTS[name] == "build":
                run.row("build Black-Scholes' graph, per op", seconds * 1e6 / ops, "<= 1",
                        "µs per op", ops=ops)
        if args.profile:
            import cProfile
            import pstats

            for name, call in found.calls().items():
                print(f"\n--- profile: {name}")
                with cProfile.Profile() as profile:
                    for _ in range(calls):
                        call()
                pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
