"""The graph's hot path in C (``ir/fastgraph``, loaded by ``ir/native.py``) builds what the Python
path builds: random sequences of ops on shared leaves, built both ways side by side, give nodes
with the same sid, params (in order), count, buffers, shape and dtype at every step, and no
dict handed out as a node's params changes afterwards. Also: the extension is loaded at the
default settings, so a failed build can't pass unnoticed (``tests/cpu/test_native_cpu.py``
runs the operators, the pending registry and the packer, and the Python path end to end)."""

import random
import weakref

import numpy as np
import pytest

from fusedarrays import config
from fusedarrays.ir import graph, layout, native, scalarops
from fusedarrays.ir import params as ir_params
from fusedarrays.ir.sids import attrs_id

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
NATIVE = native.fastgraph
# only a run that chose the Python path skips these: a build that failed fails them
needs_native = pytest.mark.skipif(not config.get("NATIVE"), reason="FUSEDARRAYS_NATIVE=0")


class Buf:
    def __init__(self, align=256):
        self.uid, self.align, self.fresh = graph.new_uid(), align, None


def leaves(rng):
    shapes = [(4,), (3, 4), (1, 4), (), (3, 1)]
    made = []
    for k in range(6):
        shape = shapes[k % len(shapes)]
        buffer = Buf(align=rng.choice([4, 16, 256]))
        made.append(graph.leaf(buffer, F32, shape, layout.contiguous_strides(shape), 0))
    return made


def described(node):
    """What must be equal: sid, params in order (a leaf by identity, a scalar by dtype and
    value), count, buffers, shape, dtype."""
    params = [("leaf", id(p)) if p.kind == "leaf" else (p.kind, p.dtype.str, p.attrs[1])
              for p in node.param_list()]
    return (node.sid, tuple(params), node.count, node.buffers, node.shape, node.dtype.str)


class Builder:
    """One way of building nodes: the C path or the Python path."""

    def __init__(self, op_of, op_scalar, scalar):
        self.op_of, self.op_scalar, self.scalar = op_of, op_scalar, scalar


PYTHON = Builder(graph.op_of_python, scalarops.op_scalar_python, graph.new_scalar)


def step(builder, pool, choice, attrs2, attrs1):
    kind, i, j, value, first = choice
    a, b = pool[i], pool[j]
    aid2, aid1 = attrs_id(attrs2), attrs_id(attrs1)
    sid = graph.scalar_sid(F32)
    if kind == "binary":
        return builder.op_of((a, b), attrs2, aid2)
    if kind == "unary":
        return builder.op_of((a,), attrs1, aid1)
    if kind == "op_scalar":
        return builder.op_scalar(a, value, F32, sid, attrs2, aid2, first)
    s = builder.scalar(value, F32, sid)      # an op_of on a node and a scalar node
    return builder.op_of((s, a) if first else (a, s), attrs2, aid2)


@needs_native
@pytest.mark.parametrize("seed", range(12))
def test_c_and_python_build_the_same_nodes(seed):
    print(f"seed {seed}")
    rng = random.Random(seed)
    base = leaves(rng)
    c_pool, py_pool = list(base), list(base)
    c_builder = Builder(NATIVE.op_of, NATIVE.op_scalar, NATIVE.scalar)
    handed = []     # (node, its params as handed out then) for both paths
    attrs2, attrs1 = ("add", (F32, F32, F32)), ("sqrt", (F32, F32))
    for _ in range(160):
        kind = rng.choice(["binary", "binary", "unary", "op_scalar", "scalar_node"])
        # shares: the same node twice, a node and one of its inputs, fresh chains
        i = rng.randrange(len(c_pool))
        j = i if rng.random() < 0.1 else rng.randrange(len(c_pool))
        choice = (kind, i, j, rng.choice([0.5, 1.0, 2.5]), rng.random() < 0.5)
        c = step(c_builder, c_pool, choice, attrs2, attrs1)
        p = step(PYTHON, py_pool, choice, attrs2, attrs1)
        assert described(c) == described(p), choice
        c_pool.append(c)
        py_pool.append(p)
        if rng.random() < 0.3:      # hand some params out mid-way, as evaluation does
            for node in (c, p):
                handed.append((node, node.params, list(node.params or {})))
    for node, params, keys in handed:
        assert list(params or {}) == keys and node.params is params


