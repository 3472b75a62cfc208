"""Quantiles: ``median percentile quantile nanmedian nanpercentile nanquantile`` as
``fa.<name>`` and ``np.<name>(x)`` on fa arrays, with NumPy's thirteen methods.

Where it sits: over :mod:`sorting` and :mod:`indexing`. The reduced axes are moved last and
merged, the rows sorted along them by ``fa.sort`` (NaN sorts last), and the rest is lazy fused
work: the two neighbours of each quantile's position gathered from the sorted rows and
interpolated (NumPy's ``_lerp``, the same two formulas on either side of 0.5), so a quantile
costs the sort plus one kernel. The plain forms know each row's length on the host, so the
positions are NumPy's own arithmetic there and the gathers take host-checked indices; a row
holding a NaN gives NaN (its last sorted element), as NumPy. The nan forms count each row's
non-NaNs (one reduction) and compute the positions from those counts on the device, so the
positions, the gathers and the interpolation are fused expressions of the counts; an all-NaN
row gathers its first element, NaN.

Methods: ``linear`` (default), ``inverted_cdf``, ``averaged_inverted_cdf``,
``closest_observation``, ``interpolated_inverted_cdf``, ``hazen``, ``weibull``,
``median_unbiased``, ``normal_unbiased``, ``lower``, ``higher``, ``midpoint``, ``nearest``;
their positions and weights are NumPy's (``numpy/lib/_function_base_impl.py``), and so are the
dtypes: a Python float ``q`` keeps a float array's dtype, a float64 array ``q`` gives float64,
integers give float64 (their discrete methods: the integers). Two of NumPy's nan-form quirks
are not copied: ``np.nanquantile`` along an axis takes the dtype of its first slice's result
(float32 for a float32 array whose first slice is all NaN, float64 otherwise, with a list
``q``), and puts a 2-d ``q``'s second axis after the kept ones; here ``q``'s shape comes first
and the dtype is ``np.quantile``'s, always. ``weights=`` and ``out=`` are refused, naming
what to do.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.array([[3.0, 1.0, 2.0, 4.0], [np.nan, 5.0, 7.0, 6.0]]))
>>> fa.quantile(x, 0.5, axis=1).get()
array([2.5, nan])
>>> fa.nanmedian(x, axis=1).get()
array([2.5, 6. ])
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..errors import DTypeError, UnsupportedOperationError
from ..ir import dtypes
from . import indexing, manipulation, sorting
from .array import _tracing, asarray, ndarray
from .elementwise import FUNCTIONS
from .reductions import _stat_dtypes, normalize_axes, reduce
from .refusals import refusal

_NO = np._NoValue
_where = FUNCTIONS["where"]

# method → (alpha, beta) of the continuous methods (Hyndman and Fan's parameters)
_CONTINUOUS = {"interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5),
               "weibull": (0.0, 0.0), "median_unbiased": (1 / 3, 1 / 3),
               "normal_unbiased": (3 / 8, 3 / 8)}
METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest")


# the elementwise functions the positions take, on fa arrays (the nan forms: counts on the device)
_FA = SimpleNamespace(floor=FUNCTIONS["floor"], ceil=FUNCTIONS["ceil"], rint=FUNCTIONS["rint"],
                      where=FUNCTIONS["where"])


def _positions(xp, method: str, n, q):
    """NumPy's position of quantile ``q`` in rows of ``n`` sorted values (``n`` a host int, or
    an fa array of counts in ``q``'s dtype; ``xp``: numpy or :data:`_FA`): ``("index", i)``
    where the method takes one element, else ``("virtual", v)``, a float position whose floor
    and floor + 1 are interpolated (:func:`_gamma`)."""
    floor, where = xp.floor, xp.where
    if method in ("lower", "higher", "nearest"):
        v = {"lower": floor, "higher": xp.ceil, "nearest": xp.rint}[method]((n - 1) * q)
        return "index", v.astype(np.int64)
    if method in ("inverted_cdf", "closest_observation"):
        v = n * q - 1 if method == "inverted_cdf" else n * q - 1 - 0.5
        below = floor(v)
        at = below == v
        if method == "closest_observation":     # the nearest even order statistic at g = 0
            at = at & (below % 2 == 1)
        index = where(at, below, below + 1).astype(np.int64)
        return "index", where(index < 0, 0, index)
    if method == "linear":
        v = (n - 1) * q
        if np.dtype(v.dtype).kind in "iu":   # integer q: the elements themselves
            return "index", v
        return "virtual", v
    if method == "averaged_inverted_cdf":
        return "virtual", n * q - 1
    if method == "midpoint":
        return "virtual", 0.5 * (floor((n - 1) * q) + xp.ceil((n - 1) * q))
    alpha, beta = _CONTINUOUS[method]
    return "virtual", n * q + (alpha + q * (1 - alpha - beta)) - 1


def _neighbours(xp, method: str, n, v):
    """``(below, above, gamma)``: the two elements' positions around virtual position ``v``
    in rows of ``n`` (NumPy's ``_get_indexes``: past the ends both are the end) and NumPy's
    weight of ``above``."""
    floor, where = xp.floor, xp.where
    below = floor(v)
    high, low = v >= n - 1, v < 0
    previous = where(high, -1, where(low, 0, below))    # NumPy's, for gamma
    g = v - previous
    if method == "averaged_inverted_cdf":
        g = where(g == 0, 0.5, 1.0)
    elif method == "midpoint":
        g = where(v % 1 == 0, 0.0, 0.5)
    g = g.astype(v.dtype)
    last = n - 1
    i = where(high, last, where(low, 0, below)).astype(np.int64)
    j = where(high, last, where(low, 0, below + 1)).astype(np.int64)
    return i, j, g


def _lerp(a: ndarray, b: ndarray, t) -> ndarray:
    """NumPy's ``_lerp``: ``a + (b - a) * t``, or ``b - (b - a) * (1 - t)`` from t = 0.5 on
    (each exact at its end); ``t`` an fa array or a Python float (NumPy's weak ``q``)."""
    d = b - a
    low = a + d * t
    if isinstance(t, float):
        return (b - d * (1 - t)).astype(low.dtype) if t >= 0.5 else low
    return _where(t >= 0.5, b - d * (1 - t), low).astype(low.dtype)


def _rows(name: str, a, axis) -> tuple[ndarray, tuple, tuple]:
    """``(rows sorted along their last axis (K, N), kept shape, keepdims shape)``: the
    reduced axes of ``a`` moved last and merged."""
    tracer = _tracing.tracer
    if tracer is not None:
        raise UnsupportedOperationError(
            f"np.{name} inside fa.fuse ({tracer.name} is being traced): a quantile sorts "
            "first (a library kernel, not fused); compute it outside the fused function and "
            "pass the result in as an argument")
    x = a if isinstance(a, ndarray) else asarray(a)
    if x.dtype.kind == "c":
        raise DTypeError(f"fa.{name} of {x.dtype}: a must be an array of real numbers (take "
                         "the quantiles of fa.real(x) and fa.imag(x) apart)")
    axes = normalize_axes(axis, x.ndim)
    keep = tuple(1 if k in axes else e for k, e in enumerate(x.shape))
    if x.ndim == 0:
        x, axes = x.reshape((1,)), (0,)
    kept = tuple(k for k in range(x.ndim) if k not in axes)
    shape = tuple(x.shape[k] for k in kept)
    n = math.prod(x.shape[k] for k in axes)
    if n == 0:
        raise ValueError(f"fa.{name}: no values to take quantiles of over axes {axes} of "
                         f"shape {x.shape}; pass a non-empty array")
    if kept + axes != tuple(range(x.ndim)):
        x = manipulation.permute_dims(x, kept + axes)
    rows = manipulation.reshape(x, (math.prod(shape), n))
    return sorting.sort(rows, axis=-1), shape, keep


def _finish(r: ndarray, qshape: tuple, shape: tuple, keep: tuple, keepdims) -> ndarray:
    """``r`` (m, K) as ``q``'s shape then the kept shape (or ``keep`` with keepdims)."""
    return r.reshape(qshape + (keep if keepdims is True else shape))


def _q(name: str, q, scale: float) -> tuple[np.ndarray, bool]:
    """``(q / scale as a NumPy array, whether q was a Python number)`` (NumPy's weak ``q``:
    a float array keeps its dtype); NumPy's range check."""
    weak = type(q) in (int, float)
    if isinstance(q, ndarray):
        q = q.get()         # a few numbers: the positions are computed from them on the host
    q = np.asarray(q)
    if scale != 1:
        q = np.true_divide(q, scale)
    if q.dtype.kind not in "biuf":
        raise DTypeError(f"fa.{name}: q must be real numbers, got {q.dtype}")
    if q.size and not (q.min() >= 0 and q.max() <= 1):
        what = "Percentiles must be in the range [0, 100]" if scale == 100 else \
            "Quantiles must be in the range [0, 1]"
        raise ValueError(f"{what} (fa.{name} got q={q.tolist() if q.size < 8 else '...'})")
    return q, weak


def _options(name: str, method: str, out, weights) -> None:
    if out is not None:
        raise refusal(f"fa.{name} with out=", f"assign the result: out[...] = fa.{name}(...)")
    if weights is not None:
        raise UnsupportedOperationError(
            f"fa.{name} with weights= is not supported (NumPy takes them with method="
            f"'inverted_cdf' only); call np.{name}(x.get(), q, weights=w.get(), "
            "method='inverted_cdf') on the host values")
    if method not in METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {METHODS} "
                         f"(fa.{name})")


def _result_t(gamma, weak: bool, dtype: np.dtype):
    """The interpolation weight as the lerp takes it: a Python float for NumPy's weak ``q``
    (a float array keeps its dtype), else an fa array of ``q``'s dtype, one row per q."""
    if isinstance(gamma, np.ndarray):
        if weak:
            return float(gamma.reshape(-1)[0])
        return asarray(gamma.reshape(-1, 1))
    # counts on the device: a weak q rounds to the array's float dtype as NumPy's scalar does
    return gamma.astype(dtype if dtype.kind == "f" else np.float64) if weak else gamma


def _quantile(name: str, a, q, axis, method: str, keepdims, skip_nan: bool) -> ndarray:
    """The quantiles ``q`` (a NumPy array; ``q.ndim`` leading axes) of ``a`` over ``axis``;
    of a bfloat16 or float8 ``a`` (whatever ``q``'s dtype), its float32 values' quantiles
    rounded once to its dtype (a lerp in the format would round three times)."""
    x = a if isinstance(a, ndarray) else asarray(a)
    if dtypes.is_minifloat(x.dtype):
        return _quantile(name, x.astype(np.float32), q, axis, method, keepdims,
                         skip_nan).astype(x.dtype)
    q, weak = q
    s, shape, keep = _rows(name, a, axis)
    rows, n = s.shape
    if skip_nan and dtypes.kind(s.dtype) == "f":   # shaped as the result from the start
        target = keep if keepdims is True else shape
        return _nan_quantile(s, q.reshape(q.shape + (1,) * len(target)), target, method, weak)
    qf = q.reshape(-1, 1) if q.ndim else q.reshape(1, 1)
    kind, found = _positions(np, method, n, qf[:, 0])
    if kind == "index":
        r = indexing.take(s, found, axis=1).T
    else:
        i, j, g = _neighbours(np, method, n, found)
        r = _lerp(indexing.take(s, i, axis=1).T, indexing.take(s, j, axis=1).T,
                  _result_t(g, weak, s.dtype))
    if dtypes.kind(s.dtype) == "f":     # a row holding NaN gives NaN, as NumPy (NaN sorts last)
        last = s[:, -1]
        r = _where(FUNCTIONS["isnan"](last), last, r).astype(r.dtype)
    return _finish(r, q.shape, shape, keep, keepdims)


def _gathered(s: ndarray, index: ndarray, count: ndarray) -> ndarray:
    """``s[k, index[..., k]]`` for each row k (``index`` and ``count`` over the rows shaped as
    the result, ``count.shape``), ``index`` clamped into the row's ``count`` values
    ([0, count - 1]; 0 where count is 0: the row's first element, NaN)."""
    rows, n = s.shape
    index = _where(index > count - 1, count - 1, index)
    index = _where(index < 0, 0, index)
    base = asarray(np.arange(rows, dtype=np.int64).reshape(count.shape) * n)
    return indexing.take(s.reshape(-1), (index + base).astype(np.int64))


def _count(s: ndarray, target: tuple) -> ndarray:
    """Each sorted row's non-NaN values (NaN sorts last), shaped ``target`` (the result's
    shape past q's): a pending reduction over the sorted rows seen as ``target + (n,)``, so
    nothing after it is a view of it (which would compute it)."""
    rows = s.reshape(target + (s.shape[1],))
    return reduce("sum", FUNCTIONS["logical_not"](FUNCTIONS["isnan"](rows)), -1)


def _nan_quantile(s: ndarray, q: np.ndarray, target: tuple, method: str,
                  weak: bool) -> ndarray:
    """nanquantile's result (``q.shape`` then ``target``): positions from each row's count,
    on the device, fused with the gathers and the interpolation."""
    count = _count(s, target)
    pdtype = q.dtype if q.dtype.kind == "f" else np.dtype(np.float64)
    integral = method == "linear" and q.dtype.kind in "biu"
    n = count if integral else count.astype(pdtype)
    kind, found = _positions(_FA, method, n, asarray(q if integral else q.astype(pdtype)))
    if kind == "index":
        return _gathered(s, found, count)
    i, j, g = _neighbours(_FA, method, n, found)
    return _lerp(_gathered(s, i, count), _gathered(s, j, count), _result_t(g, weak, s.dtype))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """The ``q``-th quantiles (``q`` in [0, 1]: a number, a list or an array; its shape comes
    first) of ``a`` over ``axis`` (``np.quantile``: the same methods, dtypes and values; a
    slice holding NaN gives NaN). ``overwrite_input`` is accepted and changes nothing."""
    _options("quantile", method, out, weights)
    return _quantile("quantile", a, _q("quantile", q, 1), axis, method, keepdims, False)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """The ``q``-th percentiles (``q`` in [0, 100]) of ``a`` over ``axis``
    (``np.percentile``)."""
    _options("percentile", method, out, weights)
    return _quantile("percentile", a, _q("percentile", q, 100), axis, method, keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=_NO, *, weights=None):
    """``np.nanquantile``: the quantiles of the non-NaN values of each slice (NaN where all
    are NaN)."""
    _options("nanquantile", method, out, weights)
    return _quantile("nanquantile", a, _q("nanquantile", q, 1), axis, method,
                     keepdims is True, True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=_NO, *, weights=None):
    """``np.nanpercentile``: the percentiles of the non-NaN values of each slice."""
    _options("nanpercentile", method, out, weights)
    return _quantile("nanpercentile", a, _q("nanpercentile", q, 100), axis, method,
                     keepdims is True, True)


def _median(name: str, a, axis, out, keepdims, skip_nan: bool) -> ndarray:
    """The mean of the one or two middle values of each slice (NumPy's median: integers give
    float64, float16 is averaged in float32)."""
    _options(name, "linear", out, None)
    s, shape, keep = _rows(name, a, axis)
    rows, n = s.shape
    compute, want = _stat_dtypes(s, None)
    if skip_nan and dtypes.kind(s.dtype) == "f":   # shaped as the result from the start
        count = _count(s, keep if keepdims is True else shape)
        half = FUNCTIONS["floor_divide"]
        i, j = half(count - 1, 2), half(count, 2)
        mid = _gathered(s, i, count).astype(compute)
        r = _where(i == j, mid, (mid + _gathered(s, j, count).astype(compute)) / 2)
        return r.astype(want)
    mid = s[:, (n - 1) // 2].astype(compute)
    r = mid if n % 2 else (mid + s[:, n // 2].astype(compute)) / 2
    if dtypes.kind(s.dtype) == "f":
        last = s[:, -1]
        r = _where(FUNCTIONS["isnan"](last), last if last.dtype == r.dtype else
                   last.astype(r.dtype), r)
    return _finish(r.astype(want).reshape((1, rows)), (), shape, keep, keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over ``axis`` (``np.median``; a slice holding NaN gives NaN)."""
    return _median("median", a, axis, out, keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=_NO):
    """The median of the non-NaN values over ``axis`` (``np.nanmedian``; NaN where all are
    NaN)."""
    return _median("nanmedian", a, axis, out, keepdims is True, True)


FUNCTIONS_QUANTILE = {f.__name__: f for f in (
    median, percentile, quantile, nanmedian, nanpercentile, nanquantile)}
