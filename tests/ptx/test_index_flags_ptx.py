"""A gather through a device-computed index compiles for sm_90 (no GPU needed) to a clamp by
min/max and a predicated compare-and-swap and store of the error word: no branch around the
gathered load (runtime/indexflags.py)."""

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
    assert re.search(r"@p atom\.global\.cas\.b64", body)                       # the flag
    assert re.search(r"@w st\.global\.b64", body)
    # the only branches are the loops': none between an index's clamp and its load
    lines = body.splitlines()
    for k, line in enumerate(lines):
        if "atom.global.cas" in line:
            near = lines[max(0, k - 8):k + 4]
            assert not any(re.search(r"\bbra\b", ln) for ln in near), near
    host_checked = fa.explain(fa.take(x, rng.integers(0, 1000, 4096)), arch="sm_90").ptx
    assert "atom.global.cas" not in host_checked                # host-known: unchanged
