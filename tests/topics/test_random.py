"""fa.random on every tier: the same numbers in every schedule and view of
tests/randomcases.py (on cpu those of a NumPy Philox4x32-10, on sim and cuda the cpu backend's
bits), and the uniform's comparisons with edge scalars.

- cpu at its defaults: the streams against a NumPy Philox4x32-10, one kernel per fused
  expression, no recompile for a new seed, distributions (moments, Kolmogorov-Smirnov against
  SciPy where installed), dtypes and errors, draws in fa.fuse, permutation.
- sim (the CUDA kernel source in the simulator): the vector walk's shared Philox blocks.
- cuda: large draws over many blocks, one launch for a fused draw, the distributions, and the
  Box-Muller intrinsics against the portable helpers for every word.
- ptx (sm_90, no GPU): Philox's products as one mul.wide.u32 each, a float32 Box-Muller's
  multiply-adds as explicit fma.rn.f32, no memory traffic for the noise; a gather's table read
  element by element beside 128-bit accesses.
"""

import re

import numpy as np
import pytest
import randomcases

import fusedarrays as fa
from fusedarrays import config


def _cpu_stream(*args, **kwargs):
    with config.override(BACKEND="cpu"):   # the reference backend for a device's bits
        return randomcases.materialised(*args, **kwargs)


def _cpu(fn):
    with config.override(BACKEND="cpu"):   # the reference backend for the device's bits
        return fn()


def test_streams_match_numpy_philox():
    for seed in (0, 7, 2**40 + 3):
        n = 1001
        rng = fa.random.default_rng(seed)
        np.testing.assert_array_equal(rng.random(n, dtype=np.float32).get(),
                                      randomcases.uniform_f32(seed, n, key=0), err_msg=f"{seed=}")
        np.testing.assert_array_equal(rng.random(n).get(),
                                      randomcases.uniform_f64(seed, n, key=1), err_msg=f"{seed=}")
        np.testing.assert_array_equal(rng.integers(-3, 2**32 - 3, n).get(),
                                      randomcases.integers(seed, n, -3, 2**32, key=2),
                                      err_msg=f"{seed=}")
        normal = rng.standard_normal(n).get()
        np.testing.assert_allclose(normal, randomcases.normal_approx(seed, n, key=3),
                                   rtol=1e-13, atol=1e-14, err_msg=f"{seed=}")
        # float32 normals: the same numbers to the accuracy of float32 work, within 4 float32
        # ulps of their pair's radius sqrt(-2 ln u)
        single = fa.random.default_rng(seed)
        for _ in range(3):
            single.random(1)
        pairs = randomcases.normal_approx(seed, n + 1, key=3)
        radius = np.repeat(np.hypot(pairs[0::2], pairs[1::2]), 2)[:n]
        error = np.abs(single.standard_normal(n, dtype=np.float32).get() - normal)
        assert np.all(error <= 4 * 2.0**-24 * radius), (seed, np.max(error / radius) * 2**24)


# Every case, a float64 normal read through a view included: on cuda a normal leaves its helper
# as an fma (philox.fa_bm_turn), never a bare product NVVM could contract with the consumer's sum.
@pytest.mark.tiers("cpu", "sim", "cuda")
@pytest.mark.parametrize("case", randomcases.CASES, ids=lambda c: c.__name__)
def test_draws_read_the_same_numbers_in_every_schedule(case):
    seed = 1500 + randomcases.CASES.index(case)
    result, expected = case(seed)
    got = result.get()
    np.testing.assert_array_equal(got, expected(_cpu_stream), err_msg=f"{seed=}")


def test_schedules_reached():
    schedules = {case.__name__: fa.explain(case(3)[0]).plan.schedule
                 for case in randomcases.CASES}
    assert {"flat", "rows", "tiled", "nd"} <= set(schedules.values()), schedules


def test_noise_add_is_one_kernel_reading_x_only():
    x = fa.asarray(np.random.default_rng(5).standard_normal(4096).astype(np.float32))
    y = x + 0.1 * fa.random.default_rng(5).standard_normal(x.shape, dtype=np.float32)
    plan = fa.explain(y).plan
    assert [o.output for o in plan.operands] == [False, True]   # reads x, writes y: no noise
    fa.reset_stats()
    y.compute()
    assert fa.stats()["launches"] == 1


