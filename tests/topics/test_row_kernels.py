"""Row kernels: a reduction along each row and the elementwise work before and after it in one
kernel (softmax, layer norm, any/min sections), against NumPy (tests/reductioncases.py).

- cpu at its defaults: one kernel per case, rows walked element by element.
- sim: the CUDA row kernel in numba's simulator, walking 16-byte vectors where the rows allow it,
  else element by element; the slots of a row a thread keeps on chip for its row length and
  dtype, with the same bits as keeping none.
- ptx (sm_90, no GPU): softmax as one kernel, 16-byte vectors and row constants computed once,
  row results on chip and a division by the row's reciprocal, rows that fit kept whole with one
  exp an element.
"""

import re

import numpy as np
import pytest
import reductioncases as rc

import fusedarrays as fa
from fusedarrays import config


def test_softmax_and_layer_norm_are_one_kernel_per_call():
    rng = np.random.default_rng(20)
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    w, b = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    a, fw, fb = fa.asarray(x)[:, ::-1], fa.asarray(w), fa.asarray(b)
    x = x[:, ::-1]
    mu = a.mean(axis=-1, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=-1, keepdims=True)
    layer_norm = (a - mu) / fa.sqrt(var + 1e-5) * fw + fb
    assert fa.explain(layer_norm).launches == 1
    fa.reset_stats()
    got = layer_norm.get()
    assert fa.stats()["launches"] == 1
    m = x.mean(axis=-1, keepdims=True)
    want = (x - m) / np.sqrt(((x - m) ** 2).mean(axis=-1, keepdims=True) + 1e-5) * w + b
    rc.check(got, want, x, "layer norm")
    fa.reset_stats()
    got = fa.softmax(a).get()
    assert fa.stats()["launches"] == 1
    e = np.exp(x - x.max(-1, keepdims=True))
    rc.check(got, e / e.sum(-1, keepdims=True), x, "softmax")
    rows16k = fa.asarray(np.ones((8, 16384), np.float32))   # planned only
    assert fa.explain(fa.softmax(rows16k)).launches == 1    # rows of 16 K: still one kernel
    flat = fa.asarray(np.ones(1 << 20, np.float32))
    assert fa.explain(flat - flat.max(keepdims=True)).launches == 2   # split max, subtract
    any_row = (a * (a > 3).any(axis=-1, keepdims=True) + a.min(axis=-1, keepdims=True)).get()
    rc.check(any_row, x * (x > 3).any(axis=-1, keepdims=True) + x.min(axis=-1, keepdims=True),
             x, "any and min sections in one kernel")


def test_row_kernels_over_views():
    # cpu at its defaults: one kernel per case, rows walked element by element
    rc.check_row_kernels(rc.seed_of("row kernels cpu"), rows=5)


# sim

