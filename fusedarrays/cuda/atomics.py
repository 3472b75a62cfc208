"""The cuda target's atomics as numba-cuda intrinsics: a split reduction's counter
(``fa_count_i32``, ``atom.global.add.u32``) and a flagged gather's error word
(``fa_flag_index``, a compare-and-swap behind a branch). Integer atomics only: no float accumulates
through an atomic, so results keep their bits run to run.

Where it sits: beside :mod:`.division` and :mod:`.randombits`; :mod:`.intrinsics` puts both in
the kernels' namespace. cpu and sim give the same names their own implementations.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.typing import signature

from .irhelpers import element_ptr, is_int

_I32, _I64 = ir.IntType(32), ir.IntType(64)


# A split reduction's counter (compiler/reduction.py): one integer atomic add on element i of an
# int32 array at device address p, the value before it returned (``atom.global.add.u32``).
# Relaxed ("monotonic"): the kernel orders its stores around it with cuda.threadfence(), as
# CUDA's threadFenceReduction sample does.
def _count_codegen(context, builder, sig, args):
    ptr = element_ptr(context, builder, sig, args, _I32)
    return builder.atomic_rmw("add", ptr, ir.Constant(_I32, 1), "monotonic")


def count_typer(typingctx, p, i):
    if is_int(p) and is_int(i):
        return signature(types.int32, p, i), _count_codegen
    return None


# A flagged gather's out-of-range index (compiler/devicelib.fa_take_flagged,
# runtime/indexflags.py): where ``bad``, a compare-and-swap of ``site`` into the error word's
# slot 0 (from 0), and, for the thread that won it, a store of the index into slot 1, so the
# first offender stays whole. The record sits behind a branch that every thread of the normal
# case takes (so no warp diverges; the gathered load is outside it, never skipped), and only
# the record reads the compare-and-swap's result. Why not predication: ptxas gives the CAS a
# scoreboard that the kernel's loads share, and a read of its result after the predicated-off
# CAS waited on that scoreboard, so each gathered load waited for the previous one: four
# round trips to L2 per thread and vector, not one. Labels in braces are local to the block,
# so the asm inlines any number of times.
_FLAG_ASM = ("{ .reg .pred p, w; .reg .b64 g, old; setp.eq.s32 p, $0, 0; @p bra FA_FLAG_DONE; "
             "cvta.to.global.u64 g, $1; atom.global.cas.b64 old, [g], 0, $2; "
             "setp.eq.s64 w, old, 0; @w st.global.b64 [g+8], $3; FA_FLAG_DONE: }")


def _flag_index_codegen(context, builder, sig, args):
    bad = context.cast(builder, args[1], sig.args[1], types.int32)
    address, site, value = (context.cast(builder, v, t, types.int64)
                            for v, t in zip((args[0], args[2], args[3]),
                                            (sig.args[0], sig.args[2], sig.args[3])))
    asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [_I32, _I64, _I64, _I64]), _FLAG_ASM,
                       "r,l,l,l,~{memory}", side_effect=True)
    builder.call(asm, [bad, address, site, value])
    return context.get_dummy_value()


def flag_index_typer(typingctx, e, bad, site, value):
    if is_int(e) and isinstance(bad, types.Boolean) and is_int(site) and is_int(value):
        return signature(types.void, e, bad, site, value), _flag_index_codegen
    return None
