"""fa.fuse, by tier: one launch per step, in place, aliasing, foreach, retraces.

- cpu: every case. Each new kernel costs seconds to compile on CI, so the tests share functions
  and signatures.
- sim: the generated CUDA kernels (single and multi-tensor, with the pointer table) in numba's
  simulator, against NumPy, and the multi-tensor kernel compiled to PTX for sm_90. Arrays stay
  small: every simulated thread is a Python thread.
- cuda (skipped without PyTorch): against torch.optim: SGD with momentum, Adam, AdamW, RMSprop,
  in place on PyTorch tensors (zero-copy through fa.asarray), one launch per step; foreach over
  many tensors in one launch against torch's multi-tensor Adam.
"""

import importlib
import math
import re
import weakref

import fuse_examples as ex
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.errors import UnsupportedOperationError
from fusedarrays.fuse import trace

fuse_module = importlib.import_module("fusedarrays.fuse.function")   # fa.fuse is the function
signature_module = importlib.import_module("fusedarrays.fuse.signature")

ADAM = fa.fuse(ex.adam)
SGD = fa.fuse(ex.sgd)
SIM_ADAM = fa.fuse(ex.adam)     # the sim tier's own, its cache entries apart from the cpu's

try:
    import torch
except ImportError:     # the cuda cases skip (_cuda_needs_torch)
    torch = None


@pytest.fixture(autouse=True)
def _cuda_needs_torch(tier):
    if tier == "cuda" and torch is None:
        pytest.skip("the cuda cases run against torch.optim: PyTorch is not installed")


def run_adam(n=1000, steps=ex.ADAM_STEPS, seed=0):
    ref = ex.state(n, seed)
    arrays = [fa.asarray(a) for a in ref]
    for kw in steps:
        ADAM(*arrays, **kw)
        ex.adam(*ref, **kw)
    return arrays, ref


def test_adam_in_place_is_one_launch_per_step_and_matches_numpy():
    ref = ex.state(1000)
    arrays = [fa.asarray(a) for a in ref]
    fa.reset_stats()
    for k, kw in enumerate(ex.ADAM_STEPS):
        assert ADAM(*arrays, **kw) is None
        ex.adam(*ref, **kw)
        assert fa.stats()["launches"] == k + 1
    for a, r in zip(arrays, ref):
        np.testing.assert_allclose(a.get(), r, rtol=1e-6, atol=1e-7)


def test_new_learning_rates_and_steps_never_recompile_or_retrace():
    run_adam(steps=ex.ADAM_STEPS[:1])
    traces = ADAM.traces
    fa.reset_stats()
    steps = [dict(lr=0.1 / (k + 1) ** 0.5, beta1=0.9 - k / 100, beta2=0.999, eps=1e-8, step=k)
             for k in range(1, 25)]
    arrays, ref = run_adam(steps=steps, seed=1)
    assert fa.stats()["compiles"] == 0 and fa.stats()["launches"] == len(steps)
    assert ADAM.traces == traces
    for a, r in zip(arrays, ref):
        np.testing.assert_allclose(a.get(), r, rtol=1e-6, atol=1e-7)
    # a new length traces again (the views differ) but the kernel is the same: no compile
    run_adam(n=333, steps=ex.ADAM_STEPS[:1])
    assert ADAM.traces == traces + 1 and fa.stats()["compiles"] == 0
    assert "argument 0 (p) view shape (1000,) strides (1,) offset 0 → shape (333,)" in ADAM.why


def test_a_cached_call_neither_traces_nor_plans(monkeypatch):
    arrays, ref = run_adam(steps=ex.ADAM_STEPS[:1])

    def refuse(*args, **kwargs):
        raise AssertionError("a cached call traced or planned")
    monkeypatch.setattr(trace.Tracer, "run", refuse)
    monkeypatch.setattr(trace, "plan_evaluation", refuse)
    for kw in ex.ADAM_STEPS[1:]:
        ADAM(*arrays, **kw)
        ex.adam(*ref, **kw)
    np.testing.assert_allclose(arrays[0].get(), ref[0], rtol=1e-6, atol=1e-7)


