"""The Array API namespace against NumPy, shared by the cpu, sim and gpu tiers.

Each case builds one result from views of a fresh random base, once with ``numpy`` and once with
``fusedarrays`` (the same function, given the namespace), and the tier compares the two exactly
(every case moves or selects values, or adds exact products). The base's shape decides the
schedules a kernel takes: (70, 300) reaches ``rows`` and, transposed, ``tiled``; 1-D cases take
``flat``, 3-D ones ``nd``; the cases read views with negative and positive steps.
"""

from __future__ import annotations

import zlib

import numpy as np

import fusedarrays as fa

SHAPE = (70, 300)


def base(seed: int, dtype=np.float32, shape=SHAPE) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    return (rng.standard_normal(shape) * 8).astype(dtype)


# name → f(xp, x): x is the base (NumPy or fusedarrays), xp its namespace.
CASES = {
    "flip axis 0": lambda xp, x: xp.flip(x, axis=0) + x,
    "flip all": lambda xp, x: xp.flip(x[::2, 1::3]),
    "flip 3-D": lambda xp, x: xp.flip(x.reshape(7, 10, 300), axis=(0, 2)) * 2,
    "permute_dims": lambda xp, x: xp.permute_dims(x, (1, 0)) + 1,
    "permute_dims 3-D": lambda xp, x: xp.permute_dims(x.reshape(7, 10, 300)[::-1], (2, 0, 1)),
    "moveaxis": lambda xp, x: xp.moveaxis(x.reshape(7, 10, 300), 0, -1) - 1,
    "mT": lambda xp, x: x[::-1].mT * 2,
    "expand_dims": lambda xp, x: xp.expand_dims(x[0], axis=0) + x,
    "squeeze": lambda xp, x: xp.squeeze(x[:, 3:4], axis=1) * 2,
    "broadcast_arrays": lambda xp, x: xp.broadcast_arrays(x, x[-1, ::-1])[1] + x,
    "broadcast_to": lambda xp, x: xp.broadcast_to(x[:, :1], SHAPE) * x,
    "reshape view": lambda xp, x: xp.reshape(x, (300, 70)) + 1,
    "reshape of transposed (copy)": lambda xp, x: xp.reshape(x.T, (-1,))[::-7],
    "unstack": lambda xp, x: xp.unstack(x[:3], axis=0)[2] + xp.unstack(x.T, axis=1)[5],
    "concat axis 0": lambda xp, x: xp.concat([x, x[::-1] * 2, x[:5]], axis=0),
    "concat axis 1": lambda xp, x: xp.concat([x[:, ::-2], x.T[:150].T, x[:, :1]], axis=1),
    "concat flat": lambda xp, x: xp.concat([x[:3], x[5, ::-1]], axis=None),
    "concat mixed dtypes": lambda xp, x: xp.concat([x, xp.astype(x, xp.float64)]),
    "stack": lambda xp, x: xp.stack([x, x[::-1], x * 2], axis=1),
    "stack last": lambda xp, x: xp.stack([x[0], x[1]], axis=-1),
    "roll": lambda xp, x: xp.roll(x, 7, axis=1),
    "roll two axes": lambda xp, x: xp.roll(x[::-1], (3, -11), axis=(0, 1)),
    "roll flat": lambda xp, x: xp.roll(x, -13),
    "tile": lambda xp, x: xp.tile(x[:5, ::-7], (3, 2)),
    "tile more axes": lambda xp, x: xp.tile(x[0, :9], (2, 1, 3)),
    "repeat axis": lambda xp, x: xp.repeat(x[:4], 3, axis=1),
    "repeat flat": lambda xp, x: xp.repeat(x[:3, :5], 2),
    # counts per element: read on the host, a gather fused with its consumer
    "repeat counts": lambda xp, x: xp.repeat(x[::-1, ::-3], xp.asarray(np.arange(100) % 3),
                                             axis=1) * 2,
    "repeat counts flat": lambda xp, x: xp.repeat(x[:3, :4], [1, 0, 2] * 4),
    # sorted on the host (api/sorting.py), then consumed by a kernel
    "sort": lambda xp, x: xp.sort(x[::-1, ::2], axis=0) * 2,
    "argsort stable": lambda xp, x: xp.argsort(xp.round(x[:, ::-3]), axis=1, stable=True),
    "tril": lambda xp, x: xp.tril(x, k=3),
    "triu": lambda xp, x: xp.triu(x[::-1], k=-5) + 1,
    "tril batched": lambda xp, x: xp.tril(x.reshape(7, 10, 300)),
    "where": lambda xp, x: xp.where(x > 0, x, x[::-1] * 2),
    "clip bounds": lambda xp, x: xp.clip(x, -3, None),
    "round": lambda xp, x: xp.round(x * 0.5 + 0.25),
}


def check_case(name: str, dtype=np.float32) -> None:
    seed = zlib.crc32(f"{name} {np.dtype(dtype)}".encode())
    host = base(seed, dtype)
    want = np.asarray(CASES[name](np, host))
    got = CASES[name](fa, fa.asarray(host))
    assert isinstance(got, fa.ndarray), f"{name}: got {type(got).__name__}"
    got = got.get()
    label = f"{name} ({np.dtype(dtype)}, seed {seed})"
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != NumPy's {want.dtype}"
    np.testing.assert_array_equal(got, want, err_msg=label)


def check_view_writes(seed: int = 20261124) -> None:
    """Writes through the namespace's views land where NumPy's do."""
    host = base(seed)
    want, w = host.copy(), fa.asarray(host.copy())
    value = base(seed + 1)
    np.flip(want, axis=1)[...] = value * 2
    fa.flip(w, axis=1)[...] = fa.asarray(value) * 2
    np.moveaxis(want.reshape(7, 10, 300), 0, 2)[::2] += 1
    view = fa.moveaxis(w.reshape(7, 10, 300), 0, 2)
    view[::2] += 1
    fa.permute_dims(w, (1, 0))[::-3] = 5.0
    want.T[::-3] = 5.0
    np.testing.assert_array_equal(w.get(), want, err_msg=f"seed {seed}")
