"""Gathers and scatters whose index is a pending node (a reduction, a scan, a product, another
gather), checked against NumPy by the cpu and sim tiers: the planner cuts the index into a
temporary before the gather that reads it (``compiler/cuts.py``). Each case returns the
schedules its kernels took, so a tier can check that its shapes reach the ones it means to."""

import numpy as np

import fusedarrays as fa


def _indices(x, xn, extent: int):
    """(name, pending fa index, NumPy's index) pairs over ``x`` (2-D), values in
    ``[-extent, extent)``: every kind of node that can feed an index."""
    ones = np.ones(xn.shape[1], np.int64)
    return [
        ("argmax rows", fa.argmax(x, axis=1) % extent, np.argmax(xn, axis=1) % extent),
        ("argmin cols", fa.argmin(x, axis=0) % extent, np.argmin(xn, axis=0) % extent),
        ("sum of a mask", fa.sum(x > 0.5, axis=1) % extent - extent // 2,
         np.sum(xn > 0.5, axis=1) % extent - extent // 2),
        ("float sum as int", fa.sum(x, axis=1).astype(int) % extent,
         np.sum(xn, axis=1).astype(int) % extent),
        ("cumsum of a mask", fa.cumsum(x[0] > 0.5) % extent, np.cumsum(xn[0] > 0.5) % extent),
        ("matmul", ((x > 0.5).astype(np.int64) @ fa.asarray(ones)) % extent,
         ((xn > 0.5).astype(np.int64) @ ones) % extent),
        ("gather of a gather", fa.asarray(np.arange(extent))[fa.argmax(x, axis=1) % extent],
         np.arange(extent)[np.argmax(xn, axis=1) % extent]),
        ("argsort", fa.argsort(x[:, 0]) % extent, np.argsort(xn[:, 0]) % extent),
    ]


def _schedules(result) -> set:
    explained = fa.explain(result)
    steps = getattr(explained, "program", None)
    plans = [s.plan for s in steps.steps] if steps is not None else [explained.plan]
    return {getattr(p, "schedule", type(p).__name__) for p in plans}


def _check(got, want, msg: str, reached: set) -> None:
    reached |= _schedules(got)
    got = got.get()
    assert got.dtype == want.dtype, f"{msg}: {got.dtype} != {want.dtype}"
    np.testing.assert_array_equal(got, want, err_msg=msg)


def gathers_match_numpy(seed: int, shape: tuple, dtype=np.float64) -> set:
    """Every route that makes a gather (``t[idx]``, ``fa.take`` on each axis, ``x[idx]`` and
    ``x[:, idx]`` of a view with a negative step, ``x[i, j]``, ``take_along_axis``) with every
    pending index of :func:`_indices`."""
    rng = np.random.default_rng(seed)
    xn = rng.random(shape)
    tn = (rng.standard_normal(shape[::-1]) * 50).astype(dtype)
    x, t = fa.asarray(xn), fa.asarray(tn)
    tv, tvn = t[::-1], tn[::-1]           # a view with a negative step as the gathered array
    reached: set = set()
    for name, idx, want in _indices(x, xn, min(shape)):
        msg = f"{seed=} {shape=} {dtype=} index: {name}"
        _check(t.ravel()[idx], tn.ravel()[want], msg + " t[idx]", reached)
        _check(fa.take(tv, idx, axis=1), np.take(tvn, want, axis=1), msg + " take 1", reached)
        _check(tv[idx], tvn[want], msg + " x[idx]", reached)
        _check(t.T[:, idx] * 2, tn.T[:, want] * 2, msg + " x[:, idx]", reached)
        _check(t[idx, idx[::-1]], tn[want, want[::-1]], msg + " x[i, j]", reached)
        _check(t[idx[:, None], idx[None, ::2]], tn[want[:, None], want[None, ::2]],
               msg + " x[i[:, None], j[None, :]]", reached)
    idx = fa.argmax(x, axis=1, keepdims=True) % shape[0]
    want = np.argmax(xn, axis=1, keepdims=True) % shape[0]
    _check(fa.take_along_axis(t.T, idx, axis=1), np.take_along_axis(tn.T, want, axis=1),
           f"{seed=} take_along_axis", reached)
    return reached


def tiled_consumer_matches_numpy(seed: int, shape: tuple) -> set:
    """A gather through an argmax, added to a transposed operand: the elementwise kernel after
    the cut walks tiles."""
    rng = np.random.default_rng(seed)
    xn, yn = rng.random(shape), rng.random((shape[1], shape[1]))
    x, y = fa.asarray(xn), fa.asarray(yn)
    reached: set = set()
    _check(x[fa.argmax(x, axis=0)] + y.T, xn[np.argmax(xn, axis=0)] + yn.T,
           f"{seed=} {shape=} x[argmax] + y.T", reached)
    return reached


def scatters_match_numpy(seed: int, shape: tuple) -> None:
    """Writes through a pending index: ``y[idx] = v``, ``y[idx] += v``, ``fa.add.at``."""
    rng = np.random.default_rng(seed)
    xn, yn = rng.random(shape), rng.standard_normal(shape[::-1])
    x = fa.asarray(xn)
    idx, want = fa.argmax(x, axis=1) % shape[1], np.argmax(xn, axis=1) % shape[1]
    vn = rng.standard_normal(shape[0])
    for how in ("set", "iadd", "add.at"):
        y, expect = fa.asarray(yn.copy()), yn.copy()
        if how == "set":
            y[idx] = fa.asarray(vn)[:, None]
            expect[want] = vn[:, None]
        elif how == "iadd":
            y[idx] += 1.5
            expect[want] += 1.5
        else:
            fa.add.at(y, idx, fa.asarray(vn)[:, None])
            np.add.at(expect, want, vn[:, None])
        np.testing.assert_allclose(y.get(), expect, rtol=1e-12, err_msg=f"{seed=} {how}")
