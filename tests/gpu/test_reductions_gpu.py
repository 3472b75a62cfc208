"""Reductions on the cuda backend against NumPy (tests/reductioncases.py): every reduction ×
dtype on both cuda schedules, axes × layouts, large shapes (the benchmark's), accuracy and
determinism of float32 sums, and launch counts."""

import numpy as np
import pytest
import reductioncases as rc

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.ir.reductions import REDUCTIONS


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_every_reduction_and_dtype_on_both_schedules(name):
    rc.check_reduction_over_dtypes(name, rc.DTYPES, (6, 5, 300), axis=-1, layout="contiguous")
    rc.check_reduction_over_dtypes(name, rc.DTYPES, (6, 5, 4), axis=1, layout="negative")
    rc.check_reduction_over_dtypes(name, rc.SOME_DTYPES, (6, 5, 4), axis=None,
                                   layout="transposed")


def test_axes_and_layouts():
    rc.check_axes_and_layouts(["sum", "max", "argmin", "all"])
    rc.check_axes_and_layouts(["sum", "argmax"], shape=(30, 70, 129))


@pytest.mark.parametrize("shape,axis", [((1 << 24,), None), ((4096, 4096), 0),
                                        ((4096, 4096), 1), ((1 << 22, 2), 1),
                                        ((3, 1 << 20), None), ((1000, 3000), (0,))])
def test_large_shapes(shape, axis):
    rng = np.random.default_rng(41)
    x = rng.standard_normal(shape).astype(np.float32)
    a = fa.asarray(x)
    for name in ("sum", "max", "argmax") if not isinstance(axis, tuple) else ("sum", "min"):
        got = getattr(fa, name)(a, axis=axis).get()
        rc.check(got, getattr(np, name)(x, axis=axis), x, f"{name} {shape} axis={axis}")


def test_float32_sum_of_2_26_is_accurate_and_deterministic():
    x = np.random.default_rng(42).random(1 << 26, dtype=np.float32)
    a = fa.asarray(x)
    first, second = fa.sum(a).get(), fa.sum(a).get()
    assert first.tobytes() == second.tobytes()
    exact = np.sum(x, dtype=np.float64)
    assert abs(float(first) - exact) / exact <= 1e-6


def test_a_split_sum_is_one_launch_and_its_fixed_order_bit_for_bit():
    # 2^26 float32: 1024 parts of 65536, each by a block of 256 threads and its tree, the
    # partials by the block that finishes last (threads interleaved, then the tree); ten runs,
    # each the bits of NumPy emulating that order (no float atomics: the order never varies)
    x = np.random.default_rng(45).random(1 << 26, dtype=np.float32) + np.float32(0.5)
    a = fa.asarray(x)
    (step,) = fa.explain(a.sum()).program.steps
    assert (step.plan.split, step.plan.schedule) == (1024, "rows")
    want = rc.fixed_order_sum(x, step.plan, 256)
    fa.reset_stats()
    runs = {fa.sum(a).get().tobytes() for _ in range(10)}
    assert fa.stats()["launches"] == 10
    assert runs == {want.tobytes()}, (runs, want, "seed 45")
    strided = x[: 3 << 16][::3]                 # a thread per part, the grid's last block folds
    (step,) = fa.explain(a[: 3 << 16][::3].sum()).program.steps
    assert step.plan.schedule == "cols" and step.plan.split >= 128
    got = {fa.sum(a[: 3 << 16][::3]).get().tobytes() for _ in range(5)}
    assert got == {rc.fixed_order_sum(strided, step.plan, 256).tobytes()}, "seed 45"


def test_launches_and_values_of_the_benchmark_workloads():
    rng = np.random.default_rng(43)
    x, y = (rng.standard_normal(1 << 22).astype(np.float32) for _ in range(2))
    a, b = fa.asarray(x), fa.asarray(y)
    fa.reset_stats()
    got = ((a - b) ** 2).sum().get()
    rc.check(got, ((x - y) ** 2).sum(), x, "((x-y)**2).sum()")
    assert fa.stats()["launches"] == 1      # split, the partials folded in the same launch
    sq = rng.standard_normal((4096, 4096)).astype(np.float32)
    e = np.exp(sq - sq.max(-1, keepdims=True))
    fa.reset_stats()
    rc.check(fa.softmax(fa.asarray(sq)).get(), e / e.sum(-1, keepdims=True), sq, "softmax")
    assert fa.stats()["launches"] == 1
    long = rng.standard_normal((64, 16384)).astype(np.float32)
    e = np.exp(long - long.max(-1, keepdims=True))
    fa.reset_stats()
    rc.check(fa.softmax(fa.asarray(long)).get(), e / e.sum(-1, keepdims=True), long,
             "softmax of 16 K rows")
    assert fa.stats()["launches"] == 1
    h = sq.astype(np.float16)
    rc.check(fa.asarray(h).sum(axis=1).get(), h.sum(axis=1), h, "float16 row sums")


def test_gradient_clipping_inside_fa_fuse():
    @fa.fuse
    def clip(g, c):
        g *= fa.minimum(1.0, c / fa.linalg.vector_norm(g))

    x = np.random.default_rng(44).standard_normal(1 << 22).astype(np.float32)
    g = fa.asarray(x)
    fa.reset_stats()
    clip(g, 0.5)
    rc.check(g.get(), x * np.float32(0.5) / np.linalg.norm(x), x, "clip")
    assert fa.stats()["launches"] == 2     # the norm's parts and their fold, the scaling
