"""NumPy functions called on ``fa.ndarray``: the one table of those fusedarrays implements.

Where it sits: beside :mod:`elementwise`, under ``ndarray.__array_function__`` (NEP 18). A NumPy
ufunc (``np.sqrt(x)``) goes through ``__array_ufunc__`` and the op table instead, and
``np.asarray(x)`` / ``np.array(x)`` through ``__array__`` (they copy the values to the host).
Every other NumPy function given a ``fa.ndarray`` comes here: one in :data:`IMPLEMENTED` returns
a lazy ``fa.ndarray`` (``np.shape`` and the like: the plain value); any other raises
:class:`~.errors.UnsupportedOperationError` naming it — never a silent copy to the host and a
NumPy result. A function is implemented by adding its row to :data:`IMPLEMENTED`.
"""

from __future__ import annotations

import numpy as np

from . import counting, creation, manipulation, masks, products, sorting, standard
from .array import asarray, ndarray
from .comparisons import allclose, array_equal, array_equiv, isclose
from .creation import empty, full
from .differences import diff, ediff1d
from .einsum import einsum, einsum_path
from .elementwise import FUNCTIONS
from .indexmath import ravel_multi_index, unravel_index
from .likes import FUNCTIONS_LIKE
from .linalg_numpy import FUNCTIONS_LINALG
from .manipulation import broadcast_to, expand_dims, reshape, squeeze, transpose
from .nanfunctions import FUNCTIONS_NAN
from .quantiles import FUNCTIONS_QUANTILE
from .reductions import ALIASES, FUNCTIONS_REDUCING
from .refusals import options_text, refusal
from .scans import FUNCTIONS_SCANNING

_NO = np._NoValue       # NumPy's "argument not given", as its own signatures default to


def _only(name: str, **given) -> None:
    """Refuse options given other values than the ones fusedarrays supports: ``given`` maps
    each option to ``(value, accepted values)``."""
    for option, (value, accepted) in given.items():
        if not any(value is a or (type(value) is type(a) and value == a) for a in accepted):
            raise refusal(f"np.{name} with {options_text({option: value})}")


def _where(condition, x=_NO, y=_NO, /):
    if x is _NO and y is _NO:
        return masks.nonzero(condition)
    if x is _NO or y is _NO:
        raise ValueError("either both or neither of x and y should be given")
    return FUNCTIONS["where"](condition, x, y)


