"""Masks compacted on the device (api/compaction.py, compiler/compact.py) against NumPy:
``x[mask]``, ``fa.flatnonzero``, ``fa.nonzero``, ``fa.argwhere`` and ``x[mask] = values``, by
tier; the count is the only value read by the host, so a mask's bytes never travel.

- cpu (the cpu backend at its defaults): sizes around the kernels' rows (4096 mask elements
  each: one row, exactly two, two and one element, many), masks that are pending expressions,
  strided views with negative steps and transposes, masks over leading and trailing axes, every
  true and none.
- sim: a mask of two rows and a bit (the simulator's blocks have 32 threads, so each thread's
  run is 128 elements and the block's scan of the runs' counts takes five steps), a pending mask
  over a view with negative steps, a mask over the leading axes of a 3-D array, and
  ``x[mask] = values`` both ways (scattered, into an array and a view one stride apart, and by
  ranks).
- cuda: sizes of many blocks' rows (a grid-stride over rows past one wave of blocks), pending
  masks over views with negative steps, masks over leading and trailing axes, int32 and int64
  indices, and ``x[mask] += v``.
- ptx (sm_90, no GPU): the count, the indices of both index types, the ranks and the scatter of
  values, a block per row through shared memory (barriers, no atomics: the output's order is
  fixed by the scan), a full row's loads issued before their uses, the index stored as the type
  asked for.
"""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.compiler import CompactPlan, devicelib, render
from fusedarrays.compiler.compact import ROW
from fusedarrays.compiler.targets.cuda.compact import UNROLL
from fusedarrays.runtime.backend import arch_compiler

SIZES = [1, 7, ROW - 1, ROW, 2 * ROW, 2 * ROW + 1, 30011]


def _values(seed: int, shape: tuple, dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 4).astype(dtype)


@pytest.mark.parametrize("size", SIZES)
def test_flat_indices_match_numpy_around_row_sizes(size):
    seed = 400 + size % 97
    host = _values(seed, (size,))
    x = fa.asarray(host)
    for threshold in (0.5, -100.0, 100.0):           # some, every and no element true
        want = np.flatnonzero(host > threshold)
        got = fa.flatnonzero(x > threshold)
        assert got.dtype == np.intp and got.shape == want.shape
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=} {threshold=}")
        np.testing.assert_array_equal(x[x > threshold].get(), host[host > threshold],
                                      err_msg=f"{seed=} {threshold=}")


def test_a_contiguous_mask_takes_three_launches_and_only_its_count_leaves():
    seed = 410
    host = _values(seed, (5 * ROW + 3,)) > 0
    mask = fa.asarray(host)
    fa.reset_stats()
    got = fa.flatnonzero(mask)
    assert fa.stats()["launches"] == 3      # counts, their running sum, the indices
    np.testing.assert_array_equal(got.get(), np.flatnonzero(host), err_msg=f"{seed=}")


VIEWS = {
    "whole": lambda a: a,
    "negative steps": lambda a: a[::-1, ::-2],
    "transposed": lambda a: a.T,
    "rows and a step": lambda a: a[3:250:3, ::-1],
}


