"""fa.random's bit-level work for the cuda target as numba-cuda intrinsics: Philox4x32-10's rounds
in 32-bit registers (``fa_philox``), ``floor(log2 k)`` as one leading-zero count
(``fa_floor_log2``, the float64 Box-Muller's exponent), and the float32 Box-Muller's pieces
(``fa_bm_ratio_f32``, ``fa_bm_sqrt_f32``, ``fa_bm_turn_f32``) without 64-bit integers, slow-path
branches or a branch on the quarter turn.

Where it sits: beside :mod:`.division`; :mod:`.intrinsics` puts them in the kernels' namespace.
cpu and sim run the portable helpers of the same names (``compiler/devicelib.py``,
``compiler/philox.py``), which give the same words and the same floats:
``tests/topics/test_random.py`` runs this IR on numba's CPU target against Random123's known
answers and the portable helpers (its ptx cases), and on the device for every word (cuda).
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
# known answers on numba's CPU target (tests/topics/test_random.py).
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


# --- the float32 Box-Muller's pieces (compiler/philox.py's fa_bm_f32) ----------------------------
# Where the portable helpers of the same names compute in numba's 64-bit integers, with IEEE
# division and square root (each a fast path behind a range check and a branch to a slow-path
# subroutine) and a four-way branch on the quarter turn, which splits nearly every warp (each
# lane's angle is random): these give the same bits from 32-bit integers, the division's and the
# square root's fast paths alone, over operands where they are exact, and selects.
# tests/topics/test_random.py runs this IR (less its NVPTX-only asm) on numba's CPU target
# against the portable helpers (ptx), and compares them on the device (cuda) for
# every 32-bit word.
_F32 = ir.FloatType()
_BIT31 = 0x80000000


def _nvptx(builder) -> bool:
    return "nvptx" in (builder.module.triple or "")


def _fma(builder, a, b, c):
    fma = builder.module.declare_intrinsic("llvm.fma", [_F32], ir.FunctionType(_F32, [_F32] * 3))
    return builder.call(fma, [a, b, c])


# RN(n / h) as div.rn.f32's fast path computes it once its FCHK has passed: rcp.approx, one
# Newton step, then Markstein's correction. Its operands here, n an integer of magnitude below
# 2^31 (zero included: q = +0 and r = +0 keep +0, div.rn's quotient) and h in [2^31, 2^32),
# are those the check passes and the quotient's exponent is far from subnormal, so this is div.rn
# without the check and the branch.
_DIV_FAST = ("{ .reg .f32 y, e, q, r, nh; neg.f32 nh, $2; rcp.approx.ftz.f32 y, $2; "
             "fma.rn.f32 e, nh, y, 0f3F800000; fma.rn.f32 y, y, e, y; mul.rn.f32 q, $1, y; "
             "fma.rn.f32 r, nh, q, $1; fma.rn.f32 $0, r, y, q; }")


def _bm_ratio_codegen(context, builder, sig, args):
    """``(2 s, e - 32)`` of philox.fa_bm_ratio_f32 in 32-bit registers: k = a + 1 wraps to 0
    for a = 2^32 - 1 (u = 1); t = k << clz(k) in [2^31, 2^32) is the portable t / 4, one
    (2^31 or 2^32) its one / 4, t - one an i32 (t itself, read signed, where one = 2^32), and
    t + one, past 32 bits, is converted as (t + one) / 2 with its lost bit ORed into the last
    place (rounding to 24 bits then sees the same round and sticky bits), so its float is half
    the portable t + one's quarter: the quotient is 2 s."""
    i32 = lambda v: ir.Constant(_I32, v)  # noqa: E731
    a = context.cast(builder, args[0], sig.args[0], types.uint32)
    k = builder.add(a, i32(1))
    wrapped = builder.icmp_unsigned("==", k, i32(0))
    if _nvptx(builder):
        # the leading zeros, and -1 for k = 0 (u = 1: e = 32), in one FLO.U32.SH
        shiftamt = ir.InlineAsm(ir.FunctionType(_I32, [_I32]), "bfind.shiftamt.u32 $0, $1;",
                                "=r,r")
        lead = builder.call(shiftamt, [k])
    else:
        ctlz = builder.module.declare_intrinsic("llvm.ctlz", [_I32],
                                                ir.FunctionType(_I32, [_I32, ir.IntType(1)]))
        lead = builder.select(wrapped, i32(-1),
                              builder.call(ctlz, [k, ir.Constant(ir.IntType(1), 0)]))
    # k << lead is poison where k wrapped (lead = -1); the select never takes it there
    t = builder.select(wrapped, i32(_BIT31), builder.shl(k, lead))
    big = builder.icmp_unsigned(">", t, i32(3037000499))    # m >= sqrt(2): one = 2^32, e + 1
    low = builder.select(big, t, builder.xor(t, i32(_BIT31)))
    high = builder.or_(builder.add(builder.lshr(t, i32(1)),
                                   builder.select(big, i32(_BIT31), i32(1 << 30))),
                       builder.and_(t, i32(1)))
    n, h = builder.sitofp(low, _F32), builder.uitofp(high, _F32)
    if _nvptx(builder):
        div = ir.InlineAsm(ir.FunctionType(_F32, [_F32, _F32]), _DIV_FAST, "=f,f,f")
        ratio = builder.call(div, [n, h])
    else:
        ratio = builder.fdiv(n, h)
    # f = floor(log2 k) - 32 + big = (31 - clz) - 32 + big
    f = builder.sitofp(builder.sub(builder.sub(builder.zext(big, _I32), i32(1)), lead), _F32)
    return context.make_tuple(builder, sig.return_type, [ratio, f])


