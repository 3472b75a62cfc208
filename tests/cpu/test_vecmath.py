"""cpu/vecmath.py's float32 exp, log, tanh, sin and cos in the cpu kernels: within 0.51 ulp of
the exact value (NumPy's float64 result) over the whole float32 range, special values as NumPy's,
and beside NumPy's own float32 loops (1.4-4 ulp); sin and cos of chunks whose arguments are all
below NEAR within NumPy's 1.5 ulp. Fresh random bit patterns (every finite float32 is as likely
as its bits), the hardest reductions of each exponent, a seed printed per case."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.cpu.vecmath import NEAR

SPECIAL = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754944e-38,
                      3.4028235e38, -3.4028235e38, 1.5707964, -1.5707964, 3.1415927, 6.2831855,
                      88.72284, 88.72283, -87.33655, -103.97208, -104.0, 9.01, -9.01, 1e-4,
                      2.0**-17, 2.0**-18, 1e5, 1e10, 1.2e36, 0.5, 1.0, -1.0, 2.0**24, 2.0**63])


NEAR_ULPS = 1.5   # NumPy's AVX-512 float32 sin and cos: 1.39-1.49 ulp measured here


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the float32 spacing at exact (0 where both are the same
    special value)."""
    with np.errstate(all="ignore"):
        spacing = np.spacing(np.abs(exact.astype(np.float32))).astype(np.float64)
        err = np.abs(got.astype(np.float64) - exact) / spacing
        same = (np.isnan(got) & np.isnan(exact)) | (got.astype(np.float64) == exact)
    return np.where(same, 0.0, err)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sin", "cos"])
def test_float32_within_half_an_ulp_over_the_whole_range(name):
    seed = 3611 + ["exp", "log", "tanh", "sin", "cos"].index(name)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, size=1 << 20, dtype=np.uint64).astype(np.uint32)
    normal = (rng.standard_normal(1 << 16) * 10).astype(np.float32)
    x = np.concatenate([bits.view(np.float32), SPECIAL, normal])
    with np.errstate(all="ignore"):
        exact = getattr(np, name)(x.astype(np.float64))
        mine = getattr(np, name)(x)
    got = getattr(fa, name)(fa.asarray(x)).get()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact.astype(np.float32)))
    err, numpys = ulps(got, exact), ulps(mine, exact)
    # sin and cos below NEAR may come from the near functions (a chunk whose arguments are all
    # below it): NumPy's bound there, and no worse than NumPy on those arguments
    near = (np.abs(x) < NEAR) if name in ("sin", "cos") else np.zeros(x.shape, bool)
    for part, bound in ((~near, 0.51), (near, NEAR_ULPS)):
        if part.any():
            worst = int(np.nanargmax(np.where(part, err, -1)))
            assert err[worst] <= bound, (name, x[worst], got[worst], exact[worst])
            assert np.nanmax(err[part]) <= np.nanmax(numpys[part]) + 0.05   # NumPy's level
    assert np.all(np.signbit(got[x == 0]) == np.signbit(mine[x == 0]))   # ±0 as NumPy


