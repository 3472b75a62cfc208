"""Gathers (fa.take, x[idx]) against NumPy on every tier.

- cpu at its defaults: negative and repeated indices, NumPy and fa index arrays, views with
  negative steps as the gathered array, every axis, shapes reaching every schedule, a gather
  fused into its consumer, out-of-range indices raising IndexError on the host, index writes.
- sim (the CUDA kernel source): flat with 128-bit accesses of the other operands and a tail,
  rows, nd; negative and repeated indices.
- cuda: a table lookup fused with its consumer (one launch), embedding rows, every axis,
  negative and repeated indices; index writes and x[mask] = v into views at sizes that reach
  the vector walks.
- ptx (sm_90, no GPU): a mask's selection fused with a 128-bit read of its weights, a gather
  through several index arrays, and a gather of a pending expression holding a gather (a gather
  whose index is a gather).
"""

import re

import numpy as np
import pytest

import fusedarrays as fa


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_take_matches_numpy(dtype):
    seed = 170
    rng = np.random.default_rng(seed)
    table = (rng.standard_normal((40, 150)) * 20).astype(dtype)
    x = fa.asarray(table)
    reached = set()
    for view, hview in ((x, table), (x[::-2, ::3], table[::-2, ::3]), (x.T, table.T)):
        for axis in (None, 0, 1, -1):
            extent = hview.size if axis is None else hview.shape[axis]
            for shape in ((1003,), (7, 3)):
                idx = rng.integers(-extent, extent, shape)
                got = fa.take(view, idx, axis=axis)
                reached.add(fa.explain(got).plan.schedule)
                np.testing.assert_array_equal(got.get(), np.take(hview, idx, axis=axis),
                                              err_msg=f"{seed=} {axis=} {shape=}")
    assert {"flat", "rows", "nd"} <= reached, reached


def test_getitem_gathers_fused():
    seed = 171
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(5000).astype(np.float32)
    idx = rng.integers(0, 5000, 2000).astype(np.int32)
    idx[:10] = 17                                   # repeated indices
    w = rng.standard_normal(2000).astype(np.float32)
    y = fa.asarray(table)[fa.asarray(idx)] * fa.asarray(w)
    plan = fa.explain(y).plan
    assert [o.output for o in plan.operands] == [False, False, False, True]
    fa.reset_stats()
    np.testing.assert_array_equal(y.get(), table[idx] * w, err_msg=f"{seed=}")
    assert fa.stats()["launches"] == 1
    emb = rng.standard_normal((300, 136)).astype(np.float32)
    rows = rng.integers(-300, 300, (4, 5))
    got = fa.asarray(emb)[rows.tolist()] + 1        # a list is an index array, as in NumPy
    np.testing.assert_array_equal(got.get(), emb[rows] + 1, err_msg=f"{seed=}")
    perm = rng.permutation(5000)
    x = fa.asarray(table.copy())
    x[...] = x[perm]                                # gathers from the array written
    np.testing.assert_array_equal(x.get(), table[perm], err_msg=f"{seed=}")
    np.testing.assert_array_equal(fa.asarray(emb)[rows][::-1, 2].T.get(), emb[rows][::-1, 2].T)