@pytest.mark.parametrize("view", list(VIEWS), ids=list(VIEWS))
def test_masks_of_views_read_views(view):
    seed = 420 + len(view)
    host = _values(seed, (300, 400))
    x = fa.asarray(host)
    xv, hv = VIEWS[view](x), VIEWS[view](host)
    mask, hmask = xv > 1.0, hv > 1.0                  # a pending mask over a view
    np.testing.assert_array_equal(xv[mask].get(), hv[hmask], err_msg=f"{seed=}")
    np.testing.assert_array_equal((xv[mask] * 2 - 1).get(), hv[hmask] * 2 - 1,
                                  err_msg=f"{seed=}")
    held = VIEWS[view](fa.asarray(host > 1.0))        # a strided view of a mask in memory
    np.testing.assert_array_equal(xv[held].get(), hv[hmask], err_msg=f"{seed=}")
    for got, want in zip(fa.nonzero(held), np.nonzero(hmask)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")
    np.testing.assert_array_equal(fa.argwhere(xv > 1.0).get(), np.argwhere(hmask),
                                  err_msg=f"{seed=}")


def test_masks_over_some_axes():
    """NumPy's rules: a mask over leading axes selects subarrays; one on later axes keeps the
    axes before it; the selection of a pending expression is gathered through its leaves."""
    seed = 430
    host = _values(seed, (20, 30, 40))
    x = fa.asarray(host)
    lead = host[:, :, 0] > 0
    np.testing.assert_array_equal(x[fa.asarray(lead)].get(), host[lead], err_msg=f"{seed=}")
    last = host[0, 0] > 0
    np.testing.assert_array_equal(x[:, :, fa.asarray(last)].get(), host[:, :, last],
                                  err_msg=f"{seed=}")
    middle = host[0, :, 0] > 0
    np.testing.assert_array_equal(x[:, fa.asarray(middle)].get(), host[:, middle],
                                  err_msg=f"{seed=}")
    np.testing.assert_array_equal((x * 3 + 1)[fa.asarray(lead)].get(), (host * 3 + 1)[lead],
                                  err_msg=f"{seed=}")


@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.float16, np.complex64, np.bool_])
def test_selected_values_keep_their_dtype(dtype):
    seed = 440
    host = _values(seed, (64, 129), dtype)
    x = fa.asarray(host)
    mask = _values(seed + 1, (64, 129)) > 0
    got = x[fa.asarray(mask)]
    assert got.dtype == host[mask].dtype
    np.testing.assert_array_equal(got.get(), host[mask], err_msg=f"{seed=}")


def test_nan_counts_as_nonzero_and_empty_masks():
    seed = 450
    host = _values(seed, (50, 90))
    host[::7, ::3] = np.nan
    host[host > 2] = 0
    x = fa.asarray(host)
    np.testing.assert_array_equal(fa.flatnonzero(x).get(), np.flatnonzero(host),
                                  err_msg=f"{seed=}")
    empty = fa.asarray(np.zeros((0, 5), np.float32))
    assert [a.shape for a in fa.nonzero(empty)] == [(0,), (0,)]
    assert empty[empty > 0].shape == (0,)
    assert fa.argwhere(empty).shape == (0, 2)


WRITE_VIEWS = {"whole": lambda a: a, "negative steps": lambda a: a[::-1, ::-3],
               "transposed": lambda a: a.T}


@pytest.mark.parametrize("view", list(WRITE_VIEWS), ids=list(WRITE_VIEWS))
def test_masked_array_writes_stay_on_the_device(view, monkeypatch):
    """``x[mask] = values`` with an fa mask: each element's rank found on the device picks its
    value (the host path, which copies the mask, is not taken); NumPy's shapes, broadcasting
    and error, into views; ``x[mask] += v`` with a pending mask reading ``x``."""
    from fusedarrays.api import scatter

    def refused(*args):
        raise AssertionError("an fa mask's write took the host path")
    monkeypatch.setattr(scatter, "_Selection", refused)
    seed = 490 + len(view)
    rng = np.random.default_rng(seed)
    host = _values(seed, (120, 90, 3))
    x, want = fa.asarray(host.copy()), host.copy()
    xv, wv = WRITE_VIEWS[view](x), WRITE_VIEWS[view](want)
    lead = rng.random(wv.shape[:2]) < 0.4
    values = _values(seed + 1, (int(lead.sum()), wv.shape[2]))
    xv[fa.asarray(lead)] = values                    # a mask over the leading axes
    wv[lead] = values
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    middle = rng.random(wv.shape[1]) < 0.5
    xv[:, fa.asarray(middle)] = fa.asarray(values[:1, :1])      # broadcast from (1, 1)
    wv[:, middle] = values[:1, :1]
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    xv[xv > 1.0] += 0.25                              # the mask reads x; so do the values
    wv[wv > 1.0] += np.float32(0.25)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    with pytest.raises(ValueError, match="could not be broadcast to indexing result"):
        xv[fa.asarray(lead)] = np.ones(2, np.float32)
    none = fa.asarray(np.zeros(wv.shape, bool))
    xv[none] = np.zeros((0,), np.float32)             # selects nothing: writes nothing
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.bool_, np.float64,
                                   np.complex64])
