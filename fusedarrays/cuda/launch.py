"""Launching a loaded kernel: argument packing and grid size, on the hot path.

Where it sits: the runtime's last step; ``CudaBackend.load`` builds one :class:`Launcher` per loaded
kernel and ``CudaBackend.launch`` calls it with the element count and the kernel arguments. Every
call is measured in microseconds, so everything that depends only on the kernel (the parameter
block, stream, SM count) is decided once in ``__init__``, and the launch configuration once per
element count. Imports no numba.

The launch is the driver's ``cuLaunchKernelEx`` called through ``ctypes`` with four pointers: a
launch-configuration struct built once per grid, the kernel handle, and a parameter block built
once per kernel and thread, into which a call packs every argument with one ``struct.pack_into``.
``cuda.core.launch`` (which checks and packs its arguments anew on every call) is the fallback where
the driver library can't be opened this way or refuses the launch; it then raises its own,
descriptive, error. Measured on the H100 host (2026-11-22, same process, alternating rounds; the
driver's own work is about 5 µs of each): this route 6.3 µs a launch, ``cuda.core.launch`` with
pre-converted arguments 7.1–7.5 µs, ``cuLaunchKernel`` through ``ctypes`` (eleven arguments, each
converted by ctypes) 9.3 µs, and through ``cuda.bindings`` with a NumPy parameter array 10–12 µs.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from threading import get_ident

import numpy as np
from cuda.core import LEGACY_DEFAULT_STREAM, Kernel, LaunchConfig, launch

from ..layout import TILE_THREADS

BLOCK = 256
BLOCKS_PER_SM = 32  # grid-stride loop: more blocks than this only adds scheduling overhead
_MAX_CONFIGS = 1024  # launch configurations cached per kernel, then the cache starts over
_MAX_GRID_Y = 65535  # the hardware limit; row and tile loops stride by gridDim.y beyond it
# A row walk gets at most BLOCKS_PER_SM_ROWS blocks per SM in all, each thread handling
# VECTORS_PER_THREAD_ROWS vectors of a row: each block then loops over several rows, which
# amortises the per-row set-up. (x + b[None,:]) * s[:,None] over 4096² float32 on the H100, as a
# fraction of a same-size copy: one vector per thread and no cap 0.67, cap 8 0.90, two vectors per
# thread and cap 8 0.95 (2026-11-22, benchmarks/bandwidth.py).
BLOCKS_PER_SM_ROWS = 8
VECTORS_PER_THREAD_ROWS = 2
BLOCKS_PER_SM_TILES = 16  # about two 64 x 64 tiles per block: 0.90 → 0.92 of a same-size copy

# Each kernel parameter takes one 8-byte slot of the parameter block (every parameter type is at
# most 8 bytes, and the driver reads each through its own pointer), packed little-endian by
# ``struct``: the format of a slot per parameter type. float16 travels as float32 and bool as
# uint8 (see intrinsics.SCALARS). ``struct`` takes Python and NumPy scalars alike and refuses a
# value out of the type's range.
_SLOT_FORMATS = {
    "ptr": "Q", "u64": "Q", "i64": "q", "i32": "i4x", "u32": "I4x", "i16": "h6x", "u16": "H6x",
    "i8": "b7x", "u8": "B7x", "b1": "B7x", "f16": "f4x", "f32": "f4x", "f64": "d",
}
_CU_STREAM_LEGACY = 1  # the driver's handle of the legacy default stream


class _LaunchConfig(ctypes.Structure):
    """The driver's ``CUlaunchConfig``: grid and block extents, shared bytes, stream, no
    attributes."""

    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
                ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint)]


class _Grid:
    """One launch configuration: its extents and the driver struct holding them."""

    __slots__ = ("dims", "struct", "address")

    def __init__(self, dims: tuple):
        self.dims = dims
        self.struct = _LaunchConfig(*dims, 0, _CU_STREAM_LEGACY, None, 0)
        self.address = ctypes.addressof(self.struct)


def _driver_launch():
    """``cuLaunchKernelEx`` of the CUDA driver library through ``ctypes`` (four pointer
    arguments: config, kernel, parameters, extra), or None where it can't be opened."""
    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        fn = ctypes.CDLL(name).cuLaunchKernelEx
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p] * 4
    fn.restype = ctypes.c_int
    return fn


_cu_launch = None  # opened with the first launcher (importing this module opens nothing)


