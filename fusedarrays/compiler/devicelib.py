"""Scalar helper functions that generated kernels call, as plain Python.

The op table's templates call these (``fa_fdiv_i(a, b)`` …) where one expression can't say what
NumPy does: integer division by zero gives 0, ``INT_MIN // -1`` wraps, shifts past the bit width
give
0 or -1, maximum propagates NaN, float ``//`` and ``%`` follow NumPy's ``npy_divmod``; and the
functions no backend's ``math`` has in the form NumPy and SciPy compute them (``logaddexp``,
``heaviside``, ``gcd``, ``expit``, ``logit``, ``erfinv``). Each backend
compiles them with its own namespace as globals (numba device functions on cuda, ``njit`` on cpu,
plain Python on sim), so the names they use — ``cv_i64``, ``fa_fmod_f32``, ``math`` — are the
backend's. Pure text and functions: imports nothing heavy. The random-number helpers
(Philox4x32-10 and its conversions, for ``fa.random``) also call ``fa_fma_f64``, an exact fused
multiply-add that every backend supplies.
"""

from __future__ import annotations

from functools import cache

# Signed helpers return through cv_i64, unsigned through cv_u64: numba unifies int64 with uint64
# as float64, so every branch must come back in one integer type. The caller's template wraps the
# result in the loop dtype's cast, which wraps to the narrow type as NumPy does.
_INTEGER_SOURCE = '''
def fa_fdiv_i(a, b):
    if b == 0:
        return cv_i64(0)
    if b == -1:
        return cv_i64(0) - cv_i64(a)
    return cv_i64(a // b)

def fa_mod_i(a, b):
    if b == 0 or b == -1:
        return cv_i64(0)
    return cv_i64(a % b)

def fa_fdiv_u(a, b):
    if b == 0:
        return cv_u64(0)
    return cv_u64(a // b)

def fa_mod_u(a, b):
    if b == 0:
        return cv_u64(0)
    return cv_u64(a % b)

def fa_pow_i(a, b):
    # NumPy raises for negative integer exponents; a kernel cannot, so it gives the truncated
    # value of a**b: 1 for a == 1, +-1 for a == -1, else 0 (documented on the op's row).
    base = cv_i64(a)
    e = cv_i64(b)
    if e < 0:
        if base == 1:
            return cv_i64(1)
        if base == -1:
            return cv_i64(1) if e % 2 == 0 else cv_i64(-1)
        return cv_i64(0)
    result = cv_i64(1)
    while e > 0:
        if e % 2 == 1:
            result = cv_i64(result * base)
        base = cv_i64(base * base)
        e = e // 2
    return result

def fa_pow_u(a, b):
    base = cv_u64(a)
    e = cv_u64(b)
    result = cv_u64(1)
    zero = cv_u64(0)
    while e > zero:
        if e % cv_u64(2) == cv_u64(1):
            result = cv_u64(result * base)
        base = cv_u64(base * base)
        e = e // cv_u64(2)
    return result

def fa_neg_u(a):
    return cv_u64(cv_u64(0) - cv_u64(a))

def fa_recip_i(a):
    if a == 1:
        return cv_i64(1)
    if a == -1:
        return cv_i64(-1)
    return cv_i64(0)

def fa_recip_u(a):
    if a == cv_u64(1):
        return cv_u64(1)
    return cv_u64(0)

def fa_shl_i(a, b, bits):
    if b < 0 or b >= bits:
        return cv_i64(0)
    return cv_i64(cv_i64(a) << cv_i64(b))

def fa_shr_i(a, b, bits):
    if b < 0 or b >= bits:
        return cv_i64(-1) if a < 0 else cv_i64(0)
    return cv_i64(cv_i64(a) >> cv_i64(b))

def fa_shl_u(a, b, bits):
    if cv_u64(b) >= cv_u64(bits):
        return cv_u64(0)
    return cv_u64(cv_u64(a) << cv_u64(b))

def fa_shr_u(a, b, bits):
    if cv_u64(b) >= cv_u64(bits):
        return cv_u64(0)
    return cv_u64(cv_u64(a) >> cv_u64(b))

def fa_lt_iu(a, b):
    return a < 0 or cv_u64(a) < b

def fa_le_iu(a, b):
    return a < 0 or cv_u64(a) <= b

def fa_lt_ui(a, b):
    return b >= 0 and a < cv_u64(b)

def fa_le_ui(a, b):
    return b >= 0 and a <= cv_u64(b)

def fa_eq_iu(a, b):
    return a >= 0 and cv_u64(a) == b

def fa_maximum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b

def fa_minimum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b

def fa_fmax(a, b):
    if b != b:
        return a
    if a != a:
        return b
    return a if a >= b else b

def fa_gcd_i(a, b):
    x = cv_i64(a)
    y = cv_i64(b)
    if x < 0:
        x = cv_i64(0) - x
    if y < 0:
        y = cv_i64(0) - y
    while y != 0:
        r = cv_i64(x % y)
        x = y
        y = r
    return x

def fa_lcm_i(a, b):
    g = fa_gcd_i(a, b)
    if g == 0:
        return cv_i64(0)
    x = cv_i64(a)
    y = cv_i64(b)
    if x < 0:
        x = cv_i64(0) - x
    if y < 0:
        y = cv_i64(0) - y
    return cv_i64(cv_i64(x // g) * y)

def fa_gcd_u(a, b):
    x = cv_u64(a)
    y = cv_u64(b)
    zero = cv_u64(0)
    while y != zero:
        r = cv_u64(x % y)
        x = y
        y = r
    return x

def fa_lcm_u(a, b):
    g = fa_gcd_u(a, b)
    if g == cv_u64(0):
        return cv_u64(0)
    return cv_u64(cv_u64(cv_u64(a) // g) * cv_u64(b))

def fa_cfmod_i(a, b):
    # C's fmod: the sign of a (Python's % has the sign of b); by 0 and INT_MIN by -1: 0
    if b == 0 or b == -1:
        return cv_i64(0)
    r = cv_i64(a % b)
    if r != 0 and (r < 0) != (a < 0):
        r = cv_i64(r - b)
    return r

def fa_popcount_u(a):
    x = cv_u64(a)
    n = cv_u64(0)
    while x != cv_u64(0):
        x = cv_u64(x & cv_u64(x - cv_u64(1)))
        n = cv_u64(n + cv_u64(1))
    return n

def fa_popcount_i(a):
    x = cv_i64(a)
    if x < 0:
        return fa_popcount_u(cv_u64(0) - cv_u64(x))
    return fa_popcount_u(cv_u64(x))

def fa_fmin(a, b):
    if b != b:
        return a
    if a != a:
        return b
    return a if a <= b else b
'''

