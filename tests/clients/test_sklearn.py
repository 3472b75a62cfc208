"""scikit-learn with ``array_api_dispatch=True`` on fa arrays (the cases: sklearn_cases.py, run
in a child process with ``SCIPY_ARRAY_API=1``: child.py says why)."""

import pytest
from child import run_cases


def test_sklearn_cases():
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    run_cases("sklearn_cases.py")
