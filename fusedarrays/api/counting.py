"""Counting into bins: NumPy's ``bincount`` and ``histogram`` on fa arrays (``np.bincount(x)``,
``fa.bincount(x)``), with NumPy's arguments and result dtypes.

Where it sits: beside :mod:`.sorting`, over :mod:`.libraries`; ``npfunctions.IMPLEMENTED``
dispatches NumPy's functions here. **Not fused**: the backend's array library counts, on
fusedarrays' memory without a copy (CuPy's ``bincount`` and ``histogram``, CUB's histogram
where CuPy uses it, on cuda; NumPy's on the host backends); pending operands are computed
first and the results are arrays later fused work reads.

- **Result sizes read the data.** ``bincount``'s length is the largest value plus one: CuPy
  reads it (and checks for negative values) from the device, each one scalar. ``histogram``
  with a number of bins and no ``range`` reads the minimum and maximum (one transfer of two
  values) and NumPy computes the edges on the host from them, so the edges are NumPy's to the
  bit; then the device counts.
- **NaN never counts** in NumPy's histogram. CuPy's histogram kernel without CUB (weighted, or
  with ``CUPY_ACCELERATORS`` unset) puts NaN into the first bin, so where a float NaN could
  reach the count (a given ``range`` or edges) it is counted with weight 0 (``where(isnan(a),
  0, w)``; unweighted: the weights ``~isnan(a)``).
- **dtypes**: counts int64; weighted ``bincount`` float64; a weighted ``histogram`` has the
  weights' dtype (CuPy sums in float64 and the result is cast, as NumPy's ``bincount`` route
  does); ``density`` float64. bfloat16 and float8 are counted as their float32 values (exact;
  NumPy's own histogram of them fails): edges float32, a weighted histogram in the weights'
  dtype, as ever.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes
from .array import asarray, ndarray
from .elementwise import FUNCTIONS
from .libraries import adopt, borrowed, library
from .manipulation import stack
from .reductions import FUNCTIONS_REDUCING
from .refusals import refusal


def bincount(x, /, weights=None, minlength=0) -> ndarray:
    """How often each value ``0 … max(x)`` occurs in the 1-d non-negative integer ``x`` (int64),
    or the sum of ``weights`` at each (float64); at least ``minlength`` bins.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.bincount(fa.asarray(np.array([0, 2, 2]))).get().tolist()
    [1, 0, 2]
    """
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError(f"bincount: x must be 1-d, got {x.ndim}-d; pass x.reshape(-1)")
    if x.dtype.kind not in "biu":
        raise DTypeError(f"bincount: x must hold non-negative integers, got {x.dtype}; cast "
                         "it first: x.astype(np.int64)")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    operands = [x]
    if weights is not None:
        w = asarray(weights)
        if w.shape != x.shape:
            raise ValueError(f"bincount: weights of shape {w.shape} for x of shape {x.shape}; "
                             "give one weight per element")
        if dtypes.kind(w.dtype) not in "biuf":
            raise DTypeError(f"bincount: weights are summed as float64; got {w.dtype}: sum "
                             "the real and imaginary parts apart")
        # NumPy sums the weights as float64: CuPy's kernel then adds float64 too
        operands.append(w if w.dtype == np.float64 or (library("bincount", w) is np and not
                                                       dtypes.is_minifloat(w.dtype))
                        else w.astype(np.float64))
    with borrowed("bincount", *operands) as (xp, views):
        counts = xp.bincount(views[0], views[1] if weights is not None else None,
                             minlength=minlength)
        return adopt(counts)


def histogram(a, bins=10, range=None, density=None, weights=None) -> tuple[ndarray, ndarray]:
    """``np.histogram`` of the flattened ``a``: ``(counts, edges)``; ``bins`` a number of equal
    bins over ``range`` (default the data's minimum to maximum) or the edges (increasing), the
    last bin closed; NaN and values outside are not counted.

    >>> import fusedarrays as fa, numpy as np
    >>> counts, edges = fa.histogram(fa.asarray(np.array([1.0, 2.0, 2.5, 4.0])), bins=3)
    >>> counts.get().tolist(), edges.get().tolist()
    ([1, 2, 1], [1.0, 2.0, 3.0, 4.0])
    """
    a = asarray(a)
    if isinstance(bins, str):
        raise refusal(f"np.histogram with bins={bins!r}",
                      "give the number of bins or their edges")
    if a.dtype.kind == "c":
        raise DTypeError(f"histogram: {a.dtype} values have no order to bin by; pass "
                         "a.real or abs(a)")
    w = None if weights is None else asarray(weights)
    if w is not None and w.shape != a.shape:
        raise ValueError(f"histogram: weights of shape {w.shape} for a of shape {a.shape}; "
                         "give one weight per element")
    if any(dtypes.is_minifloat(v.dtype) for v in (a, w, bins) if isinstance(v, ndarray)):
        return _histogram_minifloat(a, bins, range, density, w)
    if library("histogram", a, *([] if w is None else [w])) is np:
        edges = bins.get() if isinstance(bins, ndarray) else bins   # NumPy's own, not ours
        with borrowed("histogram", a, *([] if w is None else [w])) as (_, views):
            counts, edges = np.histogram(views[0], edges, range=range, density=density,
                                         weights=views[1] if w is not None else None)
            return adopt(counts), adopt(edges)
    return _device_histogram(a, bins, range, density, w)


def _histogram_minifloat(a: ndarray, bins, range, density, w) -> tuple[ndarray, ndarray]:
    """``histogram`` of training-format operands through their exact float32 values, the
    counts of weights in a training format cast back to it (NumPy's: the weights' dtype)."""
    def wide(v):
        return v.astype(np.float32) if dtypes.is_minifloat(v.dtype) else v
    counts, edges = histogram(wide(a), wide(bins) if isinstance(bins, ndarray) else bins,
                              range, density, None if w is None else wide(w))
    if w is not None and not density and counts.dtype != w.dtype:
        counts = counts.astype(w.dtype)
    return counts, edges


def _device_histogram(a: ndarray, bins, range, density, w) -> tuple[ndarray, ndarray]:
    if a.dtype == np.bool_:
        warnings.warn(f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=3)
        a = a.astype(np.uint8)
    if np.ndim(bins) > 1:
        raise ValueError("histogram: `bins` must be 1d, when an array")
    given = np.ndim(bins) == 1
    edges = asarray(bins) if given else asarray(_equal_edges(a, bins, range))
    wanted = None if w is None or density else w.dtype      # NumPy's: the weights' dtype
    bounds = edges
    if a.dtype.kind == "f" and (given or range is not None):   # NaN could reach the count
        keep = ~FUNCTIONS["isnan"](a)
        w = keep if w is None else FUNCTIONS["where"](keep, w, 0)
        # CuPy's kernel compares in C++'s promotion; NumPy in the common dtype
        common = np.result_type(a.dtype, edges.dtype)
        a, bounds = (v if v.dtype == common else v.astype(common) for v in (a, edges))
    with borrowed("histogram", a, bounds, *([] if w is None else [w])) as (cp, views):
        counts, _ = cp.histogram(views[0], views[1], density=bool(density),
                                 weights=views[2] if w is not None else None)
        counts = adopt(counts)
    if wanted is not None and counts.dtype != wanted:
        counts = counts.astype(wanted)
    return counts, edges


def _equal_edges(a: ndarray, bins, range) -> np.ndarray:
    """NumPy's edges of ``bins`` equal bins over ``range``, or over the data's minimum and
    maximum (read from the device together)."""
    try:
        n = operator.index(bins)
    except TypeError:
        raise TypeError("histogram: `bins` must be an integer, a string, or an array") from None
    if range is None and a.size:
        # NumPy scalars of a's dtype, as NumPy's own a.min(): its linspace then computes in
        # that dtype (NEP 50), where Python floats would make it compute in float64
        lo, hi = stack([FUNCTIONS_REDUCING["min"](a), FUNCTIONS_REDUCING["max"](a)]).get()
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
        range = (lo, hi)
    return np.histogram_bin_edges(np.empty(0, a.dtype), n, range=range)
