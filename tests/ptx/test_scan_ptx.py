"""Scan kernels compiled to PTX for sm_90 without a GPU: both cuda schedules, every scan, float16
running in float32, integers narrower than the running type, include_initial, and no atomics
(a fixed order: the same bits every run)."""

import re

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import fusedarrays as fa  # noqa: E402

_ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.", re.M)


def test_every_scan_compiles_on_both_schedules_without_atomics():
    rng = np.random.default_rng(61)
    x = fa.asarray(rng.standard_normal((8, 512)).astype(np.float32))
    h = fa.asarray(rng.standard_normal((8, 512)).astype(np.float16))
    i = fa.asarray(rng.integers(-3, 3, (8, 512)).astype(np.int8))
    cases = [fa.cumsum((x - 1.5) ** 2, axis=1), fa.cumsum(x, axis=0), fa.cumsum(h, axis=1),
             fa.cumulative_prod(i, axis=1, include_initial=True), fa.cumprod(x.T, axis=1),
             fa.cumsum(i[:, ::-1], axis=1, dtype=np.int8), fa.cumsum(x[::-1, ::-1], axis=0)]
    schedules = set()
    for array in cases:
        explanation = fa.explain(array, arch="sm_90")
        for (plan, _), ptx in zip(explanation.kernels, explanation.ptx):
            schedules.add((plan.scan, plan.schedule))
            assert plan.name in ptx
            assert not _ATOMIC.search(ptx)
            if plan.schedule == "rows":
                assert "bar.sync" in ptx and ".shared" in ptx   # tiles staged, chunks scanned
    assert {s for _, s in schedules} == {"rows", "cols"}
    assert ("cumulative_prod", "rows") in schedules


def test_float16_runs_in_float32():
    h = fa.asarray(np.ones((4, 300), np.float16))
    explanation = fa.explain(fa.cumsum(h, axis=1), arch="sm_90")
    (ptx,) = explanation.ptx
    assert re.search(r"add\.(rn\.)?f32", ptx)
    assert not re.search(r"add\.(rn\.)?f16", ptx)


def test_work_after_a_scan_is_a_second_kernel():
    x = fa.asarray(np.ones((4, 300), np.float32))
    explanation = fa.explain(fa.exp(fa.cumsum(x * 2, axis=1)) - x, arch="sm_90")
    assert explanation.launches == 2
    assert all(len(p) > 0 for p in explanation.ptx)
