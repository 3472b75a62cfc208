"""Scans against NumPy (tests/scancases.py) on every tier: every scan × dtype, every axis ×
layout, views written, and how graphs are cut at a scan.

- cpu at its default settings: long rows and many rows (chunks over threads), NumPy's and the
  Array API's entry points, empty arrays, accuracy and determinism.
- sim: the generated CUDA scan kernels (a block per row walking it in tiles through shared
  memory, and a thread per row) in numba's simulator. Its blocks have 32 threads, so a tile is
  256 elements and rows of 300 and 600 take two and three tiles, the running total carried
  between them.
- cuda: both schedules (a block of 256 threads per row walking tiles of 2048 elements, a thread
  per row), large shapes of many tiles per row, float32 accuracy against float64 and the same
  bits every run.
- ptx (sm_90, no GPU): both cuda schedules, every scan, float16 running in float32, integers
  narrower than the running type, include_initial, and no atomics (a fixed order: the same bits
  every run).
"""


import re

import numpy as np
import pytest
import scancases as sc
from hypothesis import given, settings
from hypothesis import strategies as st

import fusedarrays as fa
from fusedarrays.ir.scans import SCANS

# each tier's calls of sc.check_axes_and_layouts
AXES_AND_LAYOUTS = {"cpu": [{}], "sim": [{"shape": (2, 3, 4)}],
                    "cuda": [{}, {"names": ["cumulative_sum"], "shape": (30, 70, 2100)}]}
_ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.", re.M)


def test_cumulative_sum_of_every_dtype_matches_numpy_dtype_and_value():
    sc.check_over_dtypes("cumulative_sum", sc.DTYPES)
    sc.check_over_dtypes("cumulative_sum", sc.SOME_DTYPES, axis=-1, layout="transposed",
                         include_initial=True)


def test_cumulative_prod_of_each_dtype_kind_matches_numpy():
    sc.check_over_dtypes("cumulative_prod", sc.SOME_DTYPES)
    sc.check_over_dtypes("cumulative_prod", sc.SOME_DTYPES, axis=0, layout="contiguous",
                         include_initial=True)


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_every_axis_and_layout_matches_numpy(tier):
    for kwargs in AXES_AND_LAYOUTS[tier]:
        sc.check_axes_and_layouts(**kwargs)


@pytest.mark.parametrize("shape,axis", [((3, 70000), 1), ((70000,), 0), ((5000, 7), 1),
                                        ((300, 70), 0), ((9, 40, 50), 1)])
def test_long_rows_and_many_rows(shape, axis):
    seed = sc.seed_of("long", shape, axis)
    rng = np.random.default_rng(seed)
    for dtype in (np.float32, np.int16):
        for kind, x_np, x_fa in sc.layouts(rng, dtype, shape, "cumulative_sum"):
            if kind in ("contiguous", "negative"):
                sc.check_scan("cumulative_sum", x_np, x_fa, axis,
                              f"{dtype.__name__} {kind} {shape} axis={axis} (seed {seed})")


def test_numpy_entry_points_and_methods():
    rng = np.random.default_rng(51)
    x = rng.integers(-9, 9, (4, 5)).astype(np.int32)
    a = fa.asarray(x)
    cases = [
        (fa.cumsum(a), np.cumsum(x)),                       # axis=None flattens
        (fa.cumprod(a.T, axis=0), np.cumprod(x.T, axis=0)),
        (a.cumsum(axis=1), x.cumsum(axis=1)),
        (a.T.cumprod(), x.T.cumprod()),
        (a.cumsum(0, np.float32), x.cumsum(0, np.float32)),
        (np.cumsum(a, axis=-1), np.cumsum(x, axis=-1)),
        (np.cumprod(a[::-1], axis=0, dtype=np.int8), np.cumprod(x[::-1], axis=0, dtype=np.int8)),
        (np.cumulative_sum(a, axis=0, include_initial=True),
         np.cumulative_sum(x, axis=0, include_initial=True)),
        (np.cumulative_prod(a[0]), np.cumulative_prod(x[0])),
        (fa.cumulative_sum(a[1]), np.cumulative_sum(x[1])),   # 1-D: axis may be left out
        (fa.cumulative_sum(fa.asarray(np.int8(5))), np.cumulative_sum(np.int8(5))),   # 0-d
        (fa.cumsum(fa.asarray(np.float32(2))), np.cumsum(np.float32(2))),
    ]
    for k, (got, want) in enumerate(cases):
        assert isinstance(got, fa.ndarray) and got.pending, k
        sc.check(got.get(), want, x, 0, "cumulative_sum", f"case {k}")


