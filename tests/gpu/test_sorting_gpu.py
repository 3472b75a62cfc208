"""Sorting, the set functions, bincount and histogram on the cuda backend (CuPy's kernels on
fusedarrays' memory, api/sorting.py and api/counting.py) against NumPy: a 2^20 float32 sort with
NaNs of both signs and -0.0 (CUB's radix sort orders keys by their bits), stable orders with
many ties, descending, integer, bool, float16 and complex dtypes, views, axis 0, pending inputs
and results read by later fused work, and the library's view of fa's memory (no copy)."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.api.libraries import borrowed

cupy = pytest.importorskip("cupy", reason="the cuda route of sorting is CuPy's (cuda-libs)")
SEED = 20261127


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def _signed_nans(rng, shape, dtype=np.float32) -> np.ndarray:
    host = rng.standard_normal(shape).astype(dtype)
    flat = host.reshape(-1)
    at = rng.choice(flat.size, 9, replace=False)
    flat[at[:3]], flat[at[3:6]], flat[at[6:]] = np.nan, -np.nan, -0.0
    flat[rng.choice(flat.size, flat.size // 4)] = 0.0      # ties, and zeros of both signs
    return host


def _assert_sorted_like_numpy(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    np.testing.assert_array_equal(got, want, err_msg=what)


def test_large_float32_sort_and_argsort_with_signed_nans_and_zeros():
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    host = _signed_nans(rng, 1 << 20)
    x = fa.asarray(host)
    _assert_sorted_like_numpy(fa.sort(x).get(), np.sort(host), "sort 2^20")
    np.testing.assert_array_equal(fa.argsort(x).get(), np.argsort(host, kind="stable"))
    _assert_sorted_like_numpy(fa.sort(x, descending=True).get(), np.sort(host)[::-1],
                              "descending")
    down = fa.argsort(x, descending=True).get()
    want = host.size - 1 - np.argsort(host[::-1], kind="stable")[::-1]
    np.testing.assert_array_equal(down, want)
    _assert_sorted_like_numpy(fa.sort(-x).get(), np.sort(-host), "sort of -x (NaN signs flip)")


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint64, np.bool_, np.float16,
                                   np.float64])
def test_stable_orders_with_many_ties_every_dtype(dtype):
    rng = np.random.default_rng(SEED + 1)
    host = rng.integers(0, 3, (4, 5000)).astype(dtype)
    x = fa.asarray(host)
    for axis in (0, 1):
        what = f"{np.dtype(dtype).name} axis={axis} (seed {SEED + 1})"
        np.testing.assert_array_equal(fa.sort(x, axis=axis).get(), np.sort(host, axis),
                                      err_msg=what)
        np.testing.assert_array_equal(fa.argsort(x, axis=axis).get(),
                                      np.argsort(host, axis, kind="stable"), err_msg=what)
        flipped = np.flip(host, axis)
        want = host.shape[axis] - 1 - np.flip(np.argsort(flipped, axis, kind="stable"), axis)
        np.testing.assert_array_equal(fa.argsort(x, axis=axis, descending=True).get(), want,
                                      err_msg=what)


def test_views_axes_complex_and_fused_neighbours():
    rng = np.random.default_rng(SEED + 2)
    host = _signed_nans(rng, (300, 257))
    x = fa.asarray(host)
    for name, h, v in (("transposed", host.T, x.T), ("negative steps", host[::-3, ::-1],
                                                     x[::-3, ::-1])):
        for axis in (0, 1):
            what = f"{name} axis={axis}"
            _assert_sorted_like_numpy(fa.sort(v, axis=axis).get(), np.sort(h, axis), what)
            np.testing.assert_array_equal(fa.argsort(v, axis=axis).get(),
                                          np.argsort(h, axis, kind="stable"), err_msg=what)
    # a pending input computed in the sort's own copy, results read by fused work after it
    got = fa.sort(x * 2 + 1, axis=0)[::2] * 3 - 1
    want = np.sort(host * 2 + 1, axis=0)[::2] * 3 - 1
    # the reader's s * 3 - 1 is one fused multiply-add on the GPU (one rounding, NumPy's two)
    np.testing.assert_array_equal(np.isnan(got.get()), np.isnan(want), err_msg="fused")
    np.testing.assert_allclose(got.get(), want, rtol=2e-7, atol=2e-6, err_msg="fused")
    order = fa.argsort(x, axis=1)
    np.testing.assert_array_equal(fa.take_along_axis(x, order, axis=1).get(),
                                  np.sort(host, axis=1))
    z = (rng.standard_normal(500) + 1j * rng.integers(0, 3, 500)).astype(np.complex64)
    z[::50] = complex(np.nan, 1)
    np.testing.assert_array_equal(fa.sort(fa.asarray(z)).get(), np.sort(z))


def test_the_library_sorts_fa_memory_in_place_without_a_copy():
    host = np.array([3.0, 1.0, 2.0], np.float32)
    x = fa.asarray(host) + 0          # a buffer of its own
    x.compute()
    with borrowed("sort", x) as (xp, (h,)):
        assert xp is cupy and h.data.ptr == x.__cuda_array_interface__["data"][0]
        h.sort()
    assert x.get().tolist() == [1.0, 2.0, 3.0]
    assert fa.sort(fa.asarray(np.zeros((2, 0), np.float32))).shape == (2, 0)


def test_searchsorted_and_set_functions():
    rng = np.random.default_rng(SEED + 3)
    table = np.sort(_signed_nans(rng, 1000))
    values = _signed_nans(rng, (20, 30)).astype(np.float64)
    shuffled = rng.permutation(table)
    for side in ("left", "right"):
        want = np.searchsorted(table, values, side=side)
        for got in (fa.searchsorted(fa.asarray(table), fa.asarray(values), side=side),
                    fa.searchsorted(fa.asarray(shuffled), values, side=side,
                                    sorter=fa.argsort(fa.asarray(shuffled)))):
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got.get(), want, err_msg=side)
    assert int(fa.searchsorted(fa.asarray(table), 0.5).get()) == np.searchsorted(table, 0.5)
    host = rng.integers(0, 7, (40, 50)).astype(np.float32)
    host[::9, 3], host[::11, 4] = np.nan, -np.nan
    x = fa.asarray(host)[:, ::-1]
    flipped = host[:, ::-1]
    for got, want in zip(fa.unique_all(x), np.unique_all(flipped)):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want)
    for kw in ({"return_index": True, "return_inverse": True, "return_counts": True},
               {"equal_nan": False, "return_counts": True}):
        for got, want in zip(np.unique(x, **kw), np.unique(flipped, **kw)):
            assert got.shape == want.shape and got.dtype == want.dtype, kw
            np.testing.assert_array_equal(got.get(), want, err_msg=str(kw))
    ints = rng.integers(-5, 5, 1 << 16).astype(np.int32)
    np.testing.assert_array_equal(fa.unique_counts(fa.asarray(ints)).counts.get(),
                                  np.unique_counts(ints).counts)


def test_bincount_and_histogram():
    rng = np.random.default_rng(SEED + 4)
    ints = rng.integers(0, 100, 1 << 18)
    weights = rng.random(1 << 18).astype(np.float32)
    x = fa.asarray(ints)
    for kw in ({}, {"minlength": 300}, {"weights": weights}):
        got = np.bincount(x, **{k: fa.asarray(v) if k == "weights" else v
                                for k, v in kw.items()})
        want = np.bincount(ints, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape, kw
        np.testing.assert_allclose(got.get(), want, rtol=1e-9)
    host = rng.standard_normal(1 << 18).astype(np.float32)
    nans = host.copy()
    nans[::17] = np.nan
    cases = [(host, {}), (host, {"bins": 33}), (nans, {"range": (-2.0, 2.0), "bins": 40}),
             (nans, {"bins": np.array([-9.0, -1.0, 0.0, 0.5, 9.0])}),
             (host, {"weights": weights, "bins": 20}),
             (nans, {"weights": weights, "range": (-1, 1), "density": True}),
             (ints, {"bins": 7})]
    for data, kw in cases:
        args = {k: fa.asarray(v) if k == "weights" else v for k, v in kw.items()}
        (counts, edges), (want, want_edges) = fa.histogram(fa.asarray(data), **args), \
            np.histogram(data, **kw)
        assert counts.dtype == want.dtype and edges.dtype == want_edges.dtype, kw
        np.testing.assert_allclose(counts.get(), want, rtol=1e-5, err_msg=str(kw))
        np.testing.assert_array_equal(edges.get(), want_edges, err_msg=str(kw))
    with pytest.raises(ValueError, match="autodetected range"):
        fa.histogram(fa.asarray(nans))
