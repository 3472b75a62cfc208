"""The measurements behind two tuned choices of ``fusedarrays/cuda/launch.py`` (GPU only).

- ``launch``: host µs per launch of one cached 1 K-element kernel, routes alternating in one
  process: the library's ``Launcher`` (``cuda.core.launch`` behind its per-call checks), a bare
  ``cuda.core.launch`` with its arguments converted once, and two routes to the driver written
  here: ``cuLaunchKernelEx`` through ``ctypes`` (a prebuilt config struct, a parameter block filled
  by one ``struct.pack_into``) and ``cuLaunchKernel`` through ``ctypes`` (eleven converted
  arguments); plus one trivial ``ctypes`` driver call and one ``struct.pack_into``. Each figure:
  wall time of 5000 launches, then a device synchronisation, per launch; 6 rounds, sorted.
- ``tiles``: ``(x.T + b[None,:]) * s[:,None]`` over 4096² float32 as a fraction of a same-size
  device copy for several ``BLOCKS_PER_SM_TILES`` caps (two passes), each checked against NumPy.

Usage: python benchmarks/launch_tuning.py OUT.json
"""

import ctypes
import functools
import json
import os
import struct
import sys
import time

import numpy as np

import fusedarrays as fa
from fusedarrays.cuda import launch as launch_module
from fusedarrays.runtime import realize as runtime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bandwidth  # noqa: E402  (its kernel_only and median_ms)


def captured_launch(backend):
    """(launcher, n, args, geometry) of a 1 K ``o[...] = x * y + 1.5``."""
    rng = np.random.default_rng()
    x, y = (fa.asarray(rng.standard_normal(1024).astype(np.float32)) for _ in range(2))
    o = fa.empty(1024, np.float32)
    seen = []
    real = backend.launch
    backend.launch = lambda k, n, a, g=(): (seen.append((k, n, list(a), g)), real(k, n, a, g))
    try:
        o[...] = x * y + 1.5
    finally:
        backend.launch = real
    err = np.abs(o.get() - (x.get() * y.get() + np.float32(1.5))).max()
    assert err < 1e-5, err
    return seen[-1]


_SLOTS = {"ptr": "Q", "u64": "Q", "i64": "q", "i32": "i4x", "u32": "I4x", "f32": "f4x",
          "f16": "f4x", "f64": "d", "b1": "B7x"}


class _ConfigStruct(ctypes.Structure):   # the driver's CUlaunchConfig, no attributes
    _fields_ = [(name, ctypes.c_uint) for name in ("gx", "gy", "gz", "bx", "by", "bz", "shm")] \
        + [("stream", ctypes.c_void_p), ("attrs", ctypes.c_void_p), ("nattrs", ctypes.c_uint)]


