"""What makes a new kernel cheaper to compile in a warm process, checked without a GPU: intrinsic
signatures typed once per process, call typing memoised across compiles (and the same PTX)."""

from __future__ import annotations

import importlib
import json
import os
import sys

import forkwork
import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from kernel_jobs import code_sections, jobs, normal, plans  # noqa: E402

import fusedarrays as fa  # noqa: E402
from fusedarrays import config  # noqa: E402
from fusedarrays.compiler import devicelib  # noqa: E402
from fusedarrays.cuda import compile as cc  # noqa: E402
from fusedarrays.cuda import intrinsics  # noqa: E402

precompile = importlib.import_module("fusedarrays.runtime.precompile")


def test_an_intrinsic_signature_typed_before_skips_numbas_registry_refresh(monkeypatch):
    """A second kernel calling the same intrinsics with the same argument types is typed from
    the intrinsics' cache: numba-cuda's registry look-up (which the first typing needs) is not
    reached again, and the PTX is the same as the first kernel's."""
    first, second = jobs(plans(lambda x, y: x * y + 2.5, lambda x, y: x * y + 2.5))
    ptx_first, _ = cc.compile_ptx(*first, devicelib.helpers())
    from numba.cuda.typing import templates

    original = templates._TemplateTargetHelperMixin._get_target_registry

    def refuse(self, reason):  # for our intrinsics; numba-cuda's own (cuda.grid) still ask
        if isinstance(getattr(self, "key", None), intrinsics._CachedIntrinsic):
            raise AssertionError(f"{type(self).__name__} asked numba-cuda's registries")
        return original(self, reason)

    monkeypatch.setattr(templates._TemplateTargetHelperMixin, "_get_target_registry", refuse)
    ptx_second, _ = cc.compile_ptx(*second, devicelib.helpers())
    assert normal(ptx_second) == normal(ptx_first)


def test_memoized_call_typing_changes_no_kernel(monkeypatch):
    """Kernels typed with the per-process memo of call typings compile to the PTX that numba's
    own typing gives (but for mangled names): flat, rows and tiled walks, helpers inlined."""
    import contextlib

    def make_rows(x, y):
        return fa.floor_divide(x.reshape(256, 256) + y[:256][None, :], 3.0)

    def make_tiled(x, y):
        return fa.maximum(x.reshape(256, 256).T, y.reshape(256, 256)) ** 2

    plan_list = plans(lambda x, y: fa.remainder(x, y) * fa.sin(y), make_rows, make_tiled,
                      lambda x, y: fa.where(x < y, fa.arctan2(x, y), fa.hypot(x, y)), n=1 << 16)
    assert [p.schedule for p in plan_list] == ["flat", "rows", "tiled", "flat"]
    todo = jobs(plan_list)
    memoized = [normal(cc.compile_ptx(*job, devicelib.helpers())[0]) for job in todo]
    assert cc._TYPED_CALLS  # the memo holds what those compiles typed
    monkeypatch.setattr(cc, "_memoized_call_typing", contextlib.nullcontext)
    plain = [normal(cc.compile_ptx(*job, devicelib.helpers())[0]) for job in todo]
    assert memoized == plain


def test_memoized_call_typing_is_gone_after_a_compile():
    """Outside our compiles numba types as it always does (a user's own kernels, CPU ones)."""
    from numba.cuda import types
    from numba.cuda.descriptor import cuda_target

    owner = next(c for c in types.Function.__mro__ if "get_call_type" in vars(c))
    before = vars(owner)["get_call_type"]
    cc.compile_ptx(*jobs(plans(lambda x, y: x - y))[0], devicelib.helpers())
    assert "resolve_function_type" not in vars(cuda_target.typing_context)
    assert "resolve_value_type" not in vars(cuda_target.typing_context)
    assert cc._TYPED_VALUES   # the kernel's globals were typed through the memo
    assert vars(owner)["get_call_type"] is before
    assert not before.__module__.startswith("fusedarrays")


