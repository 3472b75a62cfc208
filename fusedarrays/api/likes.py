"""NEP 35: NumPy's creation functions called with ``like=`` an fa array give fa arrays.

Where it sits: rows of ``api/npfunctions.py``'s table (:data:`FUNCTIONS_LIKE`). NumPy hands
``np.asarray([1], like=x)`` to ``x.__array_function__`` with the creation function as ``func``
and ``like`` taken out of the arguments (dask's ``argmax`` makes its results so, through its
``meta``). Every NumPy 2.4 function that takes ``like=`` is here:

- ``array asarray asanyarray ascontiguousarray``: :func:`creation.asarray` (an fa array given
  is returned as it is, or copied by ``np.array``); ``ndmin`` adds leading axes;
- ``zeros ones empty full eye identity tri arange``: fusedarrays' own (NumPy's default dtypes);
- ``frombuffer fromfile fromfunction fromiter fromstring loadtxt genfromtxt require``: NumPy
  reads or makes the values on the host, where they are, and they are uploaded.

``order`` may be ``'C'``, ``'K'``, ``'A'`` or None (fusedarrays' arrays are C-ordered) and
``device`` None or ``'cpu'``; ``np.asfortranarray`` and other values are refused by name.
"""

from __future__ import annotations

import numpy as np

from . import creation
from .refusals import options_text, refusal

_ORDERS = (None, "C", "K", "A")


def _defaults(name: str, order=None, device=None, subok=False) -> None:
    bad = {}
    if order not in _ORDERS:
        bad["order"] = order
    if device not in (None, "cpu"):
        bad["device"] = device
    if subok not in (False, True):
        bad["subok"] = subok
    if bad:
        raise refusal(f"np.{name} with like= and {options_text(bad)}",
                      "fusedarrays' arrays are C-ordered: leave order= out")


def _array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0):
    _defaults("array", order, subok=subok)
    out = creation.array(object, dtype, copy=copy)
    return out if out.ndim >= ndmin else out.reshape((1,) * (ndmin - out.ndim) + out.shape)


def _asarray(name: str):
    def asarray(a, dtype=None, order=None, *, device=None, copy=None):
        _defaults(name, order, device)
        return creation.asarray(a, dtype, copy=copy)
    asarray.__name__ = name
    return asarray


def _ascontiguousarray(a, dtype=None):
    return creation.asarray(a, dtype)


def _filled(name: str, value):
    def filled(shape, dtype=None, order="C", *, device=None):
        _defaults(name, order, device)
        dtype = np.float64 if dtype is None else dtype
        return creation.empty(shape, dtype) if value is None else creation.full(
            shape, value, dtype)
    filled.__name__ = name
    return filled


def _full(shape, fill_value, dtype=None, order="C", *, device=None):
    _defaults("full", order, device)
    return creation.full(shape, fill_value, dtype)


def _arange(*args, dtype=None, device=None, **bounds):
    _defaults("arange", device=device)
    if dtype is not None:   # else NumPy's: a fourth positional (dask's chunk.arange passes one)
        bounds["dtype"] = dtype
    values = np.arange(*args, **bounds)  # NumPy's values and dtype, uploaded
    return creation.asarray(values)


def _eye(N, M=None, k=0, dtype=float, order="C", *, device=None):
    _defaults("eye", order, device)
    return creation.eye(N, M, k=k, dtype=dtype)


def _identity(n, dtype=None):
    return creation.eye(n, dtype=np.float64 if dtype is None else dtype)


def _tri(N, M=None, k=0, dtype=float):
    return creation.asarray(np.tri(N, M, k, dtype))


def _on_the_host(func):
    """A creation function whose values NumPy reads or makes on the host: uploaded."""
    def created(*args, **kwargs):
        return creation.asarray(func(*args, **kwargs))
    created.__name__ = func.__name__
    return created


FUNCTIONS_LIKE = {
    np.array: _array, np.asarray: _asarray("asarray"), np.asanyarray: _asarray("asanyarray"),
    np.ascontiguousarray: _ascontiguousarray, np.zeros: _filled("zeros", 0),
    np.ones: _filled("ones", 1), np.empty: _filled("empty", None), np.full: _full,
    np.arange: _arange, np.eye: _eye, np.identity: _identity, np.tri: _tri,
}
FUNCTIONS_LIKE.update({f: _on_the_host(f) for f in (
    np.frombuffer, np.fromfile, np.fromfunction, np.fromiter, np.fromstring, np.loadtxt,
    np.genfromtxt, np.require)})
