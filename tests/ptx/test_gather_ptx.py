"""Gathers of advanced indexing compile for sm_90 (no GPU needed): a mask's selection fused
with a 128-bit read of its weights, a gather through several index arrays, and a gather of a
pending expression holding a gather (a gather whose index is a gather)."""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):
        yield


def test_mask_selection_with_vector_weights():
    seed = 250
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((64, 136)).astype(np.float32)
    mask = rng.random(table.shape) < 0.3
    w = fa.asarray(rng.standard_normal(int(mask.sum())).astype(np.float32))
    ex = fa.explain(fa.asarray(table)[mask] * w, arch="sm_90")
    assert ex.vector_width == 4
    assert re.search(r"ld\.global\.v4\.(f32|u32|b32)", ex.ptx)     # w and the int32 offsets
    assert re.search(r"ld\.global(\.nc)?\.f32", ex.ptx)             # the gathered element


def test_several_arrays_and_a_gather_of_a_gather():
    seed = 251
    rng = np.random.default_rng(seed)
    x = fa.asarray(rng.standard_normal((30, 8, 17)).astype(np.float32))
    i, k = rng.integers(-30, 30, (4, 1)), rng.integers(-17, 17, 5)
    assert fa.explain(x[i, ::-1, k] + 1, arch="sm_90").ptx
    inner = x[:, 0, 0][rng.integers(0, 30, 200)] * 2            # pending: gathered through
    outer = fa.take(inner, rng.integers(-200, 200, 50))
    ex = fa.explain(outer, arch="sm_90")
    assert [ins.kind for ins in ex.plan.body].count("gather") == 2
    assert ex.ptx
