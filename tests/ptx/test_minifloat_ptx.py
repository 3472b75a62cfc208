"""bfloat16 and float8 in the PTX for sm_90 (no GPU needed): aligned contiguous bfloat16 moves in
128-bit accesses, the float8 formats compile through compiler/minifloat's helpers, a mixed-format
expression compiles without a call."""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):
        yield


def count(pattern, ptx):
    return len(re.findall(pattern, ptx))


def test_bfloat16_has_128_bit_loads_and_stores():
    rng = np.random.default_rng(3401)
    a, b, c = (fa.asarray(rng.standard_normal(1000).astype(ml_dtypes.bfloat16)) for _ in range(3))
    ex = fa.explain(a * b + c, arch="sm_90")
    assert ex.vector_width == 8
    loads = count(r"ld\.global\.v4\.u32", ex.ptx)
    stores = count(r"st\.global\.v4\.(u32|b32)", ex.ptx)
    assert stores >= 1 and loads == 3 * stores
    assert "ld.global.v2" not in ex.ptx, "each 128-bit load must stay one load"
    assert "call" not in ex.ptx.split("{", 1)[1], "helpers are inlined"


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_and_bfloat16_mixed_compile_inline(dtype):
    rng = np.random.default_rng(3402)
    x = fa.asarray(rng.standard_normal(1000).astype(getattr(ml_dtypes, dtype)))
    w = fa.asarray(rng.standard_normal(1000).astype(ml_dtypes.bfloat16))
    y = (x.astype(fa.float32) * 2.0).astype(fa.bfloat16) + w * 0.5
    ex = fa.explain(y, arch="sm_90")
    assert "ld.global.u8" in ex.ptx and "st.global" in ex.ptx
    assert "call" not in ex.ptx.split("{", 1)[1], "helpers are inlined"


def test_kernel_without_helpers_has_the_minifloat_names():
    """A hand-written kernel compiled with no helper set (tests/gpu/test_cuda_backend's) still gets
    ld_bf16 …: compiler/minifloat.bind compiles what the namespace lacks."""
    from fusedarrays.cuda.compile import compile_ptx

    source = ("def k(n, p0, p1, p2):\n    i = cv_i64(cuda.grid(1))\n    if i < n:\n"
              "        st_e4m3(p2, i, ld_bf16(p0, i) * ld_f32(p1, i))\n")
    ptx, entry = compile_ptx(source, "k", ("i64", "ptr", "ptr", "ptr"), "sm_90", {})
    assert "ld.global.u16" in ptx and "st.global.u8" in ptx
    plain = "def k(n, p0):\n    if n > 0:\n        st_f32(p0, 0, ld_f32(p0, 1))\n"
    assert ".entry" in compile_ptx(plain, "k", ("i64", "ptr"), "sm_90", {})[0]
