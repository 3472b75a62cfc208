"""Gathers through device-computed indices on the cuda backend: in range, NumPy's values with no
copy to the host before the kernel; out of range, NumPy's IndexError at the next .get(), once,
and the context healthy after (runtime/indexflags.py)."""

import index_flag_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def test_in_range_without_host_copies(monkeypatch):
    cases.in_range_without_host_copies(monkeypatch, seed=950)


def test_out_of_range_raises_once_and_the_context_stays_healthy():
    cases.out_of_range_raises_once(seed=951)
    seed = 952
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(1 << 20).astype(np.float32)
    raw = rng.integers(-(1 << 20), 1 << 20, 1 << 22)
    i = fa.asarray(raw)
    bad = fa.take(fa.asarray(table), i * 3)            # most of them out of range
    with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 1048576"):
        (bad * 2).get()
    np.testing.assert_array_equal(fa.take(fa.asarray(table), i + 0).get(), table[raw],
                                  err_msg=f"{seed=}")
    total = float(fa.sum(fa.asarray(table)))      # the context still launches and reads
    assert total == pytest.approx(float(table.sum(dtype=np.float64)), rel=1e-4, abs=1e-2)


def test_narrow_indices():
    cases.narrow_indices(seed=953, n=4099)
