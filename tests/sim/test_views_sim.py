"""Views read and written through the generated CUDA source in numba's simulator, against NumPy,
at the smallest sizes that reach every schedule (the simulator runs each thread in Python)."""

import numpy as np
import pytest
import viewcases

from fusedarrays import config

# 6×5 walks coordinates (nd), 128×136 rows, and tiles where an operand is transposed (136 rows
# of 128); every case also takes 1-D flat walks.
SIZES = [(6, 5), (128, 136)]


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=str)
def test_views_match_numpy_at_every_schedule(dtype):
    reached = set()
    for shape in SIZES:
        reached |= viewcases.check_views(shape, dtype)
    assert {s for s, _ in reached} == {"flat", "rows", "tiled", "nd"}, sorted(reached)
    assert max(w for _, w in reached) == 16 // np.dtype(dtype).itemsize, sorted(reached)
