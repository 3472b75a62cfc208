"""The generated source of every plan kind on both targets, pinned by snapshots.

Each case builds a plan from pure data (stand-in buffers, no backend, no numba) and renders it
for ``cuda`` and ``cpu``; the text, with the kernel's name (a key digest, which hashes the code
generators' own files) replaced by ``KERNEL``, must equal ``snapshots/plans/<case>_<target>.txt``.
A change to any code generator shows up here as a readable diff: regenerate the files
(``FA_WRITE_SNAPSHOTS=1 python -m pytest tests/pure/test_plan_snapshots.py``) only after reading
it, and only where the change is intended.
"""

import os
import pathlib

import numpy as np
import pytest

from fusedarrays.compiler import (
    CompactPlan,
    plan_across,
    plan_evaluation,
    plan_foreach,
    plan_kernel,
    render,
)
from fusedarrays.ir import graph, layout
from fusedarrays.ir.products import matmul_node
from fusedarrays.ir.reductions import reduction_node
from fusedarrays.ir.scans import scan_node

SNAPSHOTS = pathlib.Path(__file__).parent / "snapshots" / "plans"
F32, F64, I64, U64 = (np.dtype(t) for t in ("float32", "float64", "int64", "uint64"))


class Buf:
    """A stand-in buffer: what the planners read of one (its identity and alignment)."""

    def __init__(self, align: int = 256):
        self.uid, self.align = graph.new_uid(), align


def leaf(shape, dtype=F32, strides=None, offset=0):
    strides = strides or layout.contiguous_strides(shape)
    return graph.leaf(Buf(), np.dtype(dtype), tuple(shape), tuple(strides), offset)


def out(shape, dtype=F32):
    return (Buf(), np.dtype(dtype), tuple(shape), layout.contiguous_strides(tuple(shape)), 0)


def op(name, *inputs, dtype=F32):
    return graph.op(name, tuple(inputs), (np.dtype(dtype),) * (len(inputs) + 1))


def kernel(node):
    return [plan_kernel([(node, out(node.shape, node.dtype))])]


def program(node):
    """Every plan of the program evaluating ``node`` into a fresh result."""
    params = node.params if node.params is not None else {node: 0}
    return [step.plan for step in plan_evaluation([(node, out(node.shape, node.dtype))],
                                                  params, 256).steps]


# -- the cases: name → (plans, what the case must reach) ----------------------------------------
def _flat():
    a, b = leaf((1000,)), leaf((1000,))
    return kernel(op("add", op("multiply", a, graph.scalar(2.5, F32)), b))


def _near_sin():
    """float32 sin and cos of per-element values: the cpu target checks each chunk's arguments,
    then takes the near functions or the exact ones."""
    a, b = leaf((1000,)), leaf((1000,))
    return kernel(op("add", op("sin", op("multiply", a, graph.scalar(2.5, F32))), op("cos", b)))


def _flat_strided():
    a = leaf((500,), strides=(3,), offset=1)
    return kernel(op("sqrt", a))


def _broadcast_rows():
    a, b = leaf((64, 256)), leaf((256,))
    return kernel(op("multiply", a, b))


def _tiled():
    a = leaf((96, 160))
    t = graph.transform(leaf((160, 96)), lambda v: layout.transpose(v))
    return kernel(op("add", a, t))


def _nd():
    a = leaf((7, 9, 11), strides=(200, 20, 2), offset=3)
    return kernel(op("exp", a))


def _float16_cast():
    h = leaf((1000,), "float16")
    return kernel(op("multiply", h, graph.cast(h, F32)))


def _gather():
    """``x[idx]`` along axis 0 of a (50, 30) array: the source views it without that axis,
    broadcast over the index's."""
    source = leaf((40, 30), strides=(0, 1))
    index = leaf((40, 1), I64)
    return kernel(op("add", graph.gather(source, index, 50, 30), leaf((40, 30))))


def _gather_flagged():
    source = leaf((64,), strides=(0,))
    index = leaf((64,), I64)
    return kernel(op("negative", graph.gather(source, index, 100, 1, graph.scalar(7, I64))))


