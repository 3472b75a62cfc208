"""fa.global_norm on the cpu backend at its default settings: clip-by-global-norm then Adam over a
list in two launches, against a float64 NumPy reference; the norm's orders, mixed dtypes, what
the first launch reads, determinism, plain calls and lists, and what is refused."""

import doctest
import importlib

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import UnsupportedOperationError
from fusedarrays.compiler import foreach_plan as plan_module

pytestmark = pytest.mark.usefixtures("cpu_backend")
CLIPPED = fa.fuse(ex.clipped_adam)
KW = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8)


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


def test_two_norms_in_one_function():
    @fa.fuse
    def ratio(p, g):
        p *= fa.global_norm(g) / fa.global_norm(g, ord=np.inf)

    rng = np.random.default_rng(52)
    gs = [rng.standard_normal(n).astype(np.float32) for n in (7, 4000, 2)]
    ps = [fa.asarray(np.ones(g.size, np.float32)) for g in gs]
    fa.reset_stats()
    ratio.foreach(ps, [fa.asarray(g) for g in gs])
    assert fa.stats()["launches"] == 2
    every = np.concatenate(gs).astype(np.float64)
    for p in ps:
        np.testing.assert_allclose(p.get(), np.linalg.norm(every) / np.abs(every).max(),
                                   rtol=1e-6, err_msg="seed 52")


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
