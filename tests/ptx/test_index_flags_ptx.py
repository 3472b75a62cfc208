"""A gather through a device-computed index compiles for sm_90 (no GPU needed) to a clamp by
min/max, the gathered load always made, and the error word's record (a compare-and-swap, then a
store for the thread that won it) behind a branch over the record alone, so nothing on the
normal path reads the compare-and-swap's result (runtime/indexflags.py, cuda/atomics.py)."""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):
        yield


def test_clamp_and_predicated_flag():
    seed = 960
    rng = np.random.default_rng(seed)
    x = fa.asarray(rng.standard_normal(1000).astype(np.float32))
    i = fa.asarray(rng.integers(0, 1000, 4096).astype(np.int32))
    ptx = fa.explain(fa.take(x, i * 3 - 7), arch="sm_90").ptx
    body = ptx[ptx.index(".entry"):]
    assert re.search(r"max\.s64", body) and re.search(r"min\.s64", body)      # the clamp
    lines = body.splitlines()
    records = [ln for ln in lines if "atom.global.cas.b64" in ln]
    assert records
    for ln in records:      # one asm block: the branch, then the record, then its label
        assert re.search(r"@p bra (\w+);.*atom\.global\.cas\.b64.*@w st\.global\.b64.*\1: }",
                         ln), ln
    # the gathered loads stand outside the records, unpredicated: never skipped
    gathered = [ln for ln in lines if re.search(r"ld\.global\.f32", ln)]
    assert len(gathered) == 5 and not any("@" in ln for ln in gathered)    # 4 lanes + the tail
    host_checked = fa.explain(fa.take(x, rng.integers(0, 1000, 4096)), arch="sm_90").ptx
    assert "atom.global.cas" not in host_checked                # host-known: unchanged
