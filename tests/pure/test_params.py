"""Params shared between nodes (ir/params.py): a node built on another by one new param appends
to the other's dict in place where it may, and every node's ``params`` is still exactly its own
leaves and scalars in canonical order, whatever was built on it, before or after."""

import threading

import numpy as np

from fusedarrays.ir import graph, layout, scalarops
from fusedarrays.ir.params import SHARE_FROM

F32 = np.dtype(np.float32)
ATTRS = ("multiply", (F32,) * 3)
AID = graph.attrs_id(ATTRS)


class Buf:
    def __init__(self):
        self.uid, self.align, self.fresh = graph.new_uid(), 256, None


def leaf():
    return graph.leaf(Buf(), F32, (8,), layout.contiguous_strides((8,)), 0)


def op(name, *inputs):
    return graph.op(name, inputs, (F32,) * (len(inputs) + 1))


def times(node, value):
    return scalarops.op_scalar(node, value, F32, graph.scalar_sid(F32), ATTRS, AID)


def wide():
    """A node over SHARE_FROM leaves, so that nodes built on it share its dict; and them."""
    xs = [leaf() for _ in range(SHARE_FROM)]
    node = xs[0]
    for x in xs[1:]:
        node = op("add", node, x)
    return node, xs


def values(node):
    """The params as (kind, leaf or scalar value), checked against their positions."""
    params = node.params
    assert list(params.values()) == list(range(len(params)))
    return [p if p.kind == "leaf" else p.attrs[1] for p in params]


def test_two_branches_on_one_node_each_get_their_own_params():
    base, xs = wide()
    one, two = times(base, 1.5), times(base, 2.5)       # the first appends, the second copies
    assert one._params is base._params and two._params is not base._params
    z = leaf()
    three = op("add", base, z)                           # and a leaf on the same node
    assert values(base) == xs
    assert values(one) == [*xs, 1.5] and values(two) == [*xs, 2.5]
    assert values(three) == [*xs, z]
    assert values(op("add", one, two)) == [*xs, 1.5, 2.5]


def test_a_chain_appends_to_one_dict_and_each_link_keeps_its_own_params():
    # a = a * s + t: a scalar per op, each appended in place once past SHARE_FROM params
    x = leaf()
    links = [op("sqrt", x)]
    for k in range(50):
        links.append(times(op("negative", links[-1]) if k % 2 else links[-1], float(k)))
    assert len({id(n._params) for n in links[SHARE_FROM:]}) == 1
    for n, link in enumerate(links):
        assert values(link) == [x, *[float(k) for k in range(n)]]


def test_params_handed_out_never_change():
    base, xs = wide()
    handed = base.params
    kept = dict(handed)
    child = times(base, 3.0)             # base's dict was handed out: this one is a copy
    grandchild = times(child, 4.0)       # child's own: appended in place
    assert grandchild._params is child._params is not handed
    assert handed == kept and handed is base.params
    assert values(grandchild) == [*xs, 3.0, 4.0] and values(child) == [*xs, 3.0]
    shared = op("sqrt", base)            # shares base's (handed out) dict
    assert values(times(shared, 5.0)) == [*xs, 5.0] and handed == kept


def test_an_op_on_a_node_and_one_of_its_params_shares_them():
    wide_node, xs = wide()
    base = times(wide_node, 2.0)
    again = op("add", base, xs[1])       # xs[1] is base's already: same params, same places
    one, two = times(again, 1.0), times(base, 9.0)     # both at the same length: one appends
    assert one._params is base._params is not two._params
    assert values(one) == [*xs, 2.0, 1.0] and values(two) == [*xs, 2.0, 9.0]
    assert values(again) == values(base) == [*xs, 2.0]


def test_threads_building_on_one_node_each_get_their_own_params():
    base, xs = wide()
    results, start = {}, threading.Barrier(4)

    def build(t):
        start.wait()
        nodes = []
        for k in range(300):
            node = times(base, float(t))
            nodes.append((times(node, float(k)), float(k)))
        results[t] = nodes

    threads = [threading.Thread(target=build, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert values(base) == xs
    for t, nodes in results.items():
        for node, k in nodes:
            # an equal number is one param (graph.interned_scalar), but a float zero never is
            assert values(node) == ([*xs, float(t)] if k == t != 0 else [*xs, float(t), k])


def test_an_op_on_two_nodes_never_appends_to_a_dict_handed_out():
    base, xs = wide()
    handed = base.params
    same = op("add", base, base)         # its params are base's: the dict handed out
    assert same._params is handed
    assert values(times(same, 1.0)) == [*xs, 1.0] and values(base) == xs == list(handed)


def test_a_node_kind_with_its_fields_set_is_an_operand_as_scalars_are():
    # new kinds set every field a node has at creation, as scalars do (graph.new_scalar): the
    # C path (ir/fastgraph) reads them from the node, never from its class
    draw = graph.Node()
    draw.kind, draw.dtype, draw.shape, draw.inputs = "draw", F32, (), ()
    draw.attrs, draw.sid, draw.count, draw.buffers = (0, "draw"), -1, 1, frozenset()
    draw.params = draw.realized = None
    base, xs = wide()
    assert values(op("add", base, draw)) == [*xs, "draw"]
    assert values(op("add", xs[0], draw)) == [xs[0], "draw"]


def test_a_leaf_is_never_appended_in_place():
    # a shared dict would keep the leaf's buffer alive as long as base lives
    base, xs = wide()
    z = leaf()
    with_leaf = op("add", base, z)
    assert with_leaf._params is not base._params and z not in base._params
    scaled = times(base, 2.0)            # base kept its right to append: a scalar goes in place
    assert scaled._params is base._params
    assert values(with_leaf) == [*xs, z] and values(scaled) == [*xs, 2.0] and values(base) == xs


def test_equal_python_numbers_in_an_expression_are_one_param():
    x = leaf()
    once = times(times(x, 1.5), 1.5)
    assert values(once) == [x, 1.5]
    assert once.inputs[1] is once.inputs[0].inputs[1]
    # a float zero never (0.0 == -0.0), nor an int beside an equal float (1 == 1.0)
    assert values(times(times(x, 0.0), -0.0)) == [x, 0.0, -0.0]
    assert [type(v) for v in values(times(times(x, 1), 1.0))[1:]] == [int, float]
    # sharing is in the sid: x * a * b with a == b is another kernel than with a != b
    assert times(times(x, 2.5), 2.5).sid != times(times(x, 2.5), 3.5).sid
    assert times(times(x, 2.5), 2.5).sid == times(times(x, 4.5), 4.5).sid


def test_the_table_of_interned_numbers_stays_bounded():
    x = leaf()
    for k in range(2 * scalarops.INTERN_MAX + 5):
        times(x, 1.0 + k)
    table = scalarops._scalar_nodes[graph.scalar_sid(F32)]
    assert 0 < len(table) <= scalarops.INTERN_MAX
