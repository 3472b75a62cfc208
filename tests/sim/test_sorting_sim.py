"""Sorting, the set functions, bincount and histogram on the sim backend: NumPy's kernels on views
of the simulator's host memory (api/libraries.py), with the descending order's mapping and a
result read by fused work run as simulated kernels; small shapes (~80 ms per 1024 elements)."""

import numpy as np

import fusedarrays as fa
from fusedarrays import config

SEED = 20261128


def test_sorting_and_counting_on_the_simulator():
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    host = rng.integers(0, 4, (3, 8)).astype(np.float32)
    host[1, 2] = np.nan
    with config.override(BACKEND="sim"):
        x = fa.asarray(host)[:, ::-1]
        h = host[:, ::-1]
        np.testing.assert_array_equal(fa.sort(x * 2, axis=0).get(), np.sort(h * 2, axis=0))
        down = fa.argsort(x, descending=True).get()
        want = h.shape[1] - 1 - np.flip(np.argsort(h[:, ::-1], kind="stable"), 1)
        np.testing.assert_array_equal(down, want)
        for got, expected in zip(fa.unique_all(x), np.unique_all(h)):
            np.testing.assert_array_equal(got.get(), expected)
        ints = rng.integers(0, 6, 40)
        np.testing.assert_array_equal(np.bincount(fa.asarray(ints)).get(), np.bincount(ints))
        counts, edges = np.histogram(x, bins=3, range=(0, 3))
        np.testing.assert_array_equal(counts.get(), np.histogram(h, bins=3, range=(0, 3))[0])
        np.testing.assert_array_equal((fa.sort(x) - 1).get(), np.sort(h) - 1)   # fused after