def test_errors_name_the_problem():
    a = fa.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="axis"):
        fa.cumulative_sum(a)                               # the Array API wants an axis here
    with pytest.raises(np.exceptions.AxisError):
        fa.cumulative_sum(a, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        fa.cumsum(a, axis=-3)
    with pytest.raises(fa.DTypeError, match="dtype=bool"):
        fa.cumsum(a, dtype=bool)
    with pytest.raises(fa.UnsupportedOperationError, match="out="):
        fa.cumsum(a, out=a)


@pytest.mark.parametrize("shape,axis", [((0,), 0), ((3, 0), 1), ((0, 4), 1), ((2, 0, 3), 0),
                                        ((2, 0, 3), 2)])
def test_empty_arrays(shape, axis):
    x = np.ones(shape, np.float32)
    for name in SCANS:
        for initial in (False, True):
            got = getattr(fa, name)(fa.asarray(x), axis=axis, include_initial=initial).get()
            want = getattr(np, name)(x, axis=axis, include_initial=initial)
            sc.check(got, want, x, axis, name, f"{name} of {shape} axis={axis} {initial=}", initial)
    assert fa.cumsum(fa.asarray(np.ones((0, 3), np.int8))).get().dtype == np.int64


def test_scans_written_into_views():
    rng = np.random.default_rng(52)
    x = rng.standard_normal((6, 300)).astype(np.float32)
    out = fa.asarray(np.zeros((300, 12), np.float32))
    out[::-1, 1::2] = fa.cumsum(fa.asarray(x), axis=1).T        # transposed, negative steps
    want = np.zeros((300, 12), np.float32)
    want[::-1, 1::2] = np.cumsum(x, axis=1).T
    sc.check(out.get(), want, want, 0, "cumulative_sum", "written through a view")
    a = fa.asarray(x.copy())
    a[...] = fa.cumsum(a, axis=0)                                  # in place, same index map
    sc.check(a.get(), np.cumsum(x, axis=0), x, 0, "cumulative_sum", "in place, axis 0")
    b = fa.asarray(x.copy())
    b[:, ::-1] = fa.cumsum(b, axis=1)              # in place through another map: staged first
    sc.check(b.get()[:, ::-1], np.cumsum(x, axis=1), x, 1, "cumulative_sum", "reversed")
    d = fa.asarray(np.arange(1.0, 302.0))
    d[...] = fa.cumulative_sum(d[:300], include_initial=True)   # one longer: reads shifted
    sc.check(d.get(), np.cumulative_sum(np.arange(1.0, 301.0), include_initial=True),
             np.arange(1.0, 301.0), 0, "cumulative_sum", "in place with the initial element", True)
    c = fa.asarray(np.zeros((4, 6, 300), np.float32))
    c[1:3] = fa.cumulative_sum(fa.asarray(x), axis=1)                # broadcast into the view
    want = np.zeros((4, 6, 300), np.float32)
    want[1:3] = np.cumulative_sum(x, axis=1)
    sc.check(c.get(), want, np.broadcast_to(x, (4, 6, 300)), 2, "cumulative_sum", "broadcast")


def test_graphs_are_cut_at_the_scan():
    rng = np.random.default_rng(53)
    x = rng.standard_normal((5, 200)).astype(np.float32)
    a = fa.asarray(x)
    inside = fa.cumsum(a * 2 + 1, axis=1)       # the producers run inside the scan's kernel
    assert fa.explain(inside).launches == 1
    sc.check(inside.get(), np.cumsum(x * 2 + 1, axis=1), x * 2 + 1, 1, "cumulative_sum",
             "producers inside")
    after = fa.sqrt(fa.abs(fa.cumsum(a, axis=0))) - a    # reads the scan from a buffer
    assert fa.explain(after).launches == 2
    sc.check(after.get(), np.sqrt(np.abs(np.cumsum(x, axis=0))) - x, x, 0, "cumulative_sum",
             "work after")
    centred = fa.cumsum(a - a.mean(axis=1, keepdims=True), axis=1)   # a reduction, then the scan
    want = np.cumsum(x - x.mean(axis=1, keepdims=True), axis=1)
    sc.check(centred.get(), want, x, 1, "cumulative_sum", "scan of a reduction's consumer")
    total = fa.cumprod(a * 0.01 + 1, axis=1).max(axis=1) + fa.cumsum(a, axis=1)[:, -1]
    want = np.cumprod(x * np.float32(0.01) + 1, axis=1).max(axis=1) + np.cumsum(x, axis=1)[:, -1]
    np.testing.assert_allclose(total.get(), want, rtol=1e-5)
    nested = fa.cumsum(fa.cumsum(a, axis=1), axis=0)
    sc.check(nested.get(), np.cumsum(np.cumsum(x, axis=1), axis=0), np.abs(x).cumsum(1), 0,
             "cumulative_sum", "scan of a scan")


def test_float32_is_numpys_sequential_loop_and_deterministic():
    rng = np.random.default_rng(54)
    x = (rng.standard_normal(1 << 18) * 100 + 3).astype(np.float32)
    a = fa.asarray(x)
    first, second = fa.cumsum(a).get(), fa.cumsum(a).get()
    assert first.tobytes() == second.tobytes()
    assert first.tobytes() == np.cumsum(x).tobytes()     # the same order: the same bits
    signed = fa.cumsum(fa.asarray(np.array([-0.0, -0.0, 0.0], np.float32))).get()
    assert np.signbit(signed).tolist() == [True, True, False]   # as NumPy's


def test_float16_runs_in_float32():
    # NumPy rounds the running float16 value at every step (a cumsum of ones stops at 2048);
    # fusedarrays keeps it in float32 and rounds each result once
    got = fa.cumsum(fa.asarray(np.ones(5000, np.float16))).get()
    assert got.dtype == np.float16 and got[-1] == 5000 and np.cumsum(np.ones(5000, np.float16))[
        -1] == 2048


def test_scans_inside_fa_fuse():
    rng = np.random.default_rng(55)
    x = rng.standard_normal((4, 150)).astype(np.float32)

    @fa.fuse
    def step(a, out):
        out[...] = fa.cumsum(a * 2, axis=1) + a

    a, out = fa.asarray(x), fa.asarray(np.zeros_like(x))
    for _ in range(2):
        step(a, out)
    sc.check(out.get(), np.cumsum(x * 2, axis=1) + x, x * 2, 1, "cumulative_sum", "fa.fuse")


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 9), min_size=1, max_size=3), data=st.data(),
       name=st.sampled_from(sc.NAMES), initial=st.booleans(), step=st.sampled_from([1, -1, -2]))
