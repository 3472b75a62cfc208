"""In-place writes on the cpu backend: pending results kept, remembered results dropped, aliased
reads staged — including the cases that the write's fast paths (no graph walk where the value
never reads the written buffer, memoised views) must not get wrong."""

import re

import numpy as np
import pytest

import fusedarrays as fa


def rand(*shape, dtype=np.float32):
    return np.random.default_rng(108).standard_normal(shape).astype(dtype)


def test_writing_a_computed_result_keeps_pending_results_built_on_it():
    """``q`` holds the node ``x * y``; once ``p`` computes it, ``q`` reads ``p``'s memory through
    the node's remembered result, so writing ``p`` must not change ``q`` (nor a rebuilt
    ``x * y``)."""
    a, b = rand(32), rand(32)
    x, y = fa.asarray(a), fa.asarray(b)
    p = x * y
    q = p + 1
    p.compute()
    p += 5
    p[3:7] = 0.0
    np.testing.assert_allclose(q.get(), a * b + 1, rtol=1e-6)
    np.testing.assert_allclose((x * y).get(), a * b, rtol=1e-6)
    want = a * b + 5
    want[3:7] = 0
    np.testing.assert_allclose(p.get(), want, rtol=1e-6)


def test_write_through_another_map_into_a_computed_result_it_reads():
    """``p.T[...] = q`` where ``q`` was built on ``x * y`` before ``p`` computed it into the
    buffer being written: the kernel must not read that buffer transposed while it writes it."""
    a, b = rand(48, 48), rand(48, 48)
    x, y = fa.asarray(a), fa.asarray(b)
    p = x * y
    q = (p + 1) * 2
    p.compute()
    p.T[...] = q
    np.testing.assert_allclose(p.get(), ((a * b + 1) * 2).T, rtol=1e-6)
    np.testing.assert_allclose(q.get(), (a * b + 1) * 2, rtol=1e-6)


def test_writes_whose_value_never_reads_the_destination_match_numpy():
    """The usual statement: no staging, no walk; repeated, so the launch record is reused."""
    xh, bh, sh = rand(40, 40), rand(40), rand(40)
    x, b, s = fa.asarray(xh), fa.asarray(bh), fa.asarray(sh)
    out = fa.empty((40, 40), np.float32)
    fa.reset_stats()
    for k in range(3):
        out[...] = (x + b[None, :]) * s[:, None]
        np.testing.assert_allclose(out.get(), (xh + bh[None, :]) * sh[:, None], rtol=1e-6)
        out[...] = (x.T + b[None, :]) * s[:, None] + k
        np.testing.assert_allclose(out.get(), (xh.T + bh[None, :]) * sh[:, None] + k,
                                   rtol=1e-6)
    assert fa.stats()["launches"] == 6


def test_writes_reading_the_destination_through_views_taken_earlier_are_staged():
    """Views of an array holding memory are not registered with their base; the write still
    finds the destination among the value's buffers and stages a read through another map."""
    a = rand(12, 12)
    x = fa.asarray(a)
    t, shifted, row = x.T, x[1:], x[3]
    want = a.copy()
    x[...] = t * 2 + 1
    want[...] = want.T * 2 + 1
    x[:-1] += shifted
    want[:-1] += want[1:].copy()
    x[...] = x + row[None, :]
    want[...] = want + want[3][None, :].copy()
    np.testing.assert_allclose(x.get(), want, rtol=1e-6)
    np.testing.assert_allclose(t.get(), want.T, rtol=1e-6)        # views see the writes
    np.testing.assert_allclose(row.get(), want[3], rtol=1e-6)


