"""complex64 and complex128 through the generated CUDA source in numba's simulator, against NumPy
(tests/complexcases.py), at the smallest sizes that reach each walk (the simulator runs each
thread in Python): 128×136 takes rows (tiles where a complex64 operand is transposed), 4×5
coordinates, 1-D views the flat walk."""

import complexcases
import numpy as np
import pytest

from fusedarrays import config

SHAPES = [(128, 136), (4, 5)]


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "negative steps", "broadcast",
                                    "flat reversed", "zero_d"])
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_every_complex_op_matches_numpy(dtype, layout):
    reached = set()
    shapes = SHAPES if layout in ("transposed", "negative steps", "broadcast") else SHAPES[1:]
    for shape in shapes:
        reached |= complexcases.check_ops(dtype, layout, shape)[1]
    if layout == "transposed":
        assert ("tiled" if dtype == np.complex64 else "rows") in {s for s, _ in reached}


def test_mixed_promotion_matches_numpy():
    complexcases.check_mixed_promotion()


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_special_values_match_numpy(dtype):
    complexcases.check_special_values(dtype)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_ops_without_complex_templates_are_refused(dtype):
    assert complexcases.check_refusals(dtype) >= 10


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_reductions_match_numpy(dtype):
    complexcases.check_reductions(dtype, (8, 136))
