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
