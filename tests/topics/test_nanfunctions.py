"""The nan-functions and the quantiles against NumPy (tests/nancases.py), by tier.

- cpu: every one × float32, float64 and int32 over each axis of shapes that reach the reduction
  schedules, through views; all-NaN slices, ddof past the count, where= and initial=, NumPy's
  errors; launches equal to the plain forms'; and through the clients: xarray's default-skipna
  reductions and dask's nanmean.
- sim: the generated CUDA kernels (nanmax's NaN-started accumulator in the block tree and in a
  row kernel, nanmean's complex sum and count, the nan quantiles' gathers through the
  device-computed positions) in numba's simulator. Tiny shapes: every simulated thread is a
  Python thread.
- cuda: the cpu tier's cases over the cuda schedules' shapes, views and dtypes, all-NaN slices,
  launches equal to the plain forms' (a row kernel included) and pending until asked, large
  shapes, the quantiles' methods after the device sort, xarray's default-skipna reductions and
  dask's nanmean over fa chunks on the device.
"""

import warnings

import nancases as nc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.errors import UnsupportedOperationError

SEED = 20261128
SIM_SEED = 7


def test_float32_over_each_axis_of_schedule_shapes():
    nc.check_nan_functions(np.float32, (300, 257), (0, 1, None))
    nc.check_nan_functions(np.float32, (4, 5000), (1, 0),
                           names=["nanmean", "nanvar", "nanmax", "nanargmin", "nansum"])


def test_views_and_dtypes():
    nc.check_nan_functions(np.float32, (30, 70), (0, 1), ("transposed", "negative"),
                           names=["nansum", "nanmean", "nanvar", "nanmax", "nanargmin",
                                  "nancumsum"])
    nc.check_nan_functions(np.float64, (30, 70), (1,))
    nc.check_nan_functions(np.int32, (30, 70), (0, None),     # the plain forms, as NumPy
                           names=["nansum", "nanprod", "nanmean", "nanstd", "nanmin",
                                  "nanargmax", "nancumprod"])


def test_all_nan_slices_match_numpy():
    x = np.full((3, 4), np.nan, np.float32)
    x[0, 1], x[2] = 5.0, [1.0, np.nan, 2.0, np.nan]
    a = fa.asarray(x)
    for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
                 "nancumsum", "nancumprod"):
        for axis in (0, 1):
            nc.check_nan_call(name, x, a, axis, f"all-NaN rows/columns axis={axis}")
    # ddof at or past a slice's count gives NaN there (counts 1, 0, 2)
    for ddof in (1, 2):
        nc.check(fa.nanvar(a, axis=1, ddof=ddof).get(),
                 nc.numpy_of("nanvar", x, axis=1, ddof=ddof), f"nanvar ddof={ddof}")


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanargmax_of_an_all_nan_slice_raises_as_numpy(name):
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]])
    with pytest.raises(ValueError, match="All-NaN slice encountered") as numpy_error:
        getattr(np, name)(x, axis=1)
    with pytest.raises(ValueError, match="All-NaN slice encountered") as error:
        getattr(fa, name)(fa.asarray(x), axis=1)
    assert name in str(error.value) and numpy_error.type is error.type
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        getattr(np, name)(fa.asarray(x[1:]))
    # a NaN beside -inf: the index of the first of the two, as NumPy (NaN taken as -inf)
    y = np.array([np.nan, -np.inf, np.nan], np.float32)
    assert int(getattr(fa, name)(fa.asarray(y))) == getattr(np, name)(y)


def test_where_initial_keepdims_and_dtype():
    rng = np.random.default_rng(SEED)
    x = nc.values(rng, np.float32, (6, 50))
    w = rng.random((6, 50)) < 0.7
    a = fa.asarray(x)
    for name, kw in [("nansum", dict(where=w, initial=2.5)), ("nanprod", dict(initial=2.0)),
                     ("nanmax", dict(where=w, initial=-1.0)), ("nanmin", dict(initial=0.0)),
                     ("nanmean", dict(where=w, keepdims=True)), ("nanstd", dict(where=w)),
                     ("nanvar", dict(dtype=np.float64, keepdims=True)),
                     ("nanmean", dict(dtype=np.float64)), ("nansum", dict(dtype=np.float64)),
                     ("nancumsum", dict(dtype=np.float64)), ("nanvar", dict(ddof=0, correction=1))]:
        for axis in (1, None):
            nc.check_nan_call(name, x, a, axis, f"{kw} (seed {SEED})", **kw)
    f16 = x.astype(np.float16)
    nc.check(fa.nanmean(fa.asarray(f16), axis=1).get().astype(np.float32),
             nc.numpy_of("nanmean", f16, axis=1).astype(np.float32), "nanmean float16")
    assert fa.nanmean(fa.asarray(f16)).dtype == np.float16


