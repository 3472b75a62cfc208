"""Every op × dtype × layout on the sim backend: the generated CUDA source, run by numba's CUDA
simulator, against NumPy (see tests/semantics.py)."""

import numpy as np
import pytest
import semantics

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("layout", list(semantics.LAYOUTS))
@pytest.mark.parametrize("dtype", semantics.DTYPES, ids=str)
def test_every_op_matches_numpy(dtype, layout):
    checked = semantics.check_all_ops(dtype, layout, seed=hash((str(dtype), layout)) % 2**32)
    assert checked >= 20 or dtype == np.bool_
    assert fa.backend() == "sim"
