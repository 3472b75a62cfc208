"""An index that is a pending node (issue #32): ``t[x.argmax(axis=1)]``, ``fa.take(t,
fa.sum(...).astype(int))``, a scan, a product or a gather as the index, through every route that
makes a gather or a scatter, inside ``fa.fuse`` too, on the cpu backend at its defaults against
NumPy. The planner cuts the index into a temporary before the gather (``compiler/cuts.py``)."""

import index_from_pending_cases as cases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api.array import _wrap
from fusedarrays.ir import graph
from fusedarrays.ir.reductions import reduction_node

pytestmark = pytest.mark.usefixtures("cpu_backend")


def test_the_issue_examples():
    x = np.random.default_rng(3201).random((5, 4))
    got = fa.asarray(np.arange(4.0))[fa.argmax(fa.asarray(x), axis=1)].get()
    np.testing.assert_array_equal(got, np.arange(4.0)[np.argmax(x, axis=1)])
    t = np.arange(10.0) * 3
    got = fa.take(fa.asarray(t), fa.sum(fa.asarray(x), axis=1).astype(int)).get()
    np.testing.assert_array_equal(got, np.take(t, np.sum(x, axis=1).astype(int)))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
def test_every_route_and_index_kind(dtype):
    # (300, 257): argmax over rows of 257 takes the rows schedule, argmin over 300 the cols one
    reached = cases.gathers_match_numpy(3202, (300, 257), dtype)
    assert {"rows", "cols"} <= reached, reached


def test_tiled_consumer():
    assert "tiled" in cases.tiled_consumer_matches_numpy(3203, (300, 257))


def test_split_reduction_index():
    """A sum over 5000 elements per output is split into parts; its result, an index."""
    rng = np.random.default_rng(3204)
    xn, tn = rng.random((4, 5000)), rng.standard_normal(12000)
    x, t = fa.asarray(xn), fa.asarray(tn)
    got = t[fa.sum(x > 0.5, axis=1)] + t[fa.sum(x > 0.5, axis=None)]
    want = tn[np.sum(xn > 0.5, axis=1)] + tn[np.sum(xn > 0.5)]
    np.testing.assert_array_equal(got.get(), want, err_msg="seed=3204")


def test_scatters():
    cases.scatters_match_numpy(3205, (40, 33))


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