@pytest.mark.tiers("sim")
def test_softmax_layer_norm_and_any_rows_in_one_kernel():
    rng = np.random.default_rng(24)
    x = rng.standard_normal((3, 200)).astype(np.float32)
    a = fa.asarray(x)
    mu = a.mean(axis=-1, keepdims=True)
    norm = (a - mu) / fa.sqrt(((a - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    mixed = a * (a > 2).any(axis=-1, keepdims=True) + a.sum(axis=-1, keepdims=True)
    fa.reset_stats()
    got = [fa.softmax(a).get(), norm.get(), mixed.get()]
    assert fa.stats()["launches"] == 3
    e = np.exp(x - x.max(-1, keepdims=True))
    m = x.mean(-1, keepdims=True)
    rc.check(got[0], e / e.sum(-1, keepdims=True), x, "softmax (seed 24)")
    rc.check(got[1], (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5), x,
             "layer norm (seed 24)")
    rc.check(got[2], x * (x > 2).any(-1, keepdims=True) + x.sum(-1, keepdims=True), x,
             "any, then sum, then the elements (seed 24)")


@pytest.mark.tiers("sim")
def test_row_kernels_over_views_vectorised_or_element_by_element():
    # the cuda kernel walks 16-byte vectors where the rows allow it, else element by element
    assert rc.check_row_kernels(rc.seed_of("row kernels sim"), rows=2) == {1, 4, 8}


def _row_cases(a, w, b):
    mu = a.mean(axis=-1, keepdims=True)
    d = a - mu
    def norm():
        return d / fa.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)
    return {"softmax": lambda: fa.softmax(a), "log_softmax": lambda: fa.log_softmax(a),
            "layer norm": norm, "layer norm, weight and bias": lambda: norm() * w + b}


def _numpy_row_cases(x, w, b):
    x, w, b = (v.astype(np.float64) for v in (x, w, b))
    e = np.exp(x - x.max(-1, keepdims=True))
    d = x - x.mean(-1, keepdims=True)
    norm = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)
    return {"softmax": e / e.sum(-1, keepdims=True),
            "log_softmax": x - x.max(-1, keepdims=True) - np.log(e.sum(-1, keepdims=True)),
            "layer norm": norm, "layer norm, weight and bias": norm * w + b}


# (dtype, row length, the slots a thread keeps): each dtype's longest row kept (a 4096-float row:
# four 16-byte vectors a thread under a block of 256), the next longer one walked as before, and
# rows that leave a thread's last slot past the row's end; float64 walks element by element
# (no 16-byte vector of it: ir/layout.VECTOR_LANES), so keeps nothing.
ROW_CACHE_CASES = [(np.float32, 200, 1), (np.float32, 1000, 1), (np.float32, 4000, 4),
                   (np.float32, 4096, 4), (np.float32, 4100, 0), (np.float16, 4096, 2),
                   (np.float16, 4112, 0), (np.float64, 2048, 0)]


@pytest.mark.parametrize("dtype, n, slots", ROW_CACHE_CASES)
@pytest.mark.tiers("sim")
def test_a_row_kernel_keeps_the_slots_its_row_length_and_dtype_allow(dtype, n, slots):
    """What each case's plans keep (planned, not run): the run below takes the cases that keep
    something, since a kernel that keeps nothing is the one it would be compared with."""
    from fusedarrays.ir.reductions import BLOCK_THREADS

    rng = np.random.default_rng(rc.seed_of("row slots", np.dtype(dtype).name, n))
    x, w, b = ((rng.standard_normal(shape) * 3).astype(dtype) for shape in ((2, n), n, n))
    # cuda's block width, as in the run below: the slots a thread keeps are a block's share
    with config.override(SIM_BLOCK=BLOCK_THREADS):
        for what, make in _row_cases(fa.asarray(x), fa.asarray(w), fa.asarray(b)).items():
            (plan, _), = fa.explain(make()).kernels
            assert plan.row_slots == (0 if "weight" in what else slots), what


@pytest.mark.parametrize("dtype, n, slots", [case for case in ROW_CACHE_CASES[1:] if case[2]])
@pytest.mark.tiers("sim")
def test_row_kernels_keep_a_threads_share_of_the_row_with_the_same_bits(dtype, n, slots,
                                                                        monkeypatch):
    """Where a thread's share of a row fits its registers, the kernel keeps it (and the values
    later walks need) across the walks; the bits are those of the kernel that reads the row
    again in each walk, and both agree with NumPy. Of two rows, one holds a NaN. Blocks
    of cuda's width (the fold's order is the block's)."""
    from fusedarrays.compiler import rowfusion
    from fusedarrays.ir.reductions import BLOCK_THREADS
    from fusedarrays.runtime import realize

    monkeypatch.setattr(realize, "_records", {})
    # cuda's block width for both kernels: a block's folding order (and so the bits) is its own
    with config.override(SIM_BLOCK=BLOCK_THREADS):
        _check_row_cache(dtype, n, slots, monkeypatch, rowfusion, realize)


def _check_row_cache(dtype, n, slots, monkeypatch, rowfusion, realize):

    seed = rc.seed_of("row cache", np.dtype(dtype).name, n)
    rng = np.random.default_rng(seed)
    x, w, b = ((rng.standard_normal(shape) * 3).astype(dtype) for shape in ((2, n), n, n))
    x[1, n // 3] = np.nan
    a, wa, ba = fa.asarray(x), fa.asarray(w), fa.asarray(b)
    kept = {}
    for what, make in _row_cases(a, wa, ba).items():
        got = make()
        (plan, _), = fa.explain(got).kernels
        # weight and bias, read first by the last walk: walked as before (rowfusion.row_slots)
        assert plan.row_slots == (0 if "weight" in what else slots), what
        kept[what] = got.get()
    with monkeypatch.context() as m:   # the same kernels, each walk reading the row again
        m.setattr(rowfusion, "row_slots", lambda *args, **kwargs: 0)
        m.setattr(realize, "_records", {})
        for what, make in _row_cases(a, wa, ba).items():
            again = make()
            assert fa.explain(again).kernels[0][0].row_slots == 0
            np.testing.assert_array_equal(kept[what].view(f"u{x.itemsize}"),
                                          again.get().view(f"u{x.itemsize}"),
                                          err_msg=f"{what}, {n} (seed {seed})")
    want = _numpy_row_cases(x, w, b)
    for what, values in kept.items():
        rc.check(values[::2], want[what][::2].astype(dtype), x[::2], f"{what} (seed {seed})")
        assert np.isnan(values[1]).all(), what   # the NaN's row, as NumPy's


@pytest.mark.parametrize("view", ["reversed", "strided"])
@pytest.mark.tiers("sim")
def test_row_kernels_over_views_walked_element_by_element_keep_nothing(view):
    seed = rc.seed_of("row cache views", view)
    rng = np.random.default_rng(seed)
    x, w, b = ((rng.standard_normal(shape) * 3).astype(np.float32) for shape in ((2, 96), 48, 48))
    xs = x[:, ::-1][:, :48] if view == "reversed" else x[:, ::2]
    a = fa.asarray(x)[:, ::-1][:, :48] if view == "reversed" else fa.asarray(x)[:, ::2]
    want = _numpy_row_cases(np.ascontiguousarray(xs), w, b)
    for what, make in _row_cases(a, fa.asarray(w), fa.asarray(b)).items():
        got = make()
        for plan, _ in fa.explain(got).kernels:
            assert getattr(plan, "row_slots", 0) == 0, what
        rc.check(got.get(), want[what].astype(np.float32), xs, f"{what} {view} (seed {seed})")


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

def _ptx_of(array):
    explanation = fa.explain(array, arch="sm_90")
    return explanation, explanation.ptx


@pytest.mark.tiers("ptx")
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


@pytest.mark.tiers("ptx")
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


@pytest.mark.tiers("ptx")
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


@pytest.mark.tiers("ptx")
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