def _clip(a, a_min=_NO, a_max=_NO, out=None, *, min=_NO, max=_NO, **kwargs):
    if kwargs:
        raise refusal(f"np.clip with {options_text(kwargs)}",
                      "fa.clip(a, lo, hi, out=...) takes no options")
    if a_min is _NO and a_max is _NO:
        a_min, a_max = (None if min is _NO else min), (None if max is _NO else max)
    elif a_min is _NO or a_max is _NO:
        raise TypeError("clip() missing 1 required positional argument: "
                        f"{'a_min' if a_min is _NO else 'a_max'!r}")
    elif min is not _NO or max is not _NO:
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` "
                         "are provided is forbidden.")
    a = asarray(a)
    if a.dtype.kind in "iu":   # NumPy drops a Python int bound beyond the dtype (NEP 50)
        info = np.iinfo(a.dtype)
        a_min = None if type(a_min) is int and a_min <= info.min else a_min
        a_max = None if type(a_max) is int and a_max >= info.max else a_max
    if a_min is None and a_max is None:
        return FUNCTIONS["positive"](a, out=out)
    if a_min is None:
        return FUNCTIONS["minimum"](a, a_max, out=out)
    if a_max is None:
        return FUNCTIONS["maximum"](a, a_min, out=out)
    return FUNCTIONS["clip"](a, a_min, a_max, out=out)


def _copy(a, order="K", subok=False):
    _only("copy", order=(order, ("K", "A", "C")))
    return FUNCTIONS["copy"](a)


def _reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    _only("reshape", order=(order, ("C",)), copy=(copy, (None, True)))
    out = reshape(a, shape if newshape is None else newshape)
    return out.copy() if copy else out


def _ravel(a, order="C"):
    _only("ravel", order=(order, ("C",)))
    return asarray(a).ravel()


def _like(fill):
    def like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        _only(f"{fill}_like", order=(order, ("K", "A", "C")), device=(device, (None, "cpu")))
        a = asarray(a)
        shape, dtype = a.shape if shape is None else shape, a.dtype if dtype is None else dtype
        return empty(shape, dtype) if fill == "empty" else full(
            shape, 0 if fill == "zeros" else 1, dtype)
    return like


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _only("full_like", order=(order, ("K", "A", "C")), device=(device, (None, "cpu")))
    a = asarray(a)
    return full(a.shape if shape is None else shape, fill_value,
                a.dtype if dtype is None else dtype)


def _astype(x, dtype, /, *, copy=True, device=None):
    _only("astype", device=(device, (None, "cpu")))
    x = asarray(x)
    return x if not copy and np.dtype(dtype) == x.dtype else x.astype(dtype)


def _size(a, axis=None):
    shape = asarray(a).shape
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[k] for k in axes], dtype=np.int64))


def _broadcast_to(array, shape, subok=False):
    return broadcast_to(array, shape)


def _joined(name: str, join):
    def joined(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
        _only(name, out=(out, (None,)), casting=(casting, ("same_kind",)))
        result = join(arrays, axis=axis)
        return result if dtype is None else result.astype(dtype)
    return joined


def _sorted(name: str, fn):
    """``np.sort`` / ``np.argsort``: NumPy's default kind keeps NumPy's order of equal elements
    (``stable=False`` sorts with it), ``"stable"`` the standard's stable order."""
    def sorted_(a, axis=-1, kind=None, order=None, *, stable=None):
        _only(name, order=(order, (None,)),
              kind=(kind, (None, "quicksort", "stable", "mergesort")))
        x = asarray(a)
        if axis is None:
            x, axis = x.reshape(-1), 0
        stable = bool(stable) if stable is not None else kind in ("stable", "mergesort")
        return fn(x, axis=axis, stable=stable)
    return sorted_


def _round(a, decimals=0, out=None):
    _only("round", out=(out, (None,)))
    return standard.round(a, decimals)


def _dtype_of(a):
    return a.dtype if isinstance(a, ndarray) else a


# NumPy function → its implementation on fa arrays, which takes NumPy's arguments. The op-table
# rows whose reference is a NumPy function rather than a ufunc (where, clip, copy) are here too
# (tests/topics/test_numpy_functions.py checks it).
IMPLEMENTED: dict = {
    np.where: _where,
    np.clip: _clip,
    np.copy: _copy,
    np.broadcast_to: _broadcast_to,
    np.expand_dims: lambda a, axis: expand_dims(a, axis),
    np.squeeze: lambda a, axis=None: squeeze(a, axis),
    np.reshape: _reshape,
    np.transpose: lambda a, axes=None: transpose(a, axes),
    np.ravel: _ravel,
    np.zeros_like: _like("zeros"),
    np.ones_like: _like("ones"),
    np.empty_like: _like("empty"),
    np.full_like: _full_like,
    np.result_type: lambda *arrays_and_dtypes: np.result_type(
        *map(_dtype_of, arrays_and_dtypes)),
    # the namespace's manipulation, creation and product functions (api/manipulation.py …)
    np.concatenate: _joined("concatenate", manipulation.concat),
    np.concat: _joined("concat", manipulation.concat),
    np.stack: _joined("stack", manipulation.stack),
    np.flip: lambda m, axis=None: manipulation.flip(m, axis=axis),
    np.moveaxis: lambda a, source, destination: manipulation.moveaxis(a, source, destination),
    np.roll: lambda a, shift, axis=None: manipulation.roll(a, shift, axis=axis),
    np.tile: lambda A, reps: manipulation.tile(A, (reps,) if isinstance(reps, int) else reps),
    np.repeat: lambda a, repeats, axis=None: manipulation.repeat(a, repeats, axis=axis),
    np.broadcast_arrays: lambda *args, subok=False: tuple(manipulation.broadcast_arrays(*args)),
    np.matrix_transpose: lambda x, /: manipulation.matrix_transpose(x),
    np.unstack: lambda x, /, *, axis=0: manipulation.unstack(x, axis=axis),
    np.tril: lambda m, k=0: creation.tril(m, k=k),
    np.triu: lambda m, k=0: creation.triu(m, k=k),
    np.round: _round,
    np.around: _round,
    np.real: lambda val: standard.real(val),
    np.imag: lambda val: standard.imag(val),
    np.angle: lambda z, deg=False: standard.angle(z, deg),
    np.tensordot: lambda a, b, axes=2: products.tensordot(a, b, axes=axes),
    np.shape: lambda a: asarray(a).shape,
    np.ndim: lambda a: asarray(a).ndim,
    np.size: _size,
    # data-dependent sizes: the mask is copied to the host (api/masks.py)
    np.nonzero: lambda a: masks.nonzero(a),
    np.argwhere: lambda a: masks.argwhere(a),
    np.flatnonzero: lambda a: masks.flatnonzero(a),
    np.count_nonzero: lambda a, axis=None, *, keepdims=False: masks.count_nonzero(
        a, axis, keepdims=keepdims),
    # sorted by the backend's array library on fusedarrays' memory (api/sorting.py)
    np.sort: _sorted("sort", sorting.sort),
    np.argsort: _sorted("argsort", sorting.argsort),
    np.searchsorted: lambda a, v, side="left", sorter=None: sorting.searchsorted(
        a, v, side=side, sorter=sorter),
}
IMPLEMENTED.update({getattr(np, name): getattr(sorting, name) for name in (
    "unique_all", "unique_counts", "unique_inverse", "unique_values") if hasattr(np, name)})
# NumPy's unique, bincount and histogram, by the same library (api/sorting.py, api/counting.py)
IMPLEMENTED.update({np.unique: sorting.unique, np.bincount: counting.bincount,
                    np.histogram: counting.histogram})
IMPLEMENTED.update({getattr(np, name): FUNCTIONS_REDUCING[name] for name in (
    "sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "mean", "var", "std")})
IMPLEMENTED.update({getattr(np, alias): FUNCTIONS_REDUCING[name]
                    for alias, name in ALIASES.items()})
# np.linalg.* and np.dot inner outer vdot trace diagonal cross kron (api/linalg_numpy.py)
IMPLEMENTED.update(FUNCTIONS_LINALG)
# einsum (views + a fused reduction, or matmul: api/einsum.py), differences (fused), whole-array
# comparisons (fused; allclose & co. one reduction and a Python bool: api/comparisons.py)
IMPLEMENTED.update({
    np.einsum: einsum, np.einsum_path: einsum_path, np.ediff1d: ediff1d,
    np.diff: lambda a, n=1, axis=-1, prepend=None, append=None: diff(
        a, n=n, axis=axis, prepend=prepend, append=append),
    np.isclose: isclose, np.allclose: allclose, np.array_equal: array_equal,
    np.array_equiv: array_equiv,
})
IMPLEMENTED.update({getattr(np, name): f for name, f in FUNCTIONS_NAN.items()})  # nan-functions
IMPLEMENTED.update({getattr(np, name): f for name, f in FUNCTIONS_QUANTILE.items()})
IMPLEMENTED.update({getattr(np, name): FUNCTIONS_SCANNING[name] for name in (
    "cumsum", "cumprod", "cumulative_sum", "cumulative_prod") if hasattr(np, name)})
if hasattr(np, "astype"):     # NumPy 2.1 and later
    IMPLEMENTED[np.astype] = _astype
# NEP 35: np.asarray(..., like=x), np.zeros(..., like=x) … give fa arrays (api/likes.py)
IMPLEMENTED.update(FUNCTIONS_LIKE)
IMPLEMENTED.update({np.unravel_index: unravel_index, np.ravel_multi_index: ravel_multi_index})


def array_function(func, types, args, kwargs):
    """``ndarray.__array_function__``: an implemented function, else a refusal naming it."""
    for t in types:
        if not issubclass(t, (ndarray, np.ndarray)):
            return NotImplemented    # another library's array is involved: let it answer
    impl = IMPLEMENTED.get(func)
    if impl is None:
        module = getattr(func, "__module__", None) or "numpy"
        raise refusal(module.replace("numpy", "np", 1) + "." + func.__name__)
    return impl(*args, **kwargs)


def _array_function(self, func, types, args, kwargs):
    return array_function(func, types, args, kwargs)


ndarray.__array_function__ = _array_function