def test_numpy_errors():
    a = fa.asarray(np.array([[1.0, np.nan], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="'fmax' does not have an identity.*initial"):
        fa.nanmax(a, where=np.array([True, False]))
    with pytest.raises(TypeError, match="nanmean: if a is inexact, then dtype must be inexact"):
        np.nanmean(a, dtype=np.int32)
    with pytest.raises(UnsupportedOperationError, match=r"fa\.nansum with out=.*out\[\.\.\.\]"):
        np.nansum(a, out=fa.empty((), np.float64))
    with pytest.raises(UnsupportedOperationError, match=r"fa\.nancumsum with out="):
        np.nancumsum(a, out=fa.empty((2, 2), np.float64))
    with pytest.raises(ValueError, match="ddof and correction"):
        fa.nanvar(a, ddof=1, correction=1)
    with pytest.raises(UnsupportedOperationError, match="complex128"):
        fa.nanmax(a.astype(np.complex128))
    with pytest.raises(np.exceptions.AxisError):
        fa.nanmean(a, axis=2)


def test_launches_equal_the_plain_forms():
    """nancases.check_launches, and nansum over rows in one launch."""
    nc.check_launches([((300, 257), (None, 0, 1)), ((4, 5000), (1,))], SEED)
    a = fa.asarray(nc.values(np.random.default_rng(SEED), np.float32, (4, 5000), all_nan=False))
    fa.reset_stats()
    fa.nansum(a, axis=1).get()
    assert fa.stats()["launches"] == 1


def test_xarray_default_skipna_reductions():
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(SEED)
    x = nc.values(rng, np.float32, (40, 300))
    fa_da, np_da = xr.DataArray(fa.asarray(x), dims=("t", "c")), xr.DataArray(x, dims=("t", "c"))
    for what, call in [("mean()", lambda d: d.mean()), ("std()", lambda d: d.std()),
                       ("max()", lambda d: d.max()), ("sum(dim='c')", lambda d: d.sum(dim="c")),
                       ("mean(dim='t')", lambda d: d.mean(dim="t")),
                       ("min(dim='c')", lambda d: d.min(dim="c")),
                       ("median(dim='c')", lambda d: d.median(dim="c"))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got, want = call(fa_da), call(np_da)
        assert isinstance(got.data, fa.ndarray), f"xarray {what} left fusedarrays"
        nc.check(np.asarray(got.data), want.data, f"xarray {what} (seed {SEED})")


def test_dask_nanmean_of_fa_chunks_threaded():
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(SEED)
    x = nc.values(rng, np.float64, (60, 80))
    d = da.from_array(fa.asarray(x), chunks=(20, 40), asarray=False)
    with dask.config.set(scheduler="threads"):
        for axis in (0, 1, None):
            got = da.nanmean(d, axis=axis).compute()
            assert isinstance(got, fa.ndarray)
            nc.check(np.asarray(got), nc.numpy_of("nanmean", x, axis=axis),
                     f"dask nanmean axis={axis} (seed {SEED})")
        nc.check(np.asarray(da.nansum(d, axis=0).compute()), np.nansum(x, axis=0), "dask nansum")


# sim

@pytest.mark.tiers("sim")
def test_nan_reductions_on_both_cuda_schedules():
    x = nc.values(np.random.default_rng(SIM_SEED), np.float32, (4, 8))    # row 3 and column 2 NaN
    a = fa.asarray(x)
    for name in ("nanmax", "nanmean", "nanvar"):
        for axis in (1, 0):     # a block per output (rows), a thread per output (cols)
            nc.check_nan_call(name, x, a, axis, f"sim axis={axis} (seed {SIM_SEED})")
    nc.check_nan_call("nanmin", x, a, None, f"sim (seed {SIM_SEED})")
    y = nc.values(np.random.default_rng(SIM_SEED), np.float32, (4, 8), "arg", all_nan=False)
    nc.check_nan_call("nanargmax", y, fa.asarray(y), 1, f"sim (seed {SIM_SEED})")
    nc.check_nan_call("nancumsum", y, fa.asarray(y), 1, f"sim (seed {SIM_SEED})")
    # nanmax inside a row kernel: the row's NaN-started maximum beside the elementwise work
    got = (a - fa.nanmax(a, axis=1, keepdims=True)).get()
    nc.check(got, x - nc.numpy_of("nanmax", x, axis=1, keepdims=True), "row kernel")


@pytest.mark.tiers("sim")
def test_nan_quantile_and_median():
    x = nc.values(np.random.default_rng(SIM_SEED), np.float32, (4, 8))
    a = fa.asarray(x)
    nc.check(fa.nanquantile(a, [0.25, 0.5], axis=1).get(),
             nc.numpy_of("nanquantile", x, q=[0.25, 0.5], axis=1), "sim nanquantile")
    nc.check(fa.median(a, axis=0).get(), np.median(x, axis=0), "sim median")


# cuda

@pytest.mark.tiers("cuda")
def test_nan_functions_over_the_schedules_views_and_dtypes():
    nc.check_nan_functions(np.float32, (300, 257), (0, 1, None))
    nc.check_nan_functions(np.float32, (4, 5000), (1, 0))
    nc.check_nan_functions(np.float32, (30, 70), (0, 1), ("transposed", "negative"))
    nc.check_nan_functions(np.float64, (30, 70), (1, None))
    nc.check_nan_functions(np.int32, (30, 70), (0, None))


@pytest.mark.tiers("cuda")
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


@pytest.mark.tiers("cuda")
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
@pytest.mark.tiers("cuda")
def test_large_shapes(shape, axis):
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.1] = np.nan
    a = fa.asarray(x)
    for name in ("nansum", "nanmean", "nanstd", "nanmax", "nanargmin"):
        nc.check_nan_call(name, x, a, axis, f"{shape} axis={axis} (seed {SEED})")


@pytest.mark.tiers("cuda")
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


@pytest.mark.tiers("cuda")
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
