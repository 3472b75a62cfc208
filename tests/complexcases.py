"""complex64 and complex128 against NumPy, shared by the cpu, sim and gpu tiers.

Each check draws fresh random complex operands (fixed seeds, named in every failure message),
builds every complex op of the table on views of them (contiguous, transposed, negative steps,
broadcast, 0-d, rank 3), computes all of one shape in ONE evaluation, and compares with NumPy:
dtype always; exactly where NumPy's result is one exact operation per part (``+ -``, negation,
conjugate, the parts, predicates, comparisons, selections); otherwise within a relative
tolerance of the result's modulus (NumPy's complex ``*`` and ``/``, ``abs`` by hypot and the
transcendental functions are other algorithms than numba's and libdevice's). An op the table has
no complex template for must be refused with an error naming the op and the dtype.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.errors import UnsupportedOperationError
from fusedarrays.ir import ops

COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]
UNARY = ["negative", "positive", "absolute", "sign", "reciprocal", "square", "sqrt", "exp", "log",
         "log2", "log10", "log1p", "expm1", "rint", "sin", "cos", "tan", "sinh", "cosh", "tanh",
         "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "conjugate", "real",
         "imag", "isnan", "isinf", "isfinite", "logical_not", "copy"]
BINARY = ["add", "subtract", "multiply", "true_divide", "power", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor"]
EXACT = {"add", "subtract", "negative", "positive", "conjugate", "real", "imag", "isnan", "isinf",
         "isfinite", "logical_not", "copy", "equal", "not_equal", "less", "less_equal", "greater",
         "greater_equal", "logical_and", "logical_or", "logical_xor", "where"}
# relative to the modulus of NumPy's result: a few ulp of the parts' dtype, more for power
# (exp(b log a) amplifies log's error by |b log a|) and the functions built from several calls
RTOL = {np.dtype(np.complex64): 2e-5, np.dtype(np.complex128): 1e-12}
LOOSE = {"power": 50, "tan": 4, "tanh": 4, "sin": 4, "cos": 4, "sinh": 4, "cosh": 4, "sign": 4}
# NumPy's complex logarithms take log |w| in the parts' dtype, so near |w| = 1 (log1p: z near 0)
# they are accurate only absolutely: an ulp of |1 + z| from a device logf that differs from the
# C library's by one is a large part of a small result. Their error counts against max(|want|, 1).
ABSOLUTE_NEAR_ZERO = {"log", "log2", "log10", "log1p"}

# Operand k of a case, as a view of a fresh base (the same view of NumPy's copy and of the device
# copy). "big" shapes reach the flat walk and rows/tiles; the small ones nd.
LAYOUTS = {
    "contiguous": lambda b, k: b,
    "transposed": lambda b, k: b.T if k % 2 == 0 else b,
    "negative steps": lambda b, k: b[::-1, ::-2] if k % 2 == 0 else b[:, : b.shape[1] // 2],
    "broadcast": lambda b, k: b[:1] if k % 2 == 0 else b,
    "flat reversed": lambda b, k: b.reshape(-1)[::-1],
    "zero_d": lambda b, k: b[1, 2],
}


def random_complex(rng, shape, dtype) -> np.ndarray:
    """Random complex values of moderate modulus (every op defined and finite), never zeros."""
    re = rng.standard_normal(shape) * 2
    im = rng.standard_normal(shape) * 2
    return (re + 1j * im).astype(dtype)


def _base_shape(layout: str, shape: tuple, k: int) -> tuple:
    if layout == "negative steps":
        return (shape[0], 2 * shape[1])
    return shape[::-1] if layout == "transposed" and k % 2 == 0 else shape


def _numpy(name: str, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(ops.OPS[name].ref(*args))


def assert_close(name: str, got, want, label: str, dtype: np.dtype) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{label}: shape {got.shape} != NumPy's {want.shape}"
    if name in EXACT or want.dtype.kind == "b":
        same = (got == want) | (_isnan(got) & _isnan(want))
        assert same.all(), f"{label}: got {got[~same][:4]} where NumPy has {want[~same][:4]}"
        return
    rtol = RTOL[dtype] * LOOSE.get(name, 1)
    floor = 1.0 if name in ABSOLUTE_NEAR_ZERO else 1e-30
    err = np.abs(got.astype(np.complex128) - want) / np.maximum(np.abs(want), floor)
    bad = ~(err <= rtol)
    assert not bad.any(), (f"{label}: relative error {err[bad].max():.3g} > {rtol:.3g}: got "
                           f"{got[bad][:4]} where NumPy has {want[bad][:4]}")


def _isnan(x):
    return np.isnan(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)


def check_ops(dtype, layout: str, shape: tuple, to_device=fa.asarray,
              names=None) -> tuple[int, set]:
    """Every complex op on ``dtype`` operands in ``layout`` over ``shape`` (those of ``names``
    where given, and ``where``), one evaluation per result shape; returns (ops checked, the
    (schedule, vector width) pairs reached)."""
    dtype = np.dtype(dtype)
    seed = zlib.crc32(f"complex {dtype} {layout} {shape}".encode())
    rng = np.random.default_rng(seed)
    label = f"{dtype} {layout} {shape} (seed {seed})"
    view = LAYOUTS[layout]
    host, device = [], []
    for k in range(3):
        base = random_complex(rng, _base_shape(layout, shape, k), dtype)
        host.append(view(base, k))
        device.append(view(to_device(base), k))
    cond = rng.random(np.broadcast_shapes(host[0].shape, host[1].shape)) < 0.5
    cases = [(name, [0]) for name in UNARY] + [(name, [0, 1]) for name in BINARY]
    if names is not None:
        cases = [case for case in cases if case[0] in names]
    lazy, want = [], []
    for name, which in cases:
        lazy.append(getattr(fa, name)(*(device[k] for k in which)))
        want.append((name, _numpy(name, [host[k] for k in which])))
    lazy.append(fa.where(fa.asarray(cond), device[0], device[1]))
    want.append(("where", np.where(cond, host[0], host[1])))
    reached = set()
    unary = sum(which == [0] for _, which in cases)
    for expr in (lazy[0], lazy[unary]):    # a unary op, and one over operands 0 and 1
        plan = fa.explain(expr).plan
        reached.add((plan.schedule, plan.vector_width))
    fa.compute(*lazy)
    for result, (name, expected) in zip(lazy, want):
        assert_close(name, result.get(), expected, f"{name} on {label}", dtype)
    return len(want), reached


def check_mixed_promotion(to_device=fa.asarray) -> None:
    """Real arrays, complex arrays and Python complex scalars together: NumPy's (NEP 50) result
    dtypes and values."""
    seed = 20241114
    rng = np.random.default_rng(seed)
    reals = {dt: (rng.standard_normal(50) * 3).astype(dt)
             for dt in ("float16", "float32", "float64")}
    reals.update({dt: rng.integers(-9, 9, 50).astype(dt) for dt in ("int8", "int32", "int64")})
    reals["bool"] = rng.random(50) < 0.5
    cx = {dt: random_complex(rng, 50, dt) for dt in COMPLEX}
    cases = []
    for rname, r in reals.items():
        for c in cx.values():
            cases.append((f"{rname} + {c.dtype}", lambda a, b: a + b, (r, c)))
            cases.append((f"{c.dtype} * {rname}", lambda a, b: a * b, (c, r)))
        if rname != "bool":
            cases.append((f"{rname} + 1.5-2j", lambda a: a + (1.5 - 2j), (r,)))
            cases.append((f"2j * {rname}", lambda a: 2j * a, (r,)))
    for c in cx.values():
        cases.append((f"{c.dtype} - 0.25j", lambda a: a - 0.25j, (c,)))
        cases.append((f"{c.dtype} / 3", lambda a: a / 3, (c,)))
        cases.append((f"{c.dtype} == 1j", lambda a: a == 1j, (c,)))
        cases.append((f"1j ** {c.dtype}", lambda a: fa.power(1j, a) if isinstance(a, fa.ndarray)
                      else np.power(1j, a), (c,)))
    lazy = [f(*(to_device(a) for a in args)) for _, f, args in cases]
    fa.compute(*lazy)
    for (label, f, args), result in zip(cases, lazy):
        with np.errstate(all="ignore"):
            want = np.asarray(f(*args))
        dt = want.dtype if want.dtype.kind == "c" else np.dtype(np.complex128)
        assert_close("power" if "**" in label else "multiply", result.get(), want,
                     f"{label} (seed {seed})", np.dtype(np.complex64) if dt.itemsize <= 8 else dt)


# Special values in the real and imaginary parts, for the ops whose NumPy result on them each
# backend reproduces part by part (C99's Annex G for exp, log, sqrt and the trigonometric and
# hyperbolic functions, NumPy's Smith division, reciprocal and square, IEEE rules for the
# rest), and a real part past the overflow of e^x (800), where sinh, cosh and exp of a small
# angle are finite in one part. Not power: numba's and libdevice's complex pow give NaN where
# NumPy's gives 0 or inf for infinite exponents.
SPECIAL_PARTS = [0.0, -0.0, 1.5, -2.0, 800.0, np.inf, -np.inf, np.nan]
SPECIAL_OPS = ["add", "subtract", "multiply", "true_divide", "negative", "conjugate", "real",
               "imag", "absolute", "sign", "reciprocal", "square", "exp", "log", "log2", "log10",
               "rint", "sqrt", "sin",
               "cos", "tan", "sinh", "cosh", "tanh", "isnan", "isinf", "isfinite", "equal",
               "not_equal", "less", "greater_equal", "logical_not"]


def special_values(dtype) -> np.ndarray:
    """Every pair of :data:`SPECIAL_PARTS` as (real, imaginary) parts."""
    re, im = np.meshgrid(SPECIAL_PARTS, SPECIAL_PARTS)
    out = np.empty(re.size, dtype)
    out.real, out.imag = re.ravel(), im.ravel()   # no arithmetic: inf * 1j has a NaN real part
    return out


def _parts(x: np.ndarray) -> list:
    return [x.real, x.imag] if x.dtype.kind == "c" else [x]


def check_special_values(dtype, to_device=fa.asarray) -> None:
    """Each part of each result equal to NumPy's, NaN where NumPy's is NaN, or (finite) within
    the tolerance of the result's modulus."""
    dtype = np.dtype(dtype)
    a = special_values(dtype)
    b = a[::-1].copy()
    lazy, want = [], []
    for name in SPECIAL_OPS:
        args = (a, b) if ops.OPS[name].nin == 2 else (a,)
        lazy.append(getattr(fa, name)(*(to_device(x) for x in args)))
        want.append((name, _numpy(name, args)))
    fa.compute(*lazy)
    for result, (name, expected) in zip(lazy, want):
        got = result.get()
        label = f"{name} on special values of {dtype}"
        assert got.dtype == expected.dtype, f"{label}: dtype {got.dtype} != {expected.dtype}"
        tol = 0 if name in EXACT else RTOL[dtype] * LOOSE.get(name, 1)
        scale = np.abs(expected)
        for g, w in zip(_parts(got), _parts(expected)):
            ok = (g == w) | (_isnan(g) & _isnan(w))
            if tol:
                with np.errstate(invalid="ignore"):
                    ok |= np.isfinite(w) & (np.abs(g - w) <= tol * scale)
            assert ok.all(), (f"{label}: got {got[~ok][:4]} for {a[~ok][:4]} where NumPy has "
                              f"{expected[~ok][:4]}")