# Float // and % follow NumPy's npy_divmod exactly; {t} is f32 or f64 and every constant is cast
# to it so that float32 stays float32 (numba would widen a float32 minus a float64 literal).
_FLOAT_SOURCE = '''
def fa_fdiv_{t}(a, b):
    zero = cv_{t}(0.0)
    if b == zero:
        return cv_{t}(a / b)
    mod = fa_fmod_{t}(a, b)
    div = cv_{t}((a - mod) / b)
    if mod != zero:
        if (b < zero) != (mod < zero):
            div = cv_{t}(div - cv_{t}(1.0))
    if div != zero:
        floordiv = fa_floor_{t}(div)
        if div - floordiv > cv_{t}(0.5):
            floordiv = cv_{t}(floordiv + cv_{t}(1.0))
        return floordiv
    return cv_{t}(math.copysign(zero, a / b))

def fa_mod_{t}(a, b):
    zero = cv_{t}(0.0)
    mod = fa_fmod_{t}(a, b)
    if b == zero:
        return mod
    if mod != zero:
        if (b < zero) != (mod < zero):
            mod = cv_{t}(mod + b)
        return mod
    return cv_{t}(math.copysign(zero, b))

def fa_logaddexp_{t}(a, b):
    # NumPy's npy_logaddexp: equal arguments (infinities too) give a + log(2)
    if a == b:
        return cv_{t}(a + cv_{t}(0.6931471805599453))
    d = cv_{t}(a - b)
    if d > cv_{t}(0.0):
        return cv_{t}(a + cv_{t}(math.log1p(cv_{t}(math.exp(cv_{t}(0.0) - d)))))
    if d <= cv_{t}(0.0):
        return cv_{t}(b + cv_{t}(math.log1p(cv_{t}(math.exp(d)))))
    return d

def fa_logaddexp2_{t}(a, b):
    if a == b:
        return cv_{t}(a + cv_{t}(1.0))
    d = cv_{t}(a - b)
    log2e = cv_{t}(1.4426950408889634)
    if d > cv_{t}(0.0):
        return cv_{t}(a + log2e * cv_{t}(math.log1p(cv_{t}(fa_exp2_{t}(cv_{t}(0.0) - d)))))
    if d <= cv_{t}(0.0):
        return cv_{t}(b + log2e * cv_{t}(math.log1p(cv_{t}(fa_exp2_{t}(d)))))
    return d

def fa_deg2rad_{t}(a):
    return cv_{t}(a * cv_{t}(0.017453292519943295))

def fa_rad2deg_{t}(a):
    return cv_{t}(a * cv_{t}(57.29577951308232))

def fa_heaviside_{t}(a, b):
    zero = cv_{t}(0.0)
    if a != a:
        return a
    if a == zero:
        return cv_{t}(b)
    if a < zero:
        return zero
    return cv_{t}(1.0)

def fa_expit_{t}(a):
    # SciPy's form: exp(a) / (1 + exp(a)) below 0, so neither branch overflows to inf / inf
    one = cv_{t}(1.0)
    if a < cv_{t}(0.0):
        e = cv_{t}(math.exp(a))
        return cv_{t}(e / cv_{t}(one + e))
    return cv_{t}(one / cv_{t}(one + cv_{t}(math.exp(cv_{t}(0.0) - a))))

def fa_logit_{t}(a):
    # SciPy's form: near 1/2 the difference of two log1p keeps the digits that x/(1-x) loses
    one = cv_{t}(1.0)
    if a < cv_{t}(0.3) or a > cv_{t}(0.65):
        return cv_{t}(math.log(cv_{t}(a / cv_{t}(one - a))))
    s = cv_{t}(cv_{t}(2.0) * cv_{t}(a - cv_{t}(0.5)))
    return cv_{t}(cv_{t}(math.log1p(s)) - cv_{t}(math.log1p(cv_{t}(0.0) - s)))

def fa_erfinv_{t}(a):
    return cv_{t}(fa_erfinv_f64_core(cv_f64(a)))

def fa_sign_{t}(a):
    zero = cv_{t}(0.0)
    if a > zero:
        return cv_{t}(1.0)
    if a < zero:
        return cv_{t}(-1.0)
    return cv_{t}(a - a)
'''

