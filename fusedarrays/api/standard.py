"""Array API elementwise functions that are not one op-table row: ``clip`` with optional bounds,
``round`` (integers stay integers), ``real``, ``imag`` (any dtype; their rows compute a complex
one's parts), NumPy's ``angle``, and ``where`` with the standard's signature.

Where it sits: beside :mod:`.elementwise` (which turns every op-table row into ``fa.<name>``,
standard names included through the rows' ``aliases``), re-exported by the namespace. Each
builds the rows' lazy nodes: nothing here computes.
"""

from __future__ import annotations

import numpy as np

from .array import asarray, ndarray
from .elementwise import FUNCTIONS


def clip(x, /, min=None, max=None, *, out=None) -> ndarray:  # noqa: A002 - the standard's names
    """``x`` limited to ``[min, max]``; a bound of None is no bound. Lazy (one row: ``clip``,
    ``maximum`` or ``minimum``)."""
    x = asarray(x)
    if x.dtype.kind in "iu":   # NumPy drops a Python int bound beyond the dtype (NEP 50)
        info = np.iinfo(x.dtype)
        min = None if type(min) is int and min <= info.min else min
        max = None if type(max) is int and max >= info.max else max
    if min is None and max is None:
        return FUNCTIONS["positive"](x, out=out) if x.dtype.kind != "b" else x.copy()
    if min is None:
        return FUNCTIONS["minimum"](x, max, out=out)
    if max is None:
        return FUNCTIONS["maximum"](x, min, out=out)
    return FUNCTIONS["clip"](x, min, max, out=out)


def round(x, /, decimals: int = 0) -> ndarray:  # noqa: A001 - the standard's name
    """Round half to even, as ``np.round``: integers and bools keep their values (a lazy copy,
    as NumPy's is a new array); with ``decimals`` the value is scaled by ``10**decimals``,
    rounded and scaled back (NumPy's way)."""
    x = asarray(x)
    if x.dtype.kind in "biu":
        return x.copy()
    if decimals == 0:
        return FUNCTIONS["rint"](x)
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return FUNCTIONS["rint"](x * scale) / scale
    return FUNCTIONS["rint"](x / scale) * scale


def real(x, /) -> ndarray:
    """The real part (lazy, the ``real`` row): of a complex array its real dtype, of a real
    one its own values and dtype."""
    return FUNCTIONS["real"](asarray(x))


def imag(x, /) -> ndarray:
    """The imaginary part (lazy, the ``imag`` row): of a complex array its real dtype, of a
    real one zeros of its dtype."""
    return FUNCTIONS["imag"](asarray(x))


def angle(z, deg: bool = False) -> ndarray:
    """The argument of ``z`` as ``np.angle`` computes it: ``arctan2(imag(z), real(z))`` for a
    complex array, ``arctan2(0, z)`` for a real one (so integers give float64, float32 float32),
    in degrees where ``deg``. Lazy."""
    z = asarray(z)
    if z.dtype.kind == "c":
        a = FUNCTIONS["arctan2"](FUNCTIONS["imag"](z), FUNCTIONS["real"](z))
    else:
        a = FUNCTIONS["arctan2"](0, z)
    return a * (180 / np.pi) if deg else a


def where(condition, x1, x2, /) -> ndarray:
    """``x1`` where ``condition`` is true, else ``x2`` (broadcast); lazy (the ``where`` row)."""
    return FUNCTIONS["where"](condition, x1, x2)
