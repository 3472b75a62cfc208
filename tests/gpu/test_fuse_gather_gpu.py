"""Gathers inside fa.fuse on the cuda backend (cases: ``tests/fuse_gather_cases.py``): NumPy's
values over a 300x400 table and 2^16 indices, new indices per call in one launch without a
compile or a copy to the host, out-of-range indices raised once at the next ``.get()``, and
the context healthy after."""

import fuse_gather_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def test_fused_gathers_match_numpy_and_raise_once(monkeypatch):
    cases.embedding_matches_numpy(monkeypatch, seed=1521, rows=300, cols=400, n=1 << 12)
    cases.embedding_matches_numpy(monkeypatch, seed=1522, rows=300, cols=1, n=1 << 16)
    cases.axes_match_numpy(seed=1523, shape=(300, 400), n=1 << 16)
    cases.out_of_range_raises_once(seed=1524, rows=300, cols=400, n=1 << 12)
    seed = 1525
    print("seed", seed)
    host = np.random.default_rng(seed).standard_normal(1 << 20).astype(np.float32)
    total = float(fa.sum(fa.asarray(host)))      # the context still launches and reads
    assert total == pytest.approx(float(host.sum(dtype=np.float64)), rel=1e-4, abs=1e-2)
