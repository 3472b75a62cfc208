"""In-place writes on the cpu backend: pending results kept, remembered results dropped, aliased
reads staged — including the cases that the write's fast paths (no graph walk where the value
never reads the written buffer, memoised views) must not get wrong."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cpu_backend():
    with config.override(BACKEND="cpu", CPU_PARALLEL=False):
        yield


def rand(*shape, dtype=np.float32):
    return np.random.default_rng().standard_normal(shape).astype(dtype)


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
    """The usual statement: no staging, no walk; repeated, so the launch recipe is reused."""
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

