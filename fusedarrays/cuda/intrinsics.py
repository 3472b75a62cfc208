"""Device-side names that generated CUDA kernels call: typed loads, stores, casts, vector accesses.

Where it sits: ``codegen`` renders kernel source that calls ``ld_f32(p, i)``, ``st_f16(p, i, v)``,
``cv_i32(x)``, ``ldv4_f32(p, j)``, ``fa_floor_f64(x)`` …; :func:`device_namespace` returns the
dict those names live in, and :mod:`.compile` execs the source in a copy of it before numba-cuda
compiles it. Everything here is built once per process from the :data:`SCALARS` table, one factory
per family, so a dtype is one row.

Why intrinsics rather than numba arrays: kernel parameters are raw device addresses (``uint64``), so
the launch path packs plain integers instead of numba's array ABI. ``carray`` over such addresses
silently drops stores; an ``inttoptr`` into the global address space does not, and lets NVVM emit
``ld.global``/``st.global`` and 128-bit vector accesses.

Value conventions (the *compute type* of a dtype): float16 is computed in float32 (``cv_f16`` rounds
to half and back, so per-op rounding matches NumPy's), bool is numba's ``boolean`` (stored as one
byte 0/1), every other dtype is its own numba type. bfloat16 and float8 are float32 values too
(:mod:`..compiler.minifloat`'s helpers; bfloat16's vectors in :mod:`.bf16vectors`).

Importing this module imports numba; only :mod:`.compile` imports it, and only when compiling.
"""

from __future__ import annotations

import cmath
import math
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir
from numba import cuda, types
from numba.core.typing import signature
from numba.cuda import libdevice
from numba.cuda.extending import intrinsic

from ..compiler import MINIFLOAT_CODES, bind_minifloats
from . import atomics, bf16vectors, division, randombits
from .irhelpers import element_ptr as _element_ptr
from .irhelpers import is_int as _is_int


@dataclass(frozen=True)
class Scalar:
    """One dtype as device code sees it."""

    code: str  # the plan's dtype code
    compute: types.Type  # numba type of values in kernel code
    param: types.Type  # numba type of a scalar kernel parameter of this dtype
    llvm: ir.Type  # LLVM type of one element in memory
    itemsize: int


_I8, _I16, _I32, _I64 = (ir.IntType(b) for b in (8, 16, 32, 64))

SCALARS: dict[str, Scalar] = {
    s.code: s
    for s in (
        # bool: a byte in memory and as a parameter, an i1 in registers
        Scalar("b1", types.boolean, types.uint8, _I8, 1),
        Scalar("i8", types.int8, types.int8, _I8, 1),
        Scalar("i16", types.int16, types.int16, _I16, 2),
        Scalar("i32", types.int32, types.int32, _I32, 4),
        Scalar("i64", types.int64, types.int64, _I64, 8),
        Scalar("u8", types.uint8, types.uint8, _I8, 1),
        Scalar("u16", types.uint16, types.uint16, _I16, 2),
        Scalar("u32", types.uint32, types.uint32, _I32, 4),
        Scalar("u64", types.uint64, types.uint64, _I64, 8),
        # float16: `half` in memory, float32 in registers and as a (pre-rounded) parameter
        Scalar("f16", types.float32, types.float32, ir.HalfType(), 2),
        Scalar("f32", types.float32, types.float32, ir.FloatType(), 4),
        Scalar("f64", types.float64, types.float64, ir.DoubleType(), 8),
        # complex: numba's {real, imag} struct, in memory as in registers (one 8- or 16-byte
        # access per element; two complex64 per 16-byte access: ldv2_c64); as a kernel
        # parameter numba passes its two parts
        Scalar("c64", types.complex64, types.complex64,
               ir.LiteralStructType([ir.FloatType()] * 2), 8),
        Scalar("c128", types.complex128, types.complex128,
               ir.LiteralStructType([ir.DoubleType()] * 2), 16),
    )
}
# bfloat16 and float8 scalar parameters travel as float32 (rounded to the format by the host)
PARAMS = {c: s.param for c, s in SCALARS.items()} | dict.fromkeys(MINIFLOAT_CODES, types.float32)

