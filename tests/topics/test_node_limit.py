"""The node limit (``FUSEDARRAYS_MAX_NODES``) counts distinct nodes, on the cpu backend at its
default settings."""

import time

import blackscholes
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.ir import graph

SEED = 20261122



def launches() -> int:
    return fa.stats()["launches"]


def uses(node: graph.Node) -> int:
    """Nodes counted once per use, as the limit counted them before it counted distinct ones."""
    memo: dict[int, int] = {}
    for n in graph.walk([node]):
        memo[n.serial] = 1 + sum(memo[i.serial] for i in n.inputs)
    return memo[node.serial]


def test_black_scholes_is_one_kernel_and_nothing_runs_while_it_is_built():
    data = blackscholes.inputs(1000, SEED)
    arrays = {name: fa.asarray(values) for name, values in data.items()}
    before = launches()
    call, put = blackscholes.prices(fa, **arrays)
    distinct = len(graph.walk([call._node, put._node]))
    assert call.pending and put.pending and launches() == before, \
        f"launched {launches() - before} kernel(s) while building a graph of {distinct} nodes"
    assert distinct <= config.get("MAX_NODES")
    # a limit between the distinct count and the count per use: still nothing runs
    with config.override(MAX_NODES=256):   # the subject: a limit the per-use count passes
        assert distinct <= 256 < min(uses(call._node), uses(put._node))
        call, put = blackscholes.prices(fa, **arrays)
        assert call.pending and put.pending and launches() == before
    fa.compute(call, put)
    assert launches() == before + 1
    want_call, want_put = blackscholes.prices(np, **data)
    np.testing.assert_allclose(call.get(), want_call, rtol=1e-5, atol=1e-4,
                               err_msg=f"seed {SEED}")
    np.testing.assert_allclose(put.get(), want_put, rtol=1e-5, atol=1e-4, err_msg=f"seed {SEED}")


def affine_chain(x, steps: int, rng):
    """``x * a + b`` for ``steps`` random pairs: four new distinct nodes a step, no sharing."""
    coefficients = rng.uniform(0.5, 1.5, (steps, 2)).astype(np.float32)
    for a, b in coefficients:
        x = x * float(a) + float(b)
    return x, coefficients


def test_a_graph_past_the_limit_evaluates_by_itself():
    values = np.random.default_rng(SEED).uniform(-1, 1, 500).astype(np.float32)
    x = fa.asarray(values)
    before = launches()
    r, coefficients = affine_chain(x, 200, np.random.default_rng(SEED + 1))
    limit = config.get("MAX_NODES")
    # Two new nodes an op (the scalar and the op): past the limit once per limit / 2 ops.
    assert launches() - before == (2 * 2 * 200) // limit >= 1
    assert graph.count_nodes(r._node) <= limit
    want = values
    for a, b in coefficients:
        want = want * a + b
    np.testing.assert_allclose(r.get(), want, rtol=1e-5, atol=1e-5, err_msg=f"seed {SEED}")


def test_the_limit_is_reached_by_distinct_nodes_not_uses():
    # A limit of 8 (not the default) so that a graph at the limit is small enough to write out:
    # sin(x) + cos(x) reads x twice, so counted per use the graph below has 15 nodes.
    values = np.random.default_rng(SEED).uniform(-2, 2, 64).astype(np.float32)
    x = fa.asarray(values)
    with config.override(MAX_NODES=8):   # see above: a limit small enough to write out
        before = launches()
        r = -(fa.sin(x) + fa.cos(x))
        r = fa.sin(r) + fa.cos(r)            # 8 distinct nodes
        assert r.pending and launches() == before and graph.count_nodes(r._node) == 8
        assert uses(r._node) == 15
        r = -r                              # a ninth
        assert not r.pending and launches() == before + 1
    want = -(np.sin(values) + np.cos(values))
    want = -(np.sin(want) + np.cos(want))
    np.testing.assert_allclose(r.get(), want, rtol=1e-5, atol=1e-6, err_msg=f"seed {SEED}")


@pytest.mark.parametrize("step, nodes_a_step", [
    (lambda x: x + x * x, 2),               # counted per use: 3**60
    (lambda x: fa.sin(x) + fa.cos(x), 3),   # 2**60, and no shortcut sees the sharing
])
def test_a_heavily_shared_graph_stays_pending_and_builds_fast(step, nodes_a_step):
    values = np.random.default_rng(SEED).uniform(0.001, 0.01, 1000).astype(np.float32)
    x = fa.asarray(values)
    before = launches()
    start = time.perf_counter()
    for _ in range(60):
        x = step(x)
    seconds = time.perf_counter() - start
    distinct = 1 + 60 * nodes_a_step
    assert x.pending and launches() == before
    assert graph.count_nodes(x._node) == distinct
    # The kept count is an upper bound that walks bring back to the exact number: it grows with
    # the distinct nodes, not with the uses.
    assert x._node.count <= 3 * distinct
    # About 1 ms; evaluating early (a compile each step) took 140 s. Loose for a loaded machine.
    assert seconds < 5, f"{seconds:.2f} s to build {60 * nodes_a_step} ops"
    want = values
    for _ in range(60):
        want = step(want) if nodes_a_step == 2 else np.sin(want) + np.cos(want)
    np.testing.assert_allclose(x.get(), want, rtol=1e-5, err_msg=f"seed {SEED}")