def _random():
    inputs = (graph.scalar(1234, U64), graph.scalar(5, U64))
    draw = graph.random("uniform_f32", F32, ((1024,), (1,), 0), inputs)
    return kernel(op("add", draw, leaf((1024,))))


def _random_view():
    inputs = (graph.scalar(1234, U64), graph.scalar(6, U64))
    draw = graph.random("normal", F64, ((16, 24), (24, 1), 0), inputs)
    return kernel(op("multiply", graph.transform(draw, lambda v: layout.transpose(v)),
                     leaf((24, 16), F64), dtype=F64))


def _sum(shape, axes, keepdims=False, name="sum", dtype=F32):
    x = leaf(shape, dtype)
    return reduction_node(name, op("multiply", x, x, dtype=dtype), axes, keepdims, dtype)


def _reduce_rows():
    return program(_sum((300, 257), (1,)))


def _reduce_cols():
    return program(_sum((64, 5000), (0,)))


def _reduce_split_rows():
    return program(_sum((1 << 20,), (0,)))


def _reduce_split_cols():
    return program(_sum((1 << 16, 3), (0,)))


def _reduce_blocked():
    """A row sum of exp(x - top), top broadcast along the rows: the cpu target computes a block
    of elements, then folds them, in a loop of its own where top's stride is zero."""
    x, top = leaf((300, 257)), leaf((300, 1))
    return program(reduction_node("sum", op("exp", op("subtract", x, top)), (1,), True, F32))


def _reduce_argmax():
    x = leaf((300, 257))
    return program(reduction_node("argmax", x, (1,), False, I64))


def _reduce_then_elementwise():
    x = leaf((300, 257))
    top = reduction_node("max", x, (0,), True, F32)
    return program(op("subtract", x, top))


def _softmax_rows():
    x = leaf((64, 1024))
    top = reduction_node("max", x, (1,), True, F32)
    e = op("exp", op("subtract", x, top))
    return program(op("true_divide", e, reduction_node("sum", e, (1,), True, F32)))


def _layernorm_rows():
    x, w = leaf((32, 3000)), leaf((3000,))
    inv = graph.scalar(1 / 3000, F32)
    mean = op("multiply", reduction_node("sum", x, (1,), True, F32), inv)
    d = op("subtract", x, mean)
    var = op("multiply", reduction_node("sum", op("multiply", d, d), (1,), True, F32), inv)
    eps = graph.scalar(1e-5, F32)
    return program(op("multiply", op("true_divide", d, op("sqrt", op("add", var, eps))), w))


def _scan_rows():
    return program(scan_node("cumulative_sum", leaf((8, 5000)), 1, False, F32))


def _scan_blocked():
    x, top = leaf((8, 5000)), leaf((8, 1))
    return program(scan_node("cumulative_sum", op("exp", op("subtract", x, top)), 1, False, F32))


def _scan_cols():
    return program(scan_node("cumulative_prod", leaf((300, 7), F64), 0, True, F64))


def _product():
    a, b = leaf((70, 40)), graph.transform(leaf((50, 40)), lambda v: layout.transpose(v))
    return program(matmul_node(a, b, F32, False, False))


def _product_batched():
    a, b = leaf((3, 20, 10), F64), leaf((3, 10, 30), F64)
    return program(op("exp", matmul_node(a, b, F64, False, False), dtype=F64))


def _compact():
    return [CompactPlan("count", "i64"), CompactPlan("index", "i32"),
            CompactPlan("rank", "i64"), CompactPlan("scatter", "f32")]


def _tensor(n=4096):
    """A per-tensor plan of an Adam-like update: every operand 1-D and contiguous."""
    p, g, m = leaf((n,)), leaf((n,)), leaf((n,))
    lr, beta = graph.scalar(0.01, F32), graph.scalar(0.9, F32)
    m2 = op("add", op("multiply", m, beta), op("multiply", g, graph.scalar(0.1, F32)))
    p2 = op("subtract", p, op("multiply", m2, lr))
    return plan_kernel([(p2, out((n,))), (m2, out((n,)))])