def check_refusals(dtype, to_device=fa.asarray) -> int:
    """Every row NumPy defines on ``dtype`` that fusedarrays has no complex template for is
    refused, naming the op and the dtype; returns how many."""
    dtype = np.dtype(dtype)
    x = random_complex(np.random.default_rng(5), 8, dtype)
    supported = set(UNARY) | set(BINARY) | {"where"}
    refused = 0
    for row in ops.OPS.values():
        if row.module or row.name in supported or row.rule in ("where", "part"):
            continue
        args = [x] * row.nin
        try:
            _numpy(row.name, args)
        except TypeError:
            continue     # NumPy has no complex loop either
        with pytest.raises(UnsupportedOperationError) as info:
            getattr(fa, row.name)(*(to_device(a) for a in args))
        assert row.name in str(info.value) and str(dtype) in str(info.value), info.value
        refused += 1
    return refused


def check_reductions(dtype, shape: tuple, to_device=fa.asarray) -> None:
    """sum, prod, mean, var and std of complex values over every axis, transposed too."""
    dtype = np.dtype(dtype)
    seed = zlib.crc32(f"complex reductions {dtype} {shape}".encode())
    rng = np.random.default_rng(seed)
    base = random_complex(rng, shape, dtype)
    x = to_device(base)
    for name in ("sum", "mean", "var", "std", "prod"):
        for axis in (None, 0, 1):
            for h, d, how in ((base, x, ""), (base.T, x.T, " transposed")):
                if name == "prod":   # a product of many values leaves the range: 4 × 6
                    h, d = h[:4, :6], d[:4, :6]
                want = getattr(np, name)(h, axis=axis)
                got = getattr(fa, name)(d, axis=axis).get()
                # a sum's rounding is relative to the sum of the moduli, not to its result
                scale = (np.sum(np.abs(h), axis=axis) if name in ("sum", "mean") else
                         np.abs(want))
                if name == "mean":
                    scale = scale / (h.size if axis is None else h.shape[axis])
                label = f"{name}(axis={axis}){how} of {dtype} {shape} (seed {seed})"
                assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != {want.dtype}"
                err = np.abs(got - want) / scale
                assert np.all(err <= RTOL[dtype] * 4), f"{label}: relative error {err.max()}"
    with pytest.raises(UnsupportedOperationError, match=f"max of {dtype}"):
        fa.max(x)


