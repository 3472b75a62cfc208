"""Float division for the cuda target as numba-cuda intrinsics: ``fa_div``, NumPy's IEEE
quotient as the hardware divides (``div.rn``); ``fa_divrcp`` and ``fa_divby``, the same float32
quotient by a divisor computed outside the dividend's loop (a scalar, a row's constant) from the
divisor's reciprocal, with no division an element and no slow path for a zero dividend.

Where it sits: beside :mod:`.intrinsics`, which puts them in the kernels' namespace as
``fa_div_f32``/``fa_div_f64`` (the op table's division template), ``fa_divrcp_f32`` and
``fa_divby_f32``, and for float16 divisions ``fa_divrcph_f32`` and ``fa_divbyh_f32``
(``compiler/codegen.py`` chooses, ``compiler/divisions.by_reciprocal``); the cpu and sim
backends divide with ``/`` under the same names. ``tests/topics/test_division.py`` compares
every finite float16 pair, random float32 bit patterns and divisions by scalars and by a row's
constant with NumPy on the device.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.typing import signature


# a / b for floats as NumPy divides (IEEE, correctly rounded): LLVM's fdiv, which NVVM lowers to
# div.rn. Its fast path checks its operands' range (FCHK) and calls a subroutine for a zero,
# subnormal or huge one. A dropout's masked zeros took that subroutine in nearly every warp (0.42
# of a copy); selects that kept a zero dividend from it (a * b for a zero a) lifted dropout to
# 0.70 but cost every division a few instructions: Black-Scholes under fa.fuse, four divisions by
# arrays an element and compute-bound, fell from 0.92 to 0.82 of a copy on the H100. A division by
# a divisor uniform across its loop (dropout's 1 - p) now takes the reciprocal below, whose fast
# path keeps zeros; every other division is this plain one.
def _div_codegen(context, builder, sig, args):
    return builder.fdiv(*args)


def div_typer(typingctx, a, b):
    if isinstance(a, types.Float) and a == b:
        return signature(a, a, b), _div_codegen
    return None


# A float32 division by a value b uniform across the loop that computes a (a Python scalar such as
# dropout's 1 - p, a 0-d array, a softmax's row sum, a layer norm's sqrt(var + eps)) without a
# division an element: b's reciprocal y = RN(1/b) once (``fa_divrcp``, rcp.rn), then per element
# q = RN(a * y), the remainder r = a - q * b by an fma and RN(q + r * y) by another
# (``fa_divby``: Markstein's correction), which is RN(a / b), the quotient NumPy and div.rn give.
# Why: with r exact, q + r * y differs from a / b by (a / b - q) * b * (y - 1/b), under 2^-24
# times q's own error, while a quotient of float32 values is never a midpoint between floats and
# lies at least 2^-25 ulp from one (a - b * m is a nonzero multiple of the last places of b and
# m). That falls short of a proof where q is more than half an ulp off or r is rounded, so the
# claim rests on every pair of significands, checked on the H100 against div.rn (a and b in
# [1, 2): 2^46 pairs, none differ; 75 s). Scaling a and b by powers of two scales every step
# exactly while each value is a normal float: |a| and |b| within 2^±60 keep the quotient within
# 2^±120 and a nonzero remainder above 2^-107.
# A zero a stays on the fast path (a dropout's masked elements): q = a * y is then the zero of
# sign(a) xor sign(b), the quotient itself, but r = -q * b + a adds two opposite zeros, +0, and
# q + r * y would turn a -0 quotient of a = -0 by b > 0 into +0; so a zero a returns q. Other
# dividends outside the span (subnormals, huge values, infinities, NaN) divide (``fa_div``), as
# does every element where the divisor is outside it. The H100 measured softmax 0.88 of a copy
# this way against 0.87 dividing, layer norm 0.88 against 0.86 (each row's first walk loading
# four vectors a thread at once).
_SPAN = 2.0 ** 60
_I32 = ir.IntType(32)


def _magnitude_bits(builder, x):
    """The bits of float32 ``x`` less its sign."""
    return builder.and_(builder.bitcast(x, _I32), ir.Constant(_I32, 0x7FFFFFFF))


def _in_span(builder, bits):
    """Whether 2^-60 <= |x| <= 2^60, from ``x``'s magnitude bits: those less the bits of 2^-60,
    at most those of 2^60 less them, unsigned (NaN and infinities lie above)."""
    low, high = (int(np.float32(v).view(np.uint32)) for v in (1 / _SPAN, _SPAN))
    return builder.icmp_unsigned("<=", builder.sub(bits, ir.Constant(_I32, low)),
                                 ir.Constant(_I32, high - low))


def _divrcp_codegen(context, builder, sig, args):
    (b,) = args
    zero, one = ir.Constant(b.type, 0.0), ir.Constant(b.type, 1.0)
    # 0 marks a divisor outside the span: every element then takes fa_div
    return builder.select(_in_span(builder, _magnitude_bits(builder, b)),
                          builder.fdiv(one, b), zero)


def _correction(builder, a, b, y):
    """``(q, corrected)``: q = RN(a * y) and Markstein's RN(q + r * y), r = a - q * b by an fma."""
    fty = a.type
    fma = builder.module.declare_intrinsic("llvm.fma", [fty], ir.FunctionType(fty, [fty] * 3))
    q = builder.fmul(a, y)
    r = builder.call(fma, [builder.fsub(ir.Constant(fty, -0.0), q), b, a])
    return q, builder.call(fma, [r, y, q])


