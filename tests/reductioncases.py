"""Reductions against NumPy, shared by the cpu, sim and gpu tiers: fresh random data from fixed
seeds (printed on failure), every reduction of ``ir/reductions.py`` × dtype × axis × layout
(transposed, negative steps, broadcast), dtypes compared exactly and values exactly for
integers and booleans, within a bound scaled by the summed magnitudes for floats."""

from __future__ import annotations

import zlib

import numpy as np

import fusedarrays as fa
from fusedarrays.ir.reductions import REDUCTIONS

DTYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64")]
# one of each kind and width class: the dtypes every reduction is run over
SOME_DTYPES = [np.dtype(t) for t in ("bool", "int8", "int32", "uint16", "uint64", "float16",
                                     "float32", "float64")]
RTOL = {"f": {2: 4e-3, 4: 2e-6, 8: 1e-14}}


def _views(xp, base, shape):
    """Layout name → the view of ``base`` (1-D, 2 * prod(shape) elements) it names."""
    a, b, c = shape
    return {
        "contiguous": base[: a * b * c].reshape(shape),
        "transposed": base[: a * b * c].reshape(c, b, a).transpose(2, 1, 0),
        "negative": base.reshape(a, b, 2 * c)[::-1, :, ::-2],
        "broadcast": xp.broadcast_to(base[: b * c].reshape(1, b, c), shape),
    }


def layouts(rng, dtype, shape, name="sum"):
    """(layout, NumPy view, fusedarrays view) of fresh data for each layout."""
    base = sample(rng, dtype, 2 * int(np.prod(shape)), name)
    fbase = fa.asarray(base)
    return [(k, v, _views(fa, fbase, shape)[k]) for k, v in _views(np, base, shape).items()]


