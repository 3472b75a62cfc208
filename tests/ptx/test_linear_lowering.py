"""Two compile-latency changes that must leave every kernel as it was (no GPU needed):
numba-cuda's singly-assigned-variable scan made linear (``cuda/lowering.py``) and NVVM without
libdevice for a kernel that calls none of it (``cuda/nvvmcall.py``). Each kernel is compiled
with and without them in this process and the PTX compared (but for per-process names)."""

from __future__ import annotations

import contextlib
import importlib

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from kernel_jobs import normal  # noqa: E402

import fusedarrays as fa  # noqa: E402
from fusedarrays import compiler, config  # noqa: E402
from fusedarrays.compiler import devicelib  # noqa: E402
from fusedarrays.cuda import compile as cc  # noqa: E402
from fusedarrays.cuda import lowering  # noqa: E402

precompile = importlib.import_module("fusedarrays.runtime.precompile")
SEED = 36


def jobs(plan_list, arch="sm_90"):
    """``(source, name, param types, arch)`` per plan, each plan kind by its own renderer."""
    return [(compiler.render(p, "cuda"), p.name, p.param_types(), arch) for p in plan_list]


def _plans():
    """Flat, rows, tiled and reduction kernels; float32, float16, int32; with and without
    libdevice calls."""
    rng = np.random.default_rng(SEED)
    with config.override(BACKEND="cpu"):
        x = fa.asarray(rng.random((300, 257), np.float32))
        y = fa.asarray(rng.random((300, 257), np.float32))
        h = fa.asarray(rng.random(4096).astype(np.float16))
        i = fa.asarray(rng.integers(1, 50, 4096, dtype=np.int32))
        exprs = [
            x * y + 2.5,                                   # flat, no libdevice
            fa.where(x < y, x - y, y * 3.0),               # a select, no libdevice
            fa.sin(x) * y + 1.5,                           # libdevice
            (x.T + y.T[0][None, :]) * 2.0,                 # tiled
            fa.exp(x - x.max(axis=1, keepdims=True)),      # rows: a reduction in the kernel
            (x * y).sum(axis=0),                           # outer-axis reduction
            h * h + fa.sqrt(h),                            # float16 lanes
            fa.floor_divide(i, 7) + i % 3,                 # integers
        ]
        return [plan for e in exprs for plan in precompile.kernel_plans([e], real_buffers=False)]


def test_the_fast_paths_change_no_kernel(monkeypatch):
    todo = jobs(_plans())
    helpers = devicelib.helpers()
    fast = [normal(cc.compile_ptx(*job, helpers)[0]) for job in todo]
    monkeypatch.setattr(cc, "linear_lowering", contextlib.nullcontext)
    monkeypatch.setattr(cc, "kernel_ptx", lambda library, arch: library.get_asm_strs(cc=arch)[0])
    numba_own = [normal(cc.compile_ptx(*job, helpers)[0]) for job in todo]
    differ = [job[1] for job, a, b in zip(todo, fast, numba_own) if a != b]
    assert not differ, differ


def test_libdevice_is_left_out_only_where_the_ir_calls_none_of_it(monkeypatch):
    from numba.cuda.cudadrv import nvvm

    added = []
    lazy_add = nvvm.CompilationUnit.lazy_add_module
    monkeypatch.setattr(nvvm.CompilationUnit, "lazy_add_module",
                        lambda self, buffer: added.append(len(buffer)) or lazy_add(self, buffer))
    plain, with_sin = jobs(_plans()[:3:2])
    helpers = devicelib.helpers()
    cc.compile_ptx(*plain, helpers)
    assert added == []
    cc.compile_ptx(*with_sin, helpers)
    assert len(added) == 1 and added[0] > 100_000     # libdevice, for sin


def test_numbas_own_scan_is_back_after_a_compile():
    from numba.cuda import lowering as numba_lowering

    before = vars(numba_lowering.Lower)["_find_singly_assigned_variable"]
    cc.compile_ptx(*jobs(_plans()[:1])[0], devicelib.helpers())
    assert vars(numba_lowering.Lower)["_find_singly_assigned_variable"] is before
    assert before is not lowering._singly_assigned
