"""NumPy's ufunc protocol as clients call it: ``np.<ufunc>(x, ...)`` with its keywords, and the
ufunc methods ``reduce``, ``accumulate`` and ``outer`` (``at`` is :mod:`.scatter`'s).

Where it sits: over :mod:`.elementwise` (the op table's functions), :mod:`.reductions` and
:mod:`.scans`; it installs ``fa.ndarray.__array_ufunc__``. A call with keywords is the same
lazy expression as the plain call, plus casts and a ``where``: one fused kernel.

Keywords of a call, with NumPy's meaning:

- ``dtype=``: NumPy's loop for that output dtype (``ufunc.resolve_dtypes`` with the signature
  ``(None, ..., dtype)``); the operands are cast to the loop's inputs first, as NumPy does
  (``np.add(x, y, dtype=np.float64)`` adds in float64; dask sums chunks so).
- ``casting=``: NumPy's rules for the operands (where ``dtype=`` chose the loop) and the output;
  a cast it refuses raises :class:`~fusedarrays.errors.UFuncInputCastingError` or
  :class:`~fusedarrays.errors.UFuncOutputCastingError`, NumPy's own error types and text.
- ``out=``: an fa array (or a 1-tuple of one), written in place (an evaluation, as
  ``fa.add(a, b, out=c)``). A NumPy array is refused with what to write instead: fusedarrays
  does not write into host memory behind the caller's back (``a += x`` with a NumPy ``a`` comes
  here too).
- ``where=``: with ``out=``, elements where it is False keep ``out``'s values (NumPy's rule).
  Without ``out=`` NumPy leaves them uninitialised; fusedarrays makes them **zero** (of the
  result's dtype), so that a result never depends on memory it did not write.
- ``order='K'`` or ``'C'`` and ``subok=True`` are accepted (fusedarrays' results are
  C-ordered); other values, ``signature=`` and unknown keywords are refused by name.

``ufunc.reduce`` takes ``axis`` (an int, a tuple, None), ``dtype``, ``keepdims``, ``initial``
(cast to the result's dtype as NumPy does, then folded in), ``where`` (excluded elements are
the reduction's identity, else ``initial``, which NumPy then requires) and ``out``;
``ufunc.accumulate`` (``add``, ``multiply``: the scans) takes ``axis``, ``dtype`` and ``out``.
``out=`` of these methods casts unsafely, as NumPy's does.
"""

from __future__ import annotations

import numpy as np
from numpy._core._exceptions import _UFuncInputCastingError, _UFuncOutputCastingError

from .. import errors
from ..ir import ops
from ..ir.reductions import BY_UFUNC
from ..ir.scans import SCANS
from . import elementwise
from .array import asarray, ndarray, runtime_write
from .elementwise import FUNCTIONS, UFUNC_METHODS
from .reductions import normalize_axes, reduce
from .refusals import options_text, refusal
from .scans import scan

_NO = np._NoValue
_ORDERS = ("K", "C")      # fusedarrays' results are C-ordered: NumPy's 'K' for them


def ufunc_call(ufunc, inputs, kwargs):
    """``np.<ufunc>(*inputs, **kwargs)`` (module docstring)."""
    row = ops.BY_UFUNC.get(ufunc) or elementwise._scipy_row(ufunc)
    out = _fa_out(ufunc, kwargs.pop("out", None), inputs)
    dtype, casting = kwargs.pop("dtype", None), kwargs.pop("casting", "same_kind")
    where = kwargs.pop("where", True)
    _defaults_only(ufunc, kwargs)
    if row is None:
        product = elementwise._PRODUCTS.get(ufunc)
        if product is None:
            raise refusal(f"np.{ufunc.__name__}")
        if dtype is not None or out is not None or where is not True or casting != "same_kind":
            raise refusal(f"np.{ufunc.__name__} with dtype=, out=, where= or casting=",
                          f"compute fa.{ufunc.__name__}(a, b) and cast or write its result")
        return product(*inputs)
    if dtype is None and out is None and where is True and casting == "same_kind":
        return elementwise.apply(row, *inputs)
    loop = _loop(ufunc, inputs, dtype, casting, out)
    if dtype is not None:       # the operands cast to the loop NumPy chose, as NumPy does
        inputs = [a.astype(want) if isinstance(a, ndarray) and a.dtype != want else a
                  for a, want in zip(map(_operand, inputs), loop)]
    result = elementwise.apply(row, *inputs)
    if result.dtype != loop[-1]:
        result = result.astype(loop[-1])
    if out is None:
        return result if where is True else FUNCTIONS["where"](where, result, 0).astype(
            result.dtype)
    return _write(out, result, where)


def _operand(a):
    """An operand as :func:`elementwise.apply` takes it: NumPy data as an fa array."""
    return asarray(a) if isinstance(a, (np.ndarray, list, tuple)) else a


