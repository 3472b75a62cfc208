"""fusedarrays: lazy NumPy-like arrays fused into one generated GPU kernel per expression.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.arange(4, dtype=np.float32))
>>> y = fa.sqrt(x) * 2 + 1          # recorded, not run
>>> y.get()                          # one fused kernel
array([1.       , 3.       , 3.828427 , 4.4641013], dtype=float32)
"""

from .api import elementwise as _elementwise
from .api import interop as _interop  # noqa: F401 - __dlpack__, __cuda_array_interface__
from .api import linalg, random
from .api import npfunctions as _npfunctions  # noqa: F401 - np.<function>(x) dispatches here
from .api.array import asarray, compute, ndarray
from .api.creation import (
    arange,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .api.display import explain
from .api.indexing import take, take_along_axis
from .api.manipulation import broadcast_to, expand_dims, reshape, squeeze, transpose
from .api.profile import Profile, profile
from .api.reductions import FUNCTIONS_REDUCING as _REDUCING
from .errors import (
    AmbiguousTruthValueError,
    CompileError,
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
from .fuse.function import fuse
from .runtime.backend import free_cached_memory, memory_info
from .runtime.backend import get_backend as _get_backend
from .runtime.precompile import precompile
from .runtime.realize import cache_info, clear_cache
from .runtime.records import reset_stats, stats, timings
from .version import __version__  # noqa: F401

globals().update(_elementwise.FUNCTIONS)
globals().update(_REDUCING)


def backend() -> str:
    """The active backend's name: ``cuda``, ``cpu`` or ``sim``."""
    return _get_backend().name


__all__ = [
    "AmbiguousTruthValueError", "CompileError", "DTypeError", "DeviceUnavailableError",
    "ForkedDeviceError", "FusedArraysError", "OutOfMemoryError", "ReadOnlyArgumentError",
    "ShapeError", "TracerConversionError", "UnsupportedOperationError", "arange", "asarray",
    "backend", "broadcast_to", "cache_info", "clear_cache", "compute", "empty", "empty_like",
    "expand_dims", "explain", "free_cached_memory", "full", "full_like", "fuse", "linalg",
    "memory_info",
    "ndarray", "ones", "ones_like", "precompile", "random", "reset_stats", "reshape", "squeeze",
    "stats", "take", "take_along_axis",
    "timings", "transpose", "zeros", "zeros_like",
    "Profile", "profile",
    *sorted(_elementwise.FUNCTIONS), *sorted(_REDUCING),
]
