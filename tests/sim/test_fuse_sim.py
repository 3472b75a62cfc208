"""fa.fuse on the sim backend: the generated CUDA kernels (single and multi-tensor, with the
pointer table) run in numba's simulator, against NumPy. Arrays stay small: every simulated
thread is a Python thread."""

import re

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

ADAM = fa.fuse(ex.adam)


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def close(got, want):
    # the simulator evaluates float32 ops in float32 like NumPy; no fused multiply-adds
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_adam_in_place_one_launch_per_step():
    ref = ex.state(40)
    arrays = [fa.asarray(a) for a in ref]
    for kw in ex.ADAM_STEPS[:3]:
        fa.reset_stats()
        ADAM(*arrays, **kw)
        ex.adam(*ref, **kw)
        assert fa.stats()["launches"] == 1 and fa.backend() == "sim"
    for a, r in zip(arrays, ref):
        close(a.get(), r)


@pytest.mark.parametrize("name", ["sgd", "adamw", "rmsprop"])
def test_optimizers_match_numpy(name):
    fn = getattr(ex, name)
    kw = {"sgd": dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=1e-2, nesterov=True),
          "adamw": dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1, step=2),
          "rmsprop": dict(lr=1e-2, alpha=0.99, eps=1e-8)}[name]
    ref = ex.state(33, 1, count=4 if name == "adamw" else 3)
    arrays = [fa.asarray(a) for a in ref]
    fa.fuse(fn)(*arrays, **kw)
    fn(*ref, **kw)
    for a, r in zip(arrays, ref):
        close(a.get(), r)


def test_foreach_uses_the_pointer_table_in_one_launch():
    sizes = [1, 17, 40, 3, 64]
    states = [ex.state(n, seed) for seed, n in enumerate(sizes)]
    refs = [[a.copy() for a in s] for s in states]
    lists = [[fa.asarray(s[j]) for s in states] for j in range(4)]
    for kw in ex.ADAM_STEPS[:2]:
        fa.reset_stats()
        ADAM.foreach(*lists, **kw)
        assert fa.stats()["launches"] == 1
        for r in refs:
            ex.adam(*r, **kw)
    for j in range(4):
        for got, r in zip(lists[j], refs):
            close(got.get(), r[j])


def test_aliasing_and_two_outputs():
    @fa.fuse
    def both(x, y):
        x += x.T
        return x * y, x - y

    a, b = np.random.default_rng(3).standard_normal((2, 6, 6)).astype(np.float32)
    x = fa.asarray(a)
    prod, diff = both(x, fa.asarray(b))
    new = a + a.T
    np.testing.assert_array_equal(x.get(), new)
    np.testing.assert_array_equal(prod.get(), new * b)
    np.testing.assert_array_equal(diff.get(), new - b)


def test_foreach_kernel_compiles_to_ptx_for_sm_90():
    """The multi-tensor kernel the sim just ran, as the cuda backend compiles it (no GPU)."""
    pytest.importorskip("numba.cuda")
    from fusedarrays.compiler import devicelib, render
    from fusedarrays.cuda.compile import compile_ptx

    lists = [[fa.asarray(a)] for a in ex.state(8, 2)]
    ADAM.foreach(*lists, **ex.ADAM_STEPS[0])
    plans = [entry.plan for _, entry in ADAM._foreach.entries()]
    source = render(plans[0], "cuda")
    ptx, _ = compile_ptx(source, plans[0].name, plans[0].param_types(), "sm_90",
                         devicelib.helpers())
    body = ptx[ptx.index(".entry"):]
    # four arrays per tensor (p, g, m, v: loaded and stored through one table column each)
    assert len(set(re.findall(r"ld\.global\.u64\s+%rd\d+, \[%rd\d+\+?(\d*)\]", body))) == 4
    # aligned tensors: one 128-bit access per array and group of four; the element-by-element
    # path (NVVM may unroll it) keeps four loads per three stores
    assert body.count("ld.global.v4.f32") == 4 and body.count("st.global.v4.f32") == 3
    assert body.count("st.global.f32") >= 3
    assert body.count("ld.global.f32") * 3 == body.count("st.global.f32") * 4


def test_foreach_walks_chunks_that_cross_tensor_boundaries():
    @fa.fuse
    def descend(p, g, lr):
        p -= lr * g

    sizes = [4095, 2, 4200, 1]             # three 4096-element chunks, each crossing tensors
    rng = np.random.default_rng(4)
    ps = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    gs = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    fp, fg = [fa.asarray(p) for p in ps], [fa.asarray(g) for g in gs]
    fa.reset_stats()
    descend.foreach(fp, fg, 0.5)
    assert fa.stats()["launches"] == 1
    for got, p, g in zip(fp, ps, gs):
        np.testing.assert_array_equal(got.get(), p - np.float32(0.5) * g)


def test_foreach_vector_groups_tails_and_a_misaligned_tensor():
    """Sizes that are not whole vectors, and one tensor starting 4 bytes off alignment (it must
    take the element-by-element path): every element updated exactly as NumPy's Adam."""
    sizes = [1, 5, 8, 13, 6]
    refs = [ex.state(n, seed=k) for k, n in enumerate(sizes)]
    arrays = [[fa.asarray(a) for a in ref] for ref in refs]
    shifted = ex.state(10, seed=99)
    refs.append([a[1:].copy() for a in shifted])
    arrays.append([fa.asarray(a)[1:] for a in shifted])      # a view one element in
    lists = [list(column) for column in zip(*arrays)]
    fa.reset_stats()
    ADAM.foreach(*lists, **ex.ADAM_STEPS[0])
    assert fa.stats()["launches"] == 1
    for ref in refs:
        ex.adam(*ref, **ex.ADAM_STEPS[0])
    for got_row, ref in zip(arrays, refs):
        for got, want in zip(got_row, ref):
            close(got.get(), want)
