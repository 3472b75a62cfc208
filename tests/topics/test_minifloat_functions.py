"""bfloat16, float8_e4m3fn and float8_e5m2 through the namespace beyond elementwise ops (issue 34
item 1: nothing silently wrong): products, norms, reductions and scans, statistics, sorting and
the set functions, quantiles, counting, indexing and scatters, comparisons, conversions and
display, the data-type functions, and the refusals, each against NumPy + ml_dtypes on the same
data.

The reference is NumPy + ml_dtypes where it computes in the dtype JAX gives (fa's promotion);
where it gives another dtype (its ``matmul`` float32, its ``norm`` float64) or no answer (its
``histogram``, its sort with NaN: ml_dtypes' comparison is no total order), the reference is
NumPy on the exact float32 values, rounded once to the format. :func:`near` allows one rounding
(a float32 sum in another order may round to the neighbour); :func:`mc.same` is bit for bit
where the computation is exact (sorting, selection, indexing). Where NumPy + ml_dtypes refuses
and fa refuses too, the error names the function, the dtype and what to do.

Tiers: every case on cpu; sorting, unique, quantiles, products and norms on cuda too (CuPy has
no bfloat16: the sort goes through float32 there, the product through the generated tiled
kernel); the product kernel's bfloat16 loads and stores on sim, tiny.
"""

import math

import minifloatcases as mc
import ml_dtypes
import numpy as np
import pytest
import scipy.special

import fusedarrays as fa
from fusedarrays.errors import DTypeError, UnsupportedOperationError

F32 = np.dtype(np.float32)
FORMATS = mc.FORMATS
IDS = [d.name for d in FORMATS]
# the arithmetic paths (products, norms, statistics) are one code for both float8 formats: the
# one without inf (saturating to NaN) stands for both there, to keep the file's compiles few
ARITH = [mc.BF16, mc.E4M3]
ARITH_IDS = [d.name for d in ARITH]
SEED = 3411


def finite(seed: int, shape, dtype: np.dtype) -> np.ndarray:
    """Finite values of ``dtype``, normal at several scales (no edges: a sum stays a number)."""
    rng = np.random.default_rng(seed)
    scale = rng.choice([0.25, 1.0, 4.0], size=shape)
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def edgy(seed: int, shape, dtype: np.dtype) -> np.ndarray:
    """:func:`finite` values with NaN, +-inf (where the format has it), -0.0 and 0.0 mixed in,
    and repeats (ties for a stable sort)."""
    a = finite(seed, shape, dtype).astype(np.float32).reshape(-1)
    rng = np.random.default_rng(seed + 1)
    edges = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, -0.0, 1.0, 1.0, 1.0]
    at = rng.choice(a.size, size=min(len(edges), a.size), replace=False)
    a[at] = edges[:len(at)]
    with np.errstate(all="ignore"):
        return a.reshape(shape).astype(dtype)


def rounded(fn, *arrays, dtype=None):
    """``fn`` of the arrays' float32 values, rounded once to ``dtype`` (the first's)."""
    dtype = dtype or arrays[0].dtype
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(a.astype(F32) for a in arrays))).astype(dtype)


def _ordered(a: np.ndarray) -> np.ndarray:
    """Each value's place on the format's number line: consecutive values differ by one."""
    bits = mc.bits(a).astype(np.int64)
    sign = 1 << (8 * a.dtype.itemsize - 1)
    return np.where(bits & sign, -(bits & (sign - 1)), bits)


