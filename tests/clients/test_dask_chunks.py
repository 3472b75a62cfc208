"""fa as a registered dask chunk type (fusedarrays/api/daskchunks.py), through dask's public
calls on the threaded scheduler: the ``fusedarrays`` array backend (``da.ones``, ``da.arange``,
``da.random.default_rng``), ``to_backend``, ``dask.sizeof``, an fa ``_meta``, and each graph's
result against the same graph over NumPy chunks."""

import subprocess
import sys

import judge
import numpy as np
import pytest

import fusedarrays as fa

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
pytest.importorskip("dask.threaded")
from dask.sizeof import sizeof  # noqa: E402

SEED = 20261203
X = judge.data(SEED, shape=(60, 8), spread=False)
CHUNKS = (16, 3)                  # uneven last chunks on both axes
FA = {"array.backend": "fusedarrays"}


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def pair(x: np.ndarray = X, chunks=CHUNKS):
    """The same dask array over NumPy chunks and, through the backend, over fa chunks."""
    d = da.from_array(x, chunks=chunks)
    return d, d.to_backend("fusedarrays")


def same(call, what: str, x: np.ndarray = X, chunks=CHUNKS, fa_meta=True, **judging) -> None:
    """``call(d)`` over fa chunks has an fa ``_meta`` and computes what it does over NumPy
    chunks, as an fa array."""
    want_d, got_d = pair(x, chunks)
    got_d = call(got_d)
    assert isinstance(got_d._meta, fa.ndarray) or not fa_meta, (
        f"{what}: _meta {type(got_d._meta)} (seed {SEED})")
    judge.check(got_d.compute(), call(want_d).compute(), f"{what} (seed {SEED})", **judging)


def task_result(d):
    """The first chunk as its task returns it (``compute`` of one chunk returns a copy)."""
    return dask.threaded.get(d.__dask_graph__(), d.__dask_keys__()[0][0])


def test_import_of_either_leaves_the_other_alone():
    code = ("import sys, {0}; bad = [m for m in sys.modules if m.split('.')[0] == '{1}']; "
            "assert not bad, bad[:3]")
    for first, other in (("dask.array", "fusedarrays"), ("fusedarrays", "dask")):
        subprocess.run([sys.executable, "-c", code.format(first, other)], check=True)


def test_fusedarrays_imported_after_dask_registers_its_chunk_type():
    # no backend asked for: from_array's chunks are fa and dask counts their buffers
    code = ("import dask.array as da, numpy as np, fusedarrays as fa; "
            "from dask.sizeof import sizeof; x = fa.asarray(np.ones((64, 8))); "
            "assert sizeof(x) == 64 * 8 * 8, sizeof(x); "
            "d = da.from_array(x, chunks=(32, 8), asarray=False); "
            "assert float((d * 2).sum().compute()) == 1024.0")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_backend_creation_makes_fa_chunks():
    for name, args in (("ones", ((10, 7),)), ("zeros", ((10, 7),)), ("full", ((10, 7), 2.5)),
                       ("empty", ((10, 7),)), ("arange", (3, 40, 2))):
        chunks = (4, 3) if name != "arange" else 5
        want = getattr(da, name)(*args, chunks=chunks, dtype=np.float32)
        with dask.config.set(FA):
            got = getattr(da, name)(*args, chunks=chunks, dtype=np.float32)
        assert isinstance(got._meta, fa.ndarray), (name, type(got._meta))
        assert isinstance(got.blocks[(1,) * got.ndim].compute(), fa.ndarray), name
        if name != "empty":
            judge.check(got.compute(), want.compute(), f"da.{name} on the fusedarrays backend")
            judge.check((got * 2).sum(axis=0).compute(), (want * 2).sum(axis=0).compute(),
                        f"(da.{name} * 2).sum(axis=0) on the fusedarrays backend")


