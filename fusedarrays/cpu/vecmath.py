"""float32 transcendental functions that LLVM vectorises: the cpu kernels' ``math`` module.

Where it sits: the cpu backend binds :func:`math_module` as the name ``math`` of its kernel
namespace (``cpu/backend.py``), so the op table's ``math.exp({0})`` (``ir/ops.py``) and
devicelib's helpers call these on the cpu target alone; cuda keeps libdevice.

Why: numba lowers ``math.exp`` of a float32 to ``llvm.exp.f32``. LLVM's loop vectoriser turns
a kernel's loop into 16-lane AVX-512 code, but with no vector math library (numba 0.68's
llvmlite is built without SVML, and its LLVM has no ``-vector-library`` option to name glibc's
libmvec) the code generator splits each ``llvm.exp.v16f32`` into 16 scalar ``expf`` calls: a
10-op expression with ``exp`` and ``sin`` ran at 0.25-0.4 of NumPy's speed, whose float32 loops
use SIMD routines. These are branch-free arithmetic (selects, integer bit operations, ``rint``),
which LLVM inlines into the loop and vectorises with the rest of it.

Not sin and cos (yet): their argument reduction by pi/2 is exact in float64 only below about
2**20 * pi/2, and a float32 argument can reach 3.4e38. A branch to libm for the large ones
does not survive: LLVM turns a call of ``sinf`` it may not hoist back into the speculatable
``llvm.sin``, computes it in every lane, and the loop runs at libm's speed; a call it does not
know stops the vectoriser. Vectorising them needs a Payne-Hanek reduction in the loop (2/pi's
bits chosen by the exponent, a gather per element).

Accuracy: each float32 function evaluates in float64 (a reduced argument and a polynomial whose
truncation error is below 1e-9 relative) and rounds once to float32, so results are within
about 0.5 ulp of the exact value; NumPy's own SIMD float32 loops are within 1-4 ulp. Every
special value (NaN, ±inf, ±0, overflow to inf, underflow to 0 and subnormals, log of negatives)
is NumPy's. float64 (and every other) arguments go to numba's ``math`` functions as before.
"""

from __future__ import annotations

import math
import types

import numpy as np

LN2 = 0.6931471805599453
INV_LN2 = 1.4426950408889634
SQRT2 = 1.4142135623730951
fma = None   # a * b + c: llvm.fmuladd (_fmuladd), bound where math_module compiles these


def _exp64(d):
    """e ** d for float64 ``d`` in [-160, 160]: 2**k * e**r, |r| <= ln2 / 2, e**r by its
    Taylor polynomial to r**8 / 8! (truncation below 2e-10 relative)."""
    k = np.rint(d * INV_LN2)
    r = fma(k, -LN2, d)
    p = fma(fma(fma(fma(fma(fma(fma(fma(1.0 / 40320, r, 1.0 / 5040), r, 1.0 / 720), r,
                                1.0 / 120), r, 1.0 / 24), r, 1.0 / 6), r, 0.5), r, 1.0), r, 1.0)
    scale = np.int64((np.int64(k) + 1023) << 52).view(np.float64)
    return p * scale


def exp_f32(x):
    d = np.float64(x)
    d = d if d < 160.0 else 160.0   # overflows float32 all the same; NaN restored below
    d = d if d > -160.0 else -160.0
    y = np.float32(_exp64(d))
    return y if x == x else x


def log_f32(x):
    d = np.float64(x)   # a float32 subnormal is a normal float64
    bits = np.float64(d).view(np.int64)
    e = (bits >> 52) - 1023
    m = np.int64((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000).view(np.float64)
    big = m > SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    f = (m - 1.0) / (m + 1.0)   # |f| <= 0.1716: log m = 2 atanh f
    s = f * f
    odd = fma(fma(fma(fma(fma(1.0 / 13, s, 1.0 / 11), s, 1.0 / 9), s, 1.0 / 7), s, 1.0 / 5),
              s, 1.0 / 3)
    y = np.float32(fma(np.float64(e), LN2, fma(2.0 * f * s, odd, 2.0 * f)))
    if not x > 0:   # 0: -inf; negative or NaN: NaN
        y = np.float32(-np.inf) if x == 0 else np.float32(np.nan)
    return y if x != np.inf else x


def tanh_f32(x):
    a = abs(np.float64(x))
    a = a if a < 20.0 else 20.0   # tanh is 1 in float32 from 9.01; NaN restored below
    t = 1.0 - 2.0 / (_exp64(2.0 * a) + 1.0)   # absolute error ~1e-16: fine from 1e-4 up
    small = a * (1.0 - a * a * (1.0 / 3))     # below 1e-4, to a**5 (2 a**5 / 15 < 1e-20)
    t = small if a < 1e-4 else t
    y = np.float32(t if x >= 0 else -t)
    return y if x == x else x


FLOAT32 = {"exp": exp_f32, "log": log_f32, "tanh": tanh_f32}


def math_module(jit) -> types.ModuleType:
    """A module standing in for ``math`` in the kernel namespace: ``math``'s own attributes,
    with the functions of :data:`FLOAT32` replaced by dispatchers that take the float32 version
    for a float32 argument and ``math``'s for any other (``jit(fn, names)`` compiles ``fn``
    with ``names`` as its globals)."""
    from numba import types as nbtypes
    from numba.extending import overload

    module = types.ModuleType("fusedarrays_cpu_math")
    module.__dict__.update({k: v for k, v in vars(math).items() if not k.startswith("__")})
    names = {"np": np, "math": math, "fma": _fmuladd(), **{
        k: v for k, v in globals().items() if k.isupper() and isinstance(v, float)}}
    names["_exp64"] = jit(_exp64, names)
    for name, fn in FLOAT32.items():
        stub = _stub(name)
        overload(stub)(_chooser(nbtypes.float32, jit(fn, names), getattr(math, name)))
        setattr(module, name, stub)
    return module


def _chooser(float32, fast, libm):
    def choose(x):
        if x == float32:
            return lambda x: fast(x)
        return lambda x: libm(x)
    return choose


def _fmuladd():
    """``fma(a, b, c)``: ``a * b + c`` in float64 as LLVM's ``llvm.fmuladd``, one fused
    multiply-add where the CPU has one (halving a polynomial's instructions, and rounding
    once), a multiply and an add where it has not."""
    from llvmlite import ir
    from numba import types as nbtypes
    from numba.extending import intrinsic

    def fma(typingctx, a, b, c):
        def codegen(context, builder, sig, args):
            values = [context.cast(builder, v, t, nbtypes.float64)
                      for v, t in zip(args, sig.args)]
            f64 = ir.DoubleType()
            fn = builder.module.declare_intrinsic("llvm.fmuladd", [f64],
                                                  ir.FunctionType(f64, [f64] * 3))
            return builder.call(fn, values)
        return nbtypes.float64(a, b, c), codegen

    return intrinsic(fma)


def _stub(name: str):
    def stub(x):
        raise NotImplementedError(f"fusedarrays' cpu {name} runs inside kernels only")
    stub.__name__ = f"fa_cpu_{name}"
    return stub
