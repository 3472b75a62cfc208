"""Reductions users call: ``fa.sum`` … ``fa.all``, the array methods, ``np.sum(x)`` and
``np.add.reduce(x)`` (through ``api/ufuncs.py``), and the statistics built from them (``mean``,
``var``, ``std``, ``logsumexp``, ``softmax``, ``log_softmax``).

Where it sits: beside :mod:`elementwise`. Each primitive (a row of ``ir/reductions.py``) makes one
lazy reduction node over the expression it is given, with NumPy's axis handling, result dtype and
empty-reduction rules; the statistics are expressions over those nodes and elementwise ops, so
the planner cuts and fuses them like anything else (``compiler/planner.py``).

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
>>> fa.sum(x * 2, axis=1).get()
array([ 6., 24.], dtype=float32)
>>> float(x.max())
5.0
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from ..errors import DTypeError, UnsupportedOperationError
from ..ir import dtypes, graph, layout
from ..ir.reductions import (
    REDUCTIONS,
    reduction_form,
    reduction_node,
    result_dtype,
)
from . import array as _array
from .array import _wrap, asarray, ndarray
from .elementwise import FUNCTIONS
from .refusals import options_text, refusal

_NO = np._NoValue


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """NumPy's reading of ``axis``: None all, an int or a tuple of ints, negative from the end;
    out of range raises ``np.exceptions.AxisError``, a repeat ``ValueError``."""
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    axes = []
    for a in items:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        axes.append(a % ndim if ndim else a)
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in 'axis': {axis!r}")
    return tuple(sorted(axes))


def _check_out(name: str, out, **unsupported) -> None:
    if out is not None:
        raise refusal(f"fa.{name} with out=", f"assign the result: out[...] = fa.{name}(...)")
    given = {k: v for k, v in unsupported.items() if v is not _NO}
    if given:
        raise refusal(f"np.{name} with {options_text(given)}")


# sid → whether the expression holds a draw or a gather (a sid fixes its structure): a
# reduction asks once per structure, not with a walk of the graph at every call
_PLACED: dict[int, bool] = {}


# (name, axis, keepdims, dtype=, id of the input's dtype, its shape) → (axes, result dtype, the
# dtype the input is cast to first or None, the input's dtype, the node's shape and id as
# ir/reductions.reduction_form gives them): what a reduction decides of its arguments, checked
# once (a call that raises keeps nothing); every later call is a look-up.
_DECIDED: dict[tuple, tuple] = {}


def reduce(name: str, x, axis=None, keepdims: bool = False, dtype=None) -> ndarray:
    """Reduction ``name`` (a row of ``ir/reductions.py``) of ``x``, NumPy's semantics."""
    if type(x) is not ndarray:
        x = asarray(x)
    node = x._resolved()
    try:
        key = (name, axis, keepdims, dtype, id(node.dtype), node.shape)
        decided = _DECIDED.get(key)
    except TypeError:       # an unhashable axis (a list) or dtype=
        key = decided = None
    if decided is None:
        decided = _remember(_DECIDED, key, _decide(name, node, axis, keepdims, dtype))
    axes, out, cast_to, _, form = decided
    placed = _PLACED.get(node.sid)
    if placed is None:
        if len(_PLACED) >= 1 << 16:       # a process making new structures forever
            _PLACED.clear()
        placed = _PLACED.setdefault(node.sid, any(n.kind in ("random", "gather")
                                                  for n in graph.walk([node])))
    if placed:
        # a draw or gather indexes by the element order of the kernel that reads it, which
        # the reduction kernel's walk is not: its input is computed first
        if _array._tracing.tracer is not None and any(n.kind == "random"
                                                       for n in graph.walk([node])):
            raise UnsupportedOperationError(
                f"{name}: a reduction of a fa.random draw inside fa.fuse (the draw would be "
                "computed into memory first, a launch a traced function does not make); draw "
                "and reduce outside the fused function, or pass the drawn array in")
        node = x.compute()._resolved()
    if cast_to is not None:
        node = graph.cast(node, cast_to)
    return _wrap(reduction_node(name, node, axes, keepdims, out, form))


def _remember(table: dict, key: tuple | None, decided: tuple) -> tuple:
    """Keep ``decided`` under ``key`` (None: an unhashable call, kept nowhere) in ``table``,
    which starts over past 4096 entries (a process making new shapes forever); return it."""
    if key is not None:
        if len(table) >= 1 << 12:
            table.clear()
        table[key] = decided
    return decided