VECTOR4_CODES = ("f32", "i32", "u32")  # one 16-byte access = 4 lanes of a 4-byte dtype
SPLIT_CODES = ("c64", "c128")  # ld_<code>_split: an element by parts (_make_load_split)
MATH_FUNCTIONS = ("floor", "ceil", "trunc", "rint", "cbrt", "exp2", "fmod")  # libdevice names
_VECTOR_BYTES = 16
_HALF, _FLOAT = ir.HalfType(), ir.FloatType()


# --- IR helpers ---------------------------------------------------------------------------------


def _is_value(t) -> bool:
    # complex included: codegen casts a complex value only to a complex dtype (or takes its
    # real part first), and numba's casts between complex types and from real ones exist
    return isinstance(t, (types.Number, types.Boolean))


def _to_half(context, builder, value, valty):
    # One rounding straight to half, as NumPy does: float32 → half directly, a bool (an i1) as
    # a select of half's 1 and 0 (no conversion instruction, which the H100 runs at an eighth
    # of float32's rate), integers of up to 16 bits through float32 (exact for them), anything
    # else through float64 (exact for every integer that does not overflow half anyway).
    if valty == types.float32:
        return builder.fptrunc(value, _HALF)
    if valty == types.boolean:
        return builder.select(value, ir.Constant(_HALF, 1.0), ir.Constant(_HALF, 0.0))
    if isinstance(valty, types.Integer) and valty.bitwidth <= 16:
        return builder.fptrunc(context.cast(builder, value, valty, types.float32), _HALF)
    wide = context.cast(builder, value, valty, types.float64)
    return builder.fptrunc(wide, _HALF)


def _to_storage(context, builder, value, valty, s: Scalar):
    """A value of numba type ``valty`` as the in-memory LLVM value of dtype ``s`` (C-style cast)."""
    if s.code == "f16":
        return _to_half(context, builder, value, valty)
    if s.code == "b1":
        flag = context.cast(builder, value, valty, types.boolean)
        return builder.zext(flag, _I8)
    return context.cast(builder, value, valty, s.compute)


def _from_storage(builder, raw, s: Scalar):
    """An in-memory value of dtype ``s`` as its compute-type value."""
    if s.code == "f16":
        return builder.fpext(raw, _FLOAT)
    if s.code == "b1":
        return builder.icmp_unsigned("!=", raw, ir.Constant(_I8, 0))
    return raw


def _named(name: str, typer):
    # numba names an intrinsic after its typing function; give each generated one its own name
    typer.__name__ = typer.__qualname__ = name
    return typer


# --- factories, one per family ------------------------------------------------------------------


def _make_load(s: Scalar):
    def codegen(context, builder, sig, args):
        ptr = _element_ptr(context, builder, sig, args, s.llvm)
        return _from_storage(builder, builder.load(ptr, align=s.itemsize), s)

    def typer(typingctx, p, i):
        if _is_int(p) and _is_int(i):
            return signature(s.compute, p, i), codegen
        return None

    return _named(f"ld_{s.code}", typer)


def _make_store(s: Scalar):
    def codegen(context, builder, sig, args):
        ptr = _element_ptr(context, builder, sig, args, s.llvm)
        builder.store(_to_storage(context, builder, args[2], sig.args[2], s), ptr, align=s.itemsize)
        return context.get_dummy_value()

    def typer(typingctx, p, i, v):
        if _is_int(p) and _is_int(i) and _is_value(v):
            return signature(types.void, p, i, v), codegen
        return None

    return _named(f"st_{s.code}", typer)


