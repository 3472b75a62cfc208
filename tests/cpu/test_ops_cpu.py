"""Every op × dtype × layout on the cpu backend, against NumPy (see tests/semantics.py).

Serial loops compile three times faster; test_parallel_loop_matches_numpy covers parallel=True.
"""

import numpy as np
import semantics

import fusedarrays as fa
from fusedarrays import config

test_every_op_matches_numpy = semantics.every_op_test("cpu", CPU_PARALLEL=False)


def test_parallel_loop_matches_numpy():
    rng = np.random.default_rng()
    a, b = rng.random(10_000).astype(np.float32), rng.random(10_000).astype(np.float32)
    with config.override(BACKEND="cpu", CPU_PARALLEL=True):
        got = (fa.asarray(a) * fa.asarray(b) + 2.5).get()
    np.testing.assert_array_equal(got, a * b + np.float32(2.5))