def grid_size(n: int, sm_count: int) -> int:
    """Blocks for ``n`` elements: one element per thread, capped at ``BLOCKS_PER_SM`` per SM."""
    return min(-(-n // BLOCK), sm_count * BLOCKS_PER_SM)


class ParamBlock:
    """The ``kernelParams`` of a launch, built once per kernel and thread: one 8-byte slot per
    parameter (``slots``) and an array of pointers to the slots (at ``address``).
    ``pack_into(slots, 0, n, *args)`` writes a launch's values into the slots in one call; the
    driver copies them while the launch is queued, so the next launch may refill them. One block
    per thread: ``ctypes`` releases the GIL during the driver call, when another thread's launch
    of the same kernel could otherwise refill the slots being read."""

    __slots__ = ("format", "pack_into", "slots", "pointers", "address")

    def __init__(self, param_types: tuple[str, ...]):
        self.format = "<" + "".join(_SLOT_FORMATS[t] for t in param_types)
        self.pack_into = struct.Struct(self.format).pack_into
        self.slots = (ctypes.c_uint64 * len(param_types))()
        base = ctypes.addressof(self.slots)
        self.pointers = (ctypes.c_void_p * len(param_types))(
            *[base + 8 * k for k in range(len(param_types))])
        self.address = ctypes.addressof(self.pointers)

    def values(self) -> tuple:
        """The values last packed, as the kernel will read them."""
        return struct.unpack(self.format, bytes(self.slots))


class Launcher:
    """A loaded kernel, ready to launch on the legacy default stream.

    ``param_types`` lists every kernel parameter (the first is the element count ``n``);
    ``launcher(n, args)`` passes ``n`` and then ``args``, the remaining parameters in order.
    """

    __slots__ = ("kernel", "param_types", "_nargs", "_sm_count", "_grids", "_blocks", "_raw",
                 "_handle")

    def __init__(self, kernel: Kernel, param_types: tuple[str, ...], sm_count: int):
        global _cu_launch
        unknown = [t for t in param_types if t not in _SLOT_FORMATS]
        if unknown or not param_types:
            raise ValueError(f"cannot launch with {param_types=}: the first is n, and each is one "
                             f"of {sorted(_SLOT_FORMATS)}")
        self.kernel = kernel
        self.param_types = tuple(param_types)
        self._nargs = len(param_types) - 1
        self._sm_count = sm_count
        self._grids: dict[tuple, _Grid] = {}        # (n, geometry) → launch configuration
        self._blocks: dict[int, ParamBlock] = {}    # thread → parameter block
        if _cu_launch is None:
            _cu_launch = _driver_launch() or False
        handle = getattr(kernel, "handle", None)
        self._raw = bool(_cu_launch) and handle is not None
        self._handle = int(handle) if self._raw else None

    def _grid(self, n: int, geometry: tuple) -> _Grid:
        if len(self._grids) >= _MAX_CONFIGS:
            self._grids.clear()
        kind = geometry[0] if geometry else "flat"
        if kind == "rows":    # (rows, threads per row): rows on grid y, no division per element
            _, rows, per_row = geometry
            across = grid_size(-(-per_row // VECTORS_PER_THREAD_ROWS), self._sm_count)
            cap = max(1, self._sm_count * BLOCKS_PER_SM_ROWS // across)
            dims = (across, min(rows, cap, _MAX_GRID_Y), 1, BLOCK, 1, 1)
        elif kind == "tiled":  # (tile rows, tile columns): one TILE x TILE tile per block
            _, tile_rows, tile_cols = geometry
            cap = max(1, self._sm_count * BLOCKS_PER_SM_TILES // tile_cols)
            dims = (tile_cols, min(tile_rows, cap, _MAX_GRID_Y), 1, *TILE_THREADS, 1)
        else:
            threads = geometry[1] if geometry else n
            dims = (grid_size(threads, self._sm_count), 1, 1, BLOCK, 1, 1)
        grid = self._grids[(n, geometry)] = _Grid(dims)
        return grid

    def __call__(self, n: int, args, geometry: tuple = ()) -> None:
        """Launch over ``n`` elements (nothing for ``n <= 0``) with the parameters after ``n``;
        ``geometry`` (``KernelPlan.geometry``) picks a 1-D, row or tile grid."""
        grid = self._grids.get((n, geometry))
        if grid is None:
            if n <= 0:
                return
            grid = self._grid(n, geometry)
        if len(args) != self._nargs:  # a short list would launch a kernel reading garbage
            raise ValueError(f"{self!r} takes {self._nargs} arguments after n, got {len(args)}")
        block = self._blocks.get(get_ident())
        if block is None:
            block = self._blocks[get_ident()] = ParamBlock(self.param_types)
        try:
            block.pack_into(block.slots, 0, n, *args)
        except struct.error as e:
            raise TypeError(f"{self!r}: an argument does not fit its parameter type: {e}") from e
        if self._raw and not _cu_launch(grid.address, self._handle, block.address, None):
            return
        self._launch_core(block, grid.dims)

    def _launch_core(self, block: ParamBlock, dims: tuple) -> None:
        """The same launch through ``cuda.core``: where the driver library could not be opened
        or refused the launch. It raises a descriptive error if the launch is wrong; if it
        succeeds, this kernel launches through ``cuda.core`` from now on."""
        values = [_CORE_TYPES[t](v) for t, v in zip(self.param_types, block.values())]
        launch(LEGACY_DEFAULT_STREAM, LaunchConfig(grid=dims[:3], block=dims[3:]), self.kernel,
               *values)
        self._raw = False

    def __repr__(self) -> str:
        return f"<Launcher {self.kernel!r} params={','.join(self.param_types)}>"


# What cuda.core packs each parameter type as: the NumPy scalar of its width.
_CORE_TYPES = {
    "ptr": np.uint64, "u64": np.uint64, "i64": np.int64, "i32": np.int32, "u32": np.uint32,
    "i16": np.int16, "u16": np.uint16, "i8": np.int8, "u8": np.uint8, "b1": np.uint8,
    "f16": np.float32, "f32": np.float32, "f64": np.float64,
}
