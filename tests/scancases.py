"""Scans (cumulative sums and products) against NumPy, shared by the cpu, sim and gpu tiers:
fresh random data from fixed seeds (printed on failure), every scan of ``ir/scans.py`` × dtype
× axis × layout (contiguous, transposed, negative steps, broadcast), dtypes compared exactly,
values exactly for integers and, for floats, within a bound scaled by the running magnitude
(the classical bound of a sequential sum, which NumPy's own loop meets)."""

from __future__ import annotations

import numpy as np
import reductioncases as rc

import fusedarrays as fa
from fusedarrays.ir.scans import SCANS

DTYPES, SOME_DTYPES, seed_of = rc.DTYPES, rc.SOME_DTYPES, rc.seed_of
NAMES = list(SCANS)


def _views(xp, base, shape):
    """Layout name → the view of ``base`` (1-D, 2 * prod(shape) elements) it names: any rank,
    the transpose reversing every axis, negative steps on every axis (-2 on the last)."""
    n, rank = int(np.prod(shape)), len(shape)
    steps = (slice(None, None, -1),) * (rank - 1) + (slice(None, None, -2),)
    return {
        "contiguous": base[:n].reshape(shape),
        "transposed": xp.permute_dims(base[:n].reshape(shape[::-1]), tuple(range(rank))[::-1]),
        "negative": base.reshape(shape[:-1] + (2 * shape[-1],))[steps],
        "broadcast": xp.broadcast_to(base[:int(np.prod(shape[1:]))].reshape((1,) + shape[1:]),
                                     shape),
    }


def layouts(rng, dtype, shape, name):
    """(layout, NumPy view, fusedarrays view) of fresh data (the sample of the scan's
    reduction: ``reductioncases.sample``, products of values near 1)."""
    shape = tuple(shape)
    base = rc.sample(rng, np.dtype(dtype), 2 * int(np.prod(shape)), SCANS[name].reduction)
    fbase = fa.asarray(base)
    return [(k, v, _views(fa, fbase, shape)[k]) for k, v in _views(np, base, shape).items()]


def numpy_scan(name, x, axis, dtype=None, include_initial=False):
    """NumPy's result; float16 as fusedarrays computes it (float32 running values, each result
    rounded once: NumPy rounds the running value at every step), in NumPy's dtype."""
    function = getattr(np, name)
    if np.asarray(x).dtype == np.float16 and dtype is None:
        wide = function(np.asarray(x, np.float32), axis=axis, include_initial=include_initial)
        return wide.astype(np.float16)
    return function(x, axis=axis, dtype=dtype, include_initial=include_initial)


def check(got, want, x_np, axis, name, what: str, include_initial=False) -> None:
    """``got`` (NumPy values of a fusedarrays scan) against ``want`` (NumPy's) of ``x_np``."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    x64 = np.asarray(x_np, np.float64)
    if x64.ndim == 0:
        x64 = x64.reshape(1)
    length = x64.shape[axis]
    with np.errstate(all="ignore"):
        if SCANS[name].reduction == "sum":
            scale = np.cumulative_sum(np.abs(x64), axis=axis, include_initial=include_initial)
        else:
            scale = np.abs(np.cumulative_prod(x64, axis=axis, include_initial=include_initial))
        eps = float(np.finfo(np.float32 if want.dtype == np.float16 else want.dtype).eps)
        bound = eps * (length + 2) * scale + float(np.finfo(want.dtype).eps) * np.abs(
            want.astype(np.float64))
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    same_nan = np.isnan(got) == np.isnan(want)
    assert same_nan.all(), f"{what}: NaN where NumPy has none (or the reverse)"
    ok = np.isnan(want) | (diff <= bound) | (got == want)
    assert ok.all(), f"{what}: max difference {np.nanmax(diff)} at {np.argwhere(~ok)[0]}"


def check_scan(name, x_np, x_fa, axis, what, dtype=None, include_initial=False) -> None:
    got = getattr(fa, name)(x_fa, axis=axis, dtype=dtype, include_initial=include_initial)
    want = numpy_scan(name, x_np, axis, dtype, include_initial)
    check(got.get(), want, x_np, axis, name, what, include_initial)


def check_over_dtypes(name, dtypes, shape=(6, 5, 4), axis=1, layout="negative",
                      include_initial=False) -> None:
    """``fa.<name>`` of each dtype through ``layout`` against NumPy."""
    for dtype in dtypes:
        seed = seed_of("scan", name, dtype.str, shape, axis, layout)
        rng = np.random.default_rng(seed)
        for kind, x_np, x_fa in layouts(rng, dtype, shape, name):
            if kind == layout:
                check_scan(name, x_np, x_fa, axis, f"fa.{name} {dtype} {layout} {shape} "
                           f"axis={axis} (seed {seed})", include_initial=include_initial)


def check_axes_and_layouts(names=NAMES, dtype=np.float32, shape=(6, 5, 4)) -> None:
    """Each scan of ``names`` along every axis (negative too) and through every layout,
    ``include_initial`` both ways."""
    dtype = np.dtype(dtype)
    for name in names:
        for axis in range(-len(shape), len(shape)):
            seed = seed_of("scan", name, axis, shape, "layouts")
            rng = np.random.default_rng(seed)
            for kind, x_np, x_fa in layouts(rng, dtype, shape, name):
                initial = kind in ("transposed", "broadcast")
                check_scan(name, x_np, x_fa, axis, f"fa.{name} {dtype} {kind} {shape} "
                           f"axis={axis} include_initial={initial} (seed {seed})",
                           include_initial=initial)