# -- 16-byte accesses of complex operands --------------------------------------------------------
# Each case: operands as (dtype, base shape, view of the base), the expression, the op whose
# tolerance it takes (EXACT ones compare bit for bit), and the (schedule, vector width) its
# kernel must take. A complex64 access holds 2 elements, a complex128 access 1, a float32 one 4
# (ir/layout.VECTOR_LANES): a group is as many elements as the widest access, the others take
# several accesses. Lengths leave a tail; the offset, odd-row-stride and reversed views are the
# fallbacks (an operand read per lane, or the whole kernel element by element).
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def _whole(b):
    return b


VECTOR_CASES = {
    "c64 a*b+c": ([(C64, (1030,), _whole)] * 3, lambda a, b, c: a * b + c, "multiply",
                  ("flat", 2)),
    "c64 a-conj(b)": ([(C64, (1030,), _whole)] * 2, lambda a, b: a - np.conj(b), "add",
                      ("flat", 2)),
    "c128 a*b+c": ([(C128, (1030,), _whole)] * 3, lambda a, b, c: a * b + c, "multiply",
                   ("flat", 1)),
    "c64*f32+c64": ([(C64, (1030,), _whole), (F32, (1030,), _whole), (C64, (1030,), _whole)],
                    lambda a, b, c: a * b + c, "multiply", ("flat", 4)),
    "c64+c128": ([(C64, (1030,), _whole), (C128, (1030,), _whole)], lambda a, b: a + b, "add",
                 ("flat", 2)),
    "f32*c128": ([(F32, (1030,), _whole), (C128, (1030,), _whole)], lambda a, b: a * b,
                 "multiply", ("flat", 4)),
    "f16*c64": ([(F16, (1030,), _whole), (C64, (1030,), _whole)], lambda a, b: a * b,
                "multiply", ("flat", 8)),
    # float16 beside complex128 would take 8 accesses of the complex128 operand: none
    "f16*c128": ([(F16, (1030,), _whole), (C128, (1030,), _whole)], lambda a, b: a * b,
                 "multiply", ("flat", 1)),
    # reversed operands are read per lane; the others keep their 16-byte accesses
    "c64 reversed": ([(C64, (1030,), lambda b: b[::-1]), (C64, (1030,), _whole)],
                     lambda a, b: a * b - a, "multiply", ("flat", 2)),
    "c128 reversed": ([(C128, (1030,), lambda b: b[::-1]), (C64, (1030,), _whole)],
                      lambda a, b: a + b, "add", ("flat", 2)),
    # one element on: a complex64 operand is 8 bytes off 16 (element by element); a complex128
    # one is still aligned
    "c64 offset": ([(C64, (1031,), lambda b: b[1:]), (C64, (1030,), _whole)],
                   lambda a, b: a * b, "multiply", ("flat", 1)),
    "c128 offset": ([(C128, (1031,), lambda b: b[1:]), (C64, (1030,), _whole)],
                    lambda a, b: a * b, "multiply", ("flat", 2)),
    # rows of 136 of a wider base: 140 complex64 apart keeps each row's start aligned, 141 not
    "c64 rows": ([(C64, (8, 140), lambda b: b[:, :136]), (C64, (136,), _whole),
                  (F32, (8, 136), _whole)],
                 lambda a, b, c: (a + b[None, :]) * c, "multiply", ("rows", 4)),
    "c64 odd rows": ([(C64, (8, 141), lambda b: b[:, :136]), (C64, (136,), _whole)],
                     lambda a, b: a - b[None, :], "add", ("rows", 1)),
    "c128 rows": ([(C128, (8, 141), lambda b: b[:, 3:139]), (C64, (8, 140),
                                                             lambda b: b[:, 2:138])],
                  lambda a, b: a * b, "multiply", ("rows", 2)),
    # a transposed float32 operand through tiles, complex64 beside it in 2 accesses per group
    "c64 beside tiles": ([(F32, (136, 68), lambda b: b.T[:65]), (C64, (65, 136), _whole)],
                         lambda a, b: a * b + b, "multiply", ("tiled", 4)),
}