def test_random_shapes_axes_and_steps(shape, data, name, initial, step):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    seed = sc.seed_of("random", shape, axis, name, initial, step)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, [abs(step) * e for e in shape]).astype(np.float64)
    index = tuple(slice(None, None, step) for _ in shape)
    sc.check_scan(name, x[index], fa.asarray(x)[index], axis,
                  f"{name} {shape} axis={axis} {initial=} step={step} (seed {seed})",
                  include_initial=initial)


# sim

@pytest.mark.parametrize("name", sc.NAMES)
@pytest.mark.tiers("sim")
def test_every_scan_on_both_cuda_schedules(name):
    some = [np.dtype(t) for t in ("int8", "float32", "bool", "float16", "uint64")]
    sc.check_over_dtypes(name, some[:2], (2, 300), axis=-1, layout="contiguous")   # rows
    sc.check_over_dtypes(name, some[2:], (2, 3, 8), axis=1, layout="negative",       # cols
                         include_initial=True)
    plan = fa.explain(getattr(fa, name)(fa.asarray(np.ones((2, 300))), axis=1)).kernels[0][0]
    assert plan.schedule == "rows"


@pytest.mark.tiers("sim")
def test_several_tiles_per_row_negative_steps_and_transposes():
    seed = sc.seed_of("sim tiles")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 600)).astype(np.float32)
    a = fa.asarray(x)
    cases = [(a[::-1, ::-1], x[::-1, ::-1], 1, False),     # stride -1 along the scan: rows
             (a.T, x.T, 0, True),                          # transposed: the scan axis is unit
             (a[:, 1::3] * 2 - 1, x[:, 1::3] * 2 - 1, 1, False)]   # strided: a thread per row
    for k, (view, want_in, axis, initial) in enumerate(cases):
        sc.check_scan("cumulative_sum", want_in, view, axis, f"case {k} (seed {seed})",
                      include_initial=initial)
    ints = rng.integers(-100, 100, (2, 700)).astype(np.int32)
    sc.check_scan("cumulative_sum", ints[:, ::-1], fa.asarray(ints)[:, ::-1], 1,
                  f"int32 reversed (seed {seed})", include_initial=True)
    got = [fa.cumsum(a, axis=1).get() for _ in range(2)]
    assert got[0].tobytes() == got[1].tobytes()       # a fixed order: the same bits every run


