"""The complex helpers of the op table's ``c`` templates, as source text that :mod:`.devicelib`
joins to its own helpers (each backend compiles them with its namespace as globals: ``cv_c64``,
``math`` …): NumPy's complex division and reciprocal, sin, cos, tan and their hyperbolic forms,
the inverse trigonometric and hyperbolic functions, NumPy 2's complex ``sign``, and NumPy's
lexicographic complex order.

Where it sits: under :mod:`.devicelib` (pure text, imports nothing).
"""

# Complex helpers, ``{t}`` the complex code and ``{r}`` its parts' (c64: f32). The functions
# numba-cuda's cmath lowers through a call it compiles for the current device (sin, cos, tanh …:
# no PTX without a GPU) are written here from real math, as C99's Annex G and NumPy's npy_math
# compute them, so every backend runs the same formulas. A part that is exactly 0 stays 0 where
# the product with an infinite factor would make it NaN.
_PER_TYPE = '''
def fa_csinh_{t}(z):
    # C99 Annex G (FreeBSD's csinh, which NumPy's npy_csinh follows) where a part is not finite
    x = z.real
    y = z.imag
    if y == cv_{r}(0.0):
        return cv_{t}(complex(math.sinh(x), y))
    if math.isfinite(x) and math.isfinite(y):
        if abs(x) > cv_{r}({huge}):
            # sinh x and cosh x overflow where their products with cos y, sin y need not:
            # e^|x| / 2 as two halves around the factor
            e = math.exp(abs(x) * cv_{r}(0.5))
            sign = math.copysign(cv_{r}(1.0), x)
            return cv_{t}(complex(sign * (e * (cv_{r}(0.5) * math.cos(y)) * e),
                                  e * (cv_{r}(0.5) * math.sin(y)) * e))
        return cv_{t}(complex(math.sinh(x) * math.cos(y), math.cosh(x) * math.sin(y)))
    if x == cv_{r}(0.0):
        return cv_{t}(complex(x, y - y))
    if math.isinf(x):
        if math.isfinite(y):
            return cv_{t}(complex(x * math.cos(y), abs(x) * math.sin(y)))
        return cv_{t}(complex(x * x, x * (y - y)))
    return cv_{t}(complex((x * x) * (y - y), (x + x) * (y - y)))

def fa_ccosh_{t}(z):
    # C99 Annex G (FreeBSD's ccosh) where a part is not finite
    x = z.real
    y = z.imag
    if y == cv_{r}(0.0):
        return cv_{t}(complex(math.cosh(x), math.copysign(cv_{r}(0.0), x) * y))
    if math.isfinite(x) and math.isfinite(y):
        if abs(x) > cv_{r}({huge}):
            e = math.exp(abs(x) * cv_{r}(0.5))
            sign = math.copysign(cv_{r}(1.0), x)
            return cv_{t}(complex(e * (cv_{r}(0.5) * math.cos(y)) * e,
                                  sign * (e * (cv_{r}(0.5) * math.sin(y)) * e)))
        return cv_{t}(complex(math.cosh(x) * math.cos(y), math.sinh(x) * math.sin(y)))
    if x == cv_{r}(0.0):
        return cv_{t}(complex(y - y, x * math.copysign(cv_{r}(0.0), y)))
    if math.isinf(x):
        if math.isfinite(y):
            return cv_{t}(complex(abs(x) * math.cos(y), x * math.sin(y)))
        return cv_{t}(complex(x * x, x * (y - y)))
    return cv_{t}(complex((x * x) * (y - y), (x + x) * (y - y)))

def fa_cexp_{t}(z):
    # exp(x + 0i) = exp(x) + 0i: cmath's cos(0) * inf is inf, but sin(0) * inf NaN; past the
    # overflow of e^x, e^(x/2) twice around cos y and sin y (a finite product stays finite)
    x = z.real
    y = z.imag
    if y == cv_{r}(0.0):
        return cv_{t}(complex(math.exp(x), y))
    if x > cv_{r}({huge}) and math.isfinite(x) and math.isfinite(y):
        e = math.exp(x * cv_{r}(0.5))
        return cv_{t}(complex(e * math.cos(y) * e, e * math.sin(y) * e))
    return cv_{t}(cmath.exp(z))

def fa_csqrt_{t}(z):
    # in complex128: numba's complex64 sqrt and log overflow in float32 on the way
    return cv_{t}(cmath.sqrt(cv_c128(z)))

def fa_clog_{t}(z):
    return cv_{t}(cmath.log(cv_c128(z)))

def fa_casin_{t}(z):
    # the inverse functions: numba's port of CPython's cmath (Kahan's branch cuts), in
    # complex128 as sqrt and log, and C99's values (NumPy's) where numba's differ: a NaN part
    # beside a zero or a finite one. asin z = -i asinh(iz), atan z = -i atanh(iz) (C99's
    # definitions), so their special values follow asinh's and atanh's
    w = fa_casinh_c128(complex(-cv_f64(z.imag), cv_f64(z.real)))
    return cv_{t}(complex(w.imag, -w.real))

def fa_cacos_{t}(z):
    if z.real == cv_{r}(0.0) and z.imag != z.imag:
        return cv_{t}(complex(cv_{r}(1.5707963267948966), z.imag))
    return cv_{t}(cmath.acos(cv_c128(z)))

def fa_catan_{t}(z):
    w = fa_catanh_c128(complex(-cv_f64(z.imag), cv_f64(z.real)))
    return cv_{t}(complex(w.imag, -w.real))

def fa_casinh_{t}(z):
    if z.real != z.real and z.imag == cv_{r}(0.0):
        return cv_{t}(complex(z.real, z.imag))
    return cv_{t}(cmath.asinh(cv_c128(z)))

def fa_catanh_{t}(z):
    if z.real == cv_{r}(0.0) and z.imag != z.imag:
        return cv_{t}(complex(z.real, z.imag))
    if z.real != z.real and math.isfinite(z.imag):
        return cv_{t}(complex(z.real, z.real))
    return cv_{t}(cmath.atanh(cv_c128(z)))

def fa_cacosh_{t}(z):
    # C99's acosh z = |Im w| + i copysign(Re w, Im z), w = acos z (numba-cuda lowers
    # cmath.acosh through a call compiled for the current device: no PTX without a GPU)
    w = fa_cacos_c128(cv_c128(z))
    return cv_{t}(complex(abs(w.imag), math.copysign(w.real, cv_f64(z.imag))))

def fa_clog2_{t}(z):
    # NumPy's: log z with both parts times log2(e)
    w = fa_clog_{t}(z)
    return cv_{t}(complex(w.real * cv_{r}(1.4426950408889634),
                          w.imag * cv_{r}(1.4426950408889634)))

def fa_clog10_{t}(z):
    w = fa_clog_{t}(z)
    return cv_{t}(complex(w.real * cv_{r}(0.4342944819032518),
                          w.imag * cv_{r}(0.4342944819032518)))

def fa_clog1p_{t}(z):
    # NumPy's: log |1 + z| + i arg(1 + z)
    x = z.real + cv_{r}(1.0)
    return cv_{t}(complex(math.log(math.hypot(x, z.imag)), math.atan2(z.imag, x)))

def fa_cexpm1_{t}(z):
    # NumPy's: expm1(x) cos y - 2 sin(y/2)**2 + i e**x sin y, exact near 0 in the real part
    x = z.real
    y = z.imag
    a = math.sin(y * cv_{r}(0.5))
    return cv_{t}(complex(math.expm1(x) * math.cos(y) - cv_{r}(2.0) * a * a,
                          math.exp(x) * math.sin(y)))

def fa_crint_{t}(z):
    # each part rounded half to even, as NumPy's rint and round of a complex
    return cv_{t}(complex(fa_rint_{r}(z.real), fa_rint_{r}(z.imag)))

def fa_csquare_{t}(z):
    # NumPy's complex square, its real part x * x - y * y with one rounding of x * x (an fma):
    # where y * y overflows, x * x - inf is -inf, not inf - inf
    x = z.real
    y = z.imag
    return cv_{t}(complex(fa_fma_{r}(x, x, cv_{r}(0.0) - y * y), x * y + y * x))

def fa_csin_{t}(z):
    # sin(x + iy) = -i sinh(-y + ix); for an infinite y and a non-finite x, NaN + i inf as NumPy
    if math.isinf(z.imag) and not math.isfinite(z.real):
        return cv_{t}(complex(z.real - z.real, abs(z.imag)))
    w = fa_csinh_{t}(cv_{t}(complex(cv_{r}(0.0) - z.imag, z.real)))
    return cv_{t}(complex(w.imag, cv_{r}(0.0) - w.real))

def fa_ccos_{t}(z):
    # cos(x + iy) = cosh(-y + ix)
    return fa_ccosh_{t}(cv_{t}(complex(cv_{r}(0.0) - z.imag, z.real)))

def fa_ctanh_{t}(z):
    # FreeBSD's ctanh (NumPy's npy_ctanh): Kahan's formula, and past |x| = {big} the
    # asymptote, whose imaginary part is formed without overflow.
    x = z.real
    y = z.imag
    one = cv_{r}(1.0)
    zero = cv_{r}(0.0)
    if x != x:
        return cv_{t}(complex(x, y if y == zero else x * y))
    if math.isinf(x):
        small = y if math.isinf(y) else math.sin(y) * math.cos(y)
        return cv_{t}(complex(math.copysign(one, x), math.copysign(zero, small)))
    if y != y or math.isinf(y):
        return cv_{t}(complex(x if x == zero else y - y, y - y))
    if abs(x) >= cv_{r}({big}):
        e = math.exp(zero - abs(x))
        return cv_{t}(complex(math.copysign(one, x),
                              cv_{r}(4.0) * math.sin(y) * math.cos(y) * e * e))
    t = math.tan(y)
    beta = one + t * t
    s = math.sinh(x)
    rho = math.sqrt(one + s * s)
    denom = one + beta * s * s
    return cv_{t}(complex(beta * rho * s / denom, t / denom))

def fa_ctan_{t}(z):
    # tan(x + iy) = -i tanh(-y + ix)
    w = fa_ctanh_{t}(cv_{t}(complex(cv_{r}(0.0) - z.imag, z.real)))
    return cv_{t}(complex(w.imag, cv_{r}(0.0) - w.real))

def fa_cdiv_{t}(a, b):
    # NumPy's complex division (Smith's method; a zero divisor gives inf or NaN parts): numba's
    # own raises ZeroDivisionError on cpu, and its formula rounds otherwise
    ar = a.real
    ai = a.imag
    br = b.real
    bi = b.imag
    one = cv_{r}(1.0)
    if abs(br) >= abs(bi):
        if br == cv_{r}(0.0) and bi == cv_{r}(0.0):
            return cv_{t}(complex(ar / abs(br), ai / abs(br)))
        rat = bi / br
        scl = one / (br + bi * rat)
        return cv_{t}(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
    rat = br / bi
    scl = one / (bi + br * rat)
    return cv_{t}(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))

def fa_crecip_{t}(z):
    # NumPy's complex reciprocal (Smith's method)
    x = z.real
    y = z.imag
    one = cv_{r}(1.0)
    if abs(y) <= abs(x):
        r = y / x
        d = x + y * r
        return cv_{t}(complex(one / d, (cv_{r}(0.0) - r) / d))
    r = x / y
    d = x * r + y
    return cv_{t}(complex(r / d, (cv_{r}(0.0) - one) / d))

def fa_csign_{t}(z):
    # NumPy 2's complex sign: z / |z|; where |z| (a hypot: infinite if either part is) is
    # infinite, the unit along the infinite part, NaN if both are; NaN where |z| is NaN
    x = z.real
    y = z.imag
    zero = cv_{r}(0.0)
    one = cv_{r}(1.0)
    m = abs(z)
    if m != m:
        return cv_{t}(complex(math.nan, math.nan))
    if math.isinf(m):
        if math.isinf(x):
            if math.isinf(y):
                return cv_{t}(complex(math.nan, math.nan))
            return cv_{t}(complex(one if x > zero else zero - one, zero))
        return cv_{t}(complex(zero, one if y > zero else zero - one))
    if m == zero:
        return cv_{t}(complex(zero, zero))
    return cv_{t}(complex(x / m, y / m))
'''

# NumPy's complex order (its CLT and CLE): lexicographic, and a NaN imaginary part on either side
# makes the real parts' strict order false.
_ORDER = '''
def fa_clt(a, b):
    if a.real < b.real:
        return a.imag == a.imag and b.imag == b.imag
    return a.real == b.real and a.imag < b.imag

def fa_cle(a, b):
    if a.real < b.real:
        return a.imag == a.imag and b.imag == b.imag
    return a.real == b.real and a.imag <= b.imag
'''


# {big}: where tanh's asymptote is exact; {huge}: past it, e^|x| overflows (float32, float64)
COMPLEX_SOURCE = "".join(_PER_TYPE.replace("{t}", t).replace("{r}", r).replace("{big}", big)
                         .replace("{huge}", huge)
                         for t, r, big, huge in (("c64", "f32", "9.0", "88.0"),
                                                 ("c128", "f64", "22.0", "709.0"))
                         ) + _ORDER
