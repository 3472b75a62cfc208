"""An index that is a pending node (issue #32): ``t[x.argmax(axis=1)]``, ``fa.take(t,
fa.sum(...).astype(int))``, a reduction (rows and cols schedules), a scan, a product or a gather
as the index, through every route that makes a gather or a scatter, against NumPy (cases:
``tests/index_from_pending_cases.py``) on every tier (sim: the CUDA kernel source, small
shapes); on cpu at its defaults inside ``fa.fuse`` too; on cuda NumPy's ufunc keywords
(``dtype=``, ``where=``, ``out=``, ``ufunc.reduce`` with ``where``/``initial``). The planner cuts
the index into a temporary before the gather (``compiler/cuts.py``)."""

import index_from_pending_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api.array import _wrap
from fusedarrays.ir import graph
from fusedarrays.ir.reductions import reduction_node

# (tier, dtype, seed, shape): (300, 257) argmax over rows of 257 takes the rows schedule, argmin
# over 300 the cols one; the simulator's shape is small
ROUTES = [("cpu", np.float32, 3202, (300, 257)), ("cpu", np.int32, 3202, (300, 257)),
          ("cpu", np.complex64, 3202, (300, 257)), ("sim", np.float32, 3251, (6, 5)),
          ("cuda", np.float32, 3351, (300, 257)), ("cuda", np.complex64, 3351, (300, 257))]


def test_the_issue_examples():
    x = np.random.default_rng(3201).random((5, 4))
    got = fa.asarray(np.arange(4.0))[fa.argmax(fa.asarray(x), axis=1)].get()
    np.testing.assert_array_equal(got, np.arange(4.0)[np.argmax(x, axis=1)])
    t = np.arange(10.0) * 3
    got = fa.take(fa.asarray(t), fa.sum(fa.asarray(x), axis=1).astype(int)).get()
    np.testing.assert_array_equal(got, np.take(t, np.sum(x, axis=1).astype(int)))


