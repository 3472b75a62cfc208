"""fa.nonzero, fa.argwhere, fa.flatnonzero and fa.count_nonzero (and np.<name>(x),
x.nonzero(), np.where(cond)) on the cpu backend at its defaults, against NumPy: NaN counts as
nonzero, views with negative steps and transposes, shapes reaching the reductions' schedules;
count_nonzero is one lazy fused reduction."""

import numpy as np
import pytest

import fusedarrays as fa


def _data(seed: int, shape: tuple) -> np.ndarray:
    rng = np.random.default_rng(seed)
    host = np.where(rng.random(shape) < 0.6, 0, rng.standard_normal(shape)).astype(np.float32)
    host.reshape(-1)[::97] = np.nan
    return host


@pytest.mark.parametrize("shape", [(7,), (5, 6), (3, 4, 5), (40, 300)], ids=str)
def test_nonzero_family_matches_numpy(shape):
    seed = 230 + len(shape)
    host = _data(seed, shape)
    x = fa.asarray(host)
    views = [(x, host), (x[::-1], host[::-1]), (x.T, host.T), (x > 0, host > 0)]
    for xv, hv in views:
        for got, want in zip(fa.nonzero(xv), np.nonzero(hv)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")
        for got, want in zip(np.nonzero(xv), xv.nonzero()):
            np.testing.assert_array_equal(got.get(), want.get(), err_msg=f"{seed=}")
        np.testing.assert_array_equal(np.where(xv)[0].get(), np.where(hv)[0])
        for name in ("argwhere", "flatnonzero"):
            got, want = getattr(np, name)(xv), getattr(np, name)(hv)
            assert isinstance(got, fa.ndarray) and got.shape == want.shape, name
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=} {name}")
        axes = [None, 0, -1, tuple(range(len(shape)))]
        for axis in axes:
            for keepdims in (False, True):
                fa.reset_stats()
                got = fa.count_nonzero(xv, axis=axis, keepdims=keepdims)
                assert got.pending and fa.stats()["launches"] == 0
                want = np.count_nonzero(hv, axis=axis, keepdims=keepdims)
                np.testing.assert_array_equal(got.get(), want,
                                              err_msg=f"{seed=} {axis=} {keepdims=}")
                assert got.dtype == np.intp
        np.testing.assert_array_equal(np.count_nonzero(xv, axis=0).get(),
                                      np.count_nonzero(hv, axis=0))


def test_zero_dimensional_and_empty():
    x = fa.asarray(np.float32(2.0))
    with pytest.raises(ValueError, match="0-d"):
        fa.nonzero(x)
    assert fa.argwhere(x).shape == np.argwhere(np.float32(2.0)).shape
    np.testing.assert_array_equal(fa.flatnonzero(x).get(), [0])
    assert int(fa.count_nonzero(x)) == 1
    empty = fa.asarray(np.zeros((0, 3), np.float32))
    assert [a.shape for a in fa.nonzero(empty)] == [(0,), (0,)]
    assert fa.argwhere(empty).shape == (0, 2)
    assert int(fa.count_nonzero(empty)) == 0


def test_indices_index_back():
    """The results index the array they came from (a gather through the uploaded indices)."""
    seed = 235
    host = _data(seed, (30, 140))
    x = fa.asarray(host)
    np.testing.assert_array_equal(x[fa.nonzero(x)].get(), host[np.nonzero(host)],
                                  err_msg=f"{seed=}")
    np.testing.assert_array_equal(fa.take(x, fa.flatnonzero(x > 0)).get(),
                                  host[host > 0], err_msg=f"{seed=}")
