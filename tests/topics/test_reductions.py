"""Reductions against NumPy (tests/reductioncases.py) on every tier: every reduction × dtype,
every axis choice × layout.

- cpu at its default settings: the statistics and norms built from reductions, NumPy's entry
  points, empty reductions, NaN, accuracy, determinism, and how graphs are cut.
- sim: the generated CUDA reduction kernels (a block per output with its shared-memory tree,
  and a thread per output) in numba's simulator. Tiny shapes: every simulated thread is a
  Python thread.
- cuda: both cuda schedules, large shapes (the benchmark's), accuracy and determinism of
  float32 sums, and launch counts.
- ptx (sm_90, no GPU): both cuda schedules, each reduction kind, float16 accumulating in
  float32, and no atomics in the accumulation (fixed order).
Row kernels: tests/topics/test_row_kernels.py; split reductions: test_split_reductions.py.
"""

import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import reductioncases as rc
from hypothesis import given, settings
from hypothesis import strategies as st

import fusedarrays as fa
from fusedarrays.ir.reductions import REDUCTIONS

REPO = Path(__file__).resolve().parents[2]
SHAPE = (2, 3, 8)     # sim's
# each tier's calls of rc.check_axes_and_layouts
AXES_AND_LAYOUTS = {"cpu": [(["sum", "max", "argmin", "all"], {})],
                    "sim": [(["argmax"], {"shape": (2, 3, 4)})],
                    "cuda": [(["sum", "max", "argmin", "all"], {}),
                             (["sum", "argmax"], {"shape": (30, 70, 129)})]}
# (seed, size) of the clipped gradient
CLIPPING = {"sim": (25, 300), "cuda": (44, 1 << 22)}


def test_sum_of_every_dtype_matches_numpy_dtype_and_value():
    rc.check_reduction_over_dtypes("sum", rc.DTYPES)


@pytest.mark.parametrize("name", [n for n in REDUCTIONS if n != "sum"])
def test_every_reduction_of_each_dtype_kind_matches_numpy(name):
    rc.check_reduction_over_dtypes(name, rc.SOME_DTYPES)


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_every_axis_choice_and_layout_matches_numpy(tier):
    for names, kwargs in AXES_AND_LAYOUTS[tier]:
        rc.check_axes_and_layouts(names, **kwargs)