def test_new_seed_or_draw_never_recompiles():
    x = fa.asarray(np.random.default_rng(6).standard_normal(2048).astype(np.float32))
    first = (x * fa.random.default_rng(1).random(2048, dtype=np.float32)).get()
    fa.reset_stats()
    rng = fa.random.default_rng(2)
    values = [(x * rng.random(2048, dtype=np.float32)).get() for _ in range(3)]
    assert fa.stats()["compiles"] == 0
    assert not np.array_equal(values[0], values[1]) and not np.array_equal(first, values[0])


def test_stream_prefix_and_write_into_views():
    seed = 77
    full = fa.random.default_rng(seed).standard_normal(500).get()
    np.testing.assert_array_equal(fa.random.default_rng(seed).standard_normal(37).get(),
                                  full[:37])
    host = np.random.default_rng(seed).standard_normal(1000)
    out = fa.asarray(host.copy())
    out[::-2] = fa.random.default_rng(seed).standard_normal(500)
    expect = host.copy()
    expect[::-2] = full
    np.testing.assert_array_equal(out.get(), expect, err_msg=f"{seed=}")
    into = fa.empty(500)
    fa.random.default_rng(seed).standard_normal(out=into)
    np.testing.assert_array_equal(into.get(), full)


def test_moments_and_ks():
    seed, n = 2024, 200_000
    rng = fa.random.default_rng(seed)
    u32, u64 = rng.random(n, dtype=np.float32).get(), rng.random(n).get()
    z = rng.standard_normal(n).get()
    g = rng.normal(3.0, 2.0, n).get()
    k = rng.integers(10, 20, n).get()
    b = rng.bernoulli(0.3, n).get()
    for u in (u32, u64):
        assert 0.0 <= u.min() and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / n) and abs(u.var() - 1 / 12) < 2e-3
    assert abs(z.mean()) < 4 / np.sqrt(n) and abs(z.var() - 1) < 0.015
    assert abs(g.mean() - 3) < 8 / np.sqrt(n) and abs(g.std() - 2) < 0.02
    assert abs((z ** 3).mean()) < 0.03 and abs((z ** 4).mean() - 3) < 0.08
    assert k.min() == 10 and k.max() == 19 and k.dtype == np.int64
    counts = np.bincount(k - 10, minlength=10)
    assert np.all(np.abs(counts - n / 10) < 5 * np.sqrt(n / 10)), counts
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 5 * np.sqrt(0.21 / n)
    stats = pytest.importorskip("scipy.stats")
    for sample, cdf in ((u32, "uniform"), (u64, "uniform"), (z, "norm")):
        assert stats.kstest(sample, cdf).pvalue > 1e-3, (cdf, seed)


def test_dtypes_and_errors():
    rng = fa.random.default_rng(0)
    assert rng.random(3).dtype == np.float64 and rng.uniform(1, 2, 3).dtype == np.float64
    assert rng.standard_normal(3, dtype=np.float32).dtype == np.float32
    assert rng.integers(0, 5, 3, dtype=np.uint8).dtype == np.uint8
    assert rng.random().shape == ()
    with pytest.raises(fa.DTypeError, match="float16"):
        rng.random(3, dtype=np.float16)
    with pytest.raises(ValueError, match="low >= high"):
        rng.integers(5, 5)
    with pytest.raises(ValueError, match="out of range"):
        rng.integers(0, 300, dtype=np.uint8)
    with pytest.raises(fa.UnsupportedOperationError, match="2\\*\\*32"):
        rng.integers(0, 2**40)
    with pytest.raises(ValueError):
        fa.random.default_rng(-1)

    @fa.fuse
    def noisy(x):   # a draw inside fa.fuse: fresh numbers each call (test_fused_draws.py)
        return x + rng.standard_normal(x.shape)

    ones = fa.asarray(np.ones(4))
    assert not np.array_equal(noisy(ones).get(), noisy(ones).get())


def test_draws_passed_to_and_captured_by_fuse():
    seed = 1600
    rng = fa.random.default_rng(seed)
    host = np.random.default_rng(seed).standard_normal(300)
    x = fa.asarray(host)
    captured = rng.standard_normal(300)

    @fa.fuse
    def add(x, n):
        return x + n

    @fa.fuse
    def scaled(x):
        return x * captured

    first, second = rng.standard_normal(300), rng.standard_normal(300)
    np.testing.assert_array_equal(add(x, first).get(), host + first.get(), err_msg=f"{seed=}")
    np.testing.assert_array_equal(add(x, second).get(), host + second.get(), err_msg=f"{seed=}")
    for _ in range(2):                    # a captured draw is one array: the same each call
        np.testing.assert_array_equal(scaled(x).get(), host * captured.get())


