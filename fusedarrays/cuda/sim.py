"""The sim backend: the generated CUDA kernel source, run by numba's CUDA simulator.

For testing the CUDA code path without a GPU, on small arrays: the exact source the cuda backend
compiles runs here thread by thread in Python (each block's threads are Python threads), with
``ld_<t>``/``st_<t>``/``cv_<t>`` and ``math`` bound to NumPy equivalents so that values keep NumPy's
scalar types and rounding. It uses the simulator's kernel class directly, so it runs in the same
process as the cpu backend and PTX compiles (no ``NUMBA_ENABLE_CUDASIM`` needed).
"""

from __future__ import annotations

import math
import os
import threading
import types
import warnings
from fractions import Fraction

import numpy as np

from .. import config
from ..compiler import PRODUCT_THREADS
from ..errors import CompileError
from ..ir.dtypes import BY_CODE
from ..ir.layout import TILE_THREADS
from ..ir.reductions import BLOCK_THREADS
from ..runtime.backend import HostMemory
from ..runtime.devices import Device

_MATH_NAMES = {"sqrt": np.sqrt, "exp": np.exp, "expm1": np.expm1, "log": np.log,
               "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin,
               "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
               "atan": np.arctan, "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh,
               "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
               "hypot": np.hypot, "isinf": np.isinf, "isnan": np.isnan,
               "isfinite": np.isfinite, "copysign": np.copysign,
               "inf": np.inf, "nan": np.nan}
# cmath's names that complex templates call, as NumPy's ufuncs (a complex64 stays complex64)
_CMATH_NAMES = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "isinf": np.isinf,
                "isfinite": np.isfinite, "isnan": np.isnan, "acos": np.arccos,
                "asinh": np.arcsinh, "atanh": np.arctanh}
# NumPy has no erf, erfc or lgamma: Python's, per value, keeping a float32 argument's type.
_PER_VALUE = {"erf": math.erf, "erfc": math.erfc, "lgamma": math.lgamma}
_BACKEND_MATH = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
                 "cbrt": np.cbrt, "exp2": np.exp2, "fmod": np.fmod, "div": np.true_divide}


def _per_value(fn):
    def apply(x):
        x = np.asarray(x)
        try:
            value = fn(float(x))
        except (ValueError, OverflowError):
            value = math.inf    # lgamma at its poles, where C's lgamma (cpu, CUDA) gives +inf
        return x.dtype.type(value) if x.dtype.kind == "f" else np.float64(value)
    return apply


_WORDS = {dt: np.dtype(f"uint{8 * dt.itemsize}") for code, dt in BY_CODE.items()
          if code in ("bf16", "e4m3", "e5m2")}


def _caster(dtype: np.dtype):
    def cv(x):
        return np.asarray(x).astype(dtype)[()]  # NumPy's C cast: integers wrap
    return cv


def _cv_f16(x):
    return np.float32(np.float16(x))


# An operand is ``(array, offset)``: every index is non-negative, where a
# view sliced at its first element would wrap a negative index around to the buffer's end.
def _ld(p, i):
    return p[0][p[1] + i]


def _ld_f16(p, i):
    return np.float32(p[0][p[1] + i])


def _st(p, i, v):
    p[0][p[1] + i] = v


# The device's rule for every typed access: its address is a multiple of its size (a 16-byte
# vector, a whole complex element as the ld_c64/ld_c128 intrinsics access it, one part of it
# for the _split forms). The hardware stops the kernel with a misaligned-address error and the
# CUDA context is lost for the process; here the kernel fails with the intrinsic and address.
def _check_aligned(name: str, array, element: int, size: int) -> None:
    if type(array) is np.ndarray:   # (a foreach pointer table is a Python list of operands)
        address = array.ctypes.data + element * array.itemsize
        if address % size:
            raise MisalignedAccessError(
                f"{name}: a {size}-byte access at address {address:#x} (element {element} of a "
                f"{array.dtype} operand), not a multiple of {size}: the device raises a "
                "misaligned address error here")


class MisalignedAccessError(RuntimeError):
    """A simulated access the device would refuse (see :func:`_check_aligned`)."""


def _checked(name: str, size: int, access):
    """``access`` (``_ld``, ``_st``, ``_ld_f16``) checking its address first."""
    if size == 1:
        return access

    def checked(p, i, *value):
        _check_aligned(name, p[0], p[1] + i, size)
        return access(p, i, *value)
    checked.__name__ = name
    return checked


def _vector_load(lanes: int, name: str = "ldv"):
    def ldv(p, j):  # j counts vectors: lanes * j is the first element; float16 lanes widen
        first = p[1] + lanes * j
        _check_aligned(name, p[0], first, 16)
        values = p[0][first:first + lanes]
        return tuple(np.float32(v) if v.dtype == np.float16 else v for v in values)
    return ldv


def _pf_l2(p, j):
    # an L2 prefetch of the 16 bytes at 16-byte index j: a hint that changes no value, checked
    # to name the operand's own bytes, as every load of the next turn it asks for will
    start = p[1] * p[0].itemsize + 16 * j
    if not 0 <= start <= p[0].nbytes - 16:
        raise IndexError(f"pf_l2: bytes {start}..{start + 16} of a {p[0].nbytes}-byte operand")


