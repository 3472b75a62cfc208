"""Float division for the cuda target as numba-cuda intrinsics: ``fa_div``, NumPy's IEEE
quotient without the hardware division's slow path for a zero dividend; ``fa_rowrcp`` and
``fa_divby``, the same float32 quotient by a divisor constant along a row without a division an
element.

Where it sits: beside :mod:`.intrinsics`, which puts them in the kernels' namespace as
``fa_div_f32``/``fa_div_f64`` (the op table's division template) and ``fa_rowrcp_f32``,
``fa_divby_f32`` (``compiler/rowfusion.py``'s row kernels); the cpu and sim backends divide with
``/`` under the same names. ``tests/gpu/test_division_gpu.py`` compares every finite float16 pair,
random float32 bit patterns and a row kernel's divisions with NumPy on the device.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.typing import signature


# a / b for floats as NumPy divides (IEEE, correctly rounded), without the hardware division's
# slow path for a zero dividend: div.rn's fast path checks its operands' range (FCHK) and calls a
# subroutine for a zero, subnormal or huge one; a dropout's masked zeros then take it in nearly
# every warp (the kernel ran at 0.42 of a copy, 0.70 now). For a zero a and a finite nonzero b
# the quotient is a zero of sign(a) xor sign(b), which a * b is exactly; everything else divides
# as before. The test costs every division a few instructions: a Black-Scholes under fa.fuse,
# four divisions an element and compute-bound, went from 0.92 to 0.82 of a copy on the H100
# (0.80 with a branch to the zero case in place of the selects).
def _div_codegen(context, builder, sig, args):
    a, b = args
    fty = a.type
    zero, one = ir.Constant(fty, 0.0), ir.Constant(fty, 1.0)
    finite = builder.fcmp_ordered("<", builder.fmul(b, zero), one)    # b * 0 is NaN unless finite
    easy = builder.and_(builder.and_(builder.fcmp_ordered("==", a, zero),
                                     builder.fcmp_ordered("!=", b, zero)), finite)
    # the dividend through an opaque move: LLVM would otherwise see that the quotient is unused
    # where the 1 is taken and divide a itself
    kind, reg = ("f32", "f") if fty == ir.FloatType() else ("f64", "d")
    move = ir.InlineAsm(ir.FunctionType(fty, [fty]), f"mov.{kind} $0, $1;", f"={reg},{reg}")
    quotient = builder.fdiv(builder.call(move, [builder.select(easy, one, a)]), b)
    return builder.select(easy, builder.fmul(a, b), quotient)


def div_typer(typingctx, a, b):
    if isinstance(a, types.Float) and a == b:
        return signature(a, a, b), _div_codegen
    return None


# A float32 division by a value b constant along a row (a softmax's sum, a layer norm's
# sqrt(var + eps)) without a division an element: the row's reciprocal y = RN(1/b) once
# (``fa_rowrcp``, rcp.rn), then per element q = RN(a * y), the remainder r = a - q * b by an fma
# and RN(q + r * y) by another (``fa_divby``: Markstein's correction), which is RN(a / b), the
# quotient NumPy and div.rn give. Why: with r exact, q + r * y differs from a / b by
# (a / b - q) * b * (y - 1/b), under 2^-24 times q's own error, while a quotient of float32 values
# is never a midpoint between floats and lies at least 2^-25 ulp from one (a - b * m is a nonzero
# multiple of the last places of b and m). That falls short of a proof where q is more than half
# an ulp off or r is rounded, so the claim rests on every pair of significands, checked on the
# H100 against div.rn (a and b in [1, 2): 2^46 pairs, none differ; 75 s). Scaling a and b by
# powers of two scales every step exactly while each value is a normal float: |a| and |b| within
# 2^±60 keep the quotient within 2^±120 and a nonzero remainder above 2^-107. Outside that
# (zeros, subnormals, huge values, infinities, NaN) ``fa_div`` divides, for every element where
# the divisor is. The H100 measured softmax 0.88 of a copy this way against 0.87 with fa_div,
# layer norm 0.88 against 0.86 (each row's first walk loading four vectors a thread at once).
_SPAN = 2.0 ** 60
_I32 = ir.IntType(32)


def _in_span(builder, x):
    """Whether 2^-60 <= |x| <= 2^60 (float32 ``x``): its bits less the sign, less the bits of
    2^-60, at most those of 2^60 less them, unsigned (NaN and infinities lie above)."""
    low, high = (int(np.float32(v).view(np.uint32)) for v in (1 / _SPAN, _SPAN))
    bits = builder.and_(builder.bitcast(x, _I32), ir.Constant(_I32, 0x7FFFFFFF))
    return builder.icmp_unsigned("<=", builder.sub(bits, ir.Constant(_I32, low)),
                                 ir.Constant(_I32, high - low))


def _rowrcp_codegen(context, builder, sig, args):
    (b,) = args
    zero, one = ir.Constant(b.type, 0.0), ir.Constant(b.type, 1.0)
    # 0 marks a divisor outside the span: every element then takes fa_div
    return builder.select(_in_span(builder, b), builder.fdiv(one, b), zero)


def _divby_codegen(context, builder, sig, args):
    a, b, y = args
    fty = a.type
    fma = builder.module.declare_intrinsic("llvm.fma", [fty], ir.FunctionType(fty, [fty] * 3))
    fast = builder.and_(builder.fcmp_ordered("!=", y, ir.Constant(fty, 0.0)),
                        _in_span(builder, a))
    with builder.if_else(fast) as (then, otherwise):
        with then:
            q = builder.fmul(a, y)
            r = builder.call(fma, [builder.fsub(ir.Constant(fty, -0.0), q), b, a])
            corrected = builder.call(fma, [r, y, q])
            then_block = builder.basic_block
        with otherwise:
            divided = _div_codegen(context, builder, signature(sig.return_type, a.type, b.type),
                                   [a, b])
            otherwise_block = builder.basic_block
    quotient = builder.phi(fty)
    quotient.add_incoming(corrected, then_block)
    quotient.add_incoming(divided, otherwise_block)
    return quotient


def rowrcp_typer(typingctx, b):
    if b == types.float32:
        return signature(b, b), _rowrcp_codegen
    return None


def divby_typer(typingctx, a, b, y):
    if a == b == y == types.float32:
        return signature(a, a, b, y), _divby_codegen
    return None