def test_permutation_sorts_the_stream_stably():
    """``permutation(n)`` is the stable argsort of one float64 draw (the stream's own numbers,
    so the same on every backend); an array is permuted along an axis by a fused gather."""
    for seed in (3, 2**33 + 1):
        rng = fa.random.default_rng(seed)
        perm = rng.permutation(5000)
        want = np.argsort(randomcases.uniform_f64(seed, 5000, key=0), kind="stable")
        assert perm.dtype == np.int64
        np.testing.assert_array_equal(perm.get(), want, err_msg=f"{seed=}")
        host = np.random.default_rng(seed).standard_normal((6, 300)).astype(np.float32)
        x = fa.asarray(host)
        got = rng.permutation(x[:, ::-1], axis=1) * 2       # key 1: 300 keys
        order = np.argsort(randomcases.uniform_f64(seed, 300, key=1), kind="stable")
        np.testing.assert_array_equal(got.get(), host[:, ::-1][:, order] * 2,
                                      err_msg=f"{seed=}")
        rng.shuffle(x)                                      # key 2: 6 keys, in place
        order = np.argsort(randomcases.uniform_f64(seed, 6, key=2), kind="stable")
        np.testing.assert_array_equal(x.get(), host[order], err_msg=f"{seed=}")
    assert fa.random.default_rng(1).permutation(0).shape == (0,)
    with pytest.raises(ValueError, match="non-negative"):
        fa.random.default_rng(1).permutation(-1)
    with pytest.raises(np.exceptions.AxisError):
        fa.random.default_rng(1).permutation(fa.asarray(np.float32(1.0)))
    with pytest.raises(TypeError, match="fa.ndarray"):
        fa.random.default_rng(1).shuffle(np.arange(3))


@pytest.mark.parametrize("wide", [False, True], ids=["float32", "float64"])
def test_uniform_comparisons_with_edge_scalars_match_numpy(wide):
    """A float32 uniform compared with a scalar threshold (in the kernel, the word's top 24 bits
    against an integer threshold of the scalar's): each edge value, both orders, every op, a
    float32 comparison (a Python float) and a float64 one (a NumPy float64)."""
    seed = 1620 + wide
    for p in randomcases.scalar_edges(seed):
        p = np.float64(p) if wide else p
        result, expected = randomcases.scalar_comparisons(seed, p)
        np.testing.assert_array_equal(result.get(), expected(randomcases.materialised),
                                      err_msg=f"{seed=} {p=}")


# sim: the vector walk and its tail (261 elements: 65 vectors and one more); cuda: 2**20 + 3
EDGE_COMPARISONS = {"sim": (1622, 261), "cuda": (2602, (1 << 20) + 3)}


@pytest.mark.tiers("sim", "cuda")
def test_uniform_comparisons_with_edge_scalars_match_the_cpu(tier):
    """The integer thresholds of a float32 uniform's comparisons (streams.U24_FORMS): each edge
    of the cpu tier's test, as a float32 and a float64 comparison."""
    seed, n = EDGE_COMPARISONS[tier]
    for p in randomcases.scalar_edges(seed, n):
        for q in (p, np.float64(p)):
            result, expected = randomcases.scalar_comparisons(seed, q, n)
            got = result.get()
            np.testing.assert_array_equal(got, expected(_cpu_stream), err_msg=f"{seed=} {q=}")


@pytest.mark.tiers("sim")
def test_vector_walk_shares_blocks():
    x = fa.asarray(np.random.default_rng(9).standard_normal(64).astype(np.float32))
    y = x + fa.random.default_rng(9).standard_normal(64, dtype=np.float32)
    source = fa.explain(y).source
    assert fa.explain(y).vector_width == 4 and "fa_philox_at" in source and "fa_bm_f32(" in source


@pytest.mark.parametrize("dist,dtype", [("normal", np.float32), ("normal", np.float64),
                                        ("random", np.float32), ("random", np.float64),
                                        ("integers", np.int32)])
