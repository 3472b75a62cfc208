"""Generated kernel source → PTX (numba-cuda) → cubin (nvJitLink), and the toolchain's versions.

Where it sits: after ``codegen`` and the cache misses, ``runtime`` → ``CudaBackend.compile`` →
:func:`compile_ptx` and :func:`link_cubin`; the artifacts go to the disk cache keyed with
:func:`toolchain_versions`, and on to :mod:`.load`.

Why a cubin: PTX from the NVVM wheel can be newer than the driver accepts (PTX ISA 9.5 from NVVM
13.5 is refused by a CUDA 13.0 driver), while the cubin nvJitLink links from it loads there; linking
needs no GPU.

Two stages, so that a batch pipelines them (``runtime/precompile.py``): :func:`lower_kernel`
(numba's typing and lowering, under numba's global compile lock) and :func:`finish_kernel` (NVVM
and nvJitLink, which release the GIL, outside it). While the lock is held, numba's typing of calls
and globals is memoized across our compiles, the cyclic collector is paused, numba's error text
is left unmarked, its pipeline runs without the passes that find nothing to do in a generated
kernel (each a context manager below) and its lowering without its quadratic scan
(:mod:`.lowering`).

numba is imported inside :func:`compile_ptx` only, and the toolchain versions that every
disk-cache key holds come from :mod:`.toolchain`: a process whose kernels all come from the disk
cache must not pay for ``import numba`` (0.75–1 s).
"""

from __future__ import annotations

import contextlib
import gc
import re
import time

from ..errors import CompileError
from .lowering import linear_lowering
from .nvvmcall import kernel_ptx
from .toolchain import toolchain_versions  # noqa: F401 - re-exported

_ENTRY = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+([A-Za-z_$][\w$]*)", re.MULTILINE)


def arch_cc(arch: str) -> tuple[int, int]:
    """``"sm_90"`` → ``(9, 0)``; ``"sm_100"`` → ``(10, 0)``; ``"sm_90a"`` → ``(9, 0)``."""
    m = re.fullmatch(r"sm_(\d+)(\d)[a-z]?", arch)
    if m is None:
        raise ValueError(f"not a CUDA arch string: {arch=} (expected like 'sm_90')")
    return int(m.group(1)), int(m.group(2))


def _param_numba_type(code: str):
    from numba import types

    from .intrinsics import PARAMS

    if code == "ptr":
        return types.uint64
    try:
        return PARAMS[code]
    except KeyError:
        raise ValueError(
            f"unknown kernel parameter type {code=}; expected 'ptr' or one of {sorted(PARAMS)}"
        ) from None


def entry_name(ptx: str) -> str:
    """The (mangled) name of the one ``.entry`` in ``ptx``, as ``get_kernel`` wants it."""
    names = _ENTRY.findall(ptx)
    if len(names) != 1:
        raise CompileError(f"expected exactly one .entry in the PTX, found {names}")
    return names[0]


class Lowered:
    """A kernel after numba's typing and lowering (its NVVM IR), before NVVM and the link.

    The first stage holds numba's compile lock and the GIL; the other two release both, so a
    batch lowers kernels one after another in one thread while others run NVVM and nvJitLink
    on those already lowered (:func:`finish_kernel`). ``times`` gathers each stage's seconds.
    """

    __slots__ = ("source", "fn_name", "param_types", "arch", "library", "ptx", "times")

    def __init__(self, source: str, fn_name: str, param_types: tuple, arch: str):
        self.source, self.fn_name, self.param_types, self.arch = source, fn_name, param_types, arch
        self.library = self.ptx = None
        self.times: dict = {}

    def failure(self, e: Exception) -> CompileError:
        return CompileError(
            f"numba-cuda could not compile kernel {self.fn_name!r} for {self.arch} with "
            f"param_types={self.param_types}: {type(e).__name__}: {e}",
            source=self.source,
        )


