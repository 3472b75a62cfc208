"""Array API 2024.12 on the cpu backend: the version, the inspection namespace's truthful
capabilities, Python scalars on either side of every binary elementwise function the standard
extended (gh-862) and of ``where``, ``result_type`` with scalars, ``clip`` bounds as arrays,
``searchsorted``'s sorter, and the new functions ``reciprocal``, ``count_nonzero``,
``cumulative_prod``, ``take_along_axis`` (``nextafter``: tests/topics/test_nextafter.py; ``diff``:
its own tests), each against NumPy 2 (whose weak Python scalars are the standard's)."""

import numpy as np
import pytest

import fusedarrays as fa

SEED = 3206

# the binary functions 2024.12 extended to Python scalars, with a scalar each accepts
SCALAR_FUNCTIONS = {
    "add": 1.5, "atan2": 0.5, "copysign": -1.0, "divide": 4.0, "equal": 2.0,
    "floor_divide": 3.0, "greater": 0.0, "greater_equal": 0.0, "hypot": 2.0, "less": 0.0,
    "less_equal": 0.0, "logaddexp": 1.0, "maximum": 0.25, "minimum": 0.25, "multiply": -2.0,
    "nextafter": 0.0, "not_equal": 1.0, "pow": 2.0, "remainder": 1.5, "subtract": 3.0,
}
INTEGER_FUNCTIONS = {"bitwise_and": 6, "bitwise_or": 6, "bitwise_xor": 6,
                     "bitwise_left_shift": 2, "bitwise_right_shift": 1, "add": 7, "equal": 3}
BOOL_FUNCTIONS = {"logical_and": True, "logical_or": False, "logical_xor": True}
NUMPY_NAMES = {"divide": "true_divide", "pow": "power", "atan2": "arctan2",
               "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}


def test_version_and_namespace():
    x = fa.asarray(np.arange(3.0))
    assert fa.__array_api_version__ == "2024.12"
    for version in ("2021.12", "2022.12", "2023.12", "2024.12", None):
        assert x.__array_namespace__(api_version=version) is fa
    with pytest.raises(ValueError, match=r"api_version='2025.12' is not one of .*2024.12"):
        x.__array_namespace__(api_version="2025.12")


def test_capabilities_tell_the_truth():
    caps = fa.__array_namespace_info__().capabilities()
    assert caps == {"boolean indexing": True, "data-dependent shapes": True,
                    "max dimensions": 64}
    rng = np.random.default_rng(SEED)
    host = rng.standard_normal((40, 30))
    x = fa.asarray(host)
    np.testing.assert_array_equal(x[x > 0.5].get(), host[host > 0.5], err_msg=f"{SEED=}")
    for got, want in zip(fa.nonzero(x > 1), np.nonzero(host > 1)):
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{SEED=}")
    rounded = np.round(host)
    np.testing.assert_array_equal(fa.unique_values(fa.asarray(rounded)).get(),
                                  np.unique(rounded), err_msg=f"{SEED=}")
    # "max dimensions": a 64-dimensional array works end to end, and NumPy (where values
    # leave) refuses a 65th
    deep = rng.standard_normal((2, 3) + (1,) * 60 + (2, 2))
    y = fa.asarray(deep)
    assert y.ndim == caps["max dimensions"]
    np.testing.assert_array_equal((y * 2 + 1).get(), deep * 2 + 1, err_msg=f"{SEED=}")
    np.testing.assert_allclose(fa.sum(y.mT, axis=0).get(), np.swapaxes(deep, -1, -2).sum(0))
    with pytest.raises(ValueError, match="64"):
        np.empty((1,) * 65)
    info = fa.__array_namespace_info__()
    assert info.devices() == [info.default_device()]


def test_python_scalars_on_either_side_of_every_extended_function():
    rng = np.random.default_rng(SEED)
    floats = (rng.standard_normal((30, 20)) * 3).astype(np.float32)
    ints = rng.integers(-20, 20, (30, 20)).astype(np.int16)
    bools = rng.random((30, 20)) < 0.5
    cases = [(floats, SCALAR_FUNCTIONS), (ints, INTEGER_FUNCTIONS), (bools, BOOL_FUNCTIONS)]
    lazy, want = [], []
    with np.errstate(all="ignore"):
        for host, functions in cases:
            x = fa.asarray(host)[::-1]
            view = host[::-1]
            for name, scalar in functions.items():
                ref = getattr(np, NUMPY_NAMES.get(name, name))
                for at, args, host_args in ((1, (x, scalar), (view, scalar)),
                                            (0, (scalar, x), (scalar, view))):
                    lazy.append(getattr(fa, name)(*args))
                    want.append((ref(*host_args), f"{name} of {view.dtype} with {scalar!r} "
                                                  f"as argument {at}"))
    fa.compute(*lazy)
    for got, (expected, what) in zip(lazy, want):
        got = got.get()
        assert got.dtype == expected.dtype, f"{what}: {got.dtype} != NumPy's {expected.dtype}"
        np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=f"{what} ({SEED=})")


