"""Gathers inside ``fa.fuse`` (issue #15), shared by the cpu, sim and gpu tiers: an index the
fused function gets or computes is a flagged gather of the traced program (one launch, no copy of
the index to the host, new index values per call without a retrace or a compile), and an
out-of-range index of any call raises NumPy's ``IndexError`` naming the fused function, the
axis and the size at the next evaluation point after that call (``.get()`` of a result), once.
Each case takes its shapes, so the cpu and gpu tiers reach the vector and row paths and the
simulator stays small."""

import re

import numpy as np
import pytest
from index_flag_cases import count_host_reads

import fusedarrays as fa


@fa.fuse
def embed(table, idx, w):
    """An embedding lookup scaled per row: one gather kernel."""
    return table[idx] * w


@fa.fuse
def take_cols(x, idx):
    return fa.take(x, idx, axis=1) + 1.0


@fa.fuse
def along_computed(x, idx):
    """``take_along_axis`` through an index computed in the function, counting from the end."""
    return fa.take_along_axis(x * 2.0, -idx - 1, axis=1)


@fa.fuse
def row_and_pairs(x, i, j):
    """An integer beside an array (``x[0, j]``) and two arrays (``x[i, j]``)."""
    return x[0, j] + x[i, j]


def _counts() -> tuple:
    s = fa.stats()
    return s["compiles"], s["disk_hits"], s["launches"]


def embedding_matches_numpy(monkeypatch, seed: int, rows: int, cols: int, n: int,
                            calls: int = 3) -> None:
    """``table[idx] * w`` against NumPy for ``calls`` calls with fresh indices (negative ones
    included) and weights: the first call traces and compiles, every later one is one launch
    with no compile, no retrace and no copy to the host before the result's ``.get()``."""
    print("seed", seed)
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, cols)).astype(np.float32)
    t = fa.asarray(table)
    traces = None
    for call in range(calls):
        raw = rng.integers(-rows, rows, n)
        w = rng.standard_normal((n, 1)).astype(np.float32)
        idx, weights = fa.asarray(raw), fa.asarray(w)
        before = _counts()
        reads = count_host_reads(monkeypatch)
        got = embed(t, idx, weights)
        assert reads == [], f"{seed=} call {call}: copies to the host in a fused gather"
        monkeypatch.undo()
        after = _counts()
        assert after[2] == before[2] + 1, f"{seed=} call {call}: not one launch"
        if call:
            assert after[:2] == before[:2], f"{seed=} call {call}: compiled again"
            assert embed.traces == traces, f"{seed=} call {call}: traced again"
        traces = embed.traces
        np.testing.assert_array_equal(got.get(), table[raw] * w, err_msg=f"{seed=} {call=}")


def axes_match_numpy(seed: int, shape: tuple, n: int) -> None:
    """``fa.take`` along axis 1, ``take_along_axis`` through a computed index of an
    expression, ``x[0, j]`` and ``x[i, j]``, each against NumPy, twice with new indices."""
    print("seed", seed)
    rng = np.random.default_rng(seed)
    rows, cols = shape
    host = rng.standard_normal(shape)
    x = fa.asarray(host)
    for call in range(2):
        j = rng.integers(-cols, cols, n)
        np.testing.assert_array_equal(take_cols(x, fa.asarray(j)).get(),
                                      np.take(host, j, axis=1) + 1.0, err_msg=f"{seed=}")
        k = rng.integers(-cols, cols, (rows, 5))
        np.testing.assert_array_equal(along_computed(x, fa.asarray(k)).get(),
                                      np.take_along_axis(host * 2.0, -k - 1, axis=1),
                                      err_msg=f"{seed=} {call=}")
        i = rng.integers(-rows, rows, n)
        np.testing.assert_array_equal(row_and_pairs(x, fa.asarray(i), fa.asarray(j)).get(),
                                      host[0, j] + host[i, j], err_msg=f"{seed=} {call=}")


def _raises_once(result, index: int, axis: int, size: int, what: str) -> None:
    message = (rf"index {index} is out of bounds for axis {axis} with size {size} "
               rf"\(in {re.escape(what)} in fa.fuse function ")
    with pytest.raises(IndexError, match=message):
        result.get()
    result.get()        # reported once: the word was cleared, the clamped values come back


def out_of_range_raises_once(seed: int, rows: int, cols: int, n: int) -> None:
    """An out-of-range index in one call of a fused function (either sign, each kind of
    gather) raises at the next ``.get()``, once; the next call with good indices is right."""
    print("seed", seed)
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, cols)).astype(np.float32)
    t, w = fa.asarray(table), fa.asarray(np.ones((n, 1), np.float32))
    for bad_value in (rows, -rows - 1):
        raw = rng.integers(0, rows, n)
        raw[n // 2] = bad_value
        _raises_once(embed(t, fa.asarray(raw), w), bad_value, 0, rows, "x[idx]")
        good = rng.integers(-rows, rows, n)
        np.testing.assert_array_equal(embed(t, fa.asarray(good), w).get(), table[good],
                                      err_msg=f"{seed=}")
    j = rng.integers(0, cols, n)
    j[0] = cols + 3
    _raises_once(take_cols(t, fa.asarray(j)), cols + 3, 1, cols, "fa.take")
    k = rng.integers(0, cols, (rows, 2))
    k[-1, 1] = cols        # -cols - 1 after the function's -idx - 1
    _raises_once(along_computed(t, fa.asarray(k)), -cols - 1, 1, cols, "fa.take_along_axis")
    i, j = rng.integers(0, rows, n), rng.integers(0, cols, n)
    i[1] = -rows - 2
    _raises_once(row_and_pairs(t, fa.asarray(i), fa.asarray(j)), -rows - 2, 0, rows,
                 "x[i, j, ...]")
    # the error belongs to the device, as a lazy gather's: a bad call followed by a good one
    # raises at the first evaluation point after both (the good call's .get()), once
    bad = rng.integers(0, rows, n)
    bad[-1] = rows + 7
    embed(t, fa.asarray(bad), w)
    good = rng.integers(0, rows, n)
    after = embed(t, fa.asarray(good), w)
    _raises_once(after, rows + 7, 0, rows, "x[idx]")
    np.testing.assert_array_equal(after.get(), table[good], err_msg=f"{seed=}")
