"""The complex inverse functions' CUDA kernel source in the simulator: NumPy's values at every
special pair of parts (tests/complex_inverse_cases.py), one small kernel per dtype."""

import complex_inverse_cases as cases
import numpy as np
import pytest

from fusedarrays import config


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=str)
def test_special_values(dtype):
    with config.override(BACKEND="sim"):
        cases.check_special_values(np.dtype(dtype))
