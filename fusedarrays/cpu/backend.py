"""The cpu backend: the same kernel plans, as numba-compiled chunk functions run on threads.

The default where no GPU is present, so the README's commands and the notebooks run anywhere.
Buffers are NumPy byte arrays; an operand is the address of its view's first element, read and
written through :mod:`fusedarrays.cpu.intrinsics` as on the cuda target. numba's CPU target has
no float16, so float16 elements are loaded and stored as uint16 bits and converted in the kernel
(:mod:`fusedarrays.cpu.half`).

A kernel (the cpu target's source, ``compiler/targets/cpu.py``) is one serial function over a
range of chunks of its walk, compiled with ``nogil``; :func:`.threads.run_chunks` shares the
chunks with a pool of Python threads, each taking the next piece as it is free, where that pays
(``cpu/threads.py``). Not numba's ``parallel=True``: its parfors pass costs about a second more
per kernel compile than the serial function, and its OpenMP threading layer kills any ``fork()``
child of a process that used it. Python threads survive as a pool that a forked child simply
makes anew, and calls from several user threads at once are safe. Memory is NumPy byte arrays
placed and reused as ``cpu/memory.py`` says.
Disk level: a kernel's source is a disk-cache entry (kind ``src``, keyed by the arch
``cpu-<machine>-<LLVM host CPU>`` and numba's, llvmlite's and the CPU features' versions), and it is
loaded as a module file in the arch's folder (written once, by ``os.replace``, with a fixed
modification time) whose function numba compiles with ``cache=True``: numba keeps the machine
code beside it, keyed by that file's size and time, so a second process loads it instead of
compiling. The entry carries the checksum; numba's files are numba's, and one that fails to load
is dropped and the kernel compiled again (a miss, never an error).
"""
from __future__ import annotations

import cmath
import contextlib
import hashlib
import math
import os
import platform
import re
import sys
import threading
import time
import types
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import CompileError
from ..runtime.backend import BUFFER_ADDRESS, HostMemory, MemoryInfo
from ..runtime.devices import Device
from . import half, memory, vecmath
from .threads import CPUS, Choice, Prepared, run_chunks

_INT_CASTS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
              "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
              "f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
_MATH = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
         "cbrt": np.cbrt, "fmod": np.fmod, "div": np.true_divide}


# numba lowers np.exp2 to an ``llvm.exp2`` it declares without a type, once per module: a kernel
# taking exp2 at two float widths fails to link ("float != double"). pow is declared per type.
def _exp2_f32(x):
    return np.float32(2.0) ** x


def _exp2_f64(x):
    return 2.0 ** x


# codegen's division by a divisor uniform across its loop (``fa_divby`` with the divisor's
# ``fa_divrcp``, cuda/division.py): on the host a plain division, the reciprocal unused
def _divrcp_f32(b):
    return b


def _divby_f32(a, b, y):
    return np.true_divide(a, b)


# float16 is uint16 bits in memory (numba's CPU target has no float16): loaded and stored as
# those, converted by cpu/half.py
def _ld_f16(p, i):
    return half_to_f32(ld_u16(p, i))  # noqa: F821 - bound in the namespace


def _st_f16(p, i, v):
    st_u16(p, i, f32_to_half(v))  # noqa: F821


# a float's bits as the signed integer of its width and back (devicelib's nextafter)
def _f32_bits(x):
    return np.float32(x).view(np.int32)


def _bits_f32(b):
    return np.int32(b).view(np.float32)


def _f64_bits(x):
    return np.float64(x).view(np.int64)


def _bits_f64(b):
    return np.int64(b).view(np.float64)


def _cv_b1(x):
    return x != 0


def _cv_f16(x):
    return round_to_half(np.float64(x))  # noqa: F821


