"""fa.global_norm on the sim backend: the two CUDA kernels of clip-by-global-norm then Adam (the
partials kernel's block trees, the foreach kernel's folding prologue) run in numba's simulator,
against a float64 NumPy reference. Arrays stay small: every simulated thread is a Python thread."""

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.compiler import foreach_plan as plan_module

CLIPPED = fa.fuse(ex.clipped_adam)
KW = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8)


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def check(arrays, want, seed):
    for k, (row, w) in enumerate(zip(arrays, want)):
        for got, ref, name in zip((row[0], row[2], row[3]), w, "pmv"):
            np.testing.assert_allclose(got.get(), ref, rtol=2e-5, atol=1e-6,
                                       err_msg=f"{name} of tensor {k} (seed {seed})")


def test_clip_then_adam_in_two_launches(monkeypatch):
    """Sizes that are not whole vectors, an unaligned view (element by element in the foreach
    kernel), and a grain of 16 elements per partial: partial ranges cross tensors and the
    padding between them, and each block folds several partials."""
    monkeypatch.setattr(plan_module, "ACROSS_GRAIN", 16)
    sizes, seed = [1, 5, 8, 13, 6, 70], 61
    refs = [ex.state(n, seed * 100 + k) for k, n in enumerate(sizes)]
    arrays = [[fa.asarray(a.copy()) for a in ref] for ref in refs]
    shifted = ex.state(10, seed)
    refs.append([a[1:].copy() for a in shifted])
    arrays.append([fa.asarray(a.copy())[1:] for a in shifted])
    lists = [list(column) for column in zip(*arrays)]
    fa.reset_stats()
    CLIPPED.foreach(*lists, **KW, step=1, max_norm=1.0)
    assert fa.stats()["launches"] == 2 and fa.backend() == "sim"
    check(arrays, ex.clipped_adam_reference(refs, **KW, step=1, max_norm=1.0), seed)


def test_the_walk_crosses_chunks_and_tensors():
    @fa.fuse
    def descend(p, g, lr):
        p -= lr * g / fa.global_norm(g)

    sizes = [4095, 2, 4200, 1]             # three 4096-element chunks, each crossing tensors
    rng = np.random.default_rng(62)
    ps = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    gs = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    fp, fg = [fa.asarray(p.copy()) for p in ps], [fa.asarray(g) for g in gs]
    fa.reset_stats()
    descend.foreach(fp, fg, 0.5)
    assert fa.stats()["launches"] == 2
    norm = np.linalg.norm(np.concatenate(gs).astype(np.float64))
    for got, p, g in zip(fp, ps, gs):
        np.testing.assert_allclose(got.get(), p - 0.5 * g.astype(np.float64) / norm,
                                   rtol=1e-5, atol=1e-6, err_msg="seed 62")


def test_a_maximum_across_mixed_dtypes():
    """ord=inf folds with max (NaN-aware merge statements); float32 and float16 groups."""
    @fa.fuse
    def scale(p, g):
        p *= fa.global_norm(g, ord=np.inf)

    rng = np.random.default_rng(63)
    gs = [rng.standard_normal(n).astype(dt) for n, dt in
          [(9, np.float32), (4, np.float16), (3, np.float32)]]
    gs[1][2] = np.float16(-7.5)            # the largest magnitude sits in the float16 group
    ps = [fa.asarray(np.ones(g.size, g.dtype)) for g in gs]
    fa.reset_stats()
    scale.foreach(ps, [fa.asarray(g) for g in gs])
    assert fa.stats()["launches"] == 4     # two per dtype group
    for p in ps:
        np.testing.assert_array_equal(p.get(), np.full(p.shape, 7.5, p.dtype))


def test_a_block_size_that_is_not_a_power_of_two(monkeypatch):
    """FUSEDARRAYS_SIM_BLOCK=24 (a non-default setting, for this reason): the foreach kernel's
    fold of 40 partials takes the tree that stops at the block's end (24 slots, pairs 16 apart
    first)."""
    monkeypatch.setattr(plan_module, "ACROSS_GRAIN", 4)

    @fa.fuse
    def descend(p, g, lr):
        p -= lr * g / fa.global_norm(g)

    rng = np.random.default_rng(64)
    sizes = [37, 3, 120]
    ps = [rng.standard_normal(n) for n in sizes]
    gs = [rng.standard_normal(n) for n in sizes]
    fp, fg = [fa.asarray(p.copy()) for p in ps], [fa.asarray(g) for g in gs]
    with config.override(SIM_BLOCK=24):   # not a power of two: the general tree (docstring)
        descend.foreach(fp, fg, 0.5)
    norm = np.linalg.norm(np.concatenate(gs))
    for got, p, g in zip(fp, ps, gs):
        np.testing.assert_allclose(got.get(), p - 0.5 * g / norm, rtol=1e-12, err_msg="seed 64")


def test_two_norms_in_one_function():
    """Two reductions across the list (a sum and a max): one partials kernel with two
    accumulators and trees, one fold each in the step's prologue."""
    @fa.fuse
    def ratio(p, g):
        p *= fa.global_norm(g) / fa.global_norm(g, ord=np.inf)

    rng = np.random.default_rng(65)
    gs = [rng.standard_normal(n) for n in (7, 40, 2)]
    ps = [fa.asarray(np.ones(g.size)) for g in gs]
    fa.reset_stats()
    ratio.foreach(ps, [fa.asarray(g) for g in gs])
    assert fa.stats()["launches"] == 2
    every = np.concatenate(gs)
    for p in ps:
        np.testing.assert_allclose(p.get(), np.linalg.norm(every) / np.abs(every).max(),
                                   rtol=1e-12, err_msg="seed 65")
