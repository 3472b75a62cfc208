"""fusedarrays: lazy NumPy-like arrays fused into one generated GPU kernel per expression.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.arange(4, dtype=np.float32))
>>> y = fa.sqrt(x) * 2 + 1          # recorded, not run
>>> y.get()                          # one fused kernel
array([1.       , 3.       , 3.828427 , 4.4641013], dtype=float32)
"""

import math as _math

from . import fuse as _fuse_package  # noqa: F401 - see `del` below
from .api import daskhook as _daskhook
from .api import elementwise as _elementwise
from .api import interop as _interop  # noqa: F401 - __dlpack__, __cuda_array_interface__
from .api import ondemand as _ondemand  # noqa: F401 - members loaded on first use
from .api import protocols as _protocols
from .api import special
from .api import standard as _standard
from .api.array import compute, ndarray
from .api.creation import (
    arange,
    array,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from .api.datatypes import DTYPES as _DTYPES
from .api.datatypes import astype, can_cast, finfo, iinfo, isdtype, result_type
from .api.devices import Device, default_device, devices
from .api.info import __array_namespace_info__
from .api.manipulation import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    matrix_transpose,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    transpose,
    unstack,
)
from .api.products import matmul, tensordot, vecdot
from .api.reductions import FUNCTIONS_REDUCING as _REDUCING
from .api.scans import FUNCTIONS_SCANNING as _SCANNING
from .api.standard import angle, imag, real
from .errors import (
    AmbiguousTruthValueError,
    CaptureError,
    CompileError,
    DeviceMismatchError,
    DeviceUnavailableError,
    DTypeError,
    ForkedDeviceError,
    FusedArraysError,
    OutOfMemoryError,
    ReadOnlyArgumentError,
    ShapeError,
    TracerConversionError,
    UnsupportedOperationError,
)
from .runtime.backend import free_cached_memory, memory_info
from .runtime.backend import get_backend as _get_backend
from .runtime.realize import cache_info, clear_cache
from .runtime.records import reset_stats, stats, timings
from .version import __version__  # noqa: F401

# The subpackage fusedarrays.fuse was loaded above and its name is taken off this module here: a
# subpackage's first import sets it as its parent's attribute, which would hide the lazy `fuse`
# function below (fa.fuse) from then on; once loaded, importing its modules sets nothing here.
del globals()["fuse"]

# Loaded on first use (module __getattr__ below): each costs import time that a program computing
# `a * b + c` never needs. name -> (module under fusedarrays, attribute or None for the module).
_LAZY = {
    "linalg": (".api.linalg", None),
    "random": (".api.random", None),
    "fuse": (".fuse.function", "fuse"),
    "global_norm": (".fuse.across", "global_norm"),
    "tensor_norm": (".fuse.pertensor", "tensor_norm"),
    "precompile": (".runtime.precompile", "precompile"),
    **{n: (".runtime.capture", n) for n in ("capture", "graph", "on_stream")},
    "explain": (".api.display", "explain"),
    "Profile": (".api.profile", "Profile"),
    "profile": (".api.profile", "profile"),
    "einsum": (".api.einsum", "einsum"),
    "einsum_path": (".api.einsum", "einsum_path"),
    **{n: (".api.comparisons", n) for n in ("allclose", "array_equal", "array_equiv", "isclose")},
    **{n: (".api.counting", n) for n in ("bincount", "histogram")},
    **{n: (".api.differences", n) for n in ("diff", "ediff1d")},
    **{n: (".api.indexing", n) for n in ("take", "take_along_axis")},
    **{n: (".api.indexmath", n) for n in ("ravel_multi_index", "unravel_index")},
    **{n: (".api.masks", n) for n in ("argwhere", "count_nonzero", "flatnonzero", "nonzero")},
    **{n: (".api.sorting", n) for n in (
        "argsort", "searchsorted", "sort", "unique", "unique_all", "unique_counts",
        "unique_inverse", "unique_values")},
    # api/nanfunctions.py's FUNCTIONS_NAN and api/quantiles.py's FUNCTIONS_QUANTILE
    # (tests/pure/test_import_cost.py checks these names against the tables)
    **{n: (".api.nanfunctions", n) for n in (
        "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmin",
        "nanprod", "nanstd", "nansum", "nanvar")},
    **{n: (".api.quantiles", n) for n in (
        "median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile")},
}


