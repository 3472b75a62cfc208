"""Scans on the cuda backend against NumPy (tests/scancases.py): every scan × dtype on both
cuda schedules (a block of 256 threads per row walking tiles of 2048 elements, a thread per
row), axes × layouts, large shapes of many tiles per row, float32 accuracy against float64 and
the same bits every run."""

import numpy as np
import pytest
import scancases as sc

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("name", sc.NAMES)
def test_every_scan_and_dtype_on_both_schedules(name):
    sc.check_over_dtypes(name, sc.DTYPES, (6, 5, 3000), axis=-1, layout="contiguous")
    sc.check_over_dtypes(name, sc.DTYPES, (6, 5, 4), axis=1, layout="negative",
                         include_initial=True)
    sc.check_over_dtypes(name, sc.SOME_DTYPES, (3, 700, 5), axis=0, layout="transposed")


def test_axes_and_layouts():
    sc.check_axes_and_layouts()
    sc.check_axes_and_layouts(["cumulative_sum"], shape=(30, 70, 2100))


@pytest.mark.parametrize("shape,axis", [((1 << 22,), 0), ((4096, 4096), 0), ((4096, 4096), 1),
                                        ((1 << 20, 3), 1), ((7, 300001), 1)])
def test_large_shapes_accuracy_and_determinism(shape, axis):
    seed = sc.seed_of("gpu large", shape, axis)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    a = fa.asarray(x)
    first, second = fa.cumsum(a, axis=axis).get(), fa.cumsum(a, axis=axis).get()
    assert first.tobytes() == second.tobytes(), f"not the same bits (seed {seed})"
    sc.check(first, np.cumsum(x, axis=axis), x, axis, "cumulative_sum",
             f"{shape} axis={axis} (seed {seed})")
    exact = np.cumsum(x.astype(np.float64), axis=axis)
    running = np.cumsum(np.abs(x.astype(np.float64)), axis=axis)
    ours = np.max(np.abs(first - exact) / running)
    numpys = np.max(np.abs(np.cumsum(x, axis=axis) - exact) / running)
    assert ours <= 2 * numpys + 1e-7, (ours, numpys, seed)   # as accurate as NumPy's loop


def test_views_written_and_work_around_the_scan():
    seed = sc.seed_of("gpu views")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((40, 5000)).astype(np.float32)
    a = fa.asarray(x)
    out = fa.asarray(np.zeros((5000, 80), np.float32))
    out[::-1, 1::2] = (fa.cumsum(a * 2 - 1, axis=1) + a).T
    want = np.zeros((5000, 80), np.float32)
    want[::-1, 1::2] = (np.cumsum(x * 2 - 1, axis=1) + x).T
    # rows of 5000 summing values up to ~4 in magnitude: float32 rounding stays far below 0.05
    np.testing.assert_allclose(out.get(), want, rtol=1e-5, atol=0.05,
                               err_msg=f"written through a view (seed {seed})")
    fa.reset_stats()
    fa.cumsum(a * 2 - 1, axis=1).get()
    assert fa.stats()["launches"] == 1          # the producers run inside the scan's kernel
