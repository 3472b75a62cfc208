"""Flat and multi-dimensional indices into one another: NumPy's ``unravel_index`` and
``ravel_multi_index`` on fa arrays (dask's whole-array ``argmax`` calls both on each chunk).

Where it sits: over :mod:`.elementwise` and :mod:`.reductions`, registered in
``npfunctions.IMPLEMENTED`` and re-exported by the namespace. The arithmetic is lazy and fused
(an integer division and remainder per axis, or a sum of products). NumPy raises for an index
out of range; so does fusedarrays, which needs the answer on the host: one fused ``any`` over
the indices and a one-bool read, the only synchronisation here (``mode="wrap"``/``"clip"`` of
``ravel_multi_index`` need none).

>>> import fusedarrays as fa, numpy as np
>>> [int(i) for i in fa.unravel_index(fa.asarray(np.int64(7)), (3, 4))]
[1, 3]
>>> int(fa.ravel_multi_index((fa.asarray(np.int64(1)), 3), (3, 4)))
7
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import DTypeError
from .array import _no_host_value_while_tracing, asarray, ndarray
from .elementwise import FUNCTIONS
from .reductions import FUNCTIONS_REDUCING

_INTP = np.dtype(np.intp)


def _dims(shape) -> tuple[int, ...]:
    return (operator.index(shape),) if np.ndim(shape) == 0 else tuple(map(operator.index, shape))


def _integer(name: str, x) -> ndarray:
    x = asarray(x)
    if x.dtype.kind not in "iu":
        raise DTypeError(f"np.{name}: indices must be integers, got {x.dtype} (NumPy refuses "
                         "them too); cast with .astype(np.int64)")
    return x


def _any_outside(values, bounds) -> bool:
    """Whether any ``value < 0 or value >= bound`` (one fused reduction, one bool read)."""
    _no_host_value_while_tracing(tuple(v for v in values if isinstance(v, ndarray)),
                                 "an index range check")
    bad = None
    for v, n in zip(values, bounds):
        outside = FUNCTIONS["logical_or"](FUNCTIONS["less"](v, 0),
                                          FUNCTIONS["greater_equal"](v, n))
        bad = outside if bad is None else FUNCTIONS["logical_or"](bad, outside)
    return bool(FUNCTIONS_REDUCING["any"](bad))


def unravel_index(indices, shape, order: str = "C") -> tuple[ndarray, ...]:
    """NumPy's ``unravel_index``: the coordinates of flat ``indices`` in an array of ``shape``
    (``order`` ``"C"`` or ``"F"``), each lazy and of ``indices``' shape, NumPy's ``intp``."""
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    dims = _dims(shape)
    flat = _integer("unravel_index", indices)
    size = int(np.prod(dims, dtype=np.int64))
    if _any_outside([flat], [size]):
        raise ValueError(f"index out of bounds for array with size {size} (np.unravel_index)")
    flat = flat.astype(_INTP)
    out, rest = [], flat
    # an extent 0 leaves no valid index: the range check raised, or there are no indices
    for n in (reversed(dims) if order == "C" else dims):
        out.append(FUNCTIONS["remainder"](rest, n))
        rest = FUNCTIONS["floor_divide"](rest, n)
    return tuple(reversed(out)) if order == "C" else tuple(out)


def ravel_multi_index(multi_index, dims, mode="raise", order: str = "C") -> ndarray:
    """NumPy's ``ravel_multi_index``: flat indices of the coordinates ``multi_index`` in an
    array of ``dims``; ``mode`` (``"raise"``, ``"wrap"``, ``"clip"``, or one per axis) as NumPy;
    lazy, NumPy's ``intp``."""
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    dims = _dims(dims)
    coords = [_integer("ravel_multi_index", c).astype(_INTP) for c in multi_index]
    if len(coords) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if any(m not in ("raise", "wrap", "clip") for m in modes):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap', got {mode!r}")
    checked = [(c, n) for c, n, m in zip(coords, dims, modes) if m == "raise"]
    if checked and _any_outside(*zip(*checked)):
        raise ValueError("invalid entry in coordinates array (np.ravel_multi_index)")
    coords = [FUNCTIONS["remainder"](c, n) if m == "wrap" else
              FUNCTIONS["clip"](c, 0, n - 1) if m == "clip" else c
              for c, n, m in zip(coords, dims, modes)]
    flat, stride = None, 1
    for c, n in (zip(reversed(coords), reversed(dims)) if order == "C" else zip(coords, dims)):
        term = c * stride if stride != 1 else c
        flat = term if flat is None else flat + term
        stride *= n
    return flat
