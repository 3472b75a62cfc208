"""Differences and whole-array comparisons against NumPy: ``fa.diff`` / ``np.diff`` (n-th
differences in one fused kernel, NumPy's values to the bit, prepend/append, bools),
``np.ediff1d``; ``isclose`` (one fused expression: infinities, NaN, broadcasting, integers),
``allclose``, ``array_equal``, ``array_equiv`` (a Python bool after one reduction, or none); on
cpu, on sim (one small case) and on cuda."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api import differences

SEED = 20261202


def _host(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)      # the whole range: differences wrap as NumPy's
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_, np.complex128])
@pytest.mark.parametrize("n, axis", [(1, -1), (2, 0), (3, 1)])
def test_diff_is_numpys_in_one_kernel(dtype, n, axis):
    h = _host((300, 257), dtype, np.random.default_rng(SEED))
    x = fa.asarray(h)
    fa.reset_stats()
    got = np.diff(x, n=n, axis=axis) if n % 2 else fa.diff(x, n=n, axis=axis)
    want = np.diff(h, n=n, axis=axis)
    assert got.pending and (got.shape, got.dtype) == (want.shape, want.dtype)
    # NumPy's operations in NumPy's order: the same values to the bit
    np.testing.assert_array_equal(got.get(), want, err_msg=f"seed {SEED}")
    assert fa.stats()["launches"] == 1


@pytest.mark.parametrize("view", [lambda x: x.T, lambda x: x[::-1, ::-2], lambda x: x[1:, 3]])
def test_diff_of_views_and_of_a_pending_expression(view):
    h = _host((40, 50), np.float64, np.random.default_rng(SEED))
    x = fa.asarray(h)
    np.testing.assert_array_equal(fa.diff(view(x), n=2).get(), np.diff(view(h), n=2))
    fa.reset_stats()
    got = fa.diff(view(x) * 2 + 1, axis=0).get()
    assert fa.stats()["launches"] == 1
    np.testing.assert_array_equal(got, np.diff(view(h) * 2 + 1, axis=0))


def test_diff_orders_past_one_kernels_levels_and_past_the_extent():
    h = _host((3, 40), np.int64, np.random.default_rng(SEED))
    x = fa.asarray(h)
    n = differences.LEVELS_PER_KERNEL + 5
    np.testing.assert_array_equal(fa.diff(x, n=n).get(), np.diff(h, n=n))
    for n in (39, 40, 55):
        got, want = fa.diff(x, n=n), np.diff(h, n=n)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.get(), want)
    assert fa.diff(x, n=0) is x          # NumPy returns its input


@pytest.mark.parametrize("prepend, append", [
    (0, None), (None, 2.5), (np.array([[1.0], [2.0]]), np.array([[7, 8, 9], [1, 2, 3]])),
    (np.int8(3), np.float32(0.5)),
])
def test_diff_prepend_and_append_join_first(prepend, append):
    h = _host((2, 6), np.float32, np.random.default_rng(SEED))
    kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    want = np.diff(h, **kw)
    via_numpy = np.diff(fa.asarray(h), **kw)
    kw = {k: (fa.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    for got in (via_numpy, fa.diff(fa.asarray(h), **kw)):
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        np.testing.assert_array_equal(got.get(), want, err_msg=f"seed {SEED}")


def test_diff_errors():
    x = fa.asarray(np.arange(4.0))
    with pytest.raises(ValueError, match=r"diff: the order n must be ≥ 0, got n=-1"):
        fa.diff(x, n=-1)
    with pytest.raises(fa.ShapeError, match="0-dimensional; it needs at least one"):
        np.diff(fa.asarray(np.float64(2.0)))
    with pytest.raises(np.exceptions.AxisError):
        fa.diff(x, axis=1)


def test_ediff1d_is_numpys():
    h = _host((5, 7), np.float64, np.random.default_rng(SEED))
    x = fa.asarray(h)
    for kw in ({}, {"to_begin": -1.0}, {"to_end": np.array([1, 2])},
               {"to_begin": np.array([[3.0, 4.0]]), "to_end": 9}):
        want = np.ediff1d(h, **kw)
        got = np.ediff1d(x, **kw)
        assert (got.shape, got.dtype) == (want.shape, want.dtype), kw
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{kw} seed {SEED}")
    ints = fa.asarray(np.arange(5, dtype=np.int16))
    np.testing.assert_array_equal(fa.ediff1d(ints, to_begin=7).get(),
                                  np.ediff1d(np.arange(5, dtype=np.int16), to_begin=7))
    with pytest.raises(fa.DTypeError, match=r"to_end of dtype float64 can't be cast to ary's "
                       r"dtype int16 under the 'same_kind' rule"):
        np.ediff1d(ints, to_end=0.5)
    with pytest.raises(TypeError, match="ary is bool"):
        np.ediff1d(fa.asarray(np.array([True, False])))


SPECIAL = np.array([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-9, 1.0 + 1e-6, 1e300, -0.0])


def test_isclose_special_values_every_pair_as_numpys():
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    for equal_nan in (False, True):
        want = np.isclose(a, b, equal_nan=equal_nan)
        got = np.isclose(fa.asarray(a), fa.asarray(b), equal_nan=equal_nan)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("make", [
    lambda r: (r.standard_normal((300, 257)), r.standard_normal(257)),     # broadcast
    lambda r: (r.standard_normal((4, 1)).astype(np.float32), 1.0),          # Python float
    lambda r: (2, r.standard_normal(5)),                                    # Python int first
    lambda r: (r.integers(-3, 4, 50), r.integers(-3, 4, 50)),               # integers
    lambda r: (np.array([np.iinfo(np.int64).min, 0]), np.array([np.iinfo(np.int64).min, 1])),
    lambda r: (r.random(20) < 0.5, r.random(20) < 0.5),                      # bools
    lambda r: (r.standard_normal(8) + 1j * r.standard_normal(8), 1j),       # complex
    lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))),
])
def test_isclose_matches_numpy_in_one_kernel(make):
    ha, hb = make(np.random.default_rng(SEED))
    hb = ha + 1e-7 if isinstance(hb, np.ndarray) and hb.dtype.kind == "f" and hb.size > 100 \
        else hb
    for rtol, atol in ((1e-5, 1e-8), (0.3, 0.0), (0.0, 1.5)):
        want = np.isclose(ha, hb, rtol=rtol, atol=atol)
        a = fa.asarray(ha) if isinstance(ha, np.ndarray) else ha
        b = fa.asarray(hb) if isinstance(hb, np.ndarray) else hb
        fa.reset_stats()
        got = fa.isclose(a, b, rtol=rtol, atol=atol)
        assert isinstance(got, fa.ndarray) and got.dtype == np.bool_ and got.shape == want.shape
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{rtol=} {atol=} seed {SEED}")
        assert fa.stats()["launches"] == 1


def test_isclose_float32_tolerance_is_computed_in_float32_as_numpys():
    # |x - y| equal to atol rounded up to float32: close in float32 arithmetic (NumPy's, the
    # float32 y keeping its dtype), not in float64, where atol is below it
    x = np.array([0.1, 0.2, 0.3], np.float32)
    y = np.zeros(3, np.float32)     # the boundary is |x| itself: y = 0 on purpose
    want = np.isclose(x, y, rtol=0.0, atol=0.1)
    assert want.tolist() == [True, False, False]
    np.testing.assert_array_equal(
        fa.isclose(fa.asarray(x), fa.asarray(y), rtol=0.0, atol=0.1).get(), want)
    np.testing.assert_array_equal(np.isclose(fa.asarray(x), 0.0, rtol=0.0, atol=0.1).get(),
                                  np.isclose(x, 0.0, rtol=0.0, atol=0.1))


def test_isclose_tolerances_as_arrays_and_non_finite_ones_warn():
    rng = np.random.default_rng(SEED)
    a, b, rtol = rng.standard_normal(6), rng.standard_normal(6), rng.random(6) * 2
    np.testing.assert_array_equal(
        np.isclose(fa.asarray(a), fa.asarray(b), rtol=fa.asarray(rtol)).get(),
        np.isclose(a, b, rtol=rtol))
    with pytest.warns(RuntimeWarning, match="atol=inf is not finite"):
        fa.isclose(fa.asarray(a), b, atol=np.inf)


def test_allclose_is_a_python_bool_from_one_reduction():
    rng = np.random.default_rng(SEED)
    h = rng.standard_normal((300, 257))
    x = fa.asarray(h)
    for other, equal_nan in ((h * (1 + 1e-7), False), (h + 1e-3, False), (h, True)):
        want = np.allclose(h, other, equal_nan=equal_nan)
        y = fa.asarray(other)
        fa.reset_stats()
        got = np.allclose(x, y, equal_nan=equal_nan)
        assert type(got) is bool and got == want
        assert fa.stats()["launches"] <= 2      # one reduction (two stages at most)
    hn = h.copy()
    hn[3, 4] = np.nan
    assert fa.allclose(fa.asarray(hn), hn, equal_nan=True) is True
    assert fa.allclose(fa.asarray(hn), hn) is False


def test_array_equal_and_equiv_as_numpys():
    rng = np.random.default_rng(SEED)
    h = rng.standard_normal((4, 5000))
    x = fa.asarray(h)
    other = h.copy()
    other[2, 4999] += 1e-12
    hn = h.copy()
    hn[1, 7] = np.nan
    cases = [(x, h, {}), (x, other, {}), (fa.asarray(hn), hn, {}),
             (fa.asarray(hn), hn, {"equal_nan": True}), (x, h.astype(np.float32), {}),
             (fa.asarray(np.arange(3)), [0, 1, 2], {"equal_nan": True})]
    for a, b, kw in cases:
        want = np.array_equal(np.asarray(a.get()), b, **kw)
        got = np.array_equal(a, fa.asarray(b) if isinstance(b, np.ndarray) else b, **kw)
        assert type(got) is bool and got == want, kw
    fa.reset_stats()
    assert fa.array_equal(x, x[:, :3]) is False and fa.array_equiv(x, x[:2]) is False
    assert fa.stats()["launches"] == 0          # shapes alone answered
    assert fa.array_equal(x, "not an array") is False
    assert np.array_equiv(x[:1], x[:1] + 0.0) is True and fa.array_equiv(x, h[1]) is False
    assert fa.array_equiv(fa.asarray(np.ones((3, 4))), 1) is True


# cuda

CUDA_SEED = 20261203


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
@pytest.mark.tiers("cuda")
def test_diff_is_numpys_in_one_kernel_on_the_device(dtype):
    rng = np.random.default_rng(CUDA_SEED)
    h = (rng.standard_normal((1000, 513)) * 100).astype(dtype)
    x = fa.asarray(h)
    for n, axis in ((1, -1), (3, 0)):
        fa.reset_stats()
        got = np.diff(x.T, n=n, axis=axis).get()
        assert fa.stats()["launches"] == 1
        np.testing.assert_array_equal(got, np.diff(h.T, n=n, axis=axis),
                                      err_msg=f"seed {CUDA_SEED}")
    np.testing.assert_array_equal(fa.diff(x, prepend=0, append=h[:, :2]).get(),
                                  np.diff(h, prepend=0, append=h[:, :2]))


@pytest.mark.tiers("cuda")
def test_isclose_allclose_array_equal_as_numpys():
    special = np.array([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-9, 1.0 + 1e-6, 1e300])
    a, b = np.meshgrid(special, special)
    for equal_nan in (False, True):
        got = np.isclose(fa.asarray(a), fa.asarray(b), equal_nan=equal_nan)
        assert "on cuda" in repr(got.compute())
        np.testing.assert_array_equal(got.get(), np.isclose(a, b, equal_nan=equal_nan))
    h = np.random.default_rng(CUDA_SEED).standard_normal((4, 1 << 20)).astype(np.float32)
    x = fa.asarray(h)
    fa.reset_stats()
    assert np.allclose(x, h * (1 + 1e-7)) is True and fa.allclose(x, h + 1e-3) is False
    assert np.array_equal(x, h) is True and fa.array_equal(x, x[:, ::-1]) is False
    assert fa.stats()["launches"] <= 8       # one reduction each, two stages at most


@pytest.mark.tiers("sim")
def test_diff_and_isclose_run_on_the_sim_backend_too():
    h = _host((4, 6), np.float32, np.random.default_rng(SEED))
    x = fa.asarray(h)
    np.testing.assert_array_equal(fa.diff(x, n=2, axis=0).get(), np.diff(h, n=2, axis=0))
    np.testing.assert_array_equal(np.isclose(x, x[::-1], atol=50).get(),
                                  np.isclose(h, h[::-1], atol=50))
    assert fa.allclose(x, h) is True
