"""float16 emulation helpers of the CPU backend (``fusedarrays.cpu.half``) against NumPy's casts.

Each helper is checked as plain Python (on smaller samples, Python is slow) and compiled with
``numba.njit(inline="always")`` inside small njit loops over arrays. NaN results are checked for
being NaN (quiet, for float16 bits) with the expected sign; NumPy's payload bits are not promised.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings
from fractions import Fraction

import numba
import numpy as np
import pytest

from fusedarrays.cpu import half

N_RANDOM = 1 << 21  # >= 2 million random bit patterns for the compiled helpers
N_PYTHON = 20_000  # sample for the plain-Python helpers


def _jit(fn):
    return numba.njit(inline="always")(fn)


@pytest.fixture(scope="module")
def loops():
    h2f = _jit(half.half_bits_to_float32)
    f2h = _jit(half.float32_to_half_bits)
    d2h = _jit(half.float64_to_half_bits)
    rnd = _jit(half.round_float32_to_half)

    @numba.njit
    def h2f_loop(h):
        out = np.empty(h.size, np.float32)
        for i in range(h.size):
            out[i] = h2f(h[i])
        return out

    @numba.njit
    def f2h_loop(x):
        out = np.empty(x.size, np.uint16)
        for i in range(x.size):
            out[i] = f2h(x[i])
        return out

    @numba.njit
    def d2h_loop(x):
        out = np.empty(x.size, np.uint16)
        for i in range(x.size):
            out[i] = d2h(x[i])
        return out

    @numba.njit
    def rnd_loop(x):
        out = np.empty(x.size, np.float32)
        for i in range(x.size):
            out[i] = rnd(x[i])
        return out

    return {"h2f": h2f_loop, "f2h": f2h_loop, "d2h": d2h_loop, "rnd": rnd_loop}


def _py_loop(fn, x, dtype):
    return np.array([fn(v) for v in x], dtype=dtype)


def _numpy_half(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf in the cast
        return np.asarray(x).astype(np.float16)


def _sign_bits(x):
    x = np.asarray(x)
    width = x.dtype.itemsize * 8
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) >> (width - 1)


def _check_half_bits(got, x):
    """``got`` (uint16 bits) equals NumPy's float16 cast of ``x``; NaN -> quiet NaN, same sign."""
    got = np.asarray(got, np.uint16)
    ref = _numpy_half(x).view(np.uint16)
    nan = np.isnan(x)
    bad = np.flatnonzero((got != ref) & ~nan)
    assert bad.size == 0, [(repr(x[i]), hex(got[i]), hex(ref[i])) for i in bad[:8]]
    g = got[nan]
    assert np.all((g & 0x7E00) == 0x7E00), "NaN must give a quiet float16 NaN"
    assert np.array_equal(g >> 15, _sign_bits(x[nan]).astype(np.uint16)), "NaN sign lost"


def _check_float32(got, ref):
    """float32 arrays equal bit for bit; NaN only as NaN with the same sign."""
    got = np.asarray(got, np.float32)
    ref = np.asarray(ref, np.float32)
    nan = np.isnan(ref)
    bad = np.flatnonzero((got.view(np.uint32) != ref.view(np.uint32)) & ~nan)
    assert bad.size == 0, [(i, repr(got[i]), repr(ref[i])) for i in bad[:8]]
    assert np.all(np.isnan(got[nan]))
    assert np.array_equal(_sign_bits(got[nan]), _sign_bits(ref[nan]))


ALL_HALF_BITS = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _edge_float32():
    ulp_tie = []
    for h in (1.0, 2.0, 1024.0, 2048.0, 65504.0, 6.103515625e-05):  # ties just above these
        tie = np.float32(h + h * 2.0**-11)
        ulp_tie += [tie, np.nextafter(tie, np.float32(0)), np.nextafter(tie, np.float32(np.inf))]
    tiny = np.float32(2.0**-24)
    values = [
        0.0, -0.0, 1.0, -1.0, 65504.0, -65504.0, 65519.99, 65520.0, -65520.0, 65536.0, 1e30,
        np.inf, -np.inf, np.nan, -np.nan, 2.0**-24, 2.0**-25, -(2.0**-25), 3 * 2.0**-25,
        2.0**-26, 2.0**-14, 2.0**-14 - 2.0**-24, 2.0**-14 - 2.0**-25, 2.0**-14 - 2.0**-26,
        1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-11 + 2.0**-23, 2049.0, 2051.0, 0.1, 1 / 3,
        np.finfo(np.float32).max, np.finfo(np.float32).tiny,
        np.finfo(np.float32).smallest_subnormal,
    ]
    out = np.array(values + ulp_tie, dtype=np.float32)
    half_tiny = tiny / np.float32(2)
    extra = [np.nextafter(half_tiny, np.float32(1)), np.nextafter(half_tiny, np.float32(0)),
             np.nextafter(tiny, np.float32(0)), np.nextafter(np.float32(65520), np.float32(0))]
    out = np.concatenate([out, np.array(extra, np.float32)])
    qnan_payload = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0xFF812345, 0x7FFFFFFF],
                            np.uint32).view(np.float32)
    return np.concatenate([out, -out, qnan_payload])