def _foreach():
    tensor = _tensor()
    return [plan_foreach(tensor, (0, 1, 2, 0, 2))]


def _foreach_complex():
    z = leaf((2048,), "complex64")
    tensor = plan_kernel([(op("multiply", z, z, dtype="complex64"), out((2048,), "complex64"))])
    return [plan_foreach(tensor, (0, 1))]


def _across():
    """A global norm: the across launch's partials, then the foreach folding them."""
    g, p = leaf((4096,)), leaf((4096,))
    tensor = plan_kernel([(op("multiply", g, g), (Buf(), F32, (4096,), (1,), 0))])
    first = plan_across(tensor, (1,), 2, ("sum",))
    norm = leaf((), F32)
    update = plan_kernel([(op("true_divide", p, op("sqrt", norm)), out((4096,)))])
    k = next(k for k, o in enumerate(update.operands) if o.layout == "B")
    then = plan_foreach(update, tuple(-1 if j == k else j for j in range(3)),
                        ((k, "sum", "f64"),), 2)
    return [first, then]


CASES = {
    "kernel_flat": (_flat, "flat"), "kernel_flat_strided": (_flat_strided, "flat"),
    "kernel_near_sin": (_near_sin, "flat"),
    "kernel_broadcast_rows": (_broadcast_rows, "rows"), "kernel_tiled": (_tiled, "tiled"),
    "kernel_nd": (_nd, "nd"), "kernel_float16": (_float16_cast, "flat"),
    "gather": (_gather, None), "gather_flagged": (_gather_flagged, None),
    "random": (_random, "flat"), "random_view": (_random_view, None),
    "reduce_rows": (_reduce_rows, "rows"), "reduce_cols": (_reduce_cols, "cols"),
    "reduce_split_rows": (_reduce_split_rows, "rows"),
    "reduce_split_cols": (_reduce_split_cols, "cols"),
    "reduce_argmax": (_reduce_argmax, "rows"), "reduce_blocked": (_reduce_blocked, "rows"),
    "reduce_then_elementwise": (_reduce_then_elementwise, None),
    "rows_softmax": (_softmax_rows, "rows"), "rows_layernorm": (_layernorm_rows, "rows"),
    "scan_rows": (_scan_rows, "rows"), "scan_cols": (_scan_cols, "cols"),
    "scan_blocked": (_scan_blocked, "rows"),
    "product": (_product, "tiled"), "product_batched": (_product_batched, None),
    "compact": (_compact, None), "foreach": (_foreach, None),
    "foreach_complex": (_foreach_complex, None), "across": (_across, None),
}


def rendered(case: str, target: str) -> str:
    """The case's plans' source for ``target``, each kernel's name as ``KERNEL``, one after
    another under a header naming the plan's kind and schedule."""
    make, _ = CASES[case]
    texts = []
    for plan in make():
        source = render(plan, target).replace(plan.name, "KERNEL")
        kind = type(plan).__name__
        texts.append(f"# {kind} {getattr(plan, 'schedule', '')}\n{source}")
    return "\n".join(texts)


@pytest.mark.parametrize("target", ["cuda", "cpu"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_source_is_pinned(case, target):
    text = rendered(case, target)
    path = SNAPSHOTS / f"{case}_{target}.txt"
    if os.environ.get("FA_WRITE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path.name} differs: read the diff, then regenerate"


@pytest.mark.parametrize("case", sorted(c for c, (_, s) in CASES.items() if s))
def test_each_case_reaches_its_schedule(case):
    """The cases cover what they are named for: the first plan's schedule is the one named."""
    make, schedule = CASES[case]
    plan = make()[0]
    if case.startswith("reduce_"):
        assert (plan.split > 1) == case.startswith("reduce_split"), plan.split
    if case.startswith("rows_"):
        assert type(plan).__name__ == "RowPlan"
    assert plan.schedule == schedule
