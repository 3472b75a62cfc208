"""``ops.TYPED``, the loops whose template codegen writes without a cast, derived from the backends.

A cast ``cv_<t>(x)`` around a value that already has type ``t`` changes nothing, and leaving it out
saves numba a call to type and lower; but where numba widens (``int8 + int8`` is int64) or rounds
(float16) the cast is the semantics. So the table must be exact: here every op's template is
typed, for every uniform loop, by numba's CUDA typing, numba's CPU typing and the simulator
(NumPy scalars), and the table must equal the loops all three type as the result's compute type.
The PTX of kernels with and without the casts is compared too. The every-op × dtype semantics
tests (tests/cpu, tests/sim) run the shortened kernels against NumPy.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections import defaultdict

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from fusedarrays.api.elementwise import loop_dtypes  # noqa: E402
from fusedarrays.compiler import codegen, devicelib, render  # noqa: E402
from fusedarrays.compiler.plan import plan_kernel  # noqa: E402
from fusedarrays.errors import UnsupportedOperationError  # noqa: E402
from fusedarrays.ir import dtypes, graph, layout, ops  # noqa: E402
from fusedarrays.ir.dtypes import BY_CODE, CODES, COMPUTE_CODE, ROUNDED  # noqa: E402

CHUNK = 20  # templates typed per generated function (a longer tuple display compiles otherwise)


def uniform_loops() -> list[tuple[str, tuple[str, ...]]]:
    """(op, loop codes) for inputs all of one dtype (``where``: a bool condition), each once."""
    found = {}
    for row in ops.OPS.values():
        for dt in dtypes.SUPPORTED:
            inputs = [np.dtype(bool), dt, dt] if row.rule == "where" else [dt] * row.nin
            try:
                loop = loop_dtypes(row, inputs)
            except UnsupportedOperationError:
                continue
            found[(row.name, tuple(CODES[d] for d in loop))] = None
    return list(found)


def expression(name: str, loop: tuple[str, ...], args: list[str]) -> str:
    row = ops.OPS[name]
    dts = tuple(BY_CODE[c] for c in loop)
    t = COMPUTE_CODE[loop[0] if row.rule == "ufunc" else loop[-1]]
    return row.template(ops.template_kind(row, dts)).format(*args, t=t, bits=dts[0].itemsize * 8)


def numba_typed(cases, namespace: dict, typer, numba_types: dict) -> set:
    """The cases whose expression ``typer(pyfunc, arg types)`` types as the result's type."""
    typed = set()
    # one input dtype per function: numba's CPU target cannot lower one module that calls a
    # ufunc (floor, ...) for both float32 and float64
    groups = defaultdict(list)
    for name, loop in cases:
        groups[loop[-2]].append((name, loop))
    chunks = [group[k:k + CHUNK] for group in groups.values() for k in range(0, len(group), CHUNK)]
    for chunk in chunks:
        params, argtypes, exprs = [], [], []
        for k, (name, loop) in enumerate(chunk):
            args = [f"x{k}_{j}" for j in range(len(loop) - 1)]
            params += args
            argtypes += [numba_types[COMPUTE_CODE[c]] for c in loop[:-1]]
            exprs.append(expression(name, loop, args))
        ns = dict(namespace)
        exec(f"def f({', '.join(params)}):\n    return ({', '.join(exprs)},)\n", ns)
        for (name, loop), ty in zip(chunk, typer(ns["f"], tuple(argtypes)), strict=True):
            if ty == numba_types[COMPUTE_CODE[loop[-1]]]:
                typed.add((name, loop))
    return typed


