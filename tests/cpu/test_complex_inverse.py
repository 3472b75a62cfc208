"""fa.arcsin, arccos, arctan, arcsinh, arccosh and arctanh of complex64 and complex128 on the cpu
backend (Array API: every elementwise function takes complex operands): NumPy's values at every
special pair of parts, random values through views (tests/complex_inverse_cases.py)."""

import complex_inverse_cases as cases
import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("cpu_backend")
DTYPES = [np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_special_values(dtype):
    cases.check_special_values(np.dtype(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_views(dtype):
    cases.check_random_views(np.dtype(dtype), seed=3207)
