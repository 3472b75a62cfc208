"""``fa.ndarray`` members whose implementing module loads on first use.

``import fusedarrays`` loads what a program computing ``a * b + c`` needs; the modules that
install NumPy's function table (``api/npfunctions.py``, which pulls in linalg, sorting,
quantiles …), ``np.<ufunc>`` dispatch (``api/ufuncs.py``), index writes and ``ufunc.at``
(``api/scatter.py``), gathers (``api/indexing.py``), ``nonzero`` (``api/masks.py``) and the repr
(``api/display.py``) load when one of their members is first called. Each stub below imports its
module, which replaces the stub on the class (or in the table) with the real member, then
forwards the call to it, so the second call costs nothing extra. The package's own lazy names
(``fa.linalg``, ``fa.fuse`` …) are the module ``__getattr__`` in ``fusedarrays/__init__.py``.
"""

from __future__ import annotations

import importlib
import sys

from ..ir.ops import OPS
from .array import ndarray
from .elementwise import FUNCTIONS, UFUNC_METHODS

_PACKAGE = __name__.rpartition(".")[0]


def _load(module: str) -> None:
    importlib.import_module(f"{_PACKAGE}.{module}")


def _loaded() -> set[str]:
    """The modules of this package (``api/``) imported so far, by their short names."""
    prefix = _PACKAGE + "."
    return {name[len(prefix):] for name in sys.modules if name.startswith(prefix)}


def _method_stub(module: str, name: str):
    """``ndarray.<name>`` until ``api/<module>.py`` installs the real one."""
    def stub(self, *args, **kwargs):
        _load(module)
        member = ndarray.__dict__[name]
        if member is stub:      # the module did not install it: a bug here, not a recursion
            raise AssertionError(f"api/{module}.py did not install ndarray.{name}")
        return member(self, *args, **kwargs)

    stub.__name__ = stub.__qualname__ = name
    return stub


# NumPy looks __array_function__ / __array_ufunc__ up on the type at every call, so replacing
# the class attribute after the first call is seen by the next one
_STUBS = {
    "__array_function__": "npfunctions",
    "__array_ufunc__": "ufuncs",
    "_index_write": "scatter",
    "_take": "indexing",
    "nonzero": "masks",
    "__repr__": "display",
    "_repr_html_": "display",
}
for _name, _module in _STUBS.items():
    if _module not in _loaded():    # a module imported already installed its members
        setattr(ndarray, _name, _method_stub(_module, _name))


def _ufunc_method_stub(method: str, module: str):
    def stub(ufunc, inputs, kwargs):
        _load(module)
        return UFUNC_METHODS[method](ufunc, inputs, kwargs)
    return stub


# np.add.at(x, …) reaches api/ufuncs.py's dispatch, which looks "at" up here
UFUNC_METHODS.setdefault("at", _ufunc_method_stub("at", "scatter"))


def _at_stub(name: str):
    """``fa.<name>.at`` until ``api/scatter.py`` installs it (on the same rows as below)."""
    def at(*args, **kwargs):
        _load("scatter")
        real = FUNCTIONS[name].at
        if real is at:
            raise AssertionError(f"api/scatter.py did not install fa.{name}.at")
        return real(*args, **kwargs)
    at.__name__ = "at"
    return at


if "scatter" not in _loaded():
    for _row in OPS.values():
        if _row.rule == "ufunc" and not _row.module and _row.nin in (1, 2):
            FUNCTIONS[_row.name].at = _at_stub(_row.name)