def sample(rng, dtype, n, name="sum"):
    if dtype.kind == "b":
        # any/all see both answers: some rows all true
        return rng.random(n) < (0.97 if name in ("all", "any") else 0.5)
    if dtype.kind == "f":
        if name == "prod":
            return rng.uniform(0.8, 1.25, n).astype(dtype)
        values = rng.standard_normal(n) * 4
        values[rng.integers(0, n, 2)] = rng.choice([0.0, -0.0, 1.5], 2)
        return values.astype(dtype)
    if name == "prod":
        return rng.integers(1 if dtype.kind == "u" else -3, 4, n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(
        dtype)


def numpy_call(name, x, axis, keepdims, **kw):
    return getattr(np, name)(x, axis=axis, keepdims=keepdims, **kw)


def check(got, want, x_np, what: str) -> None:
    """``got`` (NumPy values of a fusedarrays result) against NumPy's ``want``."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    scale = np.nansum(np.abs(np.asarray(x_np, np.float64))) + 1
    rtol = RTOL["f"][want.dtype.itemsize]
    if want.dtype == np.float16:    # the result itself is rounded to float16
        scale = max(scale, 1.0)
    bound = rtol * scale + rtol * np.abs(want.astype(np.float64))
    with np.errstate(invalid="ignore"):     # inf - inf where both overflowed alike
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    same_nan = np.isnan(got) == np.isnan(want)
    assert same_nan.all(), f"{what}: NaN where NumPy has none (or the reverse)"
    ok = np.isnan(want) | (diff <= bound) | (got == want)
    assert ok.all(), f"{what}: max difference {np.nanmax(diff)}, bound {np.min(bound)}"


def seed_of(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def check_reduction_over_dtypes(name: str, dtypes, shape=(6, 5, 4), axis=1,
                                layout="negative", keepdims=False) -> None:
    """``fa.<name>`` of each dtype through ``layout`` against NumPy."""
    for dtype in dtypes:
        seed = seed_of(name, dtype.str, shape, axis, layout)
        rng = np.random.default_rng(seed)
        for kind, x_np, x_fa in layouts(rng, dtype, shape, name):
            if kind != layout:
                continue
            what = f"fa.{name} {dtype} {layout} {shape} axis={axis} (seed {seed})"
            got = getattr(fa, name)(x_fa, axis=axis, keepdims=keepdims).get()
            check(got, numpy_call(name, x_np, axis, keepdims), x_np, what)


AXES = [None, 0, -1, (0, 2), 1]


def check_axes_and_layouts(names, dtype=np.float32, shape=(6, 5, 4)) -> None:
    """Each reduction of ``names`` over every axis choice and layout, keepdims both ways."""
    dtype = np.dtype(dtype)
    for name in names:
        for axis in AXES:
            if REDUCTIONS[name].arg and isinstance(axis, tuple):
                continue
            seed = seed_of(name, axis, shape, "layouts")
            rng = np.random.default_rng(seed)
            for kind, x_np, x_fa in layouts(rng, dtype, shape, name):
                keepdims = kind in ("transposed", "broadcast")
                what = f"fa.{name} {dtype} {kind} {shape} axis={axis} keepdims={keepdims} " \
                       f"(seed {seed})"
                got = getattr(fa, name)(x_fa, axis=axis, keepdims=keepdims).get()
                check(got, numpy_call(name, x_np, axis, keepdims), x_np, what)


def row_kernel_cases(rng, rows: int = 3):
    """Softmax, a layer norm and a row-constant operand over rows that reach each row-kernel
    walk: 16-byte vectors (rows of 200 float32 or 256 float16, read forward or with the rows
    reversed) and element by element (an odd row length, a row read backwards, a row starting
    one element in). Yields ``(what, host inputs, fn)``, ``fn(xp, x, w, b, c)`` the expression
    over the view of ``x`` (a ``(rows, length + 16 bytes)`` array: its rows start 16-byte
    aligned) the case names."""
    expressions = {
        "softmax": lambda m, x, w, b, c: _softmax(m, x),
        "layer norm": lambda m, x, w, b, c: _layer_norm(m, x, w[:x.shape[1]], b[:x.shape[1]]),
        # c[:, None] is read once per row, beside the row's max and sum
        "row constant": lambda m, x, w, b, c: ((x - x.max(axis=-1, keepdims=True)) * c[:, None]
                                               + x.sum(axis=-1, keepdims=True)),
    }
    for dtype, length in [(np.float32, 200), (np.float32, 201), (np.float16, 256)]:
        pad = 16 // np.dtype(dtype).itemsize
        inputs = (rng.standard_normal((rows, length + pad)).astype(dtype),
                  *(rng.standard_normal(length + pad).astype(dtype) for _ in range(2)),
                  rng.standard_normal(rows).astype(dtype))
        views = {"whole rows": lambda x, n=length: x[:, :n],
                 "rows reversed": lambda x, n=length: x[::-1, :n],
                 "elements reversed": lambda x, n=length: x[:, n - 1::-1],
                 "one element in": lambda x: x[:, 1:]}
        for view_name, view in views.items():
            for name, expr in expressions.items():
                what = f"{name}, {np.dtype(dtype).name} rows of {length}, {view_name}"
                yield what, inputs, (lambda m, x, w, b, c, e=expr, v=view: e(m, v(x), w, b, c))


def _softmax(m, x):
    e = m.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm(m, x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / m.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5) * w + b


def check_row_kernels(seed: int, rows: int) -> set:
    """Every :func:`row_kernel_cases` case against NumPy (computed in float64, rounded to the
    input's dtype); one kernel each. Returns the vector widths the kernels took."""
    rng = np.random.default_rng(seed)
    widths = set()
    for what, inputs, fn in row_kernel_cases(rng, rows):
        got = fn(fa, *[fa.asarray(a) for a in inputs])
        explanation = fa.explain(got)
        assert explanation.launches == 1, what
        widths.add(explanation.kernels[0][0].vector_width)
        want = fn(np, *[a.astype(np.float64) for a in inputs]).astype(inputs[0].dtype)
        check(got.get(), want, inputs[0], f"{what} (seed {seed})")
    return widths


def fixed_order_sum(x, plan, threads: int, cpu: bool = False):
    """The float32 sum of 1-D ``x`` in the exact order a split full sum of ``plan`` (a
    ``ReducePlan``, one output) folds it in (``compiler/reduction_codegen.py``), computed with
    NumPy: each part's elements (cpu and ``cols``: in order; ``rows``: ``threads`` threads
    interleaved by vectors of ``plan.vector_width`` elements, then the block's tree), then the
    partials (in order; 128 and more on a GPU schedule: interleaved, then the tree). On cpu
    the accumulators are float64, each partial rounded to float32 when stored. ``x`` must hold
    no -0.0: parts are padded with +0.0."""
    parts, chunk = plan.split, plan.chunk
    padded = np.zeros(parts * chunk, np.float32)
    padded[:x.size] = x
    by_part = padded.reshape(parts, chunk)
    if cpu:
        partials = np.add.accumulate(by_part.astype(np.float64), axis=1)[:, -1].astype(np.float32)
        return np.float32(np.add.accumulate(partials.astype(np.float64))[-1])

    def block(values, width, lanes=1):
        # rows of values, each folded by `width` threads, then the tree: thread t folds vectors
        # (of `lanes` elements, each in order) t, t + width, ...
        group = width * lanes
        steps = -(-values.shape[1] // group)
        padded = np.zeros((values.shape[0], steps * group), np.float32)
        padded[:, :values.shape[1]] = values
        order = padded.reshape(values.shape[0], steps, width, lanes).transpose(0, 1, 3, 2)
        acc = np.add.accumulate(order.reshape(values.shape[0], steps * lanes, width),
                                axis=1)[:, -1]
        while width > 1:
            width //= 2
            acc = acc[:, :width] + acc[:, width:2 * width]
        return acc[:, 0]

    if plan.schedule == "rows":
        partials = block(by_part, threads, plan.vector_width)
    else:
        partials = np.add.accumulate(by_part, axis=1)[:, -1]
    if parts >= 128:
        return block(partials[None, :], threads)[0]
    return np.add.accumulate(partials)[-1]