@fa.fuse
def two_outputs(x, y, s):
    return x.T * y + s, x.T - y


def test_two_returned_outputs_come_from_one_launch():
    a, b = np.random.default_rng(2).standard_normal((2, 6, 6)).astype(np.float32)
    fa.reset_stats()
    first, second = two_outputs(fa.asarray(a), fa.asarray(b), 1.5)
    assert fa.stats()["launches"] == 1
    np.testing.assert_array_equal(first.get(), a.T * b + np.float32(1.5))
    np.testing.assert_array_equal(second.get(), a.T - b)


def test_a_call_repeating_the_last_arguments_skips_the_signature_and_stays_right(monkeypatch):
    rng = np.random.default_rng(102)
    a, b = rng.standard_normal((2, 6, 6)).astype(np.float32)
    x, y = fa.asarray(a), fa.asarray(b)
    two_outputs(x, y, 1.5)
    built = []
    real = fuse_module.Fused._signature
    monkeypatch.setattr(fuse_module.Fused, "_signature",
                        lambda self, *args: built.append(1) or real(self, *args))
    first, _ = two_outputs(x, y, 2.5)        # the same arrays, a new value: no signature
    assert built == []
    np.testing.assert_array_equal(first.get(), a.T * b + np.float32(2.5))
    first, _ = two_outputs(x, y, 2)          # an int where a float was: the whole signature
    assert len(built) == 1
    np.testing.assert_array_equal(first.get(), a.T * b + np.float32(2))
    x += 1                                   # written in place: x keeps its node
    first, _ = two_outputs(x, y, 2)
    assert len(built) == 1
    np.testing.assert_array_equal(first.get(), (a + 1).T * b + np.float32(2))
    x = x * 2                                # a pending array: the whole signature computes it
    first, _ = two_outputs(x, y, 2)
    assert len(built) == 2
    np.testing.assert_array_equal(first.get(), ((a + 1) * 2).T * b + np.float32(2))
    first, _ = two_outputs(y, x, 2)          # the same arrays, swapped
    assert len(built) == 3
    np.testing.assert_array_equal(first.get(), b.T * ((a + 1) * 2) + np.float32(2))
    with config.override(LOG_COMPILES=True):  # any setting may change: the whole signature
        two_outputs(y, x, 2)
    assert len(built) == 4


def test_packed_arguments_are_those_the_lazy_path_passes(monkeypatch):
    """The generated packer mirrors runtime's argument order and offsets (strided operands):
    the same pointers, sizes, offsets, strides and scalars, but for the two fresh outputs."""
    from fusedarrays.runtime import launch

    a, b = np.random.default_rng(3).standard_normal((2, 6, 6)).astype(np.float32)
    x, y = fa.asarray(a), fa.asarray(b)
    two_outputs(x, y, 1.5)
    backend = fa._get_backend()
    seen = []
    real = backend.launch
    monkeypatch.setattr(backend, "launch", lambda k, n, args, *g: seen.append(args)
                        or real(k, n, args, *g))
    monkeypatch.setattr(launch, "_prepared_ok", [False])   # no prepared launch: all through launch
    two_outputs(x, y, 1.5)
    fa.compute(x.T * y + 1.5, x.T - y)
    fused, lazy = seen
    assert len(fused) == len(lazy)
    differ = [k for k, (f, z) in enumerate(zip(fused, lazy)) if f != z or type(f) is not type(z)]
    assert len(differ) <= 2 and all(type(fused[k]) is int for k in differ), (fused, lazy)


