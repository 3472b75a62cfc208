"""The cpu backend: the same kernel plans, as numba-compiled chunk functions run on threads.

The default where no GPU is present, so the README's commands and the notebooks run anywhere.
Buffers are NumPy byte arrays; an operand is ``(array, element offset)`` over its whole buffer.
numba's CPU target has no float16, so float16 buffers are passed as uint16 and converted in the
kernel (:mod:`fusedarrays.cpu.half`).

A kernel (``codegen``'s cpu variant) is one serial function over a range of chunks of its walk,
compiled with ``nogil``; :func:`run_chunks` spreads the chunks over a pool of Python threads,
the calling thread taking the first share. Not numba's ``parallel=True``: its parfors pass costs
about a second more per kernel compile than the serial function, and its OpenMP threading layer
kills any ``fork()`` child of a process that used it. Python threads survive as a pool that a
forked child simply makes anew, and calls from several user threads at once are safe.
Compiled kernels live in the runtime's memory cache; this backend has no disk level (``arch`` is
None).
"""
from __future__ import annotations

import math
import os
import threading
import types
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import config
from ..backend import HostMemory
from ..errors import CompileError
from . import half

_INT_CASTS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
              "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
              "f32": np.float32, "f64": np.float64}
_MATH = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
         "cbrt": np.cbrt, "fmod": np.fmod}


# numba lowers np.exp2 to an ``llvm.exp2`` it declares without a type, once per module: a kernel
# taking exp2 at two float widths fails to link ("float != double"). pow is declared per type.
def _exp2_f32(x):
    return np.float32(2.0) ** x


def _exp2_f64(x):
    return 2.0 ** x


# An operand is ``(array, offset)``: the whole buffer as a typed array and the element offset of
# the view's first element, so every index a kernel forms from it (a row walked backwards too) is
# non-negative. A view sliced at its first element would turn a negative index into numba's
# Python-style wraparound: a silent read from the buffer's end.
def _ld(p, i):
    return p[0][p[1] + i]


def _st(p, i, v):
    p[0][p[1] + i] = v


def _ld_f16(p, i):
    return half_to_f32(p[0][p[1] + i])  # noqa: F821 - bound in the namespace


def _st_f16(p, i, v):
    p[0][p[1] + i] = f32_to_half(v)  # noqa: F821


def _cv_b1(x):
    return x != 0


def _cv_f16(x):
    return half_to_f32(f64_to_half(np.float64(x)))  # noqa: F821


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


_CPUS = _cpus()
_pool: list = [None, threading.Lock()]   # the chunk threads (made on first use), their lock


def _forget_pool() -> None:
    # A forked child has none of its parent's threads (and a thread of the parent may have held
    # the lock at the fork): it makes a pool of its own when it needs one.
    _pool[:] = [None, threading.Lock()]


os.register_at_fork(after_in_child=_forget_pool)


def run_chunks(kernel, args: tuple) -> None:
    """Run all chunks of ``kernel(k0, k1, *args)``: on this thread when there is one chunk (or
    the serial setting), else split into one contiguous share per CPU, this thread taking the
    first. Shares are contiguous so that each thread walks its memory in order."""
    chunks = kernel(0, 0, *args)
    threads = min(chunks, _CPUS if config.get("CPU_PARALLEL") else 1)
    if threads <= 1:
        kernel(0, chunks, *args)
        return
    pool = _pool[0]
    if pool is None:
        with _pool[1]:
            if _pool[0] is None:
                _pool[0] = ThreadPoolExecutor(_CPUS - 1, "fusedarrays-cpu")
        pool = _pool[0]
    bounds = [chunks * t // threads for t in range(threads + 1)]
    futures = [pool.submit(kernel, bounds[t], bounds[t + 1], *args) for t in range(1, threads)]
    try:
        kernel(bounds[0], bounds[1], *args)
    finally:
        for future in futures:
            future.result()


class CpuBackend(HostMemory):
    name = "cpu"
    device_key = "cpu"
    arch = None

    def __init__(self):
        import numba  # the backend is the only place that imports numba on this path

        self._numba = numba
        self._namespace: dict | None = None

    def _jit(self, fn, ns: dict):
        rebound = types.FunctionType(fn.__code__, ns, fn.__name__, fn.__defaults__)
        return self._numba.njit(error_model="numpy")(rebound)

    def namespace(self, helpers: dict) -> dict:
        if self._namespace is not None:
            return self._namespace
        ns: dict = {"np": np, "math": math}
        ns["half_to_f32"] = self._numba.njit(half.half_bits_to_float32)
        ns["f32_to_half"] = self._numba.njit(half.float32_to_half_bits)
        ns["f64_to_half"] = self._numba.njit(half.float64_to_half_bits)
        for code, cast in _INT_CASTS.items():
            ns[f"cv_{code}"] = cast
            ns[f"ld_{code}"] = self._jit(_ld, ns)
            ns[f"st_{code}"] = self._jit(_st, ns)
        ns["cv_b1"] = self._jit(_cv_b1, ns)
        ns["ld_b1"], ns["st_b1"] = self._jit(_ld, ns), self._jit(_st, ns)
        ns["cv_f16"] = self._jit(_cv_f16, ns)
        ns["ld_f16"], ns["st_f16"] = self._jit(_ld_f16, ns), self._jit(_st_f16, ns)
        for fname, ufunc in _MATH.items():
            ns[f"fa_{fname}_f32"] = ns[f"fa_{fname}_f64"] = ufunc
        ns["fa_exp2_f32"], ns["fa_exp2_f64"] = self._jit(_exp2_f32, ns), self._jit(_exp2_f64, ns)
        for name, fn in helpers.items():
            ns[name] = self._jit(fn, ns)
        self._namespace = ns
        return ns

    def compile(self, source: str, fn_name: str, param_types: tuple[str, ...], helpers: dict):
        ns = dict(self.namespace(helpers))
        try:
            exec(compile(source, f"<fusedarrays kernel {fn_name}>", "exec"), ns)
            return self._numba.njit(nogil=True, error_model="numpy")(ns[fn_name]), source
        except Exception as exc:
            raise CompileError(f"cpu backend failed to build {fn_name}: {exc}", source) from exc

    def load(self, artifact, param_types):
        return artifact

    def launch(self, kernel, n: int, args: list, geometry: tuple = ()) -> None:
        # numba specialises on the first call's argument types, so typing errors surface here.
        dispatcher, source = kernel
        try:
            run_chunks(dispatcher, (n, *args))
        except Exception as exc:  # kernels compiled with error_model="numpy" raise nothing else
            raise CompileError(f"cpu backend failed to compile: {exc}", source) from exc


    def operand_arg(self, storage, dtype: np.dtype, elem_offset: int):
        view_dtype = np.uint16 if dtype == np.float16 else dtype
        return storage.view(view_dtype), elem_offset


    def foreach_args(self, meta: np.ndarray, rows: list) -> tuple[list, None]:
        """The arguments after ``n`` of a multi-tensor kernel (the cpu variant of
        ``codegen.render_foreach_kernel``): ``meta``, the tensor count, then per operand a numba
        typed list of the tensors' arrays (no raw pointers here: numba's CPU arrays carry their
        own). ``rows[t][k]`` is operand k of tensor t as ``(storage, dtype, element offset)``."""
        from numba.typed import List

        columns = []
        for k in range(len(rows[0])):
            column = List()
            for row in rows:
                column.append(self.operand_arg(*row[k]))
            columns.append(column)
        return [(meta, 0), len(rows), *columns], None
