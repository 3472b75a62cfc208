"""Every op × dtype × layout on the sim backend: the generated CUDA source, run by numba's CUDA
simulator, against NumPy (see tests/semantics.py)."""

import semantics

test_every_op_matches_numpy = semantics.every_op_test("sim")
