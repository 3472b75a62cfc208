"""Views read and written against NumPy at sizes that reach every schedule (see
tests/viewcases.py) on every tier: on cpu at its default settings and with serial loops, on sim
through the generated CUDA source in numba's simulator at the smallest sizes that reach every
schedule (the simulator runs each thread in Python), on cuda up to every vector path."""

import numpy as np
import pytest
import viewcases

from fusedarrays import config

# 3×3 and 100×100 walk coordinates (nd: rows shorter than 128), 300×400 walks rows (tiled where
# an operand is transposed), and every case also takes 1-D flat walks; 1000×1000 is the size at
# which the cpu backend once read row 1 back as the last row.
SIZES = [(3, 3), (100, 100), (300, 400)]
SCHEDULES = {"flat", "rows", "tiled", "nd"}
WIDTHS = {np.dtype("float32"): {1, 4}, np.dtype("int32"): {1, 4}, np.dtype("float16"): {1, 8},
          np.dtype("float64"): {1}}
# sim: 6×5 walks coordinates (nd), 128×136 rows, and tiles where an operand is transposed (136
# rows of 128); every case also takes 1-D flat walks.
SIM_SIZES = [(6, 5), (128, 136)]


@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", viewcases.DTYPES, ids=str)
def test_views_match_numpy_at_every_schedule(dtype, tier):
    reached = set()
    for shape in SIZES + [(1000, 1000)] * (tier == "cuda"):
        reached |= viewcases.check_views(shape, dtype)
    assert {s for s, _ in reached} == SCHEDULES, f"schedules reached: {sorted(reached)}"
    if tier == "cpu":
        assert {w for _, w in reached} == WIDTHS[dtype], f"vector widths reached: {sorted(reached)}"
    else:
        assert max(w for _, w in reached) == 16 // np.dtype(dtype).itemsize or \
            np.dtype(dtype) == np.float64, sorted(reached)


@pytest.mark.tiers("sim")
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=str)
def test_views_match_numpy_at_the_smallest_sizes_of_every_schedule(dtype):
    reached = set()
    for shape in SIM_SIZES:
        reached |= viewcases.check_views(shape, dtype)
    assert {s for s, _ in reached} == SCHEDULES, sorted(reached)
    assert max(w for _, w in reached) == 16 // np.dtype(dtype).itemsize, sorted(reached)


def test_views_of_a_million_elements():
    viewcases.check_views((1000, 1000), np.float32)


def test_views_with_serial_loops():
    # FUSEDARRAYS_CPU_PARALLEL=0 is a supported setting (one thread: inside a process pool, say)
    # that compiles the same chunk function without the parallel loop around it.
    with config.override(CPU_PARALLEL=False):
        for shape in SIZES:
            viewcases.check_views(shape, np.float32)


def test_a_broadcast_to_numpy_integers_has_python_int_extents():
    # SciPy broadcasts to shapes it computed with NumPy; the extents reach the launch grid,
    # which takes Python ints only (cuda.core refused numpy.int64 there)
    import fusedarrays as fa

    seed = 31
    row = np.random.default_rng(seed).random(3).astype(np.float32)
    y = fa.broadcast_to(fa.asarray(row), (np.int64(4), np.int64(3))) * 2
    assert all(type(e) is int for e in y.shape), y.shape
    np.testing.assert_array_equal(y.get(), np.broadcast_to(row, (4, 3)) * 2, err_msg=f"{seed=}")
    assert fa.broadcast_to(fa.asarray(row), np.int64(3)).shape == (3,)
