"""NumPy's nan-functions: ``nansum nanprod nanmean nanvar nanstd nanmax nanmin nanargmax
nanargmin nancumsum nancumprod`` as ``fa.<name>`` and ``np.<name>(x)`` on fa arrays.

Where it sits: beside :mod:`reductions`, built as NumPy builds them (``numpy/lib/_nanfunctions``)
but lazily, each from the same primitives as its plain form and with as many launches: the NaNs
(and the elements ``where=`` leaves out) are replaced inside the reduction's own kernel by the
identity (``nansum``: 0, ``nanprod``: 1, ``nanargmax``: -inf …), ``nanmax`` / ``nanmin`` are the
``fmax`` / ``fmin`` reduction rows (``ir/reductions.py``: they start from NaN, so only an all-NaN
slice gives NaN), and ``nanmean`` sums the values and counts them in one pass: the value is the
real part and "not NaN" the imaginary part of one complex sum (complex64 for float16/float32,
complex128 for float64), so the count costs no second reduction. ``nanvar`` is that mean, then
the sum of the centred squares, counted again in the same way (the count in the result's
shape: a view of a pending reduction would compute it). Integer and bool inputs have no NaN:
their nan-functions are the plain ones, as in NumPy.

All-NaN slices give NumPy's values: NaN for ``nanmax nanmin nanmean nanvar nanstd`` (without
NumPy's RuntimeWarning: a lazy result's values are not seen when it is built), 0 and 1 for
``nansum`` and ``nanprod``, NaN where ``nanvar``'s ``ddof`` is not below the count.
``nanargmax`` / ``nanargmin`` raise NumPy's ``ValueError("All-NaN slice encountered")``: to know
at the call, as NumPy's callers expect, they compute whether any slice is all NaN (one small
reduction and a read of one bool per slice); the index itself stays lazy. Inside ``fa.fuse``
nothing can be read, so there an all-NaN slice gives index 0 (NumPy's argmax of the slice with
its NaNs replaced), unchecked.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]]))
>>> fa.nanmean(x, axis=1).get()
array([ 2., nan])
>>> fa.nansum(x).get()
array(4.)
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes
from . import scans
from .array import _tracing, asarray, ndarray
from .elementwise import FUNCTIONS
from .reductions import _check_out, _stat_dtypes, mean, reduce, var

_NO = np._NoValue
_where, _isnan = FUNCTIONS["where"], FUNCTIONS["isnan"]


def _input(name: str, a, where) -> tuple[ndarray, ndarray | None]:
    """(``a`` as an fa array, the elements that count or None for all): not NaN, and in
    ``where`` when given (NumPy's nan-functions skip both alike)."""
    x = a if type(a) is ndarray else asarray(a)
    valid = ~_isnan(x) if dtypes.kind(x.dtype) in "fc" else None
    if where is not _NO and where is not True:
        w = asarray(where)
        if w.dtype != np.bool_:
            raise DTypeError(f"np.{name}: where= must be a boolean array, got {w.dtype}")
        valid = w if valid is None else valid & w
    return x, valid


def _filled(x: ndarray, valid, fill) -> ndarray:
    """``x`` with ``fill`` where ``valid`` is false (fused into the consumer's kernel)."""
    if valid is None:
        return x
    r = _where(valid, x, fill)
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO, where=_NO):
    """Sum over the given axes, NaN taken as 0 (``np.nansum``: same arguments, dtypes,
    values; an all-NaN slice sums to 0)."""
    _check_out("nansum", out)
    x, valid = _input("nansum", a, where)
    r = reduce("sum", _filled(x, valid, 0), axis, keepdims, dtype)
    return r if initial is _NO else (r + initial).astype(r.dtype)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO, where=_NO):
    """Product over the given axes, NaN taken as 1 (``np.nanprod``)."""
    _check_out("nanprod", out)
    x, valid = _input("nanprod", a, where)
    r = reduce("prod", _filled(x, valid, 1), axis, keepdims, dtype)
    return r if initial is _NO else (r * initial).astype(r.dtype)


def _never(dtype: np.dtype, largest: bool):
    """A value of ``dtype`` that a nanmax (``largest``) or nanmin never takes over another."""
    if dtypes.kind(dtype) in "fc":
        return math.nan
    if dtype.kind == "b":
        return not largest
    info = np.iinfo(dtype)
    return int(info.min if largest else info.max)


def _extreme(name: str, op: str):
    def function(a, axis=None, out=None, keepdims=False, initial=_NO, where=_NO):
        _check_out(name, out)
        x, valid = _input(name, a, where)
        if where is not _NO and initial is _NO:
            raise ValueError(f"reduction operation '{op}' does not have an identity, so to use "
                             f"a where mask one has to specify 'initial' (np.{name})")
        if where is not _NO:        # the left-out elements take a value that never wins
            x = _filled(x, valid, _never(x.dtype, name == "nanmax"))
        r = reduce(name, x, axis, keepdims)
        return r if initial is _NO else FUNCTIONS[op](r, initial).astype(r.dtype)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``np.{name}``: ``np.{op}.reduce``, NaN skipped; an all-NaN slice "
                        "gives NaN (NumPy also warns; a lazy result can't).")
    return function


nanmax = _extreme("nanmax", "fmax")
nanmin = _extreme("nanmin", "fmin")


