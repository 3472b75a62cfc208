"""Sorting, searchsorted, the set functions, bincount and histogram against NumPy, with ties and
NaNs, through views, on every tier.

- cpu at its default settings (api/sorting.py: NumPy on the host): through NumPy's functions,
  and refused inside fa.fuse.
- sim: NumPy's kernels on views of the simulator's host memory (api/libraries.py), with the
  descending order's mapping and a result read by fused work run as simulated kernels; small
  shapes (~80 ms per 1024 elements).
- cuda: Sorting, the set functions, bincount and histogram on the cuda backend (CuPy's kernels on
  fusedarrays' memory, api/sorting.py and api/counting.py) against NumPy: a 2^20 float32 sort with
  NaNs of both signs and -0.0 (CUB's radix sort orders keys by their bits), stable orders with many
  ties, descending, integer, bool, float16 and complex dtypes, views, axis 0, pending inputs and
  results read by later fused work, and the library's view of fa's memory (no copy).
"""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api.libraries import borrowed

SEED = 20261125
SIM_SEED = 20261128
CUDA_SEED = 20261127


def _ties_and_nans(rng, shape) -> np.ndarray:
    host = rng.integers(0, 5, shape).astype(np.float32)     # many equal elements
    host.reshape(-1)[rng.choice(host.size, 3, replace=False)] = np.nan
    return host


def _stable_descending(row: np.ndarray) -> list:
    """The standard's descending stable order of one row, by a Python sort (NaN first, as
    the reversed ascending order puts it)."""
    def key(i):
        return (0, 0.0, i) if np.isnan(row[i]) else (1, -float(row[i]), i)
    return sorted(range(len(row)), key=key)


def test_sort_and_argsort_match_numpy_along_every_axis_of_views():
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    base = _ties_and_nans(rng, (6, 9, 5))
    for name, view in {"base": lambda a: a, "reversed": lambda a: a[::-1, :, ::-2],
                       "transposed": lambda a: a.transpose(2, 0, 1)}.items():
        host, x = view(base), view(fa.asarray(base))
        for axis in (0, 1, -1):
            what = f"{name} axis={axis} (seed {SEED})"
            np.testing.assert_array_equal(fa.sort(x, axis=axis).get(), np.sort(host, axis=axis),
                                          err_msg=what)
            np.testing.assert_array_equal(fa.sort(x, axis=axis, descending=True).get(),
                                          np.flip(np.sort(host, axis=axis), axis), err_msg=what)
            np.testing.assert_array_equal(fa.argsort(x, axis=axis).get(),
                                          np.argsort(host, axis=axis, kind="stable"),
                                          err_msg=what)
            down = np.moveaxis(fa.argsort(x, axis=axis, descending=True).get(), axis, -1)
            rows = np.moveaxis(host, axis, -1).reshape(-1, host.shape[axis])
            for row, got in zip(rows, down.reshape(-1, host.shape[axis])):
                assert got.tolist() == _stable_descending(row), what
    assert fa.argsort(fa.asarray(base)).dtype == np.int64


def test_numpy_functions_dispatch_and_keep_numpys_order():
    rng = np.random.default_rng(SEED + 1)
    host = _ties_and_nans(rng, (7, 8))
    x = fa.asarray(host)
    # NumPy's default kind, its order of equal elements included
    for got, want in [(np.sort(x), np.sort(host)), (np.sort(x, axis=None), np.sort(host, None)),
                      (np.argsort(x, axis=0), np.argsort(host, axis=0)),
                      (np.argsort(x, kind="stable"), np.argsort(host, kind="stable"))]:
        assert isinstance(got, fa.ndarray)
        np.testing.assert_array_equal(got.get(), want)
    with pytest.raises(fa.UnsupportedOperationError, match="kind='heapsort'"):
        np.sort(x, kind="heapsort")


def test_searchsorted_matches_numpy():
    rng = np.random.default_rng(SEED + 2)
    table = np.sort(rng.integers(0, 20, 30)).astype(np.float32)   # repeated values
    values = rng.integers(-2, 22, (4, 5)).astype(np.float32)
    shuffled = rng.permutation(table)
    sorter = np.argsort(shuffled, kind="stable")
    for side in ("left", "right"):
        want = np.searchsorted(table, values, side=side)
        for got in (fa.searchsorted(fa.asarray(table), fa.asarray(values), side=side),
                    np.searchsorted(fa.asarray(table), values, side=side),
                    fa.searchsorted(fa.asarray(shuffled), values, side=side,
                                    sorter=fa.asarray(sorter))):
            assert got.dtype == np.int64 and got.shape == want.shape
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{side} (seed {SEED + 2})")
    with pytest.raises(ValueError, match="side must be"):
        fa.searchsorted(fa.asarray(table), values, side="middle")
    with pytest.raises(ValueError, match="x1 must be 1-d"):
        fa.searchsorted(fa.asarray(table.reshape(5, 6)), values)


