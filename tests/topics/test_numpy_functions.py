"""NumPy functions on fa arrays: those in npfunctions.IMPLEMENTED give lazy fa arrays equal to
NumPy's results; every other one raises UnsupportedOperationError naming it (never a silent copy
to the host); np.asarray / np.array copy to the host. On cpu at its default settings; on cuda the
implemented ones give device arrays, the others raise naming themselves, and a NumPy argument
written in place is refused (an upload copy), one only read is fine."""

import io
import os

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api.npfunctions import IMPLEMENTED
from fusedarrays.ir import graph, ops

SEED = 20240611


def _data():
    rng = np.random.default_rng(SEED)
    return rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4))


def _host_view(a: fa.ndarray) -> np.ndarray:
    """The values of a view of computed memory, read through its strides on the host (no
    kernel: what NumPy's view of the same data holds)."""
    buffer, shape, strides, offset = graph.leaf_view(a._resolved())
    flat = buffer.storage.view(a.dtype)
    itemsize = a.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], shape,
                                           tuple(s * itemsize for s in strides)).copy()


# One call per implemented function, made alike on NumPy arrays and on fa arrays.
CASES = {
    np.where: lambda a, b: np.where(a > 0, a, b),
    np.clip: lambda a, b: np.clip(a, -0.5, 0.5),
    np.copy: lambda a, b: np.copy(a),
    np.broadcast_to: lambda a, b: np.broadcast_to(a[:1], (3, 4)),
    np.expand_dims: lambda a, b: np.expand_dims(a, 1),
    np.squeeze: lambda a, b: np.squeeze(a[:1]),
    np.reshape: lambda a, b: np.reshape(a, (2, 6)),
    np.transpose: lambda a, b: np.transpose(a),
    np.ravel: lambda a, b: np.ravel(a),
    np.zeros_like: lambda a, b: np.zeros_like(a, dtype=np.int32),
    np.ones_like: lambda a, b: np.ones_like(b),
    np.empty_like: lambda a, b: np.empty_like(a, shape=(5,)),
    np.full_like: lambda a, b: np.full_like(a, 2.5),
    np.result_type: lambda a, b: (np.result_type(a, 1.0), np.result_type(a, b, np.int8)),
    np.concatenate: lambda a, b: np.concatenate([a, b[::-1]], axis=1),
    np.concat: lambda a, b: np.concat([a, a * 2]),
    np.stack: lambda a, b: np.stack([a, b], axis=2, dtype=np.float32),
    np.flip: lambda a, b: np.flip(a, axis=1),
    np.moveaxis: lambda a, b: np.moveaxis(a, 0, 1),
    np.roll: lambda a, b: np.roll(b, 5),
    np.tile: lambda a, b: np.tile(a, 2),
    np.repeat: lambda a, b: np.repeat(a, 3, axis=0),
    np.broadcast_arrays: lambda a, b: np.broadcast_arrays(a, b[0])[1],
    np.matrix_transpose: lambda a, b: np.matrix_transpose(b),
    np.unstack: lambda a, b: np.unstack(a, axis=1)[2],
    np.tril: lambda a, b: np.tril(a, k=1),
    np.triu: lambda a, b: np.triu(b, -1),
    np.round: lambda a, b: np.round(a, 2),
    np.around: lambda a, b: np.around(b),
    np.real: lambda a, b: np.real(a),
    np.imag: lambda a, b: np.imag(b),
    np.angle: lambda a, b: np.angle(a, deg=True),
    np.tensordot: lambda a, b: np.tensordot(a, b.T, axes=1),
    np.shape: lambda a, b: np.shape(a),
    np.ndim: lambda a, b: np.ndim(b),
    np.size: lambda a, b: (np.size(a), np.size(a, 1)),
    # data-dependent sizes (api/masks.py: through the host)
    np.nonzero: lambda a, b: np.nonzero(a > 0)[1],
    np.argwhere: lambda a, b: np.argwhere(b < 0),
    np.flatnonzero: lambda a, b: np.flatnonzero(a > 0.5),
    np.count_nonzero: lambda a, b: np.count_nonzero(a > 0, axis=1, keepdims=True),
    # sorted by the backend's library (api/sorting.py, api/counting.py)
    np.sort: lambda a, b: np.sort(b, axis=0),
    np.argsort: lambda a, b: np.argsort(a, kind="stable"),
    np.searchsorted: lambda a, b: np.searchsorted(np.sort(a[0]), b, side="right"),
    np.unique: lambda a, b: np.unique(np.round(a * 4), return_inverse=True)[1],
    np.bincount: lambda a, b: np.bincount((np.abs(b) * 3).astype(np.int64).ravel(),
                                          minlength=5),
    np.histogram: lambda a, b: np.histogram(a, bins=7)[0],
}
if hasattr(np, "unique_all"):   # NumPy 2.0 and later
    CASES.update({
        np.unique_all: lambda a, b: np.unique_all(a > 0).inverse_indices,
        np.unique_counts: lambda a, b: np.unique_counts(b < 0).counts,
        np.unique_inverse: lambda a, b: np.unique_inverse(a).values,
        np.unique_values: lambda a, b: np.unique_values(b[::-1]),
    })
