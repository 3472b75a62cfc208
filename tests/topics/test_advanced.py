"""NumPy's advanced indexing against NumPy (tests/indexcases.py's keys) on every tier: several
index arrays and masks read and written through views, ``x[idx] += v`` as one kernel,
``ufunc.at``, nonzero and count_nonzero.

- cpu at its defaults: integers beside arrays, boolean masks read (compacted through the host)
  and written, ``x[idx] op= v``, through views with negative steps and transposes, small shapes
  (``nd``) and large ones (``rows``, ``flat``); errors as NumPy's.
- sim (the CUDA kernel source): small shapes (the simulator runs ~80 ms per 1024 elements) but
  each walk (a gather through host-made offsets), and permutations equal to the cpu backend's.
- cuda: ``fa.add.at`` bit for bit, and a permutation equal to the cpu backend's for one seed.
"""


import indexcases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SHAPES = [(4, 5, 6), (6, 8, 300)]


def _outcome(host, key):
    try:
        return host[key] * 2 + 1
    except IndexError as e:
        return e


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reads_match_numpy(shape):
    seed = 190 + shape[-1]
    rng = np.random.default_rng(seed)
    host = rng.standard_normal(shape).astype(np.float32)
    x = fa.asarray(host)
    reached = set()
    for v, (vname, view) in enumerate(indexcases.VIEWS.items()):
        hv, xv = view(host), view(x)
        for k, (kname, key) in enumerate(indexcases.keys(rng, hv.shape).items()):
            # NumPy's and fa index arrays alternate, so each key takes both across the views
            on_fa = (k + v) % 2 == 1
            xkey = indexcases.as_fa_key(key) if on_fa else key
            want = _outcome(hv, key)
            if isinstance(want, IndexError):     # a mask of another view's shape
                with pytest.raises(IndexError):
                    xv[xkey]
                continue
            got = xv[xkey] * 2 + 1
            if got.size:
                reached.add(fa.explain(got).plan.schedule)
            msg = f"{seed=} {vname} {kname} {on_fa=}"
            assert got.shape == want.shape, msg
            np.testing.assert_array_equal(got.get(), want, err_msg=msg)
        mask = indexcases.full_mask(rng, hv.shape)
        got = xv[fa.asarray(mask)] - xv[mask][::-1]
        np.testing.assert_array_equal(got.get(), hv[mask] - hv[mask][::-1],
                                      err_msg=f"{seed=} {vname} full mask")
        reached.add(fa.explain(got).plan.schedule)
    assert ({"rows", "flat"} if shape[-1] >= 128 else {"nd", "flat"}) <= reached, reached


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_writes_match_numpy(shape):
    """``x[key] = scalar``, ``= array`` (NumPy's broadcast to the selection's shape), ``+=``
    and ``*=`` with repeated indices (NumPy's buffered result: the last write wins): every key
    through every view, two of the four forms each time."""
    seed = 200 + shape[-1]
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(shape).astype(np.float32)
    for v, (vname, view) in enumerate(indexcases.VIEWS.items()):
        host, x = base.copy(), fa.asarray(base)
        hv, xv = view(host), view(x)
        for k, (kname, key) in enumerate(indexcases.keys(rng, hv.shape).items()):
            try:
                sel = hv[key].shape
            except IndexError:
                continue
            values = rng.standard_normal(sel).astype(np.float32)
            # two of the four writes, rotating: each key takes all four across the three views
            # and each view all four across the keys
            first = (k + 2 * v) % 4
            for form in (first, (first + 1) % 4):
                if form == 0:
                    hv[key] = 2.5
                    xv[key] = 2.5
                elif form == 1:
                    hv[key] = values
                    xv[indexcases.as_fa_key(key)] = values
                elif form == 2:
                    hv[key] += 1.5
                    xv[key] += 1.5
                else:
                    hv[key] *= values
                    xv[key] *= fa.asarray(values)
            np.testing.assert_array_equal(x.get(), host,
                                          err_msg=f"{seed=} {vname} {kname} {first=}")
        mask = rng.random(hv.shape) < 0.3
        hv[mask] -= hv[mask] * 0.5
        xv[fa.asarray(mask)] -= xv[mask] * 0.5
        np.testing.assert_array_equal(x.get(), host, err_msg=f"{seed=} {vname} mask")