def lower_kernel(source: str, fn_name: str, param_types: tuple[str, ...], arch: str,
                 helpers: dict) -> Lowered:
    """numba's typing and lowering of kernel ``fn_name`` defined in ``source``, for ``arch``.

    ``param_types`` lists every kernel parameter in order: ``"ptr"`` (a device address, uint64)
    or a dtype code (``f16`` travels as float32, ``b1`` as uint8). The source is exec'd in a fresh
    copy of :func:`~.intrinsics.device_namespace`. Any failure raises
    :class:`~fusedarrays.errors.CompileError` carrying the source.
    """
    lowered = Lowered(source, fn_name, param_types, arch)
    try:
        # numba's lock first: what the others change is for our compile alone
        with compile_lock(), _collector_paused(), _plain_error_text(), _memoized_call_typing(), \
                _trimmed_pipeline(), linear_lowering():
            _lower(lowered, helpers)
    except Exception as e:
        raise lowered.failure(e) from e
    return lowered


def _lower(lowered: Lowered, helpers: dict) -> None:
    from numba import types

    from .intrinsics import device_namespace

    start = time.perf_counter()
    fn_name = lowered.fn_name
    signature = types.void(*(_param_numba_type(t) for t in lowered.param_types))
    namespace = dict(device_namespace(helpers))
    exec(compile(lowered.source, f"<fusedarrays kernel {fn_name}>", "exec"), namespace)
    kernel = namespace.get(fn_name)
    if kernel is None:
        raise NameError(f"the source defines no function {fn_name!r}")
    _numba_lower(lowered, kernel, signature, arch_cc(lowered.arch))
    _note(lowered.times, "numba typing+lowering", time.perf_counter() - start)


def lowered_ptx(lowered: Lowered) -> tuple[str, str]:
    """``(ptx, entry)`` of a lowered kernel: NVVM (GIL released; libNVVM is thread-safe)."""
    if lowered.ptx is None:
        try:
            start = time.perf_counter()
            lowered.ptx = kernel_ptx(lowered.library, arch_cc(lowered.arch))
            _note(lowered.times, "nvvm", time.perf_counter() - start)
        except Exception as e:
            raise lowered.failure(e) from e
    return lowered.ptx, entry_name(lowered.ptx)


def compile_ptx(
    source: str, fn_name: str, param_types: tuple[str, ...], arch: str, helpers: dict,
    times: dict | None = None,
) -> tuple[str, str]:
    """Compile kernel ``fn_name`` defined in ``source`` to PTX for ``arch``
    (:func:`lower_kernel`, then NVVM). Returns ``(ptx, entry)``; a ``times`` dict receives the
    seconds spent in ``numba typing+lowering`` and in ``nvvm``."""
    lowered = lower_kernel(source, fn_name, param_types, arch, helpers)
    found = lowered_ptx(lowered)
    for stage, seconds in lowered.times.items():
        _note(times, stage, seconds)
    return found


# Every option pinned: left to their defaults, NUMBA_OPT=0 or NUMBA_CUDA_DEBUGINFO in the
# environment would change the PTX without changing its disk-cache key.
_OPTIONS = {"debug": False, "lineinfo": False, "fastmath": False, "opt": True}


def _numba_lower(lowered: Lowered, kernel, signature, cc: tuple[int, int]) -> None:
    """The first of ``numba.cuda.compile_ptx``'s two steps where numba-cuda still names them
    (0.30): typing and lowering to NVVM IR; NVVM is left to :func:`lowered_ptx`. Another
    numba-cuda: both steps here, reported as typing+lowering."""
    from numba import cuda
    from numba.cuda import compiler

    split = getattr(compiler, "_compile_pyfunc_with_fixup", None)
    if split is None:
        lowered.ptx, _ = cuda.compile_ptx(kernel, signature, cc=cc, **_OPTIONS)
    else:
        lowered.library, _ = split(kernel, signature, device=False, cc=cc, abi="numba",
                                   **_OPTIONS)


# (callee, argument types, keyword types) → the signature numba's CUDA typing gave that call; and
# (function type, typing context, argument types, keyword types) → its get_call_type answer
_TYPED_CALLS: dict = {}
_TYPED_CALLS_CAP = 1 << 14  # a few hundred are usual; cleared past this, never grown without end
# id(value) → (value, its numba type as a global of a kernel)
_TYPED_VALUES: dict = {}


def _memo(key, compute):
    try:
        found = _TYPED_CALLS.get(key)
    except TypeError:  # unhashable: typed as numba types it, every time
        return compute()
    if found is None:
        found = compute()
        if found is not None:
            if len(_TYPED_CALLS) >= _TYPED_CALLS_CAP:
                _TYPED_CALLS.clear()
            _TYPED_CALLS[key] = found
    return found