def test_complex_python_scalar_with_a_real_array_and_where():
    rng = np.random.default_rng(SEED)
    host = rng.standard_normal(50).astype(np.float32)
    x = fa.asarray(host)
    got = fa.add(x, 1j)       # gh-871: as a 0-d complex array of x's precision
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got.get(), host + np.complex64(1j))
    cond = host > 0
    c = fa.asarray(cond)
    for args, expect in (((c, x, 1.5), np.where(cond, host, np.float32(1.5))),
                         ((c, -2.0, x), np.where(cond, np.float32(-2.0), host)),
                         ((c, 1, 2), np.where(cond, 1, 2))):
        got = fa.where(*args).get()
        assert got.dtype == expect.dtype, args
        np.testing.assert_array_equal(got, expect, err_msg=f"{SEED=}")


def test_result_type_with_scalars():
    assert fa.result_type(fa.float32, 1.0) == np.float32
    assert fa.result_type(fa.int8, 1) == np.int8
    assert fa.result_type(fa.float32, 1j) == np.complex64
    assert fa.result_type(fa.asarray(np.ones(2, np.float32)), fa.float64, 1) == np.float64
    assert fa.result_type(fa.uint8, True) == np.uint8


def test_clip_with_array_bounds_and_searchsorted_sorter():
    rng = np.random.default_rng(SEED)
    host = rng.standard_normal((30, 20))
    low, high = rng.standard_normal(20) - 1, rng.standard_normal((30, 1)) + 1
    x = fa.asarray(host)
    np.testing.assert_array_equal(fa.clip(x, fa.asarray(low), fa.asarray(high)).get(),
                                  np.clip(host, low, high), err_msg=f"{SEED=}")
    np.testing.assert_array_equal(fa.clip(x.T, min=-1).get(), np.clip(host.T, -1, None))
    ints = rng.integers(-9, 9, 40).astype(np.int8)
    np.testing.assert_array_equal(fa.clip(fa.asarray(ints), 2, 5).get(), np.clip(ints, 2, 5))
    values = rng.standard_normal(200)
    sorter = np.argsort(values)
    queries = rng.standard_normal(50)
    for side in ("left", "right"):
        got = fa.searchsorted(fa.asarray(values), fa.asarray(queries), side=side,
                              sorter=fa.asarray(sorter))
        np.testing.assert_array_equal(got.get(), np.searchsorted(values, queries, side=side,
                                                                 sorter=sorter))


def test_the_new_functions():
    rng = np.random.default_rng(SEED)
    host = (rng.standard_normal((300, 257)) * 2).astype(np.float32)
    host[rng.random(host.shape) < 0.3] = 0
    x = fa.asarray(host)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(fa.reciprocal(x[::-2]).get(), np.reciprocal(host[::-2]))
    for axis, keepdims in ((None, False), (0, True), ((0, 1), False), (-1, False)):
        got = fa.count_nonzero(x.T, axis=axis, keepdims=keepdims).get()
        want = np.count_nonzero(host.T, axis=axis, keepdims=keepdims)
        np.testing.assert_array_equal(got, want, err_msg=f"{axis=} {SEED=}")
    small = fa.asarray(host[:4, :6] + 1)
    for kwargs in ({"axis": 1}, {"axis": 0, "include_initial": True},
                   {"axis": 1, "dtype": fa.float64}):
        got = fa.cumulative_prod(small, **kwargs).get()
        want = np.cumulative_prod(host[:4, :6] + 1, **kwargs)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{kwargs} {SEED=}")
    order = np.argsort(host, axis=1)
    np.testing.assert_array_equal(
        fa.take_along_axis(x, fa.asarray(order), axis=1).get(),
        np.take_along_axis(host, order, axis=1))
    for name in ("diff", "nextafter", "reciprocal", "count_nonzero", "cumulative_prod",
                 "take_along_axis"):
        assert callable(getattr(fa, name)), name
    np.testing.assert_array_equal(fa.real(x).get(), host)     # gh-884: real arrays too
    np.testing.assert_array_equal(fa.conj(x).get(), host)
    z = (host[:5, :5] + 1j * host[5:10, :5]).astype(np.complex64)
    np.testing.assert_allclose(fa.mean(fa.asarray(z)).get(), z.mean(), rtol=1e-5)  # gh-850


def test_take_along_axis_defaults_to_the_last_axis():
    seed = 2412
    x = np.random.default_rng(seed).random((4, 5, 6)).astype(np.float32)
    order = np.argsort(x, axis=-1)
    got = fa.take_along_axis(fa.asarray(x), fa.asarray(order))       # 2024.12: axis=-1
    np.testing.assert_array_equal(got.get(), np.take_along_axis(x, order, axis=-1),
                                  err_msg=f"{seed=}")
