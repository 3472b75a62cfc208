"""The launcher's host-side decisions, without a GPU: grid size, argument packing, refusals.

The launch itself (``cuda.core.launch``) is replaced by a recorder; tests/gpu launches for real.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from fusedarrays.cuda import context as context_module  # noqa: E402
from fusedarrays.cuda import launch as launch_module  # noqa: E402
from fusedarrays.cuda.launch import BLOCK, Launcher, grid_size  # noqa: E402

H100_SMS = 132


@pytest.fixture
def launches(monkeypatch):
    calls = []
    monkeypatch.setattr(launch_module, "launch",
                        lambda stream, config, kernel, *args: calls.append((config, args)))
    return calls


def test_grid_is_one_thread_per_element_capped_per_sm():
    assert grid_size(1, H100_SMS) == 1
    assert grid_size(BLOCK, H100_SMS) == 1
    assert grid_size(BLOCK + 1, H100_SMS) == 2
    assert grid_size(2**26, H100_SMS) == H100_SMS * 32


def test_arguments_are_packed_in_their_kernel_types(launches):
    params = ("i64", "ptr", "ptr", "i64", "f16", "b1", "i32", "u64", "f64")
    launcher = Launcher("kernel", params, H100_SMS)
    args = [0x7F00_0000_0000, 0x7F00_0000_1000, 5, 0.5, True, 3, 2**63 + 1, 0.25]
    launcher(1000, args)
    (config, packed), = launches
    assert config.grid == (4, 1, 1) and config.block == (BLOCK, 1, 1)
    # pointers and int64 stay as they come (cuda.core packs ints as 8 bytes); the rest become
    # NumPy scalars of the parameter's width, float16 as float32 and bool as uint8
    assert [type(a) for a in packed] == [int, int, int, int, np.float32, np.uint8, np.int32,
                                         np.uint64, np.float64]
    assert packed[0] == 1000 and packed[7] == 2**63 + 1 and packed[5] == 1
    assert args[3] == 0.5 and type(args[3]) is float  # the caller's list is left alone


def test_arguments_of_the_right_type_pass_unchanged(launches):
    launcher = Launcher("kernel", ("i64", "ptr", "f32", "b1"), H100_SMS)
    args = [0x7F00_0000_0000, np.float32(2), np.uint8(0)]
    launcher(10, args)
    assert all(a is b for a, b in zip(launches[0][1][1:], args, strict=True))


def test_a_32_bit_element_count_is_packed_as_int32(launches):
    Launcher("kernel", ("i32", "ptr"), H100_SMS)(10, [0])
    assert type(launches[0][1][0]) is np.int32


def test_configs_are_cached_per_element_count(launches):
    launcher = Launcher("kernel", ("i64", "ptr"), H100_SMS)
    launcher(10, [0])
    launcher(10, [0])
    assert launches[0][0] is launches[1][0]


def test_nothing_is_launched_for_no_elements(launches):
    Launcher("kernel", ("i64", "ptr"), H100_SMS)(0, [0])
    assert launches == []


def test_a_wrong_argument_count_fails_before_launching(launches):
    launcher = Launcher("kernel", ("i64", "ptr", "ptr"), H100_SMS)
    with pytest.raises(ValueError):
        launcher(10, [0])
    assert launches == []


def test_unknown_parameter_types_are_refused():
    with pytest.raises(ValueError, match="c32"):
        Launcher("kernel", ("i64", "c32"), H100_SMS)


# --- the C launch (cuda/fastlaunch/fastlaunch.c), with a recorder in place of cuLaunchKernel ---

_PARAM_BYTES = {"ptr": "<Q", "i64": "<q", "u64": "<Q", "i32": "<i", "u32": "<I", "i16": "<h",
                "u16": "<H", "i8": "<b", "u8": "<B", "b1": "<B", "f16": "<f", "f32": "<f",
                "f64": "<d"}


class _Handle:
    def __init__(self, value: int):
        self.value = value

    def __int__(self) -> int:
        return self.value


class _FakeKernel:
    handle = _Handle(0xC0FFEE)


@pytest.fixture
def driver(monkeypatch):
    """A ctypes function with cuLaunchKernel's signature that reads back what the C launch
    passed: each parameter decoded by its type, the grid, the block and the stream."""
    import ctypes
    import struct

    pytest.importorskip("fusedarrays.cuda._fastlaunch")
    recorded = []
    types: list = []
    status = [0]
    signature = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                                 ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.c_void_p)

    def fake(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        values, slot = [], 0
        for t in types[0]:
            if t in ("c64", "c128"):
                part = "<f" if t == "c64" else "<d"
                size = struct.calcsize(part)
                real = struct.unpack(part, ctypes.string_at(params[slot], size))[0]
                imag = struct.unpack(part, ctypes.string_at(params[slot + 1], size))[0]
                values.append(complex(real, imag))
                slot += 2
            else:
                fmt = _PARAM_BYTES[t]
                values.append(struct.unpack(fmt, ctypes.string_at(params[slot],
                                                                    struct.calcsize(fmt)))[0])
                slot += 1
        recorded.append({"function": function, "grid": (gx, gy, gz), "block": (bx, by, bz),
                         "stream": stream, "values": values, "extra": extra})
        return status[0]

    callback = signature(fake)
    address = ctypes.cast(callback, ctypes.c_void_p).value
    # the thread's current context, as cuCtxGetCurrent / cuCtxSetCurrent see it
    current = [0]
    get_signature = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
    set_signature = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)

    def get_current(out):
        out[0] = current[0] or None
        return 0

    def set_current(context):
        current[0] = context or 0
        recorded.append({"set": current[0]})
        return 0

    context_calls = (get_signature(get_current), set_signature(set_current))
    addresses = (address, *(ctypes.cast(c, ctypes.c_void_p).value for c in context_calls))
    from fusedarrays.cuda import _fastlaunch

    monkeypatch.setattr(context_module, "_addresses", [addresses, _fastlaunch.swap_context])
    python_launches = []
    monkeypatch.setattr(launch_module, "launch",
                        lambda stream, config, kernel, *args: python_launches.append(args))

    def make(params, context: int = 0):
        types[:] = [params]
        return Launcher(_FakeKernel(), params, H100_SMS, context)

    make.current = current
    yield make, recorded, python_launches, status
    del callback, context_calls


def test_the_c_launch_packs_each_type_in_its_width(driver):
    make, recorded, python_launches, _ = driver
    params = ("i64", "ptr", "u64", "i32", "u32", "i16", "u16", "i8", "u8", "b1", "f16", "f32",
              "f64", "c64", "c128")
    launcher = make(params)
    assert launcher._fast is not None
    args = [0x7F00_0000_1000, 2**63 + 5, -7, 2**32 - 1, -300, 65535, -128, np.uint8(255),
            np.bool_(True), 0.1, np.float32(2.5), np.float64(1 / 3), 1.5 - 2j,
            np.complex128(0.1 + 0.2j)]
    launcher(1000, args)
    (call,) = recorded
    assert python_launches == []
    assert call["function"] == 0xC0FFEE and call["extra"] is None
    assert call["grid"] == (4, 1, 1) and call["block"] == (BLOCK, 1, 1)
    assert call["stream"] == int(launch_module.LEGACY_DEFAULT_STREAM.handle)
    expected = [1000, *args[:9]]
    assert call["values"][:10] == [int(v) for v in expected]
    # floats narrowed to float32 as NumPy rounds them; complex parts each in its width
    assert call["values"][10] == np.float32(0.1) and call["values"][11] == 2.5
    assert call["values"][12] == 1 / 3
    assert call["values"][13] == complex(np.complex64(1.5 - 2j))
    assert call["values"][14] == 0.1 + 0.2j


@pytest.mark.parametrize("geometry", [
    (), ("rows", 4096, 4096 // 4), ("tiled", 64, 64), ("reduce", "rows", 4096),
    ("reduce", "threads", 4096), ("product", 300)])
def test_the_c_launch_takes_each_geometrys_grid_and_block(driver, geometry):
    """Every schedule's grid and block reach the driver as cuda.core's LaunchConfig has them
    (the tiled one's block is two-dimensional)."""
    make, recorded, python_launches, _ = driver
    launcher = make(("i64", "ptr"))
    n = 4096 * 4096
    launcher(n, [0x1000], geometry)
    launcher(n, [0x1000], geometry)
    config = launcher._configs[(n, geometry)][-1]
    assert recorded[0]["grid"] == tuple(config.grid) == recorded[1]["grid"]
    assert recorded[0]["block"] == tuple(config.block)
    if geometry[:1] == ("tiled",):
        assert recorded[0]["block"] == (32, 8, 1)
    launcher(0, [0x1000])
    assert len(recorded) == 2 and python_launches == []   # nothing for no elements


def test_the_c_launch_refuses_what_numpy_would(driver):
    make, recorded, _, _ = driver
    launcher = make(("i64", "ptr", "i32", "f32"))
    with pytest.raises(OverflowError, match="out of bounds"):
        launcher(10, [0x1000, 2**31, 1.0])
    with pytest.raises(TypeError):
        launcher(10, [0x1000, 1, "a"])
    with pytest.raises(ValueError, match="3 arguments after n, got 2"):
        launcher(10, [0x1000, 1])
    assert recorded == []


def test_a_launch_the_driver_refuses_goes_again_through_cuda_core(driver):
    make, recorded, python_launches, status = driver
    status[0] = 700     # CUDA_ERROR_ILLEGAL_ADDRESS: cuda.core raises its error with its text
    launcher = make(("i64", "ptr", "f32"))
    launcher(10, [0x1000, 0.5])
    assert len(recorded) == 1 and len(python_launches) == 1
    assert python_launches[0][2] == np.float32(0.5) and type(python_launches[0][2]) is np.float32


def test_the_c_launch_makes_its_devices_context_current_around_the_launch(driver):
    """Another library's context current (torch.cuda.set_device(1)): the launch goes to the
    kernel's device's context, and the other one is current again after it; where the kernel's
    is current already, or none is, no switch back."""
    make, recorded, python_launches, _ = driver
    launcher = make(("i64", "ptr"), context=0xC0)
    make.current[0] = 0xD1
    launcher(1000, [0x1000])
    assert [list(r)[0] if "set" in r else "launch" for r in recorded] == ["set", "launch", "set"]
    assert recorded[0]["set"] == 0xC0 and recorded[2]["set"] == 0xD1 and make.current[0] == 0xD1
    recorded.clear()
    make.current[0] = 0            # a new thread: none current; ours stays after the launch
    launcher(1000, [0x1000])
    launcher(1000, [0x1000])
    assert [r.get("set", "launch") for r in recorded] == [0xC0, "launch", "launch"]
    assert python_launches == []


def test_swap_context_says_what_to_make_current_again(driver):
    from fusedarrays.cuda import context

    make, recorded, _, _ = driver
    device = context.DeviceContext.__new__(context.DeviceContext)
    device.handle = 0xC0
    make.current[0] = 0xD1
    assert device.enter() == 0xD1 and make.current[0] == 0xC0
    assert device.enter() == 0          # current already: nothing to restore
    make.current[0] = 0
    assert device.enter() == 0 and make.current[0] == 0xC0


def test_no_c_launch_with_the_python_path(monkeypatch):
    """FUSEDARRAYS_NATIVE=0 (the Python path, kept as the reference) launches through
    cuda.core."""
    from fusedarrays import config

    monkeypatch.setattr(context_module, "_addresses", [])
    # the non-default setting is what this test is about: the reference path launches in Python
    with config.override(NATIVE=False):
        assert Launcher(_FakeKernel(), ("i64", "ptr"), H100_SMS)._fast is None
