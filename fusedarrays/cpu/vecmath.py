"""float32 transcendental functions that LLVM vectorises: the cpu kernels' ``math`` module.

Where it sits: the cpu backend binds :func:`math_module` as the name ``math`` of its kernel
namespace (``cpu/backend.py``), so the op table's ``math.exp({0})`` (``ir/ops.py``) and
devicelib's helpers call these on the cpu target alone; cuda keeps libdevice.

Why: numba lowers ``math.exp`` of a float32 to ``llvm.exp.f32``. LLVM's loop vectoriser turns
a kernel's loop into 16-lane AVX-512 code, but with no vector math library (numba 0.68's
llvmlite is built without SVML, and its LLVM has no ``-vector-library`` option to name glibc's
libmvec) the code generator splits each ``llvm.exp.v16f32`` into 16 scalar ``expf`` calls: a
10-op expression with ``exp`` and ``sin`` ran at 0.25-0.4 of NumPy's speed, whose float32 loops
use SIMD routines. These are branch-free arithmetic (selects, integer bit operations, ``rint``),
which LLVM inlines into the loop and vectorises with the rest of it.

sin and cos: a branch to libm for large arguments does not survive vectorisation (LLVM turns a
call of ``sinf`` back into the speculatable ``llvm.sin`` and computes it in every lane), so the
argument is reduced for every finite float32 by one branch-free integer Payne-Hanek
(:func:`_quadrant`): 2/pi's bits picked by masks (a table load becomes a gather, which LLVM's cost
model for this CPU refuses to vectorise), three 56-bit products. These helpers are inlined by
numba (``inline="always"``): LLVM's inliner leaves a call of this size, and the call keeps the
loop scalar. ~5x libm's scalar ``sinf`` at 10^6 elements, still ~4x NumPy's AVX-512 loop
(8 float64 lanes and the integer reduction, against 16 float32 lanes): a kernel calls these two
(:func:`far_functions`) only for chunks with an argument of :data:`NEAR` or more, and takes
:func:`sin_near_f32`, :func:`cos_near_f32` for the others.

Accuracy: each float32 function evaluates in float64 (a reduced argument and a polynomial whose
truncation error is below 1e-9 relative) and rounds once to float32, so results are within
about 0.5 ulp of the exact value (tests/cpu/test_vecmath.py: <= 0.51 over random bit patterns);
NumPy's own SIMD float32 loops are within 1.4-4 ulp. The exception: sin and cos of a chunk
whose arguments are all below :data:`NEAR` take the float32 near functions (below), within
1.5 ulp as NumPy's are, at 3-4x the speed. Every
special value (NaN, ±inf, ±0, overflow to inf, underflow to 0 and subnormals, log of negatives)
is NumPy's. float64 (and every other) arguments go to numba's ``math`` functions as before.
"""

from __future__ import annotations

import math
import types
from decimal import Decimal

import numpy as np

LN2 = 0.6931471805599453
INV_LN2 = 1.4426950408889634
SQRT2 = 1.4142135623730951
fma = None   # a * b + c: llvm.fmuladd (_fmuladd), bound where math_module compiles these


def _exp64(d):
    """e ** d for float64 ``d`` in [-160, 160]: 2**k * e**r, |r| <= ln2 / 2, e**r by its
    Taylor polynomial to r**8 / 8! (truncation below 2e-10 relative)."""
    k = np.rint(d * INV_LN2)
    r = fma(k, -LN2, d)
    p = fma(fma(fma(fma(fma(fma(fma(fma(1.0 / 40320, r, 1.0 / 5040), r, 1.0 / 720), r,
                                1.0 / 120), r, 1.0 / 24), r, 1.0 / 6), r, 0.5), r, 1.0), r, 1.0)
    scale = np.int64((np.int64(k) + 1023) << 52).view(np.float64)
    return p * scale


def exp_f32(x):
    d = np.float64(x)
    d = d if d < 160.0 else 160.0   # overflows float32 all the same; NaN restored below
    d = d if d > -160.0 else -160.0
    y = np.float32(_exp64(d))
    return y if x == x else x