def _fma_intrinsic(bits: int):
    """``fa_fma_f64(a, b, c)`` (``bits`` 64) or ``fa_fma_f32``: LLVM's ``llvm.fma``, rounded
    once (a hardware fused multiply-add, or libm's exact ``fma``/``fmaf``), as the cuda
    backend's ``fma.rn.f64``/``fma.rn.f32``."""
    from llvmlite import ir
    from numba import types as nbtypes
    from numba.extending import intrinsic

    real, llvm = ((nbtypes.float64, ir.DoubleType()) if bits == 64 else
                  (nbtypes.float32, ir.FloatType()))

    def fma(typingctx, a, b, c):
        if not all(isinstance(t, (nbtypes.Float, nbtypes.Integer)) for t in (a, b, c)):
            return None

        def codegen(context, builder, sig, args):
            values = [context.cast(builder, v, t, real) for v, t in zip(args, sig.args)]
            fn = builder.module.declare_intrinsic(
                "llvm.fma", [llvm], ir.FunctionType(llvm, [llvm] * 3))
            return builder.call(fn, values)

        return real(a, b, c), codegen

    fma.__name__ = f"fa_fma_f{bits}"
    return intrinsic(fma)


def _flag_index(e, bad, site, value):
    # A flagged gather's out-of-range index (runtime/indexflags.py): the site swapped into the
    # error word's slot 0 if it is clear, and the index stored by the thread that swapped it.
    if bad:
        if fa_cas_i64(e, 0, 0, site) == 0:   # noqa: F821 - the kernel namespace's
            st_i64(e, 1, value)              # noqa: F821


_SHARED_NAMESPACE: list = []   # the first namespace built, which further host devices share
_MODULE_TIME = 1_000_000_000   # every kernel module file's mtime: numba's cache keys on it


