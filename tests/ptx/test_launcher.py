"""The launcher's host-side decisions, without a GPU: grid size, the parameter block, refusals,
and the fall-back to ``cuda.core``.

The driver's ``cuLaunchKernelEx`` and ``cuda.core.launch`` are replaced by recorders; the recorder
of the driver call reads the parameter block through the pointers it is handed, as the driver
does. tests/gpu launches for real.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from fusedarrays.cuda import launch as launch_module  # noqa: E402
from fusedarrays.cuda.launch import BLOCK, Launcher, grid_size  # noqa: E402

H100_SMS = 132
# how the kernel reads each parameter type from its slot (float16 travels as float32, bool as
# uint8)
READ = {"ptr": "<Q", "u64": "<Q", "i64": "<q", "i32": "<i", "u32": "<I", "f16": "<f",
        "f32": "<f", "f64": "<d", "b1": "<B", "i8": "<b"}


class FakeKernel:
    handle = 0x5EED_0000


@pytest.fixture
def driver(monkeypatch):
    """Records each driver launch as (handle, grid, block, the parameter values the driver reads),
    returning ``driver.result`` (0: success)."""
    calls = []

    def cu_launch_kernel_ex(config, handle, params, extra):
        c = launch_module._LaunchConfig.from_address(config)
        # the legacy default stream, no dynamic shared memory, no attributes
        assert (c.shared_bytes, c.stream, c.num_attrs, extra) == (0, 1, 0, None)
        types = calls.types
        pointers = (ctypes.c_void_p * len(types)).from_address(params)
        values = tuple(struct.unpack(READ[t], ctypes.string_at(p, 8)[:struct.calcsize(READ[t])])[0]
                       for t, p in zip(types, pointers))
        calls.append((handle, (c.grid_x, c.grid_y, c.grid_z), (c.block_x, c.block_y, c.block_z),
                      values))
        return calls.result

    calls = _Calls()
    monkeypatch.setattr(launch_module, "_cu_launch", cu_launch_kernel_ex)
    return calls


class _Calls(list):
    result = 0
    types: tuple = ()


@pytest.fixture
def core(monkeypatch):
    calls = []
    monkeypatch.setattr(launch_module, "launch",
                        lambda stream, config, kernel, *args: calls.append((config, args)))
    return calls


def test_grid_is_one_thread_per_element_capped_per_sm():
    assert grid_size(1, H100_SMS) == 1
    assert grid_size(BLOCK, H100_SMS) == 1
    assert grid_size(BLOCK + 1, H100_SMS) == 2
    assert grid_size(2**26, H100_SMS) == H100_SMS * 32


def test_the_driver_reads_each_argument_in_its_kernel_type(driver):
    params = ("i64", "ptr", "ptr", "i64", "f16", "b1", "i32", "u64", "f64", "i8")
    driver.types = params
    launcher = Launcher(FakeKernel(), params, H100_SMS)
    rng = np.random.default_rng()
    a, b = (int(v) * 256 for v in rng.integers(1 << 30, 1 << 38, 2))
    scale = float(rng.standard_normal())
    args = [a, b, -5, np.float32(scale), np.uint8(1), np.int32(-3), 2**63 + 1, scale, -128]
    launcher(1000, args)
    (handle, grid, block, values), = driver
    assert handle == FakeKernel.handle and grid == (4, 1, 1) and block == (BLOCK, 1, 1)
    assert values == (1000, a, b, -5, np.float32(scale), 1, -3, 2**63 + 1, scale, -128)
    launcher(7, [b, a, 6, 0.5, True, 4, 1, -scale, 127])   # Python scalars pack alike
    assert driver[1][3] == (7, b, a, 6, 0.5, 1, 4, 1, -scale, 127)


def test_a_value_out_of_its_type_range_is_refused_before_launching(driver):
    driver.types = ("i64", "i8")
    launcher = Launcher(FakeKernel(), driver.types, H100_SMS)
    with pytest.raises(TypeError, match="does not fit"):
        launcher(10, [300])
    assert driver == []


def test_a_refused_driver_launch_goes_through_cuda_core_from_then_on(driver, core):
    driver.types, driver.result = ("i64", "ptr", "f32", "b1"), 201  # CUDA_ERROR_INVALID_CONTEXT
    launcher = Launcher(FakeKernel(), driver.types, H100_SMS)
    launcher(10, [0x7F00_0000_0000, 2.5, True])
    launcher(10, [0x7F00_0000_0100, 3.5, False])
    assert len(driver) == 1 and len(core) == 2
    config, packed = core[1]
    assert config.grid == (1, 1, 1) and config.block == (BLOCK, 1, 1)
    # cuda.core packs each value as the NumPy scalar of the parameter's width
    assert [type(v) for v in packed] == [np.int64, np.uint64, np.float32, np.uint8]
    assert packed == (10, 0x7F00_0000_0100, 3.5, 0)


def test_configs_are_cached_per_element_count_and_geometry(driver):
    driver.types = ("i64", "ptr")
    launcher = Launcher(FakeKernel(), driver.types, H100_SMS)
    launcher(10, [0])
    launcher(10, [0])
    launcher(4096 * 4096, [0], ("tiled", 64, 64))
    assert driver[0][1:3] == driver[1][1:3] and len(launcher._grids) == 2
    assert driver[2][2] == (32, 8, 1)


def test_nothing_is_launched_for_no_elements(driver, core):
    Launcher(FakeKernel(), ("i64", "ptr"), H100_SMS)(0, [0])
    assert driver == [] and core == []


def test_a_wrong_argument_count_fails_before_launching(driver):
    launcher = Launcher(FakeKernel(), ("i64", "ptr", "ptr"), H100_SMS)
    with pytest.raises(ValueError):
        launcher(10, [0])
    assert driver == []


def test_unknown_parameter_types_are_refused():
    with pytest.raises(ValueError, match="c64"):
        Launcher(FakeKernel(), ("i64", "c64"), H100_SMS)


def test_each_thread_packs_into_its_own_parameter_block(driver):
    """The driver call releases the GIL: another thread's launch must not refill the slots it
    reads."""
    import threading

    driver.types = ("i64", "ptr")
    launcher = Launcher(FakeKernel(), driver.types, H100_SMS)
    launcher(10, [0x1000])
    worker = threading.Thread(target=launcher, args=(20, [0x2000]))
    worker.start()
    worker.join()
    assert [call[3] for call in driver] == [(10, 0x1000), (20, 0x2000)]
    assert len({id(block) for block in launcher._blocks.values()}) == 2
