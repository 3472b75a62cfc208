"""Reduction kernels compiled to PTX for sm_90 without a GPU: both cuda schedules, each reduction
kind, float16 accumulating in float32, and no atomics in the accumulation (fixed order): a split
reduction's only atomic is the integer count of an output's finished parts."""

import re

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import fusedarrays as fa  # noqa: E402


def _ptx_of(array):
    explanation = fa.explain(array, arch="sm_90")
    return explanation, explanation.ptx


def test_every_reduction_compiles_on_both_schedules_without_atomics():
    rng = np.random.default_rng(31)
    x = fa.asarray(rng.standard_normal((8, 256)).astype(np.float32))
    h = fa.asarray(rng.standard_normal((8, 256)).astype(np.float16))
    cases = [((x - 1.5) ** 2).sum(axis=1), x.T.argmax(axis=1), x.max(axis=0), h.sum(),
             (x > 0).any(axis=1), h.argmin(axis=0), x.prod(axis=1), (h < 0).all(axis=0),
             x.argmax(axis=1), h.argmin(axis=1), x.T.sum(axis=0)]
    schedules = set()
    for array in cases:
        explanation, ptxs = _ptx_of(array)
        for (plan, _), ptx in zip(explanation.kernels, ptxs):
            schedules.add((plan.reduction, plan.schedule))
            assert plan.name in ptx
            assert not re.search(r"^\s*(@%p\d+\s+)?(atom|red)\.", ptx, re.M)  # no atomics
            if plan.schedule == "rows":
                assert "bar.sync" in ptx           # the block's tree waits at each level
    assert {s for _, s in schedules} == {"rows", "cols"}
    assert ("argmax", "rows") in schedules and ("argmin", "cols") in schedules


def test_split_reductions_fold_in_one_kernel_counted_by_an_integer_atomic_after_a_fence():
    """A split reduction is one kernel: each part's partial stored, ``membar.gl``
    (cuda.threadfence), then one integer ``atom.global.add`` on the output's counter; the
    accumulation itself has no atomics (no float atomic anywhere)."""
    rng = np.random.default_rng(38)
    x = fa.asarray(rng.standard_normal(1 << 16).astype(np.float32))
    m = fa.asarray(rng.standard_normal((300, 3)).astype(np.float32))
    seen = set()
    for array in (((x - 1.5) ** 2).sum(), x[::3].sum(), m.sum(axis=0), m.max(axis=0),
                  fa.asarray(rng.standard_normal((4, 20000)).astype(np.float16)).sum(axis=1)):
        explanation, ptxs = _ptx_of(array)
        assert explanation.launches == 1 and len(ptxs) == 1
        ((plan, _),), (ptx,) = explanation.kernels, ptxs
        assert plan.split > 1
        seen.add(plan.schedule)
        atomics = re.findall(r"^\s*(?:@%p\d+\s+)?((?:atom|red)\.\S+)", ptx, re.M)
        assert atomics and set(atomics) == {"atom.global.add.u32"}, atomics
        assert "membar.gl" in ptx or "fence.sc.gpu" in ptx
        fence = min(ptx.find(f) for f in ("membar.gl", "fence.sc.gpu") if f in ptx)
        assert fence < ptx.find("atom.global.add.u32")   # the partial's store fenced first
    assert seen == {"rows", "cols"}


def test_float16_sums_accumulate_in_float32():
    h = fa.asarray(np.ones((4, 300), np.float16))
    _, (ptx,) = _ptx_of(h.sum(axis=1))
    assert re.search(r"add\.(rn\.)?f32", ptx)
    assert not re.search(r"add\.(rn\.)?f16", ptx)


def test_softmax_is_one_kernel_that_compiles():
    x = fa.asarray(np.ones((4, 300), np.float32))
    explanation, ptxs = _ptx_of(fa.softmax(x))
    assert explanation.launches == 1 and len(ptxs) == 1
    (ptx,) = ptxs
    assert "ex2" in ptx and "bar.sync" in ptx
    # a row's maximum and sum are stored and read back within the kernel: never through the
    # non-coherent read-only path
    assert "ld.global.nc" not in ptx
    assert not re.search(r"^\s*(@%p\d+\s+)?(atom|red)\.", ptx, re.M)


