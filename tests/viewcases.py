"""Views read and written, at every schedule and vector path, against NumPy: shared by the cpu, sim
and gpu tiers.

A case takes one random base array (NumPy and fusedarrays copies of the same values), builds an
expression from views of it (negative and positive steps on each axis, transposes of 2-D and 3-D
arrays, broadcasts, offset views) or writes through a view, and compares with NumPy exactly: every
sum adds a product only when the product is exact (times 2), so a fused multiply-add on the GPU
rounds as NumPy does. The sizes decide the schedule: short
rows and rank 3 take ``nd``, rows of 128 or more ``rows`` (``tiled`` when an operand is transposed
and there are 64 rows or more), 1-D walks ``flat``; aligned contiguous float32/int32 operands take
4-lane and float16 8-lane accesses. :func:`check_views` returns the schedules and vector widths it
reached, so a tier can assert that its sizes reach them all.
"""

from __future__ import annotations

import zlib

import numpy as np

import fusedarrays as fa

DTYPES = [np.dtype(t) for t in ("float32", "float16", "int32", "float64")]

# Expressions over views of one 2-D base ``x`` (NumPy or fusedarrays: the same code builds both).
READS = {
    "rows reversed": lambda x: x[::-1] + x,
    "columns reversed": lambda x: x[:, ::-1] * 2 + x,
    "both reversed": lambda x: x[::-1, ::-1] - x,
    "steps": lambda x: x[::-2, 1::3] * 3,
    "negative steps": lambda x: x[-1::-3, ::-2] + x[::3, ::2],
    "transposed": lambda x: x.T + 1,
    "transposed reversed": lambda x: x.T[::-1] * x.T[:, ::-1],
    "reversed transposed": lambda x: x[::-1].T - x[:, ::-1].T,
    "row broadcast": lambda x: x + x[0],
    "column broadcast": lambda x: x * x[:, 1:2],
    "row broadcast reversed": lambda x: x[::-1] + x[-1, ::-1],
    "flat": lambda x: x.reshape(-1) * 2 + x.reshape(-1),
    "flat reversed": lambda x: x.reshape(-1)[::-1] + x.reshape(-1),
    "flat offset": lambda x: x.reshape(-1)[1:] * x.reshape(-1)[:-1],
    "flat steps": lambda x: x.reshape(-1)[::-3] - 1,
    "view read": lambda x: x[::-1, ::2],
}
# Views of a 3-D base: transposes and steps (rank 3 walks coordinates by division).
READS_3D = {
    "transpose 2,0,1": lambda y: y.transpose(2, 0, 1) + 1,
    "transpose 1,0,2": lambda y: y.transpose(1, 0, 2) * y.transpose(1, 0, 2)[::-1],
    "3-D steps": lambda y: y[::-1, :, ::-2] - y[:, ::-1, ::2],
    "3-D broadcast": lambda y: y + y[:, :1, :],
}
# Writes through views of a destination ``w`` (the value built from the base ``x``).
WRITES = {
    "rows reversed =": lambda w, x: w.__setitem__(np.s_[::-1], x * 2),
    "columns reversed +=": lambda w, x: _iadd(w, np.s_[:, ::-1], x),
    "steps =": lambda w, x: w.__setitem__(np.s_[::2, ::-3], x[::2, ::-3] + 1),
    "reversed rows +=": lambda w, x: _iadd(w, np.s_[::-1], x[::-1] * 2),
    "transposed =": lambda w, x: w.T.__setitem__(np.s_[::-1], x.T[::-1] * 2),
    "transposed +=": lambda w, x: _iadd(w.T, np.s_[:, ::-1], x.T),
    "row broadcast =": lambda w, x: w.__setitem__(np.s_[1::2], x[0]),
}


def _iadd(w, key, value):
    """``w[key] += value``, spelled out as Python runs it."""
    view = w[key]
    view += value
    w[key] = view


def _seed(label: str) -> int:
    return zlib.crc32(label.encode())


def _base(shape, dtype: np.dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 4).round(1).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def _compare(got, want, label: str, seed: int) -> None:
    assert got.dtype == want.dtype, f"{label} (seed {seed}): dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{label} (seed {seed}): shape {got.shape} != {want.shape}"
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want) if want.dtype.kind == "f" else False))
    assert not bad.any(), (f"{label} (seed {seed}): {int(bad.sum())} of {bad.size} elements "
                           f"differ from NumPy, first at {np.argwhere(bad)[0].tolist()}: got "
                           f"{got[bad][:3]}, NumPy {want[bad][:3]}")


def check_views(shape: tuple[int, int], dtype) -> set[tuple[str, int]]:
    """Every read and write case on a base of ``shape`` and ``dtype`` (and the 3-D cases on a
    base of the same size), against NumPy; returns the (schedule, vector width) pairs reached."""
    dtype = np.dtype(dtype)
    reached = set()
    for name, build in READS.items():
        label = f"{name} of {shape} {dtype}"
        seed = _seed(label)
        host = _base(shape, dtype, seed)
        expr = build(fa.asarray(host))
        want = build(host)
        if expr.pending:
            plan = fa.explain(expr).plan
            reached.add((plan.schedule, plan.vector_width))
        # np.asarray evaluates the pending expression (the same kernel .get() would launch, run
        # once: each thread of the simulator is Python); .get() then reads it back
        _compare(np.asarray(expr), want, label + " via np.asarray", seed)
        _compare(expr.get(), want, label, seed)
    rank3 = (2, shape[0] // 2, shape[1]) if shape[0] % 2 == 0 else (1,) + tuple(shape)
    for name, build in READS_3D.items():
        label = f"{name} of {rank3} {dtype}"
        seed = _seed(label)
        host = _base(rank3, dtype, seed)
        expr = build(fa.asarray(host))
        reached.add((fa.explain(expr).plan.schedule, fa.explain(expr).plan.vector_width))
        _compare(expr.get(), build(host), label, seed)
    for name, write in WRITES.items():
        label = f"{name} into {shape} {dtype}"
        seed = _seed(label)
        host, dest = _base(shape, dtype, seed), _base(shape, dtype, seed + 1)
        w = fa.asarray(dest)
        write(w, fa.asarray(host))
        write(dest, host)
        _compare(w.get(), dest, label, seed)
    return reached
