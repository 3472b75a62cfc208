"""Plans, keys and generated source, without numba: keys ignore sizes and scalar values, the
source is pinned by a snapshot, and the op table is complete."""

import pathlib

import numpy as np
import pytest

from fusedarrays.compiler import render
from fusedarrays.compiler.plan import plan_kernel
from fusedarrays.ir import graph, layout, ops

SNAPSHOTS = pathlib.Path(__file__).parent / "snapshots"


class FakeBuffer:
    align = 256   # a pool block's alignment
    def __init__(self):
        self.uid = graph.new_uid()


def leaf(shape, dtype="float32", strides=None):
    strides = strides or layout.contiguous_strides(shape)
    return graph.leaf(FakeBuffer(), np.dtype(dtype), shape, strides, 0)


def out(shape, dtype="float32"):
    return (FakeBuffer(), np.dtype(dtype), shape, layout.contiguous_strides(shape), 0)


def axpy(n, scalar, dtype="float32"):
    a, b = leaf((n,), dtype), leaf((n,), dtype)
    dt = np.dtype(dtype)
    node = graph.op("add", (graph.op("multiply", (a, graph.scalar(scalar, dt)), (dt,) * 3), b),
                    (dt,) * 3)
    return plan_kernel([(node, out((n,), dtype))])


def test_key_ignores_sizes_and_scalar_values():
    assert axpy(10, 2.0).key == axpy(12345, -7.5).key


def test_key_changes_with_dtype_and_layout():
    assert axpy(10, 2.0).key != axpy(10, 2.0, "float64").key
    a = leaf((4, 6))
    t = graph.transform(a, lambda v: layout.transpose(v))
    contiguous = plan_kernel([(graph.op("negative", (a,), (a.dtype,) * 2), out((4, 6)))])
    strided = plan_kernel([(graph.op("negative", (t,), (a.dtype,) * 2), out((6, 4)))])
    assert contiguous.key != strided.key
    assert [o.layout for o in strided.operands] == ["S", "C"]


def test_shared_subexpression_is_computed_once():
    a = leaf((8,))
    sq = graph.op("sqrt", (a,), (a.dtype,) * 2)
    total = graph.op("add", (sq, sq), (a.dtype,) * 3)
    plan = plan_kernel([(total, out((8,)))])
    assert [i.kind for i in plan.body].count("op") == 2
    assert [i.kind for i in plan.body].count("load") == 1


def test_equal_subexpressions_built_apart_are_one_instruction():
    # cdf(d) and cdf(-d) written out: abs(-d) is abs(d), and what is built on it twice over the
    # same scalar node (equal Python numbers are one: ir/scalarops.py) is computed once
    a = leaf((8,))
    f32 = (a.dtype,) * 3
    half = graph.scalar(0.5, a.dtype)

    def z(x):
        return graph.op("multiply", (graph.op("absolute", (x,), f32[:2]), half), f32)

    neg = graph.op("negative", (a,), f32[:2])
    total = graph.op("add", (graph.op("exp", (z(a),), f32[:2]),
                             graph.op("exp", (z(neg),), f32[:2])), f32)
    ops_of = [i.arg[0] for i in plan_kernel([(total, out((8,)))]).body if i.kind == "op"]
    assert sorted(ops_of) == ["absolute", "add", "exp", "multiply", "negative"]


def test_abs_of_a_negation_stays_apart_for_unsigned_integers():
    # -u wraps around for unsigned integers: abs(-u) is -u, not abs(u) = u
    a = leaf((8,), "uint8")
    u8 = (a.dtype,) * 2
    total = graph.op("add", (graph.op("absolute", (graph.op("negative", (a,), u8),), u8),
                             graph.op("absolute", (a,), u8)), (a.dtype,) * 3)
    ops_of = [i.arg[0] for i in plan_kernel([(total, out((8,), "uint8"))]).body
              if i.kind == "op"]
    assert ops_of.count("absolute") == 2


def test_distinct_scalar_nodes_of_equal_value_stay_apart_in_the_plan():
    # the planner can't know two scalar params are equal (values are not in the key): only one
    # node is one param
    a = leaf((8,))
    f32 = (a.dtype,) * 3
    one, other = graph.scalar(2.0, a.dtype), graph.scalar(2.0, a.dtype)
    total = graph.op("add", (graph.op("multiply", (a, one), f32),
                             graph.op("multiply", (a, other), f32)), f32)
    plan = plan_kernel([(total, out((8,)))])
    assert len(plan.scalars) == 2
    assert [i.arg[0] for i in plan.body if i.kind == "op"].count("multiply") == 2


@pytest.mark.parametrize("target", ["cuda", "cpu"])
def test_source_snapshot(target):
    """The generated source of a*x+y (vector width 4 on cuda) is pinned; a change to codegen shows
    up here as a readable diff. Regenerate the file only after reading that diff."""
    source = render(axpy(10, 2.0), target)
    body = source.split("\n", 1)[1]
    assert body == (SNAPSHOTS / f"axpy_{target}.py.txt").read_text()


def test_broadcast_operand_is_strided_and_contiguous_ones_stay_contiguous():
    x, b = leaf((4, 6)), leaf((6,))
    node = graph.op("add", (x, b), (x.dtype,) * 3)
    plan = plan_kernel([(node, out((4, 6)))])
    assert [o.layout for o in plan.operands] == ["C", "S", "C"]
    assert plan.operands[1].strides == (0, 1)


@pytest.mark.parametrize("row", list(ops.OPS.values()), ids=lambda r: r.name)
def test_every_row_is_complete(row):
    assert row.nin in (1, 2, 3) and row.doc and row.templates
    for template in row.templates.values():
        template.format(*(f"x{k}" for k in range(row.nin)), t="f32", bits=32)


def test_tiles_of_transposed_operands_fit_in_shared_memory():
    """Three float32 tiles (3 × 64 × 65 × 4 bytes) pass the 48 KiB a block may take statically:
    the third transposed operand is read strided; float64 tiles fit one at a time."""
    from fusedarrays.ir import layout

    dims, t, c = (300, 400), (1, 300), (400, 1)
    schedule, classes = layout.schedule(dims, [t, t, t, c], [4, 4, 4, 4])
    assert schedule == "tiled" and classes == ["T", "T", "S", "C"]
    schedule, classes = layout.schedule(dims, [t, t, c], [8, 8, 8])
    assert schedule == "tiled" and classes == ["T", "S", "C"]
    rows_of = layout.schedule(dims, [t, c], [4, 4])
    assert rows_of == ("tiled", ["T", "C"])
