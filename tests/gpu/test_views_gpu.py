"""Views read and written on the cuda backend, against NumPy, at sizes that reach every schedule
and vector path (see tests/viewcases.py)."""

import numpy as np
import pytest
import viewcases

from fusedarrays import config

SIZES = [(3, 3), (100, 100), (300, 400), (1000, 1000)]


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("dtype", viewcases.DTYPES, ids=str)
def test_views_match_numpy_at_every_schedule(dtype):
    reached = set()
    for shape in SIZES:
        reached |= viewcases.check_views(shape, dtype)
    assert {s for s, _ in reached} == {"flat", "rows", "tiled", "nd"}, sorted(reached)
    assert max(w for _, w in reached) == 16 // np.dtype(dtype).itemsize or \
        np.dtype(dtype) == np.float64, sorted(reached)