def _make_cast(s: Scalar):
    def codegen(context, builder, sig, args):
        (value,), (valty,) = args, sig.args
        if s.code == "f16":
            return builder.fpext(_to_half(context, builder, value, valty), _FLOAT)
        return context.cast(builder, value, valty, s.compute)  # bool: x != 0 (NaN is True)

    def typer(typingctx, x):
        if _is_value(x):
            return signature(s.compute, x), codegen
        return None

    return _named(f"cv_{s.code}", typer)


def _make_load_vector(s: Scalar):
    lanes = _VECTOR_BYTES // s.itemsize
    vec = ir.VectorType(s.llvm, lanes)

    def codegen(context, builder, sig, args):
        ptr = _element_ptr(context, builder, sig, args, vec)
        loaded = builder.load(ptr, align=_VECTOR_BYTES)
        values = [_from_storage(builder, builder.extract_element(loaded, _I32(k)), s)
                  for k in range(lanes)]
        return context.make_tuple(builder, sig.return_type, values)

    def typer(typingctx, p, j):
        if _is_int(p) and _is_int(j):
            return signature(types.UniTuple(s.compute, lanes), p, j), codegen
        return None

    return _named(f"ldv{lanes}_{s.code}", typer)


def _make_store_vector(s: Scalar):
    lanes = _VECTOR_BYTES // s.itemsize
    assert lanes == 4, s  # the typer below spells out four lanes
    vec = ir.VectorType(s.llvm, lanes)

    def codegen(context, builder, sig, args):
        ptr = _element_ptr(context, builder, sig, args, vec)
        packed = ir.Constant(vec, ir.Undefined)
        for k in range(lanes):
            lane = _to_storage(context, builder, args[2 + k], sig.args[2 + k], s)
            packed = builder.insert_element(packed, lane, _I32(k))
        builder.store(packed, ptr, align=_VECTOR_BYTES)
        return context.get_dummy_value()

    # numba lowers a typer's *args as a tuple argument, so the lanes are spelled out
    def typer(typingctx, p, j, a, b, c, d):
        if _is_int(p) and _is_int(j) and all(map(_is_value, (a, b, c, d))):
            return signature(types.void, p, j, a, b, c, d), codegen
        return None

    return _named(f"stv{lanes}_{s.code}", typer)


# float16 × 8 travels as <4 x i32>: NVVM splits an <8 x i16> access into two
# 64-bit ones, while <4 x i32> gives one ld.global.v4.u32. Lane k holds elements 2k (low 16 bits)
# and 2k+1 (high 16 bits), the little-endian order of memory.
_WORDS = ir.VectorType(_I32, 4)


def _ldv8_f16_codegen(context, builder, sig, args):
    ptr = _element_ptr(context, builder, sig, args, _WORDS)
    words = builder.load(ptr, align=_VECTOR_BYTES)
    values = []
    for k in range(4):
        word = builder.extract_element(words, _I32(k))
        low, high = builder.trunc(word, _I16), builder.trunc(builder.lshr(word, _I32(16)), _I16)
        values += [builder.fpext(builder.bitcast(bits, _HALF), _FLOAT) for bits in (low, high)]
    return context.make_tuple(builder, sig.return_type, values)


def _ldv8_f16_typer(typingctx, p, j):
    if _is_int(p) and _is_int(j):
        return signature(types.UniTuple(types.float32, 8), p, j), _ldv8_f16_codegen
    return None


def _stv8_f16_codegen(context, builder, sig, args):
    ptr = _element_ptr(context, builder, sig, args, _WORDS)
    bits = [builder.zext(builder.bitcast(_to_half(context, builder, v, t), _I16), _I32)
            for v, t in zip(args[2:], sig.args[2:], strict=True)]
    words = ir.Constant(_WORDS, ir.Undefined)
    for k in range(4):
        word = builder.or_(bits[2 * k], builder.shl(bits[2 * k + 1], _I32(16)))
        words = builder.insert_element(words, word, _I32(k))
    builder.store(words, ptr, align=_VECTOR_BYTES)
    return context.get_dummy_value()