def test_augmented_writes_are_one_kernel():
    """``x[idx] += v`` and ``x[np_mask] += v`` reach the write as one expression: one launch
    that reads ``x`` once, and the selection, still held, then reads the written values. With an
    fa mask both halves stay on the device: the selection's indices are found there (three
    launches: counts, their running sum, the indices); the write counts the mask again (two),
    computes the values (they read ``x``) and scatters them into ``x`` (one each)."""
    seed = 210
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((1000, 136)).astype(np.float32)
    x, want = fa.asarray(host.copy()), host.copy()
    rows = rng.integers(-1000, 1000, 300)
    rows[:20] = 5                                    # repeated: each gets x + v once
    mask = rng.random(host.shape) < 0.5
    for key, value in ((rows, 0.25), (mask, 3.0)):
        fa.reset_stats()
        x[key] += value
        want[key] += value
        assert fa.stats()["launches"] == 1, key
    flat, wflat = x.reshape(-1), want.reshape(-1)    # a 1-D view, and a 2-D mask
    for view, wview, fmask in ((flat, wflat, fa.asarray(mask.reshape(-1))),
                               (x, want, fa.asarray(mask))):
        fa.reset_stats()
        selection = view[fmask]                      # x[mask] += v, step by step
        assert fa.stats()["launches"] == 3 and selection.pending
        fa.reset_stats()
        selection += -1.0
        view[fmask] = selection
        wview[fmask.get()] += -1.0
        assert fa.stats()["launches"] == 4
        np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    sel = x[rows]
    sel += 1.0
    x[rows] = sel                                    # re-read from x after the write
    want[rows] += 1.0
    np.testing.assert_array_equal(sel.get(), want[rows], err_msg=f"{seed=}")
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_ufunc_at_matches_numpy(dtype):
    """Unbuffered: every occurrence applies, in NumPy's order (float sums bit for bit), more
    repeats than one kernel's passes, views as targets, index tuples and masks."""
    seed = 220
    rng = np.random.default_rng(seed)
    host = (rng.standard_normal((60, 136)) * 10).astype(dtype)
    idx = rng.integers(-60, 60, 3000)
    idx[:40] = 7                                     # 40+ occurrences: several kernels
    values = (rng.standard_normal((3000, 136)) * 3).astype(dtype)
    x, want = fa.asarray(host.copy()), host.copy()
    fa.add.at(x, idx, values)
    np.add.at(want, idx, values)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    np.add.at(x[::-1, ::2], (idx[:50] % 60, 3), fa.asarray(values[:50, 0]))  # NumPy's spelling
    np.add.at(want[::-1, ::2], (idx[:50] % 60, 3), values[:50, 0])
    fa.maximum.at(x.T, (slice(None), [0, 0, 1]), values[:3, :].T)
    np.maximum.at(want.T, (slice(None), [0, 0, 1]), values[:3, :].T)
    mask = rng.random(host.shape) < 0.2
    fa.multiply.at(x, mask, 2)
    np.multiply.at(want, mask, 2)
    fa.negative.at(x, [0, 0, 5])
    np.negative.at(want, [0, 0, 5])
    fa.subtract.at(x, slice(1, 3), 1)
    np.subtract.at(want, slice(1, 3), 1)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


def test_ufunc_at_errors():
    x = fa.asarray(np.arange(5))
    with pytest.raises(fa.UnsupportedOperationError, match="add.at: Cannot cast .* from float64 to "
                                                           "int64 with casting rule"):
        fa.add.at(x, [0], 1.5)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        fa.add.at(x, [5], 1)
    with pytest.raises(fa.UnsupportedOperationError, match="must be a fa.ndarray"):
        fa.add.at(np.arange(3), [0], fa.asarray(np.ones(1, np.int64)))
    with pytest.raises(TypeError, match="one value operand"):
        fa.add.at(x, [0])


