"""GPU tier: every test here is marked ``gpu`` and skipped where no CUDA device is visible."""

import pytest

from fusedarrays.cuda.backend import CudaBackend

HAVE_GPU = CudaBackend.available()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/gpu" in str(item.fspath):
            item.add_marker(pytest.mark.gpu)
            if not HAVE_GPU:
                item.add_marker(pytest.mark.skip(reason="no CUDA device visible"))
