"""fa.global_norm: clip-by-global-norm then Adam over a list in two launches, against a float64
NumPy reference, on every tier.

- cpu at its default settings: the norm's orders, mixed dtypes, what the first launch reads,
  determinism, plain calls and lists, and what is refused.
- sim: the two CUDA kernels (the partials kernel's block trees, the foreach kernel's folding
  prologue) in numba's simulator. Arrays stay small: every simulated thread is a Python thread.
- cuda: many tensors, against ``torch.nn.utils.clip_grad_norm_`` + ``torch.optim.Adam`` too,
  and the same bits on every call (no atomics).
- ptx (sm_90, no GPU): the partials kernel and the foreach kernel that folds them, with no
  atomics (a fixed order).
"""


import doctest
import importlib
import re

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import UnsupportedOperationError, config
from fusedarrays.compiler import foreach_plan as plan_module

CLIPPED = fa.fuse(ex.clipped_adam)
KW = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8)
CUDA_KW = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.", re.M)


def states(sizes, seed, dtype=np.float32):
    return [ex.state(int(n), seed * 1000 + k, dtype) for k, n in enumerate(sizes)]


def lists_of(states_):
    return [[fa.asarray(s[j].copy()) for s in states_] for j in range(4)]


def check(lists, want, seed, rtol=2e-5, atol=1e-6):
    for k, w in enumerate(want):
        for got, ref, name in zip((lists[0][k], lists[2][k], lists[3][k]), w, "pmv"):
            np.testing.assert_allclose(got.get(), ref, rtol=rtol, atol=atol,
                                       err_msg=f"{name} of tensor {k} (seed {seed})")


# sizes not multiples of the vector width, one element, chunks (4096) crossing tensors
SIZES = [1, 3, 17, 4095, 6, 4200, 130, 1]


@pytest.mark.parametrize("max_norm", [1.0, 1e4])      # clipping, and a norm under the limit
def test_clip_then_adam_is_two_launches_against_float64_numpy(max_norm):
    seed = 41
    st = states(SIZES, seed)
    lists = lists_of(st)
    want = [[s[0], s[2], s[3]] for s in st]
    for step in (1, 2, 3):
        fa.reset_stats()
        CLIPPED.foreach(*lists, **KW, step=step, max_norm=max_norm)
        assert fa.stats()["launches"] == 2
        want = ex.clipped_adam_reference(
            [[w[0], s[1], w[1], w[2]] for w, s in zip(want, st)], **KW, step=step,
            max_norm=max_norm)
    check(lists, want, seed)


def test_many_partials_and_the_same_bits_every_call(monkeypatch):
    """A grain of 64 elements per partial: partial ranges start and end inside tensors and in
    the padding between them; two runs from the same state give the same bits."""
    monkeypatch.setattr(plan_module, "ACROSS_GRAIN", 64)
    seed = 42
    st = states(SIZES, seed)
    runs = []
    for _ in range(2):
        lists = lists_of(st)
        CLIPPED.foreach(*lists, **KW, step=1, max_norm=1.0)
        runs.append([a.get() for column in lists for a in column])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    check(lists, ex.clipped_adam_reference(st, **KW, step=1, max_norm=1.0), seed)


@pytest.mark.parametrize("order", [1, 2, np.inf, -np.inf, 0, 3])
def test_every_order_is_the_norm_of_the_concatenation(order):
    @fa.fuse(static_argnames="o")   # the order chooses the code: static
    def scale(p, g, o):
        p *= fa.global_norm(g, ord=o)

    rng = np.random.default_rng(43)
    gs = [rng.standard_normal(n) for n in (5, 1, 33)]
    gs[0][1] = 0.0
    ps = [fa.asarray(np.ones_like(g)) for g in gs]
    fa.reset_stats()
    scale.foreach(ps, [fa.asarray(g) for g in gs], order)
    assert fa.stats()["launches"] == 2
    want = np.linalg.norm(np.concatenate(gs), ord=order)
    for p in ps:
        np.testing.assert_allclose(p.get(), want, rtol=1e-12, err_msg=f"ord {order} (seed 43)")


