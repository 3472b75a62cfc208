"""einsum: ``fa.einsum`` and ``np.einsum`` on fa arrays against ``np.einsum``, by tier.

- cpu: subscripts, views, dtypes, ``optimize``, ``dtype=``/``casting=``, the interleaved form,
  the route each takes (views, one fused reduction, or ``matmul``), its errors,
  ``np.einsum_path`` and xarray's ``xr.dot``.
- sim: a product and a reduction over a reversed view, small.
- cuda: the cpu tier's cases (tests/einsumcases.py) each on its route, several dtypes and views,
  ``optimize``, and xarray's ``xr.dot`` on device-backed DataArrays.
"""

import einsumcases
import numpy as np
import pytest
from einsumcases import CASES, SEED, check, host_operands

import fusedarrays as fa

products = einsumcases.products     # the fixture counting matmul calls (every tier)
LOOSER = 5.0        # cuda: float32 sums in the GPU's order (blocks, then their partials)


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_each_subscript_matches_numpy_and_takes_its_route(k, products):
    subscripts, shapes, route = CASES[k]
    host = host_operands(shapes, np.float64, np.random.default_rng(SEED + k))
    got = check(subscripts, host, through_numpy=k % 2 == 0)
    assert bool(products) == (route == "matmul"), (subscripts, products)
    if route == "view":
        assert not got.pending


def test_a_fused_einsum_is_one_kernel_with_its_operands_pending_inside():
    rng = np.random.default_rng(SEED)
    a, b, c = (rng.standard_normal(s) for s in ((300, 257), (257,), (257,)))
    x, y, z = fa.asarray(a), fa.asarray(b), fa.asarray(c)
    fa.reset_stats()
    got = fa.einsum("ij,j,j->i", x * 2, y + 1, z)
    assert got.pending and fa.stats()["launches"] == 0
    values = got.get()
    assert fa.stats()["launches"] == 1
    np.testing.assert_allclose(values, np.einsum("ij,j,j->i", a * 2, b + 1, c), rtol=1e-12,
                               err_msg=f"seed {SEED}")


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128, np.bool_, np.float16])
@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,j->i", [(300, 257), (257,)]), ("ij,jk->ik", [(5, 6), (6, 7)]), ("ii", [(6, 6)]),
    ("i,j->ij", [(5,), (6,)]), ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
])
def test_dtypes_are_numpys(subscripts, shapes, dtype):
    host = host_operands(shapes, dtype, np.random.default_rng(SEED))
    if dtype == np.float16:     # summed in float32, rounded once (NumPy's half loops alike)
        want = np.einsum(subscripts, *host)
        got = fa.einsum(subscripts, *map(fa.asarray, host))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.get().astype(np.float32), want, rtol=3e-3, atol=3e-2,
                                   err_msg=f"seed {SEED}")
        return
    check(subscripts, host, through_numpy=True)


def test_integers_wrap_in_their_own_dtype_as_numpys():
    host = [np.array([2**30, 2**30, 3], np.int32), np.array([3, 1, 2], np.int32)]
    got = check("i,i", host, through_numpy=True)
    assert got.dtype == np.int32
    check("i->", host[:1], through_numpy=False)
    check("i,i", [host[0], np.array([1.5, 2.0, 0.5], np.float32)], through_numpy=False)


@pytest.mark.parametrize("subscripts, shapes, views", [
    ("ij,jk->ik", [(6, 5), (7, 6)], [lambda x: x.T, lambda x: x[::-1].T]),
    ("ij,j->i", [(300, 514), (257,)], [lambda x: x[:, ::-2], lambda x: x[::-1]]),
    ("ii->i", [(6, 6)], [lambda x: x.T[::-1, ::-1]]),
    ("ij->", [(257, 300)], [lambda x: x.T]),
    ("bij,bjk->bik", [(4, 5, 3), (3, 5, 2)], [lambda x: x.transpose(2, 0, 1),
                                               lambda x: x[:, ::-1]]),
    ("i,j->ij", [(10,), (12,)], [lambda x: x[1::3], lambda x: x[::-2]]),
])
def test_views_are_read_through_their_strides(subscripts, shapes, views):
    host = host_operands(shapes, np.float64, np.random.default_rng(SEED))
    check(subscripts, host, through_numpy=False, views=views)


