"""The values the cuda intrinsics compute, checked against NumPy without a GPU.

Each intrinsic's typing function (``intrinsics.TYPERS``) is wrapped a second time for numba's CPU
target: the same LLVM IR (``inttoptr`` into address space 1, ``fptrunc`` to ``half``, lane
shifts …) then runs on host memory, so casts, float16 rounding, bool bytes and vector lane order
are compared with NumPy here; only NVVM's lowering of that IR is left to the GPU tests.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from numba import njit  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

from fusedarrays.cuda.intrinsics import SCALARS, TYPERS  # noqa: E402

# NumPy warns when its reference casts overflow to inf; overflowing is part of what is checked
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

CPU_NAMESPACE = {name: intrinsic(typer) for name, typer in TYPERS.items()}
NP = {"b1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f16": np.float16, "f32": np.float32, "f64": np.float64, "c64": np.complex64,
      "c128": np.complex128}


def cpu_kernel(body: str):
    """``k(n, p0, p1)`` running ``body`` for ``i`` in ``range(n)``, compiled for the CPU."""
    lines = "\n".join("        " + ln for ln in body.strip().splitlines())
    namespace = dict(CPU_NAMESPACE)
    exec(f"def k(n, p0, p1):\n    for i in range(n):\n{lines}\n", namespace)
    return njit(namespace["k"])


def run(body: str, src: np.ndarray, out_dtype, n: int | None = None) -> np.ndarray:
    out = np.zeros(src.size if n is None else n * 16 // np.dtype(out_dtype).itemsize, out_dtype)
    cpu_kernel(body)(src.size if n is None else n, src.ctypes.data, out.ctypes.data)
    return out


def test_table_matches_numpy_itemsizes():
    for code, s in SCALARS.items():
        assert np.dtype(NP[code]).itemsize == s.itemsize, code


@pytest.mark.parametrize("code", sorted(SCALARS))
def test_load_store_roundtrip(code):
    src = (np.arange(-20, 20) * 7).astype(NP[code])
    assert np.array_equal(run(f"st_{code}(p1, i, ld_{code}(p0, i))", src, NP[code]), src)


def test_bool_loads_any_nonzero_byte_as_true_and_stores_0_or_1():
    raw = np.array([0, 1, 2, 255, 0, 128], np.uint8)
    out = run("st_b1(p1, i, ld_b1(p0, i))", raw, np.uint8)
    assert out.tolist() == [0, 1, 1, 1, 0, 1]


SAMPLES_F64 = np.array([0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 3.7, -3.7, 100.25, 65504.0, 65520.0,
                        1e-8, 6e-8, 1e300, -1e300, np.inf, -np.inf, np.nan])
INT_RANGE_F64 = np.array([0.0, -0.0, 0.9, -0.9, 1.5, -1.5, 7.99, 100.0, -100.0, 127.0])


@pytest.mark.parametrize("code", ["f16", "f32", "f64", "b1"])
def test_casts_from_f64_match_numpy(code):
    got = run(f"st_f64(p1, i, cv_{code}(ld_f64(p0, i)))", SAMPLES_F64, np.float64)
    want = SAMPLES_F64.astype(NP[code]).astype(np.float64)
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("code", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"])
def test_integer_casts_match_numpy(code):
    # float → int in range truncates toward zero; int → narrower int wraps
    src = np.abs(INT_RANGE_F64) if code.startswith("u") else INT_RANGE_F64
    got = run(f"st_{code}(p1, i, cv_{code}(ld_f64(p0, i)))", src, NP[code])
    assert np.array_equal(got, src.astype(NP[code]))
    wide = np.array([0, 1, -1, 127, 128, 255, 256, -129, 2**31, -(2**31) - 1, 2**40 + 3], np.int64)
    got = run(f"st_{code}(p1, i, cv_{code}(ld_i64(p0, i)))", wide, NP[code])
    assert np.array_equal(got, wide.astype(NP[code]))


def test_f16_store_of_f64_rounds_once_like_numpy():
    # 1 + 2**-11 + 2**-40 lies just above the midpoint of two halves; through float32 it would
    # land on the midpoint and round to even (1.0), NumPy rounds once, up to 1 + 2**-10.
    x = np.array([1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 65519.0, 65520.0])
    got = run("st_f16(p1, i, ld_f64(p0, i))", x, np.float16)
    assert np.array_equal(got, x.astype(np.float16))
    assert got[0] == np.float16(1 + 2.0**-10)


def test_f16_store_of_f32_and_ints_matches_numpy():
    x32 = np.array([0.1, 1 / 3, 65504.0, 70000.0, 1e-7, -2.5], np.float32)
    assert np.array_equal(run("st_f16(p1, i, ld_f32(p0, i))", x32, np.float16),
                          x32.astype(np.float16))
    ints = np.array([0, 1, -7, 2049, 65504, 65519, 65520, 1 << 40], np.int64)
    assert np.array_equal(run("st_f16(p1, i, ld_i64(p0, i))", ints, np.float16),
                          ints.astype(np.float16))


def test_f16_loads_widen_exactly():
    h = np.array([0.1, -3.5, 65504, 6e-8, np.inf, np.nan], np.float16)
    got = run("st_f32(p1, i, ld_f16(p0, i))", h, np.float32)
    assert np.array_equal(got, h.astype(np.float32), equal_nan=True)


@pytest.mark.parametrize("code", ["f32", "i32", "u32"])
def test_v4_lanes_are_in_memory_order(code):
    src = np.arange(16).astype(NP[code])
    got = run(f"a, b, c, d = ldv4_{code}(p0, i)\nstv4_{code}(p1, i, d, c, b, a)", src, NP[code],
              n=4)
    assert np.array_equal(got, src.reshape(4, 4)[:, ::-1].reshape(-1))


def test_v8_f16_lanes_are_in_memory_order():
    src = (np.arange(32) / 3).astype(np.float16)
    got = run("a, b, c, d, e, f, g, h = ldv8_f16(p0, i)\nstv8_f16(p1, i, h, g, f, e, d, c, b, a)",
              src, np.float16, n=4)
    assert np.array_equal(got, src.reshape(4, 8)[:, ::-1].reshape(-1))


def test_v8_f16_values_are_float32_and_stores_round():
    src = (np.arange(8) / 3).astype(np.float16)
    got = run("a, b, c, d, e, f, g, h = ldv8_f16(p0, i)\n"
              "stv8_f16(p1, i, a * 3, b * 3, c * 3, d * 3, e * 3, f * 3, g * 3, h * 3)",
              src, np.float16, n=1)
    assert np.array_equal(got, (src.astype(np.float32) * 3).astype(np.float16))


def _float32_patterns(rng, size: int) -> np.ndarray:
    """Random float32 bit patterns (every exponent: zeros, subnormals, infinities and NaNs
    among them), near-1 magnitudes, and each special value of a division by name."""
    bits = rng.integers(0, 1 << 32, size, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = (rng.standard_normal(size // 4) * 10.0 ** rng.integers(-6, 7, size // 4))
    tiny, huge = np.float32(2.0 ** -60), np.float32(2.0 ** 60)
    named = [0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45, 1e-40, 1.1754942e-38, 1.1754944e-38, 3e38,
             -3.4028235e38, np.inf, -np.inf, np.nan, tiny, -tiny, huge, -huge,
             np.nextafter(tiny, 0), np.nextafter(huge, np.inf)]
    return np.concatenate([bits, near.astype(np.float32), np.array(named, np.float32),
                           -np.array(named, np.float32)])


@pytest.mark.parametrize("divby", ["fa_divby_f32", "fa_rowdivby_f32"])  # elementwise, rows
def test_division_by_a_uniform_divisor_is_numpys_quotient_with_its_zeros_signed(divby):
    """``fa_divby_f32(a, b, fa_divrcp_f32(b))`` (the division codegen gives a divisor computed
    outside its dividend's loop: a multiply and two fmas from b's reciprocal) against NumPy's
    ``a / b``, bit for bit: dividends of every kind (±0 on the fast path, whose sign the plain
    correction step would lose for -0 over a positive b; subnormals, huge values, infinities and
    NaN through the plain division) over divisors of every kind. Row kernels' ``fa_rowdivby``
    sends zeros through the zero-safe selects instead of its fast path: the same quotients."""
    seed = 1611
    rng = np.random.default_rng(seed)
    print(f"{seed=}")
    a = _float32_patterns(rng, 1 << 16)
    divisors = _float32_patterns(rng, 64)
    namespace = dict(CPU_NAMESPACE)
    exec("def k(n, p0, p1, b):\n    y = fa_divrcp_f32(b)\n    for i in range(n):\n"
         f"        st_f32(p1, i, {divby}(ld_f32(p0, i), b, y))\n", namespace)
    divide = njit(namespace["k"])
    out = np.empty_like(a)
    for b in divisors:
        divide(a.size, a.ctypes.data, out.ctypes.data, b)
        with np.errstate(all="ignore"):
            want = a / b
        same = (out.view(np.uint32) == want.view(np.uint32)) | (np.isnan(out) & np.isnan(want))
        assert same.all(), (f"{int((~same).sum())} differ over b={b!r}: first "
                            f"a={a[~same][0]!r} gave {out[~same][0]!r}, NumPy {want[~same][0]!r}")
    # the fast path is taken: a zero over a finite b keeps its sign from a and b
    divide(4, np.array([0.0, -0.0, 0.0, -0.0], np.float32).ctypes.data, out.ctypes.data,
           np.float32(3.0))
    assert np.signbit(out[:4]).tolist() == [False, True, False, True]


def test_float16_division_by_a_uniform_divisor_is_numpys_float16_quotient():
    """``fa_divbyh_f32(a, b, fa_divrcph_f32(b))``, the float16 division by a uniform divisor
    (float16 values computed in float32: selects, no plain division), rounded to float16, against
    NumPy's float16 ``a / b`` bit for bit: every float16 dividend (zeros, subnormals, infinities
    and NaN among them) over divisors of every kind, 0, ±inf and NaN too (their true reciprocal
    makes ``a * y`` the IEEE quotient)."""
    seed = 1612
    rng = np.random.default_rng(seed)
    print(f"{seed=}")
    a = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    named = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -6e-8, 65504.0, 0.9, 1.0, -3.0,
                      1e-5, 2.0 ** -14], np.float16)
    sampled = rng.integers(0, 1 << 16, 48, dtype=np.uint64).astype(np.uint16).view(np.float16)
    namespace = dict(CPU_NAMESPACE)
    exec("def k(n, p0, p1, b):\n    y = fa_divrcph_f32(b)\n    for i in range(n):\n"
         "        st_f16(p1, i, fa_divbyh_f32(cv_f32(ld_f16(p0, i)), b, y))\n", namespace)
    divide = njit(namespace["k"])
    out = np.empty_like(a)
    for b in np.concatenate([named, sampled]):
        divide(a.size, a.ctypes.data, out.ctypes.data, np.float32(b))
        with np.errstate(all="ignore"):
            want = a / b
        same = (out.view(np.uint16) == want.view(np.uint16)) | (np.isnan(out) & np.isnan(want))
        assert same.all(), (f"{int((~same).sum())} differ over b={b!r}: first "
                            f"a={a[~same][0]!r} gave {out[~same][0]!r}, NumPy {want[~same][0]!r}")