def near(got, want, what: str = "", ulps: int = 1) -> None:
    """Same dtype and shape, NaN where ``want`` is NaN, else within ``ulps`` of the format's
    spacing (one rounding of a float32 value)."""
    got = np.asarray(got.get() if isinstance(got, fa.ndarray) else got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    with np.errstate(all="ignore"):
        gnan, wnan = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    assert np.array_equal(gnan, wnan), (what, np.argwhere(gnan != wnan)[:5])
    apart = np.abs(_ordered(got[~wnan]) - _ordered(want[~wnan]))
    assert not (apart > ulps).any(), (what, got[~wnan][apart > ulps][:5],
                                       want[~wnan][apart > ulps][:5])


def same(got, want, what: str = "") -> None:
    mc.same(got.get() if isinstance(got, fa.ndarray) else got, want, what)


def _raises(kind, fn, *words):
    with pytest.raises(kind) as info:
        fn()
    text = str(info.value)
    for w in words:
        assert w in text, (w, text)


# -- data-type functions ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_finfo_isdtype_result_type(dtype):
    info, want = fa.finfo(dtype), ml_dtypes.finfo(dtype)
    assert (info.bits, info.eps, info.max, info.min, info.smallest_normal, info.dtype) == (
        want.bits, float(want.eps), float(want.max), float(want.min),
        float(want.smallest_normal), dtype)
    assert fa.finfo(fa.zeros(2, dtype=dtype)) == info
    assert fa.isdtype(dtype, "real floating") and not fa.isdtype(dtype, "integral")
    assert fa.result_type(dtype, fa.int64, 2.5) == dtype          # JAX: integers stay below
    _raises(DTypeError, lambda: fa.iinfo(dtype), "iinfo", dtype.name, "finfo")
    if dtype == mc.BF16:
        assert fa.result_type(dtype, fa.float32) == fa.float32
        assert fa.result_type(dtype, fa.float16) == fa.float32


# -- products ---------------------------------------------------------------------------------
def _products(dtype, m=37, k=50, n=29):
    a, b = finite(SEED, (m, k), dtype), finite(SEED + 1, (k, n), dtype)
    x, y = fa.asarray(a), fa.asarray(b)
    near(x @ y, rounded(np.matmul, a, b), "matmul")
    near(x[::-1] @ y[:, ::2], rounded(np.matmul, a[::-1], b[:, ::2]), "matmul of views")
    near(fa.matmul(x[0], y), rounded(np.matmul, a[0], b), "vector @ matrix")
    c = finite(SEED + 19, (m, k), dtype)
    near(fa.vecdot(x[::-1], fa.asarray(c)), rounded(lambda p, q: (p * q).sum(-1), a[::-1], c),
         "vecdot")
    return a, b, x, y


@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", ARITH, ids=ARITH_IDS)
def test_products_round_once(dtype):
    """JAX's dtype (ml_dtypes' matmul gives float32), the float32 sum rounded once."""
    a, b, x, y = _products(dtype)
    near(np.dot(x, y), rounded(np.dot, a, b), "np.dot")
    near(fa.tensordot(x, y, axes=1), rounded(np.matmul, a, b), "tensordot")
    near(fa.einsum("ij,jk->ik", x, y), rounded(np.matmul, a, b), "einsum product")
    near(fa.einsum("ij,ij->i", x, x), rounded(lambda p: (p * p).sum(1), a), "einsum fused")
    near(np.inner(x, x), rounded(np.inner, a, a), "np.inner")
    near(np.vdot(x, x), rounded(np.vdot, a, a), "np.vdot")
    sq = finite(SEED + 2, (9, 9), dtype)
    near(fa.linalg.matrix_power(fa.asarray(sq), 2), rounded(lambda s: s @ s, sq), "power")
    i = np.random.default_rng(SEED).integers(-3, 3, (a.shape[1], 4)).astype(np.int32)
    near(x @ fa.asarray(i), rounded(lambda p: p @ i.astype(F32), a), "with int32")
    if dtype == mc.BF16:        # bfloat16 with float32: float32 (no rounding to the format)
        f = b.astype(F32) * np.float32(1.5)
        got = (x @ fa.asarray(f)).get()
        assert got.dtype == F32
        np.testing.assert_allclose(got, a.astype(F32) @ f, rtol=2e-6, atol=1e-5)
    else:
        _raises(UnsupportedOperationError, lambda: x @ fa.asarray(b.astype(mc.BF16)),
                "matmul", "8-bit floats", "astype")


@pytest.mark.tiers("sim")
def test_product_kernel_rounds_bfloat16_on_sim():
    _products(mc.BF16, 5, 7, 3)


# -- norms and statistics -----------------------------------------------------------------------
@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", ARITH, ids=ARITH_IDS)
def test_norms_in_float32_rounded_once(dtype):
    a = finite(SEED + 3, (40, 33), dtype)
    x = fa.asarray(a)
    la = np.linalg
    for ord_ in (2, 1, math.inf, -math.inf, 0, 3):
        near(fa.linalg.vector_norm(x, ord=ord_), rounded(
            lambda v, o=ord_: la.vector_norm(v, ord=o), a), f"vector_norm ord={ord_}")
    near(fa.linalg.vector_norm(x[:, ::-1], axis=1), rounded(
        lambda v: la.vector_norm(v, axis=1), a[:, ::-1]), "vector_norm axis=1")
    for ord_ in ("fro", 1, -math.inf, 2, "nuc"):
        near(fa.linalg.matrix_norm(x, ord=ord_), rounded(
            lambda v, o=ord_: la.matrix_norm(v, ord=o), a), f"matrix_norm ord={ord_}")
    near(np.linalg.norm(x), rounded(la.norm, a), "np.linalg.norm")
    near(fa.global_norm([x, x[:3]]), rounded(
        lambda v: la.vector_norm(np.concatenate([v.ravel(), v[:3].ravel()])), a), "global_norm")
    near(fa.linalg.trace(x[:33]), rounded(np.trace, a[:33]), "trace")


@pytest.mark.parametrize("dtype", ARITH, ids=ARITH_IDS)
def test_reductions_and_statistics(dtype):
    """Sums at the rows and tiled schedules; mean/var/std in float32 rounded once (JAX's
    upcast); argmax/min, max/min and the counts exact; scans within a rounding per output."""
    a = finite(SEED + 4, (300, 257), dtype)
    x = fa.asarray(a)
    near(fa.sum(x, axis=1), rounded(lambda v: v.sum(1, dtype=np.float64), a), "sum rows")
    near(fa.sum(x.T, axis=1), rounded(lambda v: v.sum(0, dtype=np.float64), a), "sum tiled")
    near(fa.sum(x), rounded(lambda v: v.sum(dtype=np.float64), a), "sum")
    for fn in (np.mean, np.var, np.std):
        near(getattr(fa, fn.__name__)(x, axis=0), rounded(
            lambda v, f=fn: f(v.astype(np.float64), axis=0), a), fn.__name__)
    near(fa.var(x, axis=1, correction=1), rounded(lambda v: v.astype(np.float64).var(
        axis=1, ddof=1), a), "var ddof")
    small = finite(SEED + 5, (6, 9), dtype).astype(F32) / 8 + 1
    p = small.astype(dtype)
    near(fa.prod(fa.asarray(p), axis=1), rounded(lambda v: v.prod(1), p), "prod")
    same(fa.max(x[::-1], axis=1), a[::-1].astype(F32).max(1).astype(dtype), "max")
    same(fa.min(x), a.astype(F32).min().astype(dtype), "min")
    same(fa.argmax(x, axis=0), a.astype(F32).argmax(0), "argmax")
    same(fa.argmin(x.T, axis=1), a.T.astype(F32).argmin(1), "argmin")
    same(fa.count_nonzero(x), np.count_nonzero(a.astype(F32)), "count_nonzero")
    assert bool(fa.any(x)) and bool(fa.all(x == x))
    c = finite(SEED + 6, (5, 40), dtype)
    y = fa.asarray(c)
    near(fa.cumsum(y, axis=1), rounded(lambda v: np.cumsum(v, 1), c), "cumsum", ulps=2)
    near(fa.cumulative_sum(y[:, ::-1], axis=1), rounded(
        lambda v: np.cumsum(v, 1), c[:, ::-1]), "cumulative_sum", ulps=2)
    q = (c.astype(F32) / 16 + 1).astype(dtype)
    near(fa.cumulative_prod(fa.asarray(q), axis=1), rounded(
        lambda v: np.cumprod(v, 1), q), "cumulative_prod", ulps=2)


@pytest.mark.parametrize("dtype", ARITH, ids=ARITH_IDS)
def test_nan_functions_and_softmax(dtype):
    a = finite(SEED + 7, (12, 30), dtype).astype(F32)
    a[3, 4] = a[7, 0] = a[7, 29] = np.nan
    a = a.astype(dtype)
    x = fa.asarray(a)
    for fn in (np.nansum, np.nanmean, np.nanvar, np.nanstd, np.nanmax, np.nanmin):
        near(getattr(fa, fn.__name__)(x, axis=1), rounded(
            lambda v, f=fn: f(v.astype(np.float64), axis=1), a), fn.__name__)
    for name in ("nanargmax", "nanargmin"):
        same(getattr(fa, name)(x, axis=1), getattr(np, name)(a.astype(F32), axis=1), name)
    near(fa.nancumsum(x, axis=1), rounded(lambda v: np.nancumsum(v, 1), a), "nancumsum", 2)
    assert np.isnan(fa.sum(x).get().astype(F32))       # plain sum: NaN as NumPy's
    b = finite(SEED + 8, (7, 50), dtype)
    y = fa.asarray(b)
    near(fa.logsumexp(y, axis=1), rounded(lambda v: scipy.special.logsumexp(v, 1), b), "lse")
    near(fa.softmax(y), rounded(lambda v: scipy.special.softmax(v, -1), b), "softmax")
    near(fa.log_softmax(y), rounded(lambda v: scipy.special.log_softmax(v, -1), b),
         "log_softmax")
    near(fa.special.erf(y), rounded(scipy.special.erf, b), "erf")
    near(fa.special.expit(y), rounded(scipy.special.expit, b), "expit")


# -- sorting, sets, quantiles, counting -------------------------------------------------------
def unsigned_zero(values, dtype):
    """``values`` in ``dtype`` with -0.0 made 0.0 (NaN kept): for results whose zero's sign
    follows the order of an unstable sort."""
    return (np.asarray(values).astype(F32) + np.float32(0)).astype(dtype)


@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_sorting_and_sets_bit_for_bit(dtype):
    """NaN last (NumPy's float order, not ml_dtypes' broken one), -0.0 and 0.0 equal and in
    their order (stable), descending the reverse; the set functions' values in the format."""
    a = edgy(SEED + 9, (6, 40), dtype)
    af = a.astype(F32)
    x = fa.asarray(a)
    same(fa.sort(x), np.sort(af, kind="stable").astype(dtype), "sort")
    same(fa.sort(x[::-1].T, axis=0), np.sort(af[::-1].T, 0, kind="stable").astype(dtype), "T")
    same(fa.sort(x, descending=True), np.flip(np.sort(af, kind="stable"), -1).astype(dtype),
         "descending")
    # np.sort's default kind leaves -0.0 and 0.0 in NumPy's own (unstable) order, CuPy's sort in
    # a stable one: the zeros compared as one value here, their order by the stable sorts above
    same(unsigned_zero(np.sort(x, axis=None).get(), dtype),
         unsigned_zero(np.sort(af, axis=None), dtype), "np.sort")
    same(fa.argsort(x, axis=1), np.argsort(af, 1, kind="stable"), "argsort")
    same(fa.argsort(x, axis=0, descending=True), af.shape[0] - 1 - np.flip(np.argsort(
        np.flip(af, 0), 0, kind="stable"), 0), "argsort descending")
    table = np.sort(af[0])
    same(fa.searchsorted(fa.asarray(table.astype(dtype)), x[1:3]),
         np.searchsorted(table, af[1:3]), "searchsorted")
    same(fa.searchsorted(fa.asarray(table.astype(dtype)), 0.5, side="right"),
         np.searchsorted(table, np.float32(0.5), side="right"), "searchsorted scalar")
    values, index, inverse, counts = np.unique(af, return_index=True, return_inverse=True,
                                               return_counts=True, equal_nan=False)
    got = fa.unique_all(x)
    same(got.values, values.astype(dtype), "unique values")
    for g, w, what in ((got.indices, index, "indices"), (got.inverse_indices, inverse,
                                                          "inverse"), (got.counts, counts,
                                                                       "counts")):
        same(g, w, what)
    same(fa.unique_values(x[:, ::-1]), np.unique(af[:, ::-1], equal_nan=False).astype(dtype),
         "unique_values")
    same(unsigned_zero(np.unique(x).get(), dtype), unsigned_zero(np.unique(af), dtype),
         "np.unique (NaNs one; which zero is kept follows that sort's order)")
    same(fa.take_along_axis(x, fa.argsort(x, axis=1), axis=1),
         np.take_along_axis(af, np.argsort(af, 1, kind="stable"), 1).astype(dtype), "gather")


@pytest.mark.tiers("cpu", "cuda")
@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_quantiles_in_float32_rounded_once(dtype):
    a = finite(SEED + 10, (9, 31), dtype)
    x = fa.asarray(a)
    near(fa.median(x, axis=1), rounded(lambda v: np.median(v, 1), a), "median")
    near(fa.median(x[:, 1:], axis=1), rounded(lambda v: np.median(v, 1), a[:, 1:]), "even")
    near(fa.quantile(x, 0.3, axis=0), rounded(lambda v: np.quantile(v, 0.3, 0), a), "q")
    near(fa.percentile(x, [10, 75]), rounded(lambda v: np.percentile(v, [10, 75]), a), "pct")
    near(fa.quantile(x, 0.4, method="nearest"), rounded(
        lambda v: np.quantile(v, 0.4, method="nearest"), a), "nearest")
    b = a.astype(F32)
    b[2, 5] = b[4, :] = np.nan
    b = b.astype(dtype)
    y = fa.asarray(b)
    near(fa.median(y, axis=1), rounded(lambda v: np.median(v, 1), b), "median NaN rows")
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = rounded(lambda v: np.nanmedian(v, 1), b)
    near(fa.nanmedian(y, axis=1), want, "nanmedian")
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = rounded(lambda v: np.nanquantile(v, 0.7, 1), b)
    near(fa.nanquantile(y, 0.7, axis=1), want, "nanquantile")


@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_histogram_bincount(dtype):
    """NumPy's own histogram of these dtypes fails: fa counts their float32 values."""
    a = edgy(SEED + 11, (50, 7), dtype)
    af = a.astype(F32)
    x = fa.asarray(a)
    fin = np.isfinite(af)
    counts, edges = fa.histogram(x[fin.all(1)], bins=6)
    want_counts, want_edges = np.histogram(af[fin.all(1)], bins=6)
    same(counts, want_counts, "counts")
    same(edges, want_edges, "edges")
    w = finite(SEED + 12, (50, 7), dtype)
    counts, _ = fa.histogram(x, bins=fa.asarray(np.array([-2, 0, 0.5, 3], dtype)),
                             weights=fa.asarray(w))
    want, _ = np.histogram(af, bins=np.array([-2, 0, 0.5, 3], F32), weights=w.astype(F32))
    near(counts, want.astype(dtype), "weighted histogram in the weights' dtype")
    k = np.random.default_rng(SEED).integers(0, 5, 350)
    got = fa.bincount(fa.asarray(k), weights=fa.asarray(w.reshape(-1))).get()
    np.testing.assert_allclose(got, np.bincount(k, weights=w.reshape(-1).astype(np.float64)))
    assert got.dtype == np.float64


# -- selection, indexing, comparisons ---------------------------------------------------------
@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_where_clip_indexing_scatter(dtype):
    a = edgy(SEED + 13, (20, 16), dtype)
    af = a.astype(F32)
    x = fa.asarray(a)
    t = dtype.type
    with np.errstate(all="ignore"):
        same(fa.where(x > 0, x, 0.5), np.where(af > 0, a, t(0.5)), "where")
        same(fa.clip(x, -1, 1.5), np.clip(af, -1, 1.5).astype(dtype), "clip")
        same(np.clip(x, -1, None), np.maximum(af, -1).astype(dtype), "np.clip")
    idx = np.array([3, 0, 3, 19])
    same(x[fa.asarray(idx)], a[idx], "take rows")
    same(fa.take(x.T, fa.asarray(idx[:3] % 16), axis=1), a.T[:, idx[:3] % 16], "take")
    same(x[x > 0], a[af > 0], "mask")
    same(fa.flip(x[::2], axis=1), a[::2, ::-1], "flip")
    y = fa.asarray(a.copy())
    y[1:3, ::-2] = 2.5
    y[fa.asarray(idx[1:2])] = x[5]
    want = a.copy()
    want[1:3, ::-2] = t(2.5)
    want[idx[1:2]] = a[5]
    same(y, want, "setitem")
    at = np.random.default_rng(SEED).integers(0, 4, 20)    # repeats: added in order, each
    z = fa.asarray(np.zeros((4, 16), dtype))                # sum rounded (ml_dtypes' loop)
    np.add.at(z, fa.asarray(at), x)
    ref = np.zeros((4, 16), dtype)
    with np.errstate(all="ignore"):
        np.add.at(ref, at, a)
    same(z, ref, "np.add.at")


@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_comparisons_and_predicates(dtype):
    a, b = edgy(SEED + 14, (30, 11), dtype), edgy(SEED + 15, (30, 11), dtype)
    x, y = fa.asarray(a), fa.asarray(b)
    with np.errstate(all="ignore"):
        for name in ("isfinite", "isnan", "isinf", "signbit"):
            same(getattr(fa, name)(x), getattr(np, name)(a.astype(F32)), name)
        same(x < y, a.astype(F32) < b.astype(F32), "less")
        same(x == 1.0, a.astype(F32) == 1, "equal")
        same(fa.isclose(x, y), np.isclose(a, b), "isclose")
        same(fa.isclose(x, x, equal_nan=True), np.isclose(a, a, equal_nan=True), "equal_nan")
    assert fa.allclose(x[:2, :3], x[:2, :3]) is bool(np.allclose(a[:2, :3], a[:2, :3]))
    assert fa.array_equal(x, x, equal_nan=True) and not fa.array_equal(x, x)
    _raises(UnsupportedOperationError, lambda: fa.nextafter(x, y), "nextafter", dtype.name,
            "astype")


@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_differences_and_small_products(dtype):
    """Per-op rounding, as ml_dtypes' loops: each bit for bit."""
    a = finite(SEED + 16, (8, 9), dtype)
    x = fa.asarray(a)
    with np.errstate(all="ignore"):
        same(fa.diff(x, axis=1), np.diff(a, axis=1), "diff")
        same(fa.diff(x, n=2, axis=0), np.diff(a, n=2, axis=0), "diff n=2")
        same(fa.linalg.outer(x[0], x[1]), np.outer(a[0], a[1]), "outer")
        same(fa.linalg.cross(x[:, :3], x[:, 3:6]), np.cross(a[:, :3], a[:, 3:6]), "cross")
        same(np.kron(x[:2, :2], x[2:4, :2]), np.kron(a[:2, :2], a[2:4, :2]), "kron")
        same(fa.round(x * 3.3, decimals=1), np.round(a * dtype.type(3.3), 1), "round")


# -- conversions, display, refusals -----------------------------------------------------------
@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_conversions_and_display(dtype):
    a = edgy(SEED + 17, (3, 4), dtype)
    x = fa.asarray(a)
    same(np.asarray(x), a, "np.asarray")
    got, want = x.tolist(), a.tolist()
    assert [[math.isnan(v) or v for v in r] for r in got] == \
        [[math.isnan(v) or v for v in r] for r in want]
    assert type(got[0][0]) is float
    v = a[0, 1]
    assert float(x[0, 1]) == float(v) or math.isnan(float(v))
    assert x[0, 1].item() == v.item() or math.isnan(v.item())
    assert dtype.name in repr(x) and str(x.compute()) == str(a)
    assert x.astype(fa.float32).dtype == F32


@pytest.mark.parametrize("dtype", FORMATS, ids=IDS)
def test_refusals_name_function_dtype_and_remedy(dtype):
    """LAPACK has no such dtypes (NumPy + ml_dtypes computes in float64, JAX refuses too):
    every factorization refuses; random draws of the format are cast from float32."""
    sq = fa.asarray(finite(SEED + 18, (4, 4), dtype))
    la = fa.linalg
    for name, call in [("solve", lambda: la.solve(sq, sq)), ("inv", lambda: la.inv(sq)),
                       ("det", lambda: la.det(sq)), ("slogdet", lambda: la.slogdet(sq)),
                       ("svd", lambda: la.svd(sq)), ("svdvals", lambda: la.svdvals(sq)),
                       ("qr", lambda: la.qr(sq)), ("eigh", lambda: la.eigh(sq)),
                       ("eigvalsh", lambda: la.eigvalsh(sq)), ("cholesky", lambda: la.cholesky(sq)),
                       ("pinv", lambda: la.pinv(sq)), ("matrix_rank", lambda: la.matrix_rank(sq)),
                       ("lstsq", lambda: np.linalg.lstsq(sq, sq)),
                       ("cond", lambda: np.linalg.cond(sq))]:
        _raises(DTypeError, call, name, dtype.name, "astype(fa.float32)")
    rng = fa.random.default_rng(1)
    for draw in (rng.random, rng.standard_normal):
        _raises(DTypeError, lambda f=draw: f((3,), dtype=dtype), draw.__name__, dtype.name,
                "astype")