def _loop(ufunc, inputs, dtype, casting: str, out) -> tuple:
    """NumPy's loop dtypes (inputs, output) for these operands, ``dtype=`` and ``out=``, its
    casting rule checked by NumPy and a refusal raised as fusedarrays' subclass of NumPy's."""
    types = tuple(_numpy_type(a) for a in inputs)
    given = {"casting": casting}
    if dtype is not None:
        given["signature"] = (None,) * ufunc.nin + (np.dtype(dtype),)
    try:
        loop = ufunc.resolve_dtypes(types + (None,), **given)
        if out is not None:     # the output cast: NumPy's check, and its error
            ufunc.resolve_dtypes(types + (out.dtype,), **given)
    except _UFuncInputCastingError as e:
        raise errors.UFuncInputCastingError(ufunc, e.casting, e.from_, e.to, e.in_i) from None
    except _UFuncOutputCastingError as e:
        raise errors.UFuncOutputCastingError(ufunc, e.casting, e.from_, e.to, e.out_i) from None
    except TypeError as e:      # no loop for dtype= (np.less(x, y, dtype=np.float64))
        shown = ", ".join(str(t.__name__ if isinstance(t, type) else t) for t in types)
        raise errors.DTypeError(f"np.{ufunc.__name__} of ({shown}) with dtype={dtype!r}, "
                                f"casting={casting!r}: {e} (as in NumPy); leave dtype= out, "
                                "or cast the operands first") from None
    return loop


def _numpy_type(a):
    """What ``ufunc.resolve_dtypes`` takes for an operand: a dtype, or a Python scalar's type
    (weak, NEP 50)."""
    if isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
        return type(a)
    if isinstance(a, elementwise.ScalarParam):
        return type(a.example)
    return a.dtype if isinstance(a, (ndarray, np.ndarray, np.generic)) else asarray(a).dtype


def _write(out: ndarray, result: ndarray, where) -> ndarray:
    """``result`` stored into ``out`` (cast to its dtype; where ``where`` is False, ``out``'s
    values kept)."""
    target = out._destination()
    value = result if result.dtype == out.dtype else result.astype(out.dtype)
    if where is not True:
        value = FUNCTIONS["where"](where, value, out).astype(out.dtype)
    runtime_write(target, value._resolved())
    return out


def _fa_out(ufunc, out, inputs) -> ndarray | None:
    """The one fa array of ``out=`` (None, an fa array, or a tuple of them), or NumPy's
    refusal of another (a NumPy array: :func:`_numpy_out`)."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"np.{ufunc.__name__}: out= holds {len(out)} arrays; fusedarrays' "
                             "ufuncs have one output")
        out = out[0]
    if out is None or isinstance(out, ndarray):
        return out
    if isinstance(out, np.ndarray):
        raise _numpy_out(ufunc, out, inputs)
    raise TypeError(f"np.{ufunc.__name__}: out= must be an array, got {type(out).__name__}")


def _numpy_out(ufunc, out: np.ndarray, inputs) -> errors.UnsupportedOperationError:
    """The error for a NumPy ``out=`` beside fa operands, saying what to write instead."""
    name = ufunc.__name__
    shown = f"a NumPy array ({out.dtype}, shape {out.shape})"
    if any(a is out for a in inputs):      # a += x, a -= x ...: NumPy passes out=a
        what = (f"an in-place np.{name} into {shown} with a fusedarrays operand (e.g. "
                "`a += x` where a is a NumPy array and x a fusedarrays array)")
        instead = ("write `a += x.get()` (NumPy computes on the host values) or "
                   "`a = fa.asarray(a) + x` (fusedarrays computes, lazily: a new array)")
    else:
        what = f"np.{name}(..., out=<{shown}>) with a fusedarrays operand"
        instead = (f"write `out[...] = np.{name}(..., x.get())` (NumPy computes on the host "
                   f"values) or use an fa array as out=: `np.{name}(..., out=fa.asarray(out))`")
    return errors.UnsupportedOperationError(
        f"{what}: fusedarrays writes only into its own arrays, not into NumPy's memory; "
        f"{instead}")


def _defaults_only(ufunc, kwargs: dict) -> None:
    """Refuse a keyword other than ``order='K'|'C'``, ``subok=True``, ``signature=None``."""
    order, subok = kwargs.pop("order", "K"), kwargs.pop("subok", True)
    bad = {k: v for k, v in kwargs.items() if v is not None}
    if order not in _ORDERS:
        bad["order"] = order
    if subok is not True:
        bad["subok"] = subok
    if bad:
        raise refusal(f"np.{ufunc.__name__} with {options_text(bad)}",
                      "order='K' or 'C' and subok=True are the ones it takes (its results "
                      "are C-ordered fa arrays); for signature=, cast the operands first")


def ufunc_reduce(ufunc, inputs, kwargs):
    """``np.add.reduce(x, axis=0, dtype=None, out=None, keepdims=False, initial=<no value>,
    where=True)`` … for the ufuncs whose reduction is a row of ``ir/reductions.py``."""
    row = BY_UFUNC.get(ufunc.__name__)
    if row is None or len(inputs) != 1:
        raise refusal(f"np.{ufunc.__name__}.reduce")
    x = asarray(inputs[0])
    axis, dtype = kwargs.pop("axis", 0), kwargs.pop("dtype", None)
    keepdims, initial = bool(kwargs.pop("keepdims", False)), kwargs.pop("initial", _NO)
    where, out = kwargs.pop("where", True), _fa_out(ufunc, kwargs.pop("out", None), inputs)
    if kwargs:
        raise refusal(f"np.{ufunc.__name__}.reduce with {options_text(kwargs)}")
    if dtype is not None and row.rule == "same":     # maximum.reduce(x, dtype=): in dtype
        x, dtype = x.astype(dtype), None
    if where is not True:
        x = FUNCTIONS["where"](where, x, _excluded(ufunc, x, initial))
    elif initial is not _NO and row.rule == "same" and _reduced_size(x, axis) == 0:
        x = _with_initial_only(x, axis, initial)    # NumPy: initial is the empty result
    dtype = None if row.rule == "bool" else dtype    # logical_or.reduce gives bool always
    result = reduce(row.name, x, axis, keepdims, dtype)
    if initial is not _NO:
        start = np.asarray(initial).astype(result.dtype)    # NumPy's unsafe cast of initial
        result = elementwise.apply(ops.BY_UFUNC[ufunc], result, start[()]).astype(result.dtype)
    return result if out is None else _write(out, result, True)


def _excluded(ufunc, x: ndarray, initial):
    """The value standing for an element ``where=`` excludes: the reduction's identity, else
    ``initial`` (NumPy's error where there is neither)."""
    if ufunc.identity is not None:
        return np.asarray(ufunc.identity).astype(x.dtype)[()]
    if initial is _NO:
        raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an identity, "
                         "so to use a where mask one has to specify 'initial'")
    return np.asarray(initial).astype(x.dtype)[()]