def _stv8_f16_typer(typingctx, p, j, a, b, c, d, e, f, g, h):
    values = (a, b, c, d, e, f, g, h)
    if _is_int(p) and _is_int(j) and all(map(_is_value, values)):
        return signature(types.void, p, j, *values), _stv8_f16_codegen
    return None


# complex64 × 2 travels as <4 x float>: one ld.global.v4.f32 holds two elements, each its real
# part then its imaginary part (NumPy's layout, numba's {real, imag} struct). complex128 needs
# no vector intrinsic: its element is a 16-byte access already (ld_c128, a {double, double}
# aligned to 16: one ld.global.v2.f64).
_C64_PARTS = ir.VectorType(_FLOAT, 4)


def _ldv2_c64_codegen(context, builder, sig, args):
    ptr = _element_ptr(context, builder, sig, args, _C64_PARTS)
    parts = builder.load(ptr, align=_VECTOR_BYTES)
    values = []
    for k in range(2):
        value = ir.Constant(SCALARS["c64"].llvm, ir.Undefined)
        for part in range(2):
            value = builder.insert_value(
                value, builder.extract_element(parts, _I32(2 * k + part)), part)
        values.append(value)
    return context.make_tuple(builder, sig.return_type, values)


def _ldv2_c64_typer(typingctx, p, j):
    if _is_int(p) and _is_int(j):
        return signature(types.UniTuple(types.complex64, 2), p, j), _ldv2_c64_codegen
    return None


def _stv2_c64_codegen(context, builder, sig, args):
    ptr = _element_ptr(context, builder, sig, args, _C64_PARTS)
    parts = ir.Constant(_C64_PARTS, ir.Undefined)
    for k, (value, valty) in enumerate(zip(args[2:], sig.args[2:], strict=True)):
        value = _to_storage(context, builder, value, valty, SCALARS["c64"])
        for part in range(2):
            parts = builder.insert_element(parts, builder.extract_value(value, part),
                                           _I32(2 * k + part))
    builder.store(parts, ptr, align=_VECTOR_BYTES)
    return context.get_dummy_value()


def _stv2_c64_typer(typingctx, p, j, a, b):
    if _is_int(p) and _is_int(j) and _is_value(a) and _is_value(b):
        return signature(types.void, p, j, a, b), _stv2_c64_codegen
    return None


# A complex element whose address is only a multiple of its part's size (a complex128 view of
# float64 data starting at an odd element, imported zero-copy): the whole-element access above,
# a {double, double} aligned to 16 (ld.global.v2.f64), faults with a misaligned address there
# and leaves the CUDA context unusable. The planner names these for such operands
# (compiler/plan.Operand.access): each part its own access, aligned to the part's size.
def _part_ptrs(context, builder, sig, args, s: Scalar) -> list:
    ptr = _element_ptr(context, builder, sig, args, s.llvm)
    first = builder.bitcast(ptr, s.llvm.elements[0].as_pointer(1))
    return [first, builder.gep(first, [_I32(1)], inbounds=True)]