@pytest.mark.tiers("sim")
def test_views_written_empty_arrays_and_fusion():
    seed = sc.seed_of("sim views")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 260)).astype(np.float32)
    out = fa.asarray(np.zeros((260, 4), np.float32))
    out[::-1, ::2] = fa.cumsum(fa.asarray(x) * 3, axis=1).T
    want = np.zeros((260, 4), np.float32)
    want[::-1, ::2] = np.cumsum(x * 3, axis=1).T
    sc.check(out.get(), want, want, 0, "cumulative_sum", f"written through a view (seed {seed})")
    for shape, axis in [((2, 0), 1), ((0, 3), 1)]:
        ones = np.ones(shape, np.float32)
        got = fa.cumulative_sum(fa.asarray(ones), axis=axis, include_initial=True).get()
        want = np.cumulative_sum(ones, axis=axis, include_initial=True)
        sc.check(got, want, ones, axis, "cumulative_sum", f"empty {shape}", True)
    after = fa.cumprod(fa.asarray(x) * 0.01 + 1, axis=1) - 1
    sc.check(after.get() + 1, np.cumprod(x * np.float32(0.01) + 1, axis=1),
             x * np.float32(0.01) + 1, 1, "cumulative_prod", f"work after (seed {seed})")


# cuda

@pytest.mark.parametrize("name", sc.NAMES)
@pytest.mark.tiers("cuda")
def test_every_scan_and_dtype_on_both_schedules(name):
    sc.check_over_dtypes(name, sc.DTYPES, (6, 5, 3000), axis=-1, layout="contiguous")
    sc.check_over_dtypes(name, sc.DTYPES, (6, 5, 4), axis=1, layout="negative",
                         include_initial=True)
    sc.check_over_dtypes(name, sc.SOME_DTYPES, (3, 700, 5), axis=0, layout="transposed")


@pytest.mark.parametrize("shape,axis", [((1 << 22,), 0), ((4096, 4096), 0), ((4096, 4096), 1),
                                        ((1 << 20, 3), 1), ((7, 300001), 1)])