def test_the_norm_of_an_expression_of_two_lists_and_host_scalars():
    """The first launch reads g and p and takes scalars (weight decay, a loss scale)."""
    @fa.fuse
    def step(p, g, lr, wd, scale, max_norm):
        d = g / scale + wd * p
        p -= lr * d * fa.minimum(1.0, max_norm / fa.global_norm(d))

    rng = np.random.default_rng(44)
    ps = [rng.standard_normal(n).astype(np.float32) for n in (7, 300, 2)]
    gs = [rng.standard_normal(n).astype(np.float32) for n in (7, 300, 2)]
    fp, fg = [fa.asarray(p.copy()) for p in ps], [fa.asarray(g) for g in gs]
    step.foreach(fp, fg, 0.1, 0.01, 8.0, 0.5)
    d = [g.astype(np.float64) / 8 + 0.01 * p for p, g in zip(ps, gs)]
    clip = min(1.0, 0.5 / np.linalg.norm(np.concatenate(d)))
    for got, p, dk in zip(fp, ps, d):
        np.testing.assert_allclose(got.get(), p - 0.1 * dk * clip, rtol=1e-5, atol=1e-7,
                                   err_msg="seed 44")


# (seed, dtype, sizes, rtol): the simulator's arrays small
TWO_NORMS = {"cpu": (52, np.float32, (7, 4000, 2), 1e-6),
             "sim": (65, np.float64, (7, 40, 2), 1e-12)}


@pytest.mark.tiers("cpu", "sim")
def test_two_norms_in_one_function(tier):
    """Two reductions across the list (a sum and a max): one partials kernel with two
    accumulators and trees, one fold each in the step's prologue."""
    @fa.fuse
    def ratio(p, g):
        p *= fa.global_norm(g) / fa.global_norm(g, ord=np.inf)

    seed, dtype, sizes, rtol = TWO_NORMS[tier]
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal(n).astype(dtype) for n in sizes]
    ps = [fa.asarray(np.ones(g.size, dtype)) for g in gs]
    fa.reset_stats()
    ratio.foreach(ps, [fa.asarray(g) for g in gs])
    assert fa.stats()["launches"] == 2
    every = np.concatenate(gs).astype(np.float64)
    for p in ps:
        np.testing.assert_allclose(p.get(), np.linalg.norm(every) / np.abs(every).max(),
                                   rtol=rtol, err_msg=f"seed {seed}")


def test_a_list_only_the_norm_reads():
    @fa.fuse
    def normalise(p, h):
        p /= fa.global_norm(h)

    rng = np.random.default_rng(45)
    hs = [rng.standard_normal(n) for n in (3, 5)]
    ps = [fa.asarray(np.full(3, 2.0)), fa.asarray(np.full(5, 6.0))]
    fa.reset_stats()
    normalise.foreach(ps, [fa.asarray(h) for h in hs])
    assert fa.stats()["launches"] == 2
    norm = np.linalg.norm(np.concatenate(hs))
    np.testing.assert_allclose(ps[0].get(), 2.0 / norm)
    np.testing.assert_allclose(ps[1].get(), 6.0 / norm)


def test_mixed_dtypes_share_one_norm():
    """float32 and float64 tensors: one group each, both reading the norm of all of them."""
    st = states([5, 40], 46) + states([9, 3], 47, np.float64)
    lists = lists_of(st)
    fa.reset_stats()
    CLIPPED.foreach(*lists, **KW, step=1, max_norm=1.0)
    assert fa.stats()["launches"] == 4       # two per dtype group
    check(lists, ex.clipped_adam_reference(st, **KW, step=1, max_norm=1.0), "46/47")


def test_an_unaligned_view_and_an_empty_tensor():
    st = states([12, 0, 30], 48)
    lists = lists_of(st)
    shifted = ex.state(20, 49)
    for j in range(4):
        lists[j].append(fa.asarray(shifted[j].copy())[1:])   # starts 4 bytes off alignment
    st.append([a[1:] for a in shifted])
    CLIPPED.foreach(*lists, **KW, step=1, max_norm=1.0)
    check(lists, ex.clipped_adam_reference(st, **KW, step=1, max_norm=1.0), "48/49")


def test_a_plain_call_is_foreach_over_one_tensor():
    st = states([50], 50)
    one, listed = [fa.asarray(a.copy()) for a in st[0]], lists_of(st)
    CLIPPED(*one, **KW, step=1, max_norm=1.0)
    CLIPPED.foreach(*listed, **KW, step=1, max_norm=1.0)
    for a, column in zip(one, listed):
        np.testing.assert_allclose(a.get(), column[0].get(), rtol=1e-6)


def test_outside_fuse_it_is_the_norm_of_the_concatenation():
    rng = np.random.default_rng(51)
    xs = [rng.standard_normal(n).astype(np.float32) for n in (3, 8)]
    np.testing.assert_allclose(float(fa.global_norm([fa.asarray(x) for x in xs])),
                               np.linalg.norm(np.concatenate(xs)), rtol=1e-6)
    np.testing.assert_allclose(float(fa.global_norm(fa.asarray(xs[1]), ord=np.inf)),
                               np.abs(xs[1]).max())


