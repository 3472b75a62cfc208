"""The error for a NumPy function or ufunc method that fusedarrays does not implement."""

from __future__ import annotations

from ..errors import UnsupportedOperationError
from .array import _tracing


def refusal(what: str, instead: str = "") -> UnsupportedOperationError:
    """The error for a NumPy function (``what``: ``np.mean``, ``np.add.reduce``, or with the
    option it can't take) that fusedarrays does not implement on its arrays."""
    tracer = _tracing.tracer
    if tracer is not None:
        return UnsupportedOperationError(
            f"{what} is not implemented by fusedarrays, and inside fa.fuse ({tracer.name}"
            " is being traced) an array has no host values to call NumPy on; compute it "
            "outside the fused function and pass the result in as an argument"
            + (f", or {instead}" if instead else ""))
    call = what.split(" ")[0]
    return UnsupportedOperationError(
        f"{what} is not implemented by fusedarrays; "
        + (f"{instead}, or " if instead else "")
        + f"call NumPy on the host values instead: {call}(x.get()) "
        "(fusedarrays.api.npfunctions.IMPLEMENTED lists the NumPy functions it implements, "
        "fusedarrays.ir.ops.OPS its ufuncs)")


def options_text(options: dict) -> str:
    """``casting='unsafe', where=<ndarray>``: the options a refusal names, values short."""
    return ", ".join(f"{k}={v!r}" if isinstance(v, (str, int, float, type(None)))
                     else f"{k}=<{type(v).__name__}>" for k, v in sorted(options.items()))
