"""Indexing beyond views: boolean-mask writes as fused ``where``s.

``x[mask] = v`` (``mask`` a boolean array of ``x``'s shape, ``v`` a scalar or a one-element
array) is ``x[...] = where(mask, v, x)``: one kernel, no compaction, and the same result as
NumPy's. Reading ``x[mask]`` (a data-dependent size) and assigning an array of the selected
elements' values in order are not supported yet; they raise ``IndexError`` naming the
alternative.
"""

from __future__ import annotations

import numpy as np

from .array import ndarray


def is_mask(key) -> bool:
    """Whether ``key`` is a boolean array (fa or NumPy): a mask, not a basic index."""
    return isinstance(key, (ndarray, np.ndarray)) and key.dtype == np.bool_


def masked_write(x: ndarray, mask, value) -> None:
    """``x[mask] = value`` as ``x[...] = where(mask, value, x)``."""
    from .elementwise import FUNCTIONS

    if tuple(mask.shape) != x.shape:
        raise IndexError(f"x[mask] = v: the mask's shape {tuple(mask.shape)} must equal the "
                         f"array's {x.shape} (a mask over leading axes is not supported)")
    if isinstance(value, (ndarray, np.ndarray)) and value.size != 1:
        raise IndexError(f"x[mask] = v with an array v of shape {value.shape} assigns v's values "
                         "to the selected elements in order, which fusedarrays does not support; "
                         "a scalar v is supported, and fa.where(mask, v, x) chooses elementwise")
    if isinstance(value, (ndarray, np.ndarray)) and value.ndim:
        value = value.reshape(())
    x[...] = FUNCTIONS["where"](mask, value, x)


ndarray._masked_write = masked_write