def _make_load_split(s: Scalar):
    def codegen(context, builder, sig, args):
        value = ir.Constant(s.llvm, ir.Undefined)
        for k, ptr in enumerate(_part_ptrs(context, builder, sig, args, s)):
            value = builder.insert_value(value, builder.load(ptr, align=s.itemsize // 2), k)
        return value

    def typer(typingctx, p, i):
        if _is_int(p) and _is_int(i):
            return signature(s.compute, p, i), codegen
        return None

    return _named(f"ld_{s.code}_split", typer)


def _make_store_split(s: Scalar):
    def codegen(context, builder, sig, args):
        value = _to_storage(context, builder, args[2], sig.args[2], s)
        for k, ptr in enumerate(_part_ptrs(context, builder, sig, args, s)):
            builder.store(builder.extract_value(value, k), ptr, align=s.itemsize // 2)
        return context.get_dummy_value()

    def typer(typingctx, p, i, v):
        if _is_int(p) and _is_int(i) and _is_value(v):
            return signature(types.void, p, i, v), codegen
        return None

    return _named(f"st_{s.code}_split", typer)


def _pf_l2_codegen(context, builder, sig, args):
    # prefetch.global.L2: the 16 bytes at 16-byte index args[1] of args[0] asked into L2; no
    # register waits for them (codegen.flat: the next turn's vectors of a draw's loop)
    ptr = _element_ptr(context, builder, sig, args, ir.VectorType(_I32, 4))
    asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [ptr.type]), "prefetch.global.L2 [$0];",
                       "l", side_effect=True)
    builder.call(asm, [ptr])
    return context.get_dummy_value()


def _pf_l2_typer(typingctx, p, j):
    if _is_int(p) and _is_int(j):
        return signature(types.void, p, j), _pf_l2_codegen
    return None


# --- the namespace ------------------------------------------------------------------------------


def _build_typers() -> dict[str, Callable]:
    made = [make(s) for s in SCALARS.values() for make in (_make_load, _make_store, _make_cast)]
    made += [make(SCALARS[code]) for code in VECTOR4_CODES
             for make in (_make_load_vector, _make_store_vector)]
    made += [make(SCALARS[code]) for code in SPLIT_CODES
             for make in (_make_load_split, _make_store_split)]
    made += [_named("ldv8_f16", _ldv8_f16_typer), _named("stv8_f16", _stv8_f16_typer),
             _named("ldv8_bf16", bf16vectors.load_typer),
             _named("stv8_bf16", bf16vectors.store_typer),
             _named("ldv2_c64", _ldv2_c64_typer), _named("stv2_c64", _stv2_c64_typer),
             _named("fa_philox", randombits.philox_typer), _named("fa_div", division.div_typer),
             _named("fa_divrcp_f32", division.divrcp_typer),
             _named("fa_divby_f32", division.divby_typer),
             _named("fa_rowdivby_f32", division.rowdivby_typer),
             _named("fa_divrcph_f32", division.divrcph_typer),
             _named("fa_divbyh_f32", division.divbyh_typer),
             _named("fa_floor_log2", randombits.floor_log2_typer),
             _named("fa_bm_ratio_f32", randombits.bm_ratio_typer),
             _named("fa_bm_sqrt_f32", randombits.bm_sqrt_typer),
             _named("fa_bm_turn_f32", randombits.bm_turn_typer),
             _named("fa_count_i32", atomics.count_typer),
             _named("fa_flag_index", atomics.flag_index_typer), _named("pf_l2", _pf_l2_typer)]
    return {typer.__name__: typer for typer in made}


# The typing functions of every intrinsic, by name. Wrapped for the CUDA target below; the tests
# also wrap them for numba's CPU target, where the same LLVM IR runs and its values can be checked
# against NumPy without a GPU.
TYPERS: dict[str, Callable] = _build_typers()


try:  # numba-cuda's private names: where they have moved, intrinsics are numba's plain ones
    from numba.cuda.extending import _Intrinsic
    from numba.cuda.typing.templates import infer, infer_global, make_intrinsic_template
except ImportError:  # pragma: no cover - another numba-cuda
    _Intrinsic = None


if _Intrinsic is not None:
    class _CachedIntrinsic(_Intrinsic):
        """An intrinsic whose typing answers a signature it has typed before from its cache.

        numba-cuda's intrinsic template refreshes the CUDA target's registries (~0.15 ms) on
        *every* call it types, before it looks in its own per-signature cache: the refresh finds
        the registry in which to install the lowering of a *new* signature. Generated kernels
        call intrinsics on most lines, so that is a few ms a kernel. This template looks in the
        same cache first and leaves a miss to numba-cuda's typing, refresh included.
        """

        def _register(self):
            base = make_intrinsic_template(self, self._defn, self._name)
            if not hasattr(base, "_impl_cache"):  # pragma: no cover - another numba-cuda
                super()._register()
                return

            def generic(template, args, kws):
                # the key numba-cuda's _IntrinsicTemplate.generic files each signature under
                hit = template._impl_cache.get((template.context, args, tuple(kws.items())))
                return hit if hit is not None else base.generic(template, args, kws)

            cached = type(base)(base.__name__, (base,), {"generic": generic})
            infer(cached)
            infer_global(self, types.Function(cached))


def _cached_intrinsic(typer: Callable):
    if _Intrinsic is None:  # pragma: no cover
        return intrinsic(typer)
    handle = _CachedIntrinsic(typer.__name__, typer, target="cuda")
    handle._register()
    return handle


def _build_base() -> dict[str, object]:
    ns: dict[str, object] = {"cuda": cuda, "math": math, "cmath": cmath}
    ns.update((name, _cached_intrinsic(typer)) for name, typer in TYPERS.items())
    # libdevice stubs are typed device functions already: binding them under our names costs
    # nothing at run time (floorf/floor, …, fmodf/fmod).
    ns["fa_fma_f64"] = libdevice.fma    # fma.rn.f64: the exact multiply-adds fa.random needs
    ns["fa_fma_f32"] = libdevice.fmaf   # fma.rn.f32
    ns["fa_div_f32"] = ns["fa_div_f64"] = ns["fa_div"]
    # a float's bits as the signed integer of its width and back (devicelib's nextafter)
    ns["fa_f32_bits"], ns["fa_bits_f32"] = libdevice.float_as_int, libdevice.int_as_float
    ns["fa_f64_bits"] = libdevice.double_as_longlong
    ns["fa_bits_f64"] = libdevice.longlong_as_double
    ns["fa_warp_lanes"] = 32   # block trees finish within one warp (targets/cuda/reduce.py)
    for name in MATH_FUNCTIONS:
        ns[f"fa_{name}_f32"] = getattr(libdevice, name + "f")
        ns[f"fa_{name}_f64"] = getattr(libdevice, name)
    # Element types of shared-memory tiles (codegen's tiled walk): compute types, bool as a byte.
    for code, scalar in SCALARS.items():
        ns[f"sh_{code}"] = types.uint8 if code == "b1" else scalar.compute
    return ns


_BASE = _build_base()
_NAMESPACES: dict[int, tuple[dict, dict]] = {}  # id(helpers) → (helpers kept alive, namespace)


def device_namespace(helpers: dict[str, pytypes.FunctionType]) -> dict[str, object]:
    """The globals generated kernels run in: intrinsics, math helpers and compiled ``helpers``.

    Each helper is rebuilt with this namespace as its globals (so it can call ``cv_f32``, other
    intrinsics and other helpers by name) and becomes a device function inlined where it is
    called. The result is cached per ``helpers`` dict (by identity); callers exec kernel source
    in a *copy*.

    >>> ns = device_namespace({})
    >>> sorted(k for k in ns if k.startswith("ld_"))[:3]
    ['ld_b1', 'ld_bf16', 'ld_c128']
    """
    hit = _NAMESPACES.get(id(helpers))
    if hit is not None and hit[0] is helpers:
        return hit[1]
    ns = dict(_BASE)

    def device(fn):  # inline="always" (numba IR inlining, before typing), not forceinline: a
        # device function called rather than inlined is compiled by its dispatcher for the
        # *current device's* compute capability, which needs a GPU and can differ from the arch
        return cuda.jit(device=True, inline="always")(
            pytypes.FunctionType(fn.__code__, ns, fn.__name__, fn.__defaults__, fn.__closure__))

    for name, fn in helpers.items():
        if name not in TYPERS:      # an intrinsic computes it here (fa_philox)
            ns[name] = device(fn)
    bind_minifloats(ns, types.float32, device)   # ld_bf16 …: loads, stores, roundings, always
    _NAMESPACES[id(helpers)] = (helpers, ns)
    return ns