def test_inplace_through_other_index_maps_matches_numpy():
    @fa.fuse
    def add_transpose(x):
        x += x.T

    @fa.fuse
    def add_shifted(x):
        x[1:] += x[:-1]

    a = np.random.default_rng(4).standard_normal((9, 9)).astype(np.float32)
    x = fa.asarray(a)
    fa.reset_stats()
    add_transpose(x)
    assert fa.stats()["launches"] == 2       # a staged copy of x, then the update
    np.testing.assert_array_equal(x.get(), a + a.T)
    v = np.arange(40, dtype=np.float32)
    y = fa.asarray(v)
    add_shifted(y)
    want = v.copy()
    want[1:] += want[:-1].copy()
    np.testing.assert_array_equal(y.get(), want)


def test_reads_after_an_inplace_write_see_the_new_values():
    @fa.fuse
    def update(m, g):
        m[...] = m * 2 + g
        return m + 1, m.T * 3      # reads of m: the written value, directly and transposed

    a, b = np.random.default_rng(5).standard_normal((2, 5, 5)).astype(np.float32)
    m = fa.asarray(a)
    plus, transposed = update(m, fa.asarray(b))
    new = a * 2 + b
    np.testing.assert_array_equal(m.get(), new)
    np.testing.assert_array_equal(plus.get(), new + 1)
    np.testing.assert_array_equal(transposed.get(), new.T * 3)


def test_pending_readers_keep_their_value_and_arguments_return_as_themselves():
    @fa.fuse
    def step(p, g, buf, lr, momentum):
        ex.sgd(p, g, buf, lr, momentum, 0.0, 0.0, False)
        return p

    ref = ex.state(64, 6, count=3)
    p, g, buf = (fa.asarray(a) for a in ref)
    before = p * 2                  # pending, reads p
    assert step(p, g, buf, 0.1, 0.9) is p
    np.testing.assert_array_equal(before.get(), ref[0] * 2)
    ex.sgd(*ref, 0.1, 0.9, 0.0, 0.0, False)
    np.testing.assert_array_equal(p.get(), ref[0])


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_matches_numpy_and_bools_are_static(nesterov):
    ref = ex.state(300, 7, count=3)
    arrays = [fa.asarray(a) for a in ref]
    for step in range(3):
        lr = 0.1 / (step + 1)
        SGD(*arrays, lr, 0.9, 0.0, 1e-2, nesterov)
        ex.sgd(*ref, lr, 0.9, 0.0, 1e-2, nesterov)
    for a, r in zip(arrays, ref):
        np.testing.assert_allclose(a.get(), r, rtol=1e-6, atol=1e-7)


def test_numpy_arguments_are_updated_in_place():
    ref = ex.state(300, 8, count=3)
    host = [a.copy() for a in ref]
    fa.reset_stats()
    SGD(*host, 0.05, 0.9, 0.0, 1e-2, False)
    ex.sgd(*ref, 0.05, 0.9, 0.0, 1e-2, False)
    assert fa.stats()["launches"] == 1
    for h, r in zip(host, ref):
        np.testing.assert_allclose(h, r, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["adamw", "rmsprop"])
def test_more_optimizers_match_numpy(name):
    fn = getattr(ex, name)
    fused = fa.fuse(fn)
    ref = ex.state(500, 9, count=4 if name == "adamw" else 3)
    arrays = [fa.asarray(a) for a in ref]
    for step in range(1, 4):
        kw = (dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1, step=step)
              if name == "adamw" else dict(lr=1e-2, alpha=0.99, eps=1e-8))
        fa.reset_stats()
        fused(*arrays, **kw)
        fn(*ref, **kw)
        assert fa.stats()["launches"] == 1
    for a, r in zip(arrays, ref):
        np.testing.assert_allclose(a.get(), r, rtol=1e-6, atol=1e-7)


