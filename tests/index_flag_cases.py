"""Gathers through indices computed on the device (``runtime/indexflags.py``), shared by the cpu
and sim tiers: in range they give NumPy's values with no copy to the host before the gather's
kernel; out of range (either sign, ``x[idx]``, ``fa.take``, ``take_along_axis``, several index
arrays) they raise NumPy's ``IndexError`` at the next ``.get()``, once, and the next evaluation
works."""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.runtime.backend import get_backend


def count_host_reads(monkeypatch) -> list:
    """Every device-to-host copy of the active backend from now on (its ``to_host``)."""
    backend = get_backend()
    real = backend.to_host
    reads: list = []

    def to_host(storage, dtype, count, offset):
        reads.append(count)
        return real(storage, dtype, count, offset)

    monkeypatch.setattr(backend, "to_host", to_host)
    return reads


def in_range_without_host_copies(monkeypatch, seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((40, 6)).astype(np.float32)
    raw = rng.integers(0, 40, 57)
    x, i = fa.asarray(table), fa.asarray(raw)
    reads = count_host_reads(monkeypatch)
    idx = i * 2 - 40                        # in [-40, 40): negative ones count from the end
    got = x[idx] * 2 + fa.take(x, idx + 0, axis=0)
    along = fa.take_along_axis(x, (fa.asarray(rng.integers(-6, 6, (40, 3))) + 0), axis=1)
    got.compute(), along.compute()
    assert reads == [], f"{seed=}: copies to the host before or in the gathers' kernels"
    want = table[raw * 2 - 40] * 2 + table[raw * 2 - 40]
    np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")
    assert along.shape == (40, 3)


def _raises_once(array, index: int, axis: int, size: int, what: str) -> None:
    message = (rf"index {index} is out of bounds for axis {axis} with size {size} "
               rf"\(in {re.escape(what)}")
    with pytest.raises(IndexError, match=message):
        array.get()
    array.get()          # reported once: the word was cleared, the clamped values come back


def out_of_range_raises_once(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(10).astype(np.float32)
    x = fa.asarray(table)
    raw = rng.integers(0, 10, 8)
    good = fa.asarray(raw)
    for bad_value in (12, -11):
        bad = fa.asarray(raw) * 0 + bad_value
        y = fa.take(x, bad)
        _raises_once(y, bad_value, 0, 10, "fa.take")
        _raises_once(x[bad] + 1, bad_value, 0, 10, "x[idx]")
        np.testing.assert_array_equal(x[good + 0].get(), table[raw], err_msg=f"{seed=}")
    m = rng.standard_normal((4, 5))
    along = fa.take_along_axis(fa.asarray(m), fa.asarray(np.array([[0], [4], [5], [1]])) + 0, 1)
    _raises_once(along, 5, 1, 5, "fa.take_along_axis")
    i, j = fa.asarray(np.array([0, 3, -1])) + 0, fa.asarray(np.array([1, -6, -1])) + 0
    _raises_once(fa.asarray(m)[i, j], -6, 1, 5, "x[i, j, ...]")
    ok = fa.asarray(m)[i, j + 2]
    np.testing.assert_array_equal(ok.get(), m[[0, 3, -1], [3, -4, 1]], err_msg=f"{seed=}")


def host_known_indices_raise_at_build(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = fa.asarray(rng.standard_normal(10))
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
        fa.take(x, np.array([1, 10]))
    with pytest.raises(IndexError, match="index -11 is out of bounds for axis 0 with size 10"):
        x[[0, -11]]


def narrow_indices(seed: int, n: int) -> None:
    """Index arrays of every integer width, the device's (flagged) and the host's: NumPy's
    values at both ends of the axis and, flagged, offenders beyond either end (the widest
    value of each width included) reported with their own value."""
    rng = np.random.default_rng(seed)
    extent = 100
    table = rng.standard_normal(extent).astype(np.float32)
    x = fa.asarray(table)
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32):
        low = 0 if np.dtype(dtype).kind == "u" else -extent
        raw = rng.integers(low, extent, n)
        raw[:3] = (low, extent - 1, 0)
        held = fa.asarray(raw.astype(dtype))
        for got, factor in ((fa.take(x, held), 1), (x[held] * 2, 2),
                            (fa.take(x, raw.astype(dtype)), 1)):
            np.testing.assert_array_equal(got.get(), table[raw] * factor,
                                          err_msg=f"{seed=} {dtype=}")
        top = int(np.iinfo(dtype).max)
        for bad in ({extent, top} | ({-extent - 1, int(np.iinfo(dtype).min)} if low else set())):
            index = held * 0 + np.array(bad, dtype)
            assert index.dtype == dtype
            _raises_once(fa.take(x, index), bad, 0, extent, "fa.take")