# erfinv: Giles' single-precision approximation ("Approximating the erfinv function", GPU
# Computing Gems, 2011) as the start, then two Newton steps in float64 on erf (|y| <= 1/2) or
# on erfc (|y| > 1/2, where 1 - |y| is exact and erf(x) - y would cancel), so float64 results
# are within a few ulp of SciPy's and float32 ones round from them.
_ERFINV_SOURCE = '''
def fa_erfinv_f64_core(y):
    if y != y or y < -1.0 or y > 1.0:
        return math.nan
    if y == 1.0:
        return math.inf
    if y == -1.0:
        return -math.inf
    a = abs(y)
    w = -math.log((1.0 - a) * (1.0 + a))
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    x = p * a
    if a == 0.0:
        return y
    for _ in range(2):
        slope = 1.1283791670955126 * math.exp(-x * x)
        if a <= 0.5:
            x = x - (math.erf(x) - a) / slope
        else:
            x = x + (math.erfc(x) - (1.0 - a)) / slope
    return math.copysign(x, y)
'''

_SIGN_INT_SOURCE = '''
def fa_take_index(i, n):
    # a gather's index (fa.take): negative values count from the end; the host checked the
    # range, and an index that still lies outside reads the nearest end, never past it
    j = cv_i64(i)
    if j < 0:
        j += n
    if j < 0:
        return cv_i64(0)
    if j >= n:
        return cv_i64(n - 1)
    return j

def fa_sign_i(a):
    if a > 0:
        return cv_i64(1)
    if a < 0:
        return cv_i64(-1)
    return cv_i64(0)

def fa_sign_u(a):
    if a > cv_u64(0):
        return cv_u64(1)
    return cv_u64(0)
'''


