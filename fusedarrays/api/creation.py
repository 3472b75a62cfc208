"""Creating arrays: ``fa.asarray`` (the Array API form) and ``fa.array`` (NumPy's, copying),
``empty full zeros ones`` and their
``*_like`` forms, ``arange linspace eye meshgrid tril triu from_dlpack``.

Where it sits: over :mod:`.array` (the array type and the plain ``asarray`` it uses everywhere),
re-exported by the namespace. Signatures are the Array API 2024.12's (``dtype=``/``device=``
keywords; NumPy's positional ``dtype`` still works for ``empty``/``zeros``/``ones``). ``eye``,
``tril`` and ``triu`` are lazy expressions of index arrays (one kernel with their consumer);
``arange`` and ``linspace`` compute their values on the host, as NumPy does, and upload them.
"""

from __future__ import annotations

import operator

import numpy as np

from ..ir import dtypes, graph, layout
from ..runtime.backend import get_backend, new_buffer
from . import array as _array
from . import interop
from .array import ndarray
from .devices import resolve, using
from .elementwise import FUNCTIONS


def _shape(shape) -> tuple:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))


def asarray(obj, /, dtype=None, *, device=None, copy: bool | None = None) -> ndarray:
    """A ``fa.ndarray`` from a ``fa.ndarray``, NumPy data, a scalar or a (nested) sequence, or
    (zero-copy on the GPU) any ``__cuda_array_interface__`` / ``__dlpack__`` object.

    ``copy=True`` always gives new memory; ``copy=False`` raises ``ValueError`` where a copy is
    needed (a dtype change, host data going to the backend's memory); ``None`` copies only then.
    """
    target = resolve(device, "asarray")
    if isinstance(obj, ndarray):
        out = obj
        if dtype is not None and dtypes.as_dtype(dtype) != obj.dtype:
            if copy is False:
                raise ValueError(f"asarray(copy=False): a {obj.dtype} array as {dtype} needs a "
                                 "copy")
            out = obj.astype(dtype)
        elif copy and (target is None or target is _array._backend_of(obj._resolved())):
            out = obj.copy()
        return _moved(out, target, copy)
    backend = get_backend() if target is None else target
    zero_copy = (backend.import_array is not None and not isinstance(obj, np.ndarray)
                 and (hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__")))
    if copy is False and not zero_copy:
        raise ValueError(f"asarray(copy=False): a {type(obj).__name__} becomes a fa.ndarray "
                         f"only by a copy into the {backend.name} backend's memory")
    with using(device, "asarray"):
        out = _array.asarray(obj, dtype)   # a GPU producer's memory on its own device
    if copy and zero_copy and (target is None or target is _array._backend_of(out._resolved())):
        # a copy made now: the producer may write its memory before a lazy copy would run
        return out.copy().compute()
    return _moved(out, target, copy)


def _moved(out: ndarray, target, copy: bool | None) -> ndarray:
    """``out`` on ``target``'s device (None: where it is): a copy between devices, which
    ``copy=False`` refuses."""
    here = _array._backend_of(out._resolved())
    if target is None or target is here:
        return out
    if copy is False:
        raise ValueError(f"asarray(copy=False): the array is on {here.device}, and "
                         f"device={target.device} needs a copy; pass copy=None or True")
    return _array.to_device(out, target)


def array(obj, /, dtype=None, *, copy: bool | None = True, device=None) -> ndarray:
    """NumPy's ``np.array``: :func:`asarray` that copies by default (a ``fa.ndarray`` too)."""
    return asarray(obj, dtype, device=device, copy=copy)


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> ndarray:
    """An array from any ``__dlpack__`` producer (either DLPack capsule version, every dtype
    incl. complex): its memory without a copy where the backend reaches it there (a CUDA
    producer's on cuda, a host producer's on the host backends), else a copy, which
    ``copy=False`` refuses with ``BufferError``; ``copy=True`` always copies. A ``fa.ndarray``
    is returned as it is unless ``copy=True``.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.from_dlpack(np.array([1 + 2j, 3j], np.complex64)).get().tolist()
    [(1+2j), 3j]
    """
    target = resolve(device, "from_dlpack")
    if isinstance(x, ndarray):
        return asarray(x, device=device, copy=copy)
    return _moved(interop.from_dlpack(x, copy=copy), target, copy)


def empty(shape, dtype=None, *, device=None) -> ndarray:
    backend = resolve(device, "empty") or get_backend()
    shape = _shape(shape)
    dt = dtypes.as_dtype(np.float64 if dtype is None else dtype)
    buffer = new_buffer(backend, layout.size_of(shape) * dt.itemsize)
    return ndarray(graph.leaf(buffer, dt, shape, layout.contiguous_strides(shape), 0))


def full(shape, fill_value, dtype=None, *, device=None) -> ndarray:
    """``shape`` filled with ``fill_value``; dtype by default the value's (bool, int64,
    float64)."""
    if dtype is None:
        dtype = (fill_value.dtype if isinstance(fill_value, (ndarray, np.generic))
                 else np.asarray(fill_value).dtype)
    target = resolve(device, "full")   # zeros, ones and the *_like functions too
    out = empty(shape, dtype, device=None if target is None else target.device)
    if out.size:
        out[...] = fill_value
    return out


def zeros(shape, dtype=None, *, device=None) -> ndarray:
    return full(shape, 0, np.float64 if dtype is None else dtype, device=device)


def ones(shape, dtype=None, *, device=None) -> ndarray:
    return full(shape, 1, np.float64 if dtype is None else dtype, device=device)


def _like_shape(x) -> tuple:
    return x.shape if isinstance(x, ndarray) else np.shape(x)


def _like_device(x, device):
    """The Array API's ``*_like`` default: ``x``'s device."""
    return x.device if device is None and isinstance(x, ndarray) else device


def _like_dtype(x, dtype):
    return dtype if dtype is not None else (
        x.dtype if isinstance(x, ndarray) else np.asarray(x).dtype)


def empty_like(x, /, dtype=None, *, device=None) -> ndarray:
    return empty(_like_shape(x), _like_dtype(x, dtype),
                 device=_like_device(x, device))


def zeros_like(x, /, dtype=None, *, device=None) -> ndarray:
    return full(_like_shape(x), 0, _like_dtype(x, dtype),
                 device=_like_device(x, device))


def ones_like(x, /, dtype=None, *, device=None) -> ndarray:
    return full(_like_shape(x), 1, _like_dtype(x, dtype),
                 device=_like_device(x, device))


def full_like(x, /, fill_value, dtype=None, *, device=None) -> ndarray:
    return full(_like_shape(x), fill_value, _like_dtype(x, dtype),
                 device=_like_device(x, device))


def arange(start, /, stop=None, step=1, dtype=None, *, device=None) -> ndarray:
    """``np.arange``'s values (computed on the host, then uploaded)."""
    with using(device, "arange"):
        return _array.asarray(np.arange(start, stop, step, dtype=dtype))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint: bool = True) -> ndarray:
    """``np.linspace``'s values (computed on the host, then uploaded); float64 by default."""
    with using(device, "linspace"):
        return _array.asarray(np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def _diagonal_offsets(n_rows: int, n_cols: int) -> ndarray:
    """``j - i`` for every (row i, column j): a lazy int64 ``(n_rows, n_cols)`` expression of
    two broadcast index vectors."""
    rows = _array.asarray(np.arange(n_rows, dtype=np.int64)).reshape(n_rows, 1)
    cols = _array.asarray(np.arange(n_cols, dtype=np.int64)).reshape(1, n_cols)
    return cols - rows


def eye(n_rows, n_cols=None, /, *, k: int = 0, dtype=None, device=None) -> ndarray:
    """Ones on the ``k``-th diagonal, zeros elsewhere (float64 by default); lazy."""
    n_cols = n_rows if n_cols is None else n_cols
    dt = dtypes.as_dtype(np.float64 if dtype is None else dtype)
    with using(device, "eye"):
        return (_diagonal_offsets(n_rows, n_cols) == _clamp_k(k, n_rows, n_cols)).astype(dt)


def _clamp_k(k: int, n_rows: int, n_cols: int) -> int:
    """``k`` moved into ``[-n_rows, n_cols]``: the offsets ``j - i`` lie strictly inside, so
    every comparison with it is unchanged, and any Python int ``k`` (NumPy takes 2**63) becomes
    one the int64 offsets can be compared with."""
    return min(max(operator.index(k), -n_rows), n_cols)


def _triangle(x, k: int, lower: bool, name: str) -> ndarray:
    x = _array.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"{name} needs an array of at least 2 dimensions, got shape {x.shape}")
    offsets = _diagonal_offsets(*x.shape[-2:])
    k = _clamp_k(k, *x.shape[-2:])
    keep = offsets <= k if lower else offsets >= k
    return FUNCTIONS["where"](keep, x, x.dtype.type(0))


def tril(x, /, *, k: int = 0) -> ndarray:
    """``x`` with the elements above the ``k``-th diagonal zeroed; lazy (one ``where``)."""
    return _triangle(x, k, True, "tril")


def triu(x, /, *, k: int = 0) -> ndarray:
    """``x`` with the elements below the ``k``-th diagonal zeroed; lazy (one ``where``)."""
    return _triangle(x, k, False, "triu")


def meshgrid(*arrays, indexing: str = "xy") -> list[ndarray]:
    """Coordinate arrays from 1-D arrays, as broadcast views (no copy: read them, don't write
    into them)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [_array.asarray(a) for a in arrays]
    for a in arrays:
        if a.ndim != 1:
            raise ValueError(f"meshgrid takes 1-D arrays, got one of shape {a.shape}")
    shape = [a.size for a in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for n, a in enumerate(arrays):
        axis = 1 - n if indexing == "xy" and n < 2 and len(arrays) >= 2 else n
        along = [1] * len(arrays)
        along[axis] = a.size
        out.append(a.reshape(tuple(along))._view(
            lambda v, s=tuple(shape): layout.broadcast_to(v, s)))
    return out