def test_set_functions_match_numpy_with_nans_distinct():
    rng = np.random.default_rng(SEED + 3)
    host = _ties_and_nans(rng, (5, 6))
    x = fa.asarray(host)[::-1]
    flipped = host[::-1]
    everything = fa.unique_all(x)
    want = np.unique_all(flipped)
    assert everything._fields == ("values", "indices", "inverse_indices", "counts")
    for got, expected in zip(everything, want):
        np.testing.assert_array_equal(got.get(), expected, err_msg=f"seed {SEED + 3}")
    assert everything.inverse_indices.shape == flipped.shape
    assert np.isnan(fa.unique_values(x).get()).sum() == 3       # each NaN distinct
    counts = fa.unique_counts(x)
    np.testing.assert_array_equal(counts.counts.get(), np.unique_counts(flipped).counts)
    inverse = fa.unique_inverse(x)
    np.testing.assert_array_equal(inverse.values.get()[inverse.inverse_indices.get()],
                                  flipped)
    np.testing.assert_array_equal(np.unique_values(x).get(), np.unique_values(flipped))


def test_refused_inside_fuse_and_on_0d():
    @fa.fuse
    def sorted_twice(x):
        return fa.sort(x) * 2

    with pytest.raises(fa.TracerConversionError, match="fa.sort"):
        sorted_twice(fa.asarray(np.arange(4.0)))
    with pytest.raises(ValueError, match="0-d"):
        fa.sort(fa.asarray(np.float32(1)))
    with pytest.raises(np.exceptions.AxisError):
        fa.argsort(fa.asarray(np.arange(4.0)), axis=1)


def test_dtypes_zero_signs_and_descending_ties():
    rng = np.random.default_rng(SEED + 4)
    print(f"seed {SEED + 4}")
    for dt in (np.int8, np.uint16, np.int64, np.float64, np.bool_):
        host = rng.integers(0, 4, (5, 40)).astype(dt)       # ties in every row
        x = fa.asarray(host)
        for axis in (0, 1):
            got = fa.argsort(x, axis=axis)
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got.get(), np.argsort(host, axis, kind="stable"),
                                          err_msg=f"{dt.__name__} axis={axis}")
            np.testing.assert_array_equal(fa.sort(x, axis=axis, descending=True).get(),
                                          np.flip(np.sort(host, axis), axis))
        down = fa.argsort(x[::-1].T, descending=True).get()
        for row, got in zip(host[::-1].T, down):
            assert got.tolist() == _stable_descending(row.astype(np.float64)), dt
    # -0.0 and 0.0 are equal keys: a stable sort keeps their order, as NumPy's does
    zeros = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -1.0], np.float32)
    np.testing.assert_array_equal(fa.argsort(fa.asarray(zeros)).get(),
                                  np.argsort(zeros, kind="stable"))
    assert np.signbit(fa.sort(fa.asarray(zeros)).get()).tolist() == np.signbit(
        np.sort(zeros, kind="stable")).tolist()


def test_pending_inputs_and_results_feeding_fused_work():
    rng = np.random.default_rng(SEED + 5)
    host = rng.standard_normal((6, 50)).astype(np.float32)
    x = fa.asarray(host)
    got = fa.sort(x * 2 - 1, axis=0) + 1                # sorted pending work, fused after
    np.testing.assert_allclose(got.get(), np.sort(host * 2 - 1, axis=0) + 1, rtol=1e-6)
    order = fa.argsort(-x, descending=True)             # pending: n - 1 - reversed order
    assert order.pending
    np.testing.assert_array_equal(fa.take_along_axis(x, order, axis=1).get(),
                                  np.take_along_axis(host, np.argsort(host, axis=1), axis=1))
    empty = fa.asarray(np.zeros((3, 0), np.float32))
    assert fa.sort(empty).shape == (3, 0) and fa.argsort(empty).dtype == np.int64


