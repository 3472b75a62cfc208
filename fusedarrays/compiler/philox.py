"""The device helpers of ``fa.random``: Philox4x32-10 and the conversions of its words into
uniform, normal and integer values, as source text that :mod:`.devicelib` joins to its own
helpers (each backend compiles them with its namespace as globals: ``cv_u32``, ``fa_fma_f64`` …).

Where it sits: under :mod:`.devicelib` (pure text, imports nothing); :mod:`.streams` renders the
calls. Random123's published known-answer vectors pin :func:`fa_philox` (tests/pure).
"""

# Counter-based random numbers (fa.random): Philox4x32-10 (Salmon et al., SC'11, as Random123
# defines it) and the conversions of its 32-bit words. Every value is a pure function of (seed,
# key, element index), so any backend, schedule or vector width gives the same bits. Words are
# uint32, cast back after each operation (numba computes in 64 bits; the casts let NVVM keep 32-bit
# registers), their products the widening 32 x 32 -> 64 multiply; every constant goes through
# cv_u32/cv_u64: numba types uint64 op int64 as a float.
# The Box-Muller transform computes its logarithm and sine/cosine here from IEEE-exact
# operations (+ - * / sqrt and fused multiply-adds through fa_fma_f64 and fa_fma_f32, which each
# backend computes exactly):
# libdevice's and libm's transcendental functions differ in their last bits. No product feeds an
# addition outside an fma, so NVVM's multiply-add contraction has nothing to change.
RANDOM_SOURCE = '''
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

def fa_floor_log2(k):
    # floor(log2 k) of 0 < k <= 2**32, in integer steps every backend computes alike
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
    return e

def fa_bm_log(a):
    # u = (a + 1) / 2**32 in (0, 1] as 2**(e - 32) m, m in [sqrt(1/2), sqrt(2)); returns
    # s = (m - 1) / (m + 1) (ln m = 2 atanh s, |s| < 0.172), s * s and e - 32
    k = cv_i64(a) + 1
    e = fa_floor_log2(k)
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

def fa_bm_quarter(cs, sn, q):
    if q == 1:
        return -sn, cs
    if q == 2:
        return -cs, -sn
    if q == 3:
        return sn, -cs
    return cs, sn

def fa_bm_turn(r, cs, sn, q):
    # r times the turned (cos, sin), each product an fma with +0: a bare product would reach
    # the consumer's code, where NVVM contracts it with an addition (x + noise) into an fma
    # that the cpu does not make; the fma's +0 (not -0, which LLVM folds back to a product)
    # rounds alike everywhere
    cs, sn = fa_bm_quarter(cs, sn, q)
    return fa_fma_f64(r, cs, 0.0), fa_fma_f64(r, sn, 0.0)

def fa_bm_turn_f32(r, cs, sn, w):
    # the quarter turn q = w >> 30 of a 32-bit w (cuda: an intrinsic of the same name,
    # cuda/randombits.py, the quarter's signs on r's bits and two selects: no branch a warp
    # would split on)
    cs, sn = fa_bm_quarter(cs, sn, cv_i64(cv_u32(w) >> cv_u32(30)))
    return fa_fma_f32(r, cs, cv_f32(0.0)), fa_fma_f32(r, sn, cv_f32(0.0))

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

def fa_bm_ratio_f32(a):
    # u = (a + 1) / 2**32 = 2**(e - 32) m, m = t / one in [sqrt(1/2), sqrt(2)); returns 2 s for
    # s = (m - 1) / (m + 1), from the exact integers t - one and t + one (no digits cancel near
    # u = 1), and f = e - 32 as float32 (cuda: an intrinsic of the same name, cuda/randombits.py,
    # the same two values from 32-bit integers and a division without a slow path)
    k = cv_i64(a) + 1
    e = fa_floor_log2(k)
    t = k << (33 - e)
    one = cv_i64(8589934592)
    if t > 12148001999:
        one = one + one
        e += 1
    s = cv_f32(t - one) / cv_f32(t + one)
    return s + s, cv_f32(e - 32)

def fa_bm_sqrt_f32(x):
    # (cuda: an intrinsic of the same name, the IEEE square root without its range check)
    return cv_f32(math.sqrt(x))

def fa_bm_f32(a, b):
    # Box-Muller to float32 accuracy (a few ulp) in float32 operations: + - * / sqrt and the
    # fused multiply-adds of fa_fma_f32, each exact on every backend, so every backend gives
    # the same bits, at a quarter of fa_bm's float64 work. ln m = 2 atanh s (|s| < 0.172,
    # 6 terms), s from fa_bm_ratio_f32. Written for few instructions, the values those of
    # s * s, q = 1 + z/3 + ... in z, ln u = (e - 32) ln 2 + 2 s q and r = sqrt(-2 ln u): this
    # works with v = 2 s (s + s, a float's exact double) and z4 = v * v = 4 s s, and with -2 q
    # and -2 ln u, every constant scaled by a power of two to match; each step is then the
    # same rounding of a value scaled by a power of two (no subnormal is near), so the bits
    # are those of the plain form. (Where u = 1, -2 ln u is +0 where the plain form had -0:
    # r's zero's sign, which fa_bm_turn_f32's fma with +0 drops.)
    v, f = fa_bm_ratio_f32(a)
    z4 = v * v
    h = fa_fma_f32(z4, cv_f32(-0.09090909090909091 / 512), cv_f32(-0.1111111111111111 / 128))
    h = fa_fma_f32(z4, h, cv_f32(-0.14285714285714285 / 32))
    h = fa_fma_f32(z4, h, cv_f32(-0.2 / 8))
    h = fa_fma_f32(z4, h, cv_f32(-0.3333333333333333 / 2))
    q = fa_fma_f32(z4, h, cv_f32(-2.0))
    # ln u = (e - 32) ln 2 + ln m; ln 2's high part has 9 bits, so (e - 32) times it is exact
    x = fa_fma_f32(f, cv_f32(-1.38671875),
                   fa_fma_f32(v, q, f * cv_f32(0.00021219444005469057 * 2)))
    r = fa_bm_sqrt_f32(x)
    # the angle 2 pi b / 2**32 as its nearest quarter turn w >> 30 and theta in [-pi/4, pi/4):
    # theta's integer is b's low 30 bits, sign-extended, and a float from b << 2 (an i32:
    # a quarter-rate conversion from an i64) is 4 times its float exactly
    w = cv_u32(cv_u32(b) + cv_u32(536870912))
    theta = cv_f32(cv_i32(cv_u32(b) << cv_u32(2))) * cv_f32(1.4629180792671596e-09 / 4)
    z = theta * theta
    # sin and cos on [-pi/4, pi/4] to float32 accuracy (Cephes' sinf and cosf coefficients)
    ps = fa_fma_f32(z, cv_f32(-0.00019515295891), cv_f32(0.0083321608736))
    ps = fa_fma_f32(z, ps, cv_f32(-0.16666654611))
    sn = fa_fma_f32(theta * z, ps, theta)
    pc = fa_fma_f32(z, cv_f32(2.443315711809948e-05), cv_f32(-0.001388731625493765))
    pc = fa_fma_f32(z, pc, cv_f32(0.04166664568298827))
    cs = fa_fma_f32(z * z, pc, fa_fma_f32(z, cv_f32(-0.5), cv_f32(1.0)))
    return fa_bm_turn_f32(r, cs, sn, w)

def fa_rand_word(seed, key, g):
    return fa_word(fa_philox_at(seed, key, g >> 2), g & 3)

def fa_rand_uniform_f32(seed, key, g):
    return fa_u01_f32(fa_rand_word(seed, key, g))

def fa_floor_i32(y):
    # floor of -2**31 < y < 2**31 by truncation (the simulator's math has no floor)
    t = cv_i32(y)
    if cv_f64(t) > y:
        return cv_i32(t - 1)
    return t

def fa_ceil_i32(y):
    t = cv_i32(y)
    if cv_f64(t) < y:
        return cv_i32(t + 1)
    return t

def fa_u24_gt(p):
    # T with (u > p) == (k > T) for every float32 uniform u = k * 2**-24 (k = word >> 8):
    # floor(p * 2**24), the product exact; NaN compares false, so T = 2**24, above every k
    y = cv_f64(p) * 16777216.0
    if y != y or y >= 16777216.0:
        return cv_i32(16777216)
    if y <= -1.0:
        return cv_i32(-1)
    return fa_floor_i32(y)

def fa_u24_ge(p):
    # (u >= p) == (k > T): T = ceil(p * 2**24) - 1
    y = cv_f64(p) * 16777216.0
    if y != y or y > 16777216.0:
        return cv_i32(16777216)
    if y <= -1.0:
        return cv_i32(-1)
    return cv_i32(fa_ceil_i32(y) - 1)

def fa_u24_lt(p):
    # (u < p) == (k < T): T = ceil(p * 2**24); NaN: T = 0, below every k
    y = cv_f64(p) * 16777216.0
    if y != y or y <= 0.0:
        return cv_i32(0)
    if y >= 16777216.0:
        return cv_i32(16777216)
    return fa_ceil_i32(y)

def fa_u24_le(p):
    # (u <= p) == (k < T): T = floor(p * 2**24) + 1
    y = cv_f64(p) * 16777216.0
    if y != y or y < 0.0:
        return cv_i32(0)
    if y >= 16777216.0:
        return cv_i32(16777216)
    return cv_i32(fa_floor_i32(y) + 1)

def fa_u24_above(w, t):
    return cv_i32(cv_u32(w) >> cv_u32(8)) > t

def fa_u24_below(w, t):
    return cv_i32(cv_u32(w) >> cv_u32(8)) < t

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