def hard_reductions() -> np.ndarray:
    """float32 values nearest to a multiple of pi/2 for each binary exponent of the range: for
    x = m * 2**s, m * frac(2**s * 2/pi) nearest an integer, m a multiple of a convergent's
    denominator of that fraction (its continued fraction, from 2/pi's first 320 bits)."""
    from fractions import Fraction

    from fusedarrays.cpu.vecmath import TWO_OVER_PI  # floor(2/pi * 2**320)

    found = []
    for s in range(-23, 105):
        alpha = Fraction(TWO_OVER_PI * 2 ** max(s, 0), 2 ** (320 - min(s, 0))) % 1
        h0, h1, q0, q1, rest = 0, 1, 1, 0, alpha
        while rest and q1 < 2**24:
            t = int(rest)
            h0, h1, q0, q1 = h1, t * h1 + h0, q1, t * q1 + q0
            if 0 < q1 < 2**24:
                m = q1 * -(-2**23 // q1)   # the smallest multiple with 24 bits
                if m < 2**24:
                    found.append(m * 2.0**s)
            rest = rest - t
            rest = 1 / rest if rest else 0
    return np.float32(found)


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_and_cos_near_multiples_of_half_pi(name):
    # the reduction's hard cases: remainders as small as float32 allows (|sin| down to ~3e-9
    # at 1e28), at every exponent, both signs; and the neighbours of k * pi/2 for k to 2**24
    seed = 3625 + (name == "cos")
    print("seed", seed)
    hard = hard_reductions()
    assert hard.size > 1000 and np.abs(np.sin(hard.astype(np.float64))).min() < 1e-8
    k = np.random.default_rng(seed).integers(1, 2**24, 1 << 16).astype(np.float64)
    x = np.concatenate([hard, -hard, (k * (np.pi / 2)).astype(np.float32)])
    exact = getattr(np, name)(x.astype(np.float64))
    got = getattr(fa, name)(fa.asarray(x)).get()
    err = ulps(got, exact)
    worst = int(np.argmax(err))
    assert err[worst] <= 0.51, (name, x[worst], got[worst], exact[worst])


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_near_sin_and_cos_are_numpys_accuracy_and_far_chunks_stay_exact(name):
    # every argument of a chunk below NEAR: the float32 near functions, within NumPy's bound
    # and no worse than NumPy on the same values (the hard cases below NEAR among them)
    from fusedarrays.compiler.targets.cpu import NEAR_LIMIT

    assert NEAR_LIMIT <= NEAR   # the renderer takes them only where they are accurate
    seed = 3630 + (name == "cos")
    print("seed", seed)
    rng = np.random.default_rng(seed)
    hard = hard_reductions()
    hard = hard[np.abs(hard) < NEAR]
    k = np.arange(1, int(NEAR / (np.pi / 2)))
    x = np.concatenate([rng.uniform(-r, r, 1 << 18) for r in (1.0, 10.0, 1e3, NEAR)]
                       + [hard, -hard, (k * (np.pi / 2))]).astype(np.float32)
    x = x[np.abs(x) < NEAR]
    exact = getattr(np, name)(x.astype(np.float64))
    got = getattr(fa, name)(fa.asarray(x)).get()
    err = ulps(got, exact)
    assert err.max() <= NEAR_ULPS, (name, x[np.argmax(err)])
    # NumPy's level: its own worst on these values is 1.45-1.46, the near functions' 1.46-1.48
    assert err.max() <= ulps(getattr(np, name)(x), exact).max() + 0.05
    assert err.max() > 0.51   # the near functions did run (the exact ones stay within 0.51)
    # a chunk holding one far argument (or a NaN) takes the exact functions, the others not
    chunk = 1 << 14
    y = rng.uniform(-10, 10, 4 * chunk).astype(np.float32)
    y[chunk + 5], y[3 * chunk + 7] = 3e5, np.nan
    got = getattr(fa, name)(fa.asarray(y)).get()
    exact = getattr(np, name)(y.astype(np.float64))
    err = ulps(got, exact)
    assert err[chunk:2 * chunk].max() <= 0.51 and np.isnan(got[3 * chunk + 7])
    assert err[3 * chunk:].max() <= 0.51 and err[:chunk].max() <= NEAR_ULPS
    zeros = np.float32([0.0, -0.0] * 8)
    np.testing.assert_array_equal(np.signbit(getattr(fa, name)(fa.asarray(zeros)).get()),
                                  np.signbit(getattr(np, name)(zeros)))


def test_near_chunks_in_every_schedule():
    # rows (a broadcast row), tiled (a transpose), nd and flat walks check their chunks alike; a
    # row holding a far value sends its chunk to the exact functions
    seed = 3632
    print("seed", seed)
    g = np.random.default_rng(seed)
    a = (g.standard_normal((300, 257)) * 20).astype(np.float32)
    b = (g.standard_normal(257) * 20).astype(np.float32)
    a[7, 3] = 1e6
    x, y = fa.asarray(a), fa.asarray(b)
    # each against float64 sin or cos of the float32 argument fusedarrays computes
    cases = [(fa.sin(x + y[None, :]), np.sin, a + b[None, :]),
             (fa.cos(x.T * 2), np.cos, a.T * np.float32(2)),
             (fa.sin(x[::-1, ::-2]), np.sin, a[::-1, ::-2])]
    for got, fn, arg in cases:
        assert "far = 0" in fa.explain(got).source
        assert ulps(got.get(), fn(arg.astype(np.float64))).max() <= NEAR_ULPS


def test_views_and_float64_arguments_keep_their_routes():
    seed = 3620
    print("seed", seed)
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((300, 257)) * 100).astype(np.float32)
    x = fa.asarray(a)
    got = (fa.sin(x[::-2, 3:].T) + fa.cos(x[::-2, 3:].T)).get()
    exact = np.sin(a[::-2, 3:].T.astype(np.float64)) + np.cos(a[::-2, 3:].T.astype(np.float64))
    np.testing.assert_allclose(got, exact, rtol=0, atol=4e-7)
    d = rng.standard_normal(1000) * 1e6   # float64: numba's math, as before
    np.testing.assert_allclose(fa.sin(fa.asarray(d)).get(), np.sin(d), rtol=1e-15, atol=1e-15)


def test_a_kernel_with_many_calls_takes_them_as_calls():
    # past vecmath.INLINE_LIMIT the functions are called, not inlined (numba's IR passes grow with
    # the square of an inlined kernel's length): the same values, a compile of seconds
    from fusedarrays.cpu import vecmath

    seed = 3621
    print("seed", seed)
    a = (np.random.default_rng(seed).standard_normal(5000) * 30).astype(np.float32)
    x, got, want = fa.asarray(a), fa.asarray(a), a
    for k in range(6):   # 12 calls of sin and cos in one kernel, each rounded to float32
        got = fa.sin(got) + fa.cos(x * np.float32(k))
        want = np.sin(want) + np.cos(a * np.float32(k))
    assert vecmath.inlined_calls(fa.explain(got).source) > vecmath.INLINE_LIMIT
    np.testing.assert_allclose(got.get(), want, rtol=0, atol=1e-5)