@pytest.mark.tiers("cuda")
def test_large_draws_same_bits_as_cpu(dist, dtype):
    seed, n = 2600, (1 << 22) + 5
    got = randomcases.materialised(seed, dist, dtype, n)
    np.testing.assert_array_equal(got, _cpu(lambda: randomcases.materialised(seed, dist, dtype,
                                                                             n)),
                                  err_msg=f"{seed=}")


@pytest.mark.tiers("cuda")
def test_noise_add_is_one_launch_and_matches_cpu():
    seed, n = 2601, 1 << 22
    host = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    x = fa.asarray(host)
    y = x + np.float32(0.1) * fa.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    y.compute()
    fa.reset_stats()
    y = x + np.float32(0.1) * fa.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    got = y.get()
    assert fa.stats()["launches"] == 1
    noise = _cpu(lambda: randomcases.materialised(seed, "normal", np.float32, n))
    # NVVM may contract 0.1 * noise + x into one fma: the draw is exact, the sum within 1 ulp
    np.testing.assert_allclose(got, host + np.float32(0.1) * noise, rtol=2e-7, atol=1e-7)


@pytest.mark.tiers("cuda")
def test_distributions_on_the_device():
    seed, n = 2602, 1 << 20
    rng = fa.random.default_rng(seed)
    u, z = rng.random(n, dtype=np.float32).get(), rng.standard_normal(n).get()
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 2e-3
    assert abs(z.mean()) < 5e-3 and abs(z.var() - 1) < 6e-3
    stats = pytest.importorskip("scipy.stats")
    assert stats.kstest(u, "uniform").pvalue > 1e-3 and stats.kstest(z, "norm").pvalue > 1e-3


@pytest.mark.tiers("cuda")
def test_box_muller_intrinsics_equal_the_portable_helpers_for_every_word():
    """The float32 Box-Muller with cuda's intrinsics (cuda/randombits.py: 32-bit integers, the
    division's and square root's fast paths, the quarter turn by selects) against the portable
    helpers compiled for the device (IEEE div.rn and sqrt.rn, the quarter turn by branches), bit
    for bit: every first word a (the radius is a's alone) beside a fixed second word, then every
    second word b beside a fixed a (the angle and its turn are b's alone, r's sign excepted)."""
    from numba import cuda, types

    from fusedarrays.compiler import philox
    from fusedarrays.cuda import intrinsics

    renamed = philox.RANDOM_SOURCE
    for piece in ("fa_bm_ratio_f32", "fa_bm_sqrt_f32", "fa_bm_turn_f32", "fa_bm_f32"):
        renamed = renamed.replace(piece + "(", piece.replace("fa_bm", "fa_ref_bm") + "(")
    portable: dict = {}
    exec(renamed, {"math": __import__("math")}, portable)
    source = '''
def check(bad, fixed, which):
    i = cuda.grid(1)
    count = 0
    while i < 4294967296:
        a, b = (cv_u32(i), cv_u32(fixed)) if which == 0 else (cv_u32(fixed), cv_u32(i))
        got, want = fa_bm_f32(a, b), fa_ref_bm_f32(a, b)
        for k in range(2):   # the same value and the same sign (zeros), never NaN
            if (got[k] != want[k]
                    or math.copysign(cv_f32(1.0), got[k]) != math.copysign(cv_f32(1.0), want[k])):
                count += 1
        i += cuda.gridsize(1)
    if count:
        cuda.atomic.add(bad, 0, count)
'''
    from fusedarrays.compiler import devicelib

    helpers = dict(devicelib.helpers())
    helpers.update((name, fn) for name, fn in portable.items() if name.startswith("fa_ref_bm"))
    namespace = dict(intrinsics.device_namespace(helpers))
    exec(source, namespace)
    check = cuda.jit(types.void(types.int64[:], types.int64, types.int64))(namespace["check"])
    for which, fixed in ((0, 12345), (0, 0xFFFFFFFF), (1, 777), (1, 0xFFFFFFFE)):
        bad = cuda.to_device(np.zeros(1, np.int64))
        check[132 * 32, 256](bad, fixed, which)
        assert bad.copy_to_host()[0] == 0, (which, fixed)


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

