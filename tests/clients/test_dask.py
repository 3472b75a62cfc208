"""dask.array over fa chunks, on the threaded scheduler, against the same graph over NumPy
chunks: ``da.from_array(fa_array)`` and ``da.map_blocks``, elementwise work, reductions by axis,
``d @ d.T``, ``da.nanmean``, boolean selection (unknown chunk sizes) and ``rechunk``, through
NumPy's protocols (``__array_function__``, ufunc keywords, NEP 35 ``like=``) and fa's
registration as a dask chunk type (test_dask_chunks.py tests the registration itself)."""

import judge
import numpy as np
import pytest

import fusedarrays as fa

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

SEED = 20261202
X = judge.data(SEED, spread=False)                         # (200, 12) float64
CHUNKS = (50, 6)


def arrays(x: np.ndarray = X, chunks=CHUNKS):
    """The same dask array over NumPy chunks and over fa chunks."""
    return (da.from_array(x, chunks=chunks),
            da.from_array(fa.asarray(x), chunks=chunks, asarray=False))


def same(call, what: str, x: np.ndarray = X, **judging) -> None:
    """``call(d).compute()`` with fa chunks matches it with NumPy chunks; the chunks of the
    result are fa arrays."""
    want_d, got_d = arrays(x)
    with dask.config.set(scheduler="threads"):
        want = call(want_d).compute()
        got = call(got_d).compute()
    judge.check(got, want, f"{what} (seed {SEED})", **judging)


def test_chunks_are_fa_arrays():
    _, d = arrays()
    assert isinstance(d._meta, fa.ndarray), type(d._meta)
    blocks = [d.blocks[i, j].compute() for i in range(4) for j in range(2)]
    assert all(isinstance(b, fa.ndarray) for b in blocks)
    np.testing.assert_array_equal(judge.host(blocks[5]), X[100:150, 6:12])


def test_elementwise():
    same(lambda d: np.sin(d) * 2 + d.T.T ** 2 - abs(d), "sin(d) * 2 + d**2 - abs(d)")
    same(lambda d: da.where(d > 0, d, -1.0), "da.where(d > 0, d, -1)")


@pytest.mark.parametrize("name", ["sum", "mean", "std", "max", "argmax"])
def test_reduction_by_axis(name):
    same(lambda d: getattr(d, name)(axis=0), f"d.{name}(axis=0)")
    same(lambda d: getattr(d, name)(axis=1), f"d.{name}(axis=1)")


def test_full_reduction():
    same(lambda d: d.sum(), "d.sum()")


def test_matmul():
    same(lambda d: d @ d.T, "d @ d.T")
    same(lambda d: d.T @ d, "d.T @ d")


def test_nanmean():
    x = X.copy()
    x[np.random.default_rng(SEED).random(x.shape) < 0.1] = np.nan
    same(lambda d: da.nanmean(d, axis=0), "da.nanmean(d, axis=0)", x)
    same(lambda d: da.nansum(d, axis=1), "da.nansum(d, axis=1)", x)


def test_boolean_selection_with_unknown_chunk_sizes():
    same(lambda d: d[d > 0.5], "d[d > 0.5]")
    same(lambda d: d[d[:, 0] > 0], "d[d[:, 0] > 0]")


def test_rechunk():
    same(lambda d: d.rechunk((64, 5)) * 3, "d.rechunk((64, 5)) * 3")


def test_map_blocks():
    same(lambda d: da.map_blocks(lambda b: b * 2 + 1, d, dtype=d.dtype), "map_blocks(b * 2 + 1)")
    same(lambda d: da.map_blocks(lambda b: b.sum(axis=1, keepdims=True), d,
                                 chunks=(50, 1), dtype=d.dtype),
         "map_blocks(b.sum(axis=1, keepdims=True))", X[:, :6])
