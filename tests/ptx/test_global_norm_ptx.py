"""Clip-by-global-norm then Adam as the cuda backend compiles it, for sm_90 without a GPU: the
partials kernel and the foreach kernel that folds them, with no atomics (a fixed order)."""

import re

import fuse_examples as ex
import pytest

pytest.importorskip("numba.cuda")

import fusedarrays as fa  # noqa: E402
from fusedarrays.compiler import devicelib  # noqa: E402
from fusedarrays.cuda.compile import compile_ptx  # noqa: E402

ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.", re.M)


def test_both_launches_compile_without_atomics():
    clipped = fa.fuse(ex.clipped_adam)
    lists = [[fa.asarray(a) for a in ex.state(n, seed)] for seed, n in enumerate((8, 5))]
    clipped.foreach(*map(list, zip(*lists)), lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, step=1,
                    max_norm=1.0)
    explanation = fa.explain(clipped, arch="sm_90")
    (signature,) = explanation.signatures()
    assert [k["name"][:3] for k in signature["kernels"]] == ["fg_", "fe_"]
    (_, entry), = clipped._foreach.entries()
    (partials, _), (step, _) = entry.plans()
    ptxs = []
    for plan, kernel in zip((partials, step), signature["kernels"]):
        ptx, _ = compile_ptx(kernel["source"], plan.name, plan.param_types(), "sm_90",
                             devicelib.helpers())
        body = ptx[ptx.index(".entry"):]
        assert not ATOMIC.search(body)
        assert "bar.sync" in body      # a block's tree waits at each level
        ptxs.append(body)
    first, second = ptxs
    # the partials kernel reads g, stores nothing of the tensors, and stores float64 partials
    assert "ld.global.f32" in first and "st.global.f32" not in first
    assert "st.global.f64" in first
    # the foreach kernel folds them in float64, then runs Adam with 128-bit accesses
    assert "ld.global.f64" in second and re.search(r"add\.(rn\.)?f64", second)
    assert second.count("ld.global.v4.f32") == 4 and second.count("st.global.v4.f32") == 3
