"""One helper for every op × dtype × layout against NumPy, shared by the cpu, sim and gpu tiers.

Each call draws fresh random operands (one per position and kind of draw, read by every op that
draws alike: see :func:`operands`), computes every applicable op of the table in ONE fused
evaluation (``fa.compute`` of all results: one kernel launch), and compares each result with
NumPy's — dtype always, values exactly for integer, bool and exactly-rounded float ops, within a few
ulp for transcendental ones. Where NumPy refuses an op on a dtype, fusedarrays must refuse it too
with a ``TypeError``.
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np

import fusedarrays as fa
from fusedarrays.ir import ops

DTYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64")]
# Float ops whose NumPy result is exactly rounded (or exact): compared bit for bit.
EXACT = {"add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "sqrt",
         "negative", "positive", "absolute", "sign", "reciprocal", "square", "floor", "ceil",
         "trunc", "rint", "maximum", "minimum", "fmax", "fmin", "clip", "where", "copysign",
         "isnan", "isinf", "isfinite", "signbit", "logical_and", "logical_or", "logical_xor",
         "logical_not", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
         "copy"}
MAX_ULP = 4
# Ops whose result cancels (logaddexp(a, b) = a + log1p(exp(b - a)) near 0): each backend's own
# exp and log1p (NumPy's SIMD loops in the simulator, libdevice on the GPU, libm on cpu as in
# NumPy's logaddexp) round differently, and the cancellation turns an ulp of the operands into
# many of a small result. Compared in ulps of max(|result|, 1), the operands' scale.
OPERAND_SCALE = {"logaddexp", "logaddexp2"}

# Layout name → how to make operand k from a fresh 1-D base of 64 elements. The same view is taken
# of the NumPy base and of the fusedarrays copy of it, so the device operand really is strided,
# transposed or broadcast (a view of device memory, not a contiguous upload).
LAYOUTS = {
    "contiguous": lambda base, k: base[:37],
    "strided": lambda base, k: base[1:40:3],
    "transposed": lambda base, k: base[:35].reshape(7, 5).T,
    "broadcast": lambda base, k: _broadcast(base[: [20, 15, 60][k % 3]]
                                            .reshape([(4, 5), (3, 1, 5), (3, 4, 5)][k % 3])),
    "zero_d": lambda base, k: base[5],
}


def _broadcast(x):
    return (np.broadcast_to if isinstance(x, np.ndarray) else fa.broadcast_to)(x, (3, 4, 5))


def sample(rng, dtype: np.dtype, n: int, op: str, position: int) -> np.ndarray:
    """Fresh random values of ``dtype``, drawn so that the op's result is defined in NumPy too."""
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind == "f":
        values = rng.standard_normal(n) * 4
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 0.5])
        values[rng.integers(0, n, 3)] = rng.choice(special, 3)
        return values.astype(dtype)
    info = np.iinfo(dtype)
    if op == "power":
        return rng.integers(0 if position else -3, 6 if position else 4, n).astype(dtype)
    if op in ("left_shift", "right_shift") and position == 1:
        low = -2 if dtype.kind == "i" else 0
        return rng.integers(low, dtype.itemsize * 8 + 3, n).astype(dtype)
    values = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    small = rng.integers(max(info.min, -5), 6, n).astype(dtype)
    values = np.where(rng.random(n) < 0.5, small, values)
    if op == "reciprocal":
        values[values == 0] = 1  # NumPy's integer 1/0 is platform garbage; fusedarrays gives 0
    if op in ("floor_divide", "remainder") and position == 1 and dtype.kind == "i":
        values[:2] = [0, -1]  # division by zero and INT_MIN // -1 are both defined as NumPy's
    return values


# Ops whose integer operands ``sample`` draws in a way of their own (other ops, and every float
# or bool operand, are drawn alike).
OWN_DRAWS = {"power", "left_shift", "right_shift", "reciprocal", "floor_divide", "remainder"}


def draw_kind(row: ops.Op, dtype: np.dtype, position: int) -> tuple:
    """What ``sample`` draws for operand ``position`` of ``row``: ops with the same answer can
    read the same operand."""
    if row.name == "where" and position == 0:
        return ("condition",)
    return (row.name if dtype.kind in "iu" and row.name in OWN_DRAWS else "", dtype, position)


def operands(rng, row: ops.Op, dtype: np.dtype, layout: str, to_device, drawn: dict):
    """(NumPy operands, fusedarrays operands): the same views of the same fresh values.

    ``drawn`` (kept by the caller across the rows of one kernel) shares one operand between the
    ops that draw alike (:func:`draw_kind`): a kernel of every op has a dozen operands rather than
    one or two per op, which halves its compile on the cpu backend. Each op still reads fresh
    values of its dtype, drawn for its kind of op, through the layout's view of device memory."""
    view = LAYOUTS[layout]
    for k in range(row.nin):
        kind = draw_kind(row, dtype, k)
        if kind not in drawn:
            d = np.dtype(bool) if kind == ("condition",) else dtype
            base = sample(rng, d, 64, row.name, k)
            drawn[kind] = (np.asarray(view(base, k)), view(to_device(base), k))
    pairs = [drawn[draw_kind(row, dtype, k)] for k in range(row.nin)]
    return [h for h, _ in pairs], [d for _, d in pairs]