def test_foreach_over_50_tensors_is_one_launch():
    rng = np.random.default_rng(10)
    states = [ex.state(int(n), seed) for seed, n in enumerate(rng.integers(1, 300, 50))]
    refs = [[a.copy() for a in s] for s in states]
    lists = [[fa.asarray(s[j]) for s in states] for j in range(4)]
    for kw in ex.ADAM_STEPS:
        fa.reset_stats()
        assert ADAM.foreach(*lists, **kw) is None
        assert fa.stats()["launches"] == 1
        for r in refs:
            ex.adam(*r, **kw)
    for j in range(4):
        for got, r in zip(lists[j], refs):
            np.testing.assert_allclose(got.get(), r[j], rtol=1e-6, atol=1e-7)


def test_foreach_groups_dtypes_and_returns_lists():
    @fa.fuse
    def axpy(x, y, a):
        return a * x + y

    rng = np.random.default_rng(11)
    xs = [rng.standard_normal(n).astype(dt) for n, dt in
          [(7, np.float32), (5, np.float64), (3, np.float32), (4, np.float64)]]
    fa.reset_stats()
    out = axpy.foreach([fa.asarray(x) for x in xs], [fa.asarray(x) for x in xs], 2.0)
    assert fa.stats()["launches"] == 2       # one per dtype group
    for o, x in zip(out, xs):
        assert o.dtype == x.dtype
        np.testing.assert_array_equal(o.get(), 2 * x + x)
    assert "dtype float32 → float64" in axpy.why
    assert "dtype float32 → float64" in str(fa.explain(axpy))


def test_foreach_refuses_what_one_launch_cannot_do():
    @fa.fuse
    def reverse(p):
        p[...] = p[::-1]

    with pytest.raises(UnsupportedOperationError, match="elementwise"):
        reverse.foreach([fa.asarray(np.arange(4.0))])
    base = fa.asarray(np.zeros(10, np.float32))
    with pytest.raises(UnsupportedOperationError, match="overlap"):
        SGD.foreach([base[:6], base[4:]], [base[:6], base[4:]], [base[:6], base[4:]],
                    0.1, 0.9, 0.0, 0.0, False)


def test_traced_scalars_and_arrays_refuse_host_control_flow():
    @fa.fuse
    def uses_math(p, step):
        p *= math.sqrt(step)

    @fa.fuse
    def branches(p, lr):
        if lr > 0:
            p *= lr

    @fa.fuse
    def reads_values(p):
        p *= float(p[0])

    captured = fa.asarray(np.ones(4))

    @fa.fuse
    def writes_captured(p):
        captured[...] = p

    p = fa.asarray(np.ones(4))
    for fn, args in [(uses_math, (p, 3)), (branches, (p, 0.1)), (reads_values, (p,)),
                     (writes_captured, (p,))]:
        with pytest.raises(UnsupportedOperationError, match="fuse"):
            fn(*args)
    np.testing.assert_array_equal(p.get(), np.ones(4))


def test_static_argnames_and_nested_fused_functions():
    inner = fa.fuse(ex.rmsprop)

    @fa.fuse(static_argnames=("repeat",))
    def outer(p, g, sq, lr, repeat):
        for _ in range(repeat):
            inner(p, g, sq, lr, 0.99, 1e-8)      # inlined while outer traces

    ref = ex.state(50, 12, count=3)
    arrays = [fa.asarray(a) for a in ref]
    fa.reset_stats()
    outer(*arrays, 0.01, 2)
    assert fa.stats()["launches"] == 1
    for _ in range(2):
        ex.rmsprop(*ref, 0.01, 0.99, 1e-8)
    for a, r in zip(arrays, ref):
        np.testing.assert_allclose(a.get(), r, rtol=1e-6, atol=1e-7)
    outer(*arrays, 0.01, 3)
    assert outer.traces == 2 and "argument 4 (repeat) static 2 → 3" in outer.why


def test_docstring_lists_exactly_the_signature_parts():
    doc = fuse_module.__doc__
    listed = [line.split("``")[1] for line in doc.splitlines() if line.startswith("- ``")]
    assert tuple(listed) == fuse_module.SIGNATURE_PARTS
    key, _, _ = ADAM._signature((*[fa.asarray(a) for a in ex.state(4)], 1e-3, 0.9, 0.99, 1e-8, 1),
                             {})
    parts = {part for part, _ in signature_module.describe(ADAM, key)}
    assert parts <= set(fuse_module.SIGNATURE_PARTS)