def test_out_of_range_and_unsupported():
    x = fa.asarray(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[np.array([0, 3])]
    # an index fusedarrays holds is checked on the device: the error comes at the next .get()
    taken = fa.take(x, fa.asarray(np.array([-5])), axis=1)
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        taken.get()
    with pytest.raises(IndexError, match=r"integer \(or boolean\) type"):
        x[np.array([0.0])]
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        fa.take(x, [0], axis=2)

    @fa.fuse
    def gathered(a):        # inside fa.fuse too (tests/topics/test_fuse_gather.py)
        return a[np.array([1, 0])]

    np.testing.assert_array_equal(gathered(fa.asarray(np.arange(4.0))).get(), [1.0, 0.0])


def test_take_along_axis_matches_numpy():
    seed = 172
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((6, 140)).astype(np.float32)
    x = fa.asarray(host)
    order = np.argsort(host, axis=1)
    np.testing.assert_array_equal(fa.take_along_axis(x, order, axis=1).get(),
                                  np.take_along_axis(host, order, 1), err_msg=f"{seed=}")
    for view, hview in ((x[:, ::-1], host[:, ::-1]), (x.T, host.T)):
        for idx_shape, axis in (((3, hview.shape[1]), 0), ((hview.shape[0], 1), 1),
                                ((1, 5), -1)):
            extent = hview.shape[axis]
            idx = rng.integers(-extent, extent, idx_shape)
            got = fa.take_along_axis(view, fa.asarray(idx), axis=axis) * 2
            np.testing.assert_array_equal(got.get(), np.take_along_axis(hview, idx, axis) * 2,
                                          err_msg=f"{seed=} {idx_shape=} {axis=}")
    with pytest.raises(ValueError, match="dimension"):
        fa.take_along_axis(x, np.array([0]), axis=1)
    with pytest.raises(IndexError, match="out of bounds"):
        fa.take_along_axis(x, np.array([[140]]), axis=1)


def test_one_index_array_among_slices():
    seed = 173
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((4, 5, 136))
    x = fa.asarray(host)
    i = rng.integers(-4, 4, (2, 3))      # valid on axes 0 and 1
    j = rng.integers(-136, 136, 7)
    for key in ((slice(None), i), (slice(3, 0, -1), i, slice(None, None, 2)), (Ellipsis, j),
                (None, slice(None), i), (i.tolist(), Ellipsis), (Ellipsis, i, slice(None))):
        got, want = x[key], host[key]
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=} {key=}")


@pytest.mark.parametrize("shape", [(1003,), (6, 136), (3, 5, 8)], ids=str)
def test_index_writes_match_numpy(shape):
    """x[idx] = v, x[:, idx] = v and x[idx] += v with negative and repeated indices (the last
    value wins, as in NumPy), scalar and array values, views as targets."""
    seed = 174
    rng = np.random.default_rng(seed + len(shape))
    host = rng.standard_normal(shape).astype(np.float32)
    x, expect = fa.asarray(host.copy()), host.copy()
    rows = rng.integers(-shape[0], shape[0], 7)
    rows[:3] = rows[0]                                     # repeated
    x[rows] = 2.5
    expect[rows] = 2.5
    values = rng.standard_normal((7,) + shape[1:]).astype(np.float32)
    x[::-1][rows] = values                                 # a view as the target
    expect[::-1][rows] = values
    x[rows] += 1.0
    expect[rows] += 1.0
    if len(shape) > 1:
        cols = rng.integers(-shape[1], shape[1], (2, 3))
        vals = rng.standard_normal(shape[:1] + (2, 3) + shape[2:]).astype(np.float32)
        x[:, cols] = vals
        expect[:, cols] = vals
        x[..., [0, -1]] = fa.asarray(np.float32([7, 8]))
        expect[..., [0, -1]] = np.float32([7, 8])
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")
    with pytest.raises(IndexError, match="out of bounds"):
        x[np.array([shape[0]])] = 1.0


@pytest.mark.tiers("sim")
def test_gathers_in_every_walk():
    seed = 180
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(700).astype(np.float32)
    idx = rng.integers(-700, 700, 203).astype(np.int32)
    w = rng.standard_normal(203).astype(np.float32)
    flat = fa.asarray(table)[fa.asarray(idx)] * fa.asarray(w)
    assert fa.explain(flat).vector_width == 4
    np.testing.assert_array_equal(flat.get(), table[idx] * w, err_msg=f"{seed=}")
    emb = rng.standard_normal((50, 136)).astype(np.float32)
    rows = rng.integers(-50, 50, 3)
    got = fa.asarray(emb)[::-1][rows] + 1
    assert fa.explain(got).plan.schedule == "rows"
    np.testing.assert_array_equal(got.get(), emb[::-1][rows] + 1, err_msg=f"{seed=}")
    cols = np.array([[3, -1], [3, 0]])
    nd = fa.take(fa.asarray(emb[:4, :6]), cols, axis=1) * 2
    assert fa.explain(nd).plan.schedule == "nd"
    np.testing.assert_array_equal(nd.get(), emb[:4, :6].take(cols, axis=1) * 2)