def test_what_two_launches_cannot_do_is_refused():
    @fa.fuse
    def centred(p, g):
        p -= fa.global_norm(g - fa.mean(g))

    @fa.fuse
    def twice(p, g):
        p -= fa.global_norm(g * fa.global_norm(g))

    captured = fa.asarray(np.ones(4))

    @fa.fuse
    def reads_captured(p, g):
        p -= fa.global_norm(g * captured)

    lists = [[fa.asarray(np.ones(4))], [fa.asarray(np.ones(4))]]
    with pytest.raises(UnsupportedOperationError, match="reduction of its own"):
        centred.foreach(*lists)
    for fn in (twice, reads_captured):
        with pytest.raises(UnsupportedOperationError, match="elementwise over them"):
            fn.foreach(*lists)


def test_docstring_example():
    module = importlib.import_module("fusedarrays.fuse.across")
    assert doctest.testmod(module).failed == 0


# sim

def check_rows(arrays, want, seed):
    for k, (row, w) in enumerate(zip(arrays, want)):
        for got, ref, name in zip((row[0], row[2], row[3]), w, "pmv"):
            np.testing.assert_allclose(got.get(), ref, rtol=2e-5, atol=1e-6,
                                       err_msg=f"{name} of tensor {k} (seed {seed})")


@pytest.mark.tiers("sim")
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
    check_rows(arrays, ex.clipped_adam_reference(refs, **KW, step=1, max_norm=1.0), seed)


@pytest.mark.tiers("sim")
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


@pytest.mark.tiers("sim")
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


@pytest.mark.tiers("sim")
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


# cuda

def sizes(seed, count=60):
    rng = np.random.default_rng(seed)
    return [int(n) for n in rng.integers(1, 100_000, count)] + [1, 3, 4097]


@pytest.mark.tiers("cuda")
def test_two_launches_against_float64_numpy_and_the_same_bits_every_call():
    seed = 71
    clipped = fa.fuse(ex.clipped_adam)
    st = [ex.state(n, seed * 1000 + k) for k, n in enumerate(sizes(seed))]
    runs = []
    for _ in range(2):
        lists = [[fa.asarray(s[j].copy()) for s in st] for j in range(4)]
        fa.reset_stats()
        clipped.foreach(*lists, **CUDA_KW, step=1, max_norm=1.0)
        assert fa.stats()["launches"] == 2
        runs.append([a.get() for column in lists for a in column])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    want = ex.clipped_adam_reference(st, **CUDA_KW, step=1, max_norm=1.0)
    for k, w in enumerate(want):
        for got, ref, name in zip((lists[0][k], lists[2][k], lists[3][k]), w, "pmv"):
            np.testing.assert_allclose(got.get(), ref, rtol=2e-5, atol=1e-6,
                                       err_msg=f"{name} of tensor {k} (seed {seed})")


@pytest.mark.tiers("cuda")
def test_matches_torch_clip_grad_norm_and_adam():
    torch = pytest.importorskip("torch")
    seed = 72
    gen = torch.Generator(device="cuda").manual_seed(seed)
    ns = sizes(seed, 40)
    params = [torch.randn(n, device="cuda", generator=gen) for n in ns]
    ours = [p.clone() for p in params]
    ms, vs = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=CUDA_KW["lr"], betas=(CUDA_KW["beta1"], CUDA_KW["beta2"]),
                           eps=CUDA_KW["eps"], foreach=True)
    clipped = fa.fuse(ex.clipped_adam)
    for step in range(1, 4):
        grads = [3 * torch.randn(n, device="cuda", generator=gen) for n in ns]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        opt.step()
        clipped.foreach([fa.asarray(p) for p in ours], [fa.asarray(g) for g in grads],
                        [fa.asarray(m) for m in ms], [fa.asarray(v) for v in vs], **CUDA_KW,
                        step=step, max_norm=1.0)
    torch.cuda.synchronize()
    for k, (a, b) in enumerate(zip(ours, params)):
        np.testing.assert_allclose(a.cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=f"tensor {k} (seed {seed})")


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

@pytest.mark.tiers("ptx")
def test_both_launches_compile_without_atomics():
    from fusedarrays.compiler import devicelib
    from fusedarrays.cuda.compile import compile_ptx

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
