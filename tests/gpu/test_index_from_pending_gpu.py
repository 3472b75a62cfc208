"""An index that is a pending node (issue #32) on the cuda backend (cases:
``tests/index_from_pending_cases.py``): a reduction (rows and cols schedules), a scan, a product
and a gather as the index of every gather route, a tiled consumer, writes through a reduced
index; and NumPy's ufunc keywords (``dtype=``, ``where=``, ``out=``, ``ufunc.reduce`` with
``where``/``initial``) against NumPy."""

import index_from_pending_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_every_route_and_index_kind(dtype):
    reached = cases.gathers_match_numpy(3351, (300, 257), dtype)
    assert {"rows", "cols"} <= reached, reached


def test_tiled_consumer_and_scatters():
    assert "tiled" in cases.tiled_consumer_matches_numpy(3352, (300, 257))
    cases.scatters_match_numpy(3353, (400, 129))


def test_ufunc_keywords():
    seed = 3354
    print("seed", seed)
    rng = np.random.default_rng(seed)
    hi = rng.integers(-100, 100, (300, 257)).astype(np.int8)
    hf = rng.standard_normal((300, 257)).astype(np.float32)
    mask = rng.random(hf.shape) > 0.3
    x, y = fa.asarray(hi), fa.asarray(hf)
    np.testing.assert_array_equal(np.add(x, x, dtype=np.float64).get(),
                                  np.add(hi, hi, dtype=np.float64))
    out, want = fa.asarray(hf.copy()), hf.copy()
    np.multiply(y, 3, out=out, where=fa.asarray(mask))
    np.multiply(hf, 3, out=want, where=mask)
    np.testing.assert_array_equal(out.get(), want)
    for axis in (0, 1, None):
        np.testing.assert_array_equal(
            np.add.reduce(x, axis=axis, where=mask, initial=5).get(),
            np.add.reduce(hi, axis=axis, where=mask, initial=5))
        np.testing.assert_array_equal(
            np.maximum.reduce(x, axis=axis, where=mask, initial=-7, keepdims=True).get(),
            np.maximum.reduce(hi, axis=axis, where=mask, initial=-7, keepdims=True))
    np.testing.assert_array_equal(np.add.accumulate(x, axis=1, dtype=np.int32).get(),
                                  np.add.accumulate(hi, axis=1, dtype=np.int32))