def test_index_errors_name_the_problem():
    h = np.arange(60.0).reshape(3, 4, 5)
    x = fa.asarray(h)
    cases = [
        ((np.array([0, 1]), np.array([0, 1, 2])), "shape mismatch: indexing arrays could not "
                                                  r"be broadcast together with shapes \(2,\) "
                                                  r"\(3,\)"),
        ((slice(None), [0, 1], [0, 5]), "index 5 is out of bounds for axis 2 with size 5"),
        ((0, [-5]), "index -5 is out of bounds for axis 1 with size 4"),
        # the axis of x, as NumPy names it, not of the view with the new axes
        ((None, [0, 3]), "index 3 is out of bounds for axis 0 with size 3"),
        ((slice(None), np.True_, [0, 5]), "index 5 is out of bounds for axis 1 with size 4"),
        ((np.ones((3, 5), bool),), "boolean index did not match indexed array along axis 1; "
                                   "size of axis is 4 but size of corresponding boolean axis "
                                   "is 5"),
        (([0.5],), r"integer \(or boolean\) type; got float64"),
        (([0], [0], [0], [0]), "too many indices"),
        (("a", [0]), "only integers, slices"),
    ]
    for key, message in cases:
        with pytest.raises(IndexError):
            h[key]
        with pytest.raises(IndexError, match=message):
            x[key]
        with pytest.raises(IndexError, match=message):
            x[key] = 1.0
    with pytest.raises(IndexError, match="shape mismatch"):   # a false 0-d mask selects nothing
        x[np.False_, [0, 1]]
    with pytest.raises(ValueError, match="could not be broadcast to indexing result"):
        x[[0, 1]] = np.ones(3)


def test_inside_fuse_a_scalar_into_a_mask_only():
    """``x[mask] = scalar`` is a where (traced like any write); the forms that read index
    values on the host say so."""
    @fa.fuse
    def masked(x, m):
        x[m] = 0.0

    @fa.fuse
    def indexed(x):
        x[np.array([0, 1])] = 0.0

    @fa.fuse
    def selected(x, m):
        return x[m]

    host = np.arange(6.0)
    x, m = fa.asarray(host.copy()), host % 2 == 0
    masked(x, fa.asarray(m))
    host[m] = 0.0
    np.testing.assert_array_equal(x.get(), host)
    with pytest.raises(fa.UnsupportedOperationError, match="x\\[mask\\] = scalar"):
        indexed(x)
    with pytest.raises(fa.UnsupportedOperationError, match="inside fa.fuse"):
        selected(x, fa.asarray(m))


def test_empty_mask_axes_stand_for_any_axis():
    """NumPy lets a mask axis of length 0 index an axis of any length (it selects nothing):
    reads give an empty result, writes change nothing."""
    seed = 215
    rng = np.random.default_rng(seed)
    for shape, mask_shape in [((2, 1), (2, 0)), ((3,), (0,)), ((1, 2), (0, 2)), ((0, 1), (0, 0))]:
        host = rng.standard_normal(shape)
        mask = np.zeros(mask_shape, bool)
        for key in (mask, fa.asarray(mask)):
            x = fa.asarray(host)
            assert x[key].shape == host[mask].shape == (0,), (seed, shape, mask_shape)
            x[key] = 2.0
            x[key] = np.ones(0)
            np.testing.assert_array_equal(x.get(), host, err_msg=f"{seed=} {shape} {mask_shape}")
    with pytest.raises(IndexError, match="boolean index did not match"):
        fa.asarray(np.ones((2, 1)))[np.zeros((2, 3), bool)]


# sim

@pytest.mark.tiers("sim")
def test_reads_and_writes_of_chosen_keys_match_numpy():
    seed = 240
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((4, 5, 6)).astype(np.float32)
    chosen = ("two arrays", "int, slice, array", "arrays apart", "None between", "lists",
              "mask over leading axes", "mask on the last axis")
    for vname, view in indexcases.VIEWS.items():
        host, x = base.copy(), fa.asarray(base)
        hv, xv = view(host), view(x)
        keys = indexcases.keys(rng, hv.shape)
        for kname in chosen:
            key, msg = keys[kname], f"{seed=} {vname} {kname}"
            np.testing.assert_array_equal((xv[key] * 2).get(), hv[key] * 2, err_msg=msg)
            values = rng.standard_normal(hv[key].shape).astype(np.float32)
            hv[key] = values
            xv[indexcases.as_fa_key(key)] = values
            hv[key] += 1.5
            xv[key] += 1.5
            np.testing.assert_array_equal(x.get(), host, err_msg=msg)