def _arg(name: str, plain: str, fill: float):
    def function(a, axis=None, out=None, *, keepdims=False):
        _check_out(name, out)
        x, valid = _input(name, a, _NO)
        if valid is None:
            return reduce(plain, x, axis, keepdims)
        if dtypes.is_minifloat(x.dtype):     # float8_e4m3fn has no -inf to fill with
            x = x.astype(np.float32)
        r = reduce(plain, _filled(x, valid, fill), axis, keepdims)
        if _tracing.tracer is None and x.size:
            # NumPy raises at the call; one bool per slice is read here, r stays lazy
            if np.any(reduce("any", valid, axis).get() == False):  # noqa: E712
                raise ValueError(f"All-NaN slice encountered (np.{name} over axis={axis} of "
                                 f"an array of shape {x.shape}: no index to give; use "
                                 f"np.{plain} to take the NaN's index instead)")
        return r
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``np.{name}``: the index of ``np.{plain}`` with NaN taken as "
                        f"{fill}; an all-NaN slice raises ValueError, as NumPy.")
    return function


nanargmax = _arg("nanargmax", "argmax", -math.inf)
nanargmin = _arg("nanargmin", "argmin", math.inf)


def _counted(x: ndarray, valid: ndarray, axis, compute: np.dtype,
             keepdims: bool) -> tuple[ndarray, ndarray]:
    """(sum of the valid values of ``x``, their count) over ``axis``, computed in
    ``compute``: for a real ``compute`` one complex sum (value + 1j * valid: one reduction,
    and a view of a pending reduction would compute it, so each caller asks for the shape
    it reads), for a complex one two sums."""
    values = _where(valid, x, 0)
    if compute.kind == "c":
        total = reduce("sum", values.astype(compute), axis, keepdims)
        part = np.dtype(compute.char.lower())
        return total, reduce("sum", valid, axis, keepdims).astype(part)
    lanes = np.dtype(np.complex128 if compute == np.float64 else np.complex64)
    s = reduce("sum", values.astype(lanes) + valid.astype(compute) * 1j, axis, keepdims)
    return FUNCTIONS["real"](s), FUNCTIONS["imag"](s)


def _float_plan(name: str, x: ndarray, dtype) -> tuple[np.dtype, np.dtype]:
    """(dtype computed in, result dtype) of nanmean/nanvar of a float or complex ``x``."""
    if dtype is not None and dtypes.kind(dtype) not in "fc":
        raise TypeError(f"np.{name}: if a is inexact, then dtype must be inexact "
                        f"(got dtype={np.dtype(dtype)} for {x.dtype} input)")
    return _stat_dtypes(x, dtype)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NO):
    """Mean over the given axes of the non-NaN elements (``np.nanmean``); an all-NaN slice
    gives NaN. One reduction: the sum and the count are the two parts of one complex sum."""
    _check_out("nanmean", out)
    x, valid = _input("nanmean", a, where)
    if valid is None:
        return mean(x, axis, dtype, None, keepdims)
    if dtypes.kind(x.dtype) not in "fc":       # integers with where=: the valid ones, floats
        x = x.astype(np.float64)
    compute, want = _float_plan("nanmean", x, dtype)
    xc = x if x.dtype == compute else x.astype(compute)
    total, count = _counted(xc, valid, axis, compute, bool(keepdims))
    return (total / count).astype(want)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO,
           mean=_NO, correction=_NO):
    """Variance of the non-NaN elements (``np.nanvar``; ``ddof`` or ``correction``); NaN where
    no more than ``ddof`` elements count."""
    _check_out("nanvar", out, mean=mean)
    if correction is not _NO:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    x, valid = _input("nanvar", a, where)
    if valid is None:
        return var(x, axis, dtype, None, ddof, keepdims)
    if dtypes.kind(x.dtype) not in "fc":
        x = x.astype(np.float64)
    compute, want = _float_plan("nanvar", x, dtype)
    xc = x if x.dtype == compute else x.astype(compute)
    total, count = _counted(xc, valid, axis, compute, True)
    centred = _where(valid, xc - total / count, 0)
    if centred.dtype.kind == "c":
        re, im = FUNCTIONS["real"](centred), FUNCTIONS["imag"](centred)
        squares = re * re + im * im
    else:
        squares = centred * centred
    # the squares' sum and the count again, as one reduction in the result's shape
    part = np.dtype(compute.char.lower())
    squares, count = _counted(squares, valid, axis, part, bool(keepdims))
    dof = count - ddof
    result = _where(dof > 0, squares / dof, math.nan)
    return result.astype(np.dtype(want.char.lower()) if want.kind == "c" else want)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO,
           mean=_NO, correction=_NO):
    """Standard deviation of the non-NaN elements (``np.nanstd``)."""
    return FUNCTIONS["sqrt"](nanvar(a, axis, dtype, out, ddof, keepdims, where=where,
                                    mean=mean, correction=correction))


def _cumulative(name: str, plain: str, fill: int):
    def function(a, axis=None, dtype=None, out=None):
        _check_out(name, out)
        x, valid = _input(name, a, _NO)
        return scans.FUNCTIONS_SCANNING[plain](_filled(x, valid, fill), axis, dtype)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``np.{name}``: ``np.{plain}`` with NaN taken as {fill} (one scan; "
                        "``axis=None`` scans the flattened array).")
    return function


nancumsum = _cumulative("nancumsum", "cumsum", 0)
nancumprod = _cumulative("nancumprod", "cumprod", 1)

FUNCTIONS_NAN = {f.__name__: f for f in (
    nansum, nanprod, nanmean, nanvar, nanstd, nanmax, nanmin, nanargmax, nanargmin,
    nancumsum, nancumprod)}