def _markstein(builder, a, b, y, zeros_fast: bool):
    """RN(a / b) from y = RN(1 / b): Markstein's correction where y is nonzero and a lies in the
    span, else a division. ``zeros_fast`` (``fa_divby``): a zero dividend stays on the fast path
    as ``a * y``, its sign exact, and the rest divide plainly; without it (``fa_rowdivby``) zeros
    divide too, through the zero-safe selects of :func:`_div_selects`."""
    fty = a.type
    bits = _magnitude_bits(builder, a)
    in_span = _in_span(builder, bits)
    if zeros_fast:
        zero = builder.icmp_unsigned("==", bits, ir.Constant(_I32, 0))
        in_span = builder.or_(in_span, zero)
    fast = builder.and_(builder.fcmp_ordered("!=", y, ir.Constant(fty, 0.0)), in_span)
    with builder.if_else(fast, likely=True if zeros_fast else None) as (then, otherwise):
        with then:
            q, corrected = _correction(builder, a, b, y)
            if zeros_fast:
                corrected = builder.select(zero, q, corrected)
            then_block = builder.basic_block
        with otherwise:
            divided = builder.fdiv(a, b) if zeros_fast else _div_selects(builder, a, b)
            otherwise_block = builder.basic_block
    quotient = builder.phi(fty)
    quotient.add_incoming(corrected, then_block)
    quotient.add_incoming(divided, otherwise_block)
    return quotient


def _divby_codegen(context, builder, sig, args):
    return _markstein(builder, *args, zeros_fast=True)


# Row kernels (compiler/rowfusion.py: a softmax's sum, a layer norm's sqrt(var + eps)) keep the
# form above had before zero dividends joined its fast path: a zero, like every dividend outside
# the span, divides through the zero-safe selects below. Why two: on the H100, in one call, the
# layer norm's row kernel under fa.fuse read 0.77 of a copy with fa_divby against 0.89 with this
# form (the kernels' sources differ in nothing else), while dropout's zeros need fa_divby's fast
# path (0.73 against 0.69). Which part of fa_divby costs the row kernel was not isolated.
def _div_selects(builder, a, b):
    """a / b with a zero dividend (over a finite nonzero b) as a * b, its sign exact, and every
    other quotient div.rn's: no slow-path subroutine for a zero."""
    fty = a.type
    zero, one = ir.Constant(fty, 0.0), ir.Constant(fty, 1.0)
    finite = builder.fcmp_ordered("<", builder.fmul(b, zero), one)    # b * 0 is NaN unless finite
    easy = builder.and_(builder.and_(builder.fcmp_ordered("==", a, zero),
                                     builder.fcmp_ordered("!=", b, zero)), finite)
    dividend = builder.select(easy, one, a)
    if "nvptx" in (builder.module.triple or ""):
        # through an opaque move: LLVM would otherwise see that the quotient is unused where the
        # 1 is taken and divide a itself (the tests run this IR on numba's CPU target too)
        move = ir.InlineAsm(ir.FunctionType(fty, [fty]), "mov.f32 $0, $1;", "=f,f")
        dividend = builder.call(move, [dividend])
    quotient = builder.fdiv(dividend, b)
    return builder.select(easy, builder.fmul(a, b), quotient)


def _rowdivby_codegen(context, builder, sig, args):
    return _markstein(builder, *args, zeros_fast=False)


def rowdivby_typer(typingctx, a, b, y):
    if a == b == y == types.float32:
        return signature(a, a, b, y), _rowdivby_codegen
    return None


# A float16 division by a uniform divisor (dropout's x * mask / (1 - p) in float16) computes in
# float32 over float16 values: every finite nonzero dividend and divisor lies in the span above,
# so no element needs the plain division, and a divisor of 0, ±inf or NaN is handled by its true
# reciprocal instead (``fa_divrcph``: RN(1 / b) itself, where ``fa_divrcp`` marks those with
# 0): a * y is then the exact IEEE quotient (a / ±0 = a * ±inf, a / ±inf = a * ±0, NaN), as it
# is for a dividend of 0, ±inf or NaN over any divisor. So ``fa_divbyh`` is Markstein's
# correction where both are finite and nonzero, else a * y: selects, no branch and no slow-path
# subroutine, whose registers the fast path paid for too (the H100's dropout kernel: 70).
# The float32 quotient rounded to float16 is NumPy's float16 quotient (float32 holds 2 * 11 + 2
# bits: the double rounding is innocuous).
def _divrcph_codegen(context, builder, sig, args):
    (b,) = args
    return builder.fdiv(ir.Constant(b.type, 1.0), b)


def _finite_nonzero(builder, x):
    """Whether float32 ``x`` is finite and nonzero: its magnitude bits less one, unsigned, below
    those of infinity less one."""
    less_one = builder.sub(_magnitude_bits(builder, x), ir.Constant(_I32, 1))
    return builder.icmp_unsigned("<", less_one, ir.Constant(_I32, 0x7F800000 - 1))


def _divbyh_codegen(context, builder, sig, args):
    a, b, y = args
    q, corrected = _correction(builder, a, b, y)
    both = builder.and_(_finite_nonzero(builder, a), _finite_nonzero(builder, y))
    return builder.select(both, corrected, q)


def divrcp_typer(typingctx, b):
    if b == types.float32:
        return signature(b, b), _divrcp_codegen
    return None


def divby_typer(typingctx, a, b, y):
    if a == b == y == types.float32:
        return signature(a, a, b, y), _divby_codegen
    return None


def divrcph_typer(typingctx, b):
    if b == types.float32:
        return signature(b, b), _divrcph_codegen
    return None


def divbyh_typer(typingctx, a, b, y):
    if a == b == y == types.float32:
        return signature(a, a, b, y), _divbyh_codegen
    return None
