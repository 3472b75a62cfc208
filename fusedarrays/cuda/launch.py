"""Launching a loaded kernel: argument packing and grid size, on the hot path.

Where it sits: the runtime's last step; ``CudaBackend.load`` builds one :class:`Launcher` per loaded
kernel and ``CudaBackend.launch`` calls it with the element count and the kernel arguments. Every
call is measured in microseconds, so everything that depends only on the kernel (argument
converters, stream, SM count) is decided once in ``__init__``, and the launch configuration once per
element count. Imports no numba.

``cuda.core.launch`` it is, measured against the driver's launch called directly
(a one-off script, since removed: git history has ``benchmarks/launch_tuning.py``; H100 hosts,
2026-11-22, alternating rounds in one process):
``cuLaunchKernelEx`` through ``ctypes`` with a prebuilt config struct and a parameter block
packed by one ``struct.pack_into``, as a bare call, took 6.3 µs where a bare
``cuda.core.launch`` took 7.1–7.5 µs on one host; on two others a launcher built that way took
4.8–6.1 and 7.5–8.0 µs where a bare ``cuda.core.launch`` took 4.6–5.7 and 6.6–6.9 µs, which is
about what this launcher adds to it. ``cuLaunchKernel`` through ``ctypes`` (eleven converted
arguments) took 6.3–9.8 µs, and through ``cuda.bindings`` with a NumPy parameter array
10–12 µs. The driver's own work is about
5 µs of every route, so a faster launch needs a C-level caller, not another Python binding.

That caller is the optional C extension ``_fastlaunch`` (``cuda/fastlaunch/fastlaunch.c``): it
reads the arguments into one buffer by a code per parameter, makes the kernel's device current
where another context is (:mod:`.context`), and calls ``cuLaunchKernel``, whose address comes
from the ``libcuda.so`` cuda.core loaded. Where it was not built, or with
``FUSEDARRAYS_NATIVE=0``, or for a kernel that is not a ``cuda.core`` ``Kernel``, launches go
through ``cuda.core.launch`` as above; a launch the driver refuses is repeated there, so its
error is cuda.core's, with the driver's message.
"""

from __future__ import annotations

import numpy as np
from cuda.core import LEGACY_DEFAULT_STREAM, Kernel, LaunchConfig, launch

from ..compiler import PRODUCT_THREADS
from ..ir.layout import TILE_THREADS
from ..ir.reductions import BLOCK_THREADS
from .context import driver_addresses

BLOCK = 256
BLOCKS_PER_SM = 32  # grid-stride loop: more blocks than this only adds scheduling overhead
_MAX_CONFIGS = 1024
_MAX_GRID_Y = 65535  # the hardware limit; row and tile loops stride by gridDim.y beyond it
# A row walk gets at most BLOCKS_PER_SM_ROWS blocks per SM in all, each thread handling
# VECTORS_PER_THREAD_ROWS vectors of a row: each block then loops over several rows, which
# amortises the per-row set-up. (x + b[None,:]) * s[:,None] over 4096² float32 on the H100, as a
# fraction of a same-size copy: one vector per thread and no cap 0.67, cap 8 0.90, two vectors per
# thread and cap 8 0.95 (2026-11-22, benchmarks/bandwidth.py).
BLOCKS_PER_SM_ROWS = 8
VECTORS_PER_THREAD_ROWS = 2
BLOCKS_PER_SM_TILES = 16  # about two 64 x 64 tiles per block: 0.90 → 0.92 of a same-size copy
  # launch configurations cached per kernel, then the cache starts over

# cuda.core packs a Python int as an 8-byte intptr_t, which is exactly a device address or an
# int64: "ptr" and "i64" arguments are passed as they come (ints, or NumPy 64-bit integers).
# Every other type must reach cuda.core as the NumPy scalar of its width (a Python int or float
# would be packed as 8 bytes): arguments of another type are converted (building a NumPy scalar
# costs about a microsecond), so callers that pass the right type (runtime.scalar_arg does) pay
# only a type check.
# float16 travels as float32 and bool as uint8 (see intrinsics.SCALARS).
_AS_IS = frozenset({"ptr", "i64"})
_NUMPY_TYPES = {
    "u64": np.uint64, "b1": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
    "f16": np.float32, "f32": np.float32, "f64": np.float64,
    "bf16": np.float32, "e4m3": np.float32, "e5m2": np.float32,   # as float16: float32 values
}
# numba passes a complex kernel parameter as its two parts, each a parameter of the part's type
# (a complex64 is two .param .f32 in the PTX): a complex argument is split into them at launch.
_COMPLEX_PARTS = {"c64": np.float32, "c128": np.float64}
# the C launch's code for each parameter type (fastlaunch.c's header lists them)
_FAST_CODES = {"ptr": "q", "i64": "q", "u64": "q", "i32": "i", "u32": "I", "i16": "h",
               "u16": "H", "i8": "b", "u8": "B", "b1": "?", "f16": "f", "f32": "f", "f64": "d",
               "bf16": "f", "e4m3": "f", "e5m2": "f",
               "c64": "F", "c128": "D"}