def test_large_shapes_split_over_chunks_and_threads():
    rng = np.random.default_rng(7)
    for shape, axis in [((357, 2), 1), ((300, 257), 0), ((64, 3000), 1), ((40000,), None)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for name in ("sum", "argmax"):
            got = getattr(fa, name)(fa.asarray(x)[::-1], axis=axis).get()
            rc.check(got, getattr(np, name)(x[::-1], axis=axis), x, f"{name} {shape} {axis}")


def test_mean_var_std_dtypes_and_values_match_numpy():
    rng = np.random.default_rng(11)
    for dtype in ("int32", "float16", "float32", "bool"):
        x = rc.sample(rng, np.dtype(dtype), 120).reshape(6, 20)[:, ::-1]
        a = fa.asarray(np.ascontiguousarray(x[:, ::-1]))[:, ::-1]   # a negative-step view
        for axis in (None, 1, 0):
            for name, kw in [("mean", {}), ("var", {}), ("std", {"ddof": 1}),
                             ("var", {"dtype": np.float64})]:
                got = getattr(fa, name)(a, axis=axis, **kw).get()
                want = getattr(np, name)(x, axis=axis, **kw)
                rc.check(got, want, x, f"{name} {dtype} axis={axis} {kw}")
    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(fa.var(fa.asarray(x), axis=0, correction=1).get(),
                               np.var(x, axis=0, ddof=1))


def test_numpy_entry_points_and_methods():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((7, 9)).astype(np.float32)
    a = fa.asarray(x)
    cases = [
        (np.sum(a, axis=0), np.sum(x, axis=0)), (np.max(a), np.max(x)),
        (np.amin(a, axis=1), np.amin(x, axis=1)), (np.argmax(a, axis=1), np.argmax(x, axis=1)),
        (np.mean(a, axis=1, keepdims=True), np.mean(x, axis=1, keepdims=True)),
        (np.add.reduce(a), np.add.reduce(x)), (np.maximum.reduce(a, axis=1),
                                               np.maximum.reduce(x, axis=1)),
        (np.multiply.reduce(a, axis=None), np.multiply.reduce(x, axis=None)),
        (np.logical_or.reduce(a > 1), np.logical_or.reduce(x > 1)),
        (a.sum(1), x.sum(1)), (a.T.prod(0), x.T.prod(0)), (a.std(), x.std()),
        (a.any(), x.any()), ((a > 0).all(axis=0), (x > 0).all(axis=0)),
        (np.linalg.norm(a[0]), np.linalg.norm(x[0])), (np.linalg.norm(a), np.linalg.norm(x)),
    ]
    for k, (got, want) in enumerate(cases):
        assert isinstance(got, fa.ndarray), k
        rc.check(got.get(), want, x, f"case {k}")
    assert float(a.sum()) == pytest.approx(float(x.sum()), rel=1e-5)


def test_norms_softmax_logsumexp():
    from scipy import special
    rng = np.random.default_rng(13)
    x = rng.standard_normal((5, 33)).astype(np.float32)
    a = fa.asarray(x)
    for ord in (2, 1, np.inf, -np.inf, 0, 3):
        got = fa.linalg.vector_norm(a, axis=1, ord=ord).get()
        rc.check(got, np.linalg.norm(x, ord=ord, axis=1), x, f"vector_norm ord={ord}")
    rc.check(fa.linalg.vector_norm(a).get(), np.linalg.norm(x.ravel()), x, "full norm")
    rc.check(fa.linalg.norm(a.T, "fro", keepdims=True).get(),
             np.linalg.norm(x.T, "fro", keepdims=True), x, "Frobenius norm")
    rc.check(fa.softmax(a).get(), special.softmax(x, axis=-1), x, "softmax")
    rc.check(fa.log_softmax(a, axis=0).get(), special.log_softmax(x, axis=0), x,
             "log_softmax")
    rc.check(fa.logsumexp(a, axis=1).get(), special.logsumexp(x, axis=1), x, "logsumexp")
    # a matrix norm: the largest singular value (fa.linalg.svdvals, tests/topics/test_linalg.py)
    rc.check(fa.linalg.norm(a, ord=2, axis=(0, 1)).get(), np.linalg.norm(x, ord=2, axis=(0, 1)),
             x, "spectral norm")


def test_empty_reductions_give_numpy_values_or_errors():
    x = np.zeros((0, 3), np.float32)
    a = fa.asarray(x)
    for name in ("sum", "prod", "any", "all"):
        rc.check(getattr(fa, name)(a, axis=0).get(), getattr(np, name)(x, axis=0), x, name)
        rc.check(getattr(fa, name)(a).get(), getattr(np, name)(x), x, name)
    rc.check(fa.max(a, axis=1).get(), np.max(x, axis=1), x, "max over a non-empty axis")
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        fa.max(a, axis=0)
    with pytest.raises(ValueError, match="attempt to get argmin of an empty sequence"):
        fa.argmin(a)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.mean(x, axis=0)
    rc.check(fa.mean(a, axis=0).get(), want, x, "empty mean is NaN")


def test_reductions_of_computed_empty_arrays_of_every_item_size():
    # an empty result's buffer (not one uploaded from the host) read as the input of a
    # reduction that has a value: the array-api-tests' xp.all of an empty uint16 array
    for dtype in ("bool", "uint16", "int32", "int64", "float16", "float64"):
        x = np.zeros((2, 0), dtype)
        a = fa.zeros((2, 0), dtype=dtype) + fa.zeros((2, 0), dtype=dtype)
        for name in ("sum", "prod", "all", "any"):
            rc.check(getattr(fa, name)(a, axis=1).get(), getattr(np, name)(x + x, axis=1),
                     x, f"{name} {dtype}")
        assert bool(fa.all(a == a)) and not bool(fa.any(a))
        rc.check(fa.sum(fa.sum(a, axis=1, keepdims=True) * 2).get(),
                 np.sum(np.sum(x + x, axis=1, keepdims=True) * 2), x, f"sum of sum {dtype}")


def test_a_reductions_checks_hold_on_every_call_and_its_decisions_follow_the_input():
    # what a reduction decides of its arguments is kept per (name, axis, keepdims, dtype=,
    # input dtype, shape): a call that raised keeps nothing, so the next raises too; inputs
    # that differ only in dtype or shape, and list axes, decide afresh
    rng = np.random.default_rng(15)
    print("seed 15")
    empty = fa.asarray(np.zeros((0, 3), np.float32))
    for _ in range(2):
        with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
            fa.max(empty, axis=0)
        with pytest.raises(np.exceptions.AxisError):
            fa.sum(empty, axis=2)
    for dtype in ("int8", "float32", "bool", "int8"):
        x = (rng.standard_normal((5, 7)) * 9).astype(dtype)
        for axis in (1, [0, 1], (0,), None):
            for name in ("sum", "max", "any", "mean"):
                got = getattr(fa, name)(fa.asarray(x), axis=axis, keepdims=True).get()
                want = getattr(np, name)(x, axis=tuple(axis) if isinstance(axis, list) else axis,
                                         keepdims=True)
                rc.check(got, want, x, f"{name} {dtype} axis={axis}")
        y = (rng.standard_normal((3, 7)) * 9).astype(dtype)     # same dtype, another shape
        rc.check(fa.sum(fa.asarray(y), axis=1).get(), np.sum(y, axis=1), y, f"sum {dtype} (3, 7)")


# The first evaluations of a fresh process, where buffers have the smallest numbers: a planner's
# temporary once drew its number from another counter than the buffers, and the leaf of the
# temporary (2, 1) was the interned leaf of the first buffer made, so d + x.max(...) read the
# maximum twice. Each case runs first in its own process.
_FIRST_IN_A_PROCESS = """
import numpy as np, fusedarrays as fa
rng = np.random.default_rng(16)
d = rng.standard_normal({d}).astype(np.float32)
x = rng.standard_normal((2, 256)).astype(np.float32)
fd, fx = fa.asarray(d), fa.asarray(x)
got = ({expr}).get()
fd, fx = d, x
want = {expr}
assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6), (got, want)
"""


@pytest.mark.parametrize("d, expr", [
    ((2, 1), "fd + fx.max(axis=-1, keepdims=True)"),
    ((2, 1), "fd + 0.5 * fx.sum(axis=-1, keepdims=True)"),
    ((2, 256), "fx - fx.max(axis=-1, keepdims=True) * fd"),
])
def test_the_first_evaluations_in_a_process_bind_each_buffer(d, expr):
    print("seed 16")
    code = _FIRST_IN_A_PROCESS.format(d=d, expr=expr)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_nan_propagates_as_in_numpy():
    rng = np.random.default_rng(14)
    x = rng.standard_normal((4, 50))
    x[1, 7] = x[1, 30] = x[3, 0] = np.nan
    a = fa.asarray(x)
    for name in ("sum", "max", "min", "argmax", "argmin", "prod", "mean", "any"):
        rc.check(getattr(fa, name)(a, axis=1).get(), getattr(np, name)(x, axis=1), x, name)


def test_axis_errors_name_the_axis():
    a = fa.asarray(np.ones((2, 3)))
    with pytest.raises(np.exceptions.AxisError):
        fa.sum(a, axis=2)
    with pytest.raises(ValueError, match="duplicate"):
        fa.sum(a, axis=(1, -1))
    with pytest.raises(TypeError):
        fa.argmax(a, axis=(0, 1))
    with pytest.raises(fa.UnsupportedOperationError, match="where"):
        np.sum(a, where=np.ones((2, 3), bool))


def test_float32_sum_is_accurate_and_deterministic():
    rng = np.random.default_rng(15)
    x = rng.random(1 << 22, dtype=np.float32)
    a = fa.asarray(x)
    first, second = fa.sum(a).get(), fa.sum(a).get()
    assert first.tobytes() == second.tobytes()
    exact = np.sum(x, dtype=np.float64)
    assert abs(float(first) - exact) / exact <= 1e-6


def test_elementwise_producers_run_inside_the_reduction_kernel():
    rng = np.random.default_rng(16)
    x, y = (rng.standard_normal((300, 400)).astype(np.float32) for _ in range(2))
    a, b = fa.asarray(x), fa.asarray(y)
    program = fa.explain(((a - b) ** 2).sum()).program
    # the subtraction and square inside the reduction: the only temporary holds the partials
    assert [shape for _, shape in program.temps] == [(15,)], program.why
    fa.reset_stats()
    got = ((a - b) ** 2).sum().get()
    assert fa.stats()["launches"] == 1       # the parts, their partials folded after them
    rc.check(got, ((x - y) ** 2).sum(), x, "((x-y)**2).sum()")
    fa.reset_stats()
    got = ((a[:20] - b[:20]) ** 2).sum().get()
    assert fa.stats()["launches"] == 1       # 8000 elements: one part
    rc.check(got, ((x[:20] - y[:20]) ** 2).sum(), x, "((x-y)**2).sum() of 20 rows")
    fa.reset_stats()
    got = (a - a.max(axis=-1, keepdims=True)).get()
    assert fa.stats()["launches"] == 1       # a block per row: its maximum, then its elements
    rc.check(got, x - x.max(axis=-1, keepdims=True), x, "x - max")
    fa.reset_stats()
    got = (a - a.sum(axis=0)).get()          # column sums read along rows: not one block's
    assert fa.stats()["launches"] == 2       # the columns' parts and fold, the subtraction
    rc.check(got, x - x.sum(axis=0), x, "x - column sums")


def test_a_reduction_written_into_a_view_and_reduced_again():
    rng = np.random.default_rng(17)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    out = fa.asarray(np.zeros((8, 3), np.float32))
    out[::-1, 1] = fa.asarray(x).sum(axis=0) * 2
    want = np.zeros((8, 3), np.float32)
    want[::-1, 1] = x.sum(axis=0) * 2
    rc.check(out.get(), want, x, "written into a view")
    nested = fa.asarray(x).max(axis=1).sum() + fa.asarray(x).min()
    rc.check(nested.get(), x.max(axis=1).sum() + x.min(), x, "reductions of reductions")
    view = fa.asarray(x).sum(axis=0, keepdims=True).T[::-2]
    rc.check(view.get(), x.sum(axis=0, keepdims=True).T[::-2], x, "a view of a reduction")


def test_a_reduction_written_broadcast_into_a_larger_view():
    # the target's shape differs from the reduction's: its value broadcast over the target's
    # extra axes by an elementwise kernel after it (written straight in, rows past the first
    # were left as they were)
    rng = np.random.default_rng(19)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for axis, keepdims in [(0, False), (1, True)]:
        out = fa.asarray(np.zeros((3, 4), np.float32))
        out[...] = fa.asarray(x).sum(axis=axis, keepdims=keepdims)
        want = np.broadcast_to(x.sum(axis=axis, keepdims=keepdims), (3, 4))
        rc.check(out.get(), want, x, f"sum(axis={axis}) broadcast into (3, 4) (seed 19)")


def test_a_cached_evaluation_recompiles_nothing():
    rng = np.random.default_rng(18)
    fa.reset_stats()
    for _ in range(3):
        x = rng.standard_normal((20, 30)).astype(np.float32)
        got = fa.softmax(fa.asarray(x)).get()
    assert fa.stats()["compiles"] <= 1
    e = np.exp(x - x.max(-1, keepdims=True))
    rc.check(got, e / e.sum(-1, keepdims=True), x, "softmax")


def test_reductions_inside_fa_fuse():
    @fa.fuse
    def clip(g, c):
        g *= fa.minimum(1.0, c / fa.linalg.vector_norm(g))

    @fa.fuse
    def trust_step(p, u, lr):
        ratio = fa.linalg.vector_norm(p) / fa.linalg.vector_norm(u)
        p -= lr * ratio * u
        return p.max(keepdims=True), fa.softmax(u.reshape(40, 500))

    @fa.fuse
    def reshaped(p):
        p *= 1 / fa.sum(p)
        return p.reshape(40, 500).max(axis=1)

    rng = np.random.default_rng(19)
    x = rng.standard_normal(20000).astype(np.float32)
    g = fa.asarray(x)
    for c in (0.5, 0.25):
        clip(g, c)
        x = x * np.minimum(np.float32(1), np.float32(c) / np.linalg.norm(x))
        rc.check(g.get(), x, x, f"clip to {c}")
    assert "fr_" in str(clip.explain())      # the norm's kernels among the launches
    pp, uu = (rng.standard_normal(20000).astype(np.float32) for _ in range(2))
    p, u = fa.asarray(pp), fa.asarray(uu)
    top, soft = trust_step(p, u, 0.1)
    pp -= np.float32(0.1) * (np.linalg.norm(pp) / np.linalg.norm(uu)) * uu
    rc.check(p.get(), pp, pp, "trust-ratio step")
    rc.check(top.get(), pp.max(keepdims=True), pp, "max of the result")
    e = np.exp(uu.reshape(40, 500) - uu.reshape(40, 500).max(-1, keepdims=True))
    rc.check(soft.get(), e / e.sum(-1, keepdims=True), uu, "softmax inside fa.fuse")
    with pytest.raises(fa.UnsupportedOperationError, match="through the written view"):
        reshaped(p)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=0, max_size=3),
       data=st.data(), name=st.sampled_from(["sum", "max", "any", "argmin", "mean"]),
       keepdims=st.booleans(), step=st.sampled_from([1, -1, 2]))
