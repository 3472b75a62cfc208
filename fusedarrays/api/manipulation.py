"""View functions: ``fa.broadcast_to``, ``expand_dims``, ``squeeze``, ``reshape``, ``transpose``.

Each is metadata on the leaves under an array (:meth:`ndarray._view`); nothing is copied and no
fusion is cut.
"""

from __future__ import annotations

from ..ir import layout
from .array import asarray, ndarray


def broadcast_to(a, shape) -> ndarray:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return asarray(a)._view(lambda v: layout.broadcast_to(v, shape))


def expand_dims(a, axis) -> ndarray:
    return asarray(a)._view(lambda v: layout.expand_dims(v, axis))


def squeeze(a, axis=None) -> ndarray:
    return asarray(a).squeeze(axis)


def reshape(a, shape) -> ndarray:
    return asarray(a).reshape(shape)


def transpose(a, axes=None) -> ndarray:
    return asarray(a).transpose(axes)