def log_f32(x):
    d = np.float64(x)   # a float32 subnormal is a normal float64
    bits = np.float64(d).view(np.int64)
    e = (bits >> 52) - 1023
    m = np.int64((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000).view(np.float64)
    big = m > SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    f = (m - 1.0) / (m + 1.0)   # |f| <= 0.1716: log m = 2 atanh f
    s = f * f
    odd = fma(fma(fma(fma(fma(1.0 / 13, s, 1.0 / 11), s, 1.0 / 9), s, 1.0 / 7), s, 1.0 / 5),
              s, 1.0 / 3)
    y = np.float32(fma(np.float64(e), LN2, fma(2.0 * f * s, odd, 2.0 * f)))
    if not x > 0:   # 0: -inf; negative or NaN: NaN
        y = np.float32(-np.inf) if x == 0 else np.float32(np.nan)
    return y if x != np.inf else x


def tanh_f32(x):
    a = abs(np.float64(x))
    a = a if a < 20.0 else 20.0   # tanh is 1 in float32 from 9.01; NaN restored below
    t = 1.0 - 2.0 / (_exp64(2.0 * a) + 1.0)   # absolute error ~1e-16: fine from 1e-4 up
    small = a * (1.0 - a * a * (1.0 / 3))     # below 1e-4, to a**5 (2 a**5 / 15 < 1e-20)
    t = small if a < 1e-4 else t
    y = np.float32(-t if np.float32(x).view(np.int32) < 0 else t)   # tanh(-0.0) is -0.0
    return y if x == x else x


# sin and cos: x * 2/pi reduced modulo 4 in integers (Payne-Hanek without a branch). A finite
# float32 is m * 2**s with a 24-bit integer m, so x * 2/pi mod 4 is m * (2**s * 2/pi mod 4): the
# table holds that constant for each s from S_MIN as a 96-bit fixed-point number (94 fraction
# bits) in three 32-bit words, and three 56-bit integer products give the quadrant and the
# fraction to 2**-70 of a quadrant (float32's nearest approach to a multiple of pi/2 is far
# above that). Below 2**-17 (s < S_MIN) the argument is its own reduction. The table is read by
# index (a gather where the loop vectorises): no branch leaves the loop.
TWO_OVER_PI = int("a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561b7246e3a4"
                  "24dd2e0", 16)   # floor(2/pi * 2**320)
S_MIN = -40   # x = m * 2**s: below 2**S_MIN the argument is its own reduction
PIO2 = 1.5707963267948966
# 2/pi's bits as 32-bit words behind two zero words: word k holds bits 32k .. 32k+31 counted
# from the top of floor(2/pi * 2**256) (ten words) shifted down by 64
WORDS = [(TWO_OVER_PI >> (320 - 32 * (k - 1))) & 0xFFFFFFFF if k >= 2 else 0 for k in range(12)]


def _word(w):
    """WORDS[w] for 0 <= w < 12 by masks, not a load: LLVM keeps a loop with gathers (slow on
    this CPU) scalar, while masked constants vectorise. Words 0 and 1 are zero."""
    return (-np.int64(w == 2) & W2 | -np.int64(w == 3) & W3  # noqa: F821 - bound by math_module
            | -np.int64(w == 4) & W4 | -np.int64(w == 5) & W5  # noqa: F821
            | -np.int64(w == 6) & W6 | -np.int64(w == 7) & W7  # noqa: F821
            | -np.int64(w == 8) & W8 | -np.int64(w == 9) & W9  # noqa: F821
            | -np.int64(w == 10) & W10 | -np.int64(w == 11) & W11)  # noqa: F821


def _quadrant(x):
    """|x| (float32) as (q, r): |x| = (4k + q) * pi/2 + r, |r| <= pi/4, r in float64."""
    bits = np.int64(np.float32(x).view(np.int32)) & 0x7FFFFFFF
    s = (bits >> 23) - 150   # |x| = m * 2**s for a normal x
    m = (bits & 0x7FFFFF) | 0x800000
    o = min(max(s, S_MIN), 104) + 62   # C = 2**s * 2/pi mod 4: the 96 bits from bit o
    w, b = o >> 5, o & 31
    a0, a1, a2, a3 = _word(w), _word(w + 1), _word(w + 2), _word(w + 3)
    hi = ((a0 << b) | (a1 >> (32 - b))) & 0xFFFFFFFF
    mid = ((a1 << b) | (a2 >> (32 - b))) & 0xFFFFFFFF
    low = m * (((a2 << b) | (a3 >> (32 - b))) & 0xFFFFFFFF)
    f = ((m * hi) << 32) + m * mid + (low >> 32)     # quadrants, 2**-62 units, mod 4
    q = ((f + (1 << 61)) >> 62) & 3                  # the nearest quadrant
    near = np.float64(f << 2) + np.float64(low & 0xFFFFFFFF) * (1.0 / 4294967296.0)
    r = near * (PIO2 / 18446744073709551616.0)       # the signed rest: 2**-64 units → radians
    small = s < S_MIN
    return (0 if small else q), (abs(np.float64(x)) if small else r)


def _sin_cos(r):
    """sin r and cos r for |r| <= pi/4: Taylor to r**11 and r**12 (truncation below 1e-11)."""
    z = r * r
    sin = fma(r * z, fma(z, fma(z, fma(z, fma(z, -1.0 / 39916800, 1.0 / 362880),
                                       -1.0 / 5040), 1.0 / 120), -1.0 / 6), r)
    cos = fma(z, fma(z, fma(z, fma(z, fma(z, fma(z, 1.0 / 479001600, -1.0 / 3628800),
                                          1.0 / 40320), -1.0 / 720), 1.0 / 24), -0.5), 1.0)
    return sin, cos


def sin_f32(x):
    q, r = _quadrant(x)
    s, c = _sin_cos(r)
    v = c if q & 1 else s
    v = -v if ((q & 2) != 0) != (np.float32(x).view(np.int32) < 0) else v   # sin(-x) = -sin x
    y = np.float32(v)
    return y if abs(x) < np.inf else np.float32(np.nan)


def cos_f32(x):
    q, r = _quadrant(x)
    s, c = _sin_cos(r)
    v = s if q & 1 else c
    v = -v if (q + 1) & 2 else v
    y = np.float32(v)
    return y if abs(x) < np.inf else np.float32(np.nan)


FLOAT32 = {"exp": exp_f32, "log": log_f32, "tanh": tanh_f32, "sin": sin_f32, "cos": cos_f32}


# sin and cos of float32 arguments below NEAR in magnitude, in float32 (16 lanes), as NumPy's
# AVX-512 loops compute them: x less its nearest multiple k of pi/2 by three fused multiply-adds
# (pi/2 as three float32 pieces, 72 bits: k has at most 16), then Taylor polynomials to r**9
# and r**10 (truncation below 2e-9) evaluated with fused multiply-adds. Within 1.5 ulp, as
# NumPy's own (1.4-1.5: tests/cpu/test_vecmath.py), at 3-4x the speed of sin_f32 above: the cpu
# target takes them for a chunk whose arguments are all below NEAR (a pass over the chunk checks
# them first: ``compiler/targets/cpu.py``), and sin_f32, cos_f32 for any other.
NEAR = 65536.0
_PIO2 = Decimal("1.57079632679489661923132169163975144209858469968755291048747")
P1 = np.float32(float(_PIO2))
P2 = np.float32(float(_PIO2 - Decimal(float(P1))))
P3 = np.float32(float(_PIO2 - Decimal(float(P1)) - Decimal(float(P2))))
TWO_OVER_PI_F32 = np.float32(2 / math.pi)
TAYLOR_SIN = [np.float32(c) for c in (1 / 362880, -1 / 5040, 1 / 120, -1 / 6)]
TAYLOR_COS = [np.float32(c) for c in (-1 / 3628800, 1 / 40320, -1 / 720, 1 / 24, -0.5)]


def _near(x):
    """(q, sin r, cos r): x = (4n + q) pi/2 + r, |r| <= pi/4, in float32."""
    k = np.rint(x * TWO_OVER_PI_F32)
    r = fma32(-k, P1, x)   # noqa: F821 - bound by near_functions
    r = fma32(-k, P2, r)   # noqa: F821
    r = fma32(-k, P3, r)   # noqa: F821
    z = r * r
    s = fma32(r * z, fma32(z, fma32(z, fma32(z, S0, S1), S2), S3), r)   # noqa: F821
    c = fma32(z, fma32(z, fma32(z, fma32(z, fma32(z, C0, C1), C2), C3), C4),   # noqa: F821
              np.float32(1.0))
    return np.int32(k) & 3, s, c


def sin_near_f32(x):
    q, s, c = _near(x)
    v = c if q & 1 else s
    v = -v if q & 2 else v
    return x if x == 0 else v   # sin(-0.0) is -0.0


def cos_near_f32(x):
    q, s, c = _near(x)
    v = s if q & 1 else c
    return -v if (q + 1) & 2 else v


def near_functions(jit, fma32) -> dict:
    """``fa_sin_near_f32``, ``fa_cos_near_f32`` for a kernel namespace, compiled with ``jit``
    (``fma32``: a float32 fused multiply-add, rounded once) and inlined where called."""
    names = {"np": np, "fma32": fma32, "P1": P1, "P2": P2, "P3": P3,
             "TWO_OVER_PI_F32": TWO_OVER_PI_F32,
             **{f"S{k}": c for k, c in enumerate(TAYLOR_SIN)},
             **{f"C{k}": c for k, c in enumerate(TAYLOR_COS)}}
    names["_near"] = jit(_near, names, inline="always")
    return {"fa_sin_near_f32": jit(sin_near_f32, names, inline="always"),
            "fa_cos_near_f32": jit(cos_near_f32, names, inline="always")}


# A kernel calling more of FLOAT32's functions than this gets them as calls, not inlined: numba
# inlines at the level of its IR, whose passes grow with the square of a function's length (60
# inlined sin and cos took minutes to compile); such a kernel's loop then stays scalar.
INLINE_LIMIT = 8


def inlined_calls(source: str) -> int:
    """How many calls of :data:`FLOAT32`'s functions a kernel's source makes."""
    return sum(source.count(f"math.{name}(") for name in FLOAT32)


def math_module(jit, inline: bool = True) -> types.ModuleType:
    """A module standing in for ``math`` in the kernel namespace: ``math``'s own attributes,
    with the functions of :data:`FLOAT32` replaced by dispatchers that take the float32 version
    for a float32 argument and ``math``'s for any other (``jit(fn, names)`` compiles ``fn``
    with ``names`` as its globals); inlined into the kernel, or called where ``inline`` is
    False (a kernel with more than :data:`INLINE_LIMIT` of them)."""
    how = "always" if inline else "never"
    from numba import types as nbtypes
    from numba.extending import overload

    module = types.ModuleType("fusedarrays_cpu_math")
    module.__dict__.update({k: v for k, v in vars(math).items() if not k.startswith("__")})
    names = _helpers(jit, how)
    for name, fn in FLOAT32.items():
        stub = _stub(name)
        # inlined into the kernel by numba: LLVM's inliner leaves a call this large, and a call
        # keeps the loop from vectorising
        fast = jit(fn, names, inline=how)
        overload(stub, inline=how)(_chooser(nbtypes.float32, fast, getattr(math, name)))
        setattr(module, name, stub)
    return module


def _helpers(jit, how: str) -> dict:
    """The globals of :data:`FLOAT32`'s functions: constants, and the helpers compiled with
    ``jit``, inlined (``how``: ``"always"``) or called."""
    names = {"np": np, "math": math, "fma": _fmuladd(), **{
        k: v for k, v in globals().items() if k.isupper() and isinstance(v, float)}}
    names.update({f"W{k}": WORDS[k] for k in range(2, 12)}, S_MIN=S_MIN)
    names["_exp64"] = jit(_exp64, names)
    for fn in (_word, _quadrant, _sin_cos):   # inlined by numba: too large for LLVM's inliner
        names[fn.__name__] = jit(fn, names, inline=how)
    return names


def far_functions(jit) -> dict:
    """``fa_sin_far_f32``, ``fa_cos_far_f32``: :func:`sin_f32` and :func:`cos_f32` as calls,
    for the chunks whose arguments are not all below NEAR: compiled once per process (inlined,
    the exact reduction made every kernel with sin or cos compile ~1.5 s longer), their loop
    left scalar."""
    names = _helpers(jit, "always")
    return {"fa_sin_far_f32": jit(sin_f32, names), "fa_cos_far_f32": jit(cos_f32, names)}


def _chooser(float32, fast, libm):
    def choose(x):
        if x == float32:
            return lambda x: fast(x)
        return lambda x: libm(x)
    return choose


def _fmuladd():
    """``fma(a, b, c)``: ``a * b + c`` in float64 as LLVM's ``llvm.fmuladd``, one fused
    multiply-add where the CPU has one (halving a polynomial's instructions, and rounding
    once), a multiply and an add where it has not."""
    from llvmlite import ir
    from numba import types as nbtypes
    from numba.extending import intrinsic

    def fma(typingctx, a, b, c):
        def codegen(context, builder, sig, args):
            values = [context.cast(builder, v, t, nbtypes.float64)
                      for v, t in zip(args, sig.args)]
            f64 = ir.DoubleType()
            fn = builder.module.declare_intrinsic("llvm.fmuladd", [f64],
                                                  ir.FunctionType(f64, [f64] * 3))
            return builder.call(fn, values)
        return nbtypes.float64(a, b, c), codegen

    return intrinsic(fma)


def _stub(name: str):
    def stub(x):
        raise NotImplementedError(f"fusedarrays' cpu {name} runs inside kernels only")
    stub.__name__ = f"fa_cpu_{name}"
    return stub