def test_random_shapes_axes_and_steps(shape, data, name, keepdims, step):
    ndim = len(shape)
    if name.startswith("arg"):
        axis = data.draw(st.sampled_from([None, *range(-ndim, ndim)]), "axis")
    else:
        axis = data.draw(st.sampled_from([None, *[tuple(sorted(c)) for c in _subsets(ndim)]]),
                         "axis")
    seed = rc.seed_of(shape, name, step)
    base = np.random.default_rng(seed).standard_normal(
        [e * abs(step) for e in shape]).astype(np.float32)
    view = base[(slice(None, None, step),) * ndim] if ndim else base
    extent = int(np.prod([view.shape[k] for k in (range(ndim) if axis is None else
                                                  np.atleast_1d(axis))], dtype=np.int64))
    if extent == 0 and name in ("max", "argmin"):
        with pytest.raises(ValueError):
            getattr(fa, name)(fa.asarray(base)[(slice(None, None, step),) * ndim] if ndim
                              else fa.asarray(base), axis=axis)
        return
    a = fa.asarray(base)
    a = a[(slice(None, None, step),) * ndim] if ndim else a
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(view, axis=axis, keepdims=keepdims)
        got = getattr(fa, name)(a, axis=axis, keepdims=keepdims).get()
    rc.check(got, want, view, f"{name} {shape} step {step} axis={axis} keepdims={keepdims} "
                              f"(seed {seed})")