def _vector_store(lanes: int, name: str = "stv"):
    def stv(p, j, *values):
        first = p[1] + lanes * j
        _check_aligned(name, p[0], first, 16)
        p[0][first:first + lanes] = values
    return stv


_counting = threading.Lock()


def _count(p, i):
    # A split reduction's counter (compiler/reduction.py): the device's atomic add, under a lock.
    # The simulator's cuda.atomic.add does the same, but takes an array where our operands are
    # (array, offset); its cuda.threadfence() is a no-op, which is right here: the simulated
    # threads are Python threads, whose stores the others see in program order.
    with _counting:
        old = p[0][p[1] + i]
        p[0][p[1] + i] = old + 1
    return old


def _flag_index(e, bad, site, value):
    # A flagged gather's out-of-range index (runtime/indexflags.py): the device's
    # compare-and-swap of the site into the error word, and the index stored by its winner.
    if bad:
        with _counting:
            if e[0][e[1]] == 0:
                e[0][e[1]] = site
                e[0][e[1] + 1] = value


def _fma(a, b, c):
    # Exact, rounded once, like the fma of the other backends (math.fma is Python >= 3.13).
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return np.float64(a * b + c)
    return np.float64(float(Fraction(a) * Fraction(b) + Fraction(c)))


def _fma32(a, b, c):
    # Exact, rounded once to float32: the nearest of the float32 values around the float64
    # rounding of the exact result (which may be one off: rounded twice), ties to even.
    a, b, c = float(a), float(b), float(c)
    near = np.float32(a * b + c)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c) and np.isfinite(near)):
        return near
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    around = (near, np.nextafter(near, np.float32(-np.inf)), np.nextafter(near, np.float32(np.inf)))
    return min(around, key=lambda v: (abs(Fraction(float(v)) - exact),
                                      int(np.float32(v).view(np.uint32)) & 1))


