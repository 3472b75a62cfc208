"""Gathers through device-computed indices in the CUDA kernel source (simulator): clamped and
flagged, the error raised at the next ``.get()`` (cases: ``tests/index_flag_cases.py``)."""

import index_flag_cases as cases
import pytest

from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_in_range_without_host_copies(monkeypatch):
    cases.in_range_without_host_copies(monkeypatch, seed=940)


def test_out_of_range_raises_once():
    cases.out_of_range_raises_once(seed=941)


def test_narrow_indices():
    cases.narrow_indices(seed=942, n=37)
