"""fa.random draws and gathers compile to PTX for sm_90 (no GPU needed): Philox's products as
one mul.wide.u32 each, a float32 Box-Muller's multiply-adds as explicit fma.rn.f32, no memory
traffic for the noise; a gather's table read element by element beside 128-bit accesses."""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):   # arrays on the cpu; PTX for sm_90 by arch=
        yield


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


def test_dropout_draws_with_one_mul_wide_a_product():
    """``x * mask / (1 - p)``: Philox's products are one mul.wide.u32 each (the division:
    test_division_ptx.py)."""
    x = fa.asarray(np.random.default_rng(123).standard_normal(4096).astype(np.float16))
    rng = fa.random.default_rng(4)
    ptx = fa.explain(x * (rng.random(x.shape, dtype=np.float32) > 0.1) / (1 - 0.1),
                     arch="sm_90").ptx
    assert ptx.count("mul.wide.u32") >= 20 and "mul.hi.u32" not in ptx


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
