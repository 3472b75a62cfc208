"""SciPy's array API mode (``scipy.special``, ``scipy.stats``, ``scipy.fft``: scipy_cases.py) and
scikit-learn with ``array_api_dispatch=True`` (sklearn_cases.py) on fa arrays. Both need
``SCIPY_ARRAY_API=1`` before SciPy is first imported, so their cases run in one child process
started with it (child.py says why; one process, not two: each pays ~4 s of CPU to import
numba, SciPy and scikit-learn and to warm numba's compiler, out of the tier's budget)."""

import pytest
from child import run_cases


def test_scipy_and_sklearn_cases():
    pytest.importorskip("scipy")
    # sklearn_cases.py skips itself where scikit-learn is not installed
    run_cases("scipy_cases.py", "sklearn_cases.py")