def fast_launch(kernel, param_types: tuple[str, ...], stream, context: int = 0):
    """The C launch of ``kernel`` (a ``cuda.core`` ``Kernel``), or None where there is none; it
    makes ``context`` (an address; 0: none) current before each launch where another one is."""
    calls = driver_addresses()
    handle = getattr(kernel, "handle", None)
    if calls is None or handle is None:
        return None
    from ._fastlaunch import Launch

    return Launch(calls[0], int(handle), int(stream.handle),
                  "".join(_FAST_CODES[t] for t in param_types),
                  *((context, calls[1], calls[2]) if context else ()))


def grid_size(n: int, sm_count: int) -> int:
    """Blocks for ``n`` elements: one element per thread, capped at ``BLOCKS_PER_SM`` per SM."""
    return min(-(-n // BLOCK), sm_count * BLOCKS_PER_SM)


class Launcher:
    """A loaded kernel, ready to launch on the legacy default stream.

    ``param_types`` lists every kernel parameter (the first is the element count ``n``);
    ``launcher(n, args)`` passes ``n`` and then ``args``, the remaining parameters in order.
    """

    __slots__ = ("kernel", "param_types", "_nargs", "_n_type", "_typed", "_parts", "_sm_count",
                 "_configs", "_stream", "_types", "_fast")

    def __init__(self, kernel: Kernel, param_types: tuple[str, ...], sm_count: int,
                 context: int = 0):
        known = _AS_IS | set(_NUMPY_TYPES) | set(_COMPLEX_PARTS)
        unknown = [t for t in param_types if t not in known]
        if unknown or not param_types:
            raise ValueError(f"cannot launch with {param_types=}: the first is n, and each is one "
                             f"of {sorted(known)}")
        self.kernel = kernel
        self.param_types = tuple(param_types)
        self._nargs = len(param_types) - 1
        self._n_type = _NUMPY_TYPES.get(param_types[0])  # None: n goes as a Python int
        # (position in args, NumPy type) of each argument that is not passed as it comes
        self._typed = tuple((k, _NUMPY_TYPES[t]) for k, t in enumerate(param_types[1:])
                            if t in _NUMPY_TYPES)
        # (position in args, part type) of each complex argument, split in two at launch
        self._parts = tuple((k, _COMPLEX_PARTS[t]) for k, t in enumerate(param_types[1:])
                            if t in _COMPLEX_PARTS)
        # the type of each argument that needs no conversion: one tuple comparison on the hot
        # path (a lazy evaluation's packer passes them so: Black-Scholes has 48)
        self._types = None if self._parts else tuple(
            _NUMPY_TYPES.get(t, int) for t in param_types[1:])
        self._sm_count = sm_count
        # (n, geometry) → (grid x, y, z, block x, y, z, the same as a LaunchConfig)
        self._configs: dict[tuple, tuple] = {}
        self._stream = LEGACY_DEFAULT_STREAM
        # the C launch makes the device's context current itself (``context``: its address)
        self._fast = fast_launch(kernel, self.param_types, self._stream, context)

    def _config(self, n: int, geometry: tuple) -> tuple:
        if len(self._configs) >= _MAX_CONFIGS:
            self._configs.clear()
        kind = geometry[0] if geometry else "flat"
        if kind == "rows":    # (rows, threads per row): rows on grid y, no division per element
            _, rows, per_row = geometry
            across = grid_size(-(-per_row // VECTORS_PER_THREAD_ROWS), self._sm_count)
            cap = max(1, self._sm_count * BLOCKS_PER_SM_ROWS // across)
            grid = (across, min(rows, cap, _MAX_GRID_Y))
            config = LaunchConfig(grid=grid, block=BLOCK)
        elif kind == "reduce":  # (schedule, outputs[, "fold"]): compiler/reduction.py
            # both schedules' blocks are BLOCK_THREADS wide (BLOCK == BLOCK_THREADS): a split
            # reduction's last block folds the partials with a tree of that width on either
            _, schedule, outputs = geometry[:3]
            if schedule == "rows":   # a block per output, grid-stride over outputs
                config = LaunchConfig(grid=min(outputs, self._sm_count * BLOCKS_PER_SM),
                                      block=BLOCK_THREADS)
            else:                    # a thread per output
                config = LaunchConfig(grid=grid_size(outputs, self._sm_count), block=BLOCK)
        elif kind == "product":  # (output tiles,): a block per tile, grid-stride over them
            config = LaunchConfig(grid=min(geometry[1], self._sm_count * BLOCKS_PER_SM),
                                  block=PRODUCT_THREADS)
        elif kind == "tiled":  # (tile rows, tile columns): one TILE x TILE tile per block
            _, tile_rows, tile_cols = geometry
            cap = max(1, self._sm_count * BLOCKS_PER_SM_TILES // tile_cols)
            config = LaunchConfig(grid=(tile_cols, min(tile_rows, cap, _MAX_GRID_Y)),
                                  block=TILE_THREADS)
        else:
            threads = geometry[1] if geometry else n
            config = LaunchConfig(grid=grid_size(threads, self._sm_count), block=BLOCK)
        entry = (*config.grid, *config.block, config)   # 3 + 3 numbers: the C launch reads them
        self._configs[(n, geometry)] = entry
        return entry

    def _converted(self, args) -> list:
        args = list(args)
        for k, numpy_type in self._typed:
            args[k] = numpy_type(args[k])
        return args

    def _split(self, args) -> list:
        args = list(args)
        for k, part in reversed(self._parts):   # from the end: earlier positions stay put
            value = complex(args[k])
            args[k:k + 1] = [part(value.real), part(value.imag)]
        return args

    def direct(self, n: int, geometry: tuple = ()):
        """``(call, config)`` where ``call(config, n, args)`` queues this kernel over ``n``
        elements and ``geometry`` and returns None (the C launch, whose config is made here
        once), or None where there is no C launch. ``args`` must be of the parameter types
        that :meth:`__call__` would pass as they are (a launch record's packer makes them so);
        a launch the driver refuses returns something other than None, and the caller goes
        through :meth:`__call__` for cuda.core's error."""
        if self._fast is None or n <= 0:
            return None
        return self._fast, self._configs.get((n, geometry)) or self._config(n, geometry)

    def __call__(self, n: int, args, geometry: tuple = ()) -> None:
        """Launch over ``n`` elements (nothing for ``n <= 0``) with the parameters after ``n``;
        ``geometry`` (``KernelPlan.geometry``) picks a 1-D, row or tile grid."""
        entry = self._configs.get((n, geometry))
        if entry is None:
            if n <= 0:
                return
            entry = self._config(n, geometry)
        if self._fast is not None and self._fast(entry, n, args) is None:
            return      # queued; a refused launch goes again below, to raise cuda.core's error
        self._queue(self._stream, entry, n, args)

    def launch_on(self, stream, n: int, args, geometry: tuple = ()) -> None:
        """Queue on ``stream`` (a ``cuda.core`` Stream or GraphBuilder) instead of the legacy
        stream: ``fa.capture``'s CUDA graph and ``fa.on_stream`` (``cuda/graphs.py``)."""
        if n > 0:
            entry = self._configs.get((n, geometry)) or self._config(n, geometry)
            self._queue(stream, entry, n, args)

    def _queue(self, stream, entry: tuple, n: int, args) -> None:
        if len(args) != self._nargs:  # a short list would launch a kernel reading garbage
            raise ValueError(f"{self!r} takes {self._nargs} arguments after n, got {len(args)}")
        if tuple(map(type, args)) != self._types:
            for k, numpy_type in self._typed:
                if type(args[k]) is not numpy_type:
                    args = self._converted(args)
                    break
            if self._parts:
                args = self._split(args)
        launch(stream, entry[6], self.kernel, n if self._n_type is None else self._n_type(n),
               *args)

    def __repr__(self) -> str:
        return f"<Launcher {self.kernel!r} params={','.join(self.param_types)}>"
