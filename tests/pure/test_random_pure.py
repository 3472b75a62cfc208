"""fa.random without numba: the Philox4x32-10 helper against Random123's known answers, the plan
of a fused draw (no operand for the noise; seeds and keys are parameters, not key parts)."""

import math
from fractions import Fraction

import numpy as np

from fusedarrays.compiler import devicelib, render
from fusedarrays.compiler.plan import plan_kernel
from fusedarrays.ir import graph, layout

KAT = [((0, 0, 0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 6, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


def _helpers() -> dict:
    """The helpers over plain NumPy scalars (casts wrap as C casts do; fma exact)."""
    ns = {"math": math}
    for code in ("i32", "i64", "u32", "u64", "f32", "f64"):
        dtype = np.dtype({"i32": "int32", "i64": "int64", "u32": "uint32", "u64": "uint64",
                          "f32": "float32", "f64": "float64"}[code])
        ns[f"cv_{code}"] = lambda x, dtype=dtype: np.asarray(x).astype(dtype)[()]
    ns["fa_fma_f64"] = lambda a, b, c: np.float64(float(Fraction(float(a)) * Fraction(float(b))
                                                        + Fraction(float(c))))
    ns["fa_fma_f32"] = _fma32
    exec(devicelib.helper_source(), ns)
    return ns


def _fma32(a, b, c):
    """float32 fma: the exact value rounded once (to nearest, ties to even)."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = np.float32(float(exact))
    around = [near, np.nextafter(near, np.float32(-np.inf)), np.nextafter(near, np.float32(np.inf))]
    return min(around, key=lambda v: (abs(Fraction(float(v)) - exact),
                                      int(v.view(np.uint32)) & 1))


def test_philox_known_answers():
    ns = _helpers()
    with np.errstate(over="ignore"):
        for args, expected in KAT:
            words = ns["fa_philox"](*[np.uint32(a) for a in args])
            assert tuple(int(w) for w in words) == expected, [hex(int(w)) for w in words]


def test_box_muller_matches_libm():
    ns = _helpers()
    rng = np.random.default_rng(130)
    with np.errstate(over="ignore"):
        near_one = [[2**32 - 1 - d, 12345] for d in (1, 5, 1000, 2**20)]   # u near 1
        for a, b in (rng.integers(0, 2**32, (50, 2)).tolist() + [[0, 0], [2**32 - 1, 2**31]]
                     + near_one):
            r = math.sqrt(-2.0 * math.log((a + 1) / 2**32))
            theta = 2.0 * math.pi * b / 2**32
            got = ns["fa_bm"](np.uint32(a), np.uint32(b))
            assert math.isclose(got[0], r * math.cos(theta), rel_tol=1e-14, abs_tol=1e-14)
            assert math.isclose(got[1], r * math.sin(theta), rel_tol=1e-14, abs_tol=1e-14)
            # float32 work: within 4 float32 ulps of the radius (2.5 seen over 3000 pairs)
            got = ns["fa_bm_f32"](np.uint32(a), np.uint32(b))
            assert all(isinstance(v, np.float32) for v in got)
            assert abs(float(got[0]) - r * math.cos(theta)) <= 4 * r * 2**-24
            assert abs(float(got[1]) - r * math.sin(theta)) <= 4 * r * 2**-24


class FakeBuffer:
    align = 256

    def __init__(self):
        self.uid = graph.new_uid()


def _noise_plan(n, seed, key):
    x = graph.leaf(FakeBuffer(), np.dtype("float32"), (n,), (1,), 0)
    u64 = np.dtype("uint64")
    draw = graph.random("normal", np.float32, ((n,), (1,), 0),
                        (graph.scalar(seed, u64), graph.scalar(key, u64)))
    node = graph.op("add", (x, draw), (np.dtype("float32"),) * 3)
    out = (FakeBuffer(), np.dtype("float32"), (n,), layout.contiguous_strides((n,)), 0)
    return plan_kernel([(node, out)])


def test_a_draw_is_no_operand_and_its_seed_is_a_parameter():
    plan = _noise_plan(4096, 1, 0)
    assert [o.output for o in plan.operands] == [False, True]
    assert [i.kind for i in plan.body].count("random") == 1
    assert plan.key == _noise_plan(1000, 2**63 + 5, 17).key
    source = render(plan, "cuda")
    assert "fa_philox_at" in source and "ldv4_f32" in source
    assert "fa_rand_normal" in render(plan, "cpu")
