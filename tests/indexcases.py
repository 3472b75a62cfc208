"""Advanced indexing against NumPy, shared by the cpu and sim tiers (and the gpu tier can take
it): several index arrays, integers beside arrays, masks, reads and writes, through views with
negative steps and transposes, with negative, repeated and out-of-range indices.

``keys(rng, shape)`` makes the keys for a 3-D base of ``shape`` from fresh random values (the
caller's seed, printed on failure); each key is built alike for NumPy and fusedarrays (``fa``
index arrays where ``on_fa`` is set). ``VIEWS`` are views of the base: each read or write goes
through one. The consumer of a read (``* 2 + 1``) is fused with the gather.
"""

from __future__ import annotations

import numpy as np

import fusedarrays as fa

VIEWS = {
    "base": lambda a: a,
    "negative steps": lambda a: a[::-1, :, ::-2],
    "transposed": lambda a: a.transpose(2, 0, 1),
}


def keys(rng, shape: tuple) -> dict:
    """Keys over a 3-D view of ``shape`` (negative and repeated values, each in range for the
    axis it indexes), by name."""
    n0, n1, n2 = shape
    i = rng.integers(-n0, n0, (2, 3))
    i[0, 0] = i[1, 2]                                # repeated
    j = rng.integers(-n1, n1, 3)
    k = rng.integers(-n2, n2, (2, 1))
    lead = rng.random(shape[:2]) < 0.5
    last = rng.random(n2) < 0.5
    return {
        "two arrays": (i, j),
        "three arrays broadcast": (i, j, k),
        "int, slice, array": (0, slice(None), k),
        "arrays apart": (i, slice(None), k),
        "arrays after a slice": (slice(None), j, k),
        "ellipsis between": (slice(None), j, Ellipsis, k),
        "array and int": (i, -1),
        "None between": (i, None, j),
        "reversed slices around": (slice(None, None, -1), [0, -1], slice(None, None, -2)),
        "lists": ([[1], [0]], slice(None), [0, 1, -1]),
        "0-d array": (np.array(1), j),
        "repeated": ([0, 0, 1, -1, 0],),
        "mask over leading axes": (lead,),
        "mask and array": (lead, k[:1, 0]),
        "mask on the last axis": (Ellipsis, last),
        "empty": ([],),
        # a 0-d mask is a new axis of one indexed by its nonzero(): 0, or nothing
        "0-d masks apart": (np.array(True), slice(None), j),
        "0-d mask beside an array": (slice(None), np.True_, j, Ellipsis),
        "false 0-d mask": (Ellipsis, np.array(False)),
    }


def full_mask(rng, shape: tuple) -> np.ndarray:
    return rng.random(shape) < 0.4


def as_fa_key(key):
    """``key`` with its NumPy arrays as fa arrays (lists stay lists)."""
    parts = key if isinstance(key, tuple) else (key,)
    return tuple(fa.asarray(k) if isinstance(k, np.ndarray) else k for k in parts)