def _decide(name: str, node: graph.Node, axis, keepdims: bool, dtype) -> tuple:
    """What :func:`reduce` decides of its arguments for an input like ``node``: ``(axes, result
    dtype, dtype to cast the input to first or None, the input's dtype)``; NumPy's errors."""
    row = REDUCTIONS[name]
    if node.dtype.kind == "c" and row.rule in ("same", "index"):
        raise UnsupportedOperationError(
            f"fa.{name} of {node.dtype} is not supported: NumPy orders complex values "
            f"lexicographically, which fusedarrays' reductions do not; reduce the real and "
            f"imaginary parts (fa.real, fa.imag) or take np.{row.numpy} of x.get()")
    axes = normalize_axes(axis, node.ndim)
    if row.arg and axis is not None and not isinstance(axis, int) and \
            not isinstance(axis, np.integer):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer "
                        f"(np.{name} takes one axis or None)")
    extent = layout.size_of(tuple(node.shape[k] for k in axes))
    if not row.empty_ok and extent == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence" if row.arg else
                         f"zero-size array to reduction operation {row.ufunc} which has no "
                         f"identity (fa.{name} over axes {axes} of shape {node.shape}; "
                         "pass a non-empty array)")
    if dtype is not None:
        if not row.takes_dtype:
            raise TypeError(f"fa.{name} takes no dtype= (NumPy's np.{name} neither)")
        out = dtypes.as_dtype(dtype, what=f"fa.{name} dtype=")
        if out.kind == "b":
            raise DTypeError(f"fa.{name}(..., dtype=bool) is not supported; use fa.any / "
                             "fa.all, or a numeric dtype")
    else:
        out = result_dtype(name, node.dtype)
    if row.rule == "sum":
        cast_to = out                       # NumPy's add.reduce casts each element to dtype=
    elif row.rule == "bool":
        cast_to = np.dtype(np.bool_)
    elif node.dtype.kind == "b":            # argmax/max of bool compare as 0/1
        cast_to = np.dtype(np.uint8)
    else:
        cast_to = None
    # max/argmax of bool read it as 0/1 (cast above) and store bool (max) or the index
    return (axes, out, (cast_to if cast_to != node.dtype else None), node.dtype,
            reduction_form(name, node.shape, axes, bool(keepdims), out))


def _primitive(name: str):
    row = REDUCTIONS[name]
    if row.takes_dtype:
        def function(x, /, axis=None, dtype=None, out=None, keepdims=False, initial=_NO,
                     where=_NO):
            if out is not None or initial is not _NO or where is not _NO:
                _check_out(name, out, initial=initial, where=where)
            return reduce(name, x, axis, keepdims, dtype)
    elif row.arg:
        def function(x, /, axis=None, out=None, *, keepdims=False):
            _check_out(name, out)
            return reduce(name, x, axis, keepdims)
    else:
        def function(x, /, axis=None, out=None, keepdims=False, initial=_NO, where=_NO):
            if out is not None or initial is not _NO or where is not _NO:
                _check_out(name, out, initial=initial, where=where)
            return reduce(name, x, axis, keepdims)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{row.doc} NumPy's ``np.{row.numpy}``: same arguments, dtypes, values."
    return function


PRIMITIVES = {name: _primitive(name) for name in REDUCTIONS}


def _count(x: ndarray, axis) -> int:
    return layout.size_of(tuple(x.shape[k] for k in normalize_axes(axis, x.ndim)))


def _stat_dtypes(x: ndarray, dtype) -> tuple[np.dtype, np.dtype]:
    """(dtype computed in, result dtype) of mean/var/std: NumPy's ``_methods`` rules."""
    if dtype is not None:
        want = dtypes.as_dtype(dtype, what="mean/var/std dtype=")
        return (np.dtype(np.float32) if dtypes.CODES[want] in dtypes.ROUNDED else want), want
    if x.dtype.kind in "biu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if dtypes.CODES[x.dtype] in dtypes.ROUNDED:   # float16 (and bfloat16, float8: JAX's upcast)
        return np.dtype(np.float32), x.dtype
    return x.dtype, x.dtype


def _var_dtype(compute: np.dtype, want: np.dtype) -> np.dtype:
    """var/std of a complex array is real: NumPy's result is the parts' dtype."""
    return dtypes.BY_CODE[dtypes.COMPLEX_PART[dtypes.CODES[want]]] if want.kind == "c" else want


# (axis, dtype=, id of the input's dtype, its shape) → (dtype computed in, result dtype, the
# count as a float, the input's dtype): what mean and var decide of their arguments, once per
# kind of call (a layer norm takes two means per call; deciding anew cost a fifth of its host
# time). The input's dtype rides along so that its id can't be reused while the entry lives.
_STATS: dict[tuple, tuple] = {}


def _stat_plan(x: ndarray, axis, dtype) -> tuple[np.dtype, np.dtype, float]:
    """(dtype computed in, result dtype, element count per result as a float) of mean/var."""
    node = x._resolved()
    try:
        key = (axis, dtype, id(node.dtype), node.shape)
        found = _STATS.get(key)
    except TypeError:       # an unhashable axis (a list) or dtype=
        key = found = None
    if found is None:
        found = _remember(_STATS, key, (*_stat_dtypes(x, dtype), float(_count(x, axis)),
                                        node.dtype))
    return found[:3]