@functools.cache   # a pass is registered once per process
def typing_only(compiler, machinery, base):
    """``base``, a numba pipeline class, ending once type inference has run: its compile
    returns the function's return type. Typing is what this test asks of numba; the lowering
    and machine code after it were two fifths of the test's time."""

    @machinery.register_pass(mutates_CFG=False, analysis_only=True)
    class ReturnType(machinery.AnalysisPass):
        _name = f"fa_test_return_type_{base.__module__.replace('.', '_')}"

        def __init__(self):
            machinery.AnalysisPass.__init__(self)

        def run_pass(self, state):
            raise compiler._EarlyPipelineCompletion(state.return_type)

    class TypingOnly(base):
        def define_pipelines(self):
            (pm,) = base.define_pipelines(self)
            names = [getattr(p, "__name__", p) for p, _ in pm.passes]
            pm.passes[names.index("NopythonTypeInference") + 1:] = [(ReturnType, "the type")]
            pm.finalize()
            return [pm]

    return TypingOnly


def cuda_typed(cases) -> set:
    from numba.cuda import compiler, utils
    from numba.cuda.core import compiler as core
    from numba.cuda.core import compiler_machinery
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.flags import CUDAFlags

    from fusedarrays.cuda.intrinsics import SCALARS, device_namespace

    pipeline = typing_only(core, compiler_machinery, compiler.CUDACompiler)
    flags = CUDAFlags()     # as compiler.compile_cuda sets them for our kernels
    flags.error_model, flags.compute_capability = "numpy", (9, 0)

    def typer(fn, argtypes):
        with utils.numba_target_override():
            return compiler.compile_extra(cuda_target.typing_context, cuda_target.target_context,
                                          fn, argtypes, None, flags, {}, pipeline_class=pipeline)

    numba_types = {code: s.compute for code, s in SCALARS.items()}
    return numba_typed(cases, device_namespace(devicelib.helpers()), typer, numba_types)


def cpu_typed(cases) -> set:
    from numba.core import compiler, compiler_machinery, types
    from numba.core.registry import cpu_target
    from numba.np.numpy_support import from_dtype

    from fusedarrays.cpu.backend import CpuBackend

    pipeline = typing_only(compiler, compiler_machinery, compiler.Compiler)
    flags = compiler.Flags()    # as numba.njit(error_model="numpy") sets them
    flags.error_model = "numpy"

    def typer(fn, argtypes):
        cpu_target.typing_context.refresh()     # as a dispatcher does before it compiles
        cpu_target.target_context.refresh()
        return compiler.compile_extra(cpu_target.typing_context, cpu_target.target_context, fn,
                                      argtypes, None, flags, {}, pipeline_class=pipeline)

    numba_types = {code: (types.boolean if code == "b1" else from_dtype(BY_CODE[code]))
                   for code in set(COMPUTE_CODE.values())}
    return numba_typed(cases, CpuBackend().namespace(devicelib.helpers()), typer, numba_types)