def __getattr__(name: str):
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'fusedarrays' has no attribute {name!r}")
    import importlib

    value = importlib.import_module(entry[0], __name__)
    value = value if entry[1] is None else getattr(value, entry[1])
    globals()[name] = value     # later look-ups find it without coming here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


globals().update(_elementwise.FUNCTIONS)
globals().update(_REDUCING)
globals().update(_SCANNING)        # cumulative_sum, cumulative_prod, cumsum, cumprod
globals().update(_DTYPES)          # fa.float32 … fa.bool: NumPy's dtype objects
for _name in _LAZY.keys() & globals().keys():
    del globals()[_name]           # nanmax's full form is api/nanfunctions', not the reduction's
del _name
# the standard's clip (optional bounds), round and where over the op-table rows of those names
clip, round, where = _standard.clip, _standard.round, _standard.where

__array_api_version__ = _protocols.API_VERSION
e, pi, inf, nan, newaxis = _math.e, _math.pi, _math.inf, _math.nan, None
concatenate = concat               # NumPy's name


def backend() -> str:
    """The active backend's name: ``cuda``, ``cpu`` or ``sim``."""
    return _get_backend().name


__all__ = [
    "AmbiguousTruthValueError", "CaptureError", "CompileError", "DTypeError", "Device",
    "DeviceMismatchError",
    "DeviceUnavailableError", "default_device", "devices",
    "ForkedDeviceError", "FusedArraysError", "OutOfMemoryError", "ReadOnlyArgumentError",
    "ShapeError", "TracerConversionError", "UnsupportedOperationError", "arange", "asarray",
    "backend", "broadcast_to", "cache_info", "clear_cache", "compute", "empty", "empty_like",
    "expand_dims", "explain", "free_cached_memory", "full", "full_like", "fuse",
    "global_norm", "linalg", "tensor_norm",
    "memory_info",
    "ndarray", "ones", "ones_like", "precompile", "random", "reset_stats", "reshape", "squeeze",
    "stats", "take", "take_along_axis", "argwhere", "count_nonzero", "flatnonzero", "nonzero",
    "timings", "transpose", "zeros", "zeros_like",
    "Profile", "profile",
    *sorted(_elementwise.FUNCTIONS), *sorted(_REDUCING), *sorted(_SCANNING),
    *_LAZY,
    # the Array API namespace (api/creation.py, manipulation.py, datatypes.py, standard.py …)
    "Device", "__array_api_version__", "__array_namespace_info__", "matrix_transpose",
    "angle", "array", "astype", "broadcast_arrays", "can_cast", "concat",
    "concatenate", "e", "eye", "finfo", "flip", "from_dlpack", "iinfo", "imag", "inf",
    "isdtype", "linspace", "matmul", "meshgrid", "moveaxis", "nan", "newaxis", "permute_dims",
    "pi", "real", "repeat", "result_type", "roll", "special", "stack", "tensordot", "tile",
    "tril", "triu", "unstack", "vecdot", *sorted(_DTYPES),
    # sorted and counted by the backend's array library (api/sorting.py, api/counting.py)
    "argsort", "searchsorted", "sort", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "unique", "bincount", "histogram",
    # einsum, differences and whole-array comparisons (api/einsum.py, differences.py,
    # comparisons.py)
    "allclose", "array_equal", "array_equiv", "diff", "ediff1d", "einsum", "einsum_path",
    "isclose",
    # flat and multi-dimensional indices (api/indexmath.py)
    "ravel_multi_index", "unravel_index",
]
__all__ = sorted(set(__all__))

# dask.array, distributed, dask-cuda: fa registers with each (chunk type, serializers) now if it
# is imported already, else once it is (api/daskhook.py): a worker unpickling an fa chunk's type
# finds fa's serializers, a client that imported fusedarrays first sends fa's device buffers.
_daskhook.watch()