@pytest.mark.tiers("sim")
def test_gathered_walks_and_one_kernel_writes():
    seed = 241
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((40, 136)).astype(np.float32)
    x, want = fa.asarray(table.copy()), table.copy()
    mask = rng.random(table.shape) < 0.05
    w = rng.standard_normal(int(mask.sum())).astype(np.float32)
    flat = x[mask] * fa.asarray(w)                       # 1-D: the vector walk
    assert fa.explain(flat).vector_width == 4
    np.testing.assert_array_equal(flat.get(), table[mask] * w, err_msg=f"{seed=}")
    i, j = rng.integers(-40, 40, 3), rng.integers(-136, 136, 3)
    rows = x[i[:, None], ::-1][:, 0] + 1                 # rows of 136: the 2-D walk
    assert fa.explain(rows).plan.schedule == "rows"
    np.testing.assert_array_equal(rows.get(), table[i[:, None], ::-1][:, 0] + 1)
    k = rng.integers(-17, 17, 1)
    nd = x.reshape(40, 8, 17)[i[:, None], :, k] * 2      # arrays apart: their axes first
    assert fa.explain(nd).plan.schedule == "nd"
    np.testing.assert_array_equal(nd.get(), table.reshape(40, 8, 17)[i[:, None], :, k] * 2,
                                  err_msg=f"{seed=}")
    np.testing.assert_array_equal(x[i[:, None], j].get(), table[i[:, None], j])
    idx = np.array([3, 3, -1, 0])
    fa.reset_stats()
    x[idx] += 2.0
    want[idx] += 2.0
    assert fa.stats()["launches"] == 1
    fa.add.at(x, idx, fa.asarray(np.float32([1, 2, 3, 4])[:, None]))
    np.add.at(want, idx, np.float32([1, 2, 3, 4])[:, None])
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


@pytest.mark.tiers("sim")
def test_nonzero_count_and_permutation():
    seed = 242
    rng = np.random.default_rng(seed)
    host = np.where(rng.random((6, 140)) < 0.5, 0, 1.5).astype(np.float32)
    with config.override(BACKEND="cpu"):   # the reference backend for the simulator's order
        cpu_perm = fa.random.default_rng(seed).permutation(300).get()
    x = fa.asarray(host)
    for got, want in zip(fa.nonzero(x[::-1]), np.nonzero(host[::-1])):
        np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")
    np.testing.assert_array_equal(fa.count_nonzero(x, axis=1).get(),
                                  np.count_nonzero(host, axis=1), err_msg=f"{seed=}")
    assert int(fa.count_nonzero(x.T)) == np.count_nonzero(host)
    perm = fa.random.default_rng(seed).permutation(300).get()
    np.testing.assert_array_equal(perm, cpu_perm, err_msg=f"{seed=}")


# cuda

@pytest.mark.parametrize("shape", [(4, 5, 6), (6, 8, 300)], ids=str)
@pytest.mark.tiers("cuda")
def test_reads_and_writes_match_numpy(shape):
    seed = 260 + shape[-1]
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(shape).astype(np.float32)
    for vname, view in indexcases.VIEWS.items():
        host, x = base.copy(), fa.asarray(base)
        hv, xv = view(host), view(x)
        for kname, key in indexcases.keys(rng, hv.shape).items():
            try:
                want = hv[key] * 2 + 1
            except IndexError:
                continue
            msg = f"{seed=} {vname} {kname}"
            np.testing.assert_array_equal((xv[key] * 2 + 1).get(), want, err_msg=msg)
            values = rng.standard_normal(want.shape).astype(np.float32)
            hv[key] = values
            xv[indexcases.as_fa_key(key)] = values
            hv[key] += 1.5
            xv[key] += 1.5
            np.testing.assert_array_equal(x.get(), host, err_msg=msg)


@pytest.mark.tiers("cuda")
def test_one_launch_writes_add_at_and_nonzero():
    seed = 270
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((1000, 260)).astype(np.float32)
    x, want = fa.asarray(host.copy()), host.copy()
    mask = rng.random(host.shape) < 0.5
    fa.reset_stats()
    x[mask] += 0.5
    want[mask] += 0.5
    assert fa.stats()["launches"] == 1
    idx = rng.integers(-1000, 1000, 5000)
    idx[:40] = 3
    values = rng.standard_normal((5000, 260)).astype(np.float32)
    fa.add.at(x, idx, values)
    np.add.at(want, idx, values)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")
    np.testing.assert_array_equal(x[x > 1].get(), want[want > 1], err_msg=f"{seed=}")
    for got, ref in zip(fa.nonzero(x > 1), np.nonzero(want > 1)):
        np.testing.assert_array_equal(got.get(), ref, err_msg=f"{seed=}")
    np.testing.assert_array_equal(fa.count_nonzero(x > 1, axis=0).get(),
                                  np.count_nonzero(want > 1, axis=0))
    with config.override(BACKEND="cpu"):   # the reference backend for the permutation
        cpu_perm = fa.random.default_rng(seed).permutation(100_000).get()
    np.testing.assert_array_equal(fa.random.default_rng(seed).permutation(100_000).get(),
                                  cpu_perm, err_msg=f"{seed=}")
