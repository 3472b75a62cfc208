"""bfloat16 and float8 cases shared by the cpu, sim and gpu tiers: each case returns ``(result,
expected)`` where ``expected`` is ml_dtypes' NumPy result on the same data (its loops compute in
float32 and round after every op; reductions are taken of the float32 values and rounded once,
JAX's float32 accumulation). Data: fresh random values from ``np.random.default_rng(seed)`` with
the formats' edges mixed in (NaN, +-inf, -0.0, the largest finite value, values past it, their
subnormals), through views with negative steps and transposes. ``n`` scales the sizes (the sim
tier keeps them tiny).

:func:`same` compares bit for bit where the result is finite or infinite and only NaN-ness for
NaN, whose sign is the hardware's (x86 makes ``inf - inf`` negative, a GPU positive).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import fusedarrays as fa

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
FORMATS = [BF16, E4M3, E5M2]


def data(seed: int, shape, dtype: np.dtype) -> np.ndarray:
    """Random values of ``dtype`` (ml_dtypes' cast of float32 values at several scales), with
    the format's edges at random places."""
    rng = np.random.default_rng(seed)
    info = ml_dtypes.finfo(dtype)
    scale = rng.choice([1e-3, 1.0, 30.0, float(info.max) / 4], size=shape)
    values = _quiet(lambda: (rng.standard_normal(shape) * scale).astype(np.float32))
    top, tiny = float(info.max), float(info.smallest_subnormal)
    edges = _quiet(lambda: np.array([np.nan, np.inf, -np.inf, -0.0, top, -top, top * 1.2, tiny,
                                     -tiny * 3, float(info.smallest_normal)], np.float32))
    flat = values.reshape(-1)
    at = rng.choice(flat.size, size=min(len(edges), flat.size), replace=False)
    flat[at] = edges[: len(at)]
    with np.errstate(all="ignore"):
        return values.astype(dtype)


def _quiet(fn):
    with np.errstate(all="ignore"):
        return fn()


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def same(got, want, what: str = "") -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    with np.errstate(all="ignore"):
        gnan = np.isnan(got.astype(np.float64))
        wnan = np.isnan(want.astype(np.float64))
    assert np.array_equal(gnan, wnan), (what, np.argwhere(gnan != wnan)[:5])
    keep = ~wnan
    bad = bits(got)[keep] != bits(want)[keep]
    assert not bad.any(), (what, got[keep][bad][:5], want[keep][bad][:5])


def _ml(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


# -- cases: each (seed, n) -> (fa result, NumPy/ml_dtypes expected) ----------------------------
def arithmetic(seed: int, n: int, dtype: np.dtype):
    """``a * b + a / c - 1.5`` in the format (a Python float keeps it), views included."""
    a, b = data(seed, (n, 33), dtype), data(seed + 1, (33, n), dtype)
    c = data(seed + 2, (n, 33), dtype)
    fa_a, fa_b, fa_c = fa.asarray(a), fa.asarray(b), fa.asarray(c)
    got = fa_a[::-1] * fa_b.T + fa_a / fa_c[:, ::-1] - 1.5
    t = dtype.type
    want = _ml(lambda: a[::-1] * b.T + a / c[:, ::-1] - t(1.5))
    return got.get(), want


def unary(seed: int, n: int, dtype: np.dtype):
    """sqrt, exp, abs, negative, floor, maximum and a comparison of the format (maximum's value:
    which of -0.0 and 0.0 it gives differs between ml_dtypes' loop and NumPy's)."""
    a, b = data(seed, (4 * n + 3,), dtype), data(seed + 1, (4 * n + 3,), dtype)
    x, y = fa.asarray(a), fa.asarray(b)
    got = [fa.sqrt(x).get(), fa.exp(x[::-2]).get(), fa.abs(-x).get(), fa.floor(x).get(),
           fa.maximum(x, y).get().astype(np.float32) + np.float32(0), (x < y).get()]
    want = [_ml(np.sqrt, a), _ml(np.exp, a[::-2]), _ml(np.abs, -a), _ml(np.floor, a),
            # NumPy's float maximum (its zero signs), which ml_dtypes' own loop does not keep
            _ml(lambda: np.maximum(a.astype(np.float32), b.astype(np.float32)).astype(dtype)
                .astype(np.float32) + np.float32(0)),
            _ml(np.less, a, b)]
    return got, want


def casts(seed: int, n: int, dtype: np.dtype):
    """float32 and float64 (rounded via float32, as ml_dtypes' casts) and int32 to the format;
    the format to float32, to float16 and to int16 (where it fits); between the formats."""
    rng = np.random.default_rng(seed)
    f32 = data(seed, (n, 17), np.dtype(np.float32))
    f32[0, :4] = [np.nan, np.inf, -np.inf, 1e30]
    f64 = (rng.standard_normal((n, 17)) * 1e3).astype(np.float64)
    i32 = rng.integers(-100000, 100000, (n, 17)).astype(np.int32)
    x = data(seed + 1, (n, 17), dtype)
    other = BF16 if dtype != BF16 else E4M3
    got = [fa.asarray(f32).astype(dtype).get(), fa.asarray(f64).T.astype(dtype).get(),
           fa.asarray(i32).astype(dtype).get(), fa.asarray(x).astype(np.float32).get(),
           fa.asarray(x).astype(np.float16).get(), fa.asarray(x).astype(other).get()]
    want = [_ml(f32.astype, dtype), _ml(f64.T.astype, dtype), _ml(i32.astype, dtype),
            x.astype(np.float32), x.astype(np.float32).astype(np.float16),
            _ml(x.astype(np.float32).astype, other)]
    # to int16 only where the value fits: past int16 (NaN, inf, 40960) C leaves the cast
    # undefined and NumPy warns; x86 wraps an int32 (or gives 0), the GPU saturates
    xf = x.astype(np.float32)
    fits = (xf > -32769) & (xf < 32768)
    got.append(fa.asarray(x).astype(np.int16).get()[fits])
    want.append(xf[fits].astype(np.int16))
    return got, want


def promotion(seed: int, n: int, dtype: np.dtype):
    """JAX's promotion: with int8 the format, with a Python int the format; bfloat16 with
    float32 float32, with float16 float32."""
    a = data(seed, (n, 9), dtype)
    k = np.random.default_rng(seed).integers(-5, 5, (n, 9)).astype(np.int8)
    f = np.random.default_rng(seed + 1).standard_normal((n, 9)).astype(np.float32)
    x = fa.asarray(a)
    got = [(x + fa.asarray(k)).get(), (x * 3).get()]
    af = a.astype(np.float32)
    want = [_ml(lambda: (af + k.astype(np.float32)).astype(dtype)),
            _ml(lambda: (af * np.float32(3)).astype(dtype))]
    if dtype == BF16:       # the float8 types refuse other floats (tests/topics/test_minifloat.py)
        got.append((x * fa.asarray(f)).get())
        want.append(_ml(lambda: af * f))
        h = np.random.default_rng(seed + 2).standard_normal((n, 9)).astype(np.float16)
        got.append((x + fa.asarray(h)).get())
        want.append(_ml(lambda: af + h.astype(np.float32)))
    return got, want


def reductions(seed: int, n: int, dtype: np.dtype):
    """sum (float32 accumulation, rounded once), max and mean over axes of finite data."""
    a = np.clip(data(seed, (n, 257), dtype).astype(np.float32), -100, 100)
    a = np.nan_to_num(a).astype(dtype)
    x = fa.asarray(a)
    af = a.astype(np.float32)
    got = [fa.sum(x, axis=1).get(), fa.max(x[:, ::-1], axis=0).get(), fa.sum(x.T, axis=0).get()]
    want = [af.sum(axis=1, dtype=np.float64).astype(np.float32).astype(dtype),
            af[:, ::-1].max(axis=0).astype(dtype),
            af.sum(axis=1, dtype=np.float64).astype(np.float32).astype(dtype)]
    return got, want


CASES = [arithmetic, unary, casts, promotion, reductions]


def stochastic_mean(seed: int, n: int, dtype: np.dtype, backend_draw=None):
    """The mean of ``n`` stochastic roundings of values between two neighbours of ``dtype``
    is the value: within 5 standard deviations of a rounding's spread over ``n``."""
    rng = fa.random.default_rng(seed)
    mant = 7 if dtype == BF16 else 10
    values = np.float32(1.0) + np.float32(2.0 ** -mant) * np.array(
        [0.25, 0.5, 0.9, 0.01], np.float32)
    x = fa.asarray(np.repeat(values[None, :], n, axis=0))
    r = rng.stochastic_round(x, dtype).astype(fa.float32).get().astype(np.float64)
    ulp = 2.0 ** -mant
    low = np.floor((values - 1) / ulp) * ulp + 1
    assert set(np.unique(r)) <= set(low.tolist()) | set((low + ulp).tolist())
    p = (values - low) / ulp
    spread = ulp * np.sqrt(p * (1 - p) / n)
    err = np.abs(r.mean(axis=0) - values)
    assert (err <= 5 * spread + 1e-12).all(), (seed, err, spread)