# Reductions (tests/topics/test_reductions.py has their own): values that every summation order
# gives exactly
CASES.update({
    np.sum: lambda a, b: np.sum(a > 0, axis=1), np.prod: lambda a, b: np.prod(a > 0, axis=0),
    np.max: lambda a, b: np.max(a, axis=1), np.amax: lambda a, b: np.amax(b),
    np.min: lambda a, b: np.min(a, axis=0, keepdims=True), np.amin: lambda a, b: np.amin(b),
    np.argmax: lambda a, b: np.argmax(a, axis=1), np.argmin: lambda a, b: np.argmin(b),
    np.any: lambda a, b: np.any(a > 1, axis=0), np.all: lambda a, b: np.all(a > -3),
    np.mean: lambda a, b: np.mean(a > 0, axis=1), np.var: lambda a, b: np.var(a > 0, axis=1),
    np.std: lambda a, b: np.std(b > 0, axis=1),
    np.linalg.norm: lambda a, b: np.linalg.norm(a > 0, axis=1),
})
# Scans (tests/topics/test_scans.py has their own): exact values (integers)
CASES.update({
    np.cumsum: lambda a, b: np.cumsum(a > 0), np.cumprod: lambda a, b: np.cumprod(
        (a > 0) + 1, axis=1, dtype=np.int16),
    np.cumulative_sum: lambda a, b: np.cumulative_sum(a > 0, axis=0, include_initial=True),
    np.cumulative_prod: lambda a, b: np.cumulative_prod((b > 0) + 1, axis=1),
})
# einsum, differences, whole-array comparisons (their own: test_einsum.py, test_diff_isclose.py):
# bools and differences, exact in any order
CASES.update({
    np.einsum: lambda a, b: np.einsum("ij,ij->j", a > 0, b < 0),
    np.einsum_path: lambda a, b: np.einsum_path("ij,jk,kl->il", a, b.T, a, optimize=True)[0],
    np.diff: lambda a, b: np.diff(a, n=2, axis=0), np.ediff1d: lambda a, b: np.ediff1d(
        b, to_begin=0.5), np.isclose: lambda a, b: np.isclose(a, b, atol=0.5),
    np.allclose: lambda a, b: (np.allclose(a, a + 1e-9), np.allclose(a, b)),
    np.array_equal: lambda a, b: (np.array_equal(a, a), np.array_equal(a, b[::-1])),
    np.array_equiv: lambda a, b: (np.array_equiv(a[:1], a), np.array_equiv(a[1], a[1:2])),
})
# linear algebra (tests/topics/test_linalg.py has their own): LAPACK's on the same values, products
# and fused sums compared within their rounding (_ROUNDED)
_LINALG_CASES = {
    np.dot: lambda a, b: np.dot(a, b.T), np.inner: lambda a, b: np.inner(a, b),
    np.vdot: lambda a, b: np.vdot(a, b), np.outer: lambda a, b: np.outer(a[0], b[:, 1]),
    np.kron: lambda a, b: np.kron(a[:2, :2], b[:2]), np.diagonal: lambda a, b: np.diagonal(b, 1),
    np.trace: lambda a, b: np.trace(a > 0, offset=-1),
    np.cross: lambda a, b: np.cross(a[:, :3], b[:, 1:]),
    np.linalg.svd: lambda a, b: np.linalg.svd(b)[1],
    np.linalg.svdvals: lambda a, b: np.linalg.svdvals(a),
    np.linalg.eigh: lambda a, b: np.linalg.eigh(b[:, :3])[0],
    np.linalg.eigvalsh: lambda a, b: np.linalg.eigvalsh(a[:, 1:], UPLO="U"),
    np.linalg.qr: lambda a, b: np.linalg.qr(b, mode="r"),
    np.linalg.cholesky: lambda a, b: np.linalg.cholesky(b[:, :3] * 0.1 + 3 * np.eye(3)),
    np.linalg.solve: lambda a, b: np.linalg.solve(b[:, :3] + 3 * np.eye(3), b[:, 3]),
    np.linalg.inv: lambda a, b: np.linalg.inv(b[:, 1:]),
    np.linalg.det: lambda a, b: np.linalg.det(np.stack([a[:, :3], b[:, 1:]])),
    np.linalg.slogdet: lambda a, b: np.linalg.slogdet(np.stack([a[:, :3], a[:, 1:]]))[1],
    np.linalg.pinv: lambda a, b: np.linalg.pinv(b),
    np.linalg.lstsq: lambda a, b: np.linalg.lstsq(b, a[:, 0])[0],
    np.linalg.matrix_rank: lambda a, b: np.linalg.matrix_rank(np.stack([b, b * 0])),
    np.linalg.matrix_power: lambda a, b: np.linalg.matrix_power(b[:, :3], 3),
    np.linalg.cond: lambda a, b: np.linalg.cond(np.stack([b[:, :3], b[:, 1:]]), "fro"),
    np.linalg.multi_dot: lambda a, b: np.linalg.multi_dot([a, b.T, a]),
    np.linalg.matrix_norm: lambda a, b: np.linalg.matrix_norm(b, ord=np.inf),
    np.linalg.vector_norm: lambda a, b: np.linalg.vector_norm(a, axis=0, ord=1),
    np.linalg.trace: lambda a, b: np.linalg.trace(b, offset=1),
    np.linalg.diagonal: lambda a, b: np.linalg.diagonal(a, offset=-1),
    np.linalg.cross: lambda a, b: np.linalg.cross(a[:, :3], b[:, :3]),
    np.linalg.outer: lambda a, b: np.linalg.outer(a[0], b[1]),
    np.linalg.matmul: lambda a, b: np.linalg.matmul(a, b.T),
    np.linalg.vecdot: lambda a, b: np.linalg.vecdot(a, b),
    np.linalg.tensordot: lambda a, b: np.linalg.tensordot(a, b, axes=2),
    np.linalg.matrix_transpose: lambda a, b: np.linalg.matrix_transpose(a),
}
CASES.update(_LINALG_CASES)
_ROUNDED = {np.tensordot, *_LINALG_CASES}
# nan-functions and quantiles (their own: test_nanfunctions.py, test_quantiles.py), over a with
# NaN where a > 1: selections exact, sums and interpolations within their rounding
_NAN_CASES = {
    np.nansum: lambda a, b: np.nansum(np.where(a > 1, np.nan, a), axis=0),
    np.nanprod: lambda a, b: np.nanprod(np.where(a > 1, np.nan, b), axis=1),
    np.nanmean: lambda a, b: np.nanmean(np.where(a > 1, np.nan, a), axis=1),
    np.nanvar: lambda a, b: np.nanvar(np.where(a > 1, np.nan, b), axis=1, ddof=1),
    np.nanstd: lambda a, b: np.nanstd(np.where(a > 1, np.nan, a), axis=0, keepdims=True),
    np.nancumsum: lambda a, b: np.nancumsum(np.where(a > 1, np.nan, b), axis=1),
    np.nancumprod: lambda a, b: np.nancumprod(np.where(a > 1, np.nan, a)),
    np.percentile: lambda a, b: np.percentile(b, [10, 90], axis=0),
    np.nanpercentile: lambda a, b: np.nanpercentile(np.where(a > 1, np.nan, a), 35.0, axis=1),
    np.quantile: lambda a, b: np.quantile(a, 0.3, method="hazen"),
    np.nanquantile: lambda a, b: np.nanquantile(np.where(a > 1, np.nan, b), [0.5], axis=0),
    np.median: lambda a, b: np.median(b, axis=1),
    np.nanmedian: lambda a, b: np.nanmedian(np.where(a > 1, np.nan, a), axis=0),
}
CASES.update(_NAN_CASES)
CASES.update({
    np.nanmax: lambda a, b: np.nanmax(np.where(a > 1, np.nan, a), axis=0),
    np.nanmin: lambda a, b: np.nanmin(np.where(a > 1, np.nan, b)),
    np.nanargmax: lambda a, b: np.nanargmax(np.where(a > 1, np.nan, a), axis=1),
    np.nanargmin: lambda a, b: np.nanargmin(np.where(a > 1, np.nan, b)),
})
_ROUNDED |= set(_NAN_CASES)
if hasattr(np, "astype"):
    CASES[np.astype] = lambda a, b: np.astype(a, np.int16)
