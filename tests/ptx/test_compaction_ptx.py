"""The mask compaction's kernels compiled to PTX for sm_90 without a GPU: the count, the
indices of both index types, the ranks and the scatter of values, a block per row through
shared memory (barriers, no atomics: the output's order is fixed by the scan), a full row's
loads issued before their uses, the index stored as the type asked for."""

import re

import pytest

pytest.importorskip("numba.cuda")

from fusedarrays.compiler import CompactPlan, devicelib, render  # noqa: E402
from fusedarrays.compiler.targets.cuda.compact import UNROLL  # noqa: E402
from fusedarrays.runtime.backend import arch_compiler  # noqa: E402

_ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.(\w+)", re.M)


@pytest.mark.parametrize("mode,code", [("count", "i64"), ("index", "i32"), ("index", "i64"),
                                       ("rank", "i32"), ("scatter", "f32"), ("scatter", "f16"),
                                       ("scatter", "f64"), ("scatter", "b1")])
def test_compaction_kernels_compile(mode, code):
    plan = CompactPlan(mode, code)
    ptx, entry = arch_compiler().ptx(render(plan, "cuda"), plan.name,
                                     plan.param_types(), "sm_90", devicelib.helpers())
    assert plan.name in entry
    assert "bar.sync" in ptx and ".shared" in ptx
    assert not _ATOMIC.search(ptx)
    body = ptx[ptx.index(".entry"):]
    loads = [ln for ln in body.splitlines() if re.search(r"ld\.global(\.nc)?\.u8", ln)]
    assert len(loads) >= UNROLL + 1                 # a full row's, then the last row's
    # the full row's loads follow one another, no use of a loaded byte between them
    first = body.index(loads[0])
    window = body[first:body.index(loads[UNROLL - 1]) + len(loads[UNROLL - 1])]
    assert window.count("ld.global") == UNROLL and "st.shared" not in window
    assert re.search(r"ld\.global(\.nc)?\.u8", ptx)               # the mask, a byte at a time
    stored = {"i32": "(s|u|b)32", "i64": "(s|u|b)64", "f32": "(f|b)32", "f16": "(u|b)16",
              "f64": "(f|b)64", "b1": "(u|s|b)8"}["i64" if mode == "count" else code]
    assert re.search(rf"st\.global\.{stored}", ptx), ptx[-2000:]


def test_plans_are_keyed_by_kernel():
    plans = [CompactPlan(m, c) for m, c in (("count", "i64"), ("index", "i32"),
                                            ("index", "i64"), ("rank", "i32"),
                                            ("scatter", "f32"), ("scatter", "i32"))]
    assert len({p.key for p in plans}) == 6 and len({p.name for p in plans}) == 6
    with pytest.raises(ValueError, match="no compaction kernel"):
        CompactPlan("index", "f32")
    with pytest.raises(ValueError, match="no compaction kernel"):
        CompactPlan("scatter", "c64")
