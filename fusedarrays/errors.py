"""The exceptions fusedarrays raises.

One root, :class:`FusedArraysError`, and subclasses on builtin bases so that code written for NumPy
(``except TypeError``, ``except ValueError``) keeps working. Messages say what happened, with the
values, and what to do. Bottom layer: imports nothing from the package.
"""

from __future__ import annotations

from numpy._core._exceptions import _UFuncInputCastingError, _UFuncOutputCastingError
from numpy.linalg import LinAlgError as _NumPyLinAlgError


class FusedArraysError(Exception):
    """Root of every error fusedarrays raises on purpose."""


class ConfigError(FusedArraysError, ValueError):
    """A ``FUSEDARRAYS_*`` setting has a value that can't be parsed."""


class ShapeError(FusedArraysError, ValueError):
    """Shapes that don't broadcast, or a reshape or view that doesn't fit."""


class AmbiguousTruthValueError(FusedArraysError, ValueError):
    """``bool()`` of an array with other than one element (NumPy raises ValueError too)."""


class DTypeError(FusedArraysError, TypeError):
    """A dtype fusedarrays does not support (complex, strings, objects …)."""


class UnsupportedOperationError(FusedArraysError, TypeError):
    """An op, or an op on these dtypes, that fusedarrays does not compute."""


class LinAlgError(FusedArraysError, _NumPyLinAlgError):
    """A matrix the factorization or solver can't take (singular, not positive definite, not
    square, or a routine that did not converge): ``np.linalg.LinAlgError`` too, as NumPy
    raises it."""


class UFuncInputCastingError(FusedArraysError, _UFuncInputCastingError):
    """A ufunc's operand can't be cast to its loop under ``casting=`` (``dtype=`` chose the
    loop): NumPy's error type and text, and what to do."""

    def __str__(self) -> str:
        return (super().__str__() + "; pass casting='unsafe' to allow it, or cast the operand "
                "first with .astype()")


class UFuncOutputCastingError(FusedArraysError, _UFuncOutputCastingError):
    """A ufunc's result can't be cast to its ``out=`` array's dtype under ``casting=``:
    NumPy's error type and text, and what to do."""

    def __str__(self) -> str:
        return (super().__str__() + "; write into an array of the result's dtype, or pass "
                "casting='unsafe' to allow it")


class TracerConversionError(UnsupportedOperationError):
    """Inside ``fa.fuse``, a traced array was asked for a host value (``bool()``, an ``if``,
    ``float()``, ``.get()``, ``np.asarray`` …): it has none while the function is traced."""


class ReadOnlyArgumentError(FusedArraysError, ValueError):
    """A fused function writes to an argument that is a read-only NumPy array."""


class DeviceUnavailableError(FusedArraysError, RuntimeError):
    """The cuda backend was asked for, but no CUDA device is visible."""


class DeviceMismatchError(FusedArraysError, ValueError):
    """Operands of one operation live on two devices (``cuda:0`` and ``cuda:1``); fusedarrays
    never copies between devices implicitly (PyTorch's rule): move one with ``to_device``."""


class OutOfMemoryError(FusedArraysError, MemoryError):
    """The device has no room for an allocation, even after fusedarrays gave back the free memory
    it kept and retried. The message names the request and what fusedarrays, its pool and the
    device hold."""


class ForkedDeviceError(DeviceUnavailableError):
    """The GPU was used in a process forked after its parent had used it (CUDA can't be)."""


class CaptureError(FusedArraysError, RuntimeError):
    """Inside ``fa.capture()`` / ``fa.on_stream()``, something that a captured step can't hold:
    a host read of device memory, an allocation on another stream, a nested capture."""


class CompileError(FusedArraysError, RuntimeError):
    """Compiling a generated kernel failed. ``.source`` holds the generated source."""

    def __init__(self, message: str, source: str = ""):
        self.message, self.source = message, source
        numbered = "\n".join(f"{n:4d}  {line}" for n, line in enumerate(source.splitlines(), 1))
        text = f"{message}\n--- generated source ---\n{numbered}" if source else message
        super().__init__(text)

    def __reduce__(self):
        # from a compile worker process: rebuilt with its source, not only the joined text
        return type(self), (self.message, self.source)