@pytest.mark.parametrize("tier, dtype, seed, shape", ROUTES, indirect=["tier"],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_every_route_and_index_kind(tier, dtype, seed, shape):
    reached = cases.gathers_match_numpy(seed, shape, dtype)
    if tier != "sim":
        assert {"rows", "cols"} <= reached, reached


TILED = {"cpu": 3203, "cuda": 3352}
SCATTERS = {"cpu": (3205, (40, 33)), "sim": (3252, (5, 4)), "cuda": (3353, (400, 129))}


@pytest.mark.tiers("cpu", "cuda")
def test_tiled_consumer(tier):
    assert "tiled" in cases.tiled_consumer_matches_numpy(TILED[tier], (300, 257))


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_scatters(tier):
    cases.scatters_match_numpy(*SCATTERS[tier])


def test_split_reduction_index():
    """A sum over 5000 elements per output is split into parts; its result, an index."""
    rng = np.random.default_rng(3204)
    xn, tn = rng.random((4, 5000)), rng.standard_normal(12000)
    x, t = fa.asarray(xn), fa.asarray(tn)
    got = t[fa.sum(x > 0.5, axis=1)] + t[fa.sum(x > 0.5, axis=None)]
    want = tn[np.sum(xn > 0.5, axis=1)] + tn[np.sum(xn > 0.5)]
    np.testing.assert_array_equal(got.get(), want, err_msg="seed=3204")


@fa.fuse
def _fused_pick(x, t):
    return t[fa.argmax(x, axis=1)] * 2.0 + fa.take(t, fa.sum(x > 0.5, axis=1)) + fa.max(x)


@fa.fuse
def _fused_rows(x):
    return x[fa.argmin(x, axis=0)] - 1.0


@fa.fuse
def _fused_cols(x):
    return x[:, fa.argmax(x, axis=1) % 27] + fa.take(x, fa.argmin(x, axis=1) % 27, axis=1)


def test_inside_fuse():
    rng = np.random.default_rng(3206)
    xn, tn = rng.random((30, 27)), rng.standard_normal(40)
    x, t = fa.asarray(xn), fa.asarray(tn)
    want = tn[np.argmax(xn, axis=1)] * 2.0 + np.take(tn, np.sum(xn > 0.5, axis=1)) + xn.max()
    np.testing.assert_allclose(_fused_pick(x, t).get(), want, rtol=1e-13, err_msg="seed=3206")
    np.testing.assert_array_equal(_fused_rows(x).get(), xn[np.argmin(xn, axis=0)] - 1.0)
    np.testing.assert_array_equal(_fused_cols(x).get(), xn[:, np.argmax(xn, axis=1) % 27]
                                  + np.take(xn, np.argmin(xn, axis=1) % 27, axis=1))


def test_a_pending_index_stays_pending():
    """Nothing runs until the result is asked for: then the reduction's kernel and the
    gather's, one launch each (x[:, idx] and x[i, j] included)."""
    rng = np.random.default_rng(3209)
    xn = rng.random((20, 30))
    x = fa.asarray(xn)
    for got, want in ((x[:, fa.argmax(x, axis=1)], xn[:, np.argmax(xn, axis=1)]),
                      (x[fa.argmax(x, axis=0)[:20], fa.argmin(x, axis=1)],
                       xn[np.argmax(xn, axis=0)[:20], np.argmin(xn, axis=1)])):
        fa.reset_stats()
        assert got.pending and fa.stats()["launches"] == 0
        np.testing.assert_array_equal(got.get(), want, err_msg="seed=3209")
        assert fa.stats()["launches"] <= 3, fa.stats()["launches"]


def test_out_of_range_pending_index_raises_at_get():
    """A pending index is not read on the host: the kernel clamps it and ``.get()`` raises
    NumPy's IndexError naming a value (any of those out of range), the axis and the size."""
    rng = np.random.default_rng(3207)
    x, t = fa.asarray(rng.random((6, 5))), fa.asarray(rng.random(5))
    bad = t[fa.argmax(x, axis=1) + 5]
    said = r"index [5-9] is out of bounds for axis 0 with size 5 \(in x\[idx\]"
    with pytest.raises(IndexError, match=said):
        bad.get()
    np.testing.assert_array_equal(t[fa.argmax(x, axis=1)].get(),
                                  t.get()[np.argmax(x.get(), axis=1)])


def test_draws_and_gathers_over_a_cut():
    """The elementwise kernel after a cut places draws and gathers: a draw beside a sum, and a
    planner handed a reduction *of* a gather (which the API computes first) computes the
    gather into a temporary itself."""
    rng = np.random.default_rng(3208)
    xn, tn = rng.random((7, 9)), rng.standard_normal(9)
    x, t = fa.asarray(xn), fa.asarray(tn)
    draw = fa.random.default_rng(5).random((7, 9))
    with_sum = (draw + fa.sum(x)).get()
    np.testing.assert_allclose(with_sum - xn.sum(), draw.get(), rtol=1e-12, atol=1e-12)
    gathered = t[fa.argmax(x, axis=1)]
    node = reduction_node("sum", gathered._resolved(), (0,), False, np.dtype(np.float64))
    got = (_wrap(node) + fa.sum(x)).get()
    np.testing.assert_allclose(got, tn[np.argmax(xn, axis=1)].sum() + xn.sum(), rtol=1e-13)
    assert any(n.kind == "gather" for n in graph.walk([node]))


@pytest.mark.tiers("cuda")
def test_ufunc_keywords():
    seed = 3354
    print("seed", seed)
    rng = np.random.default_rng(seed)
    hi = rng.integers(-100, 100, (300, 257)).astype(np.int8)
    hf = rng.standard_normal((300, 257)).astype(np.float32)
    mask = rng.random(hf.shape) > 0.3
    x, y = fa.asarray(hi), fa.asarray(hf)
    np.testing.assert_array_equal(np.add(x, x, dtype=np.float64).get(),
                                  np.add(hi, hi, dtype=np.float64))
    out, want = fa.asarray(hf.copy()), hf.copy()
    np.multiply(y, 3, out=out, where=fa.asarray(mask))
    np.multiply(hf, 3, out=want, where=mask)
    np.testing.assert_array_equal(out.get(), want)
    for axis in (0, 1, None):
        np.testing.assert_array_equal(
            np.add.reduce(x, axis=axis, where=mask, initial=5).get(),
            np.add.reduce(hi, axis=axis, where=mask, initial=5))
        np.testing.assert_array_equal(
            np.maximum.reduce(x, axis=axis, where=mask, initial=-7, keepdims=True).get(),
            np.maximum.reduce(hi, axis=axis, where=mask, initial=-7, keepdims=True))
    np.testing.assert_array_equal(np.add.accumulate(x, axis=1, dtype=np.int32).get(),
                                  np.add.accumulate(hi, axis=1, dtype=np.int32))