@needs_native
def test_c_and_python_merge_several_roots_alike():
    rng = random.Random(7)
    base = leaves(rng)
    attrs = ("multiply", (F32, F32, F32))
    x = graph.op_of_python((base[0], base[1]), attrs, attrs_id(attrs))
    y = graph.op_of_python((base[1], base[2]), attrs, attrs_id(attrs))
    for roots in ([x, y], [y, x, base[3]], [x, x], [base[4], x], [x]):
        want = ir_params.roots_params_python(roots)
        got = NATIVE.roots_params(roots)
        assert list(got[0]) == list(want[0]) and got[1] == want[1]


@needs_native
def test_the_extension_is_loaded_at_the_default_settings():
    # CI builds it in place (pip install -e: tests import the checkout, not site-packages): a
    # build that failed, or an install that left it elsewhere, must not pass unseen
    assert native.NATIVE, ("fusedarrays.ir._fastgraph is not importable from "
                           f"{native.__file__}: build it with python -m pip install -e .")
    assert native.NodeBase is NATIVE.NodeBase


@needs_native
def test_the_c_fresh_leaf_is_the_python_one():
    """``graph.fresh_leaf_with_sid`` (C) against ``graph.fresh_leaf`` (Python): the same fields,
    the buffer's weak reference to it, found by ``graph.leaf`` through it, gone with it."""
    assert graph.fresh_leaf_with_sid is NATIVE.fresh_leaf
    view = ((3, 5), (5, 1), 0)
    made = {}
    for way, fresh in (("python", graph.fresh_leaf), ("c", graph.fresh_leaf_with_sid)):
        buffer = Buf()
        sid = graph.leaf_sid(buffer, F32, view)
        node = fresh(buffer, F32, view, sid)
        assert buffer.fresh() is node and graph.leaf(buffer, F32, (3, 5), (5, 1), 0) is node
        made[way] = (node.kind, node.dtype, node.shape, node.inputs, node.attrs[1], node.sid,
                     node.params, node.count, node.realized, node.buffers == {buffer},
                     node.attrs[0] is buffer, node.is_leaf, node.key == graph.sha256_key(node))
        ref = weakref.ref(node)
        del node
        assert ref() is None and buffer.fresh() is None
    assert made["c"] == made["python"]
    with pytest.raises(TypeError, match="view"):
        NATIVE.fresh_leaf(Buf(), F32, ((3,), (1,)), 1)


@needs_native
@pytest.mark.parametrize("scalars", [3, 20])   # a copied dict; a shared one (from SHARE_FROM)
def test_an_op_on_two_ops_whose_params_begin_alike_shares_the_longers(scalars):
    """``t * (c + t * d)``, its mirror and ops on two branches of one node: where one op's params
    begin with all of the other's, the C path gives the new node the longer one's params (its
    dict, shared) and the placement the Python path computes; sids, params and counts are the
    Python path's, and params handed out before never change."""
    rng = random.Random(scalars)
    print(f"seed {scalars}")
    x, y = leaves(rng)[:2]
    attrs = ("multiply", (F32, F32, F32))
    aid, sid = attrs_id(attrs), graph.scalar_sid(F32)
    ways = []
    for builder in (Builder(NATIVE.op_of, NATIVE.op_scalar, NATIVE.scalar), PYTHON):
        t = builder.op_of((x, y), attrs, aid)
        inner = t
        for k in range(scalars):     # inner: t's params, then new scalars
            inner = builder.op_scalar(inner, 0.25 + k, F32, sid, attrs, aid, k % 2 == 0)
        handed = (t.params, list(t.params))
        other = builder.op_scalar(t, -7.5, F32, sid, attrs, aid, False)   # t's other branch
        made = [builder.op_of(pair, attrs, aid)
                for pair in ((t, inner), (inner, t), (inner, other), (other, inner))]
        if builder is not PYTHON:    # before anything hands their params out (a copy, maybe)
            assert made[0]._params is inner._params and made[1]._params is inner._params
            assert made[2]._nparams == inner._nparams + 1   # -7.5 is new: merged, not shared
        after = builder.op_scalar(made[0], 9.5, F32, sid, attrs, aid, False)
        assert list(handed[0]) == handed[1] and t.params is handed[0]
        ways.append([described(n) for n in [*made, after]])
    assert ways[0] == ways[1]