def check_vector_case(name: str, to_device=fa.asarray) -> None:
    """One of :data:`VECTOR_CASES` against NumPy, and the kernel's schedule and width."""
    specs, expr, op, walk = VECTOR_CASES[name]
    seed = zlib.crc32(f"complex vectors {name}".encode())
    rng = np.random.default_rng(seed)
    host, device = [], []
    for dtype, shape, view in specs:
        base = (random_complex(rng, shape, dtype) if dtype.kind == "c" else
                (rng.standard_normal(shape) * 2).astype(dtype))
        host.append(view(base))
        device.append(view(to_device(base)))
    lazy = expr(*device)
    plan = fa.explain(lazy).plan
    label = f"{name} (seed {seed})"
    assert (plan.schedule, plan.vector_width) == walk, f"{label}: {plan.schedule} " \
        f"{plan.vector_width}, want {walk}"
    with np.errstate(all="ignore"):
        want = np.asarray(expr(*host))
    assert_close(op, lazy.get(), want, label, want.dtype)


def check_vector_writes(to_device=fa.asarray) -> None:
    """A complex64 expression written into slices of a complex64 array: two elements on (16
    bytes, aligned: 16-byte stores) and one on (element by element); the rest untouched."""
    seed = 20250112
    rng = np.random.default_rng(seed)
    a, b = (random_complex(rng, 1030, C64) for _ in range(2))
    for start in (2, 1):
        base = random_complex(rng, 1040, C64)
        want = base.copy()
        want[start:start + 1030] = a * b + a
        target = to_device(base)
        x, y = to_device(a), to_device(b)
        target[start:start + 1030] = x * y + x
        got = target.get()
        label = f"write at {start} (seed {seed})"
        assert (got[:start] == want[:start]).all() and (got[start + 1030:] ==
                                                        want[start + 1030:]).all(), label
        assert_close("multiply", got, want, label, C64)


