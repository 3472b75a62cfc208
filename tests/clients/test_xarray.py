"""xarray on fa arrays: ``xr.DataArray(fa_array)`` reductions at their default ``skipna`` (which
call NumPy's nan-functions on float data), ``where``, ``xr.dot`` (``np.einsum``), arithmetic
broadcast by dimension names, ``isel``/``sel``, printing and ``.values``, each against the same
DataArray over a NumPy array."""

import judge
import numpy as np
import pytest

import fusedarrays as fa

xr = pytest.importorskip("xarray")

SEED = 20261130
X = judge.data(SEED, spread=False)                         # (200, 12) float64
COORDS = {"t": np.arange(200), "f": np.arange(12) * 10}


def both(x: np.ndarray, dims=("t", "f"), coords=COORDS):
    """The same DataArray over a NumPy array and over an fa array."""
    return (xr.DataArray(x, dims=dims, coords=coords),
            xr.DataArray(fa.asarray(x), dims=dims, coords=coords))


def same(call, what: str, x: np.ndarray = X, **judging) -> None:
    """``call(DataArray)`` over fa matches it over NumPy: the data (an fa array inside),
    the dims and the coordinates."""
    want_da, got_da = both(x)
    want, got = call(want_da), call(got_da)
    label = f"{what} (seed {SEED})"
    if isinstance(want, xr.DataArray):
        assert isinstance(got, xr.DataArray), f"{label}: returned {type(got).__name__}"
        assert got.dims == want.dims, f"{label}: dims {got.dims} != {want.dims}"
        xr.testing.assert_identical(got.coords.to_dataset(), want.coords.to_dataset())
        got, want = got.data, want.data
    judge.check(got, want, label, **judging)


@pytest.mark.parametrize("name", ["mean", "sum", "std", "var", "max", "min", "median", "prod"])
def test_reduction_at_default_skipna(name):
    same(lambda a: getattr(a, name)("t"), f"DataArray.{name}('t')")


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_reductions_of_other_dtypes(dtype):
    x = (X * 10).astype(dtype)
    for name in ("mean", "max"):
        same(lambda a, name=name: getattr(a, name)("t"), f"DataArray.{name}('t') on {dtype}", x)


def test_reductions_over_both_dims_and_argmax():
    same(lambda a: a.mean(), "DataArray.mean()")
    same(lambda a: a.argmax("f"), "DataArray.argmax('f')")
    same(lambda a: a.cumsum("t"), "DataArray.cumsum('t')")


def test_reduction_skips_nan():
    x = X.copy()
    x[np.random.default_rng(SEED).random(x.shape) < 0.1] = np.nan
    same(lambda a: a.mean("t"), "DataArray.mean('t') over NaNs", x)
    same(lambda a: a.max("f"), "DataArray.max('f') over NaNs", x)
    same(lambda a: a.std("t", skipna=False), "DataArray.std('t', skipna=False) over NaNs", x)


def test_quantile():
    same(lambda a: a.quantile([0.1, 0.5, 0.9], dim="t"), "DataArray.quantile([.1, .5, .9])")


def test_where():
    same(lambda a: a.where(a > 0), "DataArray.where(a > 0)")
    same(lambda a: a.where(a > 0, -a), "DataArray.where(a > 0, -a)")
    same(lambda a: xr.where(a > 0.5, a, 0.5), "xr.where(a > 0.5, a, 0.5)")


def test_dot():
    same(lambda a: xr.dot(a, a * 2, dim="f"), "xr.dot(a, 2a, dim='f')")
    same(lambda a: xr.dot(a, a, dim=...), "xr.dot(a, a, dim=...)")


def test_arithmetic_broadcasts_by_dims():
    w = np.random.default_rng(SEED + 1).standard_normal(12)

    def call(a):
        weights = xr.DataArray(fa.asarray(w) if isinstance(a.data, fa.ndarray) else w,
                               dims=("f",), coords={"f": COORDS["f"]})
        return (a - a.mean("t")) * weights + a.T
    same(call, "(a - a.mean('t')) * w[f] + a.T")


def test_isel_and_sel():
    same(lambda a: a.isel(t=slice(150, 10, -7), f=[1, 5, 7]), "isel(t=150:10:-7, f=[1, 5, 7])")
    same(lambda a: a.sel(f=[20, 110], t=slice(30, 60)), "sel(f=[20, 110], t=30:60)")
    same(lambda a: a[::-3, 2], "a[::-3, 2]")


def test_repr_shows_values():
    x = X[:4, :3]
    want_da, got_da = both(x, coords={"t": COORDS["t"][:4]})
    text = repr(got_da)
    values = np.array2string(x, separator=", ", prefix="fa.ndarray(")
    assert "fa.ndarray(" + values in text, f"repr(a):\n{text}\nwants\n{values}"
    assert text.split("Coordinates:")[1] == repr(want_da).split("Coordinates:")[1], text
    assert "fa.ndarray" in got_da._repr_html_()
    # a pending result prints its graph, not values, as xarray prints a dask array: fa's repr
    # never evaluates (STYLE 15); it still names the operation, dtype and shape
    pending = got_da * 2
    text = repr(pending)
    assert "pending multiply" in text and "shape=(4, 3)" in text, text
    assert pending.data.pending, "repr(a * 2) evaluated a * 2"
    np.testing.assert_array_equal(pending.values, x * 2)


def test_values_and_to_numpy():
    want_da, got_da = both(X)
    for got, name in ((got_da.values, ".values"), (got_da.to_numpy(), ".to_numpy()"),
                      (np.asarray(got_da), "np.asarray")):
        assert type(got) is np.ndarray, f"DataArray{name}: {type(got).__name__}"
        np.testing.assert_array_equal(got, want_da.values, err_msg=f"DataArray{name}")