def test_a_pipelined_batch_gives_each_kernel_what_a_compile_alone_gives(tmp_path):
    """A batch lowers kernels in this thread while other threads run NVVM and nvJitLink on
    those lowered before: every kernel's PTX and cubin are the ones compiled alone."""
    import threading

    todo = jobs(plans(lambda x, y: fa.sin(x) * y + 1.5, lambda x, y: fa.exp(x) - y,
                      lambda x, y: fa.sqrt(x) / y, lambda x, y: fa.tanh(x * y),
                      lambda x, y: fa.arctan2(x, y), lambda x, y: fa.cbrt(x) + fa.floor(y)))
    alone = [cc.compile_kernel(*job) for job in todo]

    finished_in, switch = set(), []
    finish_kernel = cc.finish_kernel
    before = sys.getswitchinterval()

    def recording(lowered):
        finished_in.add(threading.current_thread().name)
        switch.append(sys.getswitchinterval())
        return finish_kernel(lowered)

    original, cc.finish_kernel = cc.finish_kernel, recording
    try:
        batch, done_by = precompile.compile_batch(todo, workers=0, progress=False)
    finally:
        cc.finish_kernel = original
    assert done_by == {"workers": 0, "worker_kernels": 0} and len(batch) == len(todo)
    # the GIL changes hands often while a batch compiles (finishers wait on it), then as before
    assert max(switch) <= precompile._SWITCH_INTERVAL and sys.getswitchinterval() == before
    assert finished_in and all(n.startswith("fusedarrays-nvvm") for n in finished_in), finished_in
    for (ptx, cubin, entry, times), (ptx1, cubin1, entry1, _) in zip(batch, alone):
        assert normal(ptx) == normal(ptx1) and normal(entry) == normal(entry1)
        code = code_sections(cubin)
        assert code and all(code) and code == code_sections(cubin1)
        assert {"numba typing+lowering", "nvvm", "link"} <= set(times)


def test_a_kernel_that_fails_fails_the_pipelined_batch_with_its_source():
    good = jobs(plans(lambda x, y: x * y, lambda x, y: x - y))
    bad = ("def fa_bad(n, p0):\n    st_f32(p0, 0, undefined_name)\n", "fa_bad", ("i64", "ptr"),
           "sm_90")
    with pytest.raises(fa.CompileError) as failed:
        precompile.compile_batch([good[0], bad, good[1]], workers=0, progress=False)
    assert "fa_bad" in str(failed.value) and "undefined_name" in failed.value.source


def test_the_collector_is_paused_while_numba_lowers_and_resumed_after(monkeypatch):
    """numba's lowering allocates a large, mostly live heap: no cyclic collection runs during
    it; the collector is back on afterwards, and one the user turned off stays off."""
    import gc

    collections, during = [], []
    numba_lower = cc._numba_lower

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    def watched(*args):
        before = len(collections)
        numba_lower(*args)
        during.append(len(collections) - before)   # an int: no allocation the collector counts

    monkeypatch.setattr(cc, "_numba_lower", watched)
    todo = jobs(plans(lambda x, y: fa.cosh(x) * y, lambda x, y: fa.log1p(x) + y))
    gc.callbacks.append(count)
    try:
        cc.lower_kernel(*todo[0], devicelib.helpers())
        assert gc.isenabled()
        gc.disable()
        try:
            cc.lower_kernel(*todo[1], devicelib.helpers())
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(count)
    assert during == [0, 0]
    gc.collect()
    assert collections   # the callback sees collections: the zeros above can fail


def test_a_compile_error_reads_as_plain_text_and_numbas_colours_come_back():
    """numba marks its messages up for a terminal; made during our compile, they are plain (and
    cheaper to make), and numba's own scheme is back afterwards."""
    import importlib

    errors = importlib.import_module("numba.core.errors")
    marked_up = "\x1b[" in str(errors.NumbaError("made outside our compiles"))
    bad = "def fa_bad(n, p0):\n    st_f32(p0, 0, undefined_name)\n"
    with pytest.raises(fa.CompileError) as failed:
        cc.compile_ptx(bad, "fa_bad", ("i64", "ptr"), "sm_90", {})
    assert "undefined_name" in str(failed.value)
    assert "\x1b[" not in str(failed.value), repr(str(failed.value)[:200])
    assert ("\x1b[" in str(errors.NumbaError("made outside our compiles"))) == marked_up
    assert vars(type(errors.termcolor())).get("_markup") is not cc._unmarked


