"""Walks over an expression graph (:mod:`.graph` re-exports both): the exact count of its
distinct nodes for the node limit, and its nodes in order for the planner. Neither follows a
node's remembered result (``realized``): a graph is evaluated from its params.
"""

from __future__ import annotations


def count_nodes(node, limit: int | None = None) -> int:
    """The distinct nodes of ``node``'s graph, itself included; once past ``limit``, any number
    past it (the walk stops there).

    ``node.count`` is built as one plus the inputs' counts (one input's alone where the other is
    it or one of its inputs), so it counts a shared node once per use: ``x = sin(x) + cos(x)``
    doubles it per step for three new nodes. Cheap, and an upper bound. The node limit calls
    this only once that bound passes the limit; an exact count is stored back on the node, so
    nodes built on it start their sums from it. Results remembered in ``realized`` are not
    followed: evaluation doesn't follow them either.

    The walk visits at most ``limit + 1`` nodes. While a graph's distinct nodes stay under the
    limit but its inputs' counts add up past it (two inputs sharing most of their graphs), each
    new node built on it walks again: at worst one walk of the limit's size per op (~30 µs at
    256), until the graph evaluates.
    """
    seen = {node.serial}
    stack = [node]
    while stack:
        for i in stack.pop().inputs:
            if i.serial not in seen:
                seen.add(i.serial)
                if i.inputs:
                    stack.append(i)
        if limit is not None and len(seen) > limit:
            return len(seen)
    node.count = len(seen)
    return node.count


def walk(roots) -> list:
    """Every node reachable from ``roots``, inputs before users, each once (deterministic).
    Remembered results (``realized``) are not followed: a graph is evaluated from its params."""
    order: list = []
    seen: set[int] = set()
    stack: list = list(roots)[::-1]
    while stack:
        n = stack.pop()
        if type(n) is tuple:        # (node,): its inputs are all in order now
            n = n[0]
            if n.serial not in seen:
                seen.add(n.serial)
                order.append(n)
            continue
        if n.serial in seen:
            continue
        if not n.inputs:
            seen.add(n.serial)
            order.append(n)
            continue
        stack.append((n,))
        stack.extend(n.inputs[::-1])
    return order