def test_np_unique_matches_numpy_with_every_option():
    rng = np.random.default_rng(SEED + 6)
    host = _ties_and_nans(rng, (6, 7))
    x = fa.asarray(host)[:, ::-1]
    flipped = host[:, ::-1]
    for kw in ({}, {"return_index": True}, {"return_inverse": True},
               {"return_index": True, "return_inverse": True, "return_counts": True},
               {"return_counts": True, "equal_nan": False}, {"sorted": False}):
        if "sorted" in kw and np.lib.NumpyVersion(np.__version__) < "2.3.0":
            continue
        got, want = np.unique(x, **kw), np.unique(flipped, **kw)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert len(got) == len(want), kw
        for g, w in zip(got, want):
            assert isinstance(g, fa.ndarray) and g.dtype == w.dtype and g.shape == w.shape, kw
            np.testing.assert_array_equal(g.get(), w, err_msg=f"{kw} (seed {SEED + 6})")
    assert fa.unique(x).size == np.unique(flipped).size       # NaNs one value by default
    ints = rng.integers(-3, 3, 30).astype(np.int16)
    values, inverse = np.unique(fa.asarray(ints), return_inverse=True)
    np.testing.assert_array_equal(values.get()[inverse.get()], ints)
    with pytest.raises(fa.UnsupportedOperationError, match=r"np.unique with axis=0 .*axis=None"):
        np.unique(x, axis=0)


def test_bincount_matches_numpy():
    rng = np.random.default_rng(SEED + 7)
    print(f"seed {SEED + 7}")
    ints = rng.integers(0, 9, 200)
    weights = rng.standard_normal(200).astype(np.float32)
    for dt in (np.int64, np.uint8, np.bool_):
        host = ints.astype(dt)
        x = fa.asarray(host)
        for kw in ({}, {"minlength": 20}, {"weights": weights}, {"weights": ints % 3}):
            got = np.bincount(x, **{k: fa.asarray(v) if k == "weights" else v
                                    for k, v in kw.items()})
            want = np.bincount(host, **kw)
            assert got.dtype == want.dtype and got.shape == want.shape, (dt, kw)
            np.testing.assert_allclose(got.get(), want, rtol=1e-6, err_msg=f"{dt} {kw}")
    np.testing.assert_array_equal(fa.bincount(fa.asarray(ints[::-3]), minlength=2).get(),
                                  np.bincount(ints[::-3]))
    with pytest.raises(ValueError, match="bincount: x must be 1-d, got 2-d"):
        fa.bincount(fa.asarray(ints.reshape(10, 20)))
    with pytest.raises(fa.DTypeError, match=r"bincount: .*integers, got float32.*astype"):
        np.bincount(fa.asarray(weights))
    with pytest.raises(ValueError, match=r"weights of shape \(3,\) for x of shape \(200,\)"):
        fa.bincount(fa.asarray(ints), weights=fa.asarray(weights[:3]))
    with pytest.raises(ValueError, match="negative"):
        fa.bincount(fa.asarray(ints - 1)).get()


def test_histogram_matches_numpy():
    rng = np.random.default_rng(SEED + 8)
    print(f"seed {SEED + 8}")
    host = rng.standard_normal((20, 30)).astype(np.float32)
    weights = rng.random((20, 30)).astype(np.float32)
    x = fa.asarray(host)
    cases = [{}, {"bins": 7}, {"bins": 5, "range": (-1.0, 1.5)},
             {"bins": np.array([-3.0, -0.5, 0.0, 0.25, 3.0])}, {"bins": [-1, 0, 2]},
             {"weights": weights}, {"weights": (weights * 10).astype(np.int32), "bins": 4},
             {"density": True, "bins": 6}, {"density": True, "weights": weights}]
    for kw in cases:
        args = {k: fa.asarray(v) if k == "weights" else v for k, v in kw.items()}
        (counts, edges), (want, want_edges) = np.histogram(x, **args), np.histogram(host, **kw)
        assert counts.dtype == want.dtype and edges.dtype == want_edges.dtype, kw
        np.testing.assert_allclose(counts.get(), want, rtol=1e-5, err_msg=f"{kw} ({SEED + 8})")
        np.testing.assert_array_equal(edges.get(), want_edges, err_msg=str(kw))
    ints = rng.integers(-5, 5, 100)
    for got, want in zip(fa.histogram(fa.asarray(ints), bins=4), np.histogram(ints, bins=4)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want)
    nans = host.copy()
    nans[::3, 1] = np.nan                                     # NaN never counts
    for kw in ({"range": (-2, 2)}, {"bins": np.array([-9.0, 0.0, 9.0])}):
        (counts, _), (want, _) = fa.histogram(fa.asarray(nans), **kw), np.histogram(nans, **kw)
        np.testing.assert_array_equal(counts.get(), want, err_msg=str(kw))
    with pytest.raises(ValueError, match=r"autodetected range of \[nan, nan\] is not finite"):
        fa.histogram(fa.asarray(nans))
    with pytest.raises(fa.UnsupportedOperationError, match="np.histogram with bins='auto'"):
        np.histogram(x, bins="auto")
    with pytest.raises(fa.DTypeError, match="histogram: complex64 values have no order"):
        fa.histogram(fa.asarray(host.astype(np.complex64)))
    with pytest.raises(ValueError, match=r"weights of shape \(30,\) for a of shape \(20, 30\)"):
        fa.histogram(x, weights=fa.asarray(weights[0]))


