"""Divisions by a divisor computed outside its dividend's loop through the CUDA kernel source
(simulator; ``tests/divisioncases.py``): the generated reciprocal and ``fa_divby`` lines in
every walk, against NumPy bit for bit. The device's arithmetic of those lines is checked on
numba's CPU target (``tests/ptx/test_intrinsic_values.py``) and on the GPU
(``tests/gpu/test_division_gpu.py``)."""

from divisioncases import check_uniform_divisions

from fusedarrays import config


def test_uniform_divisors_divide_as_numpy():
    with config.override(BACKEND="sim"):   # the tier's backend
        check_uniform_divisions(1632)
