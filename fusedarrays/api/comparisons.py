"""Whole-array comparisons: ``isclose``, ``allclose``, ``array_equal``, ``array_equiv``.

Where it sits: over :mod:`.elementwise` and :mod:`.reductions`, re-exported by the namespace
(NumPy's names, as ``fa.concatenate``) and behind ``np.isclose`` & co. (``api/npfunctions.py``).

Routes: ``isclose`` is one **fused** elementwise expression, NumPy's own formula
``|x - y| <= atol + rtol * |y|`` and ``isfinite(y)``, or ``x == y`` (so infinities are close
only to themselves), with ``isnan(x) & isnan(y)`` or'ed in under ``equal_nan``; ``y`` is made
inexact first (``result_type(y, 1.0)``), Python numbers stay weak, the result is bool. The other
three are one **fused reduction** (``all`` of such an expression) and one scalar read, and return
a Python ``bool`` as NumPy does; shapes that differ (``array_equal``) or don't broadcast
(``array_equiv``) give ``False`` without a kernel.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.array([1.0, np.inf, np.nan]))
>>> fa.isclose(x, fa.asarray(np.array([1.0 + 1e-9, np.inf, np.nan]))).get()
array([ True,  True, False])
>>> fa.allclose(x, x, equal_nan=True)
True
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..ir import dtypes, layout
from .array import asarray, ndarray
from .elementwise import FUNCTIONS
from .reductions import reduce

_PYTHON_NUMBERS = (int, float, complex)


def _operand(value):
    """A Python number as it is (weak, as NumPy keeps it), anything else an fa array."""
    return value if isinstance(value, _PYTHON_NUMBERS) else asarray(value)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> ndarray:
    """Elementwise ``|a - b| <= atol + rtol * |b|`` as NumPy's ``isclose`` (not symmetric in
    ``a`` and ``b``): infinities are close only to themselves, NaN to nothing unless
    ``equal_nan``; one fused expression, a bool array.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.isclose(fa.asarray(np.array([1e10, 1e-8])), 1.00001e10).get()
    array([ True, False])
    """
    x, y, atol, rtol = (_operand(v) for v in (a, b, atol, rtol))
    if not isinstance(x, ndarray) and not isinstance(y, ndarray):
        x = asarray(x)            # two Python numbers: a 0-d array, NumPy's 0-d answer
    if isinstance(y, ndarray):     # inexact y: no abs(MIN_INT) overflow, NumPy's casting
        dt = np.result_type(y.dtype, 1.0)
        y = y if y.dtype == dt else y.astype(dt)
    if isinstance(x, ndarray) and dtypes.is_minifloat(x.dtype):
        # NumPy compares a bfloat16 or float8 operand as its exact float64 values (its y is
        # result_type(y, 1.0), float64), where JAX's rule would refuse float8 - float64
        x = x.astype(np.float64)
    elif isinstance(y, int):
        y = float(y)
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, _PYTHON_NUMBERS) and not math.isfinite(abs(tol)):
            warnings.warn(f"isclose: {name}={tol} is not finite; every comparison but x == y "
                          "is False", RuntimeWarning, stacklevel=2)
    # abs, <=, &, | and == as operators: Python numbers stay Python numbers (weak, as NumPy's)
    result = ((abs(x - y) <= atol + rtol * abs(y)) & _elementwise("isfinite", y)) | (x == y)
    if equal_nan:
        result = result | (_elementwise("isnan", x) & _elementwise("isnan", y))
    return result


def _elementwise(name: str, v):
    """``isfinite``/``isnan`` of an array, or of a Python number as a Python bool."""
    return bool(getattr(np, name)(v)) if isinstance(v, _PYTHON_NUMBERS) else FUNCTIONS[name](v)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``isclose(a, b, …)`` is True: one fused reduction and one
    scalar read, a Python ``bool`` as NumPy's ``allclose``.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.allclose(fa.asarray(np.array([1.0, 2.0])), 1.0)
    False
    """
    return bool(reduce("all", isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def _arrays(a1, a2) -> tuple[ndarray, ndarray] | None:
    """Both as fa arrays, or None where one can't be one (NumPy then answers False)."""
    try:
        return asarray(a1), asarray(a2)
    except Exception:       # NumPy's array_equal: anything asarray refuses is not equal
        return None


def _cannot_hold_nan(dtype: np.dtype) -> bool:
    return dtype.kind in "biu"


def array_equal(a1, a2, equal_nan: bool = False) -> bool:
    """Whether ``a1`` and ``a2`` have one shape and equal elements (NaNs equal each other
    under ``equal_nan``), a Python ``bool`` as NumPy's ``array_equal``: ``False`` at once for
    different shapes, else one fused reduction and one scalar read.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.array_equal(fa.asarray(np.array([1, 2])), np.array([1, 2]))
    True
    """
    pair = _arrays(a1, a2)
    if pair is None or pair[0].shape != pair[1].shape:
        return False
    x, y = pair
    same = FUNCTIONS["equal"](x, y)
    if equal_nan and not (_cannot_hold_nan(x.dtype) and _cannot_hold_nan(y.dtype)):
        same = FUNCTIONS["logical_or"](same, FUNCTIONS["logical_and"](
            FUNCTIONS["isnan"](x), FUNCTIONS["isnan"](y)))
    return bool(reduce("all", same))


def array_equiv(a1, a2) -> bool:
    """Whether ``a1`` and ``a2`` broadcast to one shape and are equal there, a Python
    ``bool`` as NumPy's ``array_equiv``: ``False`` at once where the shapes don't broadcast.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.array_equiv(fa.asarray(np.array([[1, 2], [1, 2]])), [1, 2])
    True
    """
    pair = _arrays(a1, a2)
    if pair is None:
        return False
    try:
        layout.broadcast_shapes(pair[0].shape, pair[1].shape)
    except ValueError:
        return False
    return bool(reduce("all", FUNCTIONS["equal"](*pair)))
