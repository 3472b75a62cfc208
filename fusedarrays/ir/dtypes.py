"""Supported dtypes and NumPy's type promotion.

Owns the list of dtypes fusedarrays computes with, their short codes (``f32``, ``u8`` …) used in
generated code and cache keys, the *compute type* each is held in inside a kernel (float16 values
are
held as float32 and rounded after every op, as NumPy's float16 loops do), and the resolution of an
op's loop dtypes. NumPy's ``ufunc.resolve_dtypes`` is the reference; Python scalars are *weak*
(NEP 50): they take the array's dtype when its kind is at least as high. complex64 and
complex128 (``c64``/``c128``) are numba's complex types, their parts' codes in
:data:`COMPLEX_PART`; a Python complex is weak too (``float32_array + 1j`` is complex64).

The training formats (``bf16``, ``e4m3``, ``e5m2``: ml_dtypes' ``bfloat16``, ``float8_e4m3fn``,
``float8_e5m2``, present where ml_dtypes is installed) compute in float32 and round after every op
as float16 does (:data:`ROUNDED`); NumPy's dtype kind of theirs is ``V``, so code asks
:func:`kind` for ``f``. Between them and any other dtype, promotion is JAX's lattice
(:func:`jax_promote`): float8 types promote only with integers, bools and Python scalars.
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
try:  # optional: the training formats exist where ml_dtypes is installed (~6 ms to import)
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - without the training extra
    _ml_dtypes = None
# ml_dtypes' formats by code: bfloat16 (8 exponent bits, 7 mantissa bits), float8_e4m3fn (no inf,
# one NaN per sign) and float8_e5m2 (IEEE-like). Storage formats: values are float32 in kernels.
MINIFLOAT_NAMES = {"bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
MINIFLOATS: dict[str, np.dtype] = ({} if _ml_dtypes is None else {
    code: np.dtype(getattr(_ml_dtypes, name)) for code, name in MINIFLOAT_NAMES.items()})
CODES.update({dt: code for code, dt in MINIFLOATS.items()})
BY_CODE: dict[str, np.dtype] = {code: dt for dt, code in CODES.items()}
SUPPORTED = tuple(CODES)
SUPPORTED_NAMES = ", ".join(dt.name for dt in SUPPORTED)

# Dtypes computed in float32 and rounded after each op (NumPy's float16 loops; ml_dtypes' loops
# for the training formats): generated code asks this, never names float16.
ROUNDED = frozenset(("f16", *MINIFLOATS))
# The type a dtype's values are held in inside a kernel: float32 for ROUNDED, else itself.
COMPUTE_CODE: dict[str, str] = {code: ("f32" if code in ROUNDED else code) for code in BY_CODE}
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


def kind(dtype) -> str:
    """NumPy's dtype kind, but ``f`` for the training formats (ml_dtypes gives them ``V``)."""
    dt = np.dtype(dtype)
    return "f" if dt in _MINI_DTYPES else dt.kind


def is_minifloat(t) -> bool:
    """Whether an operand type (a dtype or :class:`Weak`) is one of the training formats."""
    return not isinstance(t, Weak) and t in _MINI_DTYPES


def finfo(dtype):
    """``np.finfo``, ml_dtypes' ``finfo`` for the training formats (NumPy's refuses them)."""
    dt = np.dtype(dtype)
    return _ml_dtypes.finfo(dt) if dt in _MINI_DTYPES else np.finfo(dt)


_MINI_DTYPES = frozenset(MINIFLOATS.values())


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
    """NumPy's loop dtypes ``(in..., out)`` for ``ufunc`` on these operand types (JAX's
    promotion where a training format takes part: :func:`_resolve_minifloat`)."""
    if any(map(is_minifloat, types)):
        return _resolve_minifloat(ufunc, op_name, types)
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
    ``float32`` and a Python complex give ``complex64``; JAX's lattice with a training format."""
    if any(map(is_minifloat, types)):
        return jax_promote(types, "promotion")
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


_FLOAT8 = frozenset(("e4m3", "e5m2"))
_FLOAT16_STEPS = frozenset(("nextafter",))   # ops whose template knows float16's bit layout


def jax_promote(types, op_name: str) -> np.dtype:
    """JAX's least upper bound of operand types of which one at least is a training format.

    Integers, bools and weak Python ints and floats sit below every float (``bfloat16 + int64``
    is bfloat16, ``float8_e4m3fn * 2.0`` float8_e4m3fn); bfloat16 joins float16 at float32 and
    sits below float32; the float8 types are leaves: with another float, a complex or each
    other they have no common type (JAX raises as well, to keep promotion explicit)."""
    strong = [t for t in types if not isinstance(t, Weak)]
    minis = {CODES[t] for t in strong if t in _MINI_DTYPES}
    floats = [t for t in strong if t not in _MINI_DTYPES and t.kind in "fc"]
    if any(isinstance(t, Weak) and t.pytype is complex for t in types):
        floats.append(np.dtype(np.complex64))
    eight = minis & _FLOAT8
    if eight and (len(minis) > 1 or floats):
        shown = ", ".join(str(t) for t in types)
        raise UnsupportedOperationError(
            f"{op_name} on ({shown}): 8-bit floats promote only with integers, bools and Python "
            "ints and floats (JAX's rule, so that no precision changes unseen); cast explicitly, "
            "e.g. x.astype(fa.float32)")
    if eight:
        return MINIFLOATS[eight.pop()]
    if not floats:
        return MINIFLOATS["bf16"]
    # bfloat16 under float32: integers stay below it, so they never widen the result
    return np.result_type(np.float32, *floats)


def _resolve_minifloat(ufunc: np.ufunc, op_name: str, types) -> tuple[np.dtype, ...]:
    """The loop dtypes with a training format: the operands promoted by :func:`jax_promote`
    to ``T``, then NumPy's loop for float16 in T's place where T is a training format (so the
    result dtypes follow float16's: a comparison gives bool, ``ldexp`` takes its integer), else
    NumPy's loop for T."""
    target = jax_promote(types, op_name)
    mini = target in _MINI_DTYPES
    if mini and op_name in _FLOAT16_STEPS:
        raise UnsupportedOperationError(
            f"{op_name} on {target} is not supported: it steps in the format's own spacing, "
            f"which fusedarrays computes for float16, float32 and float64 only; use "
            f"x.astype(fa.float32) and round back with .astype(fa.{target.name})")
    stand_in = np.dtype(np.float16) if mini else target
    tries = (tuple(stand_in for _ in types),
             tuple(stand_in if is_minifloat(t) else t for t in types))
    for args in tries:
        try:
            dts = ufunc.resolve_dtypes(_resolve_args(args) + (None,) * ufunc.nout)
        except (TypeError, np.exceptions.DTypePromotionError):
            continue
        if mini:
            dts = tuple(target if dt == np.float16 else dt for dt in dts)
        if all(dt in CODES for dt in dts):
            return dts
    shown = ", ".join(str(t) for t in types)
    raise UnsupportedOperationError(
        f"{op_name} is not defined for ({shown}): NumPy has no {ufunc.__name__} loop for "
        f"{stand_in} there; cast the operands (e.g. x.astype(fa.float32)) first")
