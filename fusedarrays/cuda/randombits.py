"""fa.random's bit-level work for the cuda target as numba-cuda intrinsics: Philox4x32-10's rounds
in 32-bit registers (``fa_philox``) and ``floor(log2 k)`` as one leading-zero count
(``fa_floor_log2``, Box-Muller's exponent).

Where it sits: beside :mod:`.division`; :mod:`.intrinsics` puts both in the kernels' namespace.
cpu and sim run the portable helpers of the same names (``compiler/devicelib.py``,
``compiler/philox.py``), which give the same words: ``tests/ptx/test_random_ptx.py`` runs this IR
on numba's CPU target against Random123's known answers.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.typing import signature

from .irhelpers import is_int as _is_int

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


# Philox4x32-10 (fa.random) in 32-bit registers: the Python helper of the same name in
# compiler/devicelib.py computes in numba's 64-bit integers, which NVVM keeps as 64-bit
# multiplies, ands and xors (~2x the instructions); here the rounds are unrolled i32 operations
# (one mul.wide.u32 per product). Same words: checked against Random123's
# known answers on numba's CPU target (tests/ptx/test_random_ptx.py).
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def _mulwide32(builder, a, m: int):
    """``(high, low)`` words of ``a * m``: one ``mul.wide.u32`` on NVPTX (ptxas makes it one
    IMAD.WIDE.U32 where mul.hi and mul.lo are two instructions), else the 64-bit product's
    halves (the tests run this IR on numba's CPU target)."""
    if "nvptx" in (builder.module.triple or ""):
        # both words out of the asm: a 64-bit result would let LLVM fold a later shift of the
        # high word into a 64-bit one (and a u64 -> float conversion, I2F.U64)
        pair = ir.LiteralStructType([_I32, _I32])
        asm = ir.InlineAsm(ir.FunctionType(pair, [_I32]),
                           f"{{ .reg .u64 w; mul.wide.u32 w, $2, {m}; mov.b64 {{$1, $0}}, w; }}",
                           "=r,=r,r")
        words = builder.call(asm, [a])
        return builder.extract_value(words, 0), builder.extract_value(words, 1)
    wide = builder.mul(builder.zext(a, _I64), ir.Constant(_I64, m))
    return builder.trunc(builder.lshr(wide, ir.Constant(_I64, 32)), _I32), builder.trunc(wide, _I32)


def _philox_codegen(context, builder, sig, args):
    c0, c1, c2, c3, k0, k1 = (context.cast(builder, v, t, types.uint32)
                              for v, t in zip(args, sig.args))
    for _ in range(10):
        hi0, lo0 = _mulwide32(builder, c0, _PHILOX_M[0])
        hi1, lo1 = _mulwide32(builder, c2, _PHILOX_M[1])
        c0, c1, c2, c3 = (builder.xor(builder.xor(hi1, c1), k0), lo1,
                          builder.xor(builder.xor(hi0, c3), k1), lo0)
        k0 = builder.add(k0, ir.Constant(_I32, _PHILOX_W[0]))
        k1 = builder.add(k1, ir.Constant(_I32, _PHILOX_W[1]))
    return context.make_tuple(builder, sig.return_type, [c0, c1, c2, c3])


def philox_typer(typingctx, c0, c1, c2, c3, k0, k1):
    if all(map(_is_int, (c0, c1, c2, c3, k0, k1))):
        return signature(types.UniTuple(types.uint32, 4), c0, c1, c2, c3, k0, k1), _philox_codegen
    return None


# floor(log2 k) of 0 < k <= 2**32 (fa.random's Box-Muller): 63 minus the leading zeros of the
# 64-bit k, one FLO where compiler/philox.py's portable helper takes five compare-and-shift steps.
def _floor_log2_codegen(context, builder, sig, args):
    k = context.cast(builder, args[0], sig.args[0], types.int64)
    i64 = ir.IntType(64)
    ctlz = builder.module.declare_intrinsic("llvm.ctlz", [i64],
                                            ir.FunctionType(i64, [i64, ir.IntType(1)]))
    return builder.sub(ir.Constant(i64, 63), builder.call(ctlz, [k, ir.Constant(ir.IntType(1), 1)]))


def floor_log2_typer(typingctx, k):
    if _is_int(k):
        return signature(types.int64, k), _floor_log2_codegen
    return None
