"""Products: ``matmul`` (and ``@``), ``vecdot``, ``tensordot``, as a plain implementation.

Where it sits: over :mod:`.array`, re-exported by the namespace and ``fa.linalg``, behind
``ndarray.__matmul__`` and ``np.matmul``/``np.vecdot``.
These are **not fused and not run by a generated kernel**: the operands are computed, copied to
the host, multiplied by NumPy (BLAS) and the result uploaded, so on the GPU each call costs two
transfers. NumPy's result dtypes (promotion of the two dtypes) and values are kept exactly; a
device implementation (cuBLAS through an optional extra, or a tiled kernel) is to replace the
body of :func:`_host_product` without changing these signatures.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes
from .array import _no_host_value_while_tracing, asarray, ndarray


def _host_product(name: str, fn, x1, x2, **kwargs) -> ndarray:
    a, b = asarray(x1), asarray(x2)
    _no_host_value_while_tracing((a, b), f"fa.{name} (computed by NumPy on the host, unfused)")
    if a.dtype.kind == "b" and b.dtype.kind == "b" and name != "matmul":
        raise DTypeError(f"{name} is not defined for (bool, bool)")
    result = np.asarray(fn(a.get(), b.get(), **kwargs))
    dtypes.as_dtype(result.dtype, what=f"{name} result of dtype")
    return asarray(result)


def matmul(x1, x2, /) -> ndarray:
    """``x1 @ x2`` as ``np.matmul`` (batched, broadcast), computed by NumPy on the host."""
    a, b = asarray(x1), asarray(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands need at least one dimension, got shapes {a.shape} "
                         f"and {b.shape}")
    return _host_product("matmul", np.matmul, a, b)


def vecdot(x1, x2, /, *, axis: int = -1) -> ndarray:
    """The dot product of vectors along ``axis`` (broadcast over the others), as
    ``np.vecdot``, computed on the host."""
    a, b = asarray(x1), asarray(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: operands need at least one dimension")
    return _host_product("vecdot", np.vecdot, a, b, axis=axis)


def tensordot(x1, x2, /, *, axes=2) -> ndarray:
    """``np.tensordot``, computed on the host (NumPy's result dtype)."""
    return _host_product("tensordot", np.tensordot, x1, x2, axes=axes)
