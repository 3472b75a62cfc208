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
