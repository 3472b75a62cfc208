"""Backend choice and failure reporting: no silent fallbacks."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.cuda.backend import CudaBackend
from fusedarrays.ir import ops


@pytest.mark.skipif(CudaBackend.available(), reason="a CUDA device is visible here")
def test_cuda_without_a_gpu_says_how_to_go_on():
    with config.override(BACKEND="cuda"):
        with pytest.raises(fa.DeviceUnavailableError, match="FUSEDARRAYS_BACKEND=cpu"):
            fa.asarray(np.ones(3))


def test_bad_setting_names_the_variable(monkeypatch):
    monkeypatch.setenv("FUSEDARRAYS_MAX_NODES", "lots")   # the subject: a bad value
    config._parsed.pop("MAX_NODES", None)
    try:
        with pytest.raises(ValueError, match="FUSEDARRAYS_MAX_NODES='lots'"):
            config.get("MAX_NODES")
    finally:
        config._parsed.pop("MAX_NODES", None)


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_compile_error_carries_numbered_source(backend, monkeypatch):
    row = ops.OPS["hypot"]
    broken = ops.Op(row.name, row.nin, row.ref, {"f": "math.no_such_function({0}, {1})"},
                    row.doc)
    monkeypatch.setitem(ops.OPS, "hypot", broken)
    monkeypatch.setitem(ops.BY_UFUNC, np.hypot, broken)
    x = np.random.default_rng(101).random(5).astype(np.float32) + 0.5
    with config.override(BACKEND=backend):
        a = fa.asarray(x)
        with pytest.raises(fa.CompileError) as info:
            (fa.hypot(a, a) * 3.25).get()
    assert "no_such_function" in str(info.value)
    assert "   1  def fa_" in str(info.value) and info.value.source.startswith("def fa_")