def _reduced_size(x: ndarray, axis) -> int:
    return int(np.prod([x.shape[k] for k in normalize_axes(axis, x.ndim)], dtype=np.int64))


def _with_initial_only(x: ndarray, axis, initial) -> ndarray:
    """An empty reduction of a ufunc without identity: one element, ``initial``, per output."""
    shape = tuple(1 if k in normalize_axes(axis, x.ndim) else e for k, e in enumerate(x.shape))
    return asarray(np.full(shape, initial).astype(x.dtype))


def ufunc_accumulate(ufunc, inputs, kwargs):
    """``np.add.accumulate(x, axis=0, dtype=None, out=None)`` and ``np.multiply.accumulate``:
    the scans of ``ir/scans.py``."""
    names = {SCANS[s].reduction: s for s in SCANS}
    row = BY_UFUNC.get(ufunc.__name__)
    name = names.get(row.name) if row is not None else None
    if name is None or len(inputs) != 1:
        raise refusal(f"np.{ufunc.__name__}.accumulate",
                      "np.add.accumulate and np.multiply.accumulate are the ones it takes")
    axis, dtype = kwargs.pop("axis", 0), kwargs.pop("dtype", None)
    out = _fa_out(ufunc, kwargs.pop("out", None), inputs)
    if kwargs:
        raise refusal(f"np.{ufunc.__name__}.accumulate with {options_text(kwargs)}")
    x = asarray(inputs[0])
    if x.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")
    result = scan(name, x, 0 if axis is None else axis, dtype)
    return result if out is None else _write(out, result, True)


def ufunc_outer(ufunc, inputs, kwargs):
    """``np.<ufunc>.outer(a, b)``: ``a`` over new trailing axes against ``b``, lazily."""
    row = ops.BY_UFUNC.get(ufunc)
    if row is None or len(inputs) != 2 or row.nin != 2:
        raise refusal(f"np.{ufunc.__name__}.outer")
    a, b = asarray(inputs[0]), asarray(inputs[1])
    a = a.reshape(a.shape + (1,) * b.ndim)
    return ufunc_call(ufunc, (a, b), kwargs)


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    handler = UFUNC_METHODS.get(method)
    if handler is None:
        raise refusal(f"np.{ufunc.__name__}.{method}")
    return handler(ufunc, inputs, dict(kwargs))


UFUNC_METHODS.update({"__call__": ufunc_call, "reduce": ufunc_reduce,
                      "accumulate": ufunc_accumulate, "outer": ufunc_outer})
ndarray.__array_ufunc__ = array_ufunc