@contextlib.contextmanager
def _memoized_call_typing():
    """numba's typing of calls and of a kernel's globals, memoized across this module's compiles
    while it lasts.

    numba types every call (``a * b`` is a call of ``operator.mul``) by trying each template of
    the callee in turn, ~0.3–0.5 ms even for ``float32 * float32``, keeps no result from one
    compile to the next, and types each operator a second time while lowering it; generated
    kernels repeat a small vocabulary of such calls. The answer depends only on the callee, the
    argument types (literal values included) and the registered templates, and our compiles all
    run with the same flags (:data:`_OPTIONS`), so it is kept here, per process. Installed (on
    the CUDA typing context, and on numba's function type) only while this thread holds numba's
    compile lock, which every numba compile takes, CPU ones included: no other compile (a
    user's own ``@cuda.jit``, other flags) ever sees it. A callee or argument that cannot be
    hashed, a failure, or no result is left to numba. Likewise the type of each global a kernel
    names (intrinsics, helpers, modules: the same objects in every kernel), which numba finds
    only after a failed ``typeof`` and its marked-up error message (4 of ~43 ms of a kernel's
    typing and lowering, 2-core machine).
    """
    from numba.cuda import types
    from numba.cuda.descriptor import cuda_target

    context = cuda_target.typing_context
    resolve = getattr(type(context), "resolve_function_type", None)
    owner = next((c for c in types.Function.__mro__ if "get_call_type" in vars(c)), None)
    if resolve is None or owner is None:  # pragma: no cover - another numba-cuda
        yield
        return
    get_call_type = vars(owner)["get_call_type"]

    def resolve_memoized(func, args, kws):
        return _memo((func, tuple(args), tuple(sorted(dict(kws).items()))),
                     lambda: resolve(context, func, args, kws))

    def get_call_type_memoized(self, typing_context, args, kws):
        return _memo((self, typing_context, tuple(args), tuple(sorted(dict(kws).items()))),
                     lambda: get_call_type(self, typing_context, args, kws))

    resolve_value = type(context).resolve_value_type

    def resolve_value_memoized(val):
        # A global of the kernel (an intrinsic, a helper, a module): numba first tries typeof,
        # which fails for most of them with an error message marked up for the terminal
        # (~30 µs each, a hundred per kernel), then looks the value up. Keyed by identity, the
        # value held so its id is not reused.
        found = _TYPED_VALUES.get(id(val))
        if found is not None and found[0] is val:
            return found[1]
        typ = resolve_value(context, val)
        if len(_TYPED_VALUES) >= _TYPED_CALLS_CAP:
            _TYPED_VALUES.clear()
        _TYPED_VALUES[id(val)] = (val, typ)
        return typ

    with compile_lock():
        context.resolve_function_type = resolve_memoized
        context.resolve_value_type = resolve_value_memoized
        owner.get_call_type = get_call_type_memoized
        try:
            yield
        finally:
            owner.get_call_type = get_call_type
            del context.resolve_function_type
            del context.resolve_value_type


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while numba types and lowers a kernel.

    That stage allocates several hundred thousand objects (IR, types, LLVM IR builders), most of
    them alive until it ends, so the collector, triggered every 700 allocations, walks them again
    and again, and now and then a full collection walks numba's whole heap (~90 ms measured in
    one of 16 kernels). Paused here, the stage's garbage is collected once afterwards. Entered
    with numba's compile lock held, so only one thread at a time pauses and resumes it; a
    collector the user turned off stays off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextlib.contextmanager
def _plain_error_text():
    """numba's error messages unmarked while numba-cuda types and lowers one of our kernels.

    numba raises and catches errors as it works (each binary operator is first tried with
    literal operand types, which fails for a variable), and every error marks its message up for
    a terminal through colorama as it is made (~25 µs each, some eighty per kernel); a message
    that reaches the user inside a :class:`CompileError` is better plain. numba's modules keep
    their colour scheme instance from import, so the scheme's class gives up its mark-up
    (``_markup``), for as long as this thread holds numba's compile lock, under which numba
    makes its other messages too.
    """
    import importlib

    patched = []
    for name in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            module = importlib.import_module(name)
        except ImportError:   # numba-cuda without numba itself: its own module only
            continue
        scheme = type(module.termcolor())
        if "_markup" in vars(scheme):   # colorama's scheme (without colorama: plain already)
            patched.append((scheme, vars(scheme)["_markup"]))
            scheme._markup = _unmarked
    try:
        yield
    finally:
        for scheme, markup in patched:
            scheme._markup = markup