def test_backend_random_is_fa_draws_reproducible_per_seed_and_chunk():
    def draw(seed, chunks=(8, 5)):
        with dask.config.set(FA):
            return da.random.default_rng(seed).random((20, 10), chunks=chunks, dtype=np.float32)

    r = draw(SEED)
    assert isinstance(r._meta, fa.ndarray) and r.dtype == np.float32
    assert isinstance(r.blocks[1, 1].compute(), fa.ndarray)
    values = judge.host(r.compute())
    assert ((values >= 0) & (values < 1)).all(), f"seed {SEED}"
    np.testing.assert_array_equal(judge.host(draw(SEED).compute()), values, f"seed {SEED}")
    assert not np.array_equal(judge.host(draw(SEED + 1).compute()), values), f"seed {SEED}"
    # each chunk its own stream: no two chunks repeat a row of numbers
    assert len({tuple(row[:5]) for row in values}) == 20, f"seed {SEED}"
    # a chunk is the same numbers whichever other chunks are computed with it: one fa draw,
    # seeded by the chunk's child of the seed's SeedSequence (as dask's NumPy chunks are)
    np.testing.assert_array_equal(judge.host(r.blocks[2, 1].compute()), values[16:, 5:])
    bitgen = dask.array.backends.array_creation_dispatch.dispatch("fusedarrays")
    chunk = fa.random.default_rng(bitgen.default_bit_generator(
        np.random.SeedSequence(SEED).spawn(6)[5])).random((4, 5), dtype=np.float32)
    np.testing.assert_array_equal(judge.host(chunk), values[16:, 5:], f"seed {SEED}")
    judge.check(r.sum(axis=1).compute(), values.sum(axis=1), f"random rows' sums (seed {SEED})")
    with dask.config.set(FA):
        n = da.random.default_rng(SEED).standard_normal((4000,), chunks=1000)
    assert abs(float(judge.host(n.mean().compute()))) < 0.1, f"seed {SEED}"


def test_to_backend_both_ways():
    d, f = pair()
    assert isinstance(f._meta, fa.ndarray) and f.to_backend("fusedarrays") is f
    assert all(isinstance(b, fa.ndarray) for b in (f.blocks[0, 0].compute(), f.compute()))
    back = f.to_backend("numpy")
    assert isinstance(back._meta, np.ndarray)
    np.testing.assert_array_equal(back.compute(), X)


def test_sizeof_counts_the_buffer_a_chunk_holds():
    f = pair()[1]                                        # the backend registers sizeof
    assert sizeof(task_result(f)) == 16 * 3 * 8
    x = fa.asarray(X)
    assert sizeof(x) == X.nbytes
    assert sizeof(x * 2 + 1) == X.nbytes                 # pending: its result's size
    assert sizeof(x[:3]) == X.nbytes                     # a view holds its base's buffer
    with dask.config.set(FA):
        ones = da.ones((1000, 1000), chunks=500, dtype=np.float64)
    # dask's ones are broadcasts of one element, as over NumPy
    assert sizeof(task_result(ones)) == 8


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "min", "max", "argmin",
                                  "argmax", "any", "all", "cumsum", "cumprod", "nansum",
                                  "nanmean", "nanstd", "nanmax", "nanargmin", "nancumsum"])
def test_reductions_by_axis(name):
    x = X.copy()
    if name.startswith("nan"):
        x[np.random.default_rng(SEED).random(x.shape) < 0.1] = np.nan
    elif name in ("any", "all"):
        x = x > 0.2                           # some columns and rows all True, some not
    elif name in ("prod", "cumprod"):
        x = 1 + x / 8                         # products of 60 factors stay finite
    func = getattr(da, name)
    for axis in ((0, 1) if "cum" in name or "arg" in name else (0, 1, None)):
        same(lambda d, axis=axis: func(d, axis=axis), f"da.{name}(d, axis={axis})", x)


def test_argmax_and_argmin_of_the_whole_array():
    # dask's arg_chunk calls np.unravel_index and np.ravel_multi_index on each chunk's index
    same(lambda d: da.argmax(d), "da.argmax(d)")
    same(lambda d: da.argmin(d), "da.argmin(d)")


def test_matmul_rechunk_slicing_where_masks():
    same(lambda d: d @ d.T, "d @ d.T")
    same(lambda d: d.rechunk((25, 5)) * 3, "d.rechunk((25, 5)) * 3")
    same(lambda d: d[5:50:3, ::-2] + 1, "d[5:50:3, ::-2] + 1")
    same(lambda d: da.where(d > 0, d, -d * 2), "da.where(d > 0, d, -d * 2)")
    # dask makes this Array from a dtype alone, so its _meta is NumPy's whatever the chunks
    same(lambda d: d[d > 0], "d[d > 0]", fa_meta=False)


def test_concatenate_einsum_percentile():
    same(lambda d: da.concatenate([d, d[:, :4] * 2], axis=1), "da.concatenate([d, 2d[:, :4]], 1)")
    same(lambda d: da.concatenate([d, d], axis=0).sum(axis=0), "da.concatenate([d, d]).sum(0)")
    same(lambda d: da.einsum("ij,ik->jk", d, d), "da.einsum('ij,ik->jk', d, d)")
    same(lambda d: da.percentile(d[:, 0], [5, 50, 95]), "da.percentile(d[:, 0], [5, 50, 95])",
         fa_result=False)