# view of a misaligned base → (its shape, the schedule it reaches with the aligned output)
MISALIGNED_WALKS = {
    "flat": ((300,), lambda z: z[::-1], "flat"),
    "rows": ((8, 136), lambda z: z[:, ::-1], "rows"),
    "tiled": ((136, 65), lambda z: z.T, "tiled"),
    "nd": ((3, 4, 5), lambda z: z[::-1, 1:, ::-2], "nd"),
}


def check_misaligned_walk(dtype, walk: str, seed: int) -> None:
    """A misaligned complex array (:func:`misaligned`) read through ``walk``'s view into an
    expression, and written through it, against NumPy; the plan takes its elements by parts."""
    shape, view, schedule = MISALIGNED_WALKS[walk]
    rng = np.random.default_rng(seed)
    label = f"{np.dtype(dtype)} {walk} (seed {seed})"
    host = random_complex(rng, shape, dtype)
    z = misaligned(host)
    want = view(host) * 2 + 1
    got = view(z) * 2 + 1
    plan = fa.explain(got).plan
    if not (walk == "tiled" and dtype == np.complex128):  # its tiles would pass 48 KiB: rows
        assert plan.schedule == schedule, (label, plan.schedule)
    assert any(o.access.endswith("_split") for o in plan.operands), label
    np.testing.assert_array_equal(got.get(), want, err_msg=f"read {label}")
    # written: the misaligned array's own elements, through the same view
    out_host = random_complex(rng, shape, dtype)
    out = misaligned(out_host)
    view(out)[...] = view(z) * 2 + 1
    view(out_host)[...] = want
    np.testing.assert_array_equal(out.get(), out_host, err_msg=f"written {label}")


def misaligned(host: np.ndarray) -> fa.ndarray:
    """``host`` (complex, C-contiguous) as a fa array of the host backends (cpu, sim) whose data
    sits half an element off a multiple of its itemsize: a complex128 array at 8 bytes past a
    16-byte boundary, a complex64 one at 4 past 8, as a CuPy or torch complex view of float data
    starting at an odd element arrives through ``fa.asarray`` on cuda (each part aligned, the
    element not). Built the way an import is (a Buffer over memory someone else owns)."""
    from fusedarrays.ir import graph
    from fusedarrays.runtime.backend import Buffer, get_backend

    item = host.dtype.itemsize
    raw = np.empty(host.nbytes + 2 * item, np.uint8)
    start = (-raw.ctypes.data) % item + item // 2       # an odd multiple of half the itemsize
    storage = raw[start:start + host.nbytes]
    storage.view(host.dtype)[...] = host.reshape(-1)
    buffer = Buffer(storage, host.nbytes, get_backend())
    assert buffer.align == item // 2, (buffer.align, item)
    return fa.ndarray(graph.leaf(buffer, np.dtype(host.dtype), host.shape,
                                 tuple(s // item for s in host.strides), 0))