# One dtype of each kind and width class the op templates tell apart (bool, a narrow signed and a
# wide unsigned integer, the three floats, a complex): the passes left out are about the IR's
# shape, not its types, and compiling all fourteen dtypes twice took 150 s of the 2-core suite.
OP_DTYPES = ("bool", "int8", "uint64", "float16", "float32", "float64", "complex64")


def every_op_plans():
    """Flat kernels that together use every op of the table for each of :data:`OP_DTYPES` it
    takes (sixty ops to a kernel, each its own output: a kernel's compile has a fixed cost, so
    fewer, larger kernels halve the test's time), plus a row walk, a tile and float16 lanes."""
    from fusedarrays.errors import FusedArraysError
    from fusedarrays.ir import dtypes, ops

    rng = np.random.default_rng(2)
    found = []
    with config.override(BACKEND="cpu"):
        for dt in map(np.dtype, OP_DTYPES):
            assert dt in dtypes.SUPPORTED
            a, b = (fa.asarray((rng.random(1 << 12) * 8).astype(dt)) for _ in range(2))
            cond = a < b
            outs = []
            for row in ops.OPS.values():
                args = {"where": (cond, a, b), "clip": (a, b, b)}.get(row.rule, (a, b)[:row.nin])
                try:
                    outs.append(getattr(fa.special if row.module else fa, row.name)(*args))
                except (FusedArraysError, TypeError):   # an op that does not take this dtype
                    continue
            for k in range(0, len(outs), 60):
                found += precompile.kernel_plans(outs[k:k + 60], real_buffers=False)
        x = fa.asarray(rng.random((256, 256), np.float32))
        h = fa.asarray(rng.random(1 << 12).astype(np.float16))
        found += precompile.kernel_plans([fa.exp(x + x[0][None, :]) * x], real_buffers=False)
        found += precompile.kernel_plans([fa.tanh(x.T) - x / 3.0], real_buffers=False)
        found += precompile.kernel_plans([h * h + fa.sqrt(h)], real_buffers=False)
    return found


def _compiled_in_a_fork(compile_all, path):
    """Start ``compile_all()`` (a list of strings) in a forked child that writes it to ``path``
    as JSON; returns a function that waits for the child and reads the list."""
    def child() -> int:
        path.write_text(json.dumps(compile_all()))
        return 0

    pid = forkwork.fork_child(child)

    def result(timeout=600):
        code = forkwork.wait_or_kill(pid, timeout)
        assert code == 0, f"the forked compile exited with {code} (None: killed after {timeout} s)"
        return json.loads(path.read_text())
    return result


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_the_trimmed_pipeline_changes_no_kernel(tmp_path):
    """numba's passes left out of our compiles (``_IDLE_PASSES``) change the PTX of no kernel of
    any op, dtype or schedule; compiled with them the kernels are the same but for names. The
    two compiles of each kernel are independent: those with every pass run in a forked child
    (on a second core) while this process compiles with the trimmed pipeline."""
    import contextlib

    plan_list = every_op_plans()
    assert {"flat", "rows", "tiled"} <= {p.schedule for p in plan_list} and len(plan_list) > 10
    from fusedarrays.ir import ops
    used = {i.arg[0] for p in plan_list for i in p.body if i.kind == "op"}
    assert used == set(ops.OPS), set(ops.OPS) - used
    todo = jobs(plan_list)

    def compile_all():
        return [normal(cc.compile_ptx(*job, devicelib.helpers())[0]) for job in todo]

    def compile_all_with_every_pass():
        cc._trimmed_pipeline = contextlib.nullcontext    # in the child only
        return compile_all()

    full = _compiled_in_a_fork(compile_all_with_every_pass, tmp_path / "full.json")
    try:
        trimmed = compile_all()
    except BaseException:
        full(timeout=0)    # the child killed
        raise
    differ = [p.name for p, t, f in zip(plan_list, trimmed, full()) if t != f]
    assert not differ, differ


def test_the_trimmed_pipeline_is_gone_after_a_compile():
    from numba.cuda import compiler

    before = vars(compiler.CUDACompiler)["define_pipelines"]
    cc.compile_ptx(*jobs(plans(lambda x, y: x * y))[0], devicelib.helpers())
    assert vars(compiler.CUDACompiler)["define_pipelines"] is before
    assert not before.__module__.startswith("fusedarrays")