def sim_typed(cases) -> set:
    from fusedarrays.cuda import sim

    namespace = sim._build_namespace(devicelib.helpers())
    typed = set()
    for name, loop in cases:
        ns = dict(namespace)
        args = []
        for j, code in enumerate(loop[:-1]):
            compute = BY_CODE[COMPUTE_CODE[code]].type
            ns[f"x{j}"] = compute(1)
            args.append(f"x{j}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = eval(expression(name, loop, args), ns)
        if type(value) is BY_CODE[COMPUTE_CODE[loop[-1]]].type:
            typed.add((name, loop))
    return typed


def as_table(loops: set) -> str:
    by_op = defaultdict(list)
    for name, loop in sorted(loops):
        by_op[name].append((loop[1:-1] if name == "where" else loop[:-1])[0])
    return "\n".join(f"{name}: {' '.join(codes)}" for name, codes in by_op.items())


# numba's CPU typing of the cpu namespace's inlined float32 math warns of the variables its
# inlining renames (the cpu backend silences it where it compiles kernels: cpu/backend.py)
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaIRAssumptionWarning")
def test_table_is_what_every_backend_types():
    cases = uniform_loops()
    derived = cuda_typed(cases) & cpu_typed(cases) & sim_typed(cases)
    # float16 results are float32 values in every backend, and their cast is the rounding to half
    derived = {(name, loop) for name, loop in derived if loop[-1] not in ROUNDED}
    listed = {(name, loop) for name, loop in cases if ops.keeps_type(name, loop)}
    assert listed == derived, (
        f"ops.TYPED drifted from the backends' typing; listed but not typed: "
        f"{sorted(listed - derived)}; typed but not listed: {sorted(derived - listed)}; "
        f"the derived table:\n{as_table(derived)}")


def test_mixed_and_half_loops_keep_their_casts():
    assert not ops.keeps_type("add", ("f16", "f16", "f16"))
    assert not ops.keeps_type("add", ("i8", "i8", "i8"))
    assert not ops.keeps_type("less", ("i64", "u64", "b1"))
    assert ops.keeps_type("less", ("f16", "f16", "b1"))
    assert ops.keeps_type("where", ("b1", "f32", "f32", "f32"))


class FakeBuffer:
    align = 256   # a pool block's alignment
    def __init__(self):
        self.uid = graph.new_uid()


def leaf(n: int, dtype: np.dtype) -> graph.Node:
    return graph.leaf(FakeBuffer(), dtype, (n,), layout.contiguous_strides((n,)), 0)


def kernel_plan(make, code: str):
    """``make(a, b, dtype)`` over two leaves of ``code`` (``"f16 f32"``: a float16, b float32)."""
    first, _, second = code.partition(" ")
    dtype = BY_CODE[second or first]
    node = make(leaf(64, BY_CODE[first]), leaf(64, dtype), dtype)
    buffer = (FakeBuffer(), node.dtype, (64,), layout.contiguous_strides((64,)), 0)
    return plan_kernel([(node, buffer)])


def _op(name, *inputs, loop):
    return graph.op(name, inputs, loop)


PLANS = {
    "sin(a)*b+a f32": (lambda a, b, d: _op("add", _op("multiply", _op("sin", a, loop=(d, d)), b,
                                                      loop=(d,) * 3), a, loop=(d,) * 3), "f32"),
    "maximum(a,b)/a f64": (lambda a, b, d: _op("true_divide", _op("maximum", a, b, loop=(d,) * 3),
                                               a, loop=(d,) * 3), "f64"),
    "(a//b)^a i64": (lambda a, b, d: _op("bitwise_xor", _op("floor_divide", a, b, loop=(d,) * 3),
                                         a, loop=(d,) * 3), "i64"),
    "where(a<b,a,b) u32": (lambda a, b, d: _op("where", _op("less", a, b,
                                                            loop=(d, d, np.dtype(bool))), a, b,
                                               loop=(np.dtype(bool), d, d, d)), "u32"),
    # float16 values are float32 in registers: converting one to float32 is no call either
    "a16*b32 f32": (lambda a, b, d: _op("multiply", a, b, loop=(d,) * 3), "f16 f32"),
}


@pytest.mark.parametrize("name", list(PLANS))
def test_ptx_is_unchanged_by_leaving_out_casts(name, monkeypatch):
    """The kernels compile to the same PTX, but for the mangled names, with and without the
    casts codegen now leaves out."""
    from fusedarrays.cuda.compile import compile_ptx

    make, dtype = PLANS[name]
    plan = kernel_plan(make, dtype)
    ptx, casts = [], []
    for keep in (False, True):
        if keep:  # every cast back: no op keeps its type, no float16 value is a float32
            monkeypatch.setattr(ops, "keeps_type", lambda name, loop: False)
            monkeypatch.setattr(codegen, "COMPUTE_CODE", {c: c for c in COMPUTE_CODE})
        source = render(plan, "cuda")
        casts.append(source.count("cv_"))
        text, _ = compile_ptx(source, plan.name, plan.param_types(), "sm_90",
                              devicelib.helpers())
        ptx.append(re.sub(r"_ZN\w+", "NAME", re.sub(r"//[^\n]*", "", text)))
    assert casts[0] < casts[1]
    assert ptx[0] == ptx[1]