@pytest.mark.parametrize("shape", [(6, 5, 4), (7,), (5, 1, 3)])
def test_memoised_basic_indexing_matches_numpy(shape):
    """Keys whose parts are Python ints, slices of them, None and ... are memoised by value;
    each key twice (the second from the memo), on arrays with different views, and keys the
    memo must tell apart (a slice and a tuple of the same ints, NumPy integers)."""
    h = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 0.5
    x = fa.asarray(h)
    keys = [..., 0, -1, slice(None), slice(1, None), slice(None, None, -1), slice(-2, 1, -1),
            (None, ...), (..., None), (slice(1, 3), None), np.int64(1), (0, ...), (-1, None),
            slice(np.int64(1), None)]
    if len(shape) == 3:
        keys += [(1, 2, 3), slice(1, 2, 3), (slice(None, None, 2), 1, slice(1, None)),
                 (..., 1), (1, ..., 1), (None, 2, None, slice(0, 4, 2))]
    for base, hbase in [(x, h), (x[1:], h[1:]), (x[::-1], h[::-1])]:
        for key in keys * 2:
            try:
                want = hbase[key]
            except IndexError:
                with pytest.raises(IndexError):
                    base[key]
                continue
            np.testing.assert_array_equal(base[key].get(), want, err_msg=repr(key))


@pytest.mark.parametrize("key", [(np.array([1]), np.array([0])), (0, np.array([2, 0])),
                                 (np.array([1]), 2)])
def test_array_indices_beside_others_are_numpys_advanced_indexing(key):
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = fa.asarray(h)[key]    # (more cases: tests/topics/test_advanced.py)
    assert got.shape == h[key].shape
    np.testing.assert_array_equal(got.get(), h[key])


@pytest.mark.parametrize("key", [True, False, np.True_, (0, True), (slice(None), np.False_)])
def test_boolean_indices_are_masks_not_read_as_0_or_1(key):
    """NumPy reads a boolean index as a mask (a new axis of length 1 or 0), never as an int;
    so does fusedarrays."""
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert h[key].shape != h[tuple(int(k) if isinstance(k, (bool, np.bool_)) else k for k in
                                   (key if isinstance(key, tuple) else (key,)))].shape
    got = fa.asarray(h)[key]
    assert got.shape == h[key].shape
    np.testing.assert_array_equal(got.get(), h[key])


@pytest.mark.parametrize("shape", [(), (2, 3)])
@pytest.mark.parametrize("mask", [np.False_, np.True_, "fa False", "fa True"])
def test_a_0d_mask_write_of_no_values_as_numpy(mask, shape):
    """``x[m] = v`` with a 0-d mask and ``v`` of no elements (SciPy's ``apply_where`` writes
    so): nothing where ``m`` is false, NumPy's error where it is true."""
    seed = 41
    h = np.asarray(np.random.default_rng(seed).random(shape), np.float32)
    truth = mask in (np.True_, "fa True")
    m = fa.asarray(np.bool_(truth)) if isinstance(mask, str) else mask
    x, want = fa.asarray(h), h.copy()
    empty = np.zeros((0, *shape), np.float32)
    if truth:
        with pytest.raises(ValueError) as numpy_error:
            want[np.True_] = empty
        with pytest.raises(ValueError, match=re.escape(str(numpy_error.value))):
            x[m] = fa.asarray(empty)
    else:
        want[np.False_] = empty
        x[m] = fa.asarray(empty)
    np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


def test_views_taken_before_a_traced_write_see_the_written_values():
    """Inside fa.fuse a view of an argument is registered with it even though both hold memory:
    the tracer moves such views to the written version."""
    @fa.fuse
    def step(m, g):
        v = m[1:]
        t = m.T
        m += g
        return v * 2, t + 0

    a, b = np.random.default_rng(7).standard_normal((2, 6, 6)).astype(np.float32)
    m = fa.asarray(a)
    doubled, transposed = step(m, fa.asarray(b))
    np.testing.assert_allclose(doubled.get(), (a + b)[1:] * 2, rtol=1e-6)
    np.testing.assert_allclose(transposed.get(), (a + b).T, rtol=1e-6)
