"""The complex inverse functions on the GPU (numba-cuda's cmath over libdevice): NumPy's values
at every special pair of parts and on random views (tests/complex_inverse_cases.py)."""

import complex_inverse_cases as cases
import numpy as np
import pytest

from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=str)
def test_special_values(dtype):
    cases.check_special_values(np.dtype(dtype))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=str)
def test_random_views(dtype):
    cases.check_random_views(np.dtype(dtype), seed=3208, shape=(300, 1024))
