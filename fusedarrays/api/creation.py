"""Creating arrays: ``fa.empty``, ``full``, ``zeros``, ``ones``, their ``*_like`` forms, ``arange``.

``fa.asarray`` (arrays from data) lives with the array type in :mod:`array`.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes, graph, layout
from ..runtime.backend import get_backend, new_buffer
from .array import asarray, ndarray


def empty(shape, dtype=float) -> ndarray:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dt = dtypes.as_dtype(dtype)
    buffer = new_buffer(get_backend(), layout.size_of(shape) * dt.itemsize)
    return ndarray(graph.leaf(buffer, dt, shape, layout.contiguous_strides(shape), 0))


def full(shape, fill_value, dtype=None) -> ndarray:
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    out = empty(shape, dtype)
    if out.size:
        out[...] = fill_value
    return out


def zeros(shape, dtype=float) -> ndarray:
    return full(shape, 0, dtype)


def ones(shape, dtype=float) -> ndarray:
    return full(shape, 1, dtype)


def empty_like(a, dtype=None) -> ndarray:
    return empty(np.shape(a) if not isinstance(a, ndarray) else a.shape, dtype or a.dtype)


def zeros_like(a, dtype=None) -> ndarray:
    return full(a.shape, 0, dtype or a.dtype)


def ones_like(a, dtype=None) -> ndarray:
    return full(a.shape, 1, dtype or a.dtype)


def full_like(a, fill_value, dtype=None) -> ndarray:
    return full(a.shape, fill_value, dtype or a.dtype)


def arange(start, stop=None, step=1, dtype=None) -> ndarray:
    return asarray(np.arange(start, stop, step, dtype=dtype))