def test_masked_writes_into_a_contiguous_array_scatter(dtype):
    """Into a contiguous ``x`` with a mask over all of it, one kernel writes the selected
    elements (three launches with the count and its running sum; complex values take the
    ranks' way); values of another dtype are cast as NumPy's assignment casts them, and values
    read from ``x`` itself are read before ``x`` is written, as if copied (NumPy's own loop
    reads, in an overlapping view, elements it has written already)."""
    seed = 500
    rng = np.random.default_rng(seed)
    host = _values(seed, (3 * ROW + 77,), dtype)
    x, want = fa.asarray(host.copy()), host.copy()
    mask = rng.random(host.shape) < 0.4
    count = int(mask.sum())
    values = _values(seed + 1, (count,), dtype)
    fmask, fvalues = fa.asarray(mask), fa.asarray(values)
    fa.reset_stats()
    x[fmask] = fvalues
    want[mask] = values
    assert fa.stats()["launches"] == (3 if dtype != np.complex64 else 4)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    wide = _values(seed + 2, (count,), np.float64)
    x[fmask] = wide                                   # cast to x's dtype
    want[mask] = wide
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    x[fmask] = x[::-1][:count]                        # values from x itself: read first
    want[mask] = want[::-1][:count].copy()            # (NumPy's loop reads what it wrote)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


# views whose C order is one stride (the scatter writes them: three launches), and one that is
# not (each element's rank: four launches)
STRIDE_VIEWS = {"reversed": (lambda a: a[::-1], 3), "every third": (lambda a: a[2::3], 3),
                "a column": (lambda a: a.reshape(-1, 41)[:, 7], 3),
                "reversed in 2-D": (lambda a: a.reshape(-1, 41)[::-1, ::-1], 3),
                "rows reversed in 2-D": (lambda a: a.reshape(-1, 41)[::-1], 4)}


@pytest.mark.parametrize("view", list(STRIDE_VIEWS), ids=list(STRIDE_VIEWS))
def test_masked_writes_into_a_view_one_stride_apart_scatter(view):
    """Into a view whose elements are one stride apart in C order (reversed, every k-th, a
    column, a 2-D view reversed whole) the scatter writes the selected elements, the view's
    offset and stride its parameters; a view that no one stride walks goes by ranks."""
    make, launches = STRIDE_VIEWS[view]
    seed = 520 + len(view)
    rng = np.random.default_rng(seed)
    host = _values(seed, (41 * 307,))
    x, want = fa.asarray(host.copy()), host.copy()
    xv, wv = make(x), make(want)
    mask = rng.random(wv.shape) < 0.4
    values = _values(seed + 1, (int(mask.sum()),))
    fmask, fvalues = fa.asarray(mask), fa.asarray(values)
    fa.reset_stats()
    xv[fmask] = fvalues
    wv[mask] = values
    assert fa.stats()["launches"] == launches
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    xv[xv > 1.0] += 0.25                              # the mask reads x; so do the values
    wv[wv > 1.0] += np.float32(0.25)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


