"""Every op × dtype × layout on the cpu backend at its default settings, against NumPy (see
tests/semantics.py)."""

import numpy as np
import semantics

import fusedarrays as fa
from fusedarrays import config

test_every_op_matches_numpy = semantics.every_op_test("cpu")


def test_serial_loop_matches_numpy():
    rng = np.random.default_rng(20261123)
    a, b = rng.random(100_000).astype(np.float32), rng.random(100_000).astype(np.float32)
    # FUSEDARRAYS_CPU_PARALLEL=0 is a supported setting: every chunk on the calling thread
    with config.override(BACKEND="cpu", CPU_PARALLEL=False):
        got = (fa.asarray(a) * fa.asarray(b) + 2.5).get()
    np.testing.assert_array_equal(got, a * b + np.float32(2.5))


def test_every_unary_float_op_at_three_widths_in_one_kernel():
    semantics.check_mixed_float_unary_ops()
