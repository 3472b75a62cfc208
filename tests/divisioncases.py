"""Divisions by a divisor computed outside its dividend's loop (codegen's
``_Renderer.by_reciprocal``: on cuda the divisor's reciprocal and two fmas an element, exact by
``cuda/division.py``'s argument), checked against NumPy bit for bit on the backend a tier runs:
Python floats, NumPy scalars, 0-d arrays, a row's column and a row kernel's reduced value as
divisors of every kind, dividends of every kind (±0, subnormals, infinities, NaN), float32 and
float16, in every walk, under ``fa.fuse``. Each case also checks that the kernel's source takes
that path."""

from __future__ import annotations

import warnings

import numpy as np

import fusedarrays as fa

DIVISORS = [1.7, -3.0, 0.9, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45,
            -1e-40, 2.0 ** -70, 2.0 ** 70, 3e38, 1e-300]


def _dividends(rng, shape, dtype) -> np.ndarray:
    bits = np.dtype(dtype).itemsize * 8
    raw = rng.integers(0, 1 << bits, shape, dtype=np.uint64)
    a = raw.astype({16: np.uint16, 32: np.uint32}[bits]).view(dtype).copy()
    flat = a.reshape(-1)
    named = np.array([0.0, -0.0, 1e-45, -1e-40, 6e-8, np.inf, -np.inf, np.nan, 3e38, 65504.0,
                      1.0, -2.5], np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flat[:named.size] = named.astype(dtype)
    flat[named.size::5] = 0.0
    flat[named.size + 1::7] = -0.0
    return a


def _same(got, want, what: str) -> None:
    bits = {2: np.uint16, 4: np.uint32}[want.dtype.itemsize]
    assert got.dtype == want.dtype, what
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (f"{what}: {int((~same).sum())} differ; first got "
                        f"{got[~same][0]!r}, NumPy {want[~same][0]!r}")


def _check(expr, want, what: str, schedules: set) -> None:
    ex = fa.explain(expr)
    # float16 divisions take the form whose operands are float16 values (cuda/division.py)
    assert ("fa_divbyh_f32" if expr.dtype == np.float16 else "fa_divby_f32") in ex.source, what
    schedules.add(ex.plan.schedule)
    _same(expr.get(), want, what)


def check_uniform_divisions(seed: int, size: int = 203) -> None:
    """Every case above against NumPy on the current backend."""
    rng = np.random.default_rng(seed)
    print(f"{seed=}")
    schedules: set = set()
    for dtype in (np.float32, np.float16):
        a = _dividends(rng, (size,), dtype)
        x = fa.asarray(a)
        for b in DIVISORS:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _check(x / b, a / b, f"{dtype.__name__} / {b!r}", schedules)
                s = np.float32(b)
                if dtype == np.float32:
                    _check(x / s, a / s, f"/ np.float32({b!r})", schedules)
                    _check(x / fa.asarray(s), a / s, f"/ 0-d {b!r}", schedules)
        m = _dividends(rng, (7, 256), dtype)
        col = np.array(DIVISORS[:7], np.float64).reshape(7, 1).astype(dtype)
        with np.errstate(all="ignore"):
            _check(fa.asarray(m) / fa.asarray(col), m / col, "rows / column", schedules)
            if dtype == np.float32:   # 128² transposed: the tiled walk
                t = _dividends(rng, (128, 128), dtype)
                _check(fa.asarray(t).T / 1.7, t.T / dtype(1.7), "transposed / 1.7", schedules)
            _check(fa.asarray(m)[::2, ::3] / -3.0, m[::2, ::3] / dtype(-3.0), "strided",
                   schedules)
            finite = np.where(np.isfinite(m), m, dtype(0.5))
            big = np.abs(finite).max(axis=-1, keepdims=True)
            fm = fa.asarray(finite)
            got = fm / fa.max(fa.abs(fm), axis=-1, keepdims=True)
            assert "fa_rowdivby_f32" in fa.explain(got).kernels[0][1]   # the row kernels' form
            _same(got.get(), finite / big, f"{dtype.__name__} row kernel")

    @fa.fuse
    def dropout(x, mask, p):
        return x * mask / (1 - p)

    h = _dividends(rng, (4099,), np.float16)
    mask = rng.random(h.shape) > 0.1
    for p in (0.1, 0.5):
        with np.errstate(all="ignore"):
            _same(dropout(fa.asarray(h), fa.asarray(mask), p).get(),
                  h * mask / np.float16(1 - p), f"fa.fuse dropout {p=}")
    assert {"flat", "rows", "tiled", "nd"} <= schedules, schedules
