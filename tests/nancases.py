"""The nan-functions and the quantiles against NumPy, shared by the cpu, sim and gpu tiers: fresh
data from fixed seeds (printed on failure) with NaNs at random places and whole rows (and a
column) of NaN, through contiguous, transposed and negative-step views, over each axis of
shapes that reach the reduction schedules; dtypes compared exactly, values to a tolerance."""

from __future__ import annotations

import warnings
import zlib

import numpy as np

import fusedarrays as fa

# name → keyword arguments of the call; the values are kept near 1 where products run
NAN_CALLS = {
    "nansum": {}, "nanprod": {}, "nanmean": {}, "nanvar": {"ddof": 1}, "nanstd": {},
    "nanmax": {}, "nanmin": {}, "nanargmax": {}, "nanargmin": {}, "nancumsum": {},
    "nancumprod": {},
}
PLAIN = {name: name[3:] for name in NAN_CALLS}       # nansum → sum …
QUANTILE_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                    "interpolated_inverted_cdf", "hazen", "weibull", "linear",
                    "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint",
                    "nearest")
RTOL = {np.dtype(np.float32): 2e-4, np.dtype(np.float64): 1e-10, np.dtype(np.int32): 1e-12}


def seed_of(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def values(rng, dtype, shape, name: str = "", all_nan: bool = True) -> np.ndarray:
    """Data of ``shape`` and ``dtype``: near 1 for products, else normal * 4; floats get NaN
    at a fifth of the places and, with ``all_nan``, all of row 3 and column 2, else a number
    in every row and column (never zeros)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        low, high = (1, 3) if "prod" in name else (-50, 50)
        return rng.integers(low, high, shape).astype(dtype)
    x = rng.uniform(0.97, 1.03, shape) if "prod" in name else rng.standard_normal(shape) * 4
    x[rng.random(shape) < 0.2] = np.nan
    if len(shape) == 2 and all_nan:
        x[3 % shape[0]] = np.nan
        x[:, 2 % shape[1]] = np.nan
    elif len(shape) == 2:     # a number in every row and every column
        k = np.arange(max(shape))
        x[k % shape[0], k % shape[1]] = rng.standard_normal(len(k))
    return x.astype(dtype)


def view(x: np.ndarray, layout: str, xp=np):
    """The ``layout`` view of ``x`` (2-D) through ``xp`` (np or fa), same values order for
    both: a transposed view of the transposed copy, or every second element reversed of a
    twice-as-wide copy."""
    if layout == "contiguous":
        return xp.asarray(x)
    if layout == "transposed":
        return xp.asarray(np.ascontiguousarray(x.T)).T
    wide = np.empty((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, 1::2] = x[:, ::-1]
    wide[:, ::2] = 7       # never read
    return xp.asarray(wide[::-1])[::-1, ::-2]


def numpy_of(name, x, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # All-NaN slice, dof <= 0
        return getattr(np, name)(x, **kw)


def check(got, want, what: str, rtol: float | None = None) -> None:
    """``got`` (a NumPy array) against NumPy's ``want``: dtype and shape exactly, integers and
    indices exactly, floats within RTOL of the result's size (NaN where NumPy has NaN)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    assert (np.isnan(got) == np.isnan(want)).all(), f"{what}: NaN where NumPy has none " \
        f"(or the reverse): {np.argwhere(np.isnan(got) != np.isnan(want))[:5].tolist()}"
    scale = np.nanmax(np.abs(want)) if np.isfinite(want).any() else 1.0
    rtol = rtol or RTOL.get(want.dtype, 1e-3)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True,
                               err_msg=what)


def check_nan_call(name: str, x: np.ndarray, a, axis, what: str, **kw) -> None:
    """``fa.<name>`` and ``np.<name>`` dispatched on ``a`` against NumPy on ``x``."""
    kw = dict(NAN_CALLS[name], **kw)
    want = np.asarray(numpy_of(name, x, axis=axis, **kw))
    # float32 in, float64 out: NumPy's nanvar rounds the centred values to float32 (it
    # subtracts the mean in place), fusedarrays keeps them in float64
    rtol = 1e-6 if x.dtype == np.float32 and want.dtype == np.float64 else None
    check(getattr(fa, name)(a, axis=axis, **kw).get(), want, f"fa.{name} {what}", rtol)
    check(np.asarray(numpy_of(name, a, axis=axis, **kw)), want, f"np.{name}(fa) {what}", rtol)


def check_nan_functions(dtype, shape, axes, layouts=("contiguous",), names=NAN_CALLS) -> None:
    """Every nan-function of ``names`` over each axis of ``axes`` and layout; the arg forms
    on data without all-NaN slices (those raise, :func:`check_all_nan`)."""
    for name in names:
        for layout in layouts:
            seed = seed_of(name, np.dtype(dtype).str, shape, layout)
            rng = np.random.default_rng(seed)
            x = values(rng, dtype, shape, name, all_nan="arg" not in name)
            a = view(x, layout, fa)
            for axis in axes:
                if "cum" in name and axis is None and layout != "contiguous":
                    continue
                check_nan_call(name, x, a, axis,
                               f"{np.dtype(dtype)} {shape} {layout} axis={axis} (seed {seed})")


def launches(thunk) -> int:
    fa.reset_stats()
    thunk().get()
    return fa.stats()["launches"]


def check_quantiles(dtype, shape, axes, methods=QUANTILE_METHODS, layouts=("contiguous",),
                    qs=(0.3, [0.0, 0.25, 0.5, 0.999, 1.0])) -> None:
    """quantile / nanquantile / percentile / nanpercentile of each method, q and axis."""
    for layout in layouts:
        seed = seed_of("quantiles", np.dtype(dtype).str, shape, layout)
        x = values(np.random.default_rng(seed), dtype, shape)
        a = view(x, layout, fa)
        for method in methods:
            for q in qs:
                for axis in axes:
                    for name in ("quantile", "nanquantile"):
                        what = (f"{name} {np.dtype(dtype)} {shape} {layout} {method} q={q} "
                                f"axis={axis} (seed {seed})")
                        want = numpy_of(name, x, q=q, axis=axis, method=method)
                        check(getattr(fa, name)(a, q, axis=axis, method=method).get(), want,
                              what)


def check_launches(shapes_axes, seed: int) -> None:
    """Each nan-function takes its plain form's launches (NaN replaced inside the reduction's
    kernel; nanmean's count rides in the sum) and stays pending until asked; nanargmax and
    nanargmin add the all-NaN check's one, at the call. ``shapes_axes``: (shape, axes) pairs."""
    rng = np.random.default_rng(seed)
    for shape, axes in shapes_axes:
        a = fa.asarray(values(rng, np.float32, shape, all_nan=False))
        for axis in axes:
            for name in NAN_CALLS:
                if "cum" in name and axis is None:
                    continue
                fa.reset_stats()
                pending = getattr(fa, name)(a, axis=axis)
                built = fa.stats()["launches"]
                assert built == (1 if "arg" in name else 0) and not pending._resolved().is_leaf, \
                    f"{name} {shape} axis={axis}: {built} launches before .get() (seed {seed})"
                pending.get()
                got = fa.stats()["launches"]
                fa.reset_stats()
                getattr(fa, PLAIN[name])(a, axis=axis).get()
                want = fa.stats()["launches"]
                assert got == want + (1 if "arg" in name else 0), \
                    f"{name} {shape} axis={axis}: {got} launches, {PLAIN[name]} {want}"
