"""Differences and whole-array comparisons on the cuda backend against NumPy: ``diff`` in one
fused kernel (NumPy's values to the bit), ``isclose`` over special values, ``allclose`` and
``array_equal`` as Python bools after one reduction."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 20261203


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
def test_diff_is_numpys_in_one_kernel(dtype):
    rng = np.random.default_rng(SEED)
    h = (rng.standard_normal((1000, 513)) * 100).astype(dtype)
    x = fa.asarray(h)
    for n, axis in ((1, -1), (3, 0)):
        fa.reset_stats()
        got = np.diff(x.T, n=n, axis=axis).get()
        assert fa.stats()["launches"] == 1
        np.testing.assert_array_equal(got, np.diff(h.T, n=n, axis=axis), err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(fa.diff(x, prepend=0, append=h[:, :2]).get(),
                                  np.diff(h, prepend=0, append=h[:, :2]))


def test_isclose_allclose_array_equal_as_numpys():
    special = np.array([0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-9, 1.0 + 1e-6, 1e300])
    a, b = np.meshgrid(special, special)
    for equal_nan in (False, True):
        got = np.isclose(fa.asarray(a), fa.asarray(b), equal_nan=equal_nan)
        assert "on cuda" in repr(got.compute())
        np.testing.assert_array_equal(got.get(), np.isclose(a, b, equal_nan=equal_nan))
    h = np.random.default_rng(SEED).standard_normal((4, 1 << 20)).astype(np.float32)
    x = fa.asarray(h)
    fa.reset_stats()
    assert np.allclose(x, h * (1 + 1e-7)) is True and fa.allclose(x, h + 1e-3) is False
    assert np.array_equal(x, h) is True and fa.array_equal(x, x[:, ::-1]) is False
    assert fa.stats()["launches"] <= 8       # one reduction each, two stages at most
