"""Sorting, searchsorted and the set functions (api/sorting.py: NumPy on the host) on the cpu
backend at its default settings, against NumPy, with ties and NaNs, through views, through
NumPy's functions, and refused inside fa.fuse."""

import numpy as np
import pytest

import fusedarrays as fa

pytestmark = pytest.mark.usefixtures("cpu_backend")
SEED = 20261125


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