# NEP 35: every NumPy function taking like= (api/likes.py), like= the case's first array
CASES.update({
    np.array: lambda a, b: np.array([[1, 2]], ndmin=3, like=a),
    np.asarray: lambda a, b: np.asarray([1.5, 2], dtype=np.float32, like=a),
    np.asanyarray: lambda a, b: np.asanyarray([[3]], like=a),
    np.ascontiguousarray: lambda a, b: np.ascontiguousarray([True, False], like=a),
    np.zeros: lambda a, b: np.zeros((2, 3), like=a), np.ones: lambda a, b: np.ones(4, like=a),
    np.empty: lambda a, b: np.empty((0, 2), np.int8, like=a),
    np.full: lambda a, b: np.full((2, 2), 7, like=a),
    np.arange: lambda a, b: np.arange(1, 2, 0.25, like=a),
    np.eye: lambda a, b: np.eye(3, 4, k=1, dtype=int, like=a),
    np.identity: lambda a, b: np.identity(3, like=a), np.tri: lambda a, b: np.tri(3, like=a),
    np.frombuffer: lambda a, b: np.frombuffer(b"\x01\x02", np.uint8, like=a),
    np.fromfile: lambda a, b: np.fromfile(os.devnull, np.int16, like=a),
    np.fromfunction: lambda a, b: np.fromfunction(lambda i, j: i - j, (2, 3), like=a),
    np.fromiter: lambda a, b: np.fromiter(range(4), np.int32, like=a),
    np.fromstring: lambda a, b: np.fromstring("1 2", sep=" ", like=a),
    np.loadtxt: lambda a, b: np.loadtxt(io.StringIO("1 2\n3 4"), like=a),
    np.genfromtxt: lambda a, b: np.genfromtxt(io.StringIO("1,2\n3,4"), delimiter=",", like=a),
    np.require: lambda a, b: np.require([1, 2], like=a),
})
# flat and multi-dimensional indices (api/indexmath.py), from indices made of the data
CASES.update({
    np.unravel_index: lambda a, b: np.unravel_index(
        (np.abs(a) * 7).astype(np.int64) % 20, (4, 5))[1],
    np.ravel_multi_index: lambda a, b: np.ravel_multi_index(
        ((np.abs(a) * 3).astype(np.int64) % 4, (np.abs(b) * 3).astype(np.int64) % 5), (4, 5),
        order="F"),
})
_LAZY = {np.where, np.clip, np.copy, getattr(np, "astype", None), np.tril, np.triu,
         np.round, np.around}   # ops: nothing runs yet