@pytest.mark.tiers("ptx")
def test_noise_add_ptx():
    x = fa.asarray(np.random.default_rng(120).standard_normal(4096).astype(np.float32))
    y = x + np.float32(0.1) * fa.random.default_rng(1).standard_normal(x.shape,
                                                                       dtype=np.float32)
    ex = fa.explain(y, arch="sm_90")
    ptx = ex.ptx
    assert ex.vector_width == 4
    loads = len(re.findall(r"ld\.global\.v4\.f32", ptx))
    stores = len(re.findall(r"st\.global\.v4\.f32", ptx))
    assert stores >= 1 and loads == stores      # x only: the noise never touches memory
    assert "fma.rn.f32" in ptx
    assert not re.search(r"\.f64\b", ptx)       # a float32 normal takes float32 work only
    # cuda/randombits.py's Box-Muller: 32-bit integers (no quarter-rate cvt from an s64), the
    # division's and square root's fast paths alone, and no branch between a vector's load
    # and its store (the quarter turn by selects)
    assert "cvt.rn.f32.s64" not in ptx and "div.rn.f32" not in ptx and "sqrt.rn" not in ptx
    body = ptx[ptx.index("ld.global.v4.f32"):ptx.index("st.global.v4.f32")]
    assert "bra" not in body
    assert re.search(r"mul\.(wide|hi|lo)\.u32|mul\.lo\.s64|mad\.(wide|hi|lo)\.u32", ptx)


@pytest.mark.parametrize("draw", ["uniform_f32", "uniform_f64", "integers", "bernoulli_f16"])
@pytest.mark.tiers("ptx")
def test_each_distribution_compiles(draw):
    rng = fa.random.default_rng(2)
    x = fa.asarray(np.random.default_rng(121).standard_normal(1000).astype(np.float16))
    expr = {"uniform_f32": lambda: rng.random(1000, dtype=np.float32),
            "uniform_f64": lambda: rng.random(1000),
            "integers": lambda: rng.integers(0, 1000, 1000, dtype=np.int32),
            "bernoulli_f16": lambda: x * rng.bernoulli(0.9, 1000) / np.float16(0.9)}[draw]()
    assert ".entry" in fa.explain(expr, arch="sm_90").ptx


