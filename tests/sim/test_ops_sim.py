"""Every op × dtype × layout on the sim backend: the generated CUDA source, run by numba's CUDA
simulator, against NumPy (see tests/semantics.py)."""

import semantics

test_every_op_matches_numpy = semantics.every_op_test("sim")


def test_every_unary_float_op_at_three_widths_in_one_kernel():
    from fusedarrays import config

    with config.override(BACKEND="sim"):
        semantics.check_mixed_float_unary_ops()