@pytest.mark.tiers("cuda")
def test_large_shapes_accuracy_and_determinism(shape, axis):
    seed = sc.seed_of("gpu large", shape, axis)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    a = fa.asarray(x)
    first, second = fa.cumsum(a, axis=axis).get(), fa.cumsum(a, axis=axis).get()
    assert first.tobytes() == second.tobytes(), f"not the same bits (seed {seed})"
    sc.check(first, np.cumsum(x, axis=axis), x, axis, "cumulative_sum",
             f"{shape} axis={axis} (seed {seed})")
    exact = np.cumsum(x.astype(np.float64), axis=axis)
    running = np.cumsum(np.abs(x.astype(np.float64)), axis=axis)
    ours = np.max(np.abs(first - exact) / running)
    numpys = np.max(np.abs(np.cumsum(x, axis=axis) - exact) / running)
    assert ours <= 2 * numpys + 1e-7, (ours, numpys, seed)   # as accurate as NumPy's loop


@pytest.mark.tiers("cuda")
def test_views_written_and_work_around_the_scan():
    seed = sc.seed_of("gpu views")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((40, 5000)).astype(np.float32)
    a = fa.asarray(x)
    out = fa.asarray(np.zeros((5000, 80), np.float32))
    out[::-1, 1::2] = (fa.cumsum(a * 2 - 1, axis=1) + a).T
    want = np.zeros((5000, 80), np.float32)
    want[::-1, 1::2] = (np.cumsum(x * 2 - 1, axis=1) + x).T
    # rows of 5000 summing values up to ~4 in magnitude: float32 rounding stays far below 0.05
    np.testing.assert_allclose(out.get(), want, rtol=1e-5, atol=0.05,
                               err_msg=f"written through a view (seed {seed})")
    fa.reset_stats()
    fa.cumsum(a * 2 - 1, axis=1).get()
    assert fa.stats()["launches"] == 1          # the producers run inside the scan's kernel


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

@pytest.mark.tiers("ptx")
def test_every_scan_compiles_on_both_schedules_without_atomics():
    rng = np.random.default_rng(61)
    x = fa.asarray(rng.standard_normal((8, 512)).astype(np.float32))
    h = fa.asarray(rng.standard_normal((8, 512)).astype(np.float16))
    i = fa.asarray(rng.integers(-3, 3, (8, 512)).astype(np.int8))
    cases = [fa.cumsum((x - 1.5) ** 2, axis=1), fa.cumsum(x, axis=0), fa.cumsum(h, axis=1),
             fa.cumulative_prod(i, axis=1, include_initial=True), fa.cumprod(x.T, axis=1),
             fa.cumsum(i[:, ::-1], axis=1, dtype=np.int8), fa.cumsum(x[::-1, ::-1], axis=0)]
    schedules = set()
    for array in cases:
        explanation = fa.explain(array, arch="sm_90")
        for (plan, _), ptx in zip(explanation.kernels, explanation.ptx):
            schedules.add((plan.scan, plan.schedule))
            assert plan.name in ptx
            assert not _ATOMIC.search(ptx)
            if plan.schedule == "rows":
                assert "bar.sync" in ptx and ".shared" in ptx   # tiles staged, chunks scanned
    assert {s for _, s in schedules} == {"rows", "cols"}
    assert ("cumulative_prod", "rows") in schedules


@pytest.mark.tiers("ptx")
def test_float16_runs_in_float32_in_the_ptx():
    h = fa.asarray(np.ones((4, 300), np.float16))
    explanation = fa.explain(fa.cumsum(h, axis=1), arch="sm_90")
    (ptx,) = explanation.ptx
    assert re.search(r"add\.(rn\.)?f32", ptx)
    assert not re.search(r"add\.(rn\.)?f16", ptx)


@pytest.mark.tiers("ptx")
def test_work_after_a_scan_is_a_second_kernel():
    x = fa.asarray(np.ones((4, 300), np.float32))
    explanation = fa.explain(fa.exp(fa.cumsum(x * 2, axis=1)) - x, arch="sm_90")
    assert explanation.launches == 2
    assert all(len(p) > 0 for p in explanation.ptx)
