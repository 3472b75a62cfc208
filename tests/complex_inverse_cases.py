"""The complex inverse trigonometric and hyperbolic functions (``arcsin arccos arctan arcsinh
arccosh arctanh``) against NumPy, shared by the cpu, sim and gpu tiers: every pair of special
parts (signed zeros, +-1, infinities, NaN, the tiniest and largest magnitudes: C99's special
values, which NumPy's and the standard's are) exactly up to a few ulp, and random values through
views within a relative tolerance of the result's modulus."""

from __future__ import annotations

import numpy as np

import fusedarrays as fa

NAMES = ("arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")
PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, np.inf, -np.inf, np.nan, 1e-30, 1e30]
RTOL = {np.dtype(np.complex64): 4e-6, np.dtype(np.complex128): 1e-14}


def special_grid(dtype) -> np.ndarray:
    return np.array([complex(a, b) for a in PARTS for b in PARTS], dtype=dtype)


def _same_part(got, want, rtol) -> np.ndarray:
    nan = np.isnan(want)
    exact = (got == want) & (np.signbit(got) == np.signbit(want))
    close = np.abs(got - want) <= rtol * np.abs(want)
    return np.where(nan, np.isnan(got), exact | close)


def check_special_values(dtype, to_device=fa.asarray) -> None:
    grid = special_grid(dtype)
    lazy = [getattr(fa, name)(to_device(grid)) for name in NAMES]
    fa.compute(*lazy)
    for name, result in zip(NAMES, lazy):
        with np.errstate(all="ignore"):
            want = getattr(np, name)(grid)
        got = result.get()
        assert got.dtype == want.dtype, f"{name}({grid.dtype}): {got.dtype}"
        ok = (_same_part(got.real, want.real, RTOL[want.dtype])
              & _same_part(got.imag, want.imag, RTOL[want.dtype]))
        assert ok.all(), (f"{name}({want.dtype}) at {grid[~ok][:4]}: got {got[~ok][:4]}, "
                          f"NumPy {want[~ok][:4]}")


def check_random_views(dtype, seed: int, shape=(300, 257)) -> None:
    rng = np.random.default_rng(seed)
    host = ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * 2).astype(dtype)
    x = fa.asarray(host)
    views = [(x, host), (x.T[::-1], host.T[::-1]), (x[::-3, 5::2], host[::-3, 5::2])]
    for name in NAMES:
        for view, expect in views:
            got, want = getattr(fa, name)(view).get(), getattr(np, name)(expect)
            assert got.dtype == want.dtype
            err = np.abs(got - want) / np.maximum(np.abs(want), np.finfo(want.real.dtype).tiny)
            assert err.max() <= RTOL[want.dtype], (
                f"{name}({want.dtype}), seed {seed}: relative error {err.max():.3g}")
