"""Scans users call: ``fa.cumulative_sum`` and ``fa.cumulative_prod`` (the Array API's), NumPy's
``fa.cumsum`` and ``fa.cumprod`` (``axis=None`` flattens), the methods ``x.cumsum()`` and
``x.cumprod()``, and ``np.cumsum(x)`` … through ``__array_function__`` (``api/npfunctions.py``).

Where it sits: beside :mod:`reductions`. Each call makes one lazy scan node (``ir/scans.py``)
over the expression it is given, with NumPy's axis handling and result dtypes (bool and small
integers give the platform integer, as ``np.cumsum``); the planner cuts the graph there
(``compiler/planner.py``, ``compiler/scan.py``): the expression feeding the scan is computed
inside its kernel, what reads the scan reads its result from a buffer.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
>>> fa.cumulative_sum(x * 2, axis=1).get()
array([[ 0,  2,  6],
       [ 6, 14, 24]])
>>> fa.cumsum(x).get()
array([ 0,  1,  3,  6, 10, 15])
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes, graph
from ..ir.reductions import result_dtype
from ..ir.scans import SCANS, scan_node
from .array import _wrap, asarray, ndarray
from .reductions import _check_out


def scan(name: str, x, axis: int, dtype=None, include_initial: bool = False) -> ndarray:
    """Scan ``name`` (a row of ``ir/scans.py``) of ``x`` along ``axis``, NumPy's dtypes."""
    row = SCANS[name]
    x = asarray(x)
    node = x._resolved()
    if any(n.kind in ("random", "gather") for n in graph.walk([node])):
        # a draw or gather indexes by the element order of the kernel that reads it, which
        # the scan kernel's walk is not: its input is computed first
        node = x.compute()._resolved()
    axis = operator.index(axis)
    if not -node.ndim <= axis < node.ndim:
        raise np.exceptions.AxisError(axis, node.ndim)
    if dtype is not None:
        out = dtypes.as_dtype(dtype, what=f"fa.{name} dtype=")
        if out.kind == "b":
            raise DTypeError(f"fa.{name}(..., dtype=bool) is not supported; use a numeric "
                             "dtype")
    else:
        out = result_dtype(row.reduction, node.dtype)
    node = graph.cast(node, out)        # NumPy's accumulate casts each element to dtype=
    return _wrap(scan_node(name, node, axis % node.ndim, include_initial, out))


def _array_api(name: str):
    def function(x, /, *, axis=None, dtype=None, include_initial=False, out=None):
        _check_out(name, out)
        x = asarray(x)
        if x.ndim == 0:                 # as NumPy: a 0-d array scans as one element
            x = x.reshape((1,))
        if axis is None:
            if x.ndim != 1:
                raise ValueError(f"fa.{name}: for arrays which have more than one dimension "
                                 f"``axis`` argument is required (x.shape={x.shape})")
            axis = 0
        return scan(name, x, axis, dtype, bool(include_initial))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"{SCANS[name].doc} The Array API's ``{name}`` (``axis`` needed unless "
                        "``x`` is 1-D; ``include_initial`` puts the identity first); NumPy's "
                        f"``np.{name}``: same arguments, dtypes, values.")
    return function


def _numpy(name: str):
    row = SCANS[name]

    def function(a, axis=None, dtype=None, out=None):
        _check_out(row.numpy, out)
        a = asarray(a)
        if axis is None:                # NumPy flattens (C order)
            a, axis = a.reshape((-1,)), 0
        return scan(name, a, axis, dtype)
    function.__name__ = function.__qualname__ = row.numpy
    function.__doc__ = (f"{row.doc} NumPy's ``np.{row.numpy}``: ``axis=None`` scans the "
                        "flattened array; same dtypes and values.")
    return function


FUNCTIONS_SCANNING = {name: _array_api(name) for name in SCANS}
FUNCTIONS_SCANNING.update({SCANS[name].numpy: _numpy(name) for name in SCANS})


def _method(function):
    def method(self, axis=None, dtype=None, out=None):
        return function(self, axis, dtype, out)
    method.__name__ = function.__name__
    method.__doc__ = function.__doc__
    return method


for _name in ("cumsum", "cumprod"):
    setattr(ndarray, _name, _method(FUNCTIONS_SCANNING[_name]))