def test_a_diagonal_of_a_pending_expression_stays_a_view_of_it():
    h = np.random.default_rng(SEED).standard_normal((5, 5))
    x = fa.asarray(h)
    got = fa.einsum("ii->i", x * 3 + 1)
    assert got.pending
    np.testing.assert_allclose(got.get(), np.einsum("ii->i", h * 3 + 1), rtol=1e-15)
    diagonal = fa.einsum("ii->i", x)       # of memory: a view sharing it, as NumPy's
    x[...] = 7.0
    np.testing.assert_array_equal(diagonal.get(), np.full(5, 7.0))


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", "path"])
def test_optimize_orders_the_contractions_only(optimize):
    shapes = [(3, 40), (40, 5), (5, 60), (60,)]
    host = host_operands(shapes, np.float64, np.random.default_rng(SEED))
    if optimize == "path":
        optimize = np.einsum_path("ij,jk,kl,l->i", *host, optimize="optimal")[0]
    check("ij,jk,kl,l->i", host, through_numpy=True, optimize=optimize)


def test_einsum_path_on_fa_arrays_is_numpys_plan():
    shapes = [(3, 40), (40, 5), (5, 60)]
    host = host_operands(shapes, np.float64, np.random.default_rng(SEED))
    want = np.einsum_path("ij,jk,kl->il", *host, optimize="greedy")
    got = np.einsum_path("ij,jk,kl->il", *map(fa.asarray, host), optimize="greedy")
    assert got == want
    assert fa.einsum_path("ij,jk,kl->il", *map(fa.asarray, host))[0] == want[0]


def test_dtype_and_casting_are_numpys():
    host = host_operands([(5,), (5,)], np.float64, np.random.default_rng(SEED))
    host[1] = host[1].astype(np.float32)
    got = check("i,i", host, through_numpy=True, dtype=np.float32, casting="same_kind")
    assert got.dtype == np.float32
    check("i,i->i", host, through_numpy=False, dtype=np.complex128)
    with pytest.raises(fa.DTypeError, match=r"operand 0 of dtype float64 can't be cast to "
                       r"dtype=float32 under casting='safe'; pass casting='same_kind'"):
        fa.einsum("i,i", *map(fa.asarray, host), dtype=np.float32)


def test_the_interleaved_form():
    host = host_operands([(3, 4), (4,)], np.float64, np.random.default_rng(SEED))
    a, b = map(fa.asarray, host)
    for args, hargs in (((a, [0, 1], b, [1], [0]), (host[0], [0, 1], host[1], [1], [0])),
                        ((a, [Ellipsis, 1]), (host[0], [Ellipsis, 1]))):
        np.testing.assert_allclose(np.einsum(*args).get(), np.einsum(*hargs), rtol=1e-13)


def test_a_broadcast_extent_of_one_stretches_as_numpys():
    host = host_operands([(3, 1), (5, 4)], np.float64, np.random.default_rng(SEED))
    check("ij,jk->ik", host, through_numpy=True)
    check("i,i->i", host_operands([(1,), (6,)], np.int64, np.random.default_rng(SEED)),
          through_numpy=False)


def test_empty_operands():
    host = [np.ones((3, 0)), np.ones((0, 4))]
    check("ij,jk->ik", host, through_numpy=True)
    check("ij->i", host[:1], through_numpy=False)


@pytest.mark.parametrize("subscripts, shapes, error, text", [
    ("ij,jk", [(2, 3), (2, 3)], ValueError, "label 'j' has extents 3 and 2"),
    ("ii", [(2, 3)], ValueError, "repeats label 'i' on axes of extents [2, 3]"),
    ("ij", [(2, 3), (2, 3)], ValueError, "name 1 operands, 2 were given"),
    ("i->j", [(2,)], ValueError, "output subscript 'j' of 'i->j' is no input's"),
    ("i->ii", [(2,)], ValueError, "output subscript 'i' of 'i->ii' appears twice"),
    ("i", [(2, 3)], ValueError, "operand 0 has 2 dimensions but its subscripts 'i' name 1; "
     "add '...'"),
    ("...i->i", [(2, 3)], ValueError, "add '...' to the output"),
    ("i1,i", [(2,), (2,)], ValueError, "hold '1': only letters"),
    ("i->i->i", [(2,)], ValueError, "at most one '->'"),
])
def test_errors_name_the_subscripts_and_the_fix(subscripts, shapes, error, text):
    ops = [fa.asarray(np.ones(s)) for s in shapes]
    with pytest.raises(error) as info:
        fa.einsum(subscripts, *ops)
    assert isinstance(info.value, fa.FusedArraysError) and text in str(info.value), info.value
    with pytest.raises(error):      # NumPy refuses them too
        np.einsum(subscripts, *(np.ones(s) for s in shapes))


