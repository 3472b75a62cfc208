"""Scalar helper functions that generated kernels call, as plain Python.

The op table's templates call these (``fa_fdiv_i(a, b)`` …) where one expression can't say what
NumPy does: integer division by zero gives 0, ``INT_MIN // -1`` wraps, shifts past the bit width
give
0 or -1, maximum propagates NaN, float ``//`` and ``%`` follow NumPy's ``npy_divmod``; and the
functions no backend's ``math`` has in the form NumPy and SciPy compute them (``logaddexp``,
``heaviside``, ``gcd``, ``expit``, ``logit``, ``erfinv``, ``nextafter``). Each backend
compiles them with its own namespace as globals (numba device functions on cuda, ``njit`` on cpu,
plain Python on sim), so the names they use — ``cv_i64``, ``fa_fmod_f32``, ``math`` — are the
backend's. Pure text and functions: imports nothing heavy. The random-number helpers
(Philox4x32-10 and its conversions, for ``fa.random``) also call ``fa_fma_f64`` and
``fa_fma_f32``, exact fused multiply-adds that every backend supplies.
"""

from __future__ import annotations

from functools import cache

from . import minifloat
from .complexlib import COMPLEX_SOURCE
from .philox import RANDOM_SOURCE

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

# nextafter, as NumPy computes it (C's nextafter for float32 and float64, npy_half_nextafter for
# float16): one step in the integer image of the float's bits, which is ordered as the magnitudes
# are, so +1 moves away from zero and -1 toward it (from the smallest subnormal to a zero of x's
# sign; from the largest finite value to an infinity). fa_f32_bits / fa_bits_f32 (int32) and
# fa_f64_bits / fa_bits_f64 (int64) reinterpret a float's bits, each backend's own (libdevice on
# cuda, a scalar view on cpu and sim). A float16 value is held in a float32 (exactly): its 10
# fraction bits are the top of float32's 23, so a float16 step is 2**13 there while it is normal;
# below float16's smallest normal 2**-14 the steps are float16's subnormal spacing 2**-24, exact
# float32 arithmetic. Equal operands give y (C), or x for float16 (NumPy's half: 0 toward -0 stays
# 0); a NaN operand gives a NaN (float16: the positive quiet NaN, as NumPy's).
_NEXTAFTER_SOURCE = '''
def fa_nextafter_f64(x, y):
    if x != x or y != y:
        return cv_f64(x + y)
    if x == y:
        return cv_f64(y)
    if x == cv_f64(0.0):
        return cv_f64(math.copysign(cv_f64(5e-324), y))
    b = cv_i64(fa_f64_bits(x))
    if (x < y) == (x > cv_f64(0.0)):
        return fa_bits_f64(cv_i64(b + cv_i64(1)))
    return fa_bits_f64(cv_i64(b - cv_i64(1)))

def fa_nextafter_f32(x, y):
    if x != x or y != y:
        return cv_f32(x + y)
    if x == y:
        return cv_f32(y)
    if x == cv_f32(0.0):
        return cv_f32(math.copysign(cv_f32(1.401298464324817e-45), y))
    b = cv_i32(fa_f32_bits(x))
    if (x < y) == (x > cv_f32(0.0)):
        return fa_bits_f32(cv_i32(b + cv_i32(1)))
    return fa_bits_f32(cv_i32(b - cv_i32(1)))

def fa_nextafter_f16(x, y):
    tiny = cv_f32(5.960464477539063e-08)
    if x != x or y != y:
        return cv_f32(math.nan)
    if x == y:
        return cv_f32(x)
    if x == cv_f32(0.0):
        return cv_f32(math.copysign(tiny, y))
    away = (x < y) == (x > cv_f32(0.0))
    a = cv_f32(abs(x))
    if a == cv_f32(math.inf):
        return cv_f32(math.copysign(cv_f32(65504.0), x))
    if a == cv_f32(65504.0) and away:
        return cv_f32(math.copysign(cv_f32(math.inf), x))
    if a < cv_f32(6.103515625e-05) or (a == cv_f32(6.103515625e-05) and not away):
        step = tiny if away else cv_f32(0.0) - tiny
        return cv_f32(math.copysign(cv_f32(a + step), x))
    b = cv_i32(fa_f32_bits(x))
    if away:
        return fa_bits_f32(cv_i32(b + cv_i32(8192)))
    return fa_bits_f32(cv_i32(b - cv_i32(8192)))
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

def fa_take_flagged(e, i, n, site):
    # a gather's index the host never saw (runtime/indexflags.py): wrapped as fa_take_index,
    # then clamped by selects (min/max: no branch, so the gather's load is never skipped), and
    # an index outside [-n, n) recorded in the error word e by a compare-and-swap behind a
    # branch that only such an index takes (cuda/atomics.py)
    j = cv_i64(i)
    w = j + n if j < 0 else j
    fa_flag_index(e, (w < 0) | (w >= n), site, j)
    return min(max(w, cv_i64(0)), cv_i64(n - 1))

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



def helper_source() -> str:
    """All helper functions as one source text (for display and for backends that exec it)."""
    floats = "".join(_FLOAT_SOURCE.replace("{t}", t) for t in ("f32", "f64"))
    return (_INTEGER_SOURCE + _ERFINV_SOURCE + floats + COMPLEX_SOURCE + _SIGN_INT_SOURCE
            + _NEXTAFTER_SOURCE + RANDOM_SOURCE + minifloat.source())


@cache
def helpers() -> dict:
    """name → plain Python function; a backend rebinds each to its own namespace and compiles it."""
    namespace: dict = {}
    exec(compile(helper_source(), "<fusedarrays.devicelib>", "exec"), namespace)
    return {name: fn for name, fn in namespace.items() if name.startswith("fa_")}
