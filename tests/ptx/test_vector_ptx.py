"""128-bit accesses in the PTX for sm_90 of real fused expressions (no GPU needed)."""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):
        yield


def ptx_of(expr):
    ex = fa.explain(expr, arch="sm_90")
    return ex, ex.ptx


def count(pattern, ptx):
    return len(re.findall(pattern, ptx))


def test_float32_axpb_has_128_bit_loads_and_stores():
    rng = np.random.default_rng(110)
    a, b, c = (fa.asarray(rng.standard_normal(1000).astype(np.float32)) for _ in range(3))
    ex, ptx = ptx_of(a * b + c)
    assert ex.vector_width == 4
    # NVVM may unroll the grid-stride loop: count loads per store.
    loads, stores = count(r"ld\.global\.v4\.f32", ptx), count(r"st\.global\.v4\.f32", ptx)
    assert stores >= 1 and loads == 3 * stores


def test_float16_has_128_bit_loads():
    rng = np.random.default_rng(111)
    a, b, c = (fa.asarray(rng.standard_normal(1000).astype(np.float16)) for _ in range(3))
    ex, ptx = ptx_of(a * b + c)
    assert ex.vector_width == 8
    loads, stores = count(r"ld\.global\.v4\.u32", ptx), count(r"st\.global\.v4\.(u32|b32)", ptx)
    assert stores >= 1 and loads == 3 * stores
    assert "ld.global.v2" not in ptx, "each 128-bit load must stay one load"


def test_broadcast_rows_keep_width_4_and_divide_nothing_per_element():
    rng = np.random.default_rng(112)
    x = fa.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    b, s = (fa.asarray(rng.standard_normal(n).astype(np.float32)) for n in (256, 64))
    ex, ptx = ptx_of((x + b[None, :]) * s[:, None])
    assert ex.plan.schedule == "rows" and ex.vector_width == 4
    loads, stores = count(r"ld\.global\.v4\.f32", ptx), count(r"st\.global\.v4\.f32", ptx)
    assert stores >= 1 and loads == 2 * stores                # x and b; s once per row
    assert count(r"\b(div|rem)\.s64", ptx) <= 2               # per row/launch, not per element


def test_transposed_operand_goes_through_shared_memory():
    rng = np.random.default_rng(113)
    x = fa.asarray(rng.standard_normal((256, 64)).astype(np.float32))
    b, s = (fa.asarray(rng.standard_normal(n).astype(np.float32)) for n in (256, 64))
    ex, ptx = ptx_of((x.T + b[None, :]) * s[:, None])
    assert ex.plan.schedule == "tiled"
    assert "ld.shared.f32" in ptx and "st.shared.f32" in ptx and "bar.sync" in ptx


def test_a_full_tile_issues_all_its_loads_before_waiting_on_any():
    """Each thread of a full tile loads 4 vectors of the transposed operand, and in the compute
    phase 4 vectors of the contiguous one, with no shared store or global store between them: in
    order of issue, a store waits for the load it stores."""
    rng = np.random.default_rng(114)
    x = fa.asarray(rng.standard_normal((256, 128)).astype(np.float32))
    b, s = (fa.asarray(rng.standard_normal(n).astype(np.float32)) for n in (256, 128))
    ex, ptx = ptx_of((x.T + b[None, :]) * s[:, None])
    assert ex.plan.schedule == "tiled" and ex.vector_width == 4
    accesses = re.findall(r"(ld\.global\.v4\.f32|st\.shared|bar\.sync|st\.global\.v4\.f32)", ptx)
    runs = "".join({"ld.global.v4.f32": "L", "st.shared": "S", "bar.sync": "|",
                    "st.global.v4.f32": "W"}[a] for a in accesses)
    assert "LLLLS" in runs and "|LLLL" in runs, runs      # staging loads, then compute loads
    assert "WWWW" in runs, runs


def test_every_unary_float_op_at_three_widths_compiles_for_sm_90(tmp_path):
    """One kernel taking every unary float op at float16, float32 and float64 builds on the cuda
    path too (values: tests/gpu and tests/sim)."""
    import semantics

    _, lazy = semantics.mixed_float_unary_ops()
    with config.override(CACHE_DIR=str(tmp_path)):
        report = fa.precompile(tuple(lazy), arch="sm_90", workers=0)  # 0: one kernel, no server
    assert report["kernels"] == 1 and report["compiled"] == 1
