"""The product kernel compiled to PTX for sm_90 without a GPU: every dtype kind and both load
orders, shared-memory slabs with barriers, the accumulators in registers (no local memory),
float16 summed in float32, and no atomics (each output summed in K order: the same bits every
run)."""

import re

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import fusedarrays as fa  # noqa: E402
from fusedarrays.compiler.product import ProductPlan  # noqa: E402

_ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.", re.M)


def _product_ptx(array) -> tuple[ProductPlan, str]:
    explanation = fa.explain(array, arch="sm_90")
    (plan, _), = [(p, s) for p, s in explanation.kernels if isinstance(p, ProductPlan)]
    index = [p for p, _ in explanation.kernels].index(plan)
    return plan, explanation.ptx[index]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "bool"])
def test_the_tiled_kernel_compiles_with_shared_slabs_and_no_local_memory(dtype):
    rng = np.random.default_rng(90)
    a = fa.asarray(rng.standard_normal((70, 20)).astype(dtype))
    b = fa.asarray(rng.standard_normal((3, 20, 9)).astype(dtype))
    plan, ptx = _product_ptx(a @ b + 1)
    assert plan.name in ptx
    assert re.search(r"\.shared\s", ptx) and "bar.sync" in ptx       # slabs staged, waited on
    assert re.search(r"ld\.shared", ptx) and re.search(r"st\.shared", ptx)
    assert ".local" not in ptx                                        # 16 accumulators: registers
    assert not _ATOMIC.search(ptx)


def test_float16_sums_in_float32_and_transposed_operands_load_along_their_unit_axis():
    h = fa.asarray(np.ones((40, 30), np.float16))
    plan, ptx = _product_ptx(h @ h.T)
    assert plan.along == ("col", "row")       # b = h.T is contiguous along K: threads along K
    assert re.search(r"(fma\.rn|add(\.rn)?)\.f32", ptx) and "cvt.f32.f16" in ptx
    assert not re.search(r"(fma\.rn|add(\.rn)?)\.f16", ptx)