def test_a_mask_beside_an_index_array_written_in_place():
    """``x[mask, idx] += v``: the read finds the mask's true rows on the device, the write (an
    index array beside the mask: the host's inverse index) reads those rows back to see the
    selection of ``x`` in place, and each element gets ``+ v`` once, as NumPy's buffered
    ``+=`` gives it, repeated columns included."""
    seed = 510
    rng = np.random.default_rng(seed)
    host = _values(seed, (300, 40))
    x, want = fa.asarray(host.copy()), host.copy()
    rows = rng.random(300) < 0.5
    cols = rng.integers(-40, 40, int(rows.sum()))
    x[fa.asarray(rows), cols] += 1.5
    want[rows, cols] += np.float32(1.5)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


# sim

@pytest.mark.tiers("sim")
def test_rows_in_order_across_the_block():
    seed = 460
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(2 * ROW + 37).astype(np.float32)
    x = fa.asarray(host)
    np.testing.assert_array_equal(fa.flatnonzero(x > 0.2).get(), np.flatnonzero(host > 0.2),
                                  err_msg=f"{seed=}")
    np.testing.assert_array_equal(x[x < -1.0].get(), host[host < -1.0], err_msg=f"{seed=}")


@pytest.mark.tiers("sim")
def test_views_and_leading_axes():
    seed = 461
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((6, 9, 4)).astype(np.float32)
    x = fa.asarray(host)
    view, hview = x[::-1, ::-2], host[::-1, ::-2]
    np.testing.assert_array_equal(view[view > 0].get(), hview[hview > 0], err_msg=f"{seed=}")
    lead = host[:, :, 0] > 0
    np.testing.assert_array_equal(x[fa.asarray(lead)].get(), host[lead], err_msg=f"{seed=}")
    for got, want in zip(fa.nonzero(view > 0.5), np.nonzero(hview > 0.5)):
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")


@pytest.mark.tiers("sim")
def test_masked_writes():
    """Into a contiguous array and into a view whose C order is one stride (a negative one)
    the selected elements are scattered in one kernel (the count, its running sum, the
    scatter: three launches); into a view no one stride walks each element's rank picks its
    value (four)."""
    seed = 462
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(2 * ROW + 600).astype(np.float32)
    x, want = fa.asarray(host.copy()), host.copy()
    for view, wview, launches in ((x, want, 3), (x[::-2], want[::-2], 3),
                                  (x.reshape(8, -1)[::-1], want.reshape(8, -1)[::-1], 4)):
        mask = rng.random(wview.shape) < 0.3
        values = rng.standard_normal(int(mask.sum())).astype(np.float32)
        fa.reset_stats()
        view[fa.asarray(mask)] = values
        assert fa.stats()["launches"] == launches
        wview[mask] = values
        np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


# cuda

@pytest.mark.parametrize("size", [1, ROW - 1, ROW + 1, (1 << 24) + 5])
@pytest.mark.tiers("cuda")
def test_flat_indices_and_selections(size):
    seed = 470 + size % 89
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(size).astype(np.float32)
    x = fa.asarray(host)
    for threshold in (0.3, -100.0, 100.0):
        want = np.flatnonzero(host > threshold)
        got = fa.flatnonzero(x > threshold)
        assert got.dtype == np.intp
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=} {threshold=}")
        np.testing.assert_array_equal(x[x > threshold].get(), host[host > threshold],
                                      err_msg=f"{seed=} {threshold=}")


@pytest.mark.tiers("cuda")
def test_views_axes_and_writes():
    seed = 480
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((3000, 700)).astype(np.float32)
    x = fa.asarray(host)
    for view, hview in ((x, host), (x[::-1, ::-3], host[::-1, ::-3]), (x.T, host.T)):
        mask, hmask = view > 0.5, hview > 0.5
        np.testing.assert_array_equal(view[mask].get(), hview[hmask], err_msg=f"{seed=}")
        for got, want in zip(fa.nonzero(mask), np.nonzero(hmask)):
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")
        np.testing.assert_array_equal(fa.argwhere(mask).get(), np.argwhere(hmask),
                                      err_msg=f"{seed=}")
    rows = host[:, 0] > 0
    np.testing.assert_array_equal(x[fa.asarray(rows)].get(), host[rows], err_msg=f"{seed=}")
    cols = host[0] > 0
    np.testing.assert_array_equal((x[:, fa.asarray(cols)] * 2).get(), host[:, cols] * 2,
                                  err_msg=f"{seed=}")
    y, want = fa.asarray(host.copy()), host.copy()
    y[y > 1.0] += 0.5
    want[want > 1.0] += 0.5
    np.testing.assert_array_equal(y.get(), want, err_msg=f"{seed=}")


