"""Reductions on the sim backend: the generated CUDA reduction kernels (a block per output with
its shared-memory tree, and a thread per output) run in numba's simulator, against NumPy
(tests/reductioncases.py). Tiny shapes: every simulated thread is a Python thread."""

import numpy as np
import pytest
import reductioncases as rc

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.ir.reductions import REDUCTIONS

SHAPE = (2, 3, 8)


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_every_reduction_on_both_cuda_schedules(name):
    # axis -1 of a contiguous array: a block per output (rows); axis 1 of a negative-step view:
    # a thread per output (cols); None: one block for everything
    some = [np.dtype(t) for t in ("int8", "float32", "bool", "float16", "uint64")]
    rc.check_reduction_over_dtypes(name, some[:2], SHAPE, axis=-1, layout="contiguous")
    rc.check_reduction_over_dtypes(name, some[2:], SHAPE, axis=1, layout="negative")
    rc.check_reduction_over_dtypes(name, some[1:2], SHAPE, axis=None, layout="transposed")


def test_axes_and_layouts():
    rc.check_axes_and_layouts(["argmax"], shape=(2, 3, 4))


def test_ties_and_nan_across_the_threads_of_a_block():
    # rows longer than the block: each thread folds several elements, the tree merges them;
    # the first of equal maxima (and the first NaN) must win whichever thread holds it
    rng = np.random.default_rng(21)
    x = rng.integers(0, 4, (2, 100)).astype(np.float32)
    x[1, [40, 90]] = np.nan
    a = fa.asarray(x)
    for name in ("argmax", "argmin", "max", "min", "sum"):
        got = getattr(fa, name)(a, axis=1).get()
        rc.check(got, getattr(np, name)(x, axis=1), x, f"{name} ties (seed 21)")


def test_softmax_and_squared_distance():
    rng = np.random.default_rng(22)
    x, y = (rng.standard_normal((3, 40)).astype(np.float32) for _ in range(2))
    a, b = fa.asarray(x), fa.asarray(y)
    rc.check(((a - b) ** 2).sum().get(), ((x - y) ** 2).sum(), x, "((x-y)**2).sum()")
    e = np.exp(x - x.max(-1, keepdims=True))
    rc.check(fa.softmax(a).get(), e / e.sum(-1, keepdims=True), x, "softmax")
    rc.check(a.var(axis=0).get(), x.var(axis=0), x, "var over columns")


def test_split_reductions_fold_partials_in_the_same_launch():
    # (200, 3) over axis 0: a thread per output, 4 parts each, the thread that finishes an
    # output's last part folds them; 9000 elements: 2 parts, the last block folds them;
    # 6000 of a strided view: a thread per part, 94 parts, the grid's last block folds them
    rng = np.random.default_rng(23)
    for shape, axis, parts in [((200, 3), 0, "parts per output"), ((9000,), None, "parts"),
                               ((12000,), None, "parts")]:
        x = rng.standard_normal(shape).astype(np.float32)
        a = fa.asarray(x)[::2] if shape == (12000,) else fa.asarray(x)
        x = x[::2] if shape == (12000,) else x
        assert parts in " ".join(fa.explain(a.sum(axis=axis)).program.why)
        for name in ("sum", "max", "any"):
            fa.reset_stats()
            got = getattr(fa, name)(a, axis=axis).get()
            assert fa.stats()["launches"] == 1, name
            rc.check(got, getattr(np, name)(x, axis=axis), x, f"{name} {shape} (seed 23)")


@pytest.mark.parametrize("view", ["contiguous", "strided"])
def test_a_split_full_sum_is_one_launch_and_its_fixed_order_bit_for_bit(view):
    # contiguous: 40000 elements, 5 parts of a block each (rows), the parts folded in order by
    # the block that finishes last; strided: 13334 elements, a thread per part (cols), 209
    # parts folded by the last block's threads and tree. Bits: NumPy emulating that order.
    rng = np.random.default_rng(26)
    x = rng.random(40000, dtype=np.float32) + np.float32(0.5)   # no -0.0 (see fixed_order_sum)
    a, x = (fa.asarray(x), x) if view == "contiguous" else (fa.asarray(x)[::3], x[::3])
    program = fa.explain(a.sum()).program
    (step,) = program.steps
    assert step.plan.split == (5 if view == "contiguous" else 209), program.why
    assert step.plan.schedule == ("rows" if view == "contiguous" else "cols")
    threads = 1 << (min(config.get("SIM_BLOCK"), 256).bit_length() - 1)
    want = rc.fixed_order_sum(x, step.plan, threads)
    runs = []
    for _ in range(2):
        fa.reset_stats()
        runs.append(fa.sum(a).get())
        assert fa.stats()["launches"] == 1
    assert runs[0].tobytes() == runs[1].tobytes() == want.tobytes(), (runs, want, "seed 26")
    rc.check(runs[0], x.sum(), x, "split sum (seed 26)")


def test_split_reductions_give_cpu_and_sim_the_same_exact_bits():
    # integer sums and maxima are exact: the backends agree bit for bit (as before the fold
    # moved into the reduction's launch), each in one launch
    rng = np.random.default_rng(27)
    ints = rng.integers(-1000, 1000, 30000).astype(np.int32)
    floats = rng.standard_normal(30000)
    results = {}
    for backend in ("cpu", "sim"):
        with config.override(BACKEND=backend):
            fa.reset_stats()
            results[backend] = [fa.asarray(ints).sum().get(), fa.asarray(floats).max().get(),
                                fa.asarray(ints.reshape(100, 300)).sum(axis=0).get()]
            assert fa.stats()["launches"] == 3, backend
    for got_cpu, got_sim in zip(results["cpu"], results["sim"]):
        assert got_cpu.tobytes() == got_sim.tobytes(), "seed 27"
    np.testing.assert_array_equal(results["sim"][0], ints.sum())
    np.testing.assert_array_equal(results["sim"][1], floats.max())
    np.testing.assert_array_equal(results["sim"][2], ints.reshape(100, 300).sum(axis=0))


def test_two_split_reductions_of_one_program_use_the_counters_in_turn():
    rng = np.random.default_rng(28)
    x = rng.standard_normal((3, 9000)).astype(np.float32)
    a = fa.asarray(x)
    fa.reset_stats()
    got = (a.sum(axis=1, keepdims=True) - a.max(axis=0).sum()).get()
    assert fa.stats()["launches"] == 4   # three reductions (two split, one not), the result
    rc.check(got, x.sum(axis=1, keepdims=True) - x.max(axis=0).sum(), x, "two splits (seed 28)")


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


def test_gradient_clipping_inside_fa_fuse():
    @fa.fuse
    def clip(g, c):
        g *= fa.minimum(1.0, c / fa.linalg.vector_norm(g))

    x = np.random.default_rng(25).standard_normal(300).astype(np.float32)
    g = fa.asarray(x)
    clip(g, 0.5)
    rc.check(g.get(), x * np.float32(0.5) / np.linalg.norm(x), x, "clip (seed 25)")


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
