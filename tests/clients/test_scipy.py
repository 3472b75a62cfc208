"""SciPy's array API mode on fa arrays: ``scipy.special``, ``scipy.stats``, ``scipy.fft`` (the
cases: scipy_cases.py, run in a child process with ``SCIPY_ARRAY_API=1``: child.py says why)."""

import pytest
from child import run_cases


def test_scipy_cases():
    pytest.importorskip("scipy")
    run_cases("scipy_cases.py")
