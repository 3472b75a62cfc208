"""The backend protocol is explicit: every member the runtime uses is declared on
``runtime.backend.Backend``, and the cpu, sim and cuda backend classes declare each one (an optional
capability as None where a backend lacks it), so the runtime reads members and never guesses with
``getattr``. Device values and their parsing are here too. Classes only: no backend is started,
no numba imported, no GPU needed (the cuda class needs ``cuda.core`` to import).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from fusedarrays.runtime import backend as backend_module
from fusedarrays.runtime.devices import Device, as_device

PACKAGE = Path(backend_module.__file__).resolve().parents[1]
CLASSES = {"cpu": ("fusedarrays.cpu.backend", "CpuBackend"),
           "sim": ("fusedarrays.cuda.sim", "SimBackend"),
           "cuda": ("fusedarrays.cuda.backend", "CudaBackend")}
# set in __init__ (per device), so not on the class
INSTANCE_MEMBERS = {"cpu": {"device_id", "device", "device_key", "arch"},
                    "sim": set(),
                    "cuda": {"device_id", "device", "device_key", "arch", "dlpack_device"}}


def backend_class(kind: str):
    if kind == "cuda":
        pytest.importorskip("cuda.core")
    module, name = CLASSES[kind]
    return getattr(importlib.import_module(module), name)


def test_the_protocol_declares_what_the_runtime_uses():
    members = backend_module.protocol_members()
    required = {"name", "target", "device", "device_id", "device_key", "arch", "disk_kind",
                "dlpack_device", "compile", "load", "launch", "alloc", "from_host", "to_host",
                "operand_arg", "address", "zero", "receive", "counters", "synchronize",
                "foreach_args", "memory_info", "free_cached_memory", "array_library",
                "toolchain"}
    optional = {"alloc_align", "operand_at", "direct_launch", "first_call", "prepare",
                "device_timer", "copy_bandwidth", "blas", "load_product", "import_array",
                "order_stream", "release_after", "graphs"}
    # the lists are the whole protocol: a member added to Backend is added here too
    assert set(members) == required | optional | {"fork_safe"}, set(members) ^ (
        required | optional | {"fork_safe"})
    assert not any(members[m] for m in required)
    assert all(members[m] for m in optional), [m for m in optional if not members[m]]
    assert backend_module.Backend.fork_safe is True


@pytest.mark.parametrize("kind", list(CLASSES))
def test_each_backend_class_declares_every_member(kind):
    cls = backend_class(kind)
    assert backend_module.Backend in cls.__mro__
    missing = [m for m in backend_module.protocol_members()
               if m not in INSTANCE_MEMBERS[kind] and not hasattr(cls, m)]
    assert not missing, f"{cls.__name__} lacks {missing}"
    if kind in INSTANCE_MEMBERS and INSTANCE_MEMBERS[kind]:
        source = inspect.getsource(cls.__init__)
        for member in INSTANCE_MEMBERS[kind]:
            assert f"self.{member} =" in source, (cls.__name__, member)
    # every method the protocol requires is the backend's own, not the protocol's stub
    for name, optional in backend_module.protocol_members().items():
        value = getattr(cls, name, None)
        if callable(value) and not optional:
            assert getattr(backend_module.Backend, name, None) is not value, (cls, name)


def test_the_optional_capabilities_by_backend():
    cpu, sim = backend_class("cpu"), backend_class("sim")
    assert cpu.first_call is not None and cpu.prepare is not None and callable(cpu.direct_launch)
    assert sim.first_call is None and sim.copy_bandwidth is None and sim.import_array is None
    assert cpu.blas is None and sim.blas is None
    assert cpu.dlpack_device == sim.dlpack_device == (1, 0)     # kDLCPU: host memory
    cuda = backend_class("cuda")
    assert cuda.fork_safe is False and cuda.operand_at == "ptr" and cuda.alloc_align == 256
    for name in ("direct_launch", "device_timer", "copy_bandwidth", "blas", "load_product",
                 "import_array", "order_stream", "release_after"):
        assert callable(getattr(cuda, name)), name
    assert cuda.first_call is None and cuda.prepare is None


def test_no_backend_member_is_read_through_getattr():
    """Outside the backends themselves, no module reads a protocol member with ``getattr``."""
    members = set(backend_module.protocol_members())
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "getattr" and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in members
                    and "backend" in ast.unparse(node.args[0])):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} "
                             f"{ast.unparse(node)}")
    assert not found, found


@pytest.mark.parametrize("text, kind, index, shown", [
    ("cuda:1", "cuda", 1, "cuda:1"), ("cuda", "cuda", 0, "cuda:0"), ("cpu", "cpu", None, "cpu"),
    ("cpu:0", "cpu", None, "cpu"), ("cpu:2", "cpu", 2, "cpu:2"), ("sim", "sim", None, "sim")])
def test_device_values_parse_and_print(text, kind, index, shown):
    device = Device(text)
    assert (device.kind, device.index, str(device)) == (kind, index, shown)
    assert device == Device(kind, index) == shown and hash(device) == hash(Device(shown))
    assert repr(device) == f"Device({shown!r})"


def test_device_equality_and_conversions():
    assert Device("cuda", 1) != Device("cuda", 0) and Device("cuda", 1) != "cpu"
    assert Device("cuda:0") == "cuda" and Device("cpu") != "nonsense:x"
    assert as_device(1, "cuda") == Device("cuda", 1) and as_device("cpu:1", "cuda").kind == "cpu"

    class TorchDevice:   # what torch.device offers
        type, index = "cuda", 3

    assert as_device(TorchDevice(), "cpu") == Device("cuda", 3)
    assert Device("cuda", 2).ordinal == 2 and Device("cpu").ordinal == 0


@pytest.mark.parametrize("bad, error, text", [
    ("tpu:0", ValueError, "the device kinds are cuda, cpu, sim"),
    ("cuda:x", ValueError, "must be an integer"),
    (("cuda", -1), ValueError, "0 or more"),
])
def test_bad_devices_say_what_to_write(bad, error, text):
    with pytest.raises(error, match=text):
        Device(*bad) if isinstance(bad, tuple) else Device(bad)
    with pytest.raises(TypeError, match="is not a device"):
        as_device(2.5, "cuda")
