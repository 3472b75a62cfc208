"""Masks compacted on the device, on the cuda backend against NumPy: ``fa.flatnonzero``,
``fa.nonzero``, ``fa.argwhere`` and ``x[mask]`` at sizes of many blocks' rows (a grid-stride
over rows past one wave of blocks), masks that are pending expressions over views with negative
steps, masks over leading and trailing axes, int32 and int64 indices, and ``x[mask] += v``."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.compiler.compact import ROW


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("size", [1, ROW - 1, ROW + 1, (1 << 24) + 5])
def test_flat_indices_and_selections(size):
    seed = 470 + size % 89
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(size).astype(np.float32)
    x = fa.asarray(host)
    for threshold in (0.3, -100.0, 100.0):
        want = np.flatnonzero(host > threshold)
        got = fa.flatnonzero(x > threshold)
        assert got.dtype == np.intp
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=} {threshold=}")
        np.testing.assert_array_equal(x[x > threshold].get(), host[host > threshold],
                                      err_msg=f"{seed=} {threshold=}")


def test_views_axes_and_writes():
    seed = 480
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((3000, 700)).astype(np.float32)
    x = fa.asarray(host)
    for view, hview in ((x, host), (x[::-1, ::-3], host[::-1, ::-3]), (x.T, host.T)):
        mask, hmask = view > 0.5, hview > 0.5
        np.testing.assert_array_equal(view[mask].get(), hview[hmask], err_msg=f"{seed=}")
        for got, want in zip(fa.nonzero(mask), np.nonzero(hmask)):
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")
        np.testing.assert_array_equal(fa.argwhere(mask).get(), np.argwhere(hmask),
                                      err_msg=f"{seed=}")
    rows = host[:, 0] > 0
    np.testing.assert_array_equal(x[fa.asarray(rows)].get(), host[rows], err_msg=f"{seed=}")
    cols = host[0] > 0
    np.testing.assert_array_equal((x[:, fa.asarray(cols)] * 2).get(), host[:, cols] * 2,
                                  err_msg=f"{seed=}")
    y, want = fa.asarray(host.copy()), host.copy()
    y[y > 1.0] += 0.5
    want[want > 1.0] += 0.5
    np.testing.assert_array_equal(y.get(), want, err_msg=f"{seed=}")


def test_masked_array_writes():
    seed = 481
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((2000, 900)).astype(np.float32)
    x, want = fa.asarray(host.copy()), host.copy()
    # scattered: the whole array, a view reversed whole, every third element of its flat
    # view, a column (one stride apart); by ranks: the others
    for view, wview in ((x, want), (x[::-1, ::-1], want[::-1, ::-1]),
                        (x.reshape(-1)[1::3], want.reshape(-1)[1::3]), (x[:, 5], want[:, 5]),
                        (x[::-1, ::-2], want[::-1, ::-2]), (x.T, want.T)):
        mask = rng.random(wview.shape) < 0.3
        values = rng.standard_normal(int(mask.sum())).astype(np.float32)
        view[fa.asarray(mask)] = values
        wview[mask] = values
        np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    rows = rng.random(2000) < 0.5
    x[fa.asarray(rows)] = fa.asarray(host[:1])       # one row broadcast over the selection
    want[rows] = host[:1]
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
