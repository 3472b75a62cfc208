"""``fa.special`` against SciPy, shared by the cpu, sim and gpu tiers (SciPy needed: the tiers
skip without it).

Each function gets fresh random values over its domain with its edge values (0, ±1, ±inf, NaN,
out of domain) from a fixed seed, read through a strided, reversed view; the result's dtype must
be SciPy's and each value within a few ulp of SciPy's (``gammaln`` also within a few ulp of
1 near its zeros at 1 and 2, where a relative measure means nothing). Results below the
smallest normal number count as equal to SciPy's (which flushes some of them to 0); ``erfc``'s
far tail (erfc(12) ~ 1e-67) is the platform libm's or libdevice's, up to ~100 ulp from SciPy's
Cephes there (both are accurate to ~1e-14 relative).
"""

from __future__ import annotations

import zlib

import numpy as np

import fusedarrays as fa

# erfc: the far tail, see above; gammaln: lgamma of libm, libdevice and Python (the simulator)
# differ from Cephes' by a few ulp; every other function: 4
MAX_ULP = {"erfc": 256, "gammaln": 8}
EDGES = {
    "erf": [0.0, -0.0, np.inf, -np.inf, np.nan, 5.9, -3.0],
    "erfc": [0.0, np.inf, -np.inf, np.nan, 9.5, -1.0],
    "erfinv": [0.0, 1.0, -1.0, 1.5, np.nan, 0.9999999, -0.5],
    "expit": [0.0, np.inf, -np.inf, np.nan, 40.0, -90.0],
    "logit": [0.0, 1.0, 0.5, -0.5, np.nan, 1e-6, 0.999],
    "gammaln": [1.0, 2.0, 0.5, 0.0, np.inf, np.nan, 170.0],
}


def values(name: str, rng, n: int) -> np.ndarray:
    if name in ("erfinv",):
        x = rng.uniform(-1, 1, n)
    elif name == "logit":
        x = rng.uniform(0, 1, n)
    elif name == "gammaln":
        # positive arguments: between -11 and -2.26 CUDA's libdevice documents lgamma's error
        # as larger than elsewhere (its poles); the cpu's libm is tested there by test_special
        x = rng.uniform(0.0, 30, n)
    else:
        x = rng.standard_normal(n) * 4
    x[rng.choice(n, len(EDGES[name]), replace=False)] = EDGES[name]
    return x


def check_special(name: str, dtype, n: int = 4000) -> None:
    import scipy.special  # noqa: PLC0415 - the tiers skip this module's tests without SciPy

    seed = zlib.crc32(f"{name} {np.dtype(dtype)}".encode())
    host = values(name, np.random.default_rng(seed), 2 * n)
    if np.dtype(dtype).kind in "iu":
        host = np.round(np.nan_to_num(host, posinf=7, neginf=-7) * 3)
    host = host.astype(dtype)
    view = host[::-2]    # a strided, reversed view on the device too
    label = f"fa.special.{name} on {np.dtype(dtype)} (seed {seed})"
    with np.errstate(all="ignore"):
        want = getattr(scipy.special, name)(view)
    got = getattr(fa.special, name)(fa.asarray(host)[::-2]).get()
    ufunc = getattr(scipy.special, name)
    if got.dtype != want.dtype and not ufunc.types[0].startswith("d"):
        # fa.special follows SciPy 1.17's loop order (float64 first: int16 and float16 give
        # float64); a SciPy listing float32 first gives float32 there. Values in fa's dtype.
        with np.errstate(all="ignore"):
            want = ufunc(view, dtype=got.dtype)
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != SciPy's {want.dtype}"
    tiny = np.finfo(want.dtype).tiny
    same = (got == want) | (np.isnan(got) & np.isnan(want)) | (
        np.abs(got.astype(np.float64) - want) < tiny)
    finite = ~same & np.isfinite(want) & np.isfinite(got)
    assert not (~same & ~finite).any(), f"{label}: {got[~same & ~finite][:5]} where SciPy " \
                                        f"has {want[~same & ~finite][:5]}"
    scale = np.spacing(np.maximum(np.abs(want[finite]), 1.0 if name == "gammaln" else 0.0))
    ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / scale.astype(np.float64)
    limit = MAX_ULP.get(name, 4)
    assert not finite.any() or ulps.max() <= limit, f"{label}: {ulps.max():.1f} ulp off SciPy"