def numpy_result(row: ops.Op, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return row.ref(*args)


def assert_matches(name: str, got: np.ndarray, want: np.ndarray, label: str) -> None:
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{label}: shape {got.shape} != NumPy's {want.shape}"
    if want.dtype.kind != "f" or name in EXACT:
        ok = (got == want) | (np.isnan(got) & np.isnan(want) if want.dtype.kind == "f" else False)
        assert np.all(ok), f"{label}: got {got[~ok][:5]} where NumPy has {want[~ok][:5]}"
        return
    both_nan = np.isnan(got) & np.isnan(want)
    same = (got == want) | both_nan
    finite = ~same & np.isfinite(want) & np.isfinite(got)
    bad = ~(same | finite)
    assert not bad.any(), f"{label}: {got[bad][:5]} where NumPy has {want[bad][:5]}"
    if finite.any():
        scale = np.abs(want[finite])
        if name in OPERAND_SCALE:
            scale = np.maximum(scale, 1)
        ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / np.spacing(
            scale).astype(np.float64)
        assert ulps.max() <= MAX_ULP, f"{label}: {ulps.max():.1f} ulp off NumPy"


def check_all_ops(dtype: np.dtype, layout: str, seed: int, to_device=fa.asarray) -> int:
    """Every op on ``dtype`` in ``layout`` in one evaluation; returns how many ops were checked."""
    rng = np.random.default_rng(seed)
    lazy, expected, drawn = [], [], {}
    for row in ops.OPS.values():
        if row.module:      # fa.special's rows: tests/*/test_special*.py, against SciPy
            continue
        host, device = operands(rng, row, dtype, layout, to_device, drawn)
        try:
            want = np.asarray(numpy_result(row, host))
        except TypeError:
            try:
                getattr(fa, row.name)(*device)
            except TypeError:
                continue
            raise AssertionError(  # noqa: B904 - the TypeError is NumPy's, expected
                f"{row.name}({dtype}) is refused by NumPy but not by fusedarrays")
        lazy.append(getattr(fa, row.name)(*device))
        expected.append((row.name, want))
    before = fa.stats()["launches"]
    fa.compute(*lazy)
    assert fa.stats()["launches"] - before == 1, "all ops of one shape must run as ONE launch"
    for result, (name, want) in zip(lazy, expected):
        assert_matches(name, result.get(), want, f"{name} on {dtype} ({layout}, seed {seed})")
    return len(expected)


def check_every_op(dtype, layout: str) -> None:
    """The tier case: every op of the table on ``dtype`` in ``layout`` against NumPy on the
    current backend, seeded by the pair (``tests/topics/test_ops.py`` runs it on every tier)."""
    checked = check_all_ops(dtype, layout, seed=zlib.crc32(f"{dtype} {layout}".encode()))
    assert checked >= 20 or dtype == np.bool_


FLOATS = [np.dtype(t) for t in ("float16", "float32", "float64")]


def mixed_float_unary_ops(seed: int = 7):
    """Every unary op of the table that takes floats, at float16, float32 and float64 at once:
    ``(NumPy results, lazy results)``, for ONE kernel (an op that a backend declares once per
    module with no type, such as numba's ``llvm.exp2``, fails to build here)."""
    rng = np.random.default_rng(seed)
    bases = {dt: (rng.random(40) * 1.8 + 0.1).astype(dt) for dt in FLOATS}  # in every domain
    # one device copy per width, read by every op (one operand, not one per op: a third of the
    # kernel's compile on the cpu backend)
    device = {dt: fa.asarray(base) for dt, base in bases.items()}
    want, lazy = [], []
    for row in ops.OPS.values():
        if row.nin != 1 or row.module:
            continue
        for dt in FLOATS:
            try:
                expected = numpy_result(row, [bases[dt]])
            except TypeError:
                continue
            want.append((f"{row.name}({dt}) (seed {seed})", row.name, expected))
            lazy.append(getattr(fa, row.name)(device[dt]))
    return want, lazy


def check_mixed_float_unary_ops() -> None:
    want, lazy = mixed_float_unary_ops()
    assert len(lazy) > 90
    before = fa.stats()["launches"]
    fa.compute(*lazy)
    assert fa.stats()["launches"] - before == 1
    for (label, name, expected), result in zip(want, lazy):
        assert_matches(name, result.get(), expected, label)