def test_errors_name_the_function_inside_fuse():
    @fa.fuse
    def counted(x):
        return fa.bincount(x) + 1

    @fa.fuse
    def distinct(x):
        return fa.unique_values(x) * 2

    ints = fa.asarray(np.array([1, 2, 2]))
    with pytest.raises(fa.TracerConversionError, match="fa.bincount"):
        counted(ints)
    with pytest.raises(fa.TracerConversionError, match="fa.unique_values"):
        distinct(ints)


# sim

@pytest.mark.tiers("sim")
def test_sorting_and_counting_on_the_simulator():
    rng = np.random.default_rng(SIM_SEED)
    print(f"seed {SIM_SEED}")
    host = rng.integers(0, 4, (3, 8)).astype(np.float32)
    host[1, 2] = np.nan
    x = fa.asarray(host)[:, ::-1]
    h = host[:, ::-1]
    np.testing.assert_array_equal(fa.sort(x * 2, axis=0).get(), np.sort(h * 2, axis=0))
    down = fa.argsort(x, descending=True).get()
    want = h.shape[1] - 1 - np.flip(np.argsort(h[:, ::-1], kind="stable"), 1)
    np.testing.assert_array_equal(down, want)
    for got, expected in zip(fa.unique_all(x), np.unique_all(h)):
        np.testing.assert_array_equal(got.get(), expected)
    ints = rng.integers(0, 6, 40)
    np.testing.assert_array_equal(np.bincount(fa.asarray(ints)).get(), np.bincount(ints))
    counts, edges = np.histogram(x, bins=3, range=(0, 3))
    np.testing.assert_array_equal(counts.get(), np.histogram(h, bins=3, range=(0, 3))[0])
    np.testing.assert_array_equal((fa.sort(x) - 1).get(), np.sort(h) - 1)   # fused after


# cuda

@pytest.fixture
def cupy():
    return pytest.importorskip("cupy", reason="the cuda route of sorting is CuPy's (cuda-libs)")


@pytest.fixture(autouse=True)
def _cuda_route_needs_cupy(tier):
    if tier == "cuda":
        pytest.importorskip("cupy", reason="the cuda route of sorting is CuPy's (cuda-libs)")


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


@pytest.mark.tiers("cuda")
def test_large_float32_sort_and_argsort_with_signed_nans_and_zeros():
    rng = np.random.default_rng(CUDA_SEED)
    print(f"seed {CUDA_SEED}")
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
@pytest.mark.tiers("cuda")
def test_stable_orders_with_many_ties_every_dtype(dtype):
    rng = np.random.default_rng(CUDA_SEED + 1)
    host = rng.integers(0, 3, (4, 5000)).astype(dtype)
    x = fa.asarray(host)
    for axis in (0, 1):
        what = f"{np.dtype(dtype).name} axis={axis} (seed {CUDA_SEED + 1})"
        np.testing.assert_array_equal(fa.sort(x, axis=axis).get(), np.sort(host, axis),
                                      err_msg=what)
        np.testing.assert_array_equal(fa.argsort(x, axis=axis).get(),
                                      np.argsort(host, axis, kind="stable"), err_msg=what)
        flipped = np.flip(host, axis)
        want = host.shape[axis] - 1 - np.flip(np.argsort(flipped, axis, kind="stable"), axis)
        np.testing.assert_array_equal(fa.argsort(x, axis=axis, descending=True).get(), want,
                                      err_msg=what)


@pytest.mark.tiers("cuda")
def test_views_axes_complex_and_fused_neighbours():
    rng = np.random.default_rng(CUDA_SEED + 2)
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


@pytest.mark.tiers("cuda")
def test_the_library_sorts_fa_memory_in_place_without_a_copy(cupy):
    host = np.array([3.0, 1.0, 2.0], np.float32)
    x = fa.asarray(host) + 0          # a buffer of its own
    x.compute()
    with borrowed("sort", x) as (xp, (h,)):
        assert xp is cupy and h.data.ptr == x.__cuda_array_interface__["data"][0]
        h.sort()
    assert x.get().tolist() == [1.0, 2.0, 3.0]
    assert fa.sort(fa.asarray(np.zeros((2, 0), np.float32))).shape == (2, 0)


@pytest.mark.tiers("cuda")
def test_searchsorted_and_set_functions():
    rng = np.random.default_rng(CUDA_SEED + 3)
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


@pytest.mark.tiers("cuda")
def test_bincount_and_histogram():
    rng = np.random.default_rng(CUDA_SEED + 4)
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