def _build_namespace(helpers: dict) -> dict:
    from numba import cuda

    per_value = {name: _per_value(fn) for name, fn in _PER_VALUE.items()}
    ns: dict = {"cuda": cuda, "math": types.SimpleNamespace(**_MATH_NAMES, **per_value),
                "cmath": types.SimpleNamespace(**_CMATH_NAMES), "np": np}
    for code, dtype in BY_CODE.items():
        size = np.dtype(dtype).itemsize
        ns[f"cv_{code}"] = _caster(dtype)
        ns[f"ld_{code}"] = _checked(f"ld_{code}", size, _ld_f16 if code == "f16" else _ld)
        ns[f"st_{code}"] = _checked(f"st_{code}", size, _st)
        if np.dtype(dtype).kind == "c":     # by parts (cuda/intrinsics._make_load_split)
            ns[f"ld_{code}_split"] = _checked(f"ld_{code}_split", size // 2, _ld)
            ns[f"st_{code}_split"] = _checked(f"st_{code}_split", size // 2, _st)
    ns["cv_b1"] = lambda x: np.bool_(x != 0)
    ns["cv_f16"] = _cv_f16
    ns["pf_l2"] = _pf_l2
    for code, lanes in (("f32", 4), ("i32", 4), ("u32", 4), ("f16", 8), ("c64", 2)):
        ns[f"ldv{lanes}_{code}"] = _vector_load(lanes, f"ldv{lanes}_{code}")
        ns[f"stv{lanes}_{code}"] = _vector_store(lanes, f"stv{lanes}_{code}")
    for code in BY_CODE:  # shared-memory tiles hold compute-type values (bool as a byte)
        ns[f"sh_{code}"] = {"b1": np.uint8, "f16": np.float32}.get(code, BY_CODE[code])
    for name, fn in _BACKEND_MATH.items():
        ns[f"fa_{name}_f32"] = ns[f"fa_{name}_f64"] = fn
    ns["fa_fma_f64"], ns["fa_fma_f32"] = _fma, _fma32
    ns["fa_f32_bits"] = lambda x: np.float32(x).view(np.int32)
    ns["fa_bits_f32"] = lambda b: np.int32(b).view(np.float32)
    ns["fa_f64_bits"] = lambda x: np.float64(x).view(np.int64)
    ns["fa_bits_f64"] = lambda b: np.int64(b).view(np.float64)
    # a float32 division by a divisor uniform across its loop: the device's quotient from the
    # divisor's reciprocal is the division's own (cuda/division.py), so the simulator divides,
    # the reciprocal unused
    ns["fa_divrcp_f32"] = lambda b: b
    ns["fa_divby_f32"] = lambda a, b, y: np.true_divide(a, b)
    ns["fa_rowdivby_f32"] = ns["fa_divbyh_f32"] = ns["fa_divby_f32"]
    ns["fa_divrcph_f32"] = ns["fa_divrcp_f32"]
    # block trees without a warp-synchronous end: the simulator's threads keep no warps
    ns["fa_warp_lanes"] = 1
    ns["fa_count_i32"] = _count
    ns["fa_flag_index"] = _flag_index
    for name, fn in helpers.items():
        ns[name] = types.FunctionType(fn.__code__, ns, fn.__name__, fn.__defaults__)
    _bind_minifloats(ns)
    return ns


def _bind_minifloats(ns: dict) -> None:
    """bfloat16 and float8 as the device has them: the helpers over the operands' bits (their
    arrays are viewed as unsigned words, :meth:`SimBackend.operand_arg`), and bfloat16's 8-lane
    vectors as 16-byte accesses of 8 words."""
    from ..compiler import bind_minifloats

    bind_minifloats(ns, np.float32, lambda fn: types.FunctionType(fn.__code__, ns, fn.__name__))
    words = _vector_load(8, "ldv8_bf16")

    def stv8(p, j, *values):
        _vector_store(8, "stv8_bf16")(p, j, *(ns["fa_f32_bf16"](v) for v in values))

    ns["ldv8_bf16"] = lambda p, j: tuple(ns["fa_bf16_f32"](w) for w in words(p, j))
    ns["stv8_bf16"] = stv8


# One simulated kernel at a time: the simulator swaps the kernel function's globals for each
# block's fake ``cuda`` module, and warnings.catch_warnings is process state. A forked child
# starts with a lock of its own (a thread of the parent may have held this one at the fork).
_launching = [threading.Lock()]
os.register_at_fork(after_in_child=lambda: _launching.__setitem__(0, threading.Lock()))


class SimBackend(HostMemory):
    """The CUDA kernels run in numba's simulator, on one host device ``sim``."""

    name = "sim"
    target = "cuda"   # the CUDA kernel source, run by numba's simulator
    device_key = "sim"
    device = Device("sim")
    arch = None
    disk_kind = "src"   # never read: no arch, no disk level

    def toolchain(self) -> dict[str, str]:
        return {}   # no disk level to key

    def __init__(self):
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        self._kernel_class = FakeCUDAKernel
        self._namespace: dict | None = None

    def compile(self, source: str, fn_name: str, param_types: tuple[str, ...], helpers: dict):
        if self._namespace is None:
            self._namespace = _build_namespace(helpers)
        ns = dict(self._namespace)
        try:
            exec(compile(source, f"<fusedarrays kernel {fn_name}>", "exec"), ns)
        except SyntaxError as exc:
            raise CompileError(f"generated source does not parse: {exc}", source) from exc
        kernel = self._kernel_class(ns[fn_name], device=False, fastmath=False)
        kernel.fa_source = source
        return kernel

    def load(self, artifact, param_types):
        return artifact

    def launch(self, kernel, n: int, args: list, geometry: tuple = ()) -> None:
        # Few blocks (each thread is a Python thread); the grid-stride loops cover the rest.
        block = config.get("SIM_BLOCK")
        kind = geometry[0] if geometry else "flat"
        if kind == "reduce":   # ("reduce", schedule, outputs[, "fold" | block]): reduction.py
            # a power of two (a block's tree), the same on both schedules: a split reduction's
            # last block folds the partials with a tree of that width on either
            block = 1 << (min(block, BLOCK_THREADS).bit_length() - 1)
            if geometry[1] == "rows" and len(geometry) > 3 and isinstance(geometry[3], int):
                # a row kernel whose slots cover a row at that width (RowPlan.geometry)
                block = max(block, geometry[3])
            if geometry[1] == "rows":   # a block per output
                grid = max(1, min(n, 2))
            else:
                grid = max(1, min(-(-n // block), 2))
        elif kind == "product":     # the kernel's thread layout is fixed: 16 x 16
            grid, block = max(1, min(geometry[1], 2)), PRODUCT_THREADS
        elif kind == "tiled":
            grid, block = (geometry[2], min(geometry[1], 2)), TILE_THREADS
        elif kind == "rows":
            grid = (max(1, min(-(-geometry[2] // block), 2)), min(geometry[1], 3))
        else:
            grid = max(1, min(-(-(geometry[1] if geometry else n) // block), 2))
        with _launching[0], warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                kernel[grid, block](n, *args)
            except Exception as exc:  # what numba would have refused to compile fails here
                raise CompileError(f"sim backend: the generated kernel failed: {exc}",
                                   getattr(kernel, "fa_source", "")) from exc


    def operand_arg(self, storage, dtype: np.dtype, elem_offset: int):
        # bfloat16 and float8 operands as their bits (compiler/minifloat.py reads words)
        return storage.view(_WORDS.get(dtype, dtype)), elem_offset


    def foreach_args(self, meta: np.ndarray, rows: list) -> tuple[list, None]:
        """The arguments after ``n`` of a multi-tensor kernel
        (``foreach_plan.ForeachPlan``): ``meta``, the pointer table and the tensor
        count. The simulator's "pointers" are the
        operands' arrays themselves, in a Python list, which ``ld_u64`` indexes like a table."""
        ptrs = [self.operand_arg(*operand) for row in rows for operand in row]
        return [(meta, 0), (ptrs, 0), len(rows)], None


