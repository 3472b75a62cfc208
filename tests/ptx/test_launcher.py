"""The launcher's host-side decisions, without a GPU: grid size, argument packing, refusals.

The launch itself (``cuLaunchKernel``, or ``cuda.core.launch`` where that fails) is replaced by a
recorder; tests/gpu launches for real.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from fusedarrays.cuda import launch as launch_module  # noqa: E402
from fusedarrays.cuda.launch import BLOCK, Launcher, grid_size  # noqa: E402

H100_SMS = 132


@pytest.fixture
def launches(monkeypatch):
    """The cuda.core path: the raw launch declines, as it does where the driver refuses it."""
    calls = []
    monkeypatch.setattr(launch_module, "launch",
                        lambda stream, config, kernel, *args: calls.append((config, args)))
    monkeypatch.setattr(Launcher, "_launch_raw", lambda self, n, args, dims: False)
    return calls


class FakeKernel:
    handle = "CUkernel"


def test_raw_launch_writes_every_parameter_into_its_slot(monkeypatch):
    calls = []

    def record(handle, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        # read the slots through the pointer array, as the driver does, at call time
        pointers = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint64 * 6).from_address(params))
        slots = [int(p) for p in pointers]
        calls.append(((gx, gy, gz, bx, by, bz), slots, launcher._params.slots.copy()))
        return (launch_module._SUCCESS,)
    monkeypatch.setattr(launch_module.driver, "cuLaunchKernel", record)
    launcher = Launcher(FakeKernel(), ("i64", "ptr", "i64", "f32", "b1", "f64"), H100_SMS)
    launcher(4096, [0x7F00_0000_1000, -7, 1.5, True, 0.25], ("flat", 1024))
    (dims, pointers, slots), = calls
    assert dims == (4, 1, 1, BLOCK, 1, 1)
    assert pointers == [launcher._params.slots.ctypes.data + 8 * k for k in range(6)]
    assert slots.view(np.int64)[0] == 4096 and int(slots[1]) == 0x7F00_0000_1000
    assert slots.view(np.int64)[2] == -7 and slots.view(np.float32)[6] == 1.5
    assert slots.view(np.uint8)[32] == 1 and slots.view(np.float64)[5] == 0.25


def test_a_refused_raw_launch_falls_back_to_cuda_core(monkeypatch):
    packed = []
    monkeypatch.setattr(launch_module.driver, "cuLaunchKernel",
                        lambda *args: (launch_module.driver.CUresult.CUDA_ERROR_INVALID_HANDLE,))
    monkeypatch.setattr(launch_module, "launch",
                        lambda stream, config, kernel, *args: packed.append(args))
    launcher = Launcher(FakeKernel(), ("i64", "ptr"), H100_SMS)
    launcher(10, [0x1000])
    launcher(10, [0x2000])
    assert packed == [(10, 0x1000), (10, 0x2000)] and not launcher._raw


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
    with pytest.raises(ValueError, match="c64"):
        Launcher("kernel", ("i64", "c64"), H100_SMS)
