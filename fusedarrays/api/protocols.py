"""The ordinary object protocols of ``fa.ndarray``: ``__array_namespace__``, ``device`` and
``to_device``, ``mT``, ``__format__``, ``tolist``, ``__iter__``, ``__copy__``/``__deepcopy__``,
pickling, ``__hash__ = None``, ``__complex__``, ``@``, and NumPy's ``real``/``imag`` attributes and
``conj()``/``conjugate()`` methods (lazy op-table rows).

Where it sits: beside :mod:`.elementwise`, installing methods on the array type as that module
installs its operators. Pickling stores the values (a pending array computes first) and loads
them with ``fa.asarray`` on the active backend; a copy is a new lazy ``copy`` node.
"""

from __future__ import annotations

import sys

from .array import asarray, ndarray, to_device
from .devices import default_device, resolve
from .elementwise import FUNCTIONS
from .manipulation import matrix_transpose
from .products import matmul

API_VERSION = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _array_namespace(self, /, *, api_version=None):
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"__array_namespace__: fusedarrays implements Array API {API_VERSION}; "
                         f"api_version={api_version!r} is not one of {_VERSIONS}: pass one "
                         f"of them, or None for {API_VERSION}")
    # the namespace is the package itself, always imported before any array can exist
    return sys.modules[__name__.split(".")[0]]


def _device(self):
    for buffer in self._resolved().buffers:
        return buffer.backend.device
    return default_device()


def _to_device(self, device, /, *, stream=None):
    """The array on ``device``: itself where it is there, else a copy there (device to device;
    ``stream`` is accepted and unused: the copy is ordered on both devices' streams)."""
    target = resolve(device, "to_device")
    return self if target is None else to_device(self, target)


def _format(self, spec: str) -> str:
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError(f"unsupported format string {spec!r} for a fa.ndarray of shape "
                        f"{self.shape}: format its elements, or a 0-d array (x[i])")
    return str(self)


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    self.compute()   # once, not per element
    return (self[i] for i in range(self.shape[0]))


def _reduce(self):
    return asarray, (self.get(),)


def _deepcopy(self, memo):
    return self.copy()


def _install() -> None:
    ndarray.__array_namespace__ = _array_namespace
    ndarray.device = property(_device, doc="Where the array's memory is (a fa Device).")
    ndarray.to_device = _to_device
    ndarray.mT = property(matrix_transpose, doc="The last two axes swapped (a view).")
    ndarray.__format__ = _format
    ndarray.__complex__ = lambda self: complex(self._host_value("complex()"))
    ndarray.tolist = lambda self: self.get().tolist()
    ndarray.__iter__ = _iter
    ndarray.__copy__ = lambda self: self.copy()
    ndarray.__deepcopy__ = _deepcopy
    ndarray.__reduce__ = _reduce
    ndarray.__hash__ = None     # mutable and compared elementwise, as NumPy's arrays
    ndarray.__matmul__ = lambda self, other: matmul(self, other)
    ndarray.__rmatmul__ = lambda self, other: matmul(other, self)
    ndarray.real = property(FUNCTIONS["real"], doc="The real part (lazy; NumPy's ``.real``).")
    ndarray.imag = property(FUNCTIONS["imag"], doc="The imaginary part (lazy; zeros for real "
                                                   "dtypes, as NumPy's ``.imag``).")
    ndarray.conj = ndarray.conjugate = lambda self: FUNCTIONS["conjugate"](self)


_install()
