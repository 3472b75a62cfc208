"""Gathers, index and mask writes on the cuda backend against NumPy: a table lookup fused with
its consumer (one launch), embedding rows, every axis, negative and repeated indices; x[mask] = v
into views at sizes that reach the vector walks."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def test_table_lookup_fused():
    seed = 190
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(1 << 20).astype(np.float32)
    idx = rng.integers(-(1 << 20), 1 << 20, (1 << 22) + 3).astype(np.int32)
    w = rng.standard_normal(idx.size).astype(np.float32)
    g = fa.asarray(table)[fa.asarray(idx)]
    fa.reset_stats()
    got = (g * fa.asarray(w)).get()
    assert fa.stats()["launches"] == 1
    np.testing.assert_array_equal(got, table[idx] * w, err_msg=f"{seed=}")


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_every_axis(axis):
    seed = 191
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((300, 400)).astype(np.float16)
    for view, hview in ((fa.asarray(host), host), (fa.asarray(host)[::-1, 1::3], host[::-1, 1::3]),
                        (fa.asarray(host).T, host.T)):
        extent = hview.size if axis is None else hview.shape[axis]
        idx = rng.integers(-extent, extent, (37, 5))
        np.testing.assert_array_equal(fa.take(view, idx, axis=axis).get(),
                                      np.take(hview, idx, axis=axis), err_msg=f"{seed=}")


def test_take_along_axis():
    seed = 192
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((512, 300)).astype(np.float32)
    order = np.argsort(host, axis=0)[::-1].copy()
    got = fa.take_along_axis(fa.asarray(host).T, order.T, axis=1) + 1
    np.testing.assert_array_equal(got.get(), np.take_along_axis(host.T, order.T, 1) + 1,
                                  err_msg=f"{seed=}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_mask_writes(dtype):
    seed = 193
    rng = np.random.default_rng(seed)
    host = (rng.standard_normal((300, 400)) * 20).astype(dtype)
    x, expect = fa.asarray(host.copy()), host.copy()
    x[x > 0] = 5
    expect[expect > 0] = 5
    view, eview = x[::-1, 1::2], expect[::-1, 1::2]
    mask = rng.random(eview.shape) < 0.5
    view[mask] = -3
    eview[mask] = -3
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")


def test_index_writes():
    seed = 194
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((1000, 260)).astype(np.float32)
    x, expect = fa.asarray(host.copy()), host.copy()
    rows = rng.integers(-1000, 1000, 300)
    rows[:5] = rows[0]                               # repeated: the last value wins
    values = rng.standard_normal((300, 260)).astype(np.float32)
    x[rows] = values
    expect[rows] = values
    cols = rng.integers(-260, 260, 17)
    x[::-1][:, cols] += 1.0
    expect[::-1][:, cols] += 1.0
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")
