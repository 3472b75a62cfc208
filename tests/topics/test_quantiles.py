"""The quantiles on the cpu backend against NumPy (tests/nancases.py): median, percentile,
quantile and their nan forms with NumPy's thirteen methods, q as a number, a list and a 2-d
array, each axis (and a tuple of axes) of shapes that reach the reduction schedules, views,
float32/float64/int32/float16, NaN and all-NaN slices, keepdims, NumPy's dtypes and errors,
and the launches after the sort (one kernel; the nan forms' count adds one)."""

import nancases as nc
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.errors import DTypeError, UnsupportedOperationError

SEED = 32


def test_every_method_each_axis_and_q():
    nc.check_quantiles(np.float32, (30, 41), (None, 0, 1))


def test_schedule_shapes_and_views():
    nc.check_quantiles(np.float32, (300, 257), (0, 1, None), methods=("linear", "inverted_cdf"))
    nc.check_quantiles(np.float32, (4, 5000), (1, 0), methods=("linear",), qs=([0.1, 0.9],))
    nc.check_quantiles(np.float32, (30, 41), (0, 1), methods=("linear", "nearest"),
                       layouts=("transposed", "negative"), qs=(0.4,))


def test_dtypes_as_numpy():
    nc.check_quantiles(np.float64, (30, 41), (1, None), qs=([0.1, 0.7],),
                       methods=("linear", "averaged_inverted_cdf", "closest_observation"))
    nc.check_quantiles(np.int32, (30, 41), (0, None), qs=(0.3, 1),
                       methods=("linear", "inverted_cdf", "lower"))
    x = nc.values(np.random.default_rng(SEED), np.float32, (6, 7))
    a = fa.asarray(x)
    for q in (0.5, np.float32(0.5), [0.5], np.array([0.5], np.float32), [0, 1]):
        for name in ("quantile", "nanquantile"):
            nc.check(getattr(fa, name)(a, q, axis=1).get(), nc.numpy_of(name, x, q=q, axis=1),
                     f"{name} q={q!r}")


def test_percentile_q_shapes_keepdims_and_tuple_axes():
    rng = np.random.default_rng(SEED)
    x = nc.values(rng, np.float32, (5, 6, 7))
    x[1, :, 2] = np.nan
    a = fa.asarray(x)
    q = np.array([[10.0, 50.0], [90.0, 100.0]])
    for name in ("percentile", "nanpercentile"):
        for axis, keepdims in [((0, 2), False), ((0, 2), True), (1, True), (None, True),
                               (-1, False)]:
            what = f"{name} q{q.shape} axis={axis} keepdims={keepdims} (seed {SEED})"
            # q's shape first, as np.percentile; np.nanpercentile of a 2-d q along axes moves
            # only q's first axis to the front (its apply_along_axis): compared over q.ravel()
            flat = nc.numpy_of(name, x, q=q.ravel(), axis=axis, keepdims=keepdims)
            want = flat.reshape(q.shape + flat.shape[1:])
            nc.check(getattr(fa, name)(a, q, axis=axis, keepdims=keepdims).get(), want, what)
            nc.check(np.asarray(getattr(np, name)(a, q, axis=axis, keepdims=keepdims)),
                     want, f"np.{what}")
        nc.check(getattr(fa, name)(a, 25.0, method="weibull").get(),
                 nc.numpy_of(name, x, q=25.0, method="weibull"), f"{name} all")


def test_median_and_nanmedian():
    rng = np.random.default_rng(SEED)
    for dtype, shape in [(np.float32, (300, 257)), (np.float64, (30, 40)),
                         (np.int32, (30, 41)), (np.float16, (9, 10))]:
        x = nc.values(rng, dtype, shape)
        for layout in ("contiguous", "negative") if dtype == np.float32 else ("contiguous",):
            a = nc.view(x, layout, fa)
            for axis in (None, 0, 1):
                for name in ("median", "nanmedian"):
                    for keepdims in (False, True) if axis == 1 else (False,):
                        what = f"{name} {np.dtype(dtype)} {shape} {layout} axis={axis} " \
                               f"keepdims={keepdims} (seed {SEED})"
                        want = nc.numpy_of(name, x, axis=axis, keepdims=keepdims)
                        got = getattr(fa, name)(a, axis=axis, keepdims=keepdims).get()
                        if dtype == np.float16:
                            assert got.dtype == want.dtype, what
                            got, want = got.astype(np.float32), want.astype(np.float32)
                        nc.check(got, want, what)
    assert np.median(fa.asarray(np.array([1, 2, 3, 4]))).dtype == np.float64


def test_pending_after_the_sort_and_launches():
    """The sort is the only step before the result: the positions, the gathers and the
    interpolation are one kernel when the result is asked for; the nan forms' count one more."""
    x = nc.values(np.random.default_rng(SEED), np.float32, (300, 257))
    a = fa.asarray(x)
    for name, args, launches in [("quantile", (0.3,), 1), ("percentile", ([5, 95],), 1),
                                 ("median", (), 1), ("nanquantile", (0.3,), 2),
                                 ("nanpercentile", ([5, 95],), 2), ("nanmedian", (), 2)]:
        for axis in (0, 1):
            r = getattr(fa, name)(a, *args, axis=axis)
            assert not r._resolved().is_leaf, f"{name} axis={axis} computed before asked"
            fa.reset_stats()
            r.get()
            assert fa.stats()["launches"] == launches, f"{name} axis={axis}: {fa.stats()}"


def test_errors_name_the_function_and_what_to_do():
    a = fa.asarray(np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\].*quantile"):
        fa.quantile(a, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        np.nanpercentile(a, [-1, 50])
    with pytest.raises(ValueError, match="'cubic' is not a valid method.*linear"):
        np.quantile(a, 0.5, method="cubic")
    with pytest.raises(UnsupportedOperationError, match="weights=.*inverted_cdf.*x.get()"):
        np.quantile(a, 0.5, weights=np.ones(12), method="inverted_cdf")
    with pytest.raises(UnsupportedOperationError, match=r"fa\.median with out=.*out\[\.\.\.\]"):
        np.median(a, out=fa.empty((), np.float64))
    with pytest.raises(DTypeError, match="complex128: a must be an array of real numbers"):
        fa.median(a.astype(np.complex128))
    with pytest.raises(ValueError, match="no values to take quantiles of"):
        fa.quantile(a[:, :0], 0.5, axis=1)
    with pytest.raises(np.exceptions.AxisError):
        fa.nanmedian(a, axis=2)


def test_inside_fuse_a_quantile_says_to_compute_it_outside():
    @fa.fuse
    def centre(p):
        p -= np.median(p)

    p = fa.asarray(np.arange(16.0))
    with pytest.raises(UnsupportedOperationError,
                       match=r"np\.median inside fa\.fuse \(.*centre is being traced"):
        centre(p)