def bm_ratio_typer(typingctx, a):
    if _is_int(a):
        return signature(types.UniTuple(types.float32, 2), a), _bm_ratio_codegen
    return None


# sqrt.rn.f32's fast path (rsqrt.approx, then one correction), which ptxas takes behind a check
# that x lies in [2^-101, 2^128): -2 ln u lies in [2^-32, 45] or is +0 (u = 1), where
# rsqrt.approx's infinity would make a NaN: a zero is kept by a select.
_SQRT_FAST = ("{ .reg .f32 y, s, h, r, ns; .reg .pred z; rsqrt.approx.ftz.f32 y, $1; "
              "mul.rn.f32 s, $1, y; mul.rn.f32 h, y, 0f3F000000; neg.f32 ns, s; "
              "fma.rn.f32 r, ns, s, $1; fma.rn.f32 s, r, h, s; setp.eq.f32 z, $1, 0f00000000; "
              "selp.f32 $0, $1, s, z; }")


def _bm_sqrt_codegen(context, builder, sig, args):
    x = context.cast(builder, args[0], sig.args[0], types.float32)
    if _nvptx(builder):
        return builder.call(ir.InlineAsm(ir.FunctionType(_F32, [_F32]), _SQRT_FAST, "=f,f"), [x])
    sqrt = builder.module.declare_intrinsic("llvm.sqrt", [_F32], ir.FunctionType(_F32, [_F32]))
    return builder.call(sqrt, [x])


def bm_sqrt_typer(typingctx, x):
    if x == types.float32:
        return signature(types.float32, x), _bm_sqrt_codegen
    return None


def _bm_turn_codegen(context, builder, sig, args):
    """philox.fa_bm_turn_f32's ``(fma(r, ±c, 0), fma(r, ±s, 0))`` as ``fma(±r, c, 0)``: the
    same bits (a product's sign, and where it is zero the fma's +0 either way), the quarter's
    signs xored into r's sign bit and its swap two selects, each from a bit of w (q = w >> 30)."""
    r, cs, sn = (context.cast(builder, v, t, types.float32)
                 for v, t in zip(args[:3], sig.args[:3]))
    w = context.cast(builder, args[3], sig.args[3], types.uint32)
    i32 = lambda v: ir.Constant(_I32, v)  # noqa: E731
    bits = builder.bitcast(r, _I32)
    # q = 1, 2 turn cos to -sin, -cos: bit 1 of q + 1; q = 2, 3 turn sin to -cos, -sin: q's bit 1
    signs = [builder.and_(v, i32(_BIT31)) for v in (builder.add(w, i32(1 << 30)), w)]
    r0, r1 = (builder.bitcast(builder.xor(bits, sign), _F32) for sign in signs)
    if _nvptx(builder):   # q = 1, 3 (w's bit 30): cos and sin swap
        # in asm: NVVM turns the test of bit 30 into (w >> 30) & 1 == 1, three instructions
        # where ptxas makes one LOP3 with a predicate of the and and the compare
        pair = ir.LiteralStructType([_F32, _F32])
        swap = ir.InlineAsm(ir.FunctionType(pair, [_I32, _F32, _F32]),
                            "{ .reg .b32 t; .reg .pred p; and.b32 t, $2, 1073741824; "
                            "setp.ne.b32 p, t, 0; selp.f32 $0, $4, $3, p; "
                            "selp.f32 $1, $3, $4, p; }", "=f,=f,r,f,f")
        turned = builder.call(swap, [w, cs, sn])
        c, s = builder.extract_value(turned, 0), builder.extract_value(turned, 1)
    else:
        odd = builder.icmp_unsigned("!=", builder.and_(w, i32(1 << 30)), i32(0))
        c, s = builder.select(odd, sn, cs), builder.select(odd, cs, sn)
    zero = ir.Constant(_F32, 0.0)
    return context.make_tuple(builder, sig.return_type,
                              [_fma(builder, r0, c, zero), _fma(builder, r1, s, zero)])


def bm_turn_typer(typingctx, r, cs, sn, w):
    if r == cs == sn == types.float32 and _is_int(w):
        return signature(types.UniTuple(types.float32, 2), r, cs, sn, w), _bm_turn_codegen
    return None