@fa.fuse
def bump(p):
    p += 10


def test_a_fused_write_drops_results_remembered_from_or_in_the_written_memory():
    rng = np.random.default_rng(103)
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    x, y = fa.asarray(a), fa.asarray(b)
    p = x * y
    q = p + 1                            # pending, built on x * y before it was computed
    p.compute()
    bump(p)                              # p's memory changes: q still reads x * y
    np.testing.assert_array_equal(q.get(), a * b + 1)
    np.testing.assert_array_equal(p.get(), a * b + 10)


def test_a_foreach_write_drops_remembered_results():
    rng = np.random.default_rng(104)
    hosts = [rng.standard_normal(n).astype(np.float32) for n in (5, 9)]
    others = [rng.standard_normal(n).astype(np.float32) for n in (5, 9)]
    xs, ys = [fa.asarray(h) for h in hosts], [fa.asarray(o) for o in others]
    products = [x * y for x, y in zip(xs, ys)]
    pending = [p + 1 for p in products]  # built on x * y before it was computed
    fa.compute(*products)
    bump.foreach(products)               # their memory changes: the pending sums still read x * y
    for q, p, h, o in zip(pending, products, hosts, others):
        np.testing.assert_array_equal(q.get(), h * o + 1)
        np.testing.assert_array_equal(p.get(), h * o + 10)


@fa.fuse
def scaled(x, y):
    return x * y + 1.5


def test_new_outputs_are_distinct_leaves_that_views_find_again():
    rng = np.random.default_rng(105)
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    x, y = fa.asarray(a), fa.asarray(b)
    first, second = scaled(x, y), scaled(x, y)           # cached calls: two new arrays
    assert first._node is not second._node
    assert first._node.attrs[0] is not second._node.attrs[0]
    assert first[...]._node is first._node               # a whole view is the result's node,
    # so expressions over it read the same leaf (one param, one load)
    assert (first[...] * y)._node.inputs[0] is (first * y)._node.inputs[0]
    lazy = (x - y).compute()                             # the lazy path's results, likewise
    assert lazy[...]._node is lazy._node
    product = (first * y).compute()
    bump(first)                                          # first's memory changes in place:
    ref = a * b + np.float32(1.5)
    np.testing.assert_array_equal((first[...] * y).get(), (ref + np.float32(10)) * b)
    np.testing.assert_array_equal(product.get(), ref * b)
    np.testing.assert_array_equal(second.get(), ref)
    np.testing.assert_array_equal(lazy.get(), a - b)


def test_a_new_outputs_memory_goes_when_its_array_dies():
    rng = np.random.default_rng(106)
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    x, y = fa.asarray(a), fa.asarray(b)
    scaled(x, y)
    result = scaled(x, y)                               # a cached call
    storage = weakref.ref(result._node.attrs[0].storage)
    np.testing.assert_array_equal(result.get(), a * b + np.float32(1.5))
    del result                                          # nothing else holds its memory
    assert storage() is None


def test_a_scalar_argument_equal_to_a_constant_stays_an_argument():
    # equal Python numbers written in an expression are one param (ir/scalarops): a traced
    # scalar argument is never one of them, even where its first value equals a constant
    @fa.fuse
    def f(x, s):
        return x * s + x * 0.5 - 0.5

    seed = 1129
    print(f"seed {seed}")
    host = np.random.default_rng(seed).standard_normal(5000).astype(np.float32)
    x = fa.asarray(host)
    for s in (0.5, 0.25, 0.5, -3.0):
        want = host * np.float32(s) + host * np.float32(0.5) - np.float32(0.5)
        np.testing.assert_array_equal(f(x, s).get(), want, err_msg=f"s={s}")
    assert f.traces == 1


