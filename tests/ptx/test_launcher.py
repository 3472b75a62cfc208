"""The launcher's host-side decisions, without a GPU: grid size, argument packing, refusals.

The launch itself (``cuda.core.launch``) is replaced by a recorder; tests/gpu launches for real.
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
