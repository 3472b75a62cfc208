"""The cpu target's typed loads and stores, and its compare-and-swap, over raw addresses.

An operand reaches a cpu kernel as the host address of its view's first element (an integer), as
on the cuda target, and ``ld_f32(p, i)`` is one LLVM ``load`` at ``p + 4 * i``. Why not NumPy
arrays: each would cost every kernel numba's unboxing of an array in its CPython wrapper and an
array access per load to type and lower, where an integer is one word to unbox and an access is
inline IR. Indices may be negative (a view walked backwards from its first element).

Accesses are unaligned (``align=1``): a buffer's views may start anywhere in it (a complex view at
an odd float's offset), and x86 runs unaligned accesses at full speed. A value is stored as
numba's data model stores an array element (a bool as one byte 0/1), converted from the value's
type as an array store converts it.

Importing this module imports numba; only the cpu backend imports it, when it builds the kernel
namespace.
"""

from __future__ import annotations

from numba import types
from numba.core.extending import intrinsic


def _element_ptr(context, builder, sig, args, ty):
    """The LLVM pointer to element ``args[1]`` of type ``ty`` from the address ``args[0]``."""
    base = builder.inttoptr(args[0], context.get_data_type(ty).as_pointer())
    return builder.gep(base, [context.cast(builder, args[1], sig.args[1], types.int64)])


def _addressing(p, i) -> bool:
    return isinstance(p, types.Integer) and isinstance(i, types.Integer)


def load(code: str, ty: types.Type):
    """``ld_<code>(p, i)``: element ``i`` of the ``ty`` elements at address ``p``."""

    def ld(typingctx, p, i):
        if not _addressing(p, i):
            return None

        def codegen(context, builder, sig, args):
            ptr = _element_ptr(context, builder, sig, args, ty)
            return context.unpack_value(builder, ty, ptr, align=1)

        return ty(p, i), codegen

    ld.__name__ = f"ld_{code}"
    return intrinsic(ld)


def store(code: str, ty: types.Type):
    """``st_<code>(p, i, v)``: ``v`` converted to ``ty`` into element ``i`` at address ``p``."""

    def st(typingctx, p, i, v):
        if not (_addressing(p, i) and isinstance(v, (types.Number, types.Boolean))):
            return None

        def codegen(context, builder, sig, args):
            ptr = _element_ptr(context, builder, sig, args, ty)
            value = context.cast(builder, args[2], sig.args[2], ty)
            context.pack_value(builder, ty, value, ptr, align=1)
            return context.get_dummy_value()

        return types.none(p, i, v), codegen

    st.__name__ = f"st_{code}"
    return intrinsic(st)


def _cas(typingctx, p, i, expected, new):
    """``fa_cas_i64(p, i, expected, new)``: an atomic compare-and-swap of int64 element ``i``
    at address ``p``, the old value returned (the chunk threads share the error word)."""
    if not _addressing(p, i):
        return None

    def codegen(context, builder, sig, args):
        ptr = _element_ptr(context, builder, sig, args, types.int64)
        old, value = (context.cast(builder, v, t, types.int64)
                      for v, t in zip(args[2:], sig.args[2:]))
        pair = builder.cmpxchg(ptr, old, value, "monotonic", "monotonic")
        return builder.extract_value(pair, 0)

    return types.int64(p, i, expected, new), codegen


_cas.__name__ = "fa_cas_i64"
cas_i64 = intrinsic(_cas)
