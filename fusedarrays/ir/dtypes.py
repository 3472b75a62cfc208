"""Supported dtypes and NumPy's type promotion.

Owns the list of dtypes fusedarrays computes with, their short codes (``f32``, ``u8`` …) used in
generated code and cache keys, the *compute type* each is held in inside a kernel (float16 values
are
held as float32 and rounded after every op, as NumPy's float16 loops do), and the resolution of an
op's loop dtypes. NumPy's ``ufunc.resolve_dtypes`` is the reference; Python scalars are *weak*
(NEP 50): they take the array's dtype when its kind is at least as high. complex64 and
complex128 (``c64``/``c128``) are numba's complex types, their parts' codes in
:data:`COMPLEX_PART`; a Python complex is weak too (``float32_array + 1j`` is complex64).
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError, UnsupportedOperationError

CODES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "b1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}
BY_CODE: dict[str, np.dtype] = {code: dt for dt, code in CODES.items()}
SUPPORTED = tuple(CODES)
SUPPORTED_NAMES = ", ".join(dt.name for dt in SUPPORTED)

# float16 is computed in float32 (with a rounding after each op); everything else as itself.
COMPUTE_CODE: dict[str, str] = {code: ("f32" if code == "f16" else code) for code in BY_CODE}
# A complex dtype's parts: the real dtype of its real, imag, abs and angle.
COMPLEX_PART: dict[str, str] = {"c64": "f32", "c128": "f64"}


class Weak:
    """A Python scalar's type before promotion: ``Weak(int)``, ``Weak(float)`` or
    ``Weak(complex)``."""

    __slots__ = ("pytype",)

    def __init__(self, pytype: type):
        self.pytype = pytype

    def __repr__(self) -> str:
        return f"weak {self.pytype.__name__}"


def as_dtype(dtype, *, what: str = "dtype") -> np.dtype:
    """``np.dtype(dtype)`` if fusedarrays supports it, else :class:`DTypeError`."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"{what} {dtype!r} is not a dtype: {exc}") from None
    if dt.byteorder == ">":
        native = dt.newbyteorder("=")
        raise DTypeError(f"{what} {dt} is big-endian; convert with .astype('{native}')")
    dt = dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt
    if dt not in CODES:
        raise DTypeError(f"{what} {dt} is not supported; supported dtypes: {SUPPORTED_NAMES}")
    return dt


def code(dtype: np.dtype) -> str:
    return CODES[np.dtype(dtype)]


def scalar_type(value) -> Weak | np.dtype:
    """The dtype of a scalar operand: weak for Python scalars, strong for NumPy scalars."""
    if isinstance(value, np.generic):
        return as_dtype(value.dtype, what="scalar of dtype")
    if isinstance(value, bool):
        return np.dtype(np.bool_)  # Python bools are not weak under NEP 50
    if isinstance(value, int):
        return Weak(int)
    if isinstance(value, float):
        return Weak(float)
    if isinstance(value, complex):
        return Weak(complex)
    raise DTypeError(f"scalar {value!r} of type {type(value).__name__} is not supported; "
                     "use a bool, int, float, complex or a NumPy scalar of a supported dtype")


def _resolve_args(types) -> tuple:
    return tuple(t.pytype if isinstance(t, Weak) else t for t in types)


def resolve(ufunc: np.ufunc, op_name: str, types) -> tuple[np.dtype, ...]:
    """NumPy's loop dtypes ``(in..., out)`` for ``ufunc`` on these operand types."""
    args = _resolve_args(types) + (None,) * ufunc.nout
    try:
        dts = ufunc.resolve_dtypes(args)
    except (TypeError, np.exceptions.DTypePromotionError) as exc:
        shown = ", ".join(str(t) for t in types)
        raise UnsupportedOperationError(
            f"{op_name} is not defined for ({shown}): {exc}. See fusedarrays.ir.ops.OPS for the "
            f"ops and fusedarrays.dtypes.SUPPORTED for the dtypes"
        ) from None
    for dt in dts:
        if dt not in CODES:
            raise UnsupportedOperationError(
                f"{op_name} on ({', '.join(str(t) for t in types)}) computes in {dt}, which is "
                f"not supported; supported dtypes: {SUPPORTED_NAMES}")
    return dts


def promote(types) -> np.dtype:
    """The common dtype of several operand types (``where``/``clip`` branches), NEP 50 style:
    ``float32`` and a Python complex give ``complex64``."""
    strong = [t for t in types if not isinstance(t, Weak)]
    weak = [t.pytype for t in types if isinstance(t, Weak)]
    if not strong:
        strong = [np.result_type(*(_weak_example(w) for w in weak))]
        weak = []
    result = np.result_type(*strong, *(_weak_example(w) for w in weak))
    return as_dtype(result)


def _weak_example(pytype: type):
    # np.result_type treats Python scalar *values* as weak; their value is irrelevant here.
    return {int: 0, float: 0.0, complex: 0j, bool: False}[pytype]


def check_scalar_fits(value, dtype: np.dtype, op_name: str) -> None:
    """NEP 50: a weak Python int must fit the dtype it takes (NumPy raises OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int) or dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise OverflowError(f"{op_name}: Python integer {value} out of bounds for {dtype}")
