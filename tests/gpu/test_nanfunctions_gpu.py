"""The nan-functions and the quantiles on the cuda backend against NumPy (tests/nancases.py, the
cpu tier's cases): each over the cuda schedules' shapes, views and dtypes, all-NaN slices,
launches equal to the plain forms' (a row kernel included) and pending until asked, large
shapes, the quantiles' methods after the device sort, xarray's default-skipna reductions and
dask's nanmean over fa chunks on the device."""

import warnings

import nancases as nc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 20261128


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def test_nan_functions_over_the_schedules_views_and_dtypes():
    nc.check_nan_functions(np.float32, (300, 257), (0, 1, None))
    nc.check_nan_functions(np.float32, (4, 5000), (1, 0))
    nc.check_nan_functions(np.float32, (30, 70), (0, 1), ("transposed", "negative"))
    nc.check_nan_functions(np.float64, (30, 70), (1, None))
    nc.check_nan_functions(np.int32, (30, 70), (0, None))


def test_all_nan_slices_and_errors():
    x = np.full((3, 300), np.nan, np.float32)
    # row 2's numbers stay small: a product of 1..149 overflows float32 to inf in the GPU's
    # tree order, and inf * 0 is NaN where NumPy's order keeps 0
    x[0, 1], x[2, ::2] = 5.0, np.arange(150) % 7 / 2
    a = fa.asarray(x)
    for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
                 "nancumsum", "nancumprod"):
        for axis in (0, 1, None):
            if "cum" not in name or axis is not None:
                nc.check_nan_call(name, x, a, axis, f"all-NaN rows axis={axis}")
    nc.check(fa.nanvar(a, axis=1, ddof=1).get(), nc.numpy_of("nanvar", x, axis=1, ddof=1),
             "nanvar ddof=1")
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        fa.nanargmax(a, axis=1)
    assert fa.nanargmin(a[2]).get() == np.nanargmin(x[2])


def test_launches_equal_the_plain_forms_and_row_kernels():
    nc.check_launches([((300, 257), (None, 0, 1)), ((4, 5000), (1,)), ((64, 4096), (1,))], SEED)
    rng = np.random.default_rng(SEED + 1)
    x = nc.values(rng, np.float32, (64, 4096))
    a = fa.asarray(x)
    for nan, plain in [("nanmax", "max"), ("nanmean", "mean")]:
        fa.reset_stats()
        got = _row_expr(fa, a, getattr(fa, nan)).get()
        launches = fa.stats()["launches"]
        fa.reset_stats()
        _row_expr(fa, a, getattr(fa, plain)).get()
        assert launches == fa.stats()["launches"], f"{nan} row kernel: {launches} launches"
        want = _row_expr(np, x, lambda v, name=nan, **kw: nc.numpy_of(name, v, **kw))
        nc.check(got, want, f"{nan} row kernel")


def _row_expr(xp, v, reduction):
    """A row's elementwise work around its reduction (a row kernel on cuda)."""
    return xp.exp(v - reduction(v, axis=1, keepdims=True))


@pytest.mark.parametrize("shape,axis", [((4096, 4096), 0), ((4096, 4096), 1),
                                        ((1 << 24,), None), ((1000, 3000), None)])
def test_large_shapes(shape, axis):
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.1] = np.nan
    a = fa.asarray(x)
    for name in ("nansum", "nanmean", "nanstd", "nanmax", "nanargmin"):
        nc.check_nan_call(name, x, a, axis, f"{shape} axis={axis} (seed {SEED})")


def test_quantiles_after_the_device_sort():
    nc.check_quantiles(np.float32, (30, 41), (None, 0, 1))
    nc.check_quantiles(np.float32, (300, 257), (0, 1), methods=("linear", "inverted_cdf"))
    nc.check_quantiles(np.float64, (30, 41), (1,), methods=("linear", "midpoint"),
                       layouts=("negative",))
    nc.check_quantiles(np.int32, (30, 41), (0,), methods=("linear", "lower"))
    x = nc.values(np.random.default_rng(SEED), np.float32, (1000, 3000))
    a = fa.asarray(x)
    for name in ("median", "nanmedian"):
        for axis in (0, 1, None):
            nc.check(getattr(fa, name)(a, axis=axis).get(), nc.numpy_of(name, x, axis=axis),
                     f"{name} (1000, 3000) axis={axis}")
    for name, launches in [("quantile", 1), ("nanquantile", 2)]:
        r = getattr(fa, name)(a, [0.1, 0.9], axis=1)
        assert not r._resolved().is_leaf
        fa.reset_stats()
        r.get()
        assert fa.stats()["launches"] == launches, f"{name}: {fa.stats()}"


def test_clients_on_the_device():
    xr = pytest.importorskip("xarray")
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = nc.values(np.random.default_rng(SEED), np.float32, (40, 300))
    fa_da, np_da = xr.DataArray(fa.asarray(x), dims=("t", "c")), xr.DataArray(x, dims=("t", "c"))
    for what, call in [("mean()", lambda d: d.mean()), ("std()", lambda d: d.std()),
                       ("max()", lambda d: d.max()), ("sum(dim='c')", lambda d: d.sum(dim="c")),
                       ("median(dim='c')", lambda d: d.median(dim="c"))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got, want = call(fa_da), call(np_da)
        assert isinstance(got.data, fa.ndarray) and "cuda" in str(got.data.device), what
        nc.check(np.asarray(got.data), want.data, f"xarray {what}")
    d = da.from_array(fa.asarray(x.astype(np.float64)), chunks=(20, 100), asarray=False)
    with dask.config.set(scheduler="threads"):
        for axis in (0, 1, None):
            got = da.nanmean(d, axis=axis).compute()
            assert isinstance(got, fa.ndarray)
            nc.check(np.asarray(got), nc.numpy_of("nanmean", x.astype(np.float64), axis=axis),
                     f"dask nanmean axis={axis}")
