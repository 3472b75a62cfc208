"""Float division for the cuda target as a numba-cuda intrinsic, ``fa_div``: NumPy's IEEE
quotient without the hardware division's slow path for a zero dividend.

Where it sits: beside :mod:`.intrinsics`, which puts it in the kernels' namespace as
``fa_div_f32``/``fa_div_f64`` (the op table's division template); the cpu and sim backends
divide with ``/`` under the same names. ``tests/gpu/test_division_gpu.py`` compares every finite
float16 pair and random float32 bit patterns with NumPy on the device.
"""

from __future__ import annotations

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
