"""Signatures built as nodes are made (ir/graph.py): equal structure, equal sid; params in a
canonical order; sharing, scalars and placements that change the computation change the sid;
the planner numbers operands and scalars by the params."""

import numpy as np

from fusedarrays.compiler.plan import plan_kernel
from fusedarrays.ir import graph, layout, scalarops

F32 = np.dtype(np.float32)


class Buf:
    def __init__(self, align=256):
        self.uid, self.align, self.fresh = graph.new_uid(), align, None


def leaf(buffer=None, shape=(8,), strides=None, offset=0):
    strides = strides or layout.contiguous_strides(shape)
    return graph.leaf(buffer or Buf(), F32, shape, strides, offset)


def op(name, *inputs):
    return graph.op(name, inputs, (F32,) * (len(inputs) + 1))


def axpy(x, y, a):
    return op("add", op("multiply", graph.scalar(a, F32), x), y)


def test_equal_structure_has_equal_sid_and_params_in_the_same_places():
    x1, y1, x2, y2 = leaf(), leaf(), leaf(), leaf()
    e1, e2 = axpy(x1, y1, 2.0), axpy(x2, y2, 3.0)
    assert e1 is not e2 and e1.sid == e2.sid
    p1, p2 = e1.param_list(), e2.param_list()
    assert [p.kind for p in p1] == ["scalar", "leaf", "leaf"] == [p.kind for p in p2]
    assert p1[1] is x1 and p1[2] is y1 and p2[1] is x2 and p2[2] is y2
    assert p1[0].attrs[1] == 2.0 and p2[0].attrs[1] == 3.0


def test_what_changes_the_computation_changes_the_sid():
    x, y = leaf(), leaf()
    base = axpy(x, y, 2.0).sid
    assert axpy(x, x, 2.0).sid != base                       # y is x: one param fewer
    assert axpy(leaf(shape=(8,), strides=(2,)), y, 2.0).sid != base   # a strided view
    assert axpy(leaf(Buf(align=4)), y, 2.0).sid != base      # no vector access for x
    assert axpy(leaf(Buf(align=32)), y, 2.0).sid == base     # 32 and 256 allow the same
    assert axpy(leaf(shape=(9,)), leaf(shape=(9,)), 2.0).sid != base   # another shape
    t = op("sqrt", x)
    same_twice, two_alike = op("add", t, t), op("add", t, op("sqrt", x))
    assert same_twice.sid != two_alike.sid and len(two_alike.param_list()) == 1
    s1 = op("multiply", x, graph.scalar(2.0, F32))
    s2 = op("multiply", x, graph.scalar(2.0, F32))
    assert op("add", s1, s1).sid != op("add", s1, s2).sid   # one scalar parameter, or two
    assert len(op("add", s1, s1).param_list()) == 2 and len(op("add", s1, s2).param_list()) == 3


def test_placement_of_shared_params_is_part_of_the_sid():
    x, y, z = leaf(), leaf(), leaf()
    # (x*y) + (y*z) and (x*y) + (x*z): the second operand's params sit at other places
    a = op("add", op("multiply", x, y), op("multiply", y, z))
    b = op("add", op("multiply", x, y), op("multiply", x, z))
    assert a.sid != b.sid
    assert a.param_list() == [x, y, z] and b.param_list() == [x, y, z]


def test_the_plan_numbers_operands_and_scalars_by_the_params():
    x, y = leaf(), leaf()
    e = axpy(x, y, 2.0)
    output = (Buf(), F32, (8,), (1,), 0)
    plan = plan_kernel([(e, output)])
    assert plan.sources == (1, 2) and plan.scalar_sources == (0,)
    assert [o.buffer for o in plan.operands] == [x.attrs[0], y.attrs[0], output[0]]
    # a broadcast row read as [None, :] and whole shares one operand
    row = leaf(shape=(4,))
    both = op("add", graph.transform(row, lambda v: layout.getitem(v, (None, slice(None)))),
              graph.transform(row, lambda v: layout.broadcast_to(v, (3, 4))))
    plan = plan_kernel([(both, (Buf(), F32, (3, 4), (4, 1), 0))])
    assert len(plan.operands) == 2 and plan.sources == (0,)


def test_a_deep_chain_keeps_its_leaf_first_and_every_scalar_in_order():
    x = leaf()
    e = x
    for k in range(2000):
        e = op("add", op("multiply", e, x), graph.scalar(float(k), F32))
    params = e.param_list()
    assert params[0] is x and len(params) == 2001
    assert [p.attrs[1] for p in params[1:]] == [float(k) for k in range(2000)]


def _fields(n):
    return (n.kind, n.dtype, n.shape, n.attrs, n.sid, n.count, n.buffers,
            [(p.kind, p.sid, p.attrs[1] if p.kind == "scalar" else p) for p in n.param_list()],
            [(i.kind, i.sid) for i in n.inputs])


def test_the_operator_paths_scalar_op_makes_the_node_op_makes():
    x, y = leaf(), leaf(shape=(3, 8))
    attrs = ("multiply", (F32,) * 3)
    aid = graph.attrs_id(attrs)
    for node in (x, op("add", x, y), op("add", op("multiply", x, graph.scalar(2.0, F32)), x)):
        for first in (False, True):
            s = graph.scalar(1.5, F32)
            want = graph.op("multiply", (s, node) if first else (node, s), attrs[1])
            got = scalarops.op_scalar(node, 1.5, F32, graph.scalar_sid(F32), attrs, aid,
                                          scalar_first=first)
            assert _fields(got) == _fields(want)
            assert got.inputs[1 if first else 0] is node


def test_a_unary_op_is_what_combine_makes_of_it():
    # op_of writes the one-input case out; _combine (which new node kinds call) is the reference
    x = leaf()
    attrs = ("sqrt", (F32, F32))
    for node in (x, op("add", x, leaf()), op("multiply", x, graph.scalar(2.0, F32))):
        got = graph.op_of((node,), attrs, graph.attrs_id(attrs))
        want = graph._new("op", F32, node.shape, (node,), attrs)
        graph._combine(want, (node,), graph.attrs_id(attrs))
        assert _fields(got) == _fields(want)


def test_a_leaf_or_scalar_before_an_op_is_appended_after_its_params():
    # 1.0 - e and x - e: e's params first, then the scalar or leaf (graph.op_of's mirrored
    # order, so the op's dict is not copied behind one new param); sharing and order in the sid
    x, y = leaf(), leaf()
    e = op("multiply", x, graph.scalar(2.0, F32))
    s = graph.scalar(1.0, F32)
    mirrored = op("subtract", s, e)
    assert mirrored.param_list() == [x, e.param_list()[1], s]
    assert op("subtract", y, e).param_list() == [x, e.param_list()[1], y]
    shared = op("subtract", x, e)                 # x is e's param 0: e's params as they are
    assert shared.param_list() == e.param_list()
    sids = {op("subtract", y, e).sid, shared.sid, op("subtract", e, y).sid,
            op("subtract", e, x).sid}
    assert len(sids) == 4
    # the same structure built twice binds the same roles to the same positions
    x2, y2 = leaf(), leaf()
    e2 = op("multiply", x2, graph.scalar(3.0, F32))
    again = op("subtract", y2, e2)
    assert again.sid == op("subtract", y, e).sid
    assert again.param_list()[0] is x2 and again.param_list()[2] is y2
