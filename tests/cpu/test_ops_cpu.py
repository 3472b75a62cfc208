"""Every op × dtype × layout on the cpu backend, against NumPy (see tests/semantics.py)."""

import numpy as np
import pytest
import semantics

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cpu_backend():
    # Serial loops compile three times faster; test_parallel_loop covers parallel=True.
    with config.override(BACKEND="cpu", CPU_PARALLEL=False):
        yield


@pytest.mark.parametrize("layout", list(semantics.LAYOUTS))
@pytest.mark.parametrize("dtype", semantics.DTYPES, ids=str)
def test_every_op_matches_numpy(dtype, layout):
    checked = semantics.check_all_ops(dtype, layout, seed=hash((str(dtype), layout)) % 2**32)
    assert checked >= 20 or dtype == np.bool_
    assert fa.backend() == "cpu"


def test_parallel_loop_matches_numpy():
    rng = np.random.default_rng()
    a, b = rng.random(10_000).astype(np.float32), rng.random(10_000).astype(np.float32)
    with config.override(CPU_PARALLEL=True):
        got = (fa.asarray(a) * fa.asarray(b) + 2.5).get()
    np.testing.assert_array_equal(got, a * b + np.float32(2.5))
