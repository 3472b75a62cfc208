"""Scans on the sim backend: the generated CUDA scan kernels (a block per row walking it in
tiles through shared memory, and a thread per row) run in numba's simulator, against NumPy
(tests/scancases.py). The simulator's blocks have 32 threads, so a tile is 256 elements and
rows of 300 and 600 take two and three tiles, the running total carried between them."""

import numpy as np
import pytest
import scancases as sc

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("name", sc.NAMES)
def test_every_scan_on_both_cuda_schedules(name):
    some = [np.dtype(t) for t in ("int8", "float32", "bool", "float16", "uint64")]
    sc.check_over_dtypes(name, some[:2], (2, 300), axis=-1, layout="contiguous")   # rows
    sc.check_over_dtypes(name, some[2:], (2, 3, 8), axis=1, layout="negative",       # cols
                         include_initial=True)
    plan = fa.explain(getattr(fa, name)(fa.asarray(np.ones((2, 300))), axis=1)).kernels[0][0]
    assert plan.schedule == "rows"


def test_axes_and_layouts():
    sc.check_axes_and_layouts(shape=(2, 3, 4))


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