def test_a_fused_functions_new_array_is_the_leaf_its_buffer_would_make():
    """The array a fused function returns is made with the leaf sid its entry keeps per buffer
    alignment: the sid ``graph.leaf`` would give that view, on every call, so later expressions
    over it plan as over any array (checked against NumPy through a reversed view)."""
    from fusedarrays.ir import graph

    seed = 77
    print("seed", seed)
    rng = np.random.default_rng(seed)
    f = fa.fuse(lambda x, y: x * y - 0.5)
    for _ in range(3):
        a, b = (rng.standard_normal((37, 129)).astype(np.float32) for _ in range(2))
        got = f(fa.asarray(a), fa.asarray(b))
        node = got._node
        buffer, view = node.attrs
        assert node.sid == graph.leaf_sid(buffer, node.dtype, view)
        assert graph.leaf(buffer, node.dtype, (37, 129), (129, 1), 0) is node
        np.testing.assert_array_equal((got[::-1] * 2.0).get(),
                                      (a * b - np.float32(0.5))[::-1] * np.float32(2.0))
    assert f.traces == 1


# sim

def sim_close(got, want):
    # the simulator evaluates float32 ops in float32 like NumPy; no fused multiply-adds
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.tiers("sim")
def test_adam_in_place_one_launch_per_step():
    ref = ex.state(40)
    arrays = [fa.asarray(a) for a in ref]
    for kw in ex.ADAM_STEPS[:3]:
        fa.reset_stats()
        SIM_ADAM(*arrays, **kw)
        ex.adam(*ref, **kw)
        assert fa.stats()["launches"] == 1 and fa.backend() == "sim"
    for a, r in zip(arrays, ref):
        sim_close(a.get(), r)


@pytest.mark.parametrize("name", ["sgd", "adamw", "rmsprop"])
@pytest.mark.tiers("sim")
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
        sim_close(a.get(), r)


@pytest.mark.tiers("sim")
def test_foreach_uses_the_pointer_table_in_one_launch():
    sizes = [1, 17, 40, 3, 64]
    states = [ex.state(n, seed) for seed, n in enumerate(sizes)]
    refs = [[a.copy() for a in s] for s in states]
    lists = [[fa.asarray(s[j]) for s in states] for j in range(4)]
    for kw in ex.ADAM_STEPS[:2]:
        fa.reset_stats()
        SIM_ADAM.foreach(*lists, **kw)
        assert fa.stats()["launches"] == 1
        for r in refs:
            ex.adam(*r, **kw)
    for j in range(4):
        for got, r in zip(lists[j], refs):
            sim_close(got.get(), r[j])


@pytest.mark.tiers("sim")
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


@pytest.mark.tiers("sim")
def test_foreach_kernel_compiles_to_ptx_for_sm_90():
    """The multi-tensor kernel the sim just ran, as the cuda backend compiles it (no GPU)."""
    pytest.importorskip("numba.cuda")
    from fusedarrays.compiler import devicelib, render
    from fusedarrays.cuda.compile import compile_ptx

    lists = [[fa.asarray(a)] for a in ex.state(8, 2)]
    SIM_ADAM.foreach(*lists, **ex.ADAM_STEPS[0])
    plans = [entry.plan for _, entry in SIM_ADAM._foreach.entries()]
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


@pytest.mark.tiers("sim")
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


@pytest.mark.tiers("sim")
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
    SIM_ADAM.foreach(*lists, **ex.ADAM_STEPS[0])
    assert fa.stats()["launches"] == 1
    for ref in refs:
        ex.adam(*ref, **ex.ADAM_STEPS[0])
    for got_row, ref in zip(arrays, refs):
        for got, want in zip(got_row, ref):
            sim_close(got.get(), want)


# cuda

STEPS = 4


def tensors(n, count, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(n, device="cuda", generator=g) for _ in range(count)]


