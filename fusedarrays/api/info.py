"""``fa.__array_namespace_info__()``: what this namespace supports, as the Array API's
inspection object reports it (capabilities, devices, default and supported dtypes).

Where it sits: over :mod:`.devices` and :mod:`..ir.dtypes`, re-exported by the namespace.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtypes
from .devices import check_device, default_device, devices

# The rank that every operation supports end to end: NumPy's limit (NPY_MAXDIMS, 64 since NumPy
# 2.0), which an array's values meet when they leave (``.get()``, ``np.asarray``). Kernels collapse
# size-1 and contiguous axes, so they see far fewer; a lazy array of more dimensions can be built
# but not read back.
MAX_DIMENSIONS = 64

_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "c", "numeric": "iufc",
}


class Info:
    """The namespace's capabilities, devices and dtypes."""

    def capabilities(self) -> dict:
        # x[mask], nonzero and unique_* give data-dependent shapes (a compaction, computed when
        # its size is asked for); 2024.12 adds "max dimensions"
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": MAX_DIMENSIONS}

    def default_device(self):
        return default_device()

    def devices(self) -> list:
        return devices()

    def default_dtypes(self, *, device=None) -> dict:
        check_device(device, "default_dtypes")
        return {"real floating": np.dtype(np.float64),
                "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None) -> dict:
        check_device(device, "dtypes")
        kinds = (kind,) if isinstance(kind, str) or kind is None else tuple(kind)
        found = {}
        for dt in dtypes.SUPPORTED:
            if dt == np.float16:
                continue                    # supported, but no Array API dtype
            if kind is None or any(dt.kind in _KINDS[k] for k in kinds):
                found[dt.name] = dt
        return found


def __array_namespace_info__() -> Info:
    return Info()