def _subsets(ndim):
    return [[k for k in range(ndim) if mask >> k & 1] for mask in range(1 << ndim)]


def test_reductions_of_draws_and_gathers():
    # a draw or gather is placed by the elementwise planner: a reduction computes it first
    draws = fa.random.default_rng(26).standard_normal((30, 200))
    same = fa.random.default_rng(26).standard_normal((30, 200)).get()
    rc.check((draws - draws.max(axis=-1, keepdims=True)).get(),
             same - same.max(axis=-1, keepdims=True), same, "draws less their row maxima")
    table = np.random.default_rng(26).standard_normal((9, 40))
    idx = np.array([4, 0, 8, 4])
    got = fa.take(fa.asarray(table), idx, axis=0).sum(axis=0).get()
    rc.check(got, table[idx].sum(axis=0), table, "sum of a gather (seed 26)")


# sim

@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.tiers("sim")
def test_every_reduction_on_both_cuda_schedules(name):
    # axis -1 of a contiguous array: a block per output (rows); axis 1 of a negative-step view:
    # a thread per output (cols); None: one block for everything
    some = [np.dtype(t) for t in ("int8", "float32", "bool", "float16", "uint64")]
    rc.check_reduction_over_dtypes(name, some[:2], SHAPE, axis=-1, layout="contiguous")
    rc.check_reduction_over_dtypes(name, some[2:], SHAPE, axis=1, layout="negative")
    rc.check_reduction_over_dtypes(name, some[1:2], SHAPE, axis=None, layout="transposed")


