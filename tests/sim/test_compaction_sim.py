"""Masks compacted through the CUDA kernel source (simulator): ``fa.flatnonzero`` and
``x[mask]`` against NumPy, a mask of two rows and a bit (4096 elements a row; the simulator's
blocks have 32 threads, so each thread's run is 128 elements and the block's scan of the runs'
counts takes five steps), a pending mask over a view with negative steps, a mask over the
leading axes of a 3-D array, and ``x[mask] = values`` both ways (scattered, into an array and
a view one stride apart, and by ranks)."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.compiler.compact import ROW


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_rows_in_order_across_the_block():
    seed = 460
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(2 * ROW + 37).astype(np.float32)
    x = fa.asarray(host)
    np.testing.assert_array_equal(fa.flatnonzero(x > 0.2).get(), np.flatnonzero(host > 0.2),
                                  err_msg=f"{seed=}")
    np.testing.assert_array_equal(x[x < -1.0].get(), host[host < -1.0], err_msg=f"{seed=}")


def test_views_and_leading_axes():
    seed = 461
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((6, 9, 4)).astype(np.float32)
    x = fa.asarray(host)
    view, hview = x[::-1, ::-2], host[::-1, ::-2]
    np.testing.assert_array_equal(view[view > 0].get(), hview[hview > 0], err_msg=f"{seed=}")
    lead = host[:, :, 0] > 0
    np.testing.assert_array_equal(x[fa.asarray(lead)].get(), host[lead], err_msg=f"{seed=}")
    for got, want in zip(fa.nonzero(view > 0.5), np.nonzero(hview > 0.5)):
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")


def test_masked_writes():
    """Into a contiguous array and into a view whose C order is one stride (a negative one)
    the selected elements are scattered in one kernel (the count, its running sum, the
    scatter: three launches); into a view no one stride walks each element's rank picks its
    value (four)."""
    seed = 462
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(2 * ROW + 600).astype(np.float32)
    x, want = fa.asarray(host.copy()), host.copy()
    for view, wview, launches in ((x, want, 3), (x[::-2], want[::-2], 3),
                                  (x.reshape(8, -1)[::-1], want.reshape(8, -1)[::-1], 4)):
        mask = rng.random(wview.shape) < 0.3
        values = rng.standard_normal(int(mask.sum())).astype(np.float32)
        fa.reset_stats()
        view[fa.asarray(mask)] = values
        assert fa.stats()["launches"] == launches
        wview[mask] = values
        np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