# Counter-based random numbers (fa.random): Philox4x32-10 (Salmon et al., SC'11, as Random123
# defines it) and the conversions of its 32-bit words. Every value is a pure function of (seed,
# key, element index), so any backend, schedule or vector width gives the same bits. Words are
# uint32, cast back after each operation (numba computes in 64 bits; the casts let NVVM keep 32-bit
# registers), their products the widening 32 x 32 -> 64 multiply; every constant goes through
# cv_u32/cv_u64: numba types uint64 op int64 as a float.
# The Box-Muller transform computes its logarithm and sine/cosine here from IEEE-exact
# operations (+ - * / sqrt and fused multiply-adds through fa_fma_f64, which each backend computes
# exactly):
# libdevice's and libm's transcendental functions differ in their last bits. No product feeds an
# addition outside an fma, so NVVM's multiply-add contraction has nothing to change.
_RANDOM_SOURCE = '''
def fa_philox(c0, c1, c2, c3, k0, k1):
    m0 = cv_u64(0xD2511F53)
    m1 = cv_u64(0xCD9E8D57)
    w0 = cv_u32(0x9E3779B9)
    w1 = cv_u32(0xBB67AE85)
    half = cv_u64(32)
    for _ in range(10):
        p0 = cv_u64(c0) * m0
        p1 = cv_u64(c2) * m1
        c0, c1, c2, c3 = (cv_u32(cv_u32(p1 >> half) ^ c1 ^ k0), cv_u32(p1),
                          cv_u32(cv_u32(p0 >> half) ^ c3 ^ k1), cv_u32(p0))
        k0 = cv_u32(k0 + w0)
        k1 = cv_u32(k1 + w1)
    return c0, c1, c2, c3

def fa_philox_at(seed, key, block):
    # counter (block low, block high, key low, key high); Philox key = the 64-bit seed
    half = cv_u64(32)
    s = cv_u64(seed)
    k = cv_u64(key)
    b = cv_u64(block)
    return fa_philox(cv_u32(b), cv_u32(b >> half), cv_u32(k), cv_u32(k >> half), cv_u32(s),
                     cv_u32(s >> half))

def fa_word(h, j):
    if j == 0:
        return h[0]
    if j == 1:
        return h[1]
    if j == 2:
        return h[2]
    return h[3]

def fa_u01_f32(w):
    # the top 24 bits, times 2**-24: NumPy's float32 conversion of a 32-bit word (exact)
    return cv_f32(cv_u32(w) >> cv_u32(8)) * cv_f32(5.9604644775390625e-08)

def fa_u01_f64(a, b):
    # 53 bits from two words, as NumPy's next_double: (a >> 5) * 2**26 + (b >> 6), times 2**-53
    hi = cv_f64(cv_u64(a) >> cv_u64(5))
    lo = cv_f64(cv_u64(b) >> cv_u64(6))
    return (hi * 67108864.0 + lo) * 1.1102230246251565e-16

def fa_int_span(a, b, span):
    # floor(w * span / 2**64) for the 64-bit word w = (a, b), span <= 2**32: Lemire's
    # multiply-shift without the rejection step (bias below span / 2**64)
    half = cv_u64(32)
    s = cv_u64(span)
    return cv_i64((cv_u64(a) * s + ((cv_u64(b) * s) >> half)) >> half)

def fa_bm_log(a):
    # u = (a + 1) / 2**32 in (0, 1] as 2**(e - 32) m, m in [sqrt(1/2), sqrt(2)); returns
    # s = (m - 1) / (m + 1) (ln m = 2 atanh s, |s| < 0.172), s * s and e - 32
    k = cv_i64(a) + 1
    e = cv_i64(0)
    t = k
    if t >= 65536:
        t = t >> 16
        e += 16
    if t >= 256:
        t = t >> 8
        e += 8
    if t >= 16:
        t = t >> 4
        e += 4
    if t >= 4:
        t = t >> 2
        e += 2
    if t >= 2:
        e += 1
    m = cv_f64(k << (32 - e)) * 2.3283064365386963e-10
    if m > 1.4142135623730951:
        m = m * 0.5
        e += 1
    s = (m - 1.0) / (m + 1.0)
    return s, s * s, cv_f64(e - 32)

def fa_bm_angle(b):
    # the angle 2 pi b / 2**32 as its nearest quarter turn q and theta in [-pi/4, pi/4)
    w = (cv_i64(b) + 536870912) & 4294967295
    theta = cv_f64((w & 1073741823) - 536870912) * 1.4629180792671596e-09
    return theta, theta * theta, w >> 30

def fa_bm_turn(r, cs, sn, q):
    if q == 1:
        cs, sn = -sn, cs
    elif q == 2:
        cs, sn = -cs, -sn
    elif q == 3:
        cs, sn = sn, -cs
    return r * cs, r * sn

def fa_bm(a, b):
    # Box-Muller on u = (a + 1) / 2**32 in (0, 1] and the angle 2 pi b / 2**32, to float64
    # accuracy: r = sqrt(-2 ln u), (r cos, r sin)
    s, z, f = fa_bm_log(a)
    h = fa_fma_f64(z, 0.047619047619047616, 0.05263157894736842)
    h = fa_fma_f64(z, h, 0.058823529411764705)
    h = fa_fma_f64(z, h, 0.06666666666666667)
    h = fa_fma_f64(z, h, 0.07692307692307693)
    h = fa_fma_f64(z, h, 0.09090909090909091)
    h = fa_fma_f64(z, h, 0.1111111111111111)
    h = fa_fma_f64(z, h, 0.14285714285714285)
    h = fa_fma_f64(z, h, 0.2)
    h = fa_fma_f64(z, h, 0.3333333333333333)
    q = fa_fma_f64(z, h, 1.0)
    # ln u = (e - 32) ln 2 + ln m; ln 2's high part has 40 bits, so (e - 32) times it is exact
    lnu = fa_fma_f64(f, -1.724176357242868e-13, fa_fma_f64(s + s, q, f * 0.6931471805601177))
    r = math.sqrt(-2.0 * lnu)
    theta, z, quarter = fa_bm_angle(b)
    ps = fa_fma_f64(z, 2.8114572543455206e-15, -7.647163731819816e-13)
    ps = fa_fma_f64(z, ps, 1.6059043836821613e-10)
    ps = fa_fma_f64(z, ps, -2.505210838544172e-08)
    ps = fa_fma_f64(z, ps, 2.7557319223985893e-06)
    ps = fa_fma_f64(z, ps, -0.0001984126984126984)
    ps = fa_fma_f64(z, ps, 0.008333333333333333)
    ps = fa_fma_f64(z, ps, -0.16666666666666666)
    sn = theta * fa_fma_f64(z, ps, 1.0)
    pc = fa_fma_f64(z, 4.779477332387385e-14, -1.1470745597729725e-11)
    pc = fa_fma_f64(z, pc, 2.08767569878681e-09)
    pc = fa_fma_f64(z, pc, -2.755731922398589e-07)
    pc = fa_fma_f64(z, pc, 2.48015873015873e-05)
    pc = fa_fma_f64(z, pc, -0.001388888888888889)
    pc = fa_fma_f64(z, pc, 0.041666666666666664)
    pc = fa_fma_f64(z, pc, -0.5)
    return fa_bm_turn(r, fa_fma_f64(z, pc, 1.0), sn, quarter)

def fa_bm_f32(a, b):
    # fa_bm to float32 accuracy (relative error below 1e-10 before the rounding to float32):
    # the same exact operations, shorter series
    s, z, f = fa_bm_log(a)
    h = fa_fma_f64(z, 0.09090909090909091, 0.1111111111111111)
    h = fa_fma_f64(z, h, 0.14285714285714285)
    h = fa_fma_f64(z, h, 0.2)
    h = fa_fma_f64(z, h, 0.3333333333333333)
    q = fa_fma_f64(z, h, 1.0)
    lnu = fa_fma_f64(f, -1.724176357242868e-13, fa_fma_f64(s + s, q, f * 0.6931471805601177))
    r = math.sqrt(-2.0 * lnu)
    theta, z, quarter = fa_bm_angle(b)
    ps = fa_fma_f64(z, -2.505210838544172e-08, 2.7557319223985893e-06)
    ps = fa_fma_f64(z, ps, -0.0001984126984126984)
    ps = fa_fma_f64(z, ps, 0.008333333333333333)
    ps = fa_fma_f64(z, ps, -0.16666666666666666)
    sn = theta * fa_fma_f64(z, ps, 1.0)
    pc = fa_fma_f64(z, -2.755731922398589e-07, 2.48015873015873e-05)
    pc = fa_fma_f64(z, pc, -0.001388888888888889)
    pc = fa_fma_f64(z, pc, 0.041666666666666664)
    pc = fa_fma_f64(z, pc, -0.5)
    return fa_bm_turn(r, fa_fma_f64(z, pc, 1.0), sn, quarter)

def fa_rand_uniform_f32(seed, key, g):
    return fa_u01_f32(fa_word(fa_philox_at(seed, key, g >> 2), g & 3))

def fa_rand_uniform_f64(seed, key, g):
    h = fa_philox_at(seed, key, g >> 1)
    j = (g & 1) * 2
    return fa_u01_f64(fa_word(h, j), fa_word(h, j + 1))

def fa_rand_normal(seed, key, g):
    h = fa_philox_at(seed, key, g >> 2)
    j = g & 2
    pair = fa_bm(fa_word(h, j), fa_word(h, j + 1))
    if (g & 1) == 0:
        return pair[0]
    return pair[1]

def fa_rand_normal_f32(seed, key, g):
    h = fa_philox_at(seed, key, g >> 2)
    j = g & 2
    pair = fa_bm_f32(fa_word(h, j), fa_word(h, j + 1))
    if (g & 1) == 0:
        return cv_f32(pair[0])
    return cv_f32(pair[1])

def fa_rand_integers(seed, key, g, low, span):
    h = fa_philox_at(seed, key, g >> 1)
    j = (g & 1) * 2
    return cv_i64(low) + fa_int_span(fa_word(h, j), fa_word(h, j + 1), span)
'''


def helper_source() -> str:
    """All helper functions as one source text (for display and for backends that exec it)."""
    floats = "".join(_FLOAT_SOURCE.replace("{t}", t) for t in ("f32", "f64"))
    return _INTEGER_SOURCE + _ERFINV_SOURCE + floats + _SIGN_INT_SOURCE + _RANDOM_SOURCE


@cache
def helpers() -> dict:
    """name → plain Python function; a backend rebinds each to its own namespace and compiles it."""
    namespace: dict = {}
    exec(compile(helper_source(), "<fusedarrays.devicelib>", "exec"), namespace)
    return {name: fn for name, fn in namespace.items() if name.startswith("fa_")}
