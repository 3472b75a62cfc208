"""Operands for ``fa.nextafter`` against NumPy's ``np.nextafter``, bit for bit, shared by the cpu,
sim and gpu tiers: every edge of the float formats (signed zeros, the smallest subnormal, the
subnormal/normal boundary, powers of two, the largest finite value, infinities, NaN) against
every direction, and random values."""

from __future__ import annotations

import numpy as np

FLOATS = (np.float16, np.float32, np.float64)
BITS = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32,
        np.dtype(np.float64): np.uint64}


def edges(dtype) -> np.ndarray:
    """Every value where a float format's spacing changes, and its neighbours, both signs."""
    info = np.finfo(dtype)
    tiny, normal = float(info.smallest_subnormal), float(info.smallest_normal)
    positive = [0.0, tiny, 2 * tiny, normal - tiny, normal, normal + tiny * 2 ** 0, 0.5, 1.0,
                1.5, 2.0, 1024.0, float(info.max), np.inf]
    values = np.array(positive + [-v for v in positive] + [np.nan], dtype=np.float64)
    return values.astype(dtype)


def directions(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    return np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(info.max),
                     float(info.smallest_subnormal)], dtype=np.float64).astype(dtype)


def random_pair(rng, dtype, shape) -> tuple[np.ndarray, np.ndarray]:
    """Random x and y of ``dtype``, some equal, some of opposite signs, a few at the edges."""
    x = (rng.standard_normal(shape) * 8).astype(dtype)
    y = np.where(rng.random(shape) < 0.1, x, (rng.standard_normal(shape) * 8).astype(dtype))
    flat = x.reshape(-1)
    flat[rng.integers(0, flat.size, 8)] = rng.choice(edges(dtype), 8)
    return x, y.astype(dtype)


def assert_same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal dtype, shape and bits; NaNs only as NaNs (their payload is each platform's)."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != NumPy's {want.shape}"
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaNs differ"
    uint = BITS[want.dtype]
    bad = (got.view(uint) != want.view(uint)) & ~nan
    assert not bad.any(), (f"{what}: got {got[bad][:5]} (bits {got[bad].view(uint)[:5]}) where "
                           f"NumPy has {want[bad][:5]} (bits {want[bad].view(uint)[:5]})")