KAT = [((0, 0, 0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 6, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.tiers("ptx")
def test_philox_intrinsic_known_answers_on_the_cpu_target():
    """The cuda target's Philox rounds (LLVM IR in 32-bit registers), run by numba's CPU
    target, give Random123's published known answers."""
    from numba import njit
    from numba.extending import intrinsic

    from fusedarrays.cuda.intrinsics import TYPERS

    philox = intrinsic(TYPERS["fa_philox"])

    @njit
    def run(c0, c1, c2, c3, k0, k1):
        return philox(c0, c1, c2, c3, k0, k1)

    for args, expected in KAT:
        words = run(*[np.uint32(a) for a in args])
        assert tuple(int(w) for w in words) == expected, [hex(int(w)) for w in words]
    assert "mul.wide.u32" in fa.explain(fa.random.default_rng(3).random(64, dtype=np.float32),
                                      arch="sm_90").ptx


@pytest.mark.tiers("ptx")
def test_box_muller_intrinsics_on_the_cpu_target_match_the_portable_helpers():
    """cuda/randombits.py's float32 Box-Muller pieces (the LLVM IR less its NVPTX-only inline
    asm: there a plain division and square root), run by numba's CPU target, give the portable
    helpers' bits on the words where their integer steps turn: u = 1 (a + 1 wraps), powers of
    two, the sqrt(2) threshold, odd t, and random words (tests/gpu checks every word)."""
    from numba import njit
    from numba.extending import intrinsic

    from fusedarrays.compiler import devicelib
    from fusedarrays.cpu.backend import CpuBackend
    from fusedarrays.cuda.intrinsics import TYPERS

    ratio, sqrt, turn = (intrinsic(TYPERS[name]) for name in
                         ("fa_bm_ratio_f32", "fa_bm_sqrt_f32", "fa_bm_turn_f32"))
    portable = CpuBackend().namespace(devicelib.helpers())
    p_ratio, p_sqrt, p_turn = (portable[name] for name in
                               ("fa_bm_ratio_f32", "fa_bm_sqrt_f32", "fa_bm_turn_f32"))

    @njit
    def run(words, out, ref):
        for i in range(words.size):
            w = words[i]
            v, f = ratio(w)
            pv, pf = p_ratio(w)
            x = np.float32(-2.0) * v + f
            c, s = turn(sqrt(abs(x)), np.float32(0.75), np.float32(-0.5), w)
            pc, ps = p_turn(p_sqrt(abs(x)), np.float32(0.75), np.float32(-0.5), w)
            out[i, 0], out[i, 1], out[i, 2], out[i, 3] = v, f, c, s
            ref[i, 0], ref[i, 1], ref[i, 2], ref[i, 3] = pv, pf, pc, ps

    edges = [0, 1, 2, 3, 2**31 - 2, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]
    edges += [(1 << j) + d for j in range(1, 32) for d in (-2, -1, 0)]
    edges += [(3037000499 >> j) + d for j in range(0, 31) for d in (-1, 0, 1)]
    words = np.r_[edges, np.random.default_rng(124).integers(0, 1 << 32, 1 << 16)]
    words = words.astype(np.uint64).astype(np.uint32)
    out, ref = np.zeros((words.size, 4), np.float32), np.zeros((words.size, 4), np.float32)
    run(words, out, ref)
    np.testing.assert_array_equal(out.view(np.uint32), ref.view(np.uint32))


@pytest.mark.tiers("ptx")
def test_gather_ptx_loads_through_the_index():
    rng = np.random.default_rng(122)
    table = fa.asarray(rng.standard_normal(1 << 12).astype(np.float32))
    idx = fa.asarray(rng.integers(0, 1 << 12, 4096).astype(np.int32))
    w = fa.asarray(rng.standard_normal(4096).astype(np.float32))
    ex = fa.explain(table[idx] * w, arch="sm_90")
    ptx = ex.ptx
    assert ex.vector_width == 4
    # idx and w in 128-bit loads, the table element by element, the result in 128-bit stores
    assert len(re.findall(r"ld\.global\.v4\.(f32|u32|b32)", ptx)) == 2 * len(
        re.findall(r"st\.global\.v4\.f32", ptx))
    assert re.search(r"ld\.global\.f32", ptx)


@pytest.mark.tiers("ptx")
def test_dropout_draws_with_one_mul_wide_a_product():
    """``x * mask / (1 - p)``: Philox's products are one mul.wide.u32 each (the division:
    test_division.py's ptx cases)."""
    x = fa.asarray(np.random.default_rng(123).standard_normal(4096).astype(np.float16))
    rng = fa.random.default_rng(4)
    ptx = fa.explain(x * (rng.random(x.shape, dtype=np.float32) > 0.1) / (1 - 0.1),
                     arch="sm_90").ptx
    assert ptx.count("mul.wide.u32") >= 20 and "mul.hi.u32" not in ptx


@pytest.mark.tiers("ptx")
def test_a_draws_vector_walk_asks_for_its_next_vectors_first():
    """ptxas issues a vector's load after the draw's Philox rounds: a kernel that draws asks
    L2 for the next turn's 16 bytes of each operand it loads before that, and a kernel without
    a draw asks for nothing (codegen.flat)."""
    data = np.random.default_rng(124)
    x = fa.asarray(data.standard_normal(4096).astype(np.float32))
    w = fa.asarray(data.standard_normal(4096).astype(np.float32))
    drawn = fa.explain(x * w + fa.random.default_rng(5).random(x.shape, dtype=np.float32),
                       arch="sm_90").ptx
    loop = drawn[drawn.index("prefetch.global.L2"):]
    assert drawn.count("prefetch.global.L2") == 2
    assert loop.index("prefetch.global.L2") < loop.index("ld.global.v4.f32")
    assert "prefetch" not in fa.explain(x * w + 1, arch="sm_90").ptx


@pytest.mark.tiers("ptx")
def test_dropout_compares_the_words_and_rounds_once_an_element():
    """``x * (u > p) / (1 - p)`` in float16: the uniform's word against an integer threshold
    (no conversion of it to a float), the mask's product exact (no rounding to half), so one
    conversion to half an element, its quotient's."""
    x = fa.asarray(np.random.default_rng(125).standard_normal(4096).astype(np.float16))
    rng = fa.random.default_rng(6)
    ptx = fa.explain(x * (rng.random(x.shape, dtype=np.float32) > 0.1) / (1 - 0.1),
                     arch="sm_90").ptx
    body = ptx[ptx.index("ld.global.v4"):ptx.index("st.global.v4")]
    assert "cvt.rn.f32.u32" not in body and body.count("setp.gt.s32") == 8
    assert body.count("cvt.rn.f16.f32") == 8