def launch_routes(backend) -> dict:
    from cuda.core import LEGACY_DEFAULT_STREAM, launch

    launcher, n, args, geometry = captured_launch(backend)
    launcher(n, args, geometry)
    config = launcher._configs[(n, geometry)]
    def three(extent):   # LaunchConfig may hold an int or a shorter tuple
        extent = (extent,) if isinstance(extent, int) else tuple(extent)
        return (extent + (1, 1))[:3]
    dims = three(config.grid) + three(config.block)
    types = {**launch_module._NUMPY_TYPES, "ptr": np.uint64, "i64": np.int64}
    typed = [types[t](v) for t, v in zip(launcher.param_types, (n, *args))]
    library = ctypes.PyDLL("libcuda.so.1")   # keeps the GIL: the one parameter block is safe
    u32, ptr = ctypes.c_uint, ctypes.c_void_p
    launch_ex = library.cuLaunchKernelEx
    launch_ex.argtypes, launch_ex.restype = [ptr] * 4, ctypes.c_int
    eleven = library.cuLaunchKernel
    eleven.argtypes = [ptr, u32, u32, u32, u32, u32, u32, u32, ptr, ptr, ptr]
    eleven.restype = ctypes.c_int
    version = library.cuDriverGetVersion
    version.argtypes, version.restype = [ptr], ctypes.c_int
    pack_into = struct.Struct("<" + "".join(_SLOTS[t] for t in launcher.param_types)).pack_into
    slots = (ctypes.c_uint64 * len(launcher.param_types))()
    pointers = (ctypes.c_void_p * len(slots))(*[ctypes.addressof(slots) + 8 * k
                                                for k in range(len(slots))])
    params = ctypes.addressof(pointers)
    config_struct = _ConfigStruct(*dims, 0, 1, None, 0)   # stream 1: the legacy default stream
    config_address = ctypes.addressof(config_struct)
    handle, out = int(launcher.kernel.handle), ctypes.c_int()

    def cu_launch_kernel_ex():
        pack_into(slots, 0, n, *args)
        if launch_ex(config_address, handle, params, None):
            raise RuntimeError("cuLaunchKernelEx failed")

    def cu_launch_kernel():
        pack_into(slots, 0, n, *args)
        if eleven(handle, *dims, 0, 1, params, None):
            raise RuntimeError("cuLaunchKernel failed")

    routes = {
        "Launcher (cuda.core.launch)": lambda: launcher(n, args, geometry),
        "cuda.core.launch, bare": lambda: launch(LEGACY_DEFAULT_STREAM, config, launcher.kernel,
                                                 *typed),
        "cuLaunchKernelEx, ctypes, bare": cu_launch_kernel_ex,
        "cuLaunchKernel, ctypes, 11 arguments": cu_launch_kernel,
        "one trivial ctypes driver call": lambda: version(ctypes.addressof(out)),
        "struct.pack_into of the arguments": lambda: pack_into(slots, 0, n, *args),
    }

    def per_call(fn, calls=5000):
        fn()
        backend.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        backend.synchronize()
        return elapsed / calls * 1e6
    rounds = {name: [] for name in routes}
    for _ in range(6):
        for name, fn in routes.items():
            rounds[name].append(per_call(fn))
    return {name: sorted(v) for name, v in rounds.items()}


def tile_caps(backend) -> dict:
    import cupy as cp

    rng = np.random.default_rng()
    m = 4096
    xh = rng.standard_normal((m, m)).astype(np.float32)
    bh, sh = (rng.standard_normal(m).astype(np.float32) for _ in range(2))
    x, b, s = fa.asarray(xh), fa.asarray(bh), fa.asarray(sh)
    want = (xh.T + bh[None, :]) * sh[:, None]
    same = cp.asarray(rng.standard_normal(m * m).astype(np.float32))
    same_out = cp.empty_like(same)
    sync = cp.cuda.Device().synchronize
    default, out = launch_module.BLOCKS_PER_SM_TILES, {}
    try:
        for _ in range(2):
            for cap in (4, 8, 16, 32, 64):
                launch_module.BLOCKS_PER_SM_TILES = cap
                launch, plan, written = bandwidth.kernel_only((x.T + b[None, :]) * s[:, None])
                runtime.kernel_for(plan, backend)._configs.clear()   # the new cap applies
                copy_ms = bandwidth.median_ms(functools.partial(cp.copyto, same_out, same), sync)
                kernel_ms = bandwidth.median_ms(launch, sync)
                assert np.array_equal(written(), want)
                out.setdefault(cap, []).append(copy_ms / kernel_ms)
    finally:
        launch_module.BLOCKS_PER_SM_TILES = default
    return out


def main() -> int:
    backend = fa._get_backend()
    result = {"device": str(backend.device.name), "launch_us": launch_routes(backend),
              "tile_caps_fraction_of_same_size_copy": tile_caps(backend)}
    for name, values in result["launch_us"].items():
        print(f"{name:40s} " + " ".join(f"{v:.2f}" for v in values) + " us")
    for cap, values in result["tile_caps_fraction_of_same_size_copy"].items():
        print(f"tiles, {cap:2d} blocks per SM: " + " ".join(f"{v:.3f}" for v in values))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
