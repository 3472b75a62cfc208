"""LLVM IR helpers the cuda target's intrinsic modules share (:mod:`.intrinsics`,
:mod:`.atomics`, :mod:`.randombits`): an element's address in the global address space, and
numba's integer test.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types


def is_int(t) -> bool:
    return isinstance(t, types.Integer)


def element_ptr(context, builder, sig, args, elem: ir.Type):
    """Address of element ``args[1]`` of an ``elem`` array at device address ``args[0]``.

    The generic pointer is cast into the global address space (addrspace 1) so NVVM emits
    ``ld.global``/``st.global`` (one ``cvta.to.global`` per pointer, hoisted out of the loop).
    """
    addr = context.cast(builder, args[0], sig.args[0], types.uint64)
    generic = builder.inttoptr(addr, elem.as_pointer())
    base = builder.addrspacecast(generic, elem.as_pointer(1))
    index = context.cast(builder, args[1], sig.args[1], types.int64)
    return builder.gep(base, [index], inbounds=True)