@pytest.mark.tiers("sim")
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


@pytest.mark.tiers("sim")
def test_softmax_and_squared_distance():
    rng = np.random.default_rng(22)
    x, y = (rng.standard_normal((3, 40)).astype(np.float32) for _ in range(2))
    a, b = fa.asarray(x), fa.asarray(y)
    rc.check(((a - b) ** 2).sum().get(), ((x - y) ** 2).sum(), x, "((x-y)**2).sum()")
    e = np.exp(x - x.max(-1, keepdims=True))
    rc.check(fa.softmax(a).get(), e / e.sum(-1, keepdims=True), x, "softmax")
    rc.check(a.var(axis=0).get(), x.var(axis=0), x, "var over columns")


@pytest.mark.tiers("sim", "cuda")
def test_gradient_clipping_inside_fa_fuse(tier):
    @fa.fuse
    def clip(g, c):
        g *= fa.minimum(1.0, c / fa.linalg.vector_norm(g))

    seed, size = CLIPPING[tier]
    x = np.random.default_rng(seed).standard_normal(size).astype(np.float32)
    g = fa.asarray(x)
    fa.reset_stats()
    clip(g, 0.5)
    rc.check(g.get(), x * np.float32(0.5) / np.linalg.norm(x), x, f"clip (seed {seed})")
    if tier == "cuda":
        assert fa.stats()["launches"] == 2     # the norm's parts and their fold, the scaling