EDGE_F32 = _edge_float32()


def _random_float32(n, seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    # Half of them in float16's range (exponents of 2**-26 .. 2**16) where the rounding matters.
    inrange = rng.integers(127 - 26, 127 + 17, size=n // 2, dtype=np.uint32) << np.uint32(23)
    bits[: n // 2] = (bits[: n // 2] & np.uint32(0x807FFFFF)) | inrange
    return bits.view(np.float32)


@np.errstate(all="ignore")
def _float64_cases(n, seed):
    """Random float64 near every kind of float16 rounding boundary, plus random bit patterns."""
    rng = np.random.default_rng(seed)
    finite = ALL_HALF_BITS[(ALL_HALF_BITS & 0x7C00) != 0x7C00]
    h = finite.view(np.float16).astype(np.float64)
    h = h[h >= 0]
    nxt = np.nextafter(h.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    mid = (h + nxt) / 2  # exact in float64: the ties
    ties = np.concatenate([mid, np.nextafter(mid, 0.0), np.nextafter(mid, np.inf)])
    # Within 1 float64 ulp .. a few float32 ulps of a tie: a float32 detour would round these
    # onto the tie (double rounding) and then to even, the wrong way.
    pick = rng.integers(0, mid.size, size=n // 2)
    k = rng.integers(-(1 << 31), 1 << 31, size=n // 2) >> rng.integers(0, 31, size=n // 2)
    near = mid[pick] + k * np.spacing(mid[pick])
    bits = rng.integers(0, 1 << 63, size=n // 4, dtype=np.int64).astype(np.uint64)
    bits |= rng.integers(0, 2, size=n // 4, dtype=np.uint64) << np.uint64(63)
    patterns = bits.view(np.float64)
    exps = rng.integers(-30, 18, size=n // 4)
    scaled = np.ldexp(rng.random(n // 4) + 0.5, exps)
    edge = EDGE_F32.astype(np.float64)
    x = np.concatenate([ties, near, patterns, scaled, edge, [65519.99999999999, 2.0**-25 + 2**-80]])
    signs = np.where(rng.random(x.size) < 0.5, -1.0, 1.0)
    return np.concatenate([x * signs, -x[: ties.size]])


def test_module_does_not_import_numba():
    """Importing the module file itself (not its package) pulls in no numba."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('half_alone', {half.__file__!r})\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\n"
        "assert 'numba' not in sys.modules, 'half.py imported numba'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert importlib.util.find_spec("fusedarrays.cpu.half") is not None


def test_scalar_njit_signatures():
    """Each helper compiles alone (nopython) on the scalar types the backend passes."""
    cases = [
        (half.half_bits_to_float32, np.uint16(0x3C00), np.float32(1.0), numba.float32),
        (half.float32_to_half_bits, np.float32(1.0), 0x3C00, numba.uint16),
        (half.float64_to_half_bits, np.float64(1.0), 0x3C00, numba.uint16),
        (half.round_float32_to_half, np.float32(0.1), np.float32(np.float16(0.1)), numba.float32),
    ]
    for fn, arg, expected, ret in cases:
        jitted = numba.njit(fn)
        assert jitted(arg) == expected
        (sig,) = jitted.nopython_signatures
        assert sig.return_type == ret, (fn.__name__, sig)
        assert fn(arg) == expected  # and as plain Python
    assert half.float32_to_half_bits.__name__ == "float32_to_half_bits"


def test_half_to_float32_exhaustive(loops):
    ref = ALL_HALF_BITS.view(np.float16).astype(np.float32)
    _check_float32(loops["h2f"](ALL_HALF_BITS), ref)
    _check_float32(_py_loop(half.half_bits_to_float32, ALL_HALF_BITS, np.float32), ref)
    # plain ints are accepted too
    assert half.half_bits_to_float32(0xFC00) == -np.inf


def test_half_round_trip_exhaustive(loops):
    values = ALL_HALF_BITS.view(np.float16).astype(np.float32)
    nan = np.isnan(values)
    for got in (
        loops["f2h"](loops["h2f"](ALL_HALF_BITS)),
        _py_loop(half.float32_to_half_bits, values, np.uint16),
    ):
        assert np.array_equal(got[~nan], ALL_HALF_BITS[~nan])
        _check_half_bits(got, values)
    _check_float32(loops["rnd"](values), values)


def test_float32_to_half_edges(loops):
    _check_half_bits(loops["f2h"](EDGE_F32), EDGE_F32)
    _check_half_bits(_py_loop(half.float32_to_half_bits, EDGE_F32, np.uint16), EDGE_F32)
    f = half.float32_to_half_bits
    assert f(np.float32(65504.0)) == 0x7BFF
    assert f(np.float32(65519.99)) == 0x7BFF
    assert f(np.float32(65520.0)) == 0x7C00
    assert f(np.float32(-65520.0)) == 0xFC00
    assert f(np.float32(2.0**-24)) == 0x0001
    assert f(np.float32(2.0**-25)) == 0x0000  # tie -> even (zero)
    assert f(np.nextafter(np.float32(2.0**-25), np.float32(1))) == 0x0001
    assert f(np.float32(-0.0)) == 0x8000
    assert f(np.float32(np.inf)) == 0x7C00
    assert f(np.float32(1 + 2.0**-11)) == 0x3C00  # tie -> even
    assert f(np.float32(1 + 3 * 2.0**-11)) == 0x3C02  # tie -> even
    assert f(np.float32(np.nan)) & 0x7E00 == 0x7E00


def test_float32_to_half_random(loops):
    x = _random_float32(N_RANDOM, seed=1)
    _check_half_bits(loops["f2h"](x), x)
    sample = x[:: N_RANDOM // N_PYTHON]
    _check_half_bits(_py_loop(half.float32_to_half_bits, sample, np.uint16), sample)


def test_round_float32_to_half(loops):
    x = np.concatenate([_random_float32(N_RANDOM, seed=2), EDGE_F32])
    ref = _numpy_half(x).astype(np.float32)
    _check_float32(loops["rnd"](x), ref)
    sample = np.concatenate([x[:: N_RANDOM // N_PYTHON], EDGE_F32])
    _check_float32(_py_loop(half.round_float32_to_half, sample, np.float32),
                   _numpy_half(sample).astype(np.float32))


def test_float64_reference_rounds_once():
    """NumPy's float64 -> float16 cast (the reference) rounds once: checked exactly on ties."""
    for h, above in ((1.0, 1), (2050.0, 1), (2.0**-24, 1), (65472.0, 1), (1.0, -1)):
        assert float(np.float16(h)) == h
        nxt = float(np.nextafter(np.float16(h), np.float16(np.inf * above)))
        tie = Fraction(h) + (Fraction(nxt) - Fraction(h)) / 2
        for eps in (Fraction(1, 2**50), -Fraction(1, 2**50)):
            x = float(tie * (1 + eps))  # within a float32 ulp of the tie, off it in float64
            assert Fraction(x) != tie and np.float32(x) == np.float32(float(tie))
            want = h if abs(Fraction(x) - Fraction(h)) < abs(Fraction(x) - Fraction(nxt)) else nxt
            assert float(np.float64(x).astype(np.float16)) == want
            assert half.float64_to_half_bits(x) == np.float16(want).view(np.uint16)


@np.errstate(invalid="ignore")  # sNaN edge cases widened to float64
def test_float64_to_half(loops):
    x = _float64_cases(N_RANDOM // 2, seed=3)
    _check_half_bits(loops["d2h"](x), x)
    sample = np.concatenate([x[:: x.size // N_PYTHON], EDGE_F32.astype(np.float64)])
    _check_half_bits(_py_loop(half.float64_to_half_bits, sample, np.uint16), sample)
    # round_float32_to_half also rounds a float64 once
    y = x[:: 16]
    _check_float32(loops["rnd"](y), _numpy_half(y).astype(np.float32))