def test_row_kernels_move_16_byte_vectors_and_compute_row_constants_once():
    """Rows longer than a thread keeps (8192 floats): each walk reads the row again."""
    rng = np.random.default_rng(37)
    x = fa.asarray(rng.standard_normal((8, 8192)).astype(np.float32))
    w, b = (fa.asarray(rng.standard_normal(8192).astype(np.float32)) for _ in range(2))
    mu = x.mean(axis=-1, keepdims=True)
    layer_norm = (x - mu) / fa.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5) * w + b
    for array in (fa.softmax(x), layer_norm):
        explanation, (ptx,) = _ptx_of(array)
        assert explanation.kernels[0][0].vector_width == 4
        assert explanation.kernels[0][0].row_slots == 0
        assert len(re.findall(r"ld\.global\.v4\.f32", ptx)) >= 3      # x in every section
        # one store, or two where LLVM unswitches the loop on whether the row's divisor is in
        # its reciprocal's span (cuda/division.py), the divisor being loop-invariant
        assert len(re.findall(r"st\.global\.v4\.f32", ptx)) in (1, 2)
    # the row's sqrt(var + eps) once per row, not per element; (x - mu) ** 2 a multiply
    assert len(re.findall(r"sqrt\.rn\.f32", ptx)) == 1
    assert "pow" not in ptx


def test_row_kernels_keep_row_results_on_chip_and_divide_by_the_rows_reciprocal():
    """The first walk loads FIRST_TURN vectors a thread at once; the block's tree ends within a
    warp; each row's results pass through shared memory (no scalar global load or store); the
    division by the row's constant takes one reciprocal a row (div.rn only where fa_divby falls
    back to a division). Rows longer than a thread keeps (8192 floats)."""
    from fusedarrays.compiler.rowfusion import FIRST_TURN

    rng = np.random.default_rng(41)
    x = fa.asarray(rng.standard_normal((8, 8192)).astype(np.float32))
    mu = x.mean(axis=-1, keepdims=True)
    layer_norm = (x - mu) / fa.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    # one reciprocal for the row's divisor; the layer norm's two means divide their row sums by
    # the row length plainly, once a row (divisions.by_reciprocal: per-element dividends only)
    for array, reciprocals in ((fa.softmax(x), 1), (layer_norm, 1)):
        _, (ptx,) = _ptx_of(array)
        loads = re.findall(r"ld\.global\.(v4\.)?f32", ptx)
        assert loads.count("v4.") >= FIRST_TURN + 2 and "" not in loads
        assert not re.search(r"st\.global\.f32", ptx)
        assert "bar.warp.sync" in ptx
        assert len(re.findall(r"rcp\.rn\.f32", ptx)) == reciprocals
        assert re.search(r"fma\.rn\.f32", ptx)


def test_row_kernels_that_fit_keep_the_row_and_take_one_exp_an_element():
    """A 4096-float row is four 16-byte vectors a thread under a block of 256: the kernel loads
    them once (no loop: one 16-byte load a slot), keeps them and what later walks need in
    registers, and a softmax takes one ``exp`` (``ex2.approx``) an element where it took two
    (the sum's and the output's); a layer norm's ``x - mean`` once too (its two subtractions an
    element: the variance's and the output's, one value). The stores: one a slot."""
    rng = np.random.default_rng(43)
    x = fa.asarray(rng.standard_normal((8, 4096)).astype(np.float32))
    w, b = (fa.asarray(rng.standard_normal(4096).astype(np.float32)) for _ in range(2))
    mu = x.mean(axis=-1, keepdims=True)
    layer_norm = (x - mu) / fa.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    # weight and bias, read first by the last walk: walked as before (rowfusion.row_slots)
    assert fa.explain(layer_norm * w + b).kernels[0][0].row_slots == 0
    for array, reads, exps in ((fa.softmax(x), 1, 1), (fa.log_softmax(x), 1, 1),
                               (layer_norm, 1, 0)):
        explanation, (ptx,) = _ptx_of(array)
        plan = explanation.kernels[0][0]
        assert (plan.row_slots, plan.vector_width) == (4, 4)
        kept = plan.row_slots * plan.vector_width      # elements a thread holds
        assert len(re.findall(r"ld\.global\.v4\.f32", ptx)) == reads * plan.row_slots
        assert len(re.findall(r"ex2\.approx", ptx)) == exps * kept
        assert len(re.findall(r"st\.global\.v4\.f32", ptx)) == plan.row_slots
        assert not re.search(r"\.local", ptx)      # nothing spilled
    subtractions = re.findall(r"sub\.(?:rn\.)?f32", ptx)
    assert len(subtractions) == kept, len(subtractions)
