"""The cpu target's blocked folds (compiler/targets/cpu.py): a reduction's or a scan's elements
that call a math function or divide are computed a block at a time, then folded in order, in a
loop of their own where every strided operand's stride along the fold is zero. Rows shorter
than, equal to and longer than a block, views walked backwards, broadcast and strided operands
along the fold, NaNs: NumPy's results."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.compiler.targets.cpu import FOLD_BLOCK


def rng(extra=0):
    seed = 4210 + extra
    print("seed", seed)
    return np.random.default_rng(seed)


@pytest.mark.parametrize("width",
                         [1, FOLD_BLOCK - 1, FOLD_BLOCK, FOLD_BLOCK + 1, 3 * FOLD_BLOCK + 7])
def test_row_sums_and_scans_of_a_broadcast_row_statistic(width):
    g = rng(width)
    a = g.standard_normal((37, width)).astype(np.float32)
    x = fa.asarray(a)
    top = x.max(axis=1, keepdims=True)   # broadcast along the fold: the zero-stride loop
    got = fa.exp(x - top).sum(axis=1).get()
    want = np.exp(a.astype(np.float64) - a.max(axis=1, keepdims=True)).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=2e-6)
    scan = fa.cumsum(fa.exp(x - top) / x.shape[1], axis=1).get()
    want_scan = np.cumsum(np.exp(a.astype(np.float64) - a.max(axis=1, keepdims=True))
                          / width, axis=1)
    np.testing.assert_allclose(scan, want_scan, rtol=2e-5, atol=1e-6)


def test_views_backwards_and_strided_operands_along_the_fold():
    g = rng(1)
    a = g.standard_normal((50, 301)).astype(np.float32)
    b = g.standard_normal((301, 50)).astype(np.float32)
    x, y = fa.asarray(a), fa.asarray(b)
    # y.T's stride along the fold is 50 elements: the general loop; x walked backwards
    got = (fa.sqrt(fa.abs(x[::-1, ::-2])) / (1 + y.T[::-1, ::-2] ** 2)).sum(axis=1).get()
    want = (np.sqrt(np.abs(a[::-1, ::-2].astype(np.float64)))
            / (1 + b.T[::-1, ::-2].astype(np.float64) ** 2)).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=2e-6)
    scan = fa.cumprod(1 + fa.sin(x[:, ::-1]) / 8, axis=1).get()
    want_scan = np.cumprod(1 + np.sin(a[:, ::-1].astype(np.float64)) / 8, axis=1)
    np.testing.assert_allclose(scan, want_scan, rtol=2e-5)
    # a mean broadcast along the fold, and a second reduced axis outside it
    z = fa.asarray(g.standard_normal((6, 40, 70)).astype(np.float32))
    c = z.get()
    got = (fa.exp(z - z.mean(axis=(1, 2), keepdims=True))).sum(axis=(1, 2)).get()
    want = np.exp(c.astype(np.float64) - c.mean(axis=(1, 2), keepdims=True)).sum(axis=(1, 2))
    np.testing.assert_allclose(got, want, rtol=2e-6)


def test_max_and_min_keep_nans_and_float64_and_complex_folds():
    g = rng(2)
    a = g.standard_normal((9, 200)).astype(np.float32)
    a[2, 5] = a[4, 199] = a[7, 64] = np.nan
    x = fa.asarray(a)
    with np.errstate(invalid="ignore"):   # NaN where NumPy has one; exp within its ulps
        np.testing.assert_allclose(fa.max(fa.exp(x) / 3, axis=1).get(),
                                   np.max(np.exp(a.astype(np.float64)) / 3, axis=1), rtol=2e-7)
        np.testing.assert_array_equal(np.isnan(fa.min(fa.log(fa.abs(x)), axis=1).get()),
                                      np.isnan(np.min(np.log(np.abs(a)), axis=1)))
    d = g.standard_normal((11, 130))
    np.testing.assert_allclose(fa.exp(fa.asarray(d)).sum(axis=1).get(), np.exp(d).sum(axis=1),
                               rtol=1e-13)
    z = (g.standard_normal((5, 99)) + 1j * g.standard_normal((5, 99))).astype(np.complex64)
    np.testing.assert_allclose(fa.exp(fa.asarray(z) / 2).sum(axis=1).get(),
                               np.exp(z.astype(np.complex128) / 2).sum(axis=1), rtol=2e-6)


@pytest.mark.parametrize("width", [2 * FOLD_BLOCK + 5, 1000])
def test_row_kernels_softmax_and_log_sum_exp(width):
    # one row kernel (compiler/rowfusion.py): its sections' elements call exp, so the cpu
    # target computes them a block at a time (and a view walked backwards, cut into kernels)
    g = rng(10 + width)
    a = (g.standard_normal((41, width)) * 4).astype(np.float32)
    for x, ref in ((fa.asarray(a), a), (fa.asarray(a)[::-1, ::-1], a[::-1, ::-1])):
        check_softmax_and_log_sum_exp(x, ref.astype(np.float64))
    x = fa.asarray(a)
    e = fa.exp(x - x.max(axis=1, keepdims=True))
    kernels = fa.explain(e / e.sum(axis=1, keepdims=True)).kernels
    assert len(kernels) == 1 and "vb1[t]" in str(kernels[0])   # one row kernel, blocked


def check_softmax_and_log_sum_exp(x, ref):
    e = fa.exp(x - x.max(axis=1, keepdims=True))
    got = (e / e.sum(axis=1, keepdims=True)).get()
    want = np.exp(ref - ref.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-9)
    top = x.max(axis=1, keepdims=True)
    lse = (fa.log(fa.exp(x - top).sum(axis=1, keepdims=True)) + top).get()
    want = np.log(np.exp(ref - ref.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(lse, want + ref.max(axis=1, keepdims=True), rtol=2e-6, atol=2e-6)