_VIEWS = {np.broadcast_to, np.expand_dims, np.squeeze, np.reshape, np.transpose, np.ravel,
          np.flip, np.moveaxis, np.matrix_transpose, np.unstack, np.broadcast_arrays,
          np.diagonal, np.linalg.diagonal, np.linalg.matrix_transpose}


def test_the_cases_list_every_implemented_function_and_the_op_rows_that_are_not_ufuncs():
    assert set(CASES) == set(IMPLEMENTED)
    assert {row.ref for row in ops.OPS.values()
            if not isinstance(row.ref, np.ufunc) and not row.module} <= set(IMPLEMENTED)


@pytest.mark.parametrize("func", list(CASES), ids=lambda f: f.__name__)
def test_an_implemented_function_gives_a_fa_array_equal_to_numpys(func):
    ha, hb = _data()
    want = CASES[func](ha, hb)
    a, b = fa.asarray(ha), fa.asarray(hb)
    fa.reset_stats()
    got = CASES[func](a, b)
    if func in _LAZY:
        assert fa.stats()["launches"] == 0 and got.pending
    if not isinstance(want, np.ndarray):          # shape, ndim, size, result_type
        assert got == want
        return
    assert isinstance(got, fa.ndarray), type(got)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    values = _host_view(got) if func in _VIEWS else got.get()
    if func in _ROUNDED:    # a product kernel or a fused sum adds in another order than BLAS
        tol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(values, want, rtol=tol, atol=tol, err_msg=f"seed {SEED}")
    elif func is not np.empty_like:
        np.testing.assert_array_equal(values, want, err_msg=f"seed {SEED}")


