"""Set-up shared by the cpu-backend test modules."""

import pytest

from fusedarrays import config


@pytest.fixture
def cpu_backend():
    """The cpu backend at its default settings (a module opts in with ``pytestmark``)."""
    with config.override(BACKEND="cpu"):
        yield
