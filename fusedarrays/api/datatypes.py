"""The Array API's data-type objects and functions: ``fa.float32`` …, ``finfo``, ``iinfo``,
``result_type``, ``can_cast``, ``isdtype``, ``astype``.

Where it sits: under the namespace (``fusedarrays/__init__.py`` re-exports these names), over
:mod:`..ir.dtypes`, which owns the supported dtypes and promotion. The dtype objects *are*
NumPy's ``np.dtype`` instances, so ``x.dtype == fa.float32`` and ``fa.float32 == np.float32``
hold and both hash alike (a dict keyed by one finds the other).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes
from .array import asarray, ndarray
from .devices import check_device

DTYPES: dict[str, np.dtype] = {dt.name: dt for dt in dtypes.SUPPORTED}
# The Array API names ``bool`` the dtype NumPy calls ``bool`` too (its ``name``); the rest agree.

_KINDS = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


def _dtype_of(x) -> np.dtype:
    if isinstance(x, (ndarray, np.ndarray)):
        return x.dtype
    return dtypes.as_dtype(x)


class FInfo(NamedTuple):
    """A floating dtype's limits as the Array API gives them: Python ints and floats."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


def finfo(type, /) -> FInfo:
    """Machine limits of a floating dtype (or of an array's dtype): ``bits eps max min
    smallest_normal dtype``, NumPy's ``finfo`` values as Python floats. A complex dtype gives
    its parts' limits and real dtype (``finfo(complex64).dtype`` is float32), as NumPy's; the
    training formats (bfloat16, float8) ml_dtypes' ``finfo`` values."""
    dt = _dtype_of(type)
    if dtypes.kind(dt) not in "fc":
        raise DTypeError(f"finfo takes a floating dtype, got {dt}; use fa.iinfo for integers")
    info = dtypes.finfo(dt)
    dt = info.dtype
    return FInfo(info.bits, float(info.eps), float(info.max), float(info.min),
                 float(info.smallest_normal), dt)


def iinfo(type, /):
    """Limits of an integer dtype (or of an array's dtype): ``bits max min dtype``."""
    dt = _dtype_of(type)
    if dt.kind not in "iu":
        raise DTypeError(f"iinfo takes an integer dtype, got {dt}; use fa.finfo for floats")
    return np.iinfo(dt)


def result_type(*arrays_and_dtypes):
    """The dtype NumPy's promotion gives these arrays, dtypes and (weak) Python scalars."""
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    types = []
    for x in arrays_and_dtypes:
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
            types.append(dtypes.scalar_type(x))
        else:
            types.append(_dtype_of(x))
    return dtypes.promote(types)


def can_cast(from_, to, /) -> bool:
    """Whether NumPy's ``safe`` casting turns ``from_`` (a dtype or an array) into ``to``."""
    return bool(np.can_cast(_dtype_of(from_), dtypes.as_dtype(to)))


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name (``"real floating"``,
    ``"integral"`` …) or a tuple of them."""
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    dt = np.dtype(dtype)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; kinds are {', '.join(_KINDS)}")
        return dtypes.kind(dt) in _KINDS[kind]
    return dt == np.dtype(kind)


def astype(x, dtype, /, *, copy: bool = True, device=None):
    """``x`` as ``dtype`` (NumPy's unsafe cast); ``copy=False`` returns ``x`` itself when it
    already has that dtype."""
    x = asarray(x)
    check_device(device, "astype")
    dt = dtypes.as_dtype(dtype)
    if dt == x.dtype:
        return x.copy() if copy else x
    return x.astype(dt)