def test_clip_takes_numpys_other_forms():
    ha, _ = _data()
    a = fa.asarray(ha)
    hi = np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)
    for call in (lambda x: np.clip(x, None, 0.5), lambda x: np.clip(x, min=-0.5),
                 lambda x: np.clip(x, -0.5, hi)):
        want, got = call(ha), call(a)
        assert isinstance(got, fa.ndarray) and got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want, err_msg=f"seed {SEED}")
    ints = (ha * 100).astype(np.int32)
    # a Python int beyond int32 is dropped, as NumPy does, rather than overflowing
    np.testing.assert_array_equal(np.clip(fa.asarray(ints), -5, 2**40).get(),
                                  np.clip(ints, -5, 2**40))


@pytest.mark.parametrize("call, named", [
    (lambda x: np.ptp(x), "np.ptp"),
    (lambda x: np.cov(x), "np.cov"),
    (lambda x: np.linalg.eig(x), "np.linalg.eig"),
    (lambda x: np.partition(x, 1), "np.partition"),
    (lambda x: np.average(x), "np.average"),
    (lambda x: np.gradient(x), "np.gradient"),
    (lambda x: np.linalg.tensorinv(x), "np.linalg.tensorinv"),
    (lambda x: np.add.reduceat(x, [0, 1]), "np.add.reduceat"),
    (lambda x: np.maximum.accumulate(x), "np.maximum.accumulate"),
    (lambda x: np.ldexp(x, 2), "np.ldexp"),
    (lambda x: np.reshape(x, (12,), order="F"), "np.reshape with order='F'"),
    (lambda x: np.clip(x, 0, 1, casting="unsafe"), "np.clip with casting='unsafe'"),
    (lambda x: np.add(x, x, signature="dd->d"), "np.add with signature='dd->d'"),
])
def test_a_function_fusedarrays_does_not_implement_raises_naming_it(call, named):
    x = fa.asarray(_data()[0])
    with pytest.raises(fa.UnsupportedOperationError) as info:
        call(x)
    assert isinstance(info.value, TypeError)
    assert str(info.value).startswith(named + " ") and "x.get()" in str(info.value), info.value


def test_no_numpy_function_copies_a_fa_array_to_the_host_silently():
    x = fa.asarray(_data()[0])
    writers = {"save", "savez", "savez_compressed", "savetxt"}   # never handed a path here
    functions = {id(f): (f"{m.__name__}.{n}", f) for m in (np, np.linalg, np.fft)
                 for n, f in vars(m).items()
                 if hasattr(f, "_implementation") and f not in IMPLEMENTED and n not in writers}
    refused, returned = 0, []
    for name, f in functions.values():
        try:
            result = f(x)
        except fa.UnsupportedOperationError:
            refused += 1
        except TypeError:   # NumPy's own check of the arguments (a missing one) came first
            pass
        else:
            returned.append((name, type(result).__name__))
    assert not returned
    assert refused > 60, refused    # fewer as more are implemented (linalg: about 30)


