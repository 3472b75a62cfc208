"""Advanced indexing on the cuda backend against NumPy (tests/indexcases.py's keys): several
index arrays and masks read and written through views, ``x[idx] += v`` as one launch,
``fa.add.at`` bit for bit, nonzero and count_nonzero, and a permutation equal to the cpu
backend's for one seed."""

import indexcases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("shape", [(4, 5, 6), (6, 8, 300)], ids=str)
def test_reads_and_writes_match_numpy(shape):
    seed = 260 + shape[-1]
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(shape).astype(np.float32)
    for vname, view in indexcases.VIEWS.items():
        host, x = base.copy(), fa.asarray(base)
        hv, xv = view(host), view(x)
        for kname, key in indexcases.keys(rng, hv.shape).items():
            try:
                want = hv[key] * 2 + 1
            except IndexError:
                continue
            msg = f"{seed=} {vname} {kname}"
            np.testing.assert_array_equal((xv[key] * 2 + 1).get(), want, err_msg=msg)
            values = rng.standard_normal(want.shape).astype(np.float32)
            hv[key] = values
            xv[indexcases.as_fa_key(key)] = values
            hv[key] += 1.5
            xv[key] += 1.5
            np.testing.assert_array_equal(x.get(), host, err_msg=msg)


def test_one_launch_writes_add_at_and_nonzero():
    seed = 270
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((1000, 260)).astype(np.float32)
    x, want = fa.asarray(host.copy()), host.copy()
    mask = rng.random(host.shape) < 0.5
    fa.reset_stats()
    x[mask] += 0.5
    want[mask] += 0.5
    assert fa.stats()["launches"] == 1
    idx = rng.integers(-1000, 1000, 5000)
    idx[:40] = 3
    values = rng.standard_normal((5000, 260)).astype(np.float32)
    fa.add.at(x, idx, values)
    np.add.at(want, idx, values)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    np.testing.assert_array_equal(x[x > 1].get(), want[want > 1], err_msg=f"{seed=}")
    for got, ref in zip(fa.nonzero(x > 1), np.nonzero(want > 1)):
        np.testing.assert_array_equal(got.get(), ref, err_msg=f"{seed=}")
    np.testing.assert_array_equal(fa.count_nonzero(x > 1, axis=0).get(),
                                  np.count_nonzero(want > 1, axis=0))
    with config.override(BACKEND="cpu"):   # the reference backend for the permutation
        cpu_perm = fa.random.default_rng(seed).permutation(100_000).get()
    np.testing.assert_array_equal(fa.random.default_rng(seed).permutation(100_000).get(),
                                  cpu_perm, err_msg=f"{seed=}")
