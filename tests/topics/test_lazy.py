"""Laziness, fusion, recompiles, in-place safety and errors, on the cpu tier (the tier fixture
sets the cpu backend at its defaults); the cpu backend's prepared launches."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


def rand(*shape, dtype=np.float32):
    return np.random.default_rng(107).standard_normal(shape).astype(dtype)


def test_nothing_runs_until_asked_and_a_big_graph_is_one_launch():
    a, b, c = rand(100), rand(100), rand(100)
    x, y, z = fa.asarray(a), fa.asarray(b), fa.asarray(c)
    fa.reset_stats()
    r = x
    for k in range(10):
        r = r * y + z * (k + 1) - fa.sqrt(fa.abs(x))
    assert r.pending and fa.stats()["launches"] == 0
    got = r.get()
    assert fa.stats()["launches"] == 1
    want = a
    for k in range(10):
        want = want * b + c * np.float32(k + 1) - np.sqrt(np.abs(a))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_new_scalars_and_new_lengths_never_recompile():
    fa.reset_stats()
    for step in range(20):
        n = 50 + 7 * step
        a, b = rand(n), rand(n)
        got = (fa.asarray(a) * (0.5 + step) + fa.asarray(b) / 3.0).get()
        np.testing.assert_array_equal(got, a * np.float32(0.5 + step) + b / np.float32(3.0))
    assert fa.stats()["compiles"] == 1
    assert fa.stats()["launches"] == 20 and fa.stats()["memory_hits"] == 19


def test_same_expression_built_1000_times_compiles_once():
    x, y = fa.asarray(rand(16)), fa.asarray(rand(16))
    fa.reset_stats()
    for _ in range(1000):
        (x * 2.0 + y).compute()
    assert fa.stats()["compiles"] <= 1 and fa.stats()["launches"] == 1000


def test_writing_into_a_buffer_keeps_pending_results():
    a = rand(64)
    x = fa.asarray(a)
    y = x * 2 + 1            # pending, reads x
    x[...] = 0.0             # must not change y
    x[3:9] = 7.0
    np.testing.assert_array_equal(y.get(), a * 2 + 1)
    expected = np.zeros(64, np.float32)
    expected[3:9] = 7
    np.testing.assert_array_equal(x.get(), expected)


def test_inplace_with_transpose_matches_numpy():
    a = rand(9, 9)
    x = fa.asarray(a)
    x += x.T
    np.testing.assert_array_equal(x.get(), a + a.T)


def test_inplace_shifted_overlap_matches_numpy():
    a = rand(40)
    x = fa.asarray(a)
    x[1:] += x[:-1]
    want = a.copy()
    want[1:] += want[:-1].copy()
    np.testing.assert_array_equal(x.get(), want)


def test_views_share_memory_once_computed():
    a = rand(6, 4)
    x = fa.asarray(a)
    v = x[1:3]
    v *= 10
    want = a.copy()
    want[1:3] *= 10
    np.testing.assert_array_equal(x.get(), want)
    w = (x + 1).T[::2]                     # a view of a pending expression: still one fusion
    fa.reset_stats()
    np.testing.assert_array_equal(w.get(), (want + 1).T[::2])


def test_node_limit_evaluates_by_itself():
    x = fa.asarray(rand(10))
    with config.override(MAX_NODES=8):   # the subject: the limit, reached by a short chain
        r = x
        for _ in range(10):
            r = r + 1.0
        assert not r.pending or r._node.count <= 8


def test_dtypes_follow_numpy_with_weak_scalars():
    x8 = fa.asarray(np.arange(5, dtype=np.uint8))
    assert (x8 + 200).dtype == np.uint8
    assert (x8 + 1.5).dtype == np.float64
    assert (fa.asarray(rand(3, dtype=np.float16)) * 2.0).dtype == np.float16
    assert (x8 + fa.asarray(np.arange(5, dtype=np.int8))).dtype == np.int16
    with pytest.raises(OverflowError):
        x8 + 300
    big = np.array([2**63 + 5, 3], np.uint64)
    small = np.array([-1, 3], np.int64)
    np.testing.assert_array_equal((fa.asarray(small) < fa.asarray(big)).get(), small < big)


def test_integer_division_by_zero_gives_zero():
    a = np.array([7, -7, 5, np.iinfo(np.int32).min], np.int32)
    b = np.array([0, 0, 2, -1], np.int32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((fa.asarray(a) // fa.asarray(b)).get(), a // b)
        np.testing.assert_array_equal((fa.asarray(a) % fa.asarray(b)).get(), a % b)


def test_clear_errors():
    x = fa.asarray(rand(3))
    with pytest.raises(fa.ShapeError, match=r"\(3,\).*\(4,\)"):
        x + fa.asarray(rand(4))
    with pytest.raises(fa.DTypeError, match="datetime64"):
        fa.asarray(np.zeros(3, "M8[s]"))
    with pytest.raises(fa.UnsupportedOperationError, match="ldexp"):
        np.ldexp(x, 2)
    with pytest.raises(TypeError):
        fa.asarray(np.ones(3, bool)) - True
    with pytest.raises(fa.UnsupportedOperationError, match="same_kind"):
        xi = fa.asarray(np.arange(3))
        xi += 1.5


def test_construction_and_conversion():
    np.testing.assert_array_equal(fa.zeros((2, 3), np.int16).get(), np.zeros((2, 3), np.int16))
    np.testing.assert_array_equal(fa.full(4, 2.5).get(), np.full(4, 2.5))
    np.testing.assert_array_equal(fa.arange(5).get(), np.arange(5))
    x = fa.asarray(np.array([3.5], np.float32))
    assert float(x) == 3.5 and int(x) == 3 and bool(x)
    assert np.asarray(fa.ones_like(x)).tolist() == [1.0]
    e = fa.expand_dims(fa.asarray(np.arange(3)), 0)
    assert e.shape == (1, 3) and fa.squeeze(e).shape == (3,)
    assert isinstance(np.sqrt(x), fa.ndarray)


def test_explain_shows_source_and_key_parts():
    x = fa.asarray(rand(8))
    ex = fa.explain(x * 2 + 1)
    assert "def fa_" in ex.source and "for k in range(k0" in ex.source
    text = str(ex)
    assert "scalar parameters" in text and "operands=" in text
    assert "<script>" not in fa.asarray(rand(2))._repr_html_()


def test_a_rebuilt_expression_sees_writes_to_its_inputs():
    """A rebuilt expression is a new graph over the same leaves: nothing remembered from the
    first can go stale when an input is written."""
    a, b = rand(32), rand(32)
    x, y = fa.asarray(a), fa.asarray(b)
    s = x + y
    built = s._node
    first = s.get()
    again = x + y
    assert again._node is not built and again.pending
    assert again._node.param_list() == built.param_list()   # the same leaves
    x[...] = 5.0
    np.testing.assert_array_equal((x + y).get(), 5 + b)
    np.testing.assert_array_equal(first, a + b)
    v = x[4:8]                                # a view of the same memory
    before = (v + v).get()
    x[4:8] = 1.0
    np.testing.assert_array_equal((v + v).get(), np.full(4, 2, np.float32))
    np.testing.assert_array_equal(before, np.full(4, 10, np.float32))


def test_a_constant_written_often_is_one_param_and_a_repeated_cdf_one_computation():
    # Black-Scholes writes its CDF's five constants out four times, and cdf(d) beside cdf(-d):
    # each equal Python number is one kernel parameter, and the planner computes abs(-d) as
    # abs(d), so cdf(-d) takes cdf(d)'s exp and division (3 exps and 4 divisions, not 5 and 6)
    import blackscholes

    seed = 20261128
    print(f"seed {seed}")
    flat = blackscholes.inputs(3 * 4099, seed)        # the flat walk's vector lanes and a tail
    grid = {k: v.reshape(3, 4099)[::-1, ::-2] for k, v in flat.items()}   # strided views
    for data in (flat, grid):
        arrays = {k: fa.asarray(v) for k, v in data.items()}
        call, put = blackscholes.prices(fa, **arrays)
        body = fa.explain(call + put).plan.body
        ops_of = [i.arg[0] for i in body if i.kind == "op"]
        assert (ops_of.count("exp"), ops_of.count("true_divide")) == (3, 4)
        assert len([i for i in body if i.kind == "scalar"]) == 9
        fa.compute(call, put)
        want_call, want_put = blackscholes.prices(np, **data)
        np.testing.assert_allclose(call.get(), want_call, rtol=1e-5, atol=1e-4,
                                   err_msg=f"seed {seed}")
        np.testing.assert_allclose(put.get(), want_put, rtol=1e-5, atol=1e-4,
                                   err_msg=f"seed {seed}")


def test_scalars_equal_in_one_call_and_apart_in_the_next_each_give_numpy():
    # x * s + y * t binds s and t once where they are equal: another kernel than where they
    # are not, each right; float zeros of either sign and an int beside an equal float stay apart
    a, b = rand(4099), rand(4099) + 3.0
    x, y = fa.asarray(a), fa.asarray(b)
    for s, t in ((2.5, 2.5), (2.5, -1.25), (-1.25, -1.25), (3, 3.0), (-0.0, 0.0), (0.0, -0.0)):
        got_sum, got_inv = fa.compute(x * s + y * t, 1.0 / (x * s) + 1.0 / (y * t))
        with np.errstate(divide="ignore", invalid="ignore"):
            want_inv = 1.0 / (a * np.float32(s)) + 1.0 / (b * np.float32(t))
        np.testing.assert_array_equal(got_sum.get(), a * np.float32(s) + b * np.float32(t))
        np.testing.assert_array_equal(got_inv.get(), want_inv.astype(np.float32), err_msg=(s, t))


def test_abs_of_a_negation_follows_numpy_for_signed_and_unsigned_integers():
    rng = np.random.default_rng(1128)
    for dtype in (np.uint8, np.int16, np.float16):
        values = rng.integers(-100, 100, 5000).astype(dtype) if dtype != np.uint8 else \
            rng.integers(0, 256, 5000).astype(dtype)
        x = fa.asarray(values)[::-1]
        with np.errstate(over="ignore"):
            want = np.abs(-values[::-1]) + np.abs(values[::-1])
        np.testing.assert_array_equal((fa.abs(-x) + fa.abs(x)).get(), want, err_msg=str(dtype))


def test_after_its_first_launch_a_record_launches_through_the_backends_prepared_call(
        monkeypatch):
    """A launch record asks the backend for a prepared launch after its first (cuda's C launch:
    ``direct_launch``) and uses it for every later launch; a refused one goes the whole way,
    and ``fa.profile()`` goes the whole way too. The cpu backend has none, so one is lent here
    that launches for real: each result is checked against NumPy."""
    from fusedarrays.runtime import launch, realize
    from fusedarrays.runtime.backend import get_backend

    seed = 131
    print("seed", seed)
    rng = np.random.default_rng(seed)
    backend = get_backend()
    calls, refuse, prepared = [], [False], []

    def direct_launch(kernel, n, geometry):
        prepared.append(n)

        def call(config, size, args):
            calls.append(size)
            if refuse[0]:
                return "refused"
            backend.launch(kernel, size, list(args), geometry)
        return call, ("a config",)

    monkeypatch.setattr(backend, "direct_launch", direct_launch, raising=False)
    monkeypatch.setattr(realize, "_records", {})   # records made here only, gone after
    shape = (3, 4099)
    for step, expect in enumerate([0, 1, 2, 3, 3]):
        refuse[0] = step == 3
        a, b = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
        x, y = fa.asarray(a), fa.asarray(b)
        fa.reset_stats()
        if step == 4:
            with fa.profile():
                got = (x[::-1, ::-1] * 1.75 - y).get()
        else:
            got = (x[::-1, ::-1] * 1.75 - y).get()
        np.testing.assert_array_equal(got, a[::-1, ::-1] * np.float32(1.75) - b)
        assert fa.stats()["launches"] == 1
        assert len(calls) == expect, step
        assert prepared == [3 * 4099], step
    # what os.fork runs in a child: no call prepared in the parent is made there (the backend
    # refuses a device the parent used; the cpu backend goes on)
    monkeypatch.setattr(launch, "_prepared_ok", [True])
    launch._forget_prepared_launches()
    got = (x[::-1, ::-1] * 1.75 - y).get()
    np.testing.assert_array_equal(got, a[::-1, ::-1] * np.float32(1.75) - b)
    assert len(calls) == 3


def test_the_cpu_backend_prepares_its_launches(monkeypatch):
    """The cpu backend prepares a launch after a record's first (``direct_launch``: its chunks
    run without ``launch``'s frames); later launches take it and give the same results, a
    split reduction's fold included."""
    from fusedarrays.runtime import realize

    monkeypatch.setattr(realize, "_records", {})
    seed = 137
    print("seed", seed)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        a = rng.standard_normal((3, 4099), np.float32)
        x = fa.asarray(a)
        np.testing.assert_array_equal((x[:, ::-2] * 3 - 1).get(),
                                      a[:, ::-2] * np.float32(3) - np.float32(1))
    record, = realize._records.values()
    assert record.direct and callable(record.direct[0])
    # kept from its first launch through it: the chunk count and numba's compiled function for
    # the record's argument types (no dispatch on them)
    prepared = record.direct[1]
    assert prepared.chunks >= 1 and prepared.entry is not prepared.kernel[0]
    for _ in range(3):   # a full sum: partials, then the fold
        a = rng.standard_normal(300_001, np.float32)
        np.testing.assert_allclose(float(fa.asarray(a).astype(np.float64).sum()),
                                   a.astype(np.float64).sum(), rtol=1e-12)


def test_several_results_computed_again_take_their_leaf_sids_from_the_record():
    """``fa.compute(a, b)`` of fresh results (``realize.compute_nodes``): the leaves' sids are
    kept on the launch record after its first evaluation, and are what ``graph.leaf_sid``
    gives (their dtype, view, alignment class and device); NumPy's values every time, float32
    and float64 results of one launch."""
    from fusedarrays.ir import graph

    seed = 139
    print("seed", seed)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        a, b = rng.standard_normal((2, 37, 5)).astype(np.float32)
        c = rng.standard_normal(5)
        x, y, z = fa.asarray(a), fa.asarray(b), fa.asarray(c)
        u, v, w = fa.compute(x * y + 1.5, x - y * z, y[::-1] * 2.0)
        for got, want in ((u, a * b + np.float32(1.5)), (v, a - b * c),
                          (w, b[::-1] * np.float32(2.0))):
            np.testing.assert_allclose(got.get(), want, rtol=1e-6)
            node = got._node
            buffer, view = node.attrs
            assert node.sid == graph.leaf_sid(buffer, node.dtype, view)
            assert graph.leaf(buffer, node.dtype, *view) is node
