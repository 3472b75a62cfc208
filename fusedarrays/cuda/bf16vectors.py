"""bfloat16's 16-byte vector accesses for generated CUDA kernels: ``ldv8_bf16``, ``stv8_bf16``.

Eight bfloat16 values travel as ``<4 x i32>`` (one ``ld.global.v4.u32``, as float16's do in
:mod:`.intrinsics`): lane k holds elements 2k (low 16 bits) and 2k+1 (high 16 bits). A bfloat16
is the high half of its float32, so a load is a shift or a mask; a store rounds each float32 to
nearest even on its bits (a NaN becomes the quiet NaN 0x7FC0 with its sign), as
:func:`..compiler.minifloat` ``fa_f32_bf16`` does for single elements. :mod:`.intrinsics` names
them; importing this module imports numba.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.typing import signature

from .irhelpers import element_ptr as _element_ptr
from .irhelpers import is_int as _is_int

_I32, _FLOAT = ir.IntType(32), ir.FloatType()
_WORDS = ir.VectorType(_I32, 4)
_BYTES = 16


def _is_value(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


def _load_codegen(context, builder, sig, args):
    ptr = _element_ptr(context, builder, sig, args, _WORDS)
    words = builder.load(ptr, align=_BYTES)
    values = []
    for k in range(4):
        word = builder.extract_element(words, _I32(k))
        for bits in (builder.shl(word, _I32(16)), builder.and_(word, _I32(-65536))):
            values.append(builder.bitcast(bits, _FLOAT))
    return context.make_tuple(builder, sig.return_type, values)


def load_typer(typingctx, p, j):
    if _is_int(p) and _is_int(j):
        return signature(types.UniTuple(types.float32, 8), p, j), _load_codegen
    return None


def _to_bf16_bits(context, builder, value, valty):
    """A value as bfloat16 bits in an i32: made float32 (as cv_f32), rounded to nearest even."""
    f = context.cast(builder, value, valty, types.float32)
    u = builder.bitcast(f, _I32)
    top = builder.lshr(u, _I32(16))
    rounded = builder.lshr(builder.add(builder.add(u, _I32(0x7FFF)),
                                       builder.and_(top, _I32(1))), _I32(16))
    nan = builder.or_(builder.and_(top, _I32(0x8000)), _I32(0x7FC0))
    return builder.select(builder.fcmp_unordered("uno", f, f), nan, rounded)


def _store_codegen(context, builder, sig, args):
    ptr = _element_ptr(context, builder, sig, args, _WORDS)
    bits = [_to_bf16_bits(context, builder, v, t)
            for v, t in zip(args[2:], sig.args[2:], strict=True)]
    words = ir.Constant(_WORDS, ir.Undefined)
    for k in range(4):
        word = builder.or_(bits[2 * k], builder.shl(bits[2 * k + 1], _I32(16)))
        words = builder.insert_element(words, word, _I32(k))
    builder.store(words, ptr, align=_BYTES)
    return context.get_dummy_value()


def store_typer(typingctx, p, j, a, b, c, d, e, f, g, h):
    values = (a, b, c, d, e, f, g, h)
    if _is_int(p) and _is_int(j) and all(map(_is_value, values)):
        return signature(types.void, p, j, *values), _store_codegen
    return None