@pytest.mark.tiers("cuda")
def test_table_lookup_fused():
    seed = 190
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(1 << 20).astype(np.float32)
    idx = rng.integers(-(1 << 20), 1 << 20, (1 << 22) + 3).astype(np.int32)
    w = rng.standard_normal(idx.size).astype(np.float32)
    g = fa.asarray(table)[fa.asarray(idx)]
    fa.reset_stats()
    got = (g * fa.asarray(w)).get()
    assert fa.stats()["launches"] == 1
    np.testing.assert_array_equal(got, table[idx] * w, err_msg=f"{seed=}")


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.tiers("cuda")
def test_take_every_axis(axis):
    seed = 191
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((300, 400)).astype(np.float16)
    for view, hview in ((fa.asarray(host), host), (fa.asarray(host)[::-1, 1::3], host[::-1, 1::3]),
                        (fa.asarray(host).T, host.T)):
        extent = hview.size if axis is None else hview.shape[axis]
        idx = rng.integers(-extent, extent, (37, 5))
        np.testing.assert_array_equal(fa.take(view, idx, axis=axis).get(),
                                      np.take(hview, idx, axis=axis), err_msg=f"{seed=}")


@pytest.mark.tiers("cuda")
def test_take_along_axis():
    seed = 192
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((512, 300)).astype(np.float32)
    order = np.argsort(host, axis=0)[::-1].copy()
    got = fa.take_along_axis(fa.asarray(host).T, order.T, axis=1) + 1
    np.testing.assert_array_equal(got.get(), np.take_along_axis(host.T, order.T, 1) + 1,
                                  err_msg=f"{seed=}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
@pytest.mark.tiers("cuda")
def test_mask_writes(dtype):
    seed = 193
    rng = np.random.default_rng(seed)
    host = (rng.standard_normal((300, 400)) * 20).astype(dtype)
    x, expect = fa.asarray(host.copy()), host.copy()
    x[x > 0] = 5
    expect[expect > 0] = 5
    view, eview = x[::-1, 1::2], expect[::-1, 1::2]
    mask = rng.random(eview.shape) < 0.5
    view[mask] = -3
    eview[mask] = -3
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")


@pytest.mark.tiers("cuda")
def test_index_writes():
    seed = 194
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((1000, 260)).astype(np.float32)
    x, expect = fa.asarray(host.copy()), host.copy()
    rows = rng.integers(-1000, 1000, 300)
    rows[:5] = rows[0]                               # repeated: the last value wins
    values = rng.standard_normal((300, 260)).astype(np.float32)
    x[rows] = values
    expect[rows] = values
    cols = rng.integers(-260, 260, 17)
    x[::-1][:, cols] += 1.0
    expect[::-1][:, cols] += 1.0
    np.testing.assert_array_equal(x.get(), expect, err_msg=f"{seed=}")


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

@pytest.mark.tiers("ptx")
def test_mask_selection_with_vector_weights():
    seed = 250
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((64, 136)).astype(np.float32)
    mask = rng.random(table.shape) < 0.3
    w = fa.asarray(rng.standard_normal(int(mask.sum())).astype(np.float32))
    ex = fa.explain(fa.asarray(table)[mask] * w, arch="sm_90")
    assert ex.vector_width == 4
    assert re.search(r"ld\.global\.v4\.(f32|u32|b32)", ex.ptx)     # w and the int32 offsets
    assert re.search(r"ld\.global(\.nc)?\.f32", ex.ptx)             # the gathered element


@pytest.mark.tiers("ptx")
def test_several_arrays_and_a_gather_of_a_gather():
    seed = 251
    rng = np.random.default_rng(seed)
    x = fa.asarray(rng.standard_normal((30, 8, 17)).astype(np.float32))
    i, k = rng.integers(-30, 30, (4, 1)), rng.integers(-17, 17, 5)
    assert fa.explain(x[i, ::-1, k] + 1, arch="sm_90").ptx
    inner = x[:, 0, 0][rng.integers(0, 30, 200)] * 2            # pending: gathered through
    outer = fa.take(inner, rng.integers(-200, 200, 50))
    ex = fa.explain(outer, arch="sm_90")
    assert [ins.kind for ins in ex.plan.body].count("gather") == 2
    assert ex.ptx