def mean(x, /, axis=None, dtype=None, out=None, keepdims=False, *, where=_NO):
    """Arithmetic mean over the given axes (``np.mean``: integers give float64, float16 is
    summed in float32; an empty mean is NaN)."""
    if out is not None or where is not _NO:
        _check_out("mean", out, where=where)
    if type(x) is not ndarray:
        x = asarray(x)
    compute, want, n = _stat_plan(x, axis, dtype)
    result = FUNCTIONS["true_divide"](reduce("sum", x, axis, keepdims, compute), n)
    return result if result.dtype == want else result.astype(want)


def var(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO,
        mean=_NO, correction=_NO):
    """Variance over the given axes (``np.var``; ``ddof`` or ``correction``)."""
    _check_out("var", out, where=where, mean=mean)
    if correction is not _NO:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if type(x) is not ndarray:
        x = asarray(x)
    compute, want, n = _stat_plan(x, axis, dtype)
    n = int(n)
    xc = x if x.dtype == compute else x.astype(compute)
    centred = xc - FUNCTIONS["true_divide"](reduce("sum", xc, axis, True), float(n))
    if centred.dtype.kind == "c":   # |c|**2 as NumPy forms it: (c * conj(c)).real
        re, im = FUNCTIONS["real"](centred), FUNCTIONS["imag"](centred)
        squares = reduce("sum", re * re + im * im, axis, keepdims)
    else:
        squares = reduce("sum", centred * centred, axis, keepdims)
    return FUNCTIONS["true_divide"](squares, float(max(n - ddof, 0))).astype(
        _var_dtype(compute, want))


def std(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO,
        mean=_NO, correction=_NO):
    """Standard deviation over the given axes (``np.std``; bfloat16 and float8 rounded once,
    after the square root in float32)."""
    if type(x) is not ndarray:
        x = asarray(x)
    if dtype is None and dtypes.is_minifloat(x.dtype):
        return std(x.astype(np.float32), axis, None, out, ddof, keepdims, where=where,
                   mean=mean, correction=correction).astype(x.dtype)
    v = var(x, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    return FUNCTIONS["sqrt"](v)


def _floating(function):
    """``function`` of a float ``x``: an integer or bool ``x`` as float64; bfloat16 and float8
    computed on their float32 values and rounded once at the end (as norms and means are)."""
    @functools.wraps(function)
    def wrapper(x, /, *args, **kwargs):
        x = asarray(x)
        if dtypes.is_minifloat(x.dtype):
            return function(x.astype(np.float32), *args, **kwargs).astype(x.dtype)
        return function(x if x.dtype.kind == "f" else x.astype(np.float64), *args, **kwargs)
    return wrapper


@_floating
def logsumexp(x, /, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` without overflow (``scipy.special.logsumexp``): the maximum is
    taken out first (an infinite maximum is taken as 0, as SciPy does)."""
    m = reduce("max", x, axis, True)
    m = FUNCTIONS["where"](FUNCTIONS["isfinite"](m), m, 0)
    s = reduce("sum", FUNCTIONS["exp"](x - m), axis, True)
    r = FUNCTIONS["log"](s) + m
    return r if keepdims else _squeeze(r, normalize_axes(axis, x.ndim))


@_floating
def softmax(x, /, axis=-1):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (``scipy.special.softmax``)."""
    e = FUNCTIONS["exp"](x - reduce("max", x, axis, True))
    return e / reduce("sum", e, axis, True)


@_floating
def log_softmax(x, /, axis=-1):
    """``x - logsumexp(x, axis, keepdims=True)`` (``scipy.special.log_softmax``)."""
    return x - logsumexp(x, axis, keepdims=True)


def _squeeze(r: ndarray, axes: tuple) -> ndarray:
    return r.reshape(tuple(e for k, e in enumerate(r.shape) if k not in axes))


FUNCTIONS_REDUCING = dict(PRIMITIVES, mean=mean, var=var, std=std, logsumexp=logsumexp,
                          softmax=softmax, log_softmax=log_softmax)
ALIASES = {"amax": "max", "amin": "min"}


# np.<ufunc>.reduce (its keywords included) is api/ufuncs.py's


def _method(function):
    def method(self, axis=None, *args, **kwargs):
        return function(self, axis, *args, **kwargs)
    method.__name__ = function.__name__
    method.__doc__ = function.__doc__
    return method


for _name in ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "mean", "var",
              "std"):
    setattr(ndarray, _name, _method(FUNCTIONS_REDUCING[_name]))
