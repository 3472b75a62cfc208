"""An index that is a pending node (issue #32) in the CUDA kernel source (simulator, small
shapes): a reduction, a scan, a product and a gather as the index of every gather route, and
writes through a reduced index, against NumPy (cases: ``tests/index_from_pending_cases.py``)."""

import index_from_pending_cases as cases
import numpy as np
import pytest

from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_every_route_and_index_kind():
    cases.gathers_match_numpy(3251, (6, 5), np.float32)


def test_scatters():
    cases.scatters_match_numpy(3252, (5, 4))