def test_asarray_and_array_copy_to_the_host():
    ha, _ = _data()
    x = fa.asarray(ha)
    for host in (np.asarray(x), np.array(x), np.asarray(x, dtype=np.float64)):
        assert type(host) is np.ndarray
        np.testing.assert_array_equal(host, ha.astype(host.dtype))


def test_where_and_clip_inside_fuse_are_one_kernel():
    rng = np.random.default_rng(SEED)
    hp, hg = rng.standard_normal(64), rng.standard_normal(64) * 3

    @fa.fuse
    def step(p, g, lr):
        p -= lr * np.clip(g, -1.0, 1.0)
        p[...] = np.where(p > 0, p, 0.1 * p)

    p, g = fa.asarray(hp), fa.asarray(hg)
    fa.reset_stats()
    step(p, g, 0.5)
    assert fa.stats()["launches"] == 1
    hp -= 0.5 * np.clip(hg, -1.0, 1.0)
    np.testing.assert_allclose(p.get(), np.where(hp > 0, hp, 0.1 * hp), rtol=1e-15,
                               err_msg=f"seed {SEED}")


@pytest.mark.parametrize("call, named", [
    (lambda p: np.ptp(p), "np.ptp"),
    (lambda p: np.maximum.accumulate(p), "np.maximum.accumulate"),
])
def test_an_unimplemented_function_inside_fuse_says_to_compute_it_outside(call, named):
    hp = np.random.default_rng(SEED).standard_normal(16)

    @fa.fuse
    def centre(p):
        p -= call(p)

    p = fa.asarray(hp)
    with pytest.raises(fa.UnsupportedOperationError, match="inside fa.fuse") as info:
        centre(p)
    assert str(info.value).startswith(named + " ") and "centre" in str(info.value)
    np.testing.assert_array_equal(p.get(), hp)


# cuda

CUDA_SEED = 1311


def _host(count=1):
    rng = np.random.default_rng(CUDA_SEED)
    return [rng.standard_normal(1 << 16).astype(np.float32) for _ in range(count)]


@pytest.mark.tiers("cuda")
def test_where_and_clip_stay_on_the_device_and_match_numpy():
    (h,) = _host()
    x = fa.asarray(h)
    fa.reset_stats()
    w, c = np.where(x > 0, x, 0.5 * x), np.clip(x, -0.5, 0.5)
    assert isinstance(w, fa.ndarray) and isinstance(c, fa.ndarray)
    assert fa.stats()["launches"] == 0             # lazy: built, not run
    fa.compute(w, c)
    assert fa.stats()["launches"] == 1             # one kernel for both
    assert "on cuda" in repr(w) and "on cuda" in repr(c)
    np.testing.assert_array_equal(w.get(), np.where(h > 0, h, 0.5 * h), err_msg=f"seed {CUDA_SEED}")
    np.testing.assert_array_equal(c.get(), np.clip(h, -0.5, 0.5), err_msg=f"seed {CUDA_SEED}")


@pytest.mark.tiers("cuda")
def test_an_unimplemented_function_raises_naming_it():
    x = fa.asarray(_host()[0])
    for call, named in [(np.average, "np.average"), (np.cov, "np.cov"),
                        (np.maximum.accumulate, "np.maximum.accumulate")]:
        with pytest.raises(fa.UnsupportedOperationError) as info:
            call(x)
        assert str(info.value).startswith(named + " "), info.value


@pytest.mark.tiers("cuda")
def test_numpy_arguments_read_only_or_not_on_cuda():
    hp, hg = _host(2)

    @fa.fuse
    def descend(p, g, lr):
        p -= lr * g

    frozen = hp.copy()
    frozen.flags.writeable = False
    with pytest.raises(fa.UnsupportedOperationError, match="only copy to the device"):
        descend(frozen, hg, 0.1)               # written: the upload would lose the write
    g = hg.copy()
    g.flags.writeable = False
    p = fa.asarray(hp)
    descend(p, g, 0.1)                         # only read: uploaded, fine
    np.testing.assert_allclose(p.get(), hp - np.float32(0.1) * hg, rtol=1e-6, atol=1e-7,
                               err_msg=f"seed {CUDA_SEED}")
