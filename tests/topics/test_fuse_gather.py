"""Gathers inside fa.fuse (cases: ``tests/fuse_gather_cases.py``) on every tier: NumPy's values
over new indices per call without a compile or a copy to the host, out-of-range indices raised
once at the next ``.get()`` (sim: the CUDA kernel source, small shapes, since it runs the kernel
in Python; cuda: a 300x400 table and 2^16 indices in one launch, and the context healthy after).
On cpu at its default settings also what a traced program adds to a lazy gather: reads of an
argument written earlier in the function, a store racing the gather's loads, indices given as
constants, and the refusals that stay (a mask array, a reduction of a gather, foreach)."""

import fuse_gather_cases as cases
import numpy as np
import pytest

import fusedarrays as fa

# each tier's (seed, rows, cols, n) of cases.embedding_matches_numpy, and the like below
VECTOR_AND_ROW_PATHS = {"cpu": [(1501, 300, 400, 1000), (1502, 300, 1, 1 << 16)],
                        "cuda": [(1521, 300, 400, 1 << 12), (1522, 300, 1, 1 << 16)]}
SMALL = {"cpu": (1503, 7, 3, 5), "sim": (1511, 9, 4, 6)}
AXES = {"cpu": [(1504, (300, 400), 1 << 16), (1505, (6, 5), 4)], "sim": [(1512, (6, 5), 4)],
        "cuda": [(1523, (300, 400), 1 << 16)]}
OUT_OF_RANGE = {"cpu": (1506, 300, 400, 1 << 12), "sim": (1513, 8, 5, 6),
                "cuda": (1524, 300, 400, 1 << 12)}


@pytest.mark.tiers("cpu", "cuda")
def test_embedding_vector_and_row_paths(monkeypatch, tier):
    for seed, rows, cols, n in VECTOR_AND_ROW_PATHS[tier]:
        cases.embedding_matches_numpy(monkeypatch, seed=seed, rows=rows, cols=cols, n=n)


@pytest.mark.tiers("cpu", "sim")
def test_embedding_small(monkeypatch, tier):
    seed, rows, cols, n = SMALL[tier]
    cases.embedding_matches_numpy(monkeypatch, seed=seed, rows=rows, cols=cols, n=n)


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_axes_match_numpy(tier):
    for seed, shape, n in AXES[tier]:
        cases.axes_match_numpy(seed=seed, shape=shape, n=n)


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_out_of_range_raises_once(tier):
    seed, rows, cols, n = OUT_OF_RANGE[tier]
    cases.out_of_range_raises_once(seed=seed, rows=rows, cols=cols, n=n)
    if tier == "cuda":
        seed = 1525
        print("seed", seed)
        host = np.random.default_rng(seed).standard_normal(1 << 20).astype(np.float32)
        total = float(fa.sum(fa.asarray(host)))      # the context still launches and reads
        assert total == pytest.approx(float(host.sum(dtype=np.float64)), rel=1e-4, abs=1e-2)


def test_a_gather_of_a_written_argument_reads_the_written_value():
    seed = 1507
    print("seed", seed)
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((300, 400))

    @fa.fuse
    def scaled_then_read(t, idx):
        t *= 2.0
        return t[idx]

    @fa.fuse
    def permuted_in_place(t, idx):      # every row written from another: a staged copy
        t[...] = t[idx] + 1.0

    t = fa.asarray(host.copy())
    raw = rng.integers(-300, 300, 1000)
    np.testing.assert_array_equal(scaled_then_read(t, fa.asarray(raw)).get(), (host * 2)[raw],
                                  err_msg=f"{seed=}")
    np.testing.assert_array_equal(t.get(), host * 2, err_msg=f"{seed=}")
    for _ in range(2):
        order, before = rng.permutation(300), t.get()
        permuted_in_place(t, fa.asarray(order))
        np.testing.assert_array_equal(t.get(), before[order] + 1.0, err_msg=f"{seed=}")


def test_constant_indices_are_checked_when_traced():
    seed = 1508
    print("seed", seed)
    rng = np.random.default_rng(seed)
    host = rng.standard_normal((6, 4))

    @fa.fuse
    def fixed(x):
        return x[np.array([1, -6, 5])] + fa.take(x, [3, -1], axis=1)[:3, :1]

    np.testing.assert_array_equal(fixed(fa.asarray(host)).get(),
                                  host[[1, -6, 5]] + np.take(host, [3, -1], axis=1)[:3, :1],
                                  err_msg=f"{seed=}")

    @fa.fuse
    def wrong(x):
        return x[np.array([0, 6])]

    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        wrong(fa.asarray(host))


def test_what_stays_refused():
    host = np.arange(12.0).reshape(3, 4)

    @fa.fuse
    def selected(x, m):
        return x[m]

    with pytest.raises(fa.UnsupportedOperationError,
                       match="the result's size depends on the mask's values"):
        selected(fa.asarray(host), fa.asarray(host > 4))

    @fa.fuse
    def summed(x, i):
        return fa.sum(x[i], axis=1)

    with pytest.raises(fa.UnsupportedOperationError, match="reduces, scans or computes a gather"):
        summed(fa.asarray(host), fa.asarray(np.array([2, 0])))

    @fa.fuse
    def pairs_of_expression(x, i):
        return (x * 2)[i, i]

    with pytest.raises(fa.UnsupportedOperationError, match=r"x\[i, j, ...\] of a pending"):
        pairs_of_expression(fa.asarray(host), fa.asarray(np.array([2, 0])))

    @fa.fuse
    def gathered(x, i):
        return x[i]

    with pytest.raises(fa.UnsupportedOperationError, match=r"foreach: .*gathered gathers"):
        gathered.foreach([fa.asarray(np.arange(4.0))], [fa.asarray(np.array([3, 2, 1, 0]))])


def test_a_fused_site_outlives_lazy_sites_and_goes_with_its_program(monkeypatch):
    """A traced gather's site is kept while its program lives, however many lazy gathers are
    built since (the lazy ones keep only the newest MAX_SITES), and released with it."""
    import gc

    from fusedarrays.runtime import indexflags

    seed = 1509
    print("seed", seed)
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(indexflags, "MAX_SITES", 4)
    x = fa.asarray(rng.standard_normal(10))

    @fa.fuse
    def picked(a, i):
        return a[i] * 2.0

    picked(x, fa.asarray(np.array([0, 1])))
    kept = list(picked._entries.values())[0].program.sites.numbers
    for _ in range(8):                                # lazy flagged gathers push sites out
        fa.take(x, fa.asarray(np.array([1])) + 0)
    bad = picked(x, fa.asarray(np.array([3, 10])))
    with pytest.raises(IndexError, match="axis 0 with size 10 \\(in x\\[idx\\] in fa.fuse "
                                         "function .*picked"):
        bad.get()
    assert all(n in indexflags._kept for n in kept)
    del picked, bad
    gc.collect()
    assert not any(n in indexflags._kept for n in kept)