def torch_close(ours, theirs):
    torch.cuda.synchronize()
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.detach().cpu().numpy(),
                               rtol=2e-5, atol=2e-6)


CASES = {
    "sgd": (ex.sgd, lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=1e-2,
                                              nesterov=True, foreach=False),
            dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=1e-2, nesterov=True),
            ["momentum_buffer"]),
    "adam": (ex.adam, lambda p: torch.optim.Adam([p], lr=1e-2, foreach=False),
             dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8), ["exp_avg", "exp_avg_sq"]),
    "adamw": (ex.adamw, lambda p: torch.optim.AdamW([p], lr=1e-2, weight_decay=0.1,
                                                    foreach=False),
              dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1),
              ["exp_avg", "exp_avg_sq"]),
    "rmsprop": (ex.rmsprop, lambda p: torch.optim.RMSprop([p], lr=1e-2, alpha=0.99, eps=1e-8,
                                                          foreach=False),
                dict(lr=1e-2, alpha=0.99, eps=1e-8), ["square_avg"]),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.tiers("cuda")
def test_matches_torch_optim_in_place_one_launch_per_step(name):
    fn, make, kw, state_names = CASES[name]
    fused = fa.fuse(fn)
    n = 100_003
    p_ref, *grads = tensors(n, 1 + STEPS, seed=len(name))
    p_ours = p_ref.clone()
    states = [torch.zeros_like(p_ours) for _ in state_names]
    p_ref.requires_grad_(True)
    opt = make(p_ref)
    ours = [fa.asarray(t) for t in (p_ours, grads[0], *states)]   # zero-copy views
    compiles = None
    for step in range(1, STEPS + 1):
        p_ref.grad = grads[step - 1].clone()
        opt.step()
        ours[1] = fa.asarray(grads[step - 1])
        extra = {"step": step} if "adam" in name else {}
        fa.reset_stats()
        fused(*ours, **kw, **extra)
        assert fa.stats()["launches"] == 1
        if compiles is not None:
            assert fa.stats()["compiles"] == 0     # new step values never recompile
        compiles = fa.stats()["compiles"]
    torch_close(p_ours, p_ref)
    for state, key in zip(states, state_names):
        torch_close(state, opt.state[p_ref][key])


@pytest.mark.tiers("cuda")
def test_foreach_adam_over_200_tensors_is_one_launch_and_matches_torch():
    gen = np.random.default_rng(0)
    sizes = [int(s) for s in gen.integers(1_000, 30_000, 200)]
    params = [torch.randn(s, device="cuda") for s in sizes]
    grads = [torch.randn_like(p) for p in params]
    refs = [p.clone().requires_grad_(True) for p in params]
    opt = torch.optim.Adam(refs, lr=1e-2, foreach=True)
    ms = [torch.zeros_like(p) for p in params]
    vs = [torch.zeros_like(p) for p in params]
    lists = [[fa.asarray(t) for t in ts] for ts in (params, grads, ms, vs)]
    fused = fa.fuse(ex.adam)
    for step in range(1, STEPS + 1):
        for r, g in zip(refs, grads):
            r.grad = g
        opt.step()
        fa.reset_stats()
        fused.foreach(*lists, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, step=step)
        assert fa.stats()["launches"] == 1
    for k in (0, 77, 199):
        torch_close(params[k], refs[k])
        torch_close(ms[k], opt.state[refs[k]]["exp_avg"])


@pytest.mark.tiers("cuda")
def test_returned_outputs_are_device_arrays_from_one_launch():
    @fa.fuse
    def both(x, y, s):
        return x * y + s, x - y

    a, b = tensors(4097, 2, seed=9)
    fa.reset_stats()
    first, second = both(fa.asarray(a), fa.asarray(b), 1.5)
    assert fa.stats()["launches"] == 1
    torch_close(torch.from_numpy(first.get()), a * b + 1.5)
    torch_close(torch.from_numpy(second.get()), a - b)