# cuda

@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.tiers("cuda")
def test_every_reduction_and_dtype_on_both_schedules(name):
    rc.check_reduction_over_dtypes(name, rc.DTYPES, (6, 5, 300), axis=-1, layout="contiguous")
    rc.check_reduction_over_dtypes(name, rc.DTYPES, (6, 5, 4), axis=1, layout="negative")
    rc.check_reduction_over_dtypes(name, rc.SOME_DTYPES, (6, 5, 4), axis=None,
                                   layout="transposed")


@pytest.mark.parametrize("shape,axis", [((1 << 24,), None), ((4096, 4096), 0),
                                        ((4096, 4096), 1), ((1 << 22, 2), 1),
                                        ((3, 1 << 20), None), ((1000, 3000), (0,))])
@pytest.mark.tiers("cuda")
def test_large_shapes(shape, axis):
    rng = np.random.default_rng(41)
    x = rng.standard_normal(shape).astype(np.float32)
    a = fa.asarray(x)
    for name in ("sum", "max", "argmax") if not isinstance(axis, tuple) else ("sum", "min"):
        got = getattr(fa, name)(a, axis=axis).get()
        rc.check(got, getattr(np, name)(x, axis=axis), x, f"{name} {shape} axis={axis}")


@pytest.mark.tiers("cuda")
def test_float32_sum_of_2_26_is_accurate_and_deterministic():
    x = np.random.default_rng(42).random(1 << 26, dtype=np.float32)
    a = fa.asarray(x)
    first, second = fa.sum(a).get(), fa.sum(a).get()
    assert first.tobytes() == second.tobytes()
    exact = np.sum(x, dtype=np.float64)
    assert abs(float(first) - exact) / exact <= 1e-6


@pytest.mark.tiers("cuda")
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


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

def _ptx_of(array):
    explanation = fa.explain(array, arch="sm_90")
    return explanation, explanation.ptx


@pytest.mark.tiers("ptx")
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


@pytest.mark.tiers("ptx")
def test_float16_sums_accumulate_in_float32():
    h = fa.asarray(np.ones((4, 300), np.float16))
    _, (ptx,) = _ptx_of(h.sum(axis=1))
    assert re.search(r"add\.(rn\.)?f32", ptx)
    assert not re.search(r"add\.(rn\.)?f16", ptx)