def test_out_is_refused_with_what_to_write():
    x = fa.asarray(np.ones(3))
    with pytest.raises(fa.UnsupportedOperationError, match=r"out\[\.\.\.\] = fa.einsum"):
        np.einsum("i,i->i", x, x, out=x)


def test_xarray_dot_on_fa_backed_dataarrays_matches_numpy_backed():
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5))
    for dim in ("y", None, ["y", "z"]):
        want = xr.dot(xr.DataArray(a, dims=("x", "y", "z")), xr.DataArray(b, dims=("y", "z")),
                      dim=dim)
        got = xr.dot(xr.DataArray(fa.asarray(a), dims=("x", "y", "z")),
                     xr.DataArray(fa.asarray(b), dims=("y", "z")), dim=dim)
        assert isinstance(got.data, fa.ndarray) and got.dims == want.dims
        np.testing.assert_allclose(got.data.get(), want.data, rtol=1e-12,
                                   err_msg=f"dim={dim} seed {SEED}")


# sim

@pytest.mark.tiers("sim")
def test_einsum_runs_on_the_sim_backend_too():
    host = host_operands([(3, 4), (4, 5)], np.float32, np.random.default_rng(SEED))
    check("ij,jk->ik", host, through_numpy=True)
    check("ij,ij->i", [host[0], host[0][::-1]], through_numpy=False)


# cuda

@pytest.mark.tiers("cuda")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_each_subscript_matches_numpy_on_its_route_on_the_device(k, dtype, products):
    subscripts, shapes, route = CASES[k]
    host = host_operands(shapes, dtype, np.random.default_rng(SEED + k))
    got = check(subscripts, host, through_numpy=k % 2 == 0, looser=LOOSER)
    assert "on cuda" in repr(got.compute())
    assert bool(products) == (route == "matmul"), (subscripts, products)


@pytest.mark.tiers("cuda")
@pytest.mark.parametrize("dtype", [np.int64, np.complex64, np.bool_])
@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,j->i", [(300, 257), (257,)]), ("ij,jk->ik", [(5, 6), (6, 7)]), ("ii", [(6, 6)]),
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
])
def test_dtypes_are_numpys_on_the_device(subscripts, shapes, dtype):
    host = host_operands(shapes, dtype, np.random.default_rng(SEED))
    check(subscripts, host, through_numpy=True, looser=LOOSER)


@pytest.mark.tiers("cuda")
def test_a_fused_einsum_is_one_kernel_on_views():
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal((4096, 514)), rng.standard_normal(257)
    x, y = fa.asarray(a), fa.asarray(b)
    fa.reset_stats()
    got = fa.einsum("ij,j->i", x[::-1, ::2] * 2, y).get()
    assert fa.stats()["launches"] == 1
    np.testing.assert_allclose(got, np.einsum("ij,j->i", a[::-1, ::2] * 2, b), rtol=1e-12,
                               atol=1e-12, err_msg=f"seed {SEED}")


@pytest.mark.tiers("cuda")
@pytest.mark.parametrize("optimize", [False, True, "optimal"])
def test_optimize_orders_the_contractions_only_on_the_device(optimize):
    host = host_operands([(3, 40), (40, 5), (5, 60), (60,)], np.float64,
                         np.random.default_rng(SEED))
    check("ij,jk,kl,l->i", host, through_numpy=True, optimize=optimize, looser=LOOSER)


@pytest.mark.tiers("cuda")
def test_xarray_dot_on_device_backed_dataarrays():
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(SEED)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((4, 5))
    want = xr.dot(xr.DataArray(a, dims=("x", "y", "z")), xr.DataArray(b, dims=("y", "z")))
    got = xr.dot(xr.DataArray(fa.asarray(a), dims=("x", "y", "z")),
                 xr.DataArray(fa.asarray(b), dims=("y", "z")))
    assert isinstance(got.data, fa.ndarray) and "on cuda" in repr(got.data.compute())
    np.testing.assert_allclose(got.data.get(), want.data, rtol=1e-12, err_msg=f"seed {SEED}")
