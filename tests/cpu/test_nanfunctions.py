"""The nan-functions on the cpu backend against NumPy (tests/nancases.py): every one × float32,
float64 and int32 over each axis of shapes that reach the reduction schedules, through views;
all-NaN slices, ddof past the count, where= and initial=, NumPy's errors; launches equal to the
plain forms'; and through the clients: xarray's default-skipna reductions and dask's nanmean."""

import warnings

import nancases as nc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.errors import UnsupportedOperationError

pytestmark = pytest.mark.usefixtures("cpu_backend")
SEED = 20261128


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