class CpuBackend(HostMemory):
    """One host device: ``cpu`` (``cpu:1`` … where ``FUSEDARRAYS_CPU_DEVICES`` makes more, each
    with its own memory and loaded kernels, standing in for several GPUs)."""

    name = "cpu"
    target = "cpu"
    device_key = "cpu"
    disk_kind = "src"
    # malloc's alignment (NumPy's allocator), 64 from cpu/memory.py's STAGGER_MIN up; the cpu
    # kernels access memory unaligned, so this only spares Buffer an address look-up
    alloc_align = 16
    # an operand's address is its NumPy array's data pointer plus the offset's bytes: the C
    # packers read it through the buffer protocol, with no call of operand_arg
    operand_at = BUFFER_ADDRESS

    def __init__(self, device_id: int = 0):
        import llvmlite
        import llvmlite.binding as llvm
        import numba  # the backend is the only place that imports numba on this path

        self._numba = numba
        self._namespace: dict | None = None
        self._math_calls = None   # vecmath as calls, made on first need (_called_math)
        self._memory = memory.HostPool()
        self.device_id = device_id
        self.device = Device("cpu", device_id)
        self.device_key = str(self.device)   # "cpu" for the first, as before there were more
        # At NUMBA_OPT=0 numba calls the helpers through addresses it refuses to cache (with a
        # warning per kernel): then the kernels' machine code stays in memory.
        self._numba_caches = int(numba.config.OPT) > 0
        host = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{platform.machine()}-{llvm.get_host_cpu_name()}")
        self.arch = f"cpu-{host}"[:64]
        features = llvm.get_host_cpu_features().flatten()
        self._toolchain = {"numba": numba.__version__, "llvmlite": llvmlite.__version__,
                           "cpu features": hashlib.sha256(features.encode()).hexdigest()[:16]}

    def toolchain(self) -> dict[str, str]:
        """What shapes the machine code besides the source: part of every disk key."""
        return self._toolchain

    def _jit(self, fn, ns: dict, **options):
        rebound = types.FunctionType(fn.__code__, ns, fn.__name__, fn.__defaults__)
        return self._numba.njit(error_model="numpy", no_cpython_wrapper=True,
                                no_cfunc_wrapper=True, **options)(rebound)

    def namespace(self, helpers: dict) -> dict:
        if self._namespace is not None:
            return self._namespace
        if _SHARED_NAMESPACE and self.device_id:   # another host device's: helpers compile once
            self._namespace = _SHARED_NAMESPACE[0]
            return self._namespace
        from numba import types as nbtypes
        from numba.np.numpy_support import from_dtype

        from . import intrinsics

        ns: dict = {"np": np, "math": math, "cmath": cmath}
        ns["half_to_f32"] = self._numba.njit(half.half_bits_to_float32)
        ns["f32_to_half"] = self._numba.njit(half.float32_to_half_bits)
        ns["round_to_half"] = self._numba.njit(half.round_float32_to_half)
        for code, cast in _INT_CASTS.items():
            ns[f"cv_{code}"] = cast
            ty = from_dtype(np.dtype(cast))
            ns[f"ld_{code}"] = intrinsics.load(code, ty)
            ns[f"st_{code}"] = intrinsics.store(code, ty)
        for code in ("c64", "c128"):   # by parts on the device; one unaligned access here
            ns[f"ld_{code}_split"], ns[f"st_{code}_split"] = ns[f"ld_{code}"], ns[f"st_{code}"]
        ns["cv_b1"] = self._jit(_cv_b1, ns)
        ns["ld_b1"] = intrinsics.load("b1", nbtypes.boolean)
        ns["st_b1"] = intrinsics.store("b1", nbtypes.boolean)
        ns["cv_f16"] = self._jit(_cv_f16, ns)
        ns["ld_f16"], ns["st_f16"] = self._jit(_ld_f16, ns), self._jit(_st_f16, ns)
        for fname, ufunc in _MATH.items():
            ns[f"fa_{fname}_f32"] = ns[f"fa_{fname}_f64"] = ufunc
        ns["math"] = vecmath.math_module(self._jit)   # float32 exp, log, tanh that vectorise
        ns["fa_exp2_f32"], ns["fa_exp2_f64"] = self._jit(_exp2_f32, ns), self._jit(_exp2_f64, ns)
        ns["fa_fma_f64"], ns["fa_fma_f32"] = _fma_intrinsic(64), _fma_intrinsic(32)
        # sin and cos of a chunk whose float32 arguments are all below vecmath.NEAR
        ns.update(vecmath.near_functions(self._jit, ns["fa_fma_f32"]))
        ns.update(vecmath.far_functions(self._jit))   # and of any other chunk
        ns["fa_divrcp_f32"] = self._jit(_divrcp_f32, ns)
        ns["fa_divby_f32"] = ns["fa_rowdivby_f32"] = self._jit(_divby_f32, ns)
        ns["fa_divrcph_f32"], ns["fa_divbyh_f32"] = ns["fa_divrcp_f32"], ns["fa_divby_f32"]
        for name, fn in (("fa_f32_bits", _f32_bits), ("fa_bits_f32", _bits_f32),
                         ("fa_f64_bits", _f64_bits), ("fa_bits_f64", _bits_f64)):
            ns[name] = self._jit(fn, ns)
        ns["fa_cas_i64"] = intrinsics.cas_i64
        ns["fa_flag_index"] = self._jit(_flag_index, ns)
        for name, fn in helpers.items():
            ns[name] = self._jit(fn, ns)
        from ..compiler import bind_minifloats  # bfloat16, float8: ld_bf16 … from the helpers

        bind_minifloats(ns, np.float32)
        self._namespace = ns
        if not _SHARED_NAMESPACE:
            _SHARED_NAMESPACE.append(ns)
        return ns

    def _called_math(self):
        """``vecmath``'s functions as calls (not inlined), for kernels with many of them."""
        if self._math_calls is None:
            self._math_calls = vecmath.math_module(self._jit, inline=False)
        return self._math_calls

    def compile(self, source: str, fn_name: str, param_types: tuple[str, ...], helpers: dict):
        """The kernel module's source (numba compiles at the first call, which knows the
        argument types); a source that does not parse fails here."""
        try:
            compile(source, f"<fusedarrays kernel {fn_name}>", "exec")
        except SyntaxError as exc:
            raise CompileError(f"cpu backend failed to build {fn_name}: {exc}", source) from exc
        return {"src": source.encode(), "entry": fn_name}

    def load(self, artifact: dict, param_types) -> list:
        """``[dispatcher, source, module file or None, threads.Choice]`` of the artifact's
        kernel: from a module file in ``artifact["folder"]`` with numba's cache on where there
        is one, else in memory; the choice learns whether its large launches pay for threads."""

        source, name = artifact["src"].decode(), artifact["entry"]
        folder = artifact.get("folder")
        path = (_module_file(folder, source)
                if folder is not None and self._numba_caches else None)
        return [self._dispatcher(source, name, path), source, path, Choice()]

    def _dispatcher(self, source: str, name: str, path: str | None):
        from ..compiler import helpers as kernel_helpers

        # A module of its own, findable by name: numba's cache rebuilds a loaded kernel's
        # environment by importing the function's module.
        module = types.ModuleType(f"fusedarrays_kernels.{name}")
        module.__dict__.update(self.namespace(kernel_helpers()))
        if vecmath.inlined_calls(source) > vecmath.INLINE_LIMIT:
            module.__dict__["math"] = self._called_math()
        module.__file__ = path
        sys.modules[module.__name__] = module
        try:
            exec(compile(source, path or f"<fusedarrays kernel {name}>", "exec"), module.__dict__)
            return self._numba.njit(nogil=True, error_model="numpy", no_cfunc_wrapper=True,
                                    cache=path is not None)(module.__dict__[name])
        except Exception as exc:
            raise CompileError(f"cpu backend failed to build {name}: {exc}", source) from exc

    def launch(self, kernel: list, n: int, args: list, geometry: tuple = ()) -> None:
        # numba specialises on the first call's argument types, so typing errors surface here.
        try:
            run_chunks(kernel[0], (n, *args), kernel[3])
            if geometry[3:] == ("fold",):   # a split reduction: its partials, once all are in
                kernel[0](-1, -1, n, *args)
        except Exception as exc:  # kernels compiled with error_model="numpy" raise nothing else
            if kernel[2] is None:
                raise CompileError(f"cpu backend failed to compile: {exc}", kernel[1]) from exc
            # numba's cached machine code would not load (a damaged file): drop it, compile
            # again in memory, and go on
            _forget_numba_cache(kernel[2])
            kernel[0], kernel[2] = self._dispatcher(kernel[1], kernel[0].py_func.__name__,
                                                    None), None
            self.launch(kernel, n, args, geometry)

    def direct_launch(self, kernel: list, n: int, geometry: tuple = ()):
        """What a launch record calls in place of :meth:`launch` after its first launch
        (``runtime/launch.py``): ``(call, prepared)``, ``call(prepared, n, args)`` running every
        chunk of the compiled kernel, without :meth:`launch`'s frames and fallbacks (the
        first launch compiled it, or loaded numba's cache, and ran it), its chunk count and
        compiled function kept (:class:`.threads.Prepared`)."""
        return Prepared.run, Prepared(kernel, geometry[3:] == ("fold",))

    def first_call(self, kernel: list, n: int, args: list) -> dict[str, float]:
        """Before a kernel's first launch: numba's compile for these argument types (or the
        load of its cached machine code), as ``{stage: seconds}``, so that it is timed as a
        compile and not as a launch. A failure here is left to :meth:`launch`, which raises
        it (or drops a damaged numba cache file and compiles again)."""
        start = time.perf_counter()
        try:
            self.prepare(kernel, n, args)
        except Exception:   # noqa: BLE001 - launch() reports it, right after
            return {}
        hits = sum(kernel[0].stats.cache_hits.values())
        stage = "cpu load (numba cache)" if hits else "cpu compile (numba)"
        return {stage: time.perf_counter() - start}

    def prepare(self, kernel: list, n: int, args: list) -> None:
        """Compile ``kernel`` for these argument types without running it (``k0 == k1``: the
        kernel returns its chunk count before touching memory), so numba's cache holds it.
        numba's own check of its IR warns, asking for a bug report, of the variables that its
        inlining of the float32 math (``cpu/vecmath.py``) renames: a user has nothing to do
        about it, and the kernels are tested against NumPy."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", self._numba.core.errors.NumbaIRAssumptionWarning)
            kernel[0](0, 0, n, *args)


    def copy_bandwidth(self) -> float:
        """Bytes per second (read and written) of a 64 MiB copy split over the CPUs as the
        kernels split their chunks (NumPy's copy releases the GIL): the best of three, the
        reference ``fa.profile()`` states achieved bandwidth against."""
        nbytes = 1 << 26
        src, dst = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
        bounds = [nbytes * t // CPUS for t in range(CPUS + 1)]

        def part(t):
            np.copyto(dst[bounds[t]:bounds[t + 1]], src[bounds[t]:bounds[t + 1]])

        best = math.inf
        with ThreadPoolExecutor(CPUS) as pool:
            for _ in range(3):
                start = time.perf_counter()
                list(pool.map(part, range(CPUS)))
                best = min(best, time.perf_counter() - start)
        return 2 * nbytes / best

    def operand_arg(self, storage, dtype: np.dtype, elem_offset: int) -> int:
        """The host address of element ``elem_offset`` (a kernel ``ptr`` parameter): the
        caller holds ``storage`` while the kernel runs."""
        return memory.address(storage) + elem_offset * dtype.itemsize

    def address(self, storage) -> int:
        return memory.address(storage)   # remembered per array (cpu/memory.py)

    def alloc(self, nbytes: int) -> np.ndarray:
        return self._memory.alloc(nbytes)

    def from_host(self, array: np.ndarray) -> np.ndarray:
        array = np.asarray(array)
        storage = self.alloc(array.nbytes)
        if array.size:
            storage[:array.nbytes].view(array.dtype).reshape(array.shape)[...] = array
        return storage

    def memory_info(self) -> MemoryInfo:
        return MemoryInfo(self.name, None, self._memory.cached(), None, None)

    def free_cached_memory(self) -> int:
        return self._memory.give_back()

    def counters(self, slots: int) -> int:
        # the address of HostMemory's array; the cpu kernels never touch it (the backend
        # sequences a split reduction's fold itself), so a grown array may free the old one
        return self.address(HostMemory.counters(self, slots)[0])


    def foreach_args(self, meta: np.ndarray, rows: list) -> tuple[list, tuple]:
        """The arguments after ``n`` of a multi-tensor kernel (the cpu variant of
        ``foreach_codegen.render_foreach_kernel``): the addresses of ``meta`` and of the
        ``[T, K]`` table of operand addresses, and T. ``rows[t][k]`` is operand k of tensor t as
        ``(storage, dtype, element offset)``; the second value keeps the two tables alive while
        they are reused (the caller holds the tensors)."""
        table = np.array([[self.operand_arg(*operand) for operand in row] for row in rows],
                         dtype=np.uint64)
        return [self.address(meta), self.address(table), len(rows)], (meta, table)


def _module_file(folder, source: str) -> str | None:
    """The path of ``source`` as a module file in ``folder``, written once (by ``os.replace``
    from a temp file, so a reader never sees half of it) with a fixed modification time; a file
    whose text differs is replaced, with numba's cache of it. None if it can't be written."""
    path = os.path.join(str(folder), "k" + hashlib.sha256(source.encode()).hexdigest()[:40]
                        + ".py")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == source:
                return path
        _forget_numba_cache(path)
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(source)
        os.utime(tmp, (_MODULE_TIME, _MODULE_TIME))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    return path


def _forget_numba_cache(path: str) -> None:
    """Remove numba's cache files of the module file ``path`` (its ``__pycache__`` entries)."""
    folder, stem = os.path.split(path)
    cache = os.path.join(folder, "__pycache__")
    with contextlib.suppress(OSError):
        for name in os.listdir(cache):
            if name.startswith(stem[:-3] + "."):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(cache, name))
