"""Gathers inside fa.fuse in the CUDA kernel source (simulator, small shapes: it runs the kernel
in Python): NumPy's values over new indices per call without a compile, out-of-range indices
raised once at the next ``.get()`` (cases: ``tests/fuse_gather_cases.py``)."""

import fuse_gather_cases as cases
import pytest

from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_embedding(monkeypatch):
    cases.embedding_matches_numpy(monkeypatch, seed=1511, rows=9, cols=4, n=6)


def test_axes_match_numpy():
    cases.axes_match_numpy(seed=1512, shape=(6, 5), n=4)


def test_out_of_range_raises_once():
    cases.out_of_range_raises_once(seed=1513, rows=8, cols=5, n=6)
