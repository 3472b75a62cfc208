"""``fa.memory_info``, ``fa.free_cached_memory`` and ``fa.OutOfMemoryError`` on the host backends.

The cuda side of these is tested with a fake pool in ``tests/ptx/test_memory.py`` and on the
device in ``tests/gpu/test_memory_gpu.py``.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from childenv import pythonpath

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.runtime.backend import MemoryInfo

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_out_of_memory_error_is_a_memory_error():
    assert issubclass(fa.OutOfMemoryError, MemoryError)
    assert issubclass(fa.OutOfMemoryError, fa.FusedArraysError)
    assert {"OutOfMemoryError", "memory_info", "free_cached_memory"} <= set(fa.__all__)


@pytest.mark.parametrize("backend", ["cpu", "sim"])
def test_a_host_backend_is_not_started_to_answer(backend):
    """Asked before anything ran, a host backend is not started for the question: nothing imports
    numba or the CUDA bindings."""
    code = ("import sys, fusedarrays as fa\n"
            "print(tuple(fa.memory_info()), fa.free_cached_memory())\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')\n"
            "       or m.startswith(('cuda.core', 'cuda.bindings'))]\n"
            "assert not bad, bad\n")
    env = {**os.environ, "FUSEDARRAYS_BACKEND": backend, "PYTHONPATH": pythonpath(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"('{backend}',", "None,", "0,", "None,", "None)", "0"]


def test_after_evaluating_small_arrays_on_cpu_nothing_is_cached_and_nothing_to_give_back():
    x = np.random.default_rng(7).standard_normal(1000).astype(np.float32)
    with config.override(BACKEND="cpu"):
        fa.free_cached_memory()   # large blocks earlier tests in this process freed (cpu/memory.py)
        got = (fa.asarray(x) * 2 + 1).get()
        np.testing.assert_allclose(got, x * 2 + 1, rtol=1e-6)
        assert fa.memory_info() == MemoryInfo("cpu", None, 0, None, None)
        assert fa.free_cached_memory() == 0
