"""float16 emulation for the CPU backend.

Owns the conversions between float16 and the float32 values kernels compute float16 data in.
numba's CPU target has no float16 at all (typing one raises ``NotImplementedError``), so the CPU
backend passes float16 arrays to kernels as ``uint16`` views: a kernel loads each element's bits
with :func:`half_bits_to_float32`, computes in float32, rounds after every op with
:func:`round_float32_to_half` (as NumPy's float16 loops do), and stores bits made by
:func:`float32_to_half_bits` (or :func:`float64_to_half_bits` for float64 results).

Every function here is plain Python written in the subset numba's nopython mode compiles, and
calls no other Python function, so it runs as it is (reference, tests) and compiles on its own; the
backend compiles each with ``numba.njit`` and its kernels call them. This module does not import
numba.

How it works without bit casts (numba has no scalar float<->int bitcast, and a 1-element array view
per element would be far too slow): a value is rounded to float16 precision with exact float64
arithmetic. ``ufp(a)``, the largest power of two not above ``a``, is Rump's
``|q - (1 - 2**-53) * q|`` with ``q = (2**52 + 1) * a``; adding ``C = ufp(a) * 2**42`` to ``a``
rounds it, once and to nearest-even (the FPU's mode), onto the grid of float16's spacing
``ufp(a) * 2**-10`` (``2**-24`` below the normal range, by clamping ``ufp`` to ``2**-14``), and
``(a + C) - C`` is exact. The exponent field comes from ``ufp`` by a branch-free integer log2.
float32 -> float64 is exact, so float32 inputs get the same single rounding as float64 ones (no
double rounding). There is no call and no data-dependent branch on finite values, so numba's loops
vectorise these helpers: in a plain njit loop, about 0.5 ns per element to load float16 bits,
0.6 ns to round, 1.2 ns to store from float32, 1.9 ns from float64 (one x86 core, NUMBA_OPT=3).

Do NOT compile these with ``fastmath``: reassociation turns ``(a + C) - C`` into ``a``.

NaN: float16 -> float32 gives a NaN of the same sign (payload not kept); float -> float16 gives the
quiet NaN ``0x7E00`` with the input's sign (NumPy keeps the top payload bits; only quietness and
sign are promised here). Everything else is bit-exact against NumPy's casts.
"""

from __future__ import annotations

import math
import types

import numpy as np

__all__ = [
    "float32_to_half_bits",
    "float64_to_half_bits",
    "half_bits_to_float32",
    "round_float32_to_half",
]

# Constants (module globals become compile-time constants in numba).
_PHI = 4503599627370497.0  # 2**52 + 1
_ONE_MINUS_U = 0.9999999999999999  # 1 - 2**-53
_MIN_NORMAL = 6.103515625e-05  # 2**-14, smallest normal float16
_TWO_42 = 4398046511104.0  # 2**42: ufp * 2**42 has float16's spacing as its float64 ulp
_TWO_14 = 16384.0  # 2**14
_TWO_M25 = 2.9802322387695312e-08  # 2**-25
_OVERFLOW = 65520.0  # the smallest magnitude that rounds to inf (65504 + half an ulp)


def half_bits_to_float32(h):
    """float16 bits (a uint16, or any int in [0, 65535]) -> its value as np.float32, exactly."""
    bits = int(h)
    e = (bits >> 10) & 31
    m = bits & 1023
    if e == 31:
        v = math.inf if m == 0 else math.nan
    else:
        # normal: (1024 + m) * 2**(e - 25); subnormal (e == 0): m * 2**-24 = (2 m) * 2**-25.
        # The integer is below 2**41, so float() and the power-of-two scaling are exact.
        v = float((m + (e > 0) * 1024) << max(e, 1)) * _TWO_M25
    # copysign, not negation: numba negates as -0.0 - v, which keeps a NaN's sign (unoptimised).
    return np.float32(math.copysign(v, 0.5 - (bits >> 15)))


def float64_to_half_bits(x):
    """A float64 (or float32) value -> float16 bits as np.uint16, as NumPy's ``astype(float16)``.

    Round to nearest even straight from the input (no double rounding), magnitudes from 65520 up go
    to inf, subnormals and -0.0 are exact, NaN gives 0x7E00 with the input's sign.
    """
    a = abs(float(x))
    neg = math.copysign(1.0, x) < 0.0
    if a < _OVERFLOW:
        q = a * _PHI
        s = max(abs(q - _ONE_MINUS_U * q), _MIN_NORMAL)  # ufp(a), at least 2**-14
        c = s * _TWO_42
        r = (a + c) - c  # a rounded to float16, as float64
        # n = log2(s) + 14 in [0, 29] from p = 2**n, branch-free.
        p = int(s * _TWO_14)
        t = (p >= 65536) * 16
        n = t
        p >>= t
        t = (p >= 256) * 8
        n += t
        p >>= t
        t = (p >= 16) * 4
        n += t
        p >>= t
        t = (p >= 4) * 2
        n += t
        p >>= t
        n += p >= 2
        # r / spacing is in [0, 2048]; 2048 carries into the exponent field by itself.
        mag = n * 1024 + int(r * (1024.0 / s))
    elif a == a:
        mag = 0x7C00
    else:
        mag = 0x7E00
    if neg:
        mag |= 0x8000
    return np.uint16(mag)


def _renamed(fn, name, doc):
    """A copy of plain function ``fn`` under another name (numba compiles it like any function)."""
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    new = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    new.__qualname__ = name
    new.__module__ = fn.__module__
    new.__doc__ = doc
    return new


# float32 -> float64 is exact, so the float64 routine is the float32 one.
float32_to_half_bits = _renamed(
    float64_to_half_bits,
    "float32_to_half_bits",
    """A np.float32 value -> float16 bits as np.uint16, equal to NumPy's ``astype(float16)``.

    Round to nearest even, overflow to +-inf, exact subnormals and -0.0, NaN gives 0x7E00 with the
    input's sign. (The same code as :func:`float64_to_half_bits`.)
    """,
)


def round_float32_to_half(x):
    """np.float32 ``x`` rounded to float16 precision, as np.float32: ``float32(float16(x))``.

    Also right for a float64 ``x`` (rounded once). NaN stays NaN.
    """
    a = abs(float(x))
    if a < _OVERFLOW:
        q = a * _PHI
        c = max(abs(q - _ONE_MINUS_U * q), _MIN_NORMAL) * _TWO_42
        r = (a + c) - c
    elif a == a:
        r = math.inf
    else:
        return np.float32(x)
    return np.float32(math.copysign(r, x))