@pytest.mark.tiers("cuda")
def test_masked_array_writes():
    seed = 481
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((2000, 900)).astype(np.float32)
    x, want = fa.asarray(host.copy()), host.copy()
    # scattered: the whole array, a view reversed whole, every third element of its flat
    # view, a column (one stride apart); by ranks: the others
    for view, wview in ((x, want), (x[::-1, ::-1], want[::-1, ::-1]),
                        (x.reshape(-1)[1::3], want.reshape(-1)[1::3]), (x[:, 5], want[:, 5]),
                        (x[::-1, ::-2], want[::-1, ::-2]), (x.T, want.T)):
        mask = rng.random(wview.shape) < 0.3
        values = rng.standard_normal(int(mask.sum())).astype(np.float32)
        view[fa.asarray(mask)] = values
        wview[mask] = values
        np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    rows = rng.random(2000) < 0.5
    x[fa.asarray(rows)] = fa.asarray(host[:1])       # one row broadcast over the selection
    want[rows] = host[:1]
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


# ptx

_ATOMIC = re.compile(r"^\s*(@%p\d+\s+)?(atom|red)\.(\w+)", re.M)


@pytest.mark.parametrize("mode,code", [("count", "i64"), ("index", "i32"), ("index", "i64"),
                                       ("rank", "i32"), ("scatter", "f32"), ("scatter", "f16"),
                                       ("scatter", "f64"), ("scatter", "b1")])
@pytest.mark.tiers("ptx")
def test_compaction_kernels_compile(mode, code):
    plan = CompactPlan(mode, code)
    ptx, entry = arch_compiler().ptx(render(plan, "cuda"), plan.name,
                                     plan.param_types(), "sm_90", devicelib.helpers())
    assert plan.name in entry
    assert "bar.sync" in ptx and ".shared" in ptx
    assert not _ATOMIC.search(ptx)
    body = ptx[ptx.index(".entry"):]
    loads = [ln for ln in body.splitlines() if re.search(r"ld\.global(\.nc)?\.u8", ln)]
    assert len(loads) >= UNROLL + 1                 # a full row's, then the last row's
    # the full row's loads follow one another, no use of a loaded byte between them
    first = body.index(loads[0])
    window = body[first:body.index(loads[UNROLL - 1]) + len(loads[UNROLL - 1])]
    assert window.count("ld.global") == UNROLL and "st.shared" not in window
    assert re.search(r"ld\.global(\.nc)?\.u8", ptx)               # the mask, a byte at a time
    stored = {"i32": "(s|u|b)32", "i64": "(s|u|b)64", "f32": "(f|b)32", "f16": "(u|b)16",
              "f64": "(f|b)64", "b1": "(u|s|b)8"}["i64" if mode == "count" else code]
    assert re.search(rf"st\.global\.{stored}", ptx), ptx[-2000:]


@pytest.mark.tiers("ptx")
def test_plans_are_keyed_by_kernel():
    plans = [CompactPlan(m, c) for m, c in (("count", "i64"), ("index", "i32"),
                                            ("index", "i64"), ("rank", "i32"),
                                            ("scatter", "f32"), ("scatter", "i32"))]
    assert len({p.key for p in plans}) == 6 and len({p.name for p in plans}) == 6
    with pytest.raises(ValueError, match="no compaction kernel"):
        CompactPlan("index", "f32")
    with pytest.raises(ValueError, match="no compaction kernel"):
        CompactPlan("scatter", "c64")
