"""The namespace's kernels in the CUDA source run by numba's simulator: fa.special's device
helpers, and the copy kernels of concat/stack/tile, on small arrays (the simulator is slow)."""

import numpy as np
import pytest
import special_cases

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.ir import ops

SEED = 20261124


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(ops.SPECIAL))
def test_special_matches_scipy(name, dtype):
    pytest.importorskip("scipy.special")
    special_cases.check_special(name, np.dtype(dtype), n=64)


def test_copy_kernels_match_numpy():
    host = np.random.default_rng(SEED).standard_normal((6, 9)).astype(np.float32)
    x = fa.asarray(host)
    cases = [
        (fa.concat([x[::-1], x * 2], axis=1), np.concatenate([host[::-1], host * 2], axis=1)),
        (fa.stack([x, x.T.T + 1]), np.stack([host, host + 1])),
        (fa.tile(x[:2, ::-3], (2, 2)), np.tile(host[:2, ::-3], (2, 2))),
        (fa.roll(x, 4, axis=1), np.roll(host, 4, axis=1)),
        (fa.tril(x, k=1) + fa.eye(6, 9, dtype=fa.float32), np.tril(host, 1) + np.eye(6, 9)),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(got.get(), want.astype(np.float32))
    assert fa.backend() == "sim"