def _unmarked(self, msg, color=None, style=None):
    return msg


# numba's passes that have nothing to do in a generated kernel: it has no ``with`` block, no
# closure or inner function, no ``literally`` or ``literal_unroll``, no branch on a constant, no
# raise, and no string-literal index or constant list (the after-inference rewrites).
_IDLE_PASSES = ("WithLifting", "InlineClosureLikes", "RewriteSemanticConstants", "DeadBranchPrune",
                "RewriteDynamicRaises", "MakeFunctionToJitFunction", "FindLiterallyCalls",
                "LiteralUnroll", "LiteralPropagationSubPipelinePass", "NopythonRewrites")


@contextlib.contextmanager
def _trimmed_pipeline():
    """numba-cuda's pass pipeline without :data:`_IDLE_PASSES` while one of our kernels compiles.

    Each pass walks the whole IR, and these ten found nothing to do in any kernel we generate
    while costing ~6 of ~29 ms of typing and lowering (2-core machine); a test compiles kernels
    of every op and schedule with and without them and finds the same PTX. Installed, like the
    typing memo, only while this thread holds numba's compile lock. A numba-cuda whose pipeline
    is built otherwise keeps its own.
    """
    from numba.cuda import compiler

    owner = getattr(compiler, "CUDACompiler", None)
    define = vars(owner).get("define_pipelines") if owner is not None else None
    if define is None:   # pragma: no cover - another numba-cuda
        yield
        return

    def define_trimmed(self):
        pipelines = define(self)
        for pm in pipelines:
            kept = [(p, d) for p, d in pm.passes if getattr(p, "__name__", p) not in _IDLE_PASSES]
            if len(kept) != len(pm.passes):
                pm.passes[:] = kept
                pm.finalize()
        return pipelines

    with compile_lock():
        owner.define_pipelines = define_trimmed
        try:
            yield
        finally:
            owner.define_pipelines = define


def _note(times: dict | None, stage: str, seconds: float) -> None:
    if times is not None:
        times[stage] = times.get(stage, 0.0) + seconds


def compile_kernel(source: str, fn_name: str, param_types: tuple[str, ...], arch: str,
                   helpers: dict | None = None) -> tuple[str, bytes, str, dict]:
    """``(ptx, cubin, entry, stage seconds)`` of one generated kernel for ``arch`` (``helpers``
    default: :func:`devicelib.helpers`). Also the whole job of a batch-compile worker process
    (module-level, so it pickles by name; its arguments are plain strings)."""
    if helpers is None:
        from ..compiler import helpers as kernel_helpers

        helpers = kernel_helpers()
    return finish_kernel(lower_kernel(source, fn_name, param_types, arch, helpers))


def finish_kernel(lowered: Lowered) -> tuple[str, bytes, str, dict]:
    """NVVM and nvJitLink for a lowered kernel: ``(ptx, cubin, entry, stage seconds)``. Neither
    holds the GIL nor numba's lock, so this may run in another thread than the lowering."""
    ptx, entry = lowered_ptx(lowered)
    start = time.perf_counter()
    cubin = link_cubin(ptx, lowered.arch)
    lowered.times["link"] = time.perf_counter() - start
    return ptx, cubin, entry, lowered.times


def compile_lock():
    """numba's global compile lock (numba's and numba-cuda's), a re-entrant context manager."""
    from numba.cuda.core.compiler_lock import global_compiler_lock

    return global_compiler_lock


def link_cubin(ptx: str, arch: str) -> bytes:
    """Link ``ptx`` into a cubin for ``arch`` with nvJitLink via ``cuda.core`` (no GPU needed)."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    # bytes, not str: ObjectCode.from_ptx takes a str for a file path
    code = ObjectCode.from_ptx(ptx.encode())
    try:
        linker = Linker(code, options=LinkerOptions(arch=arch))
        try:
            return bytes(linker.link("cubin").code)
        finally:
            linker.close()
    except Exception as e:  # nvJitLink's message includes its error log
        raise CompileError(f"nvJitLink could not link the PTX for {arch}: {e}") from e
